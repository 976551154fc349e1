//! `apply_to_nodes`: one operation over many nodes with one confirmation that lists every node
//! and its change; a denial changes nothing, an approval applies all, a batch that cannot apply
//! to one node applies to none, and the undo reverts the whole batch.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use serde_json::json;
use tool_runtime::CallContext;
use tool_runtime::executor::{
    Answer, ConfirmationRequest, Executor, ExecutorConfig, FnConfirmer, Outcome,
};

use examples::graph::{self, GraphDb, Services};

use crate::graph_tools::call;

/// An executor answering confirmations from `answers` in order (yes once they run out), and
/// the requests it was asked.
fn executor(
    db: &GraphDb,
    answers: Vec<Answer>,
    dir: &tempfile::TempDir,
) -> (Executor, Arc<Mutex<Vec<ConfirmationRequest>>>) {
    let asked: Arc<Mutex<Vec<ConfirmationRequest>>> = Arc::default();
    let log = asked.clone();
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    let builder = Executor::builder(graph::toolset(db.clone(), Services::offline()))
        .config(ExecutorConfig::default())
        .confirmation(FnConfirmer(move |r: ConfirmationRequest| {
            log.lock().unwrap().push(r);
            let a = answers.lock().unwrap().next().unwrap_or(Answer::Yes);
            async move { a }.boxed()
        }));
    let store = examples::open_store(&dir.path().join("store.sqlite")).unwrap();
    let exec = graph::configure(builder, db.clone(), Services::offline(), store)
        .build()
        .unwrap();
    (exec, asked)
}

fn kinds(db: &GraphDb, ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| db.node(id).unwrap().kind).collect()
}

#[tokio::test]
async fn one_confirmation_lists_every_node_and_approval_applies_all() {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let (exec, asked) = executor(
        &db,
        vec![Answer::No {
            reason: Some("not yet".into()),
        }],
        &dir,
    );
    let ids = ["obs-1", "obs-2", "obs-3"];
    let batch = json!({"operation": "reclassify_node", "node_ids": ids, "new_type": "Hypothesis"});

    // Denied: one question, naming each node and its change; nothing changes.
    let r = exec
        .call(
            &call("b1", "apply_to_nodes", batch.clone()),
            CallContext::new("b1"),
        )
        .await;
    assert!(
        matches!(r.outcome, Outcome::Denied { .. }),
        "{:?}",
        r.outcome
    );
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        let change = asked[0].preview.change.as_ref().unwrap();
        // one line per node, in the order given, and what holds for all of them
        let lines = tool_runtime::display::change_lines(change);
        let expected: Vec<String> = ids
            .iter()
            .map(|id| format!("~ {id} type: “Observation” → “Hypothesis”"))
            .chain(["  reclassify_node on 3 nodes, all or none.".to_owned()])
            .collect();
        assert_eq!(lines, expected);
    }
    assert_eq!(kinds(&db, &ids), ["Observation"; 3]);

    // Approved: one more question, all three change.
    let r = exec
        .call(&call("b2", "apply_to_nodes", batch), CallContext::new("b2"))
        .await;
    assert!(r.outcome.is_success(), "{:?}", r.outcome);
    assert_eq!(asked.lock().unwrap().len(), 2);
    assert_eq!(r.value().unwrap()["applied"], 3);
    assert_eq!(kinds(&db, &ids), ["Hypothesis"; 3]);

    // One undo reverts the batch.
    let undone = exec
        .undo(r.undo_id().unwrap(), CallContext::default())
        .await;
    assert!(undone.outcome.is_success(), "{:?}", undone.outcome);
    assert_eq!(kinds(&db, &ids), ["Observation"; 3]);
}

#[tokio::test]
async fn a_batch_that_cannot_apply_to_one_node_applies_to_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let (exec, _) = executor(&db, vec![], &dir);
    let before = (db.nodes().unwrap(), db.edges().unwrap());

    // Both nodes have relationships and cascade is off: refused before anything is deleted.
    let r = exec
        .call(
            &call(
                "b1",
                "apply_to_nodes",
                json!({"operation": "delete_node", "node_ids": ["obs-2", "con-1"]}),
            ),
            CallContext::new("b1"),
        )
        .await;
    assert_eq!(
        r.outcome.error().unwrap().code.as_str(),
        "HAS_RELATIONSHIPS"
    );
    // An unknown node, a node listed twice, an empty list: refused, nothing changed.
    for (i, ids) in [
        json!(["obs-1", "obs-99"]),
        json!(["obs-1", "obs-1"]),
        json!([]),
    ]
    .into_iter()
    .enumerate()
    {
        let r = exec
            .call(
                &call(
                    &format!("c{i}"),
                    "apply_to_nodes",
                    json!({"operation": "recalculate_node_confidence", "node_ids": ids}),
                ),
                CallContext::new(format!("c{i}")),
            )
            .await;
        assert!(r.outcome.error().is_some(), "{ids}: {:?}", r.outcome);
    }
    assert_eq!((db.nodes().unwrap(), db.edges().unwrap()), before);

    // With cascade both go, with their relationships.
    let r = exec
        .call(
            &call(
                "b2",
                "apply_to_nodes",
                json!({"operation": "delete_node", "node_ids": ["obs-2", "con-1"], "cascade": true}),
            ),
            CallContext::new("b2"),
        )
        .await;
    assert!(r.outcome.is_success(), "{:?}", r.outcome);
    assert!(db.node("obs-2").is_err() && db.node("con-1").is_err());
    assert_eq!(db.edges().unwrap().len(), 3);
}
