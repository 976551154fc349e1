//! Drives the terminal confirmation for real: runs one modifying call through an executor whose
//! confirmation handler is the terminal, and writes the execution as JSON to the file named by
//! the first argument. `tests/confirm_tmux.rs` runs it inside tmux and types the answers.
//!
//! Usage: `confirm_probe OUT.json [TIMEOUT_MS]`

use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::executor::{Executor, ExecutorConfig, TerminalConfirmer};
use tool_runtime::{CallContext, Safety, ToolCall, ToolDefinition, ToolSet};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: confirm_probe OUT.json [TIMEOUT_MS]");
        return std::process::ExitCode::from(2);
    };
    let timeout_ms = args.next().and_then(|t| t.parse().ok()).unwrap_or(60_000);

    let mut def = ToolDefinition::new(
        "delete_note",
        "Delete a research note.",
        &json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}),
    );
    def.safety = Safety::Modify;
    def.intent = Some("Delete your note \"{title}\"".into());
    let mut set = ToolSet::new();
    set.register_dynamic(
        def,
        Some(Arc::new(|args: Value, _| {
            Box::pin(async move { Ok(json!({"deleted": args["title"]})) })
        })),
    )
    .expect("valid tool");
    let config = ExecutorConfig {
        confirmation_timeout_ms: timeout_ms,
        store: tool_runtime::executor::StoreConfig { path: None },
        ..Default::default()
    };
    let executor = Executor::builder(set)
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
