//! The activity feed says who initiated each call (a person, the agent's model, the system's own
//! job) beside who decided it, in the records and in `graph --activity`; `graph --reanalyze` is
//! a system-initiated batch waiting for one approval.

use std::process::Command;

use serde_json::json;
use tool_runtime::executor::{ActivityQuery, ExecutorConfig, Outcome};
use tool_runtime::{CallContext, tool::Initiator};

use examples::graph::tools::BatchTool;
use examples::graph::{self, GraphDb, Services, feed};

use crate::graph_tools::call;

fn graph_bin(db: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_graph"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("TOOLS_LLAMA_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cx(id: &str, initiator: Initiator) -> CallContext {
    let mut cx = CallContext::new(id);
    cx.initiator = initiator;
    cx
}

#[tokio::test]
async fn the_feed_shows_who_initiated_each_call() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("graph.sqlite");
    let db = GraphDb::open(&db_path).unwrap();
    let exec = graph::executor_with(
        db.clone(),
        Services::offline(),
        &db_path.with_extension("store.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap();

    // A person reads a node; the agent's model looks for related ones.
    exec.call(
        &call("u1", "get_node", json!({"node_id": "obs-1"})),
        cx("u1", Initiator::User),
    )
    .await;
    exec.call(
        &call("m1", "find_related_nodes", json!({"node_id": "obs-1"})),
        cx("m1", Initiator::Model),
    )
    .await;
    // The system's job proposes a batch; a person approves it.
    let ids: Vec<String> = ["obs-1", "hyp-1"].map(String::from).to_vec();
    let proposed = feed::system_batch(&exec, BatchTool::RecalculateNodeConfidence, &ids).await;
    let Outcome::Pending { operation_id, .. } = &proposed.outcome else {
        panic!("{:?}", proposed.outcome)
    };
    assert!(
        exec.approve(operation_id)
            .await
            .unwrap()
            .outcome
            .is_success()
    );

    let by = |i: Initiator| {
        exec.activity(&ActivityQuery {
            initiator: Some(i),
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|r| r.tool)
        .collect::<Vec<_>>()
    };
    assert_eq!(by(Initiator::User), ["get_node"]);
    assert_eq!(by(Initiator::Model), ["find_related_nodes"]);
    // Proposed and approved: both records keep the system as initiator.
    assert_eq!(by(Initiator::System), ["apply_to_nodes", "apply_to_nodes"]);

    // `graph --activity` prints the initiator beside the decider.
    let printed = graph_bin(&db_path, &["--activity"]);
    let line = |tool: &str, decision: &str| {
        printed
            .lines()
            .find(|l| l.contains(tool) && l.contains(decision))
            .unwrap_or_else(|| panic!("no {tool} {decision} in\n{printed}"))
            .to_owned()
    };
    assert!(
        line("get_node", "allowed").contains("from user "),
        "{printed}"
    );
    assert!(
        line("find_related_nodes", "allowed").contains("from agent "),
        "{printed}"
    );
    let approved = line("apply_to_nodes", "confirmed");
    assert!(
        approved.contains("from system") && approved.contains("by user"),
        "{approved}"
    );
    assert!(
        line("apply_to_nodes", "deferred").contains("from system"),
        "{printed}"
    );
    // `--from` keeps one initiator's calls.
    let agent = graph_bin(&db_path, &["--activity", "--from", "agent"]);
    assert_eq!(agent.lines().count(), 1, "{agent}");
    assert!(agent.contains("find_related_nodes"), "{agent}");
    let system = graph_bin(&db_path, &["--activity", "--from", "system"]);
    assert_eq!(system.lines().count(), 2, "{system}");
    let bad = Command::new(env!("CARGO_BIN_EXE_graph"))
        .arg("--db")
        .arg(&db_path)
        .args(["--activity", "--from", "robot"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not user, agent or system"));
}

#[test]
fn reanalyze_is_a_system_batch_waiting_for_one_approval() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("graph.sqlite");
    let out = graph_bin(&db_path, &["--reanalyze"]);
    assert!(out.contains("pending"), "{out}");
    let pending = graph_bin(&db_path, &["--pending"]);
    let first = pending.lines().next().unwrap();
    assert!(
        first.contains("Apply “recalculate_node_confidence” to nodes"),
        "{pending}"
    );
    // The one operation lists all six nodes.
    for id in ["obs-1", "obs-2", "obs-3", "hyp-1", "src-1", "con-1"] {
        assert!(pending.contains(id), "{id} missing from\n{pending}");
    }
    let op = first.split_whitespace().next().unwrap();
    graph_bin(&db_path, &["--approve", op]);
    let feed = graph_bin(&db_path, &["--activity", "--tool", "apply_to_nodes"]);
    assert_eq!(feed.lines().count(), 2, "{feed}");
    assert!(feed.lines().all(|l| l.contains("from system")), "{feed}");
    // hyp-1 now has the recomputed confidence.
    assert_eq!(
        GraphDb::open(&db_path)
            .unwrap()
            .node("hyp-1")
            .unwrap()
            .confidence,
        0.42
    );
}
