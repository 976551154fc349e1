//! The knowledge graph's tool layer over SQLite, through the executor as an agent or a person
//! reaches it: node and relationship CRUD, what reclassify and merge do to relationships and
//! provenance, confidence previews that show the value written, undo of every change, and the
//! structured refusals of bad input.

use serde_json::{Value, json};
use tool_runtime::display::change_lines;
use tool_runtime::executor::{ChangeEntry, Executor, ExecutorConfig, Outcome};
use tool_runtime::{CallContext, ErrorCode, ToolCall, hydrate::Arguments};

use examples::graph::{self, GraphDb, Services};

pub(crate) fn call(id: &str, tool: &str, args: Value) -> ToolCall {
    ToolCall::new(id, tool, Arguments::Json(args))
}

/// An executor over a fresh seeded graph, offline services, deferred confirmations.
pub(crate) fn setup(config: ExecutorConfig) -> (GraphDb, Executor, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let exec = graph::executor_with(
        db.clone(),
        Services::offline(),
        &dir.path().join("graph.store.sqlite"),
        config,
    )
    .unwrap();
    (db, exec, dir)
}

/// Runs a call; if it waits for approval, returns the pending outcome unchanged.
pub(crate) async fn run(exec: &Executor, id: &str, tool: &str, args: Value) -> Outcome {
    exec.call(&call(id, tool, args), CallContext::new(id))
        .await
        .outcome
}

/// Runs a call and approves it if it waits; returns the approved execution's value.
pub(crate) async fn run_approved(exec: &Executor, id: &str, tool: &str, args: Value) -> Value {
    let first = exec.call(&call(id, tool, args), CallContext::new(id)).await;
    let done = match &first.outcome {
        Outcome::Pending { operation_id, .. } => exec.approve(operation_id).await.unwrap(),
        _ => first,
    };
    assert!(done.outcome.is_success(), "{tool}: {:?}", done.outcome);
    done.value().unwrap().clone()
}

/// The value of a successful outcome.
pub(crate) fn value(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Success { value, .. } => value.clone(),
        other => panic!("expected a success, got {other:?}"),
    }
}

/// The pending operation's id and its change as the person reads it, line by line.
fn pending(outcome: &Outcome) -> (String, Vec<String>) {
    match outcome {
        Outcome::Pending {
            operation_id,
            preview,
            ..
        } => (
            operation_id.clone(),
            preview
                .change
                .as_ref()
                .map(change_lines)
                .unwrap_or_default(),
        ),
        other => panic!("expected a pending operation, got {other:?}"),
    }
}

/// The new value of the replaced entry labelled `label`.
fn replaced_to(outcome: &Outcome, label: &str) -> Value {
    let Outcome::Pending { preview, .. } = outcome else {
        panic!("expected a pending operation, got {outcome:?}")
    };
    let change = preview.change.as_ref().expect("a change");
    change
        .entries()
        .iter()
        .find_map(|e| match e {
            ChangeEntry::Replace { label: l, new, .. } if l == label => Some(new.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {label} replaced in {change:?}"))
}

#[tokio::test]
async fn nodes_and_relationships_are_created_read_and_undone() {
    let (db, exec, _dir) = setup(ExecutorConfig::default());
    let created = run_approved(
        &exec,
        "n1",
        "create_node",
        json!({"node_type": "Observation", "content": "Office workers who drink coffee sleep less.",
               "confidence": 0.65}),
    )
    .await;
    // Ids follow the type and never collide with the seeded obs-1..obs-3.
    assert_eq!(created["node"]["id"], "obs-4");
    assert_eq!(created["node"]["confidence"], 0.65);
    let suggested = created["related_nodes"].as_array().unwrap();
    assert!(
        suggested.iter().any(|n| n["id"] == "obs-2"),
        "{suggested:?}"
    );

    let read = run(&exec, "g1", "get_node", json!({"node_id": "obs-4"})).await;
    assert_eq!(
        value(&read)["node"]["content"],
        "Office workers who drink coffee sleep less."
    );

    // Confidence outside [0, 1] is refused by the schema before anyone is asked.
    let bad = run(
        &exec,
        "e0",
        "create_relationship",
        json!({"from_id": "obs-4", "to_id": "obs-3", "relationship_type": "SUPPORTS",
               "confidence": 1.5}),
    )
    .await;
    assert_eq!(bad.error().unwrap().code, ErrorCode::INVALID_ARGUMENTS);
    assert!(exec.pending().unwrap().is_empty());
    // An unknown type is refused too.
    let bad = run(
        &exec,
        "e1",
        "create_relationship",
        json!({"from_id": "obs-4", "to_id": "obs-3", "relationship_type": "LIKES"}),
    )
    .await;
    assert_eq!(bad.error().unwrap().code, ErrorCode::INVALID_ARGUMENTS);
    // A missing end is NOT_FOUND, and nothing was written.
    let bad = run_err(
        &exec,
        "e2",
        "create_relationship",
        json!({"from_id": "obs-4", "to_id": "obs-77", "relationship_type": "SUPPORTS"}),
    )
    .await;
    assert_eq!(bad, "NOT_FOUND");

    let edge = run_approved(
        &exec,
        "e3",
        "create_relationship",
        json!({"from_id": "obs-4", "to_id": "obs-3", "relationship_type": "SUPPORTS",
               "confidence": 0.7, "notes": "same survey"}),
    )
    .await;
    let edge_id = edge["edge_id"].as_i64().unwrap();
    assert_eq!(
        db.edge(edge_id).unwrap().notes.as_deref(),
        Some("same survey")
    );
    // The same link twice is refused, naming the existing one.
    let dup = run_err(
        &exec,
        "e4",
        "create_relationship",
        json!({"from_id": "obs-4", "to_id": "obs-3", "relationship_type": "SUPPORTS"}),
    )
    .await;
    assert_eq!(dup, "ALREADY_EXISTS");

    // Updating a node shows before and after, and the undo puts the old text back.
    let upd = exec
        .call(
            &call(
                "u1",
                "update_node",
                json!({"node_id": "obs-4", "content": "Coffee drinkers sleep less.",
                       "re_analyze": true}),
            ),
            CallContext::new("u1"),
        )
        .await;
    let (op, change) = pending(&upd.outcome);
    // only what the call changes: the unset confidence is not listed
    assert_eq!(
        change,
        [
            "~ content: “Office workers who drink coffee sleep less.” → “Coffee drinkers sleep less.”"
        ]
    );
    let done = exec.approve(&op).await.unwrap();
    assert_eq!(
        db.node("obs-4").unwrap().content,
        "Coffee drinkers sleep less."
    );
    // Re-analysed: the new text's neighbours (sleep: obs-3) are suggested.
    let suggested = &done.value().unwrap()["related_nodes"];
    assert!(
        suggested
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["id"] == "obs-3"),
        "{suggested}"
    );
    let undone = exec
        .undo(done.undo_id().unwrap(), CallContext::default())
        .await;
    assert!(undone.outcome.is_success(), "{:?}", undone.outcome);
    assert_eq!(
        db.node("obs-4").unwrap().content,
        "Office workers who drink coffee sleep less."
    );

    // Undoing the creation removes the node and its relationships.
    let feed_create = exec
        .activity(&tool_runtime::executor::ActivityQuery {
            tool: Some("create_node".into()),
            ..Default::default()
        })
        .unwrap();
    let undo_id = feed_create
        .iter()
        .find_map(|r| r.undo_id.clone())
        .expect("create_node was journaled");
    assert!(
        exec.undo(&undo_id, CallContext::default())
            .await
            .outcome
            .is_success()
    );
    assert_eq!(db.node("obs-4").unwrap_err().code, ErrorCode::NOT_FOUND);
    assert!(db.edge(edge_id).is_err());
}

/// Runs a call expected to fail (approving it if it waits) and returns the error code.
pub(crate) async fn run_err(exec: &Executor, id: &str, tool: &str, args: Value) -> String {
    let first = exec.call(&call(id, tool, args), CallContext::new(id)).await;
    let done = match &first.outcome {
        Outcome::Pending { operation_id, .. } => exec.approve(operation_id).await.unwrap(),
        _ => first,
    };
    done.outcome
        .error()
        .unwrap_or_else(|| panic!("{tool} should fail: {:?}", done.outcome))
        .code
        .as_str()
        .to_owned()
}

#[tokio::test]
async fn deleting_a_relationship_always_asks_and_a_denial_keeps_it() {
    // Even with every category that can run unasked set to do so.
    let config = ExecutorConfig {
        auto_confirm_create: true,
        auto_confirm_external: true,
        ..Default::default()
    };
    let (db, exec, _dir) = setup(config);
    let before = db.edges().unwrap();
    let r = exec
        .call(
            &call("d1", "delete_relationship", json!({"edge_id": 4})),
            CallContext::new("d1"),
        )
        .await;
    let (op, change) = pending(&r.outcome);
    // The preview says which link and between what.
    assert_eq!(
        change[0], "- relationship 4 (obs-3 CONTRADICTS hyp-1): 0.6",
        "{change:?}"
    );
    let denied = exec.deny(&op, Some("keep the evidence".into())).unwrap();
    // A denial is the person's choice, not an error.
    assert!(
        matches!(denied.outcome, Outcome::Denied { .. }),
        "{:?}",
        denied.outcome
    );
    assert_eq!(db.edges().unwrap(), before);

    let r = exec
        .call(
            &call("d2", "delete_relationship", json!({"edge_id": 4})),
            CallContext::new("d2"),
        )
        .await;
    let (op, _) = pending(&r.outcome);
    let done = exec.approve(&op).await.unwrap();
    assert!(db.edge(4).is_err());
    exec.undo(done.undo_id().unwrap(), CallContext::default())
        .await;
    assert_eq!(db.edges().unwrap(), before);

    // An unknown relationship: the preview says why it is unavailable, and approving it ends
    // in NOT_FOUND, nothing deleted.
    let r = run(&exec, "d3", "delete_relationship", json!({"edge_id": 99})).await;
    let (_, change) = pending(&r);
    assert!(
        change[0].starts_with("  The change cannot be shown: ") && change[0].contains("99"),
        "{change:?}"
    );
    let code = run_err(&exec, "d4", "delete_relationship", json!({"edge_id": 99})).await;
    assert_eq!(code, "NOT_FOUND");
    assert_eq!(db.edges().unwrap(), before);
}

#[tokio::test]
async fn reclassify_keeps_the_id_and_merge_moves_edges_and_keeps_provenance() {
    let (db, exec, _dir) = setup(ExecutorConfig::default());
    // Reclassifying obs-1 as a Hypothesis keeps its id and links, and warns that a link from a
    // hypothesis to a hypothesis may now be better typed.
    let out = run_approved(
        &exec,
        "r1",
        "reclassify_node",
        json!({"node_id": "obs-1", "new_type": "Hypothesis"}),
    )
    .await;
    assert_eq!(out["old_type"], "Observation");
    assert_eq!(db.node("obs-1").unwrap().kind, "Hypothesis");
    assert_eq!(db.edges_of("obs-1").unwrap().len(), 2);
    assert!(
        out["warning"].as_str().unwrap().contains("relationship 1"),
        "{out}"
    );
    // Without preserve_relationships its links go, and the undo brings them back.
    let r = exec
        .call(
            &call(
                "r2",
                "reclassify_node",
                json!({"node_id": "obs-3", "new_type": "Concept", "preserve_relationships": false}),
            ),
            CallContext::new("r2"),
        )
        .await;
    let (op, change) = pending(&r.outcome);
    assert_eq!(
        change,
        [
            "~ type: “Observation” → “Concept”",
            "! 1 relationships will be removed"
        ]
    );
    let done = exec.approve(&op).await.unwrap();
    assert!(db.edges_of("obs-3").unwrap().is_empty());
    exec.undo(done.undo_id().unwrap(), CallContext::default())
        .await;
    assert_eq!(db.node("obs-3").unwrap().kind, "Observation");
    assert_eq!(db.edges_of("obs-3").unwrap().len(), 1);
    // The same type again is a clear refusal.
    let same = run_err(
        &exec,
        "r3",
        "reclassify_node",
        json!({"node_id": "obs-3", "new_type": "Observation"}),
    )
    .await;
    assert_eq!(same, "INVALID_ARGUMENTS");

    // Merge obs-2 into obs-1: obs-2's DERIVED_FROM src-1 duplicates obs-1's and is dropped;
    // obs-1 keeps its own; obs-2's text and origin stay in obs-1's provenance.
    run_approved(
        &exec,
        "l1",
        "create_relationship",
        json!({"from_id": "obs-2", "to_id": "con-1", "relationship_type": "RELATES_TO"}),
    )
    .await;
    let before_edges = db.edges().unwrap();
    let merged = exec
        .call(
            &call(
                "m1",
                "merge_nodes",
                json!({"primary_node_id": "obs-1", "secondary_node_id": "obs-2"}),
            ),
            CallContext::new("m1"),
        )
        .await;
    let (op, change) = pending(&merged.outcome);
    assert!(
        change.contains(&"! 1 relationships move from obs-2 to obs-1".to_owned())
            && change
                .contains(&"! 1 relationships will be removed (repeats or self-links)".to_owned()),
        "{change:?}"
    );
    let done = exec.approve(&op).await.unwrap();
    let v = done.value().unwrap();
    assert_eq!(v["relationships_transferred"], 1, "{v}");
    let obs1 = db.node("obs-1").unwrap();
    assert!(
        obs1.provenance
            .iter()
            .any(|p| p.starts_with("merged from obs-2") && p.contains("Survey respondents")),
        "{:?}",
        obs1.provenance
    );
    assert!(db.node("obs-2").is_err());
    let links: Vec<(String, String, String)> = db
        .edges_of("obs-1")
        .unwrap()
        .into_iter()
        .map(|e| (e.from_id, e.to_id, e.rel_type))
        .collect();
    assert!(links.contains(&("obs-1".into(), "con-1".into(), "RELATES_TO".into())));
    assert_eq!(
        links.iter().filter(|l| l.1 == "src-1").count(),
        1,
        "{links:?}"
    );
    // Undo: obs-2 is back with its own links, obs-1 as it was.
    exec.undo(done.undo_id().unwrap(), CallContext::default())
        .await;
    assert_eq!(db.edges().unwrap(), before_edges);
    assert!(db.node("obs-2").is_ok());
    assert!(db.node("obs-1").unwrap().provenance.is_empty());

    // A merged node's own provenance is carried over, before the line naming it.
    let created = run_approved(
        &exec,
        "n1",
        "create_node",
        json!({"node_type": "Observation", "content": "Late coffee shortens sleep."}),
    )
    .await;
    let id = created["node"]["id"].as_str().unwrap();
    run_approved(
        &exec,
        "m2",
        "merge_nodes",
        json!({"primary_node_id": "obs-3", "secondary_node_id": id,
               "merge_strategy": "prefer_primary"}),
    )
    .await;
    let obs3 = db.node("obs-3").unwrap();
    assert_eq!(
        obs3.provenance,
        [
            "created with create_node".to_owned(),
            format!("merged from {id} (Observation, confidence 0.50): Late coffee shortens sleep.")
        ]
    );
    assert_eq!(
        obs3.content,
        "Sleep quality drops when caffeine is consumed after 4 pm."
    );
}

#[tokio::test]
async fn confidence_previews_show_the_value_written() {
    let (db, exec, _dir) = setup(ExecutorConfig::default());
    let r = exec
        .call(
            &call(
                "c1",
                "recalculate_node_confidence",
                json!({"node_id": "hyp-1"}),
            ),
            CallContext::new("c1"),
        )
        .await;
    let (op, change) = pending(&r.outcome);
    let promised = replaced_to(&r.outcome, "confidence").as_f64().unwrap();
    assert_eq!(change[0], format!("~ confidence: 0.5 → {promised}"));
    // Nothing written before approval.
    assert_eq!(db.node("hyp-1").unwrap().confidence, 0.5);
    let done = exec.approve(&op).await.unwrap();
    let v = done.value().unwrap();
    assert_eq!(db.node("hyp-1").unwrap().confidence, promised);
    assert_eq!(v["new_confidence"].as_f64().unwrap(), promised);
    let factors = v["factors"].to_string();
    assert!(
        factors.contains("supported by obs-1") && factors.contains("contradicted by obs-3"),
        "{factors}"
    );
    // 0.4 prior + 0.15·0.8·0.7 (obs-1) − 0.15·0.6·0.7 (obs-3) = 0.4210 → 0.42
    assert_eq!(promised, 0.42);
    // Without the relationships only the type's prior counts.
    let v = run_approved(
        &exec,
        "c2",
        "recalculate_node_confidence",
        json!({"node_id": "hyp-1", "factor_in_relationships": false}),
    )
    .await;
    assert_eq!(v["new_confidence"], 0.4);

    let v = run_approved(
        &exec,
        "c3",
        "recalculate_edge_confidence",
        json!({"edge_id": 1}),
    )
    .await;
    let new = v["new_confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&new));
    assert_eq!(db.edge(1).unwrap().confidence, new);
    assert_eq!(v["old_confidence"], 0.8);

    // reclassify_relationship without a type takes the one the nodes suggest: an observation
    // about a hypothesis that reads as negative contradicts it; edge 4 already says so.
    let same = run_err(
        &exec,
        "c4",
        "reclassify_relationship",
        json!({"edge_id": 4}),
    )
    .await;
    assert_eq!(same, "NO_CHANGE");
    let v = run_approved(
        &exec,
        "c5",
        "reclassify_relationship",
        json!({"edge_id": 5, "new_type": "SUPPORTS"}),
    )
    .await;
    assert_eq!(
        (v["old_type"].as_str(), v["new_type"].as_str()),
        (Some("RELATES_TO"), Some("SUPPORTS"))
    );
    assert_eq!(db.edge(5).unwrap().rel_type, "SUPPORTS");
}

#[tokio::test]
async fn summaries_of_nodes_context_and_relationships() {
    let (_db, exec, _dir) = setup(ExecutorConfig::default());
    let v = run(
        &exec,
        "s1",
        "summarize_node_with_context",
        json!({"node_id": "hyp-1"}),
    )
    .await;
    let v = value(&v);
    let ctx = &v["context"];
    assert!(
        ctx["supports"][0].as_str().unwrap().starts_with("obs-1"),
        "{v}"
    );
    assert!(
        ctx["contradicts"][0].as_str().unwrap().starts_with("obs-3"),
        "{v}"
    );
    assert!(
        ctx["related"][0].as_str().unwrap().starts_with("con-1"),
        "{v}"
    );
    assert!(v["synthesis"].as_str().unwrap().contains("mixed"), "{v}");
    // Filtered to one type, two hops: only the supporting path and what lies beyond it.
    let v = run(
        &exec,
        "s2",
        "summarize_node_with_context",
        json!({"node_id": "hyp-1", "depth": 2, "relationship_types": ["SUPPORTS", "DERIVED_FROM"]}),
    )
    .await;
    let v = value(&v);
    assert!(v["context"]["contradicts"].as_array().unwrap().is_empty());
    assert!(
        v["context"]["related"][0]
            .as_str()
            .unwrap()
            .starts_with("src-1"),
        "{v}"
    );

    let v = run(&exec, "s3", "summarize_relationship", json!({"edge_id": 4})).await;
    let v = value(&v);
    assert_eq!(
        (v["from_node"].as_str(), v["to_node"].as_str()),
        (Some("obs-3"), Some("hyp-1"))
    );
    assert_eq!(v["strength_assessment"], "moderate");
    assert_eq!(v["evidence"].as_array().unwrap().len(), 2);
    let bad = run(
        &exec,
        "s4",
        "summarize_relationship",
        json!({"edge_id": "four"}),
    )
    .await;
    assert_eq!(bad.error().unwrap().code, ErrorCode::INVALID_ARGUMENTS);
}

#[tokio::test]
async fn link_related_nodes_links_what_find_related_nodes_finds() {
    let (db, exec, _dir) = setup(ExecutorConfig::default());
    let r = exec
        .call(
            &call("l1", "link_related_nodes", json!({"node_id": "obs-2"})),
            CallContext::new("l1"),
        )
        .await;
    let (op, planned) = pending(&r.outcome);
    assert!(
        planned
            .iter()
            .any(|l| l.starts_with("+ relationship obs-2 RELATES_TO obs-1: ")),
        "{planned:?}"
    );
    // src-1 is linked already: not planned again.
    assert!(planned.iter().all(|l| !l.contains("src-1")), "{planned:?}");
    assert_eq!(db.edges().unwrap().len(), 5);
    let done = exec.approve(&op).await.unwrap();
    let v = done.value().unwrap();
    assert_eq!(v["links_created"].as_u64().unwrap() as usize, planned.len());
    let link = db
        .edges_of("obs-2")
        .unwrap()
        .into_iter()
        .find(|e| e.to_id == "obs-1")
        .expect("linked");
    assert_eq!(link.confidence, 0.42);
    let again = value(
        &run(
            &exec,
            "f1",
            "find_related_nodes",
            json!({"node_id": "obs-2"}),
        )
        .await,
    );
    assert!(
        again["related_nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["id"] == "obs-1" && n["linked"] == true),
        "{again}"
    );
    exec.undo(done.undo_id().unwrap(), CallContext::default())
        .await;
    assert_eq!(db.edges().unwrap().len(), 5);
}

#[tokio::test]
async fn a_deletion_answers_its_typed_result_and_its_undo_brings_the_node_back() {
    let (db, exec, _dir) = setup(ExecutorConfig::default());
    let parked = run(
        &exec,
        "d1",
        "delete_node",
        json!({"node_id": "obs-3", "cascade": true}),
    )
    .await;
    let (op, _) = pending(&parked);
    let done = exec.approve(&op).await.unwrap();
    let value = done.value().unwrap().clone();
    assert_eq!(value["node_id"], "obs-3", "{value}");
    assert!(value["snapshot_id"].is_i64(), "{value}");
    assert!(db.node("obs-3").is_err());

    let undone = exec
        .undo(done.undo_id().unwrap(), CallContext::default())
        .await;
    assert!(undone.outcome.is_success(), "{:?}", undone.outcome);
    assert_eq!(db.node("obs-3").unwrap().id, "obs-3");
}
