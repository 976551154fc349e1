//! Drives the terminal confirmation for real: runs one modifying call through an executor whose
//! confirmation handler is the terminal, and writes the execution as JSON to the file named by
//! the first argument. `tests/tests/it/confirm_tmux.rs` runs it inside tmux and types the answers.
//!
//! Usage: `confirm_probe OUT.json [TIMEOUT_MS]`
//!
//! Invoked through a link named `tools`, it is instead an application's `tools` command line
//! (the built-in commands plus the executor's `call`, `pending`, `approve` and `deny`, run by
//! `Cli::run_from_env` as any application's `main` would) over the same `delete_note` tool and
//! its change preview,
//! which appends each title it deletes to `deleted.log` next to the link, so that a test can see
//! whether it ran; deleting the title `crash after deleting` aborts the process right after
//! the deletion, as a crash would.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::cli::Cli;
use tool_runtime::executor::cli::ExecutorCli;
use tool_runtime::executor::{
    Change, Executor, ExecutorBuilder, ExecutorConfig, Previewer, TerminalConfirmer,
};
use tool_runtime::{
    CallContext, ToolCall, ToolSet,
    definition::{Safety, ToolDefinition},
};

/// The one tool: deletes a note (here: records that it would have).
fn tools(log: Option<PathBuf>) -> ToolSet {
    let mut def = ToolDefinition::new(
        "delete_note",
        "Delete a research note.",
        &json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}),
    );
    def.safety = Safety::Modify;
    def.intent = Some("Delete your note {title}".into());
    let mut set = ToolSet::new();
    set.register_dynamic(
        def,
        Some(Arc::new(move |args: Value, _| {
            let log = log.clone();
            Box::pin(async move {
                if let Some(log) = log {
                    use std::io::Write;
                    let mut f = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&log)?;
                    writeln!(f, "{}", args["title"].as_str().unwrap_or_default())?;
                    f.sync_all()?;
                    // the effect happened; now the process dies before the executor can record
                    // the outcome (for the crash-between-approval-and-completion test)
                    if args["title"] == "crash after deleting" {
                        std::process::abort();
                    }
                }
                Ok::<_, tool_runtime::ToolError>(json!({"deleted": args["title"]}))
            })
        })),
    )
    .expect("valid tool");
    set
}

/// The change a deletion makes, as the confirmation shows it: the note, a sample of its long
/// text, a count that goes down, and what else it touches.
fn preview() -> Previewer {
    Arc::new(|args: Value, _| {
        Box::pin(async move {
            let title = args["title"].as_str().unwrap_or_default().to_owned();
            let text = "Distanciation and critical distance in Ricoeur's hermeneutics. ".repeat(8);
            Ok(Change::new()
                .removed("note", title)
                .removed_sample("its text", &text)
                .replaced("notes in your library", 12, 11)
                .touches(2, "links to it will be removed")
                .note("This will modify your existing work."))
        })
    })
}

fn main() -> std::process::ExitCode {
    let argv0 = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .unwrap_or_default();
    if argv0.file_name().is_some_and(|n| n == "tools") {
        let log = argv0.parent().unwrap_or(Path::new(".")).join("deleted.log");
        let setup = Arc::new(|b: ExecutorBuilder| b.preview_with("delete_note", preview()));
        let cli = ExecutorCli::with_setup(setup).install(Cli::new(tools(Some(log))));
        return cli.run_from_env().into();
    }
    probe()
}

#[tokio::main(flavor = "current_thread")]
async fn probe() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: confirm_probe OUT.json [TIMEOUT_MS]");
        return std::process::ExitCode::from(2);
    };
    let timeout_ms = args.next().and_then(|t| t.parse().ok()).unwrap_or(60_000);
    let set = tools(None);
    let config = ExecutorConfig {
        confirmation_timeout_ms: timeout_ms,
        store: tool_runtime::executor::StoreConfig::memory(),
        ..Default::default()
    };
    let executor = Executor::builder(set)
        .preview_with("delete_note", preview())
        .config(config)
        .confirmation(TerminalConfirmer::stdio())
        .build()
        .expect("executor");
    let call = ToolCall::new(
        "probe-1",
        "delete_note",
        json!({"title": "Ricoeur outline"}),
    );
    let execution = executor.call(&call, CallContext::new("probe-1")).await;
    let text = serde_json::to_string(&execution).expect("serializable");
    let tmp = format!("{out}.tmp");
    std::fs::write(&tmp, text).expect("write result");
    std::fs::rename(&tmp, &out).expect("publish result");
    eprintln!("done: {}", execution.outcome.status().as_str());
    std::process::ExitCode::SUCCESS
}
