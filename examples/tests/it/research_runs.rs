//! Runs of the research assistant that outlive their process, as a user meets them. In the
//! terminal: `research --defer` leaves a call waiting, the process is killed while it waits,
//! `research tools approve` decides from another process, and `research --resume RUN_ID` goes
//! on. Over HTTP: `research serve` runs the assistant at `POST /api/v1/chat` with the model the
//! terminal would use, keeps the run in the app's store, and a server killed while the run waits
//! resumes it after a restart. Each time the tool ran once and the model's next request carried
//! its result once. The model is a scripted server standing in for the local one, except in the
//! test against the real local model (`TOOLS_LLAMA_URL`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use examples::research::Db;
use serde_json::{Value, json};

use crate::support::isolated;
use crate::support::peer::{Peer, answer, tool_call};

pub(crate) const AGENT: &str = "research-agent-token-0002";
pub(crate) const APPROVER: &str = "research-approver-token-0002";
pub(crate) const CREATE: &str = r#"{"title":"Llamas","body":"Llamas are camelids."}"#;

/// A child process killed (SIGKILL) and reaped when dropped.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `research ARGS` over the database in `dir`, with `model` as the local model server and no
/// setting of the caller's environment.
pub(crate) fn research(dir: &Path, model: Option<&str>) -> Command {
    let mut cmd = isolated(env!("CARGO_BIN_EXE_research"));
    cmd.env("TOOLS_RESEARCH_DB", dir.join("research.sqlite"))
        .env("HOME", dir)
        .current_dir(dir)
        .env("TOOLS_AGENT_TOKEN", AGENT)
        .env("TOOLS_APPROVER_TOKEN", APPROVER);
    for key in [
        "TOOLS_DOI_URL",
        "TOOLS_GNORM_URL",
        "TOOLS_CITATIONS_URL",
        "TOOLS_CATALOGUE_URL",
    ] {
        cmd.env(key, "http://127.0.0.1:9");
    }
    if let Some(url) = model {
        cmd.env("TOOLS_LLAMA_URL", url);
    }
    cmd
}

/// Reads `child`'s stderr until a line `pick` accepts; every line read, for the failure message.
pub(crate) fn read_until<T>(child: &mut Child, mut pick: impl FnMut(&str) -> Option<T>) -> T {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    loop {
        let line = match lines.next() {
            Some(Ok(line)) => line,
            _ => panic!("the process ended without the expected line:\n{seen}"),
        };
        seen.push_str(&line);
        seen.push('\n');
        if let Some(found) = pick(&line) {
            // the rest is drained, so the child never blocks on a full pipe
            std::thread::spawn(move || for _ in lines {});
            return found;
        }
    }
}

/// The run id and the operation of the line `run RUN_ID waits for OP: ...`.
fn waiting(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("run ")?;
    let (run, rest) = rest.split_once(" waits for ")?;
    let (op, _) = rest.split_once(':')?;
    Some((run.to_owned(), op.to_owned()))
}

/// How many tool results for `call_id` the request carries.
pub(crate) fn results_for(request: &Value, call_id: &str) -> usize {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .count()
}

pub(crate) fn llamas(db: &Path) -> usize {
    Db::open(db.join("research.sqlite"))
        .unwrap()
        .all_notes()
        .unwrap()
        .iter()
        .filter(|n| n.title == "Llamas")
        .count()
}

#[test]
fn a_run_closed_while_it_waits_goes_on_with_resume_after_an_approval_elsewhere() {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("I created the note Llamas."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut first = research(dir.path(), Some(&peer.url))
        .args(["--defer", "Create a note titled Llamas"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (run_id, op) = read_until(&mut first, waiting);
    assert_eq!(llamas(dir.path()), 0, "the call waits: nothing ran yet");
    // the terminal is closed while the run waits
    first.kill().unwrap();
    first.wait().unwrap();

    let approve = research(dir.path(), None)
        .args(["tools", "approve", &op])
        .output()
        .unwrap();
    assert!(
        approve.status.success(),
        "{}",
        String::from_utf8_lossy(&approve.stderr)
    );
    assert_eq!(llamas(dir.path()), 1, "the approval ran the tool");

    let resumed = research(dir.path(), Some(&peer.url))
        .args(["--resume", &run_id])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&resumed.stdout),
        String::from_utf8_lossy(&resumed.stderr),
    );
    assert!(resumed.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "I created the note Llamas.", "{stderr}");
    assert_eq!(llamas(dir.path()), 1, "resuming did not run the tool again");
    let requests = peer.requests();
    assert_eq!(requests.len(), 2, "one request before the wait, one after");
    assert_eq!(results_for(&requests[1], "call_1"), 1, "{}", requests[1]);
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        result.contains("Llamas"),
        "the model sees what ran: {result}"
    );

    // an ended run is not resumed twice
    let again = research(dir.path(), Some(&peer.url))
        .args(["--resume", &run_id])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("has ended"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(peer.unused(), 0);
    assert_eq!(peer.requests().len(), 2);
}

#[test]
fn resuming_a_run_that_does_not_exist_is_refused() {
    let peer = Peer::start(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let out = research(dir.path(), Some(&peer.url))
        .args(["--resume", "corr-nothing"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no run \"corr-nothing\""), "{stderr}");
    assert!(peer.requests().is_empty());
}

/// Starts `research serve` on a free port; the base URL and the lines printed before it.
fn serve(dir: &Path, model: Option<&str>) -> (Killed, String, String) {
    serve_with(research(dir, model))
}

/// Starts `cmd serve` on a free port; the base URL and the lines printed before it.
pub(crate) fn serve_with(mut cmd: Command) -> (Killed, String, String) {
    let mut child = cmd
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut before = String::new();
    let base = read_until(&mut child, |line| {
        before.push_str(line);
        before.push('\n');
        let rest = line.strip_prefix("API: ")?;
        Some(rest.split("/api/v1").next().unwrap().to_owned())
    });
    (Killed(child), base, before)
}

pub(crate) async fn chat(base: &str, question: &str) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(format!("{base}/api/v1/chat"))
        .bearer_auth(AGENT)
        .json(&json!({"messages": [{"role": "user", "content": question}]}))
        .timeout(Duration::from_secs(300))
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

pub(crate) async fn get(base: &str, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(AGENT)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The run as `GET /api/v1/chat/{run_id}` gives it once its status is not `suspended` (or
/// `running`), within a minute.
pub(crate) async fn ended(base: &str, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = get(base, &format!("/api/v1/chat/{run_id}")).await;
        if !matches!(run["status"].as_str(), Some("suspended" | "running")) {
            return run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn serve_runs_the_assistant_and_a_run_waiting_when_it_was_killed_ends_after_a_restart() {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("I created the note Llamas."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (server, base, printed) = serve(dir.path(), Some(&peer.url));
    assert!(
        printed.contains("chat model: local llama.cpp server"),
        "{printed}"
    );
    let (status, body) = chat(&base, "Create a note titled Llamas").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "suspended", "{body}");
    assert_eq!(body["pending"][0]["tool"], "create_note", "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    let op = body["pending"][0]["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // the run is in the app's store, not only in the server's memory
    let listed = get(&base, "/api/v1/chat?status=suspended").await;
    assert!(
        listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["run_id"] == run_id.as_str()),
        "{listed}"
    );

    // the server dies while the run waits; the approval comes from another process
    drop(server);
    let approve = research(dir.path(), None)
        .args(["tools", "approve", &op])
        .output()
        .unwrap();
    assert!(
        approve.status.success(),
        "{}",
        String::from_utf8_lossy(&approve.stderr)
    );
    assert_eq!(llamas(dir.path()), 1);

    // a new server finds the decided run and ends it
    let (_server, base, _) = serve(dir.path(), Some(&peer.url));
    let run = ended(&base, &run_id).await;
    assert_eq!(run["status"], "answered", "{run}");
    assert_eq!(run["answer"], "I created the note Llamas.", "{run}");
    assert_eq!(llamas(dir.path()), 1, "the tool ran once");
    let requests = peer.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(results_for(&requests[1], "call_1"), 1, "{}", requests[1]);
}

#[tokio::test]
async fn serve_without_a_model_says_so_and_chat_answers_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, base, printed) = serve(dir.path(), None);
    assert!(
        printed.contains("chat: no model is configured"),
        "{printed}"
    );
    let (status, body) = chat(&base, "hello").await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no agent")),
        "{body}"
    );
}

#[tokio::test]
async fn serve_chats_with_the_real_local_model() {
    let Some(url) = test_support::llama_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_server, base, printed) = serve(dir.path(), Some(&url));
    assert!(
        printed.contains("chat model: local llama.cpp server"),
        "{printed}"
    );
    let (status, body) = chat(
        &base,
        "Create a note titled Llamas saying llamas are camelids",
    )
    .await;
    assert!(matches!(status, 200 | 202), "{status} {body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    // whatever the small model chose, each call waiting for a person is approved on the API
    let http = reqwest::Client::new();
    let mut run = body;
    for _ in 0..4 {
        let Some(pending) = run["pending"].as_array().cloned() else {
            break;
        };
        for p in pending {
            let op = p["operation_id"].as_str().unwrap();
            let res = http
                .post(format!("{base}/api/v1/pending/{op}/approve"))
                .bearer_auth(APPROVER)
                .send()
                .await
                .unwrap();
            assert!(res.status().is_success(), "{}", res.text().await.unwrap());
        }
        run = ended(&base, &run_id).await;
    }
    // the run is read back from the store, with the counters of a real model request, whether
    // the model's calls waited for a person or not (a call the small model garbles fails at once,
    // and the chat's own answer is then the ended run, as the chat route gives it)
    let run = ended(&base, &run_id).await;
    assert!(
        matches!(run["status"].as_str(), Some("answered" | "max_iterations")),
        "{run}"
    );
    assert!(run["created_ms"].as_u64().is_some(), "{run}");
    assert!(run["iterations"].as_u64().unwrap() >= 1, "{run}");
    assert!(run["usage"]["input_tokens"].as_u64().unwrap() > 0, "{run}");
}

#[test]
fn a_url_given_as_the_database_is_refused_with_the_store_setting() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, env) in [
        (Some("redis://127.0.0.1:6379/"), None),
        (None, Some("redis://127.0.0.1:6379/")),
    ] {
        let mut cmd = research(dir.path(), None);
        cmd.env_remove("TOOLS_RESEARCH_DB");
        if let Some(url) = env {
            cmd.env("TOOLS_RESEARCH_DB", url);
        }
        cmd.arg("tools");
        if let Some(url) = flag {
            cmd.args(["--db", url]);
        }
        cmd.arg("list");
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("TOOLS_STORE"), "{stderr}");
        assert!(
            !dir.path().join("redis:").exists(),
            "no directory named after the scheme"
        );
    }
}

#[test]
fn a_run_whose_model_fails_says_so_and_resumes_later_with_another_server() {
    // past its script the peer answers 400, which is not retried
    let down = Peer::start(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let out = research(dir.path(), Some(&down.url))
        .args(["--yes", "What are llamas?"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: "), "{stderr}");
    let run_id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("run ")?.split_once(" stopped;"))
        .map(|(id, _)| id.to_owned())
        .unwrap_or_else(|| panic!("the run's id to resume: {stderr}"));
    assert!(
        stderr.contains(&format!("research --resume {run_id}")),
        "{stderr}"
    );

    let up = Peer::start(vec![answer("Llamas are camelids.")]);
    let out = research(dir.path(), Some(&up.url))
        .args(["--resume", &run_id])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Llamas are camelids."
    );
    let requests = up.requests();
    assert_eq!(requests.len(), 1);
    let asked = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" && m["content"].to_string().contains("What are llamas?"))
        .count();
    assert_eq!(
        asked, 1,
        "the failed request is sent again, once: {}",
        requests[0]
    );
}

/// Approves `op` from another process, then resumes `run_id`: the run ends with the note made
/// once and its result in the model's next request once.
fn approve_and_resume(dir: &Path, peer: &Peer, op: &str, run_id: &str) {
    let approve = research(dir, None)
        .args(["tools", "approve", op])
        .output()
        .unwrap();
    assert!(
        approve.status.success(),
        "{}",
        String::from_utf8_lossy(&approve.stderr)
    );
    assert_eq!(llamas(dir), 1, "the approval ran the tool");
    let resumed = research(dir, Some(&peer.url))
        .args(["--resume", run_id])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&resumed.stdout).trim(),
        "I created the note Llamas.",
        "{stderr}"
    );
    assert_eq!(llamas(dir), 1, "resuming did not run the tool again");
    let requests = peer.requests();
    assert_eq!(requests.len(), 2, "one request before the wait, one after");
    assert_eq!(results_for(&requests[1], "call_1"), 1, "{}", requests[1]);
}

#[test]
fn a_run_whose_input_ends_at_the_confirmation_waits_and_says_how_to_resume_it() {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("I created the note Llamas."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    // the question on stdin, and the input ends where the confirmation's answer would be
    let mut child = research(dir.path(), Some(&peer.url))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        b"Create a note titled Llamas\n",
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let (run_id, op) = stderr
        .lines()
        .find_map(waiting)
        .unwrap_or_else(|| panic!("the run's id and operation: {stderr}"));
    assert!(
        stderr.contains(&format!("`research --resume {run_id}`")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("[denied]"),
        "nobody denied the call: {stderr}"
    );
    assert_eq!(llamas(dir.path()), 0, "the call waits: nothing ran yet");
    assert_eq!(
        peer.requests().len(),
        1,
        "the model was not told of a denial"
    );
    approve_and_resume(dir.path(), &peer, &op, &run_id);
}

#[test]
fn a_person_who_answers_no_and_then_closes_the_input_keeps_the_denial() {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("I left it."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut child = research(dir.path(), Some(&peer.url))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        b"Create a note titled Llamas\nn\n",
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("[denied]"), "{stderr}");
    assert!(!stderr.contains("--resume"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "I left it.");
    assert_eq!(llamas(dir.path()), 0);
}

#[test]
fn ctrl_c_at_the_confirmation_leaves_the_run_waiting_with_its_resume_line() {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("I created the note Llamas."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    // the input stays open: the person is at the prompt when they press Ctrl-C
    let mut child = research(dir.path(), Some(&peer.url))
        .args(["Create a note titled Llamas"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        // the confirmation's box is drawn: the question is being asked
        if line.contains("Llamas") && line.contains('\u{201c}') {
            break;
        }
    }
    assert!(seen.contains("Llamas"), "{seen}");
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling a child process of this test by its id
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(sent, 0);
    for line in lines {
        seen.push_str(&line.unwrap());
        seen.push('\n');
    }
    let status = child.wait().unwrap();
    drop(stdin);
    assert_eq!(status.code(), Some(130), "{seen}");
    let (run_id, op) = seen
        .lines()
        .find_map(waiting)
        .unwrap_or_else(|| panic!("the run's id and operation: {seen}"));
    assert!(
        seen.contains(&format!("`research --resume {run_id}`")),
        "{seen}"
    );
    assert_eq!(llamas(dir.path()), 0, "the call waits: nothing ran yet");
    approve_and_resume(dir.path(), &peer, &op, &run_id);
}
