//! Wire conformance against code no one here wrote: the requests, echoed assistant turns and tool
//! results the codecs emit are validated by `tests/conformance/check.py` against the providers'
//! official Python SDK types (openai, anthropic, ollama, google-genai, mcp).
//!
//! The Python interpreter of a virtual environment with those SDKs comes from
//! `TOOLS_CONFORMANCE_PYTHON` (set by `.ci/run`). Without it the test says why it is skipped and
//! passes, so a plain `cargo test` works on a machine without the SDKs; but when `CI` is set
//! (every CI system sets it) a missing interpreter fails the test, so CI can never pass with the
//! SDK check silently skipped.

#[path = "../../../tool-providers/tests/it/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use tool_providers::codec::gemini::{Gemini, GeminiSchemaField};
use tool_providers::codec::openai_chat::{OpenAiChat, StrictPolicy};
use tool_providers::codec::openai_responses::OpenAiResponses;
use tool_providers::codec::{
    Codec, CodecError, Provider, ToolChoice, ToolConfig, ToolOutcome, ToolResult,
};
use tool_runtime::content::{self, Content};
use tool_runtime::{ErrorCode, ToolCall, ToolError, definition::ToolDefinition};

fn configs() -> Vec<(&'static str, ToolConfig)> {
    let allowed = |required| ToolChoice::Allowed {
        tools: vec!["search_notes".into(), "get_time".into()],
        required,
    };
    vec![
        ("auto", ToolConfig::default()),
        ("none", ToolConfig::new(ToolChoice::None)),
        ("required", ToolConfig::new(ToolChoice::Required)),
        (
            "named",
            ToolConfig::new(ToolChoice::Named("search_notes".into())),
        ),
        ("allowed_auto", ToolConfig::new(allowed(false))),
        ("allowed_required", ToolConfig::new(allowed(true))),
        ("serial", ToolConfig::default().parallel(false)),
        (
            "named_serial",
            ToolConfig::new(ToolChoice::Named("get_time".into())).parallel(false),
        ),
        (
            "parallel",
            ToolConfig::new(ToolChoice::Required).parallel(true),
        ),
        (
            "validated",
            ToolConfig::new(ToolChoice::Validated { tools: None }),
        ),
        (
            "validated_subset",
            ToolConfig::new(ToolChoice::Validated {
                tools: Some(vec!["search_notes".into()]),
            }),
        ),
    ]
}

fn turn() -> (Vec<ToolCall>, Vec<ToolResult>) {
    let calls = vec![
        ToolCall::new(
            "call_1",
            "search_notes",
            r#"{"query":"rust","limit":null,"tags":null}"#,
        ),
        ToolCall::new("call_2", "delete_file", json!({"path": "/tmp/x"})),
        ToolCall::new("call_3", "delete_file", json!({"path": "/etc/hosts"})),
        ToolCall::new("call_4", "search_notes", json!({"query": "chart"})),
    ];
    let results = vec![
        ToolResult::new(&calls[0], ToolOutcome::Success(json!({"hits": ["a.md"]}))),
        ToolResult::new(
            &calls[1],
            ToolOutcome::Error(
                ToolError::new(ErrorCode::NOT_FOUND, "no file at /tmp/x")
                    .recover("list the directory first"),
            ),
        ),
        ToolResult::new(
            &calls[2],
            ToolOutcome::Denied {
                reason: Some("keep it".into()),
            },
        ),
        // a rich result: every block kind, in the parts each provider accepts or as text
        ToolResult::new(
            &calls[3],
            ToolOutcome::Success(content::to_value(&[
                Content::text("The chart:"),
                Content::image([0x89, b'P', b'N', b'G'], "image/png"),
                Content::audio([0u8; 8], "audio/wav"),
                Content::resource_text("file:///notes/a.md", "text/markdown", "# A"),
                Content::resource_blob("file:///notes/a.pdf", "application/pdf", b"%PDF-1.4"),
                Content::resource_link("file:///notes/b.md", "b.md", Some("text/markdown")),
            ])),
        ),
    ];
    (calls, results)
}

fn merge(mut base: Value, fragment: Value) -> Value {
    for (k, v) in fragment.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

/// The full request body (or MCP documents) for one codec and configuration.
fn document(
    codec: &dyn Codec,
    tools: &[&ToolDefinition],
    config: &ToolConfig,
) -> Result<Value, CodecError> {
    let fragment = codec.encode_tools(tools, config)?;
    let (calls, results) = turn();
    let echo = codec.encode_assistant("Working on it.", &calls);
    let replies = codec.encode_results(&results);
    let user = "Find my notes about rust and clean up.";
    let conversation = |first: Value| {
        let mut all = vec![first];
        all.extend(echo.iter().cloned());
        all.extend(replies.iter().cloned());
        Value::Array(all)
    };
    Ok(match codec.provider() {
        Provider::OpenAiChat => merge(
            json!({"model": "gpt-4.1", "messages": conversation(json!({"role": "user", "content": user}))}),
            fragment,
        ),
        Provider::OpenAiResponses => merge(
            json!({"model": "gpt-5", "input": conversation(json!({"role": "user", "content": user}))}),
            fragment,
        ),
        Provider::Anthropic => merge(
            json!({"model": "claude-sonnet-4-5", "max_tokens": 1024,
                   "messages": conversation(json!({"role": "user", "content": user}))}),
            fragment,
        ),
        Provider::Ollama => merge(
            json!({"model": "qwen3", "stream": false,
                   "messages": conversation(json!({"role": "user", "content": user}))}),
            fragment,
        ),
        Provider::Gemini => merge(
            json!({"contents": conversation(json!({"role": "user", "parts": [{"text": user}]}))}),
            fragment,
        ),
        Provider::Mcp => json!({"tools_list": fragment, "calls": echo, "results": replies}),
    })
}

fn write_documents(dir: &Path) -> usize {
    let defs = common::representative_definitions();
    let all: Vec<&ToolDefinition> = defs.iter().collect();
    let no_open_map: Vec<&ToolDefinition> = defs.iter().filter(|d| d.name != "fetch_url").collect();
    let variants: Vec<(Box<dyn Codec>, &str, &[&ToolDefinition])> = vec![
        (Box::new(OpenAiChat::default()), "", &all),
        (
            Box::new(OpenAiChat::with_strict(StrictPolicy::Prefer)),
            "prefer_strict_",
            &all,
        ),
        (Box::new(OpenAiResponses::default()), "", &all),
        (
            Box::new(OpenAiResponses::with_strict(StrictPolicy::Prefer)),
            "prefer_strict_",
            &all,
        ),
        (Provider::Anthropic.codec(), "", &all),
        (Provider::Ollama.codec(), "", &all),
        (Provider::Gemini.codec(), "", &all),
        (
            Box::new(Gemini {
                schema_field: GeminiSchemaField::Parameters,
            }),
            "parameters_",
            &no_open_map,
        ),
        (Provider::Mcp.codec(), "", &all),
    ];
    let mut written = 0;
    for (codec, prefix, tools) in &variants {
        let folder = dir.join(codec.provider().as_str());
        std::fs::create_dir_all(&folder).unwrap();
        for (label, config) in configs() {
            match document(codec.as_ref(), tools, &config) {
                Ok(doc) => {
                    let path = folder.join(format!("{prefix}{label}.json"));
                    std::fs::write(path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
                    written += 1;
                }
                // what a provider cannot express is refused, never sent: nothing to check
                Err(CodecError::Unsupported { .. }) => {}
                Err(e) => panic!("{} {label}: {e}", codec.provider()),
            }
        }
    }
    written
}

/// Documents each with one mistake a codec could make, so the run also proves that the checker
/// refuses what the SDK types do not accept (a checker that passes everything proves nothing).
fn write_faulty_documents(dir: &Path) {
    let faulty = [
        (
            "openai",
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "name": "a"}}),
        ),
        (
            "openai-responses",
            json!({"model": "m", "input": [
            {"type": "function_call_output", "call_id": "c", "output": "x", "is_error": true}]}),
        ),
        (
            "anthropic",
            json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "x", "content": "c", "is_error": "yes"}]}]}),
        ),
        (
            "ollama",
            json!({"model": "m", "messages": [{"role": "tool", "content": "x", "toolName": "a"}]}),
        ),
        (
            "gemini",
            json!({"contents": [], "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}}),
        ),
        (
            "mcp",
            json!({"tools_list": {"tools": [{"name": "a", "input_schema": {"type": "object"}}]}}),
        ),
    ];
    for (provider, doc) in faulty {
        let folder = dir.join(provider);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("faulty.json"), doc.to_string()).unwrap();
    }
}

fn run_checker(python: &str, dir: &Path) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/check.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn codec_output_validates_against_the_official_sdk_types() {
    let dir = tempfile::tempdir().unwrap();
    let written = write_documents(dir.path());
    assert!(written >= 40, "only {written} documents");

    let Some(python) = test_support::conformance_python() else {
        return;
    };
    let (ok, report) = run_checker(&python, dir.path());
    println!("{report}");
    assert!(ok, "the SDK types refused what the codecs emit:\n{report}");

    let faulty = tempfile::tempdir().unwrap();
    write_faulty_documents(faulty.path());
    let (ok, report) = run_checker(&python, faulty.path());
    assert!(!ok, "the checker accepted faulty documents:\n{report}");
    for provider in Provider::ALL {
        assert!(
            report.contains(&format!("FAIL {}/faulty.json", provider.as_str())),
            "{provider}'s faulty document was not refused:\n{report}"
        );
    }
}
