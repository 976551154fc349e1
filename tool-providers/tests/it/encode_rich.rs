//! Rich results (images, audio, resources) in each provider's tool-result format, in the shapes
//! the providers' wire documentation gives, and as a text stand-in where only text is taken.

use serde_json::{Value, json};
use tool_providers::codec::{Provider, ToolOutcome, ToolResult};
use tool_runtime::ToolCall;
use tool_runtime::content::{self, Content};

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 1, 2];
const PNG_B64: &str = "iVBORwEC";

fn encoded(provider: Provider, blocks: &[Content]) -> Value {
    let call = ToolCall::new("call_1", "chart", "{}");
    let result = ToolResult::new(&call, ToolOutcome::Success(content::to_value(blocks)));
    provider
        .codec()
        .encode_results(&[result])
        .pop()
        .expect("one result in, one message out")
}

fn mixed() -> Vec<Content> {
    vec![
        Content::text("The chart:"),
        Content::image(PNG, "image/png"),
        Content::audio([0u8; 8], "audio/wav"),
        Content::resource_text("file:///notes/a.md", "text/markdown", "# A"),
        Content::resource_blob("file:///notes/r.pdf", "application/pdf", b"%PDF"),
        Content::resource_link("file:///notes/b.md", "b.md", None),
    ]
}

#[test]
fn anthropic_sends_image_and_document_blocks_in_the_tool_result() {
    let m = encoded(Provider::Anthropic, &mixed());
    let content = &m["content"][0]["content"];
    assert_eq!(m["content"][0]["type"], "tool_result");
    assert_eq!(content[0], json!({"type": "text", "text": "The chart:"}));
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}})
    );
    assert_eq!(
        content[2],
        json!({"type": "text", "text": "[audio audio/wav, 8 bytes]"})
    );
    assert_eq!(
        content[3],
        json!({"type": "document", "title": "file:///notes/a.md",
               "source": {"type": "text", "media_type": "text/plain", "data": "# A"}})
    );
    assert_eq!(
        content[4],
        json!({"type": "document", "title": "file:///notes/r.pdf",
               "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="}})
    );
    assert_eq!(
        content[5],
        json!({"type": "text", "text": "[resource_link file:///notes/b.md (b.md)]"})
    );
    // an image type Messages does not read as an image is described, not sent
    let tiff = encoded(
        Provider::Anthropic,
        &[Content::image([1u8; 3], "image/tiff")],
    );
    assert_eq!(
        tiff["content"][0]["content"][0],
        json!({"type": "text", "text": "[image image/tiff, 3 bytes]"})
    );
}

#[test]
fn openai_responses_sends_input_image_and_input_file_items() {
    let item = encoded(Provider::OpenAiResponses, &mixed());
    assert_eq!(item["type"], "function_call_output");
    assert_eq!(item["call_id"], "call_1");
    let output = item["output"].as_array().unwrap();
    assert_eq!(
        output[0],
        json!({"type": "input_text", "text": "The chart:"})
    );
    assert_eq!(
        output[1],
        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_B64}")})
    );
    assert_eq!(output[2]["type"], "input_text");
    assert_eq!(
        output[4],
        json!({"type": "input_file", "filename": "r.pdf",
               "file_data": "data:application/pdf;base64,JVBERg=="})
    );
}

#[test]
fn gemini_sends_images_and_pdfs_as_function_response_parts() {
    let m = encoded(Provider::Gemini, &mixed());
    let fr = &m["parts"][0]["functionResponse"];
    assert_eq!(fr["name"], "chart");
    assert_eq!(
        fr["parts"],
        json!([
            {"inlineData": {"mimeType": "image/png", "data": PNG_B64}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERg=="}}
        ])
    );
    let text = fr["response"]["output"].as_str().unwrap();
    assert!(text.contains("[image image/png, 6 bytes]"), "{text}");
    assert!(!text.contains(PNG_B64), "{text}");
}

#[test]
fn text_only_providers_get_a_stand_in_without_the_bytes() {
    let expected = "The chart:\n[image image/png, 6 bytes]\n[audio audio/wav, 8 bytes]\n\
                    [resource file:///notes/a.md text/markdown, 3 bytes]\n# A\n\
                    [resource file:///notes/r.pdf application/pdf, 4 bytes]\n\
                    [resource_link file:///notes/b.md (b.md)]";
    let chat = encoded(Provider::OpenAiChat, &mixed());
    assert_eq!(chat["role"], "tool");
    assert_eq!(chat["content"], expected);
    let ollama = encoded(Provider::Ollama, &mixed());
    assert_eq!(ollama["content"], expected);
}

#[test]
fn mcp_sends_the_blocks_as_content_and_nothing_structured() {
    let r = encoded(Provider::Mcp, &mixed());
    assert_eq!(r["isError"], false);
    assert!(r.get("structuredContent").is_none(), "{r}");
    let content = r["content"].as_array().unwrap();
    assert_eq!(
        content[1],
        json!({"type": "image", "data": PNG_B64, "mimeType": "image/png"})
    );
    assert_eq!(
        content[5],
        json!({"type": "resource_link", "uri": "file:///notes/b.md", "name": "b.md"})
    );
    // and rmcp reads them as its own content types
    let parsed: rmcp::model::CallToolResult = serde_json::from_value(r).unwrap();
    assert_eq!(parsed.content.len(), 6);
}
