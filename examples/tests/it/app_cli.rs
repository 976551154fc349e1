//! The command line every example agent shares (`examples::cli`), from the real binaries: each
//! has `tools ...` over its own tools and store and `serve [--addr]`; a subcommand is one only as
//! the first argument; usage errors exit 2. A note created through `research serve` waits in the
//! assistant's store, is listed by `research tools pending` and run once by
//! `research tools approve` from another process.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use examples::graph::{self, GraphDb};
use examples::research::Db;
use serde_json::{Value, json};
use tool_runtime::executor::{ExecutorConfig, Outcome};
use tool_runtime::{CallContext, ToolCall, hydrate::Arguments};

const AGENT: &str = "app-cli-agent-token-0001";
const APPROVER: &str = "app-cli-approver-token-0001";

/// One user's machine: a home (also the working directory) with every app's database in it.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        Machine {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// The binary `bin` with `args`, its databases in the home, and no model, provider key or
    /// token of the caller's environment.
    fn command(&self, bin: &str, args: &[&str]) -> Command {
        let exe = match bin {
            "research" => env!("CARGO_BIN_EXE_research"),
            "graph" => env!("CARGO_BIN_EXE_graph"),
            "tasks" => env!("CARGO_BIN_EXE_tasks"),
            "catalog" => env!("CARGO_BIN_EXE_catalog"),
            other => panic!("no binary {other}"),
        };
        let mut cmd = crate::support::isolated(exe);
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("TOOLS_RESEARCH_DB", self.path("research.sqlite"))
            .env("TOOLS_GRAPH_DB", self.path("graph.sqlite"))
            .env("TOOLS_TASKS_DB", self.path("tasks.sqlite"))
            .env("TOOLS_DOI_URL", "http://127.0.0.1:9")
            // nothing listens there: a run that reached a model fails (exit 1) instead of
            // starting the local model server
            .env("TOOLS_LLAMA_URL", "http://127.0.0.1:9")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, bin: &str, args: &[&str]) -> Output {
        self.command(bin, args).output().unwrap()
    }

    /// Starts `BIN serve --addr 127.0.0.1:0 EXTRA...` with configured tokens; the base URL from
    /// what it prints.
    fn serve(&self, bin: &str, extra: &[&str]) -> (Server, String) {
        let mut args = vec!["serve", "--addr", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = self
            .command(bin, &args)
            .env("TOOLS_AGENT_TOKEN", AGENT)
            .env("TOOLS_APPROVER_TOKEN", APPROVER)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("{bin} serve printed its address"))
                .unwrap();
            if let Some(rest) = line.strip_prefix("API: ") {
                break rest.split("/api/v1").next().unwrap().to_owned();
            }
        };
        (Server(child), base)
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The tool names of a `tools list --json` listing.
fn listed(out: &Output) -> Vec<String> {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The names of the tools a server's API declares.
async fn served(base: &str) -> Vec<String> {
    let res = reqwest::Client::new()
        .get(format!("{base}/api/v1/tools"))
        .bearer_auth(AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let tools: Value = res.json().await.unwrap();
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn research_tools_list_lists_the_assistants_own_tools() {
    let m = Machine::new();
    let out = m.run("research", &["tools", "list"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for tool in [
        "search_bibliography",
        "search_notes",
        "create_note",
        "edit_note",
        "delete_note",
        "restore_note",
        "merge_notes",
        "add_annotation",
        "fetch_doi",
        "gnorm_annotate",
        "citation_graph",
        "search_catalogue",
    ] {
        assert!(stdout.contains(tool), "{tool} in {stdout}");
    }
    // the demo tools of the `tools` binary are not there
    assert!(!stdout.contains("get_weather"), "{stdout}");
    // the `tools` group's own flags and help pass through
    let names = listed(&m.run("research", &["tools", "--json", "list"]));
    assert_eq!(names.len(), 12, "{names:?}");
    let help = m.run("research", &["tools", "--help"]);
    assert_eq!(help.status.code(), Some(0), "{}", text(&help.stderr));
    let help = text(&help.stdout);
    assert!(
        help.contains("pending") && help.contains("approve"),
        "{help}"
    );
}

#[test]
fn every_agent_has_a_tools_group_over_its_own_tools() {
    let m = Machine::new();
    for (bin, own, other) in [
        ("graph", "delete_node", "create_note"),
        ("tasks", "create_task", "delete_node"),
        ("catalog", "convert_units", "create_task"),
    ] {
        let names = listed(&m.run(bin, &["tools", "list", "--json"]));
        assert!(names.iter().any(|n| n == own), "{bin}: {names:?}");
        assert!(!names.iter().any(|n| n == other), "{bin}: {names:?}");
    }
    let out = m.run(
        "tasks",
        &[
            "tools",
            "check",
            "create_task",
            "--args",
            r#"{"title": "Buy milk"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[tokio::test]
async fn a_note_waiting_in_research_serve_is_approved_by_research_tools_from_another_process() {
    let m = Machine::new();
    let db_path = m.path("notes/research.sqlite");
    // `--db` after the subcommand; the variable names another database, which must stay unused
    let (_server, base) = m.serve("research", &["--db", db_path.to_str().unwrap()]);
    let http = reqwest::Client::new();
    let before = Db::open(&db_path).unwrap().all_notes().unwrap().len();

    let res = http
        .post(format!("{base}/api/v1/tools/create_note/call"))
        .bearer_auth(AGENT)
        .json(&json!({ "arguments": { "title": "From the API", "body": "approved on the CLI" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    let pending: Value = res.json().await.unwrap();
    let op = pending["operation_id"].as_str().unwrap().to_owned();

    let db_flag = ["--db", db_path.to_str().unwrap()];
    let tools = |words: &[&str]| {
        let mut args = vec!["tools"];
        args.extend_from_slice(&db_flag);
        args.extend_from_slice(words);
        m.run("research", &args)
    };
    let out = tools(&["pending"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&op))
        .unwrap_or_else(|| panic!("{op} in {stdout}"));
    assert!(line.contains("create_note"), "{line}");
    assert!(
        line.contains("Create a note titled \u{201c}From the API\u{201d}"),
        "{line}"
    );
    // through the variable instead of the flag: the same store
    let out = m
        .command("research", &["tools", "pending", "--json"])
        .env("TOOLS_RESEARCH_DB", &db_path)
        .output()
        .unwrap();
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all[0]["id"], op.as_str(), "{all}");
    assert_eq!(
        Db::open(&db_path).unwrap().all_notes().unwrap().len(),
        before
    );

    let out = tools(&["approve", &op]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["title"], "From the API", "{value}");
    // decided once: a second approval, here or on the server, runs nothing
    let again = tools(&["approve", &op]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
    let res = http
        .post(format!("{base}/api/v1/pending/{op}/approve"))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);

    let notes = Db::open(&db_path).unwrap().all_notes().unwrap();
    assert_eq!(notes.len(), before + 1);
    assert_eq!(
        notes.iter().filter(|n| n.title == "From the API").count(),
        1
    );
    let out = tools(&["pending"]);
    assert!(
        text(&out.stdout).contains("no pending operations"),
        "{}",
        text(&out.stdout)
    );
    // the database the variable names was never used
    assert!(!m.path("research.sqlite").exists());
}

#[test]
fn a_note_parked_by_research_tools_call_is_approved_and_undone_in_the_assistants_store() {
    let m = Machine::new();
    let db_path = m.path("research.sqlite");
    let before = Db::open(&db_path).unwrap().all_notes().unwrap().len();
    // the operator's configuration defers every confirmation: the call waits in the store
    let out = m
        .command(
            "research",
            &[
                "tools",
                "call",
                "create_note",
                "--args",
                r#"{"title": "Parked", "body": "waits"}"#,
            ],
        )
        .env("TOOLS_CONFIRMATION", "deferred")
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let op = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pending "))
        .and_then(|l| l.split(':').next())
        .unwrap_or_else(|| panic!("a pending operation in {stdout}"))
        .to_owned();
    assert_eq!(
        Db::open(&db_path).unwrap().all_notes().unwrap().len(),
        before
    );
    let out = m.run("research", &["tools", "approve", &op, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let exec: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        Db::open(&db_path).unwrap().all_notes().unwrap().len(),
        before + 1
    );
    // the assistant's undo planner came with the setup: the call is journaled in the
    // assistant's store, where `research --undo` finds it
    assert_eq!(exec["undo"]["state"], "journaled", "{exec}");
    let undo_id = exec["undo"]["id"].as_str().unwrap();
    let out = m.run("research", &["--undo", undo_id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        Db::open(&db_path).unwrap().all_notes().unwrap().len(),
        before
    );
}

#[tokio::test]
async fn graph_tools_pending_lists_and_decides_the_graphs_own_operations() {
    let m = Machine::new();
    let db_path = m.path("graph.sqlite");
    let db = GraphDb::open(&db_path).unwrap();
    let exec = graph::executor(
        db.clone(),
        &db_path.with_extension("store.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap();
    let call = ToolCall::new(
        "c1",
        "delete_node",
        Arguments::Json(json!({"node_id": "obs-3", "cascade": true})),
    );
    let op = match exec.call(&call, CallContext::new("c1")).await.outcome {
        Outcome::Pending { operation_id, .. } => operation_id,
        other => panic!("expected a pending operation, got {other:?}"),
    };

    let out = m.run("graph", &["tools", "pending"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with(op.as_str()) && l.contains("delete_node")),
        "{op} in {stdout}"
    );
    // the graph's own listing shows the same operation
    let out = m.run("graph", &["--pending"]);
    assert!(text(&out.stdout).contains(op.as_str()));

    let out = m.run("graph", &["tools", "deny", &op, "--reason", "keep it"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(db.node("obs-3").is_ok(), "the node stays");
    let out = m.run("graph", &["tools", "pending"]);
    assert!(
        text(&out.stdout).contains("no pending operations"),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test]
async fn every_agent_serves_its_own_tools() {
    let m = Machine::new();
    for (bin, own) in [
        ("graph", "merge_nodes"),
        ("tasks", "update_task"),
        ("catalog", "compound_interest"),
    ] {
        let (_server, base) = m.serve(bin, &[]);
        let names = served(&base).await;
        assert!(names.iter().any(|n| n == own), "{bin}: {names:?}");
    }
    // catalog has no store of its own: the configuration's default, in the working directory
    assert!(m.path(".tools/state.sqlite3").exists());
}

#[test]
fn a_subcommand_is_one_only_in_first_position() {
    let m = Machine::new();
    // A question: it reaches the model, which does not answer (exit 1, after naming it).
    for args in [
        &["how", "do", "I", "serve", "tools"][..],
        &["what", "is", "a", "tool"][..],
        &["--yes", "tools are what?"][..],
    ] {
        let out = m.run("research", args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("model: local"), "{args:?}: {stderr}");
    }
    // A subcommand's name after a flag is neither a subcommand nor sent to a model as a question.
    for (bin, args) in [
        ("research", &["--yes", "serve"][..]),
        ("research", &["--db", "other.sqlite", "tools", "list"][..]),
        ("graph", &["--pending", "tools", "pending"][..]),
        ("catalog", &["--max", "5", "tools", "list"][..]),
    ] {
        let out = m.run(bin, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bin} {args:?}: {stderr}");
        assert!(stderr.contains("first argument"), "{stderr}");
        assert!(!stderr.contains("model:"), "{stderr}");
    }
    let out = m.run("research", &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    assert!(help.contains("tools") && help.contains("serve"), "{help}");
}

#[test]
fn usage_errors_exit_2() {
    let m = Machine::new();
    for (bin, args) in [
        ("research", &["--provider", "nonsense", "hello"][..]),
        ("research", &["--db"][..]),
        ("research", &["serve", "--addr", "not-an-address"][..]),
        ("research", &["serve", "--yes"][..]),
        ("research", &["tools", "frobnicate"][..]),
        ("graph", &[][..]),
        ("graph", &["--limit", "many", "--activity"][..]),
        ("tasks", &["--chain"][..]),
        ("catalog", &[][..]),
        ("catalog", &["--max", "x", "hello"][..]),
    ] {
        let out = m.run(bin, args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bin} {args:?}: {}",
            text(&out.stderr)
        );
    }
}
