//! End to end over two more wire formats: the `research` binary with `--provider anthropic`
//! (Anthropic Messages, streamed and not) and `--provider openai-responses` (OpenAI Responses),
//! against a real peer that speaks them: the LiteLLM proxy (`scripts/peer-proxy.sh`) in front of
//! the local llama.cpp server with SmolLM2-135M. Real HTTP, real tool calls decoded from each
//! format, confirmations answered on stdin, results sent back in the format, SQLite checked.
//!
//! Needs `TOOLS_PEER_URL` (the proxy, e.g. `http://127.0.0.1:4000`, set by `.ci/run`). Without
//! it the test prints why and passes vacuously, except when `CI` is set: then it fails.

use std::io::Write;
use std::process::{Command, Stdio};

use examples::research::Db;

fn peer_url() -> Option<String> {
    match std::env::var("TOOLS_PEER_URL") {
        Ok(u) if !u.is_empty() => Some(u.trim_end_matches('/').to_owned()),
        _ => {
            if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0") {
                panic!(
                    "CI is set but TOOLS_PEER_URL is not: these tests need the LiteLLM proxy \
                     (`scripts/peer-proxy.sh install && scripts/peer-proxy.sh start`, as .ci/run does)"
                );
            }
            eprintln!(
                "SKIPPED: TOOLS_PEER_URL is not set (scripts/peer-proxy.sh start, in front of \
                 scripts/llama-server.sh start)"
            );
            None
        }
    }
}

/// What one run printed, and the notes it left.
struct Run {
    stdout: String,
    stderr: String,
    notes: usize,
}

fn research(env: &[(&str, String)], args: &[&str], stdin: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("research.sqlite");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_research"));
    cmd.args(args)
        .env("TOOLS_RESEARCH_DB", &db_path)
        .env("TOOLS_DOI_URL", "http://127.0.0.1:9")
        .env("HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for key in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "TOOLS_LLAMA_URL",
    ] {
        cmd.env_remove(key);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
        notes: Db::open(&db_path).unwrap().all_notes().unwrap().len(),
    }
}

/// The checks every run shares: the model spoke the format, called a tool, the session ended
/// with its answer, and the database changed exactly as the run reported.
fn check(run: &Run, provider: &str) {
    let Run {
        stdout,
        stderr,
        notes,
    } = run;
    assert!(
        stderr.contains(&format!("model: {provider} at http://127.0.0.1")),
        "{stderr}"
    );
    assert!(stderr.contains("→ "), "the model called a tool: {stderr}");
    assert!(
        !stdout.trim().is_empty() && !stdout.contains("(no final answer"),
        "an answer ended the session: {stdout}\n{stderr}"
    );
    let created = stderr.matches("← create_note [success]").count();
    let deleted = stderr.matches("← delete_note [success]").count();
    assert_eq!(notes + deleted, 2 + created, "{stderr}");
}

#[test]
fn anthropic_messages_through_the_proxy_with_a_confirmation_on_stdin() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("ANTHROPIC_BASE_URL", format!("{url}/v1")),
        ("ANTHROPIC_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "anthropic",
            "--small-model",
            "Create a note titled Llamas saying that llamas are camelids",
        ],
        "y\ny\n",
    );
    check(&run, "anthropic");
    if run.stderr.contains("← create_note [success]") {
        assert!(run.stderr.contains("Proceed? [Y/n/e]"), "{}", run.stderr);
    }
}

#[test]
fn anthropic_messages_streamed_through_the_proxy() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("ANTHROPIC_BASE_URL", format!("{url}/v1")),
        ("ANTHROPIC_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "anthropic",
            "--small-model",
            "--stream",
            "--yes",
            "Search the bibliography for Toolformer",
        ],
        "",
    );
    check(&run, "anthropic");
}

#[test]
fn openai_responses_through_the_proxy() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("OPENAI_BASE_URL", format!("{url}/v1")),
        ("OPENAI_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "openai-responses",
            "--small-model",
            "--yes",
            "Create a note titled Llamas saying that llamas are camelids",
        ],
        "",
    );
    check(&run, "openai-responses");
}
