//! The `tools` binary as a real process: arguments, standard streams and exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn tools(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(args)
        .output()
        .expect("the tools binary runs")
}

fn stdout_json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn list_and_schema_describe_the_demo_tools() {
    let out = tools(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("search_notes") && text.contains("get_weather"),
        "{text}"
    );
    let out = tools(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let defs = stdout_json(&out);
    assert_eq!(defs[0]["name"], "search_notes");
    assert_eq!(defs[1]["parameters"]["additionalProperties"], false);
}

#[test]
fn check_exits_0_on_valid_and_1_with_json_on_refused_arguments() {
    let out = tools(&["check", "search_notes", "--args", r#"{"query": "rust"}"#]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout_json(&out)["limit"], 10, "defaults are filled in");

    let out = tools(&[
        "check",
        "search_notes",
        "--json",
        "--args",
        r#"{"query": "", "limit": 99}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stdout_json(&out);
    assert_eq!(err["code"], "INVALID_ARGUMENTS");
    assert_eq!(err["violations"].as_array().unwrap().len(), 2);

    let out = tools(&["check", "get_wether", "--args", "{}"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("get_weather"));
}

#[test]
fn check_reads_standard_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(["check", "get_weather", "--args", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"city": "Oslo", "unit": "celsius"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout_json(&out)["city"], "Oslo");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(tools(&["nonsense"]).status.code(), Some(2));
    assert_eq!(tools(&["check"]).status.code(), Some(2));
    assert_eq!(
        tools(&["schema", "--provider", "no-such-provider"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        tools(&["--catalog", "/no/such/file.json", "list"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(tools(&["--help"]).status.code(), Some(0));
}

#[test]
fn a_catalog_file_adds_tools_that_can_be_checked() {
    let dir = std::env::temp_dir().join(format!("tools-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("catalog.json");
    std::fs::write(
        &catalog,
        r#"[{"type": "function", "name": "send_email", "description": "Send an email.",
             "parameters": {"type": "object",
               "properties": {"to": {"type": "string", "pattern": "^[^@]+@[^@]+$"}},
               "required": ["to"]},
             "safety": "external"}]"#,
    )
    .unwrap();
    let catalog = catalog.to_str().unwrap();
    let ok = tools(&[
        "--catalog",
        catalog,
        "check",
        "send_email",
        "--args",
        r#"{"to": "a@b.c"}"#,
    ]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = tools(&[
        "--catalog",
        catalog,
        "check",
        "send_email",
        "--args",
        r#"{"to": "nobody"}"#,
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tools decode` as a process: the response on standard input (`-`, also the default), exit 0
/// when every call hydrates and 1 when one does not, with the reason on stdout.
#[test]
fn decode_reads_standard_input_and_exits_1_on_an_invalid_call() {
    let decode = |args: &[&str], input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tools"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let valid = r#"{"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}]}"#;
    let out = decode(&["decode", "--provider", "openai", "-"], valid);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ok    call_1 get_weather"), "{text}");

    // a stream capture on stdin, file argument left out (it defaults to `-`)
    let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"type\":\"function\",\"function\":{\"name\":\"search_notes\",\"arguments\":\"\"}}]}}]}\n\n\
                  data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"query\\\":\\\"rust\\\"}\"}}]}}]}\n\n\
                  data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
                  data: [DONE]\n\n";
    let out = decode(&["decode", "--json", "--provider", "openai"], stream);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout_json(&out);
    assert_eq!(report["stream"], true);
    assert_eq!(report["calls"][0]["arguments"]["limit"], 10, "hydrated");

    // one valid call and one that breaks the schema: exit 1, both reported
    let mixed = r#"{"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
        "content": [
          {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}},
          {"type": "tool_use", "id": "t2", "name": "search_notes", "input": {"query": "rust", "limit": 99}}
        ]}"#;
    let out = decode(&["decode", "--json", "--provider", "anthropic", "-"], mixed);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout_json(&out);
    assert_eq!(report["calls"][0]["ok"], true);
    assert_eq!(report["calls"][1]["ok"], false);
    assert_eq!(report["calls"][1]["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(
        report["calls"][1]["error"]["violations"][0]["pointer"],
        "/limit"
    );

    // what cannot be decoded at all is refused too
    let out = decode(&["decode", "--provider", "gemini", "-"], "not json");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot decode"));
}
