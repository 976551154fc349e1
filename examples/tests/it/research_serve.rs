//! `research serve`: the research assistant's tools over HTTP from the real binary, on its
//! SQLite files. MCP clients are told the app's own name and instructions; a note created through the API waits for the approver, then exists exactly once;
//! a server asked for a public address without configured tokens refuses to start.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use examples::research::Db;
use serde_json::{Value, json};

const AGENT: &str = "research-agent-token-0001";
const APPROVER: &str = "research-approver-token-0001";

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn research(db: &std::path::Path, home: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_research"));
    cmd.env("TOOLS_RESEARCH_DB", db)
        .env("TOOLS_DOI_URL", "http://127.0.0.1:9")
        .env("HOME", home)
        .env_remove("TOOLS_AGENT_TOKEN")
        .env_remove("TOOLS_APPROVER_TOKEN");
    cmd
}

/// Starts `research serve` on a free port; the base URL from what it prints.
fn start(db: &std::path::Path, home: &std::path::Path) -> (Server, String) {
    let mut child = research(db, home)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("TOOLS_AGENT_TOKEN", AGENT)
        .env("TOOLS_APPROVER_TOKEN", APPROVER)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("research serve printed its address")
            .unwrap();
        if let Some(rest) = line.strip_prefix("API: ") {
            break rest.split("/api/v1").next().unwrap().to_owned();
        }
    };
    (Server(child), base)
}

#[tokio::test]
async fn mcp_clients_are_told_the_apps_own_name_and_instructions() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, base) = start(&dir.path().join("research.sqlite"), dir.path());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let res = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(AGENT)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    let answer: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str(d.trim()).ok())
        .unwrap_or_else(|| panic!("{text}"));
    let result = &answer["result"];
    assert_eq!(
        result["serverInfo"]["name"], "research-assistant",
        "{answer}"
    );
    assert_eq!(
        result["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{answer}"
    );
    assert!(
        result["instructions"]
            .as_str()
            .is_some_and(|t| t.contains("approval")),
        "{answer}"
    );
}

#[tokio::test]
async fn a_note_created_over_http_waits_for_the_approver_then_exists_once() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("research.sqlite");
    let (_server, base) = start(&db_path, dir.path());
    let http = reqwest::Client::new();
    let before = Db::open(&db_path).unwrap().all_notes().unwrap().len();

    let res = http
        .get(format!("{base}/api/v1/tools"))
        .bearer_auth(AGENT)
        .send()
        .await
        .unwrap();
    let tools: Value = res.json().await.unwrap();
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "create_note"),
        "{tools}"
    );

    let res = http
        .post(format!("{base}/api/v1/tools/create_note/call"))
        .bearer_auth(AGENT)
        .json(&json!({ "arguments": { "title": "Served", "body": "made over HTTP" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    let pending: Value = res.json().await.unwrap();
    assert_eq!(
        pending["preview"]["intent"],
        "Create a note titled \u{201c}Served\u{201d}"
    );
    assert_eq!(pending["preview"]["reversible"], true);
    let op = pending["operation_id"].as_str().unwrap();
    assert_eq!(
        Db::open(&db_path).unwrap().all_notes().unwrap().len(),
        before
    );

    let approve = format!("{base}/api/v1/pending/{op}/approve");
    let res = http.post(&approve).bearer_auth(AGENT).send().await.unwrap();
    assert_eq!(res.status(), 403);
    let res = http
        .post(&approve)
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let done: Value = res.json().await.unwrap();
    assert_eq!(done["status"], "success", "{done}");
    assert_eq!(done["value"]["title"], "Served");
    let res = http
        .post(&approve)
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);
    let notes = Db::open(&db_path).unwrap().all_notes().unwrap();
    assert_eq!(notes.len(), before + 1);
    assert_eq!(notes.iter().filter(|n| n.title == "Served").count(), 1);

    // the page is served from the binary
    let page = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Tool approvals"));
}

#[test]
fn serving_a_public_address_without_configured_tokens_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = research(&dir.path().join("r.sqlite"), dir.path())
        .args(["serve", "--addr", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "it kept running");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("TOOLS_APPROVER_TOKEN"), "{err}");
}
