//! The official MCP Inspector's command line (`@modelcontextprotocol/inspector --cli`), as a
//! person runs it against `/mcp`: every outcome of a call is a result it prints and accepts
//! (exit 0), for a tool with an output schema too, where a call that did not run carries its
//! "not run" form as structured content. A tool's error and invalid arguments are results with
//! `isError`, the structured error as their text.

use serde_json::Value;
use test_support::mcp::{error_code, inspector_call, text_of};

use crate::mcp_revisions::serve;
use crate::support::AGENT;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_accepts_every_outcome_over_http() {
    let Some(modules) = test_support::mcp_inspector() else {
        return;
    };
    let s = serve(|o| o).await;
    let run = |tool: &'static str, args: &'static [&'static str]| {
        let options = vec![
            "--header".to_owned(),
            format!("Authorization: Bearer {AGENT}"),
        ];
        let target = vec![format!("{}/mcp", s.base)];
        let modules = modules.clone();
        tokio::task::spawn_blocking(move || inspector_call(&modules, &options, &target, tool, args))
    };
    let accepted = |step: &Value| {
        assert_eq!(step["exit_ok"], true, "{step}");
        assert_eq!(step["result"]["isError"], false, "{step}");
    };

    // ran
    let ran = run("read_note", &["id=n1"]).await.unwrap();
    accepted(&ran);
    assert_eq!(text_of(&ran), "buy milk");

    // the tool's own error and arguments that do not fit: results flagged as errors
    let failed = run("read_note", &["id=nope"]).await.unwrap();
    assert_eq!(error_code(&failed), "NOT_FOUND");
    let invalid = run("read_note", &["id=7"]).await.unwrap();
    assert_eq!(error_code(&invalid), "INVALID_ARGUMENTS");

    // parked for a person, with and without an output schema: accepted, not an error
    let parked = run("delete_note", &["id=n1"]).await.unwrap();
    accepted(&parked);
    assert_eq!(text_of(&parked)["status"], "pending", "{parked}");
    let parked = run("archive_note", &["id=n2"]).await.unwrap();
    accepted(&parked);
    assert_eq!(
        parked["result"]["structuredContent"]["status"], "pending",
        "{parked}"
    );
    assert_eq!(s.executor.pending().unwrap().len(), 2);
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));

    // past the tool's timeout, and the second call in the minute of a rate-limited tool
    let late = run("wait", &["ms=5000"]).await.unwrap();
    assert_eq!(error_code(&late), "TIMEOUT");
    let first = run("ping", &[]).await.unwrap();
    assert_eq!(text_of(&first), "pong");
    let limited = run("ping", &[]).await.unwrap();
    assert_eq!(error_code(&limited), "RATE_LIMITED");
}
