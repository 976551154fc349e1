//! The task manager's tools without a model: query_tasks filters and response formats, errors
//! with recover_action, chaining with references to earlier results.

use std::sync::Arc;

use serde_json::json;
use tool_runtime::executor::{ApproveAll, ChainStep, DenyAll, ExecutorConfig, Outcome};
use tool_runtime::{CallContext, ErrorCode, ToolCall, hydrate::Arguments};

use examples::tasks::{self, Priority, TaskDb, TaskStatus};

fn exec(db: &TaskDb, dir: &tempfile::TempDir) -> tool_runtime::executor::Executor {
    tasks::executor(
        db.clone(),
        &dir.path().join("store.sqlite"),
        Arc::new(ApproveAll),
        ExecutorConfig::default(),
    )
    .unwrap()
}

async fn query(e: &tool_runtime::executor::Executor, args: serde_json::Value) -> serde_json::Value {
    let r = e
        .call(
            &ToolCall::new("q", "query_tasks", Arguments::Json(args)),
            CallContext::default(),
        )
        .await;
    match r.outcome {
        Outcome::Success { value, .. } => value,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn query_tasks_filters_sorts_and_formats() {
    let dir = tempfile::tempdir().unwrap();
    let db = TaskDb::open(dir.path().join("tasks.sqlite")).unwrap();
    let e = exec(&db, &dir);

    let all = query(&e, json!({})).await;
    assert_eq!(all["total"], 4);
    // Standard: core fields only, earliest due date first.
    let first = &all["tasks"][0];
    assert_eq!(first["title"], "Renew TLS certificate");
    assert!(first.get("priority").is_some() && first.get("description").is_none());

    let concise = query(
        &e,
        json!({"status": "pending", "response_format": "concise"}),
    )
    .await;
    assert_eq!(concise["total"], 2);
    let keys: Vec<&String> = concise["tasks"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "title", "status"]);

    let detailed = query(
        &e,
        json!({"tag": "code", "sort": "priority_desc", "response_format": "detailed"}),
    )
    .await;
    assert_eq!(detailed["tasks"][0]["title"], "Review PR #123");
    assert_eq!(detailed["tasks"][0]["tags"], json!(["code", "review"]));
    assert_eq!(detailed["tasks"][1]["priority"], "low");

    let due = query(&e, json!({"due_before": "2026-11-23", "limit": 1})).await;
    assert_eq!(due["total"], 2);
    assert_eq!(due["tasks"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn errors_say_how_to_recover() {
    let dir = tempfile::tempdir().unwrap();
    let db = TaskDb::open(dir.path().join("tasks.sqlite")).unwrap();
    let e = exec(&db, &dir);
    let r = e
        .call(
            &ToolCall::new(
                "u",
                "update_task",
                Arguments::Json(json!({"id": 7, "changes": {"status": "done"}})),
            ),
            CallContext::default(),
        )
        .await;
    let err = r.outcome.error().unwrap();
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    assert_eq!(err.details["nearest_ids"], json!([4, 3, 2]));
    assert!(err.recover_action.as_deref().unwrap().contains("[4, 3, 2]"));

    // An unknown priority is refused by the schema before the tool runs, with a pointer.
    let r = e
        .call(
            &ToolCall::new(
                "c",
                "create_task",
                Arguments::Json(json!({"title": "x", "priority": "urgent"})),
            ),
            CallContext::default(),
        )
        .await;
    let err = r.outcome.error().unwrap();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(err.violations[0].pointer, "/priority");

    let r = e
        .call(
            &ToolCall::new(
                "c",
                "create_task",
                Arguments::Json(json!({"title": "x", "eta": "next week"})),
            ),
            CallContext::default(),
        )
        .await;
    let err = r.outcome.error().unwrap();
    assert_eq!(err.code.as_str(), "INVALID_DATE");
    assert!(
        err.recover_action
            .as_deref()
            .unwrap()
            .contains("YYYY-MM-DD")
    );
    assert_eq!(db.all().unwrap().len(), 4, "failed calls changed nothing");
}

#[tokio::test]
async fn a_chain_creates_then_updates_the_new_task_by_reference() {
    let dir = tempfile::tempdir().unwrap();
    let db = TaskDb::open(dir.path().join("tasks.sqlite")).unwrap();
    let e = exec(&db, &dir);
    let steps: Vec<ChainStep> = serde_json::from_value(json!([
        {"id": "new", "tool": "create_task", "arguments": {"title": "Review PR #124", "priority": "high"}},
        {"id": "start", "tool": "update_task", "arguments": {"id": {"$ref": "new#/id"}, "changes": {"status": "in_progress", "add_tags": ["review"]}}},
        {"id": "check", "tool": "query_tasks", "arguments": {"id": {"$ref": "new#/id"}, "response_format": "detailed"}}
    ]))
    .unwrap();
    let result = e.chain(&steps, CallContext::default()).await;
    assert!(result.completed, "{result:#?}");
    let id = result.steps[0].value().unwrap()["id"].as_i64().unwrap();
    let t = db.get(id).unwrap();
    assert_eq!(
        (t.status, t.priority),
        (TaskStatus::InProgress, Priority::High)
    );
    assert_eq!(
        result.steps[2].value().unwrap()["tasks"][0]["tags"],
        json!(["review"])
    );

    // A reference to a later step is refused before anything runs.
    let bad: Vec<ChainStep> = serde_json::from_value(json!([
        {"id": "a", "tool": "delete_task", "arguments": {"id": {"$ref": "b#/id"}}},
        {"id": "b", "tool": "create_task", "arguments": {"title": "t"}}
    ]))
    .unwrap();
    let before = db.all().unwrap().len();
    let result = e.chain(&bad, CallContext::default()).await;
    assert!(!result.completed && result.steps.is_empty());
    assert_eq!(db.all().unwrap().len(), before);
}

#[tokio::test]
async fn a_declined_delete_keeps_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let db = TaskDb::open(dir.path().join("tasks.sqlite")).unwrap();
    let e = tasks::executor(
        db.clone(),
        &dir.path().join("store.sqlite"),
        Arc::new(DenyAll(Some("not now".into()))),
        ExecutorConfig::default(),
    )
    .unwrap();
    let r = e
        .call(
            &ToolCall::new("d", "delete_task", Arguments::Json(json!({"id": 1}))),
            CallContext::default(),
        )
        .await;
    assert!(
        matches!(r.outcome, Outcome::Denied { .. }),
        "{:?}",
        r.outcome
    );
    assert!(db.get(1).is_ok());
}
