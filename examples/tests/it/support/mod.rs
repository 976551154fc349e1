//! What the end-to-end tests of the `research` binary share: one run of the binary with a fresh
//! database.

use std::io::Write;
use std::process::{Command, Stdio};

use examples::research::Db;

/// What one run printed, and the notes it left.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub notes: usize,
}

/// Runs `research` with `args`, `stdin` and `env` over a fresh database and home, with every
/// provider key and base URL of the caller's environment removed first.
pub fn research(env: &[(&str, String)], args: &[&str], stdin: &str) -> Run {
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
