//! `graph --mcp`: the knowledge graph's tools served to an MCP host over stdio, under the same
//! policy and store as the agent. A deletion requested over MCP waits for a person, who approves
//! it from another process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[test]
fn an_mcp_client_lists_calls_and_parks_a_deletion_for_approval() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("graph.sqlite");
    let mut child = Command::new(env!("CARGO_BIN_EXE_graph"))
        .arg("--db")
        .arg(&db)
        .arg("--mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let mut response = |id: u64| -> Value {
        loop {
            let line = lines.next().expect("the server answers").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    let init = response(1);
    assert_eq!(init["result"]["serverInfo"]["name"], "knowledge-graph");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = response(2)["result"]["tools"].clone();
    let delete = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "delete_node")
        .expect("delete_node is listed");
    assert_eq!(delete["annotations"]["destructiveHint"], true);

    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "delete_node", "arguments": {"node_id": "obs-3", "cascade": true}}}),
    );
    let r = response(3)["result"].clone();
    assert_eq!(r["isError"], false);
    let body: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "pending");
    let op = body["operation_id"].as_str().unwrap().to_owned();

    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "find_related_nodes", "arguments": {"node_id": "nope"}}}),
    );
    let r = response(4)["result"].clone();
    assert_eq!(r["isError"], true);
    let body: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "NOT_FOUND");

    drop(stdin);
    assert!(child.wait().unwrap().success());

    // A person approves it from another process; the node is gone afterwards.
    let out = Command::new(env!("CARGO_BIN_EXE_graph"))
        .arg("--db")
        .arg(&db)
        .args(["--approve", &op])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");
    let db = examples::graph::GraphDb::open(&db).unwrap();
    assert!(db.node("obs-3").is_err());
}

/// The official MCP Python SDK client over stdio: where the operator granted it
/// (`TOOLS_MCP_HOST_CONFIRMS=1`), a client that declares elicitation is asked about the deletion
/// in-band; declining or not answering leaves the node, accepting deletes it. Without the grant,
/// a client that offers to accept everything is never asked, and the deletion waits.
#[test]
fn the_python_sdk_client_confirms_a_deletion_in_band_over_stdio() {
    let Some(python) = test_support::conformance_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("graph.sqlite");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tool-server/tests/mcp/client.py"
    );
    let run_with = |grant: &str, answer: &str| -> Vec<Value> {
        let out = Command::new(&python)
            .env("TOOLS_CONFIRMATION_TIMEOUT_MS", "1500")
            .env("TOOLS_MCP_HOST_CONFIRMS", grant)
            .arg(script)
            .args(["--answer", answer, "list"])
            .arg("summarize_node={\"node_id\": \"obs-3\"}")
            .arg("delete_node={\"node_id\": \"obs-3\", \"cascade\": true}")
            .arg("--stdio")
            .arg(env!("CARGO_BIN_EXE_graph"))
            .arg("--db")
            .arg(&db)
            .arg("--mcp")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let node_exists = || obs3_exists(&db);
    let run = |answer: &str| run_with("1", answer);

    // not granted: the client's readiness to accept is not asked for, the deletion waits
    let lines = run_with("0", "accept");
    assert!(
        lines.iter().all(|l| l.get("elicitation").is_none()),
        "{lines:?}"
    );
    let result = &lines.last().unwrap()["result"];
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("pending"),
        "{result}"
    );
    assert!(node_exists(), "a deletion ran without a person's approval");

    let lines = run("decline");
    // the list carries the annotations and the framework's safety facts
    let tools = lines.iter().find(|l| l.get("tools").is_some()).unwrap()["tools"]
        .as_array()
        .unwrap();
    let delete = tools.iter().find(|t| t["name"] == "delete_node").unwrap();
    assert_eq!(delete["annotations"]["destructiveHint"], true, "{delete}");
    assert_eq!(delete["_meta"]["tool-runtime/safety"]["category"], "modify");
    // a read-only call runs without asking
    let summary = lines
        .iter()
        .find(|l| l["call"] == "summarize_node")
        .unwrap();
    assert_eq!(summary["result"]["isError"], false, "{summary}");
    assert!(
        summary["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("obs-3")
    );
    let asked: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["elicitation"].as_str())
        .collect();
    assert_eq!(asked.len(), 1, "{lines:?}");
    assert!(asked[0].contains("obs-3"), "{}", asked[0]);
    let result = &lines.last().unwrap()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert!(node_exists(), "a declined deletion ran");

    // no answer within the confirmation timeout: a denial, and the node stays
    let lines = run("silent:4");
    let result = &lines.last().unwrap()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert!(node_exists(), "an unanswered deletion ran");

    let lines = run("accept");
    let result = &lines.last().unwrap()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert!(!node_exists(), "an accepted deletion did not run");
}

/// `graph --mcp` as each official SDK's client calls it over stdio, in its default mode
/// (2026-07-28 after `server/discover`) and over the handshake: a read, the tool's own error,
/// arguments that do not fit, a rate limit, a deletion parked where the operator granted no
/// in-band confirmation; where it did, the host's person declines, lets the question time out,
/// cancels it, edits the arguments or accepts, and the client gives a call up mid-question.
#[test]
fn each_official_client_calls_the_graph_over_stdio_in_both_revisions() {
    use test_support::mcp::{Mode, asked, calls, clients, error_code, text_of};
    for client in clients() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("graph.sqlite");
        let stdio: Vec<String> = ["--stdio", env!("CARGO_BIN_EXE_graph"), "--db"]
            .into_iter()
            .map(str::to_owned)
            .chain([db.display().to_string(), "--mcp".to_owned()])
            .collect();
        let node_exists = || obs3_exists(&db);
        let limited = [
            ("TOOLS_MCP_HOST_CONFIRMS", "0"),
            (
                "TOOLS_RATE_LIMITS__TOOLS",
                "{ get_node = { max_calls = 2 } }",
            ),
        ];
        let lines = client.run(
            &stdio,
            &limited,
            "accept",
            &[
                "list",
                r#"get_node={"node_id": "obs-1"}"#,
                r#"get_node={"node_id": "obs-999"}"#,
                r#"get_node={"node_id": 1}"#,
                r#"get_node={"node_id": "obs-2"}"#,
                r#"delete_node={"node_id": "obs-3", "cascade": true}"#,
            ],
        );
        client.assert_protocol(&lines);
        let context = format!("{client:?}: {lines:?}");
        let steps = calls(&lines);
        assert_eq!(steps[0]["result"]["isError"], false, "{context}");
        assert_eq!(text_of(steps[0])["node"]["id"], "obs-1", "{context}");
        assert_eq!(error_code(steps[1]), "NOT_FOUND", "{context}");
        assert_eq!(error_code(steps[2]), "INVALID_ARGUMENTS", "{context}");
        assert_eq!(error_code(steps[3]), "RATE_LIMITED", "{context}");
        assert_eq!(text_of(steps[4])["status"], "pending", "{context}");
        // the deletion declares an output schema: parked, it answers in its "not run" form
        let delete = lines[1]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "delete_node")
            .unwrap();
        assert_eq!(delete["outputSchema"]["type"], "object", "{context}");
        assert_eq!(steps[4]["result"]["isError"], false, "{context}");
        assert_eq!(
            steps[4]["result"]["structuredContent"]["status"], "pending",
            "{context}"
        );
        assert!(
            asked(&lines).is_empty(),
            "not granted, not asked: {context}"
        );
        assert!(node_exists());

        let granted = [("TOOLS_MCP_HOST_CONFIRMS", "1")];
        let delete = r#"delete_node={"node_id": "obs-3", "cascade": true}"#;
        let lines = client.run(&stdio, &granted, "decline", &[delete]);
        client.assert_protocol(&lines);
        assert_eq!(asked(&lines).len(), 1, "{client:?}: {lines:?}");
        assert!(asked(&lines)[0].contains("obs-3"), "{lines:?}");
        let result = calls(&lines)[0];
        assert_eq!(result["result"]["isError"], false, "{result}");
        assert!(text_of(result).to_string().contains("declined"), "{result}");
        assert_eq!(
            result["result"]["structuredContent"]["status"], "denied",
            "{result}"
        );
        assert!(node_exists(), "a declined deletion ran: {client:?}");

        // the person lets the question time out, or cancels it: not run, and not a failure. A
        // late answer in rounds leaves the operation for the approvals page; an elicitation
        // unanswered in time is a denial.
        let timed = [
            ("TOOLS_MCP_HOST_CONFIRMS", "1"),
            ("TOOLS_CONFIRMATION_TIMEOUT_MS", "1500"),
        ];
        let late = match client.mode {
            Mode::Auto => ("pending", "ran out"),
            Mode::Legacy => ("denied", "within 1.5 s"),
        };
        for (env, answer, (status, says)) in [
            (&timed[..], "silent:3", late),
            (&granted[..], "cancel", ("denied", "dismissed")),
        ] {
            let lines = client.run(&stdio, env, answer, &[delete]);
            let context = format!("{client:?} {answer}: {lines:?}");
            assert_eq!(asked(&lines).len(), 1, "{context}");
            let result = calls(&lines)[0];
            assert_eq!(result["result"]["isError"], false, "{context}");
            assert_eq!(text_of(result)["status"], status, "{context}");
            let structured = &result["result"]["structuredContent"];
            assert_eq!(structured["status"], status, "{context}");
            assert!(text_of(result).to_string().contains(says), "{context}");
            assert!(node_exists(), "{context}");
        }

        // the client gives the call up while its person has not answered: the deletion does
        // not run, and the connection goes on
        let give_up = format!("cancel:0.5:{delete}");
        let read = r#"get_node={"node_id": "obs-1"}"#;
        let lines = client.run(&stdio, &timed, "silent:3", &[&give_up, read]);
        let context = format!("{client:?}: {lines:?}");
        assert_eq!(calls(&lines)[0]["cancelled"], true, "{context}");
        assert_eq!(
            text_of(calls(&lines)[1])["node"]["id"],
            "obs-1",
            "{context}"
        );
        assert!(node_exists(), "{context}");

        // the person edits the arguments: what they approved runs, not what the model asked
        let edit = r#"edit:{"node_id": "obs-2", "cascade": true}"#;
        let lines = client.run(&stdio, &granted, edit, &[delete]);
        let context = format!("{client:?}: {lines:?}");
        assert_eq!(calls(&lines)[0]["result"]["isError"], false, "{context}");
        assert!(
            !node_in(&db, "obs-2"),
            "the edited deletion did not run: {context}"
        );
        assert!(node_exists(), "the model's arguments ran: {context}");

        let lines = client.run(&stdio, &granted, "accept", &[delete]);
        let result = calls(&lines)[0];
        assert_eq!(result["result"]["isError"], false, "{client:?}: {lines:?}");
        let structured = &result["result"]["structuredContent"];
        assert_eq!(structured["node_id"], "obs-3", "{client:?}: {lines:?}");
        assert!(structured["snapshot_id"].is_i64(), "{client:?}: {lines:?}");
        assert!(
            !node_exists(),
            "an accepted deletion did not run: {client:?}"
        );
    }
}

/// Whether the graph in `db` still holds node `obs-3`, the one the deletion tests target.
fn obs3_exists(db: &std::path::Path) -> bool {
    node_in(db, "obs-3")
}

/// Whether the graph in `db` holds node `id`.
fn node_in(db: &std::path::Path, id: &str) -> bool {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT COUNT(*) FROM nodes WHERE id = ?1", [id], |r| {
        r.get::<_, i64>(0)
    })
    .unwrap()
        == 1
}

/// The official MCP Inspector's command line starts `graph --mcp` over stdio, as a person runs
/// it: a read, a missing node, arguments that do not fit and a deletion parked for a person (a
/// tool with an output schema, answering in its "not run" form) are each a result it accepts.
/// (Its rate limit is per process here, and the Inspector starts one per call: the limit is
/// tested over HTTP, in `tool-server`'s Inspector test.)
#[test]
fn the_inspector_calls_the_graph_over_stdio() {
    use test_support::mcp::{error_code, inspector_call, text_of};
    let Some(modules) = test_support::mcp_inspector() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("graph.sqlite");
    let target = [
        env!("CARGO_BIN_EXE_graph"),
        "--db",
        db.to_str().unwrap(),
        "--mcp",
    ]
    .map(str::to_owned)
    .to_vec();
    let call = |tool: &str, args: &[&str]| inspector_call(&modules, &[], &target, tool, args);

    let read = call("get_node", &["node_id=obs-1"]);
    assert_eq!(read["exit_ok"], true, "{read}");
    assert_eq!(text_of(&read)["node"]["id"], "obs-1", "{read}");
    assert_eq!(
        error_code(&call("get_node", &["node_id=obs-999"])),
        "NOT_FOUND"
    );
    assert_eq!(
        error_code(&call("get_node", &["node_id=1"])),
        "INVALID_ARGUMENTS"
    );

    let parked = call("delete_node", &["node_id=obs-3", "cascade=true"]);
    assert_eq!(parked["exit_ok"], true, "{parked}");
    assert_eq!(parked["result"]["isError"], false, "{parked}");
    assert_eq!(text_of(&parked)["status"], "pending", "{parked}");
    assert_eq!(
        parked["result"]["structuredContent"]["status"], "pending",
        "{parked}"
    );
    assert!(obs3_exists(&db));
}
