//! The record of a typed tool's call run in place: its arguments are kept without being made
//! into JSON first, and read back they are the JSON hydration makes of the typed arguments,
//! redacted where they hide something, in the same key order.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_runtime::executor::{AuditArguments, Executor, MemoryAuditSink, REDACTED};
use tool_runtime::{CallContext, ToolCall, ToolError, ToolSet, tool, toolset};

use crate::executor_support::quick;

/// Finds notes.
#[tool(read_only)]
fn find_notes(
    /// Words to look for.
    query: String,
    /// At most this many.
    #[arg(default = 10)]
    limit: u32,
    /// Tags, each with a weight.
    tags: Option<BTreeMap<String, f32>>,
    /// The owner's password.
    #[arg(sensitive)]
    owner_secret: Option<String>,
) -> String {
    format!(
        "{query} {limit} {} {}",
        tags.map(|t| t.len()).unwrap_or(0),
        owner_secret.unwrap_or_default()
    )
}

/// Lists notes.
#[tool(read_only)]
fn list_notes(
    /// Words to look for.
    query: String,
    /// At most this many.
    #[arg(default = 10)]
    limit: u32,
    /// Tags, each with a weight.
    tags: Option<BTreeMap<String, f32>>,
) -> String {
    format!("{query} {limit} {}", tags.map(|t| t.len()).unwrap_or(0))
}

fn executor(set: ToolSet) -> (Executor, Arc<MemoryAuditSink>) {
    let sink = Arc::new(MemoryAuditSink::new());
    let exec = Executor::builder(set)
        .config(quick())
        .audit_sink(sink.clone())
        .build()
        .unwrap();
    (exec, sink)
}

/// Runs `args` and returns the record's arguments and summary, with what hydration makes of the
/// same call as JSON.
async fn run(tool: &str, args: Value) -> (AuditArguments, String, Value) {
    let set = toolset![find_notes, list_notes].unwrap();
    let call = ToolCall::new("c", tool, args.to_string());
    let hydrated = set.hydrate(&call).unwrap().arguments().clone();
    let (exec, sink) = executor(set);
    let done = exec.call(&call, CallContext::new("")).await;
    assert!(done.outcome.is_success(), "{:?}", done.outcome);
    let records = sink.records();
    assert_eq!(records.len(), 1, "one record per call");
    let r = &records[0];
    (
        r.arguments.clone().expect("the arguments are kept"),
        r.result_summary.clone().unwrap(),
        hydrated,
    )
}

#[tokio::test]
async fn typed_arguments_with_nothing_to_hide_read_back_as_hydration_made_them() {
    let (kept, _, hydrated) = run(
        "list_notes",
        json!({"tags": {"b": 0.1, "a": 2.5}, "query": "rust notes"}),
    )
    .await;
    // the default filled in, the f32 widened as serde_json widens it, the keys in the type's order
    assert_eq!(kept.value(), &hydrated);
    assert_eq!(kept.to_string(), hydrated.to_string());
    assert_eq!(kept["limit"], 10);
    assert_eq!(kept["tags"]["b"], json!(0.1f32));
    assert_eq!(
        kept.to_string(),
        r#"{"query":"rust notes","limit":10,"tags":{"a":2.5,"b":0.10000000149011612}}"#
    );
    // a record written out (a store, the activity feed) and read back holds the same
    let text = serde_json::to_string(&kept).unwrap();
    let back: AuditArguments = serde_json::from_str(&text).unwrap();
    assert_eq!(back, kept);
    assert_eq!(back, hydrated);
}

#[tokio::test]
async fn typed_arguments_with_secrets_are_redacted_in_the_record_and_the_summary() {
    let token = "ghp_0123456789abcdefghijklmnop";
    let (kept, summary, hydrated) = run(
        "list_notes",
        json!({"query": format!("find {token}"), "tags": {"password": 1.0}}),
    )
    .await;
    assert_ne!(kept.value(), &hydrated, "something is hidden");
    assert_eq!(
        kept["tags"]["password"], REDACTED,
        "a secret key at any depth"
    );
    let query = kept["query"].as_str().unwrap();
    assert!(query.starts_with("find ") && !query.contains(token));
    assert!(!serde_json::to_string(&kept).unwrap().contains(token));
    // the result echoes the query: the summary does not show the token
    assert!(
        summary.contains("find ") && !summary.contains(token),
        "{summary}"
    );
}

#[tokio::test]
async fn a_field_the_tool_marks_sensitive_is_redacted_even_when_unset() {
    let (kept, summary, _) = run(
        "find_notes",
        json!({"query": "q", "owner_secret": "hunter22"}),
    )
    .await;
    assert_eq!(
        kept["owner_secret"], REDACTED,
        "marked sensitive by the tool"
    );
    assert!(!serde_json::to_string(&kept).unwrap().contains("hunter22"));
    assert!(!summary.contains("hunter22"), "{summary}");
    let (kept, _, _) = run("find_notes", json!({"query": "q"})).await;
    assert_eq!(kept["owner_secret"], REDACTED);
}

#[tokio::test]
async fn a_secret_shaped_value_under_a_plain_key_is_redacted_too() {
    let jwt = json!({"query": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"});
    let (kept, _, _) = run("list_notes", jwt).await;
    assert_eq!(kept["query"], REDACTED);
    assert_eq!(kept["limit"], 10);
}

static FLAKY_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Adds two numbers, failing its first attempt with a retryable error.
#[tool(read_only)]
fn flaky_sum(
    /// The first.
    a: i64,
    /// The second.
    b: i64,
) -> Result<i64, ToolError> {
    match FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(ToolError::execution("busy, try again").retryable(true)),
        _ => Ok(a + b),
    }
}

#[tokio::test]
async fn a_retried_typed_call_runs_again_with_the_same_arguments() {
    let (exec, sink) = executor(toolset![flaky_sum].unwrap());
    let call = ToolCall::new("r", "flaky_sum", json!({"b": 2, "a": 40}));
    let done = exec.call(&call, CallContext::new("")).await;
    assert_eq!(done.value(), Some(&json!(42)), "{:?}", done.outcome);
    assert_eq!(FLAKY_CALLS.load(Ordering::SeqCst), 2);
    let records = sink.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].attempts, 2);
    let kept = records[0].arguments.as_ref().unwrap();
    assert_eq!(kept.to_string(), r#"{"a":40,"b":2}"#);
}
