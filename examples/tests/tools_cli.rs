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
