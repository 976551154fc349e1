//! The knowledge graph agent's domain and tools, without a model: deferred confirmation (runs
//! exactly once on approval, a denial is recorded and changes nothing), read-only tools at once,
//! the activity feed.

use serde_json::json;
use tool_runtime::executor::{ActivityQuery, Decision, ExecutorConfig, Outcome, Status};
use tool_runtime::{CallContext, ErrorCode, ToolCall, hydrate::Arguments};

use examples::graph::{self, GraphDb};

fn call(id: &str, tool: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, tool, Arguments::Json(args))
}

fn pending_id(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pending { operation_id, .. } => operation_id.clone(),
        other => panic!("expected a pending operation, got {other:?}"),
    }
}

#[tokio::test]
async fn delete_waits_for_approval_and_runs_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let store = dir.path().join("store.sqlite");
    let exec = graph::executor(db.clone(), &store, ExecutorConfig::default()).unwrap();

    let first = exec
        .call(
            &call(
                "c1",
                "delete_node",
                json!({"node_id": "obs-3", "cascade": true}),
            ),
            CallContext::default(),
        )
        .await;
    let op = pending_id(&first.outcome);
    // Nothing happened yet; the preview says what would.
    assert!(db.node("obs-3").is_ok());
    let Outcome::Pending { preview, .. } = &first.outcome else {
        unreachable!()
    };
    let lines = tool_runtime::display::change_lines(preview.change.as_ref().unwrap());
    assert_eq!(
        lines[1], "! 1 relationships will be removed with it",
        "{lines:?}"
    );

    // Another process sharing the store approves it.
    let other = graph::executor(db.clone(), &store, ExecutorConfig::default()).unwrap();
    assert_eq!(other.pending().unwrap().len(), 1);
    let done = other.approve(&op).await.unwrap();
    assert!(done.outcome.is_success(), "{:?}", done.outcome);
    assert_eq!(db.node("obs-3").unwrap_err().code, ErrorCode::NOT_FOUND);
    assert!(
        db.edges_of("hyp-1")
            .unwrap()
            .iter()
            .all(|e| e.from_id != "obs-3")
    );

    // A second approval does not run it again.
    let again = exec.approve(&op).await.unwrap_err();
    assert_eq!(again.code.as_str(), "ALREADY_RESOLVED");
    assert!(exec.pending().unwrap().is_empty());

    let feed = exec
        .activity(&ActivityQuery {
            tool: Some("delete_node".into()),
            ..Default::default()
        })
        .unwrap();
    let decisions: Vec<_> = feed.iter().map(|r| (r.decision, r.status)).collect();
    assert!(
        decisions.contains(&(Decision::Deferred, Status::Pending)),
        "{decisions:?}"
    );
    assert!(
        decisions.contains(&(Decision::Confirmed, Status::Success)),
        "{decisions:?}"
    );
}

#[tokio::test]
async fn a_denied_merge_changes_nothing_and_is_in_the_activity_feed() {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let exec = graph::executor(
        db.clone(),
        &dir.path().join("s.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap();
    let r = exec
        .call(
            &call(
                "m1",
                "merge_nodes",
                json!({"primary_node_id": "obs-1", "secondary_node_id": "obs-2"}),
            ),
            CallContext::default(),
        )
        .await;
    let op = pending_id(&r.outcome);
    let denied = exec
        .deny(&op, Some("keep both observations".into()))
        .unwrap();
    match denied.outcome {
        Outcome::Denied { reason, .. } => assert_eq!(reason, "keep both observations"),
        other => panic!("{other:?}"),
    }
    assert!(db.node("obs-2").is_ok(), "a denial changes nothing");
    assert_eq!(
        exec.approve(&op).await.unwrap_err().code.as_str(),
        "ALREADY_RESOLVED"
    );
    let feed = exec.activity(&ActivityQuery::default()).unwrap();
    assert!(
        feed.iter()
            .any(|r| r.tool == "merge_nodes" && r.decision == Decision::Denied),
        "{feed:#?}"
    );
}

#[tokio::test]
async fn approved_merge_moves_relationships_and_read_only_tools_run_at_once() {
    let db = GraphDb::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let exec = graph::executor(
        db.clone(),
        &dir.path().join("s.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap();
    let related = exec
        .call(
            &call("r1", "find_related_nodes", json!({"node_id": "obs-1"})),
            CallContext::default(),
        )
        .await;
    let v = related.value().unwrap();
    let ids: Vec<&str> = v["related_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    // Linked nodes first, then the similar but unlinked duplicate obs-2.
    assert!(
        ids.contains(&"hyp-1") && ids.contains(&"src-1") && ids.contains(&"obs-2"),
        "{ids:?}"
    );

    let summary = exec
        .call(
            &call(
                "s1",
                "summarize_node",
                json!({"node_id": "hyp-1", "include_relationships": true, "max_length": 20}),
            ),
            CallContext::default(),
        )
        .await;
    let s = summary.value().unwrap();
    // Cut at a word, within the limit, marked as cut.
    let text = s["summary"].as_str().unwrap();
    assert!(text.chars().count() <= 20 && text.ends_with('…'), "{text}");
    assert_eq!(s["method"], "extractive");
    assert_eq!(s["related_count"], 3);

    let missing = exec
        .call(
            &call("s2", "summarize_node", json!({"node_id": "obs-99"})),
            CallContext::default(),
        )
        .await;
    let err = missing.outcome.error().unwrap();
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    assert!(err.recover_action.as_deref().unwrap().contains("obs-1"));
    // The hint ignores case (a model writes "OBS-3"), and is never an empty list.
    for (i, wrong) in ["OBS-99", "zzz"].into_iter().enumerate() {
        let missing = exec
            .call(
                &call(
                    &format!("s{}", i + 3),
                    "summarize_node",
                    json!({"node_id": wrong}),
                ),
                CallContext::default(),
            )
            .await;
        let hint = missing
            .outcome
            .error()
            .unwrap()
            .recover_action
            .clone()
            .unwrap();
        assert!(hint.contains("\"obs-1\""), "{hint}");
    }

    let r = exec
        .call(
            &call(
                "m1",
                "merge_nodes",
                json!({"primary_node_id": "obs-1", "secondary_node_id": "obs-2"}),
            ),
            CallContext::default(),
        )
        .await;
    let done = exec.approve(&pending_id(&r.outcome)).await.unwrap();
    // obs-2's only link (DERIVED_FROM src-1) repeats one obs-1 has: dropped, not duplicated.
    assert_eq!(done.value().unwrap()["relationships_transferred"], 0);
    let to_src: Vec<_> = db
        .edges_of("obs-1")
        .unwrap()
        .into_iter()
        .filter(|e| e.to_id == "src-1")
        .collect();
    assert_eq!(to_src.len(), 1, "{to_src:?}");
    assert!(db.node("obs-2").is_err());
    assert!(
        db.node("obs-1")
            .unwrap()
            .content
            .contains("Survey respondents")
    );
}
