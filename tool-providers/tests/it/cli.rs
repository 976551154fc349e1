//! `tools decode` over the wire README's examples, and `tools schema --provider`.

use crate::common;

use std::io::Write;

use serde_json::{Value, json};
use tool_providers::cli::{DecodeCommand, ProviderSchemas, render_schema};
use tool_providers::codec::Provider;
use tool_runtime::ToolSet;
use tool_runtime::cli::{CliCommand, Exit, Output, SchemaView};

fn run(toolset: &ToolSet, args: &[&str], json: bool) -> (Exit, String, String) {
    let cmd = DecodeCommand;
    let matches = cmd
        .command()
        .try_get_matches_from(std::iter::once("decode").chain(args.iter().copied()))
        .unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = {
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json,
        };
        futures::executor::block_on(cmd.run(toolset, &matches, &mut output))
    };
    (
        exit,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn fixture_path(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_wire_example_decodes_and_hydrates() {
    let set = common::fixture_toolset();
    for (provider, file, calls) in [
        ("openai", "openai_chat_response.json", 1),
        ("openai", "openai_chat_stream.sse", 1),
        ("openai-responses", "openai_responses_response.json", 1),
        ("openai-responses", "openai_responses_stream.ndjson", 1),
        ("anthropic", "anthropic_response.json", 2),
        ("anthropic", "anthropic_stream.ndjson", 1),
        ("ollama", "ollama_response.json", 1),
        ("ollama", "ollama_stream.ndjson", 1),
        ("gemini", "gemini_stream.ndjson", 1),
        ("gemini", "gemini_partial_args.ndjson", 1),
        ("mcp", "mcp_tools_call.json", 1),
    ] {
        let (exit, out, err) = run(&set, &["--provider", provider, &fixture_path(file)], true);
        assert_eq!(exit, Exit::Success, "{file}: {out}{err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        let list = report["calls"].as_array().unwrap();
        assert_eq!(list.len(), calls, "{file}");
        assert!(list.iter().all(|c| c["ok"] == true), "{file}");
    }
}

#[test]
fn an_invalid_call_exits_1_and_says_why() {
    let set = common::fixture_toolset();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(
        file,
        r#"{{"id":"m","type":"message","role":"assistant","stop_reason":"tool_use","content":[
            {{"type":"tool_use","id":"t1","name":"get_weather","input":{{"city":"Oslo"}}}},
            {{"type":"tool_use","id":"t2","name":"get_weather","input":{{"city":""}}}}]}}"#
    )
    .unwrap();
    let path = file.path().to_str().unwrap();
    let (exit, out, _) = run(&set, &["--provider", "anthropic", path], false);
    assert_eq!(exit, Exit::Refused);
    assert!(
        out.contains("ok    t1 get_weather {\"city\":\"Oslo\""),
        "{out}"
    );
    assert!(
        out.contains("error t2 get_weather INVALID_ARGUMENTS"),
        "{out}"
    );
    assert!(out.contains("at \"/city\""), "{out}");
    assert!(out.contains("recover:"), "{out}");
}

#[test]
fn unreadable_and_undecodable_inputs() {
    let set = common::fixture_toolset();
    let (exit, _, err) = run(
        &set,
        &["--provider", "openai", "/nonexistent/x.json"],
        false,
    );
    assert_eq!(exit, Exit::Usage);
    assert!(err.contains("cannot read"));
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(file, r#"{{"choices": 3}}"#).unwrap();
    let (exit, out, _) = run(
        &set,
        &["--provider", "openai", file.path().to_str().unwrap()],
        true,
    );
    assert_eq!(exit, Exit::Refused);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["error"]["code"], "MALFORMED_RESPONSE");
    assert!(
        DecodeCommand
            .command()
            .try_get_matches_from(["decode", "--provider", "cohere"])
            .is_err(),
        "unknown providers are a usage error"
    );
}

/// Two tools covering what differs between the views: a strict tool with an optional property (the
/// OpenAI strict view), a `$ref` (inlined for Ollama), an output schema (Gemini
/// `responseJsonSchema`, MCP `outputSchema`) and two safety categories (MCP annotations).
fn schema_tools() -> Vec<tool_runtime::definition::ToolDefinition> {
    let mut weather = tool_runtime::definition::ToolDefinition::new(
        "get_weather",
        "Current weather",
        &json!({"type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"]}),
    );
    weather.strict = Some(true);
    weather.safety = tool_runtime::definition::Safety::External;
    let mut delete = tool_runtime::definition::ToolDefinition::new(
        "delete_file",
        "Delete a file",
        &json!({"type": "object", "properties": {"path": {"$ref": "#/$defs/Path"}},
            "required": ["path"], "$defs": {"Path": {"type": "string", "minLength": 1}}}),
    );
    delete.safety = tool_runtime::definition::Safety::Modify;
    delete.idempotent = true;
    delete.output_schema = Some(json!({"type": "object",
        "properties": {"deleted": {"type": "boolean"}}}));
    vec![weather, delete]
}

/// What each provider must be sent for `schema_tools`, written by hand from the wire formats
/// (wire README §1-§7), not from the codecs.
fn expected_schema(provider: &str) -> Value {
    let weather = json!({"type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"]});
    let weather_strict = json!({"type": "object",
        "properties": {"city": {"type": "string"},
            "unit": {"anyOf": [{"type": "string", "enum": ["c", "f"]}, {"type": "null"}]}},
        "required": ["city", "unit"], "additionalProperties": false});
    let delete = json!({"type": "object", "properties": {"path": {"$ref": "#/$defs/Path"}},
        "required": ["path"], "$defs": {"Path": {"type": "string", "minLength": 1}}});
    let delete_inlined = json!({"type": "object",
        "properties": {"path": {"type": "string", "minLength": 1}}, "required": ["path"]});
    let output = json!({"type": "object", "properties": {"deleted": {"type": "boolean"}}});
    match provider {
        "openai" => json!([
            {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
                "parameters": weather_strict, "strict": true}},
            {"type": "function", "function": {"name": "delete_file", "description": "Delete a file",
                "parameters": delete, "strict": false}}
        ]),
        "openai-responses" => json!([
            {"type": "function", "name": "get_weather", "description": "Current weather",
                "parameters": weather_strict, "strict": true},
            {"type": "function", "name": "delete_file", "description": "Delete a file",
                "parameters": delete, "strict": false}
        ]),
        "anthropic" => json!([
            {"name": "get_weather", "description": "Current weather", "input_schema": weather},
            {"name": "delete_file", "description": "Delete a file", "input_schema": delete}
        ]),
        "ollama" => json!([
            {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
                "parameters": weather}},
            {"type": "function", "function": {"name": "delete_file", "description": "Delete a file",
                "parameters": delete_inlined}}
        ]),
        "gemini" => json!([{"functionDeclarations": [
            {"name": "get_weather", "description": "Current weather", "parametersJsonSchema": weather},
            {"name": "delete_file", "description": "Delete a file", "parametersJsonSchema": delete,
                "responseJsonSchema": output}
        ]}]),
        "mcp" => json!({"tools": [
            {"name": "get_weather", "title": "Get weather", "description": "Current weather",
                "inputSchema": weather,
                "annotations": {"title": "Get weather", "readOnlyHint": false,
                    "destructiveHint": false, "idempotentHint": false, "openWorldHint": true},
                "_meta": {"tool-runtime/safety": {"category": "external",
                    "confirmation": "configured", "first_use_gate": true, "reversible": false}}},
            {"name": "delete_file", "title": "Delete file", "description": "Delete a file",
                "inputSchema": delete, "outputSchema": output,
                "annotations": {"title": "Delete file", "readOnlyHint": false,
                    "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
                "_meta": {"tool-runtime/safety": {"category": "modify",
                    "confirmation": "always", "first_use_gate": false, "reversible": false}}}
        ]}),
        other => panic!("no expectation for {other}"),
    }
}

#[test]
fn schema_view_prints_what_would_be_sent() {
    let view = ProviderSchemas;
    assert_eq!(
        view.providers(),
        [
            "openai",
            "openai-responses",
            "anthropic",
            "ollama",
            "gemini",
            "mcp"
        ]
    );
    let defs = schema_tools();
    let refs: Vec<_> = defs.iter().collect();
    for p in Provider::ALL {
        let printed = view.render(p.as_str(), &refs).unwrap();
        let expected = expected_schema(p.as_str());
        assert_eq!(printed, expected, "{p}");
        // the same keys in the same order, too
        assert_eq!(printed.to_string(), expected.to_string(), "{p}: key order");
    }
    assert_eq!(
        render_schema(Provider::Anthropic, &[]).unwrap(),
        serde_json::json!([])
    );
    assert!(
        view.render("cohere", &refs)
            .unwrap_err()
            .contains("unknown provider")
    );
    // a tool that must be strict but cannot be is an error, not a silent downgrade
    let defs = common::representative_definitions();
    let mut open = defs[3].clone();
    open.strict = Some(true);
    let err = view.render("openai", &[&open]).unwrap_err();
    assert!(err.contains("additionalProperties"), "{err}");
}

/// Through the `tools` runner itself, as an application registers the provider layer.
#[test]
fn the_tools_runner_dispatches_decode_and_schema() {
    let cli = tool_runtime::cli::Cli::new(common::fixture_toolset())
        .with(DecodeCommand)
        .with_schema_view(ProviderSchemas);
    let run = |args: &[&str]| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = {
            let mut output = Output {
                out: &mut out,
                err: &mut err,
                json: false,
            };
            futures::executor::block_on(cli.run(args.iter().copied(), &mut output))
        };
        (exit, String::from_utf8(out).unwrap())
    };
    let path = fixture_path("anthropic_response.json");
    let (exit, out) = run(&["tools", "decode", "--provider", "anthropic", &path]);
    assert_eq!(exit, Exit::Success, "{out}");
    assert!(out.contains("ok    toolu_01B get_weather"), "{out}");

    let (exit, out) = run(&[
        "tools",
        "--json",
        "schema",
        "--provider",
        "gemini",
        "weather",
    ]);
    assert_eq!(exit, Exit::Success, "{out}");
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        printed[0]["functionDeclarations"][0]["parametersJsonSchema"]["required"],
        serde_json::json!(["location"])
    );
}

/// What `tools decode` prints came from a model: escape sequences are shown, not obeyed, and a
/// name of a megabyte is printed as its first 64 characters and its size.
#[test]
fn decoded_calls_print_hostile_names_and_text_visibly_and_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.json");
    let long = "x".repeat(1 << 20);
    let body = json!({"choices": [{"finish_reason": "tool_calls", "message": {
    "role": "assistant",
    "content": "fine\u{1b}[2K\rREAD_ONLY",
    "tool_calls": [
        {"id": "c1\u{1b}[1A", "type": "function",
         "function": {"name": "get_weather\u{1b}[31m", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": long, "arguments": "{}"}}
    ]}}]});
    std::fs::write(&path, body.to_string()).unwrap();
    let (exit, out, err) = run(
        &common::fixture_toolset(),
        &["--provider", "openai", path.to_str().unwrap()],
        false,
    );
    assert_eq!(exit, Exit::Refused, "{err}");
    assert!(!out.contains('\u{1b}') && !out.contains('\r'), "{out:?}");
    assert!(out.contains("\\u{1b}[31m"), "{out}");
    assert!(out.contains(&format!("... ({} bytes)", 1 << 20)), "{out}");
    assert!(out.len() < 10_000, "{} bytes printed", out.len());
}
