//! Replicas of the research assistant as a user deploys them, proved with killed processes: a
//! chat run waits for a person on one `research serve`, that process is killed with SIGKILL, the
//! call is approved elsewhere, and the run ends. On Redis (`TOOLS_STORE`, with a key prefix of
//! its own per deployment) the other replica takes the approval and resumes the run; on SQLite
//! a restarted server does. Each time the tool ran once (the notes and the audit say so), the
//! model's next request carried its result once, and every live server gives the answer.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use tool_runtime::executor::{ActivityQuery, Status};
use tool_runtime::store::{RedisStore, SqliteStore, Store};

use crate::research_runs::{
    APPROVER, CREATE, Killed, chat, ended, get, llamas, research, results_for, serve_with,
};
use crate::support::peer::{Peer, answer, tool_call};

/// The deployment the servers share: the notes database in `dir`, and the store.
enum Deployment {
    /// The store is the SQLite file beside the notes.
    Sqlite,
    /// The store is this Redis server, under this key prefix.
    Redis { url: String, prefix: String },
}

impl Deployment {
    fn command(&self, dir: &Path, model: &str) -> Command {
        let mut cmd = research(dir, Some(model));
        if let Deployment::Redis { url, prefix } = self {
            cmd.env("TOOLS_STORE", url)
                .env("TOOLS_STORE__PREFIX", prefix);
        }
        cmd
    }

    fn serve(&self, dir: &Path, model: &str) -> (Killed, String) {
        let (server, base, _) = serve_with(self.command(dir, model));
        (server, base)
    }

    /// The store as the servers open it, to read the audit trail.
    fn store(&self, dir: &Path) -> Arc<dyn Store> {
        match self {
            Deployment::Sqlite => {
                Arc::new(SqliteStore::open(dir.join("research.store.sqlite")).unwrap())
            }
            Deployment::Redis { url, prefix } => {
                Arc::new(RedisStore::with_prefix(url, prefix).unwrap())
            }
        }
    }
}

/// A prefix no other test or earlier run uses.
fn fresh_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("research-replicas:{}:{nanos}:", std::process::id())
}

async fn approve(base: &str, op: &str) {
    let res = reqwest::Client::new()
        .post(format!("{base}/api/v1/pending/{op}/approve"))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    let status = res.status();
    assert!(
        status.is_success(),
        "{status} {}",
        res.text().await.unwrap()
    );
}

/// A run that waits on the first server, which is then killed; `survivor` gives the server that
/// takes the approval (an already running replica, or a restarted one); every server in
/// `readers` must then give the run's answer.
async fn survives_a_kill(deployment: Deployment, replicas: usize) {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("I created the note Llamas."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (first, first_base) = deployment.serve(dir.path(), &peer.url);
    let mut others: Vec<(Killed, String)> = (1..replicas)
        .map(|_| deployment.serve(dir.path(), &peer.url))
        .collect();

    let (status, body) = chat(&first_base, "Create a note titled Llamas").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "suspended", "{body}");
    assert_eq!(body["pending"][0]["tool"], "create_note", "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    let op = body["pending"][0]["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    if let Some((_, other)) = others.first() {
        // another replica answers for the waiting run before anything dies
        let run = get(other, &format!("/api/v1/chat/{run_id}")).await;
        assert_eq!(run["status"], "suspended", "{run}");
    }

    // SIGKILL: no shutdown code of the server runs
    drop(first);
    assert_eq!(llamas(dir.path()), 0, "nothing ran before the approval");

    if others.is_empty() {
        // on SQLite the same deployment comes back
        others.push(deployment.serve(dir.path(), &peer.url));
    }
    approve(&others[0].1, &op).await;

    let run = ended(&others[0].1, &run_id).await;
    assert_eq!(run["status"], "answered", "{run}");
    assert_eq!(run["answer"], "I created the note Llamas.", "{run}");
    // a server started after the end reads it too, as does every replica
    others.push(deployment.serve(dir.path(), &peer.url));
    for (_, base) in &others {
        let run = get(base, &format!("/api/v1/chat/{run_id}")).await;
        assert_eq!(run["status"], "answered", "{base}: {run}");
        assert_eq!(run["answer"], "I created the note Llamas.", "{base}: {run}");
    }

    assert_eq!(llamas(dir.path()), 1, "the tool ran once");
    let requests = peer.requests();
    assert_eq!(requests.len(), 2, "one request before the wait, one after");
    assert_eq!(results_for(&requests[1], "call_1"), 1, "{}", requests[1]);
    assert_eq!(peer.unused(), 0);
    let query = ActivityQuery {
        tool: Some("create_note".into()),
        ..Default::default()
    };
    let records = deployment.store(dir.path()).query_audit(&query).unwrap();
    let ran = records
        .iter()
        .filter(|r| r.status == Status::Success)
        .count();
    assert_eq!(ran, 1, "one run of the tool in the audit: {records:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_replica_was_killed_is_approved_and_ended_by_the_other_on_redis() {
    let Some(url) = test_support::redis_url() else {
        eprintln!("skipped: TOOL_RUNTIME_TEST_REDIS_URL names no Redis server");
        return;
    };
    let deployment = Deployment::Redis {
        url,
        prefix: fresh_prefix(),
    };
    survives_a_kill(deployment, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_server_was_killed_is_approved_and_ended_after_a_restart_on_sqlite() {
    survives_a_kill(Deployment::Sqlite, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_on_one_redis_with_their_own_prefixes_do_not_see_each_others_runs() {
    let Some(url) = test_support::redis_url() else {
        eprintln!("skipped: TOOL_RUNTIME_TEST_REDIS_URL names no Redis server");
        return;
    };
    let peer = Peer::start(vec![tool_call("call_1", "create_note", CREATE)]);
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Deployment::Redis {
        url: url.clone(),
        prefix: fresh_prefix(),
    };
    let b = Deployment::Redis {
        url,
        prefix: format!("{}b:", fresh_prefix()),
    };
    let (_a, a_base) = a.serve(a_dir.path(), &peer.url);
    let (_b, b_base) = b.serve(b_dir.path(), &peer.url);
    let (status, body) = chat(&a_base, "Create a note titled Llamas").await;
    assert_eq!(status, 202, "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    let op = body["pending"][0]["operation_id"].as_str().unwrap();

    let res = reqwest::Client::new()
        .get(format!("{b_base}/api/v1/chat/{run_id}"))
        .bearer_auth(crate::research_runs::AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 404, "{}", res.text().await.unwrap());
    let pending = |base: String| async move {
        let res = reqwest::Client::new()
            .get(format!("{base}/api/v1/pending"))
            .bearer_auth(APPROVER)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        res.json::<serde_json::Value>().await.unwrap()
    };
    let theirs = pending(b_base).await;
    assert!(
        !theirs.to_string().contains(op),
        "the other deployment lists no operation of this one: {theirs}"
    );
    let ours = pending(a_base.clone()).await;
    assert!(ours.to_string().contains(op), "{ours}");
}
