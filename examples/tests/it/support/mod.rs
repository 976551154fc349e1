//! What the tests of the agent binaries share: a command that inherits none of the caller's model,
//! provider, token or telemetry settings, and one run of `research` with a fresh database.

pub mod peer;

use std::io::Write;
use std::process::{Command, Stdio};

use examples::research::Db;

/// The variables through which the caller's environment would reach an agent binary: provider
/// keys and addresses, the local model, the search service, the server's tokens, the operator's
/// configuration and the telemetry export.
const CALLERS_SETTINGS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "TOOLS_LLAMA_URL",
    "TOOLS_LLAMA_SCRIPT",
    "TOOLS_SEARCH_URL",
    "TOOLS_AGENT_TOKEN",
    "TOOLS_APPROVER_TOKEN",
    "TOOLS_CONFIG",
    "TOOLS_STORE",
    "TOOLS_STORE__PREFIX",
    "TOOLS_RUNS_KEEP_DAYS",
    "TOOLS_CONFIRMATION",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SERVICE_NAME",
];

/// The program `exe` without any of the caller's settings ([`CALLERS_SETTINGS`]): what a test
/// wants it to see, it sets on the command.
pub fn isolated(exe: &str) -> Command {
    let mut cmd = Command::new(exe);
    for key in CALLERS_SETTINGS {
        cmd.env_remove(key);
    }
    cmd
}

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
    let mut cmd = isolated(env!("CARGO_BIN_EXE_research"));
    cmd.args(args)
        .env("TOOLS_RESEARCH_DB", &db_path)
        .env("TOOLS_DOI_URL", "http://127.0.0.1:9")
        .env("HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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

/// Serves `router` on 127.0.0.1 from its own runtime (the tests block on child processes).
pub fn serve(router: axum::Router) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, router).await.unwrap();
        });
    });
    url
}
