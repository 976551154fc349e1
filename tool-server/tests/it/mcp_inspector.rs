//! The official MCP Inspector's command line (`@modelcontextprotocol/inspector --cli`), as a
//! person runs it against `/mcp`: every outcome of a call is a result it prints and accepts
//! (exit 0), for a tool with an output schema too, where a call that did not run carries its
//! "not run" form as structured content. A tool's error and invalid arguments are results with
//! `isError`, the structured error as their text.

use std::process::Command;

use serde_json::Value;

use crate::mcp_revisions::serve;
use crate::support::AGENT;

/// What the Inspector printed for one `tools/call`: whether it exited 0, the result, and its
/// standard error.
struct Printed {
    ok: bool,
    result: Value,
    stderr: String,
}

fn call(modules: &str, base: &str, tool: &str, args: &[&str]) -> Printed {
    let cli = format!("{modules}/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let mut command = Command::new("node");
    command
        .arg(cli)
        .args(["--cli", &format!("{base}/mcp"), "--transport", "http"])
        .args(["--header", &format!("Authorization: Bearer {AGENT}")])
        .args(["--method", "tools/call", "--tool-name", tool]);
    if !args.is_empty() {
        command.arg("--tool-arg").args(args);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // the result is the first JSON document printed; a line after it may comment on it
    let result = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON from the Inspector:\n{stdout}\n{stderr}"));
    Printed {
        ok: out.status.success(),
        result,
        stderr,
    }
}

fn text(printed: &Printed) -> Value {
    let text = printed.result["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_accepts_every_outcome_over_http() {
    let Some(modules) = test_support::mcp_inspector() else {
        return;
    };
    let s = serve(|o| o).await;
    let run = |tool: &'static str, args: &'static [&'static str]| {
        let (modules, base) = (modules.clone(), s.base.clone());
        tokio::task::spawn_blocking(move || call(&modules, &base, tool, args))
    };

    // ran
    let ran = run("read_note", &["id=n1"]).await.unwrap();
    assert!(ran.ok, "{}", ran.stderr);
    assert_eq!(ran.result["isError"], false, "{}", ran.result);
    assert_eq!(text(&ran), "buy milk");

    // the tool's own error and arguments that do not fit: results flagged as errors
    for (args, code) in [
        (&["id=nope"][..], "NOT_FOUND"),
        (&["id=7"][..], "INVALID_ARGUMENTS"),
    ] {
        let failed = run("read_note", args).await.unwrap();
        assert_eq!(failed.result["isError"], true, "{}", failed.result);
        assert_eq!(text(&failed)["error"]["code"], code, "{}", failed.result);
    }

    // parked for a person, with and without an output schema: accepted, not an error
    for (tool, args) in [
        ("delete_note", &["id=n1"][..]),
        ("archive_note", &["id=n2"][..]),
    ] {
        let parked = run(tool, args).await.unwrap();
        assert!(parked.ok, "{tool}: {}\n{}", parked.result, parked.stderr);
        assert_eq!(parked.result["isError"], false, "{}", parked.result);
        assert_eq!(text(&parked)["status"], "pending", "{}", parked.result);
        if tool == "archive_note" {
            assert_eq!(
                parked.result["structuredContent"]["status"], "pending",
                "{}",
                parked.result
            );
        }
    }
    assert_eq!(s.executor.pending().unwrap().len(), 2);
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));

    // past the tool's timeout, and the second call in the minute of a rate-limited tool
    let late = run("wait", &["ms=5000"]).await.unwrap();
    assert_eq!(text(&late)["error"]["code"], "TIMEOUT", "{}", late.result);
    let first = run("ping", &[]).await.unwrap();
    assert_eq!(text(&first), "pong");
    let limited = run("ping", &[]).await.unwrap();
    assert_eq!(
        text(&limited)["error"]["code"],
        "RATE_LIMITED",
        "{}",
        limited.result
    );
}
