//! The agent's request bodies splice the cached declarations as text: the bytes on the wire are
//! byte-for-byte those of the previous path, which parsed the cached fragment into a
//! `serde_json::Value`, merged it into the body and serialized the whole body again.

use crate::common;
use crate::mock;

use serde_json::{Map, Value, json};
use tool_providers::agent::ChatModel;
use tool_providers::codec::{ToolChoice, ToolConfig};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::definition::{Safety, ToolDefinition};

use mock::{Reply, serve};

/// 100 tools with varied schemas (nested objects, enums, arrays, optional fields, numbers written
/// in several ways), plus the representative set of the snapshots.
fn hundred_tools() -> Vec<ToolDefinition> {
    let mut defs = common::representative_definitions();
    for i in 0..95 {
        let mut def = ToolDefinition::new(
            format!("tool_{i:03}"),
            format!("Tool number {i}: does thing {i} with \"quotes\" and ünïcode"),
            &json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": format!("what to look for ({i})")},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100 + i, "default": 10},
                    "ratio": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1e3},
                    "mode": {"type": "string", "enum": ["fast", "exact", format!("m{i}")]},
                    "filters": {"type": "array", "items": {"type": "object", "properties": {
                        "field": {"type": "string"}, "value": {"type": ["string", "null"]}},
                        "required": ["field"]}}
                },
                "required": ["query"]
            }),
        );
        def.safety = if i % 2 == 0 {
            Safety::ReadOnly
        } else {
            Safety::Modify
        };
        defs.push(def);
    }
    assert_eq!(defs.len(), 100);
    defs
}

fn text_answer(p: Provider) -> Value {
    match p {
        Provider::OpenAiChat => {
            json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]})
        }
        Provider::OpenAiResponses => json!({"status":"completed","output":[{"type":"message",
            "role":"assistant","content":[{"type":"output_text","text":"ok"}]}]}),
        Provider::Anthropic => json!({"type":"message","role":"assistant",
            "content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}),
        Provider::Ollama => json!({"message":{"role":"assistant","content":"ok"},"done":true}),
        Provider::Gemini => {
            json!({"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},
            "finishReason":"STOP"}]})
        }
        Provider::Mcp => unreachable!(),
    }
}

fn model(p: Provider, url: &str) -> ChatModel {
    let cfg = ClientConfig::new(p, "model-x")
        .with_base_url(url)
        .with_retry(RetryPolicy::none());
    ChatModel::new(HttpClient::new(cfg).unwrap())
}

/// The previous implementation, step by step: the declarations as a `Value` (built afresh here,
/// which is the same JSON as the cached fragment), merged into a map body, the conversation
/// added, the transport fields filled in, the whole map serialized.
fn previous_body(
    p: Provider,
    system: &str,
    conversation: &[Value],
    tools: &[&ToolDefinition],
    config: &ToolConfig,
) -> Vec<u8> {
    let mut body = Map::new();
    let fields = p.codec().encode_tools(tools, config).unwrap();
    body.extend(fields.as_object().unwrap().clone());
    let conversation = Value::Array(conversation.to_vec());
    match p {
        Provider::OpenAiChat | Provider::Ollama => {
            let mut messages = vec![json!({"role": "system", "content": system})];
            messages.extend(conversation.as_array().unwrap().iter().cloned());
            body.insert("messages".into(), Value::Array(messages));
        }
        Provider::OpenAiResponses => {
            body.insert("instructions".into(), json!(system));
            body.insert("input".into(), conversation);
        }
        Provider::Anthropic => {
            body.insert("system".into(), json!(system));
            body.insert("messages".into(), conversation);
        }
        Provider::Gemini => {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system}]}),
            );
            body.insert("contents".into(), conversation);
        }
        Provider::Mcp => unreachable!(),
    }
    if p != Provider::Gemini {
        body.entry("model").or_insert(json!("model-x"));
        if p == Provider::Ollama {
            body.insert("stream".into(), json!(false));
        }
    }
    if p == Provider::Anthropic {
        body.entry("max_tokens").or_insert(json!(4096));
    }
    serde_json::to_vec(&Value::Object(body)).unwrap()
}

#[tokio::test]
async fn a_hundred_tool_request_is_byte_identical_to_the_reparsed_body_for_every_provider() {
    let defs = hundred_tools();
    let tools: Vec<&ToolDefinition> = defs.iter().collect();
    let providers = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Ollama,
        Provider::Gemini,
    ];
    for p in providers {
        let config = match p {
            // settings that add choice fields next to the declarations
            Provider::OpenAiChat | Provider::Anthropic => {
                ToolConfig::new(ToolChoice::Required).parallel(false)
            }
            _ => ToolConfig::new(ToolChoice::Auto),
        };
        let server = serve(vec![
            Reply::Json(text_answer(p)),
            Reply::Json(text_answer(p)),
        ])
        .await;
        let m = model(p, &server.url);
        let conversation = vec![m.user_message("find \"things\" — quickly")];
        // Twice: the first request fills the cache, the second is served from it.
        for _ in 0..2 {
            let body = m
                .request(Some("be brief"), &conversation, &tools, &config)
                .unwrap();
            let turn = m.complete(&body, &mut |_| {}).await.unwrap();
            assert_eq!(turn.decoded.text, "ok");
        }
        let want = previous_body(p, "be brief", &conversation, &tools, &config);
        for seen in server.requests() {
            assert_eq!(
                String::from_utf8_lossy(&seen.raw),
                String::from_utf8_lossy(&want),
                "{p}: the body on the wire differs from the re-serialized one"
            );
        }
        // The declarations are all there (a wrapper mistake would drop or nest them).
        let declared = match p {
            Provider::Gemini => &server.bodies()[0]["tools"][0]["functionDeclarations"],
            _ => &server.bodies()[0]["tools"],
        };
        assert_eq!(declared.as_array().unwrap().len(), 100, "{p}");
    }
}

#[tokio::test]
async fn a_streamed_request_gets_its_transport_fields_after_the_spliced_declarations() {
    let defs = hundred_tools();
    let tools: Vec<&ToolDefinition> = defs.iter().take(3).collect();
    let server = serve(vec![Reply::sse(
        &[
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"o"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"k"},"finish_reason":"stop"}]}),
        ],
        true,
    )])
    .await;
    let m = model(Provider::OpenAiChat, &server.url).streaming(true);
    let conversation = vec![m.user_message("hi")];
    let config = ToolConfig::default();
    let body = m.request(None, &conversation, &tools, &config).unwrap();
    let mut seen_text = String::new();
    let turn = m
        .complete(&body, &mut |t| seen_text.push_str(t))
        .await
        .unwrap();
    assert_eq!(
        (turn.decoded.text.as_str(), seen_text.as_str()),
        ("ok", "ok")
    );

    let raw = &server.requests()[0].raw;
    let value: Value = serde_json::from_slice(raw).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "tool_choice")
        .collect();
    assert_eq!(
        keys,
        ["tools", "messages", "model", "stream", "stream_options"]
    );
    assert_eq!(value["stream"], true);
    assert_eq!(value["stream_options"]["include_usage"], true);
    assert_eq!(serde_json::to_vec(&value).unwrap(), *raw);
}
