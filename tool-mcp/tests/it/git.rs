//! `mcp-server-git` (PyPI), the reference Git server, started over stdio by its console script
//! on a temporary repository: with its annotations trusted, `git_status` runs at once and
//! answers what Git says of the repository; `git_commit` waits for a person, and the commit
//! exists only once they approve it (a denied one leaves the history as it was).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::definition::Safety;
use tool_runtime::executor::{Deferred, Executor, Outcome};
use tool_runtime::store::SqliteStore;
use tool_runtime::{CallContext, ToolCall, ToolSet};

/// The console script of `mcp-server-git`, installed beside the conformance Python (as
/// `.ci/run` does), or `None` where it is missing (outside CI).
fn git_server(repo: &Path) -> Option<ServerConfig> {
    let python = test_support::conformance_python()?;
    let script = Path::new(&python).with_file_name("mcp-server-git");
    let found = test_support::prerequisite(
        script.is_file(),
        "mcp-server-git",
        "pip install mcp-server-git into the TOOLS_CONFORMANCE_PYTHON environment, as .ci/run \
         does",
    );
    found.then(|| {
        ServerConfig::stdio(
            script.display().to_string(),
            ["--repository".to_owned(), repo.display().to_string()],
        )
    })
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with one commit and a staged new file.
fn repository(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Test"]);
    git(dir, &["config", "user.email", "test@example.invalid"]);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    git(dir, &["add", "README"]);
    git(dir, &["commit", "-q", "-m", "first"]);
    std::fs::write(dir.join("plan.txt"), "ship it\n").unwrap();
    git(dir, &["add", "plan.txt"]);
}

async fn call(exec: &Executor, id: &str, tool: &str, args: Value) -> Outcome {
    let call = ToolCall::new(id, tool, args);
    exec.call(&call, CallContext::new(id)).await.outcome
}

fn text_of(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Success { value, .. } => match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
        other => panic!("did not run: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_status_runs_at_once_and_a_commit_waits_for_a_person() {
    let repo = tempfile::tempdir().unwrap();
    let Some(config) = git_server(repo.path()) else {
        return;
    };
    repository(repo.path());
    let client = McpClient::connect("git", config.trusting_annotations())
        .await
        .unwrap();
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert!(imported.refused.is_empty(), "{imported:?}");
    let status = set.get("git__git_status").expect("git_status imported");
    assert_eq!(status.safety, Safety::ReadOnly, "{imported:?}");
    let commit = set.get("git__git_commit").expect("git_commit imported");
    assert!(
        !commit.safety.is_read_only(),
        "a commit changes the repository: {:?}",
        commit.safety
    );
    let state = tempfile::tempdir().unwrap();
    // read-only results are cached (the default): the commit must empty the cache, so that
    // the status read after it asks the server again
    let exec = Executor::builder(set)
        .store(Arc::new(
            SqliteStore::open(state.path().join("state.sqlite3")).unwrap(),
        ))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let repo_path = repo.path().display().to_string();

    // a read runs at once and says what Git says
    let status = call(
        &exec,
        "s1",
        "git__git_status",
        json!({"repo_path": repo_path}),
    )
    .await;
    let status = text_of(&status);
    assert!(status.contains("plan.txt"), "{status}");
    assert!(status.contains("new file"), "{status}");

    // a commit waits; the history has one commit until a person approves it
    let message = json!({"repo_path": repo_path, "message": "add the plan"});
    let Outcome::Pending { operation_id, .. } =
        call(&exec, "c1", "git__git_commit", message.clone()).await
    else {
        panic!("a commit ran without a person");
    };
    assert_eq!(
        git(repo.path(), &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );
    exec.deny(&operation_id, Some("not yet".into())).unwrap();
    assert_eq!(
        git(repo.path(), &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );

    let Outcome::Pending { operation_id, .. } = call(&exec, "c2", "git__git_commit", message).await
    else {
        panic!("a commit ran without a person");
    };
    let ran = exec.approve(&operation_id).await.unwrap();
    assert!(ran.value().is_some(), "{:?}", ran.outcome);
    assert_eq!(
        git(repo.path(), &["rev-list", "--count", "HEAD"]).trim(),
        "2"
    );
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s"]).trim(),
        "add the plan"
    );
    let clean = text_of(
        &call(
            &exec,
            "s2",
            "git__git_status",
            json!({"repo_path": repo_path}),
        )
        .await,
    );
    assert!(!clean.contains("plan.txt"), "{clean}");
    client.close();
}
