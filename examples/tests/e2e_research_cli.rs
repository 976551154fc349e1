//! End to end: the `research` binary, as the README runs it, against the real local llama.cpp
//! server with SmolLM2-135M. One turn from an argument ends with a printed answer (the local
//! configuration forces one round of tool calls, then asks for the answer with
//! `tool_choice: none`), the confirmation is answered on stdin, and the SQLite file holds exactly
//! the notes the run reports.
//!
//! Needs `TOOLS_LLAMA_URL` (set by `.ci/run`). Without it the test prints why and passes
//! vacuously, except when `CI` is set: then it fails.

use std::io::Write;
use std::process::{Command, Stdio};

use examples::research::Db;

fn llama_url() -> Option<String> {
    match std::env::var("TOOLS_LLAMA_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0") {
                panic!(
                    "CI is set but TOOLS_LLAMA_URL is not: the end-to-end tests need the local \
                     model server (`scripts/llama-server.sh start`, as .ci/run does)"
                );
            }
            eprintln!("SKIPPED: TOOLS_LLAMA_URL is not set (scripts/llama-server.sh start)");
            None
        }
    }
}

#[test]
fn one_turn_against_the_real_model_ends_with_an_answer() {
    let Some(url) = llama_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("research.sqlite");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_research"));
    cmd.arg("Create a note titled Llamas saying that llamas are camelids")
        .env("TOOLS_LLAMA_URL", &url)
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
    ] {
        cmd.env_remove(key);
    }
    let mut child = cmd.spawn().unwrap();
    // Every confirmation this run may ask (two attempts at most) is answered yes.
    child.stdin.take().unwrap().write_all(b"y\ny\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    // The session ended with an answer from the model, not with the iteration limit.
    assert!(
        !stdout.trim().is_empty() && !stdout.contains("(no final answer"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("→ "), "the model called a tool: {stderr}");
    assert!(stderr.contains("model requests"), "{stderr}");

    // Exactly the notes the run reports as created (or deleted) changed in the file.
    let created = stderr.matches("← create_note [success]").count();
    let deleted = stderr.matches("← delete_note [success]").count();
    let notes = Db::open(&db_path).unwrap().all_notes().unwrap();
    assert_eq!(notes.len() + deleted, 2 + created, "{notes:#?}\n{stderr}");
    if created > 0 {
        // The confirmation box was shown and answered on stdin.
        assert!(stderr.contains("Proceed? [Y/n/e]"), "{stderr}");
    }
}
