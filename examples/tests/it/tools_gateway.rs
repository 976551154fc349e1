//! `tools gateway`: the reference filesystem MCP server behind the gateway, configured by a
//! `[mcp.servers.fs]` table, as an MCP host and a person meet it. The official MCP Python SDK
//! client, with the agent's token, lists the server's tools beside the gateway's own, reads a
//! file at once, and asks for a write that waits for a person (the file does not exist until it
//! is approved on the gateway's API, and then holds what was asked); arguments that do not fit
//! are refused before anything reaches the server. Over stdio, the same client gets the same
//! tools and the write waits there too.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const AGENT: &str = "gateway-agent-token-0001";
const APPROVER: &str = "gateway-approver-token-0001";

struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `gw.toml` in `dir`: the filesystem server over stdio, rooted at `root`, its annotations
/// trusted (reads run at once, writes wait for a person).
fn configure(dir: &Path, modules: &str, root: &Path) {
    let server = format!("{modules}/@modelcontextprotocol/server-filesystem/dist/index.js");
    let config = format!(
        "[mcp.servers.fs]\ncommand = \"node\"\nargs = [{:?}, {:?}]\ntrust = \"annotations\"\n",
        server,
        root.display().to_string()
    );
    std::fs::write(dir.join("gw.toml"), config).unwrap();
}

/// A folder with `root/notes.txt` ("buy milk") and `gw.toml` serving `root`, and the SDK's
/// Python; `None` (skipped outside CI) without the MCP servers or the SDK.
fn fixture() -> Option<(tempfile::TempDir, String)> {
    let (modules, python) = (
        test_support::mcp_servers()?,
        test_support::conformance_python()?,
    );
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "buy milk").unwrap();
    configure(tmp.path(), &modules, &root);
    Some((tmp, python))
}

fn tools(dir: &Path) -> Command {
    let mut cmd = crate::support::isolated(env!("CARGO_BIN_EXE_tools"));
    cmd.current_dir(dir)
        .env("TOOLS_STORE", dir.join("state.sqlite3"))
        .env_remove("TOOLS_CONFIG")
        .env_remove("TOOLS_CONFIRMATION")
        .env_remove("TOOLS_MCP_HOST_CONFIRMS");
    cmd
}

/// Starts the gateway over HTTP; its base URL from what it prints.
fn start(dir: &Path) -> (Gateway, String) {
    let mut child = tools(dir)
        .args(["gateway", "--config", "gw.toml", "--addr", "127.0.0.1:0"])
        .env("TOOLS_AGENT_TOKEN", AGENT)
        .env("TOOLS_APPROVER_TOKEN", APPROVER)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut counted = false;
    let base = crate::research_runs::read_until(&mut child, |line| {
        counted |= line.starts_with("gateway: ");
        let rest = line.strip_prefix("API: ")?;
        Some(rest.split("/api/v1").next().unwrap().to_owned())
    });
    assert!(counted, "the gateway did not say how many tools it serves");
    (Gateway(child), base)
}

/// The official client's JSON lines for `steps`: over HTTP (`--http URL --token T`), or over
/// stdio (`--stdio COMMAND ARGS...`, the gateway started by the client with `env` added).
fn client(python: &str, how: &[&str], steps: &[&str], env: &[(&str, &Path)]) -> Vec<Value> {
    client_answering(python, "none", how, steps, env)
}

/// [`client`], whose person answers every form as `answer` says (client.py's `--answer`).
fn client_answering(
    python: &str,
    answer: &str,
    how: &[&str],
    steps: &[&str],
    env: &[(&str, &Path)],
) -> Vec<Value> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tool-server/tests/mcp/client.py"
    );
    let mut cmd = Command::new(python);
    cmd.arg(script).args(["--answer", answer]);
    // --stdio takes the rest of the line: the steps come before it
    if how.first() == Some(&"--stdio") {
        cmd.args(steps).args(how);
    } else {
        cmd.args(how).args(steps);
    }
    let out = cmd
        .env_remove("TOOLS_CONFIG")
        .env_remove("TOOLS_CONFIRMATION")
        .env_remove("TOOLS_MCP_HOST_CONFIRMS")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn names(lines: &[Value]) -> Vec<String> {
    let listed = lines.iter().find_map(|l| l["tools"].as_array()).unwrap();
    listed
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The results of the call steps, in order.
fn results(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l.get("call").is_some()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_host_gets_another_servers_tools_through_the_gateway_under_its_policy() {
    let Some((tmp, python)) = fixture() else {
        return;
    };
    let dir = tmp.path();
    let root = dir.join("root");
    let (_gateway, base) = start(dir);

    let notes = root.join("notes.txt").display().to_string();
    let plan = root.join("plan.txt").display().to_string();
    let read = format!("fs__read_text_file={}", json!({"path": notes}));
    let write = format!(
        "fs__write_file={}",
        json!({"path": plan, "content": "ship it"})
    );
    let lines = client(
        &python,
        &["--http", &format!("{base}/mcp"), "--token", AGENT],
        &["list", &read, &write, r#"fs__write_file={"path": 7}"#],
        &[],
    );
    let names = names(&lines);
    for name in ["search_notes", "fs__read_text_file", "fs__write_file"] {
        assert!(names.contains(&name.to_owned()), "{name} not in {names:?}");
    }
    let results = results(&lines);
    let [read, write, bad] = results[..] else {
        panic!("{lines:#?}");
    };
    assert!(read.to_string().contains("buy milk"), "{read}");
    assert_ne!(read["result"]["isError"], true, "{read}");
    // the write waits for a person: nothing on disk yet
    let waiting = write.to_string();
    assert!(waiting.contains("op-"), "{waiting}");
    assert!(!root.join("plan.txt").exists(), "a write ran unapproved");
    // bad arguments: refused here, before anything reached the server
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(bad.to_string().contains("INVALID_ARGUMENTS"), "{bad}");

    // a person approves it on the gateway's API: it runs once, on the server
    let http = reqwest::Client::new();
    let pending: Value = http
        .get(format!("{base}/api/v1/pending"))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ops = pending["pending"].as_array().expect("a listing");
    assert_eq!(ops.len(), 1, "{pending}");
    assert_eq!(ops[0]["tool"], "fs__write_file", "{pending}");
    let id = ops[0]["id"].as_str().unwrap();
    assert!(waiting.contains(id), "{waiting} names {id}");
    // the agent's token cannot approve what the agent asked for
    let refused = http
        .post(format!("{base}/api/v1/pending/{id}/approve"))
        .bearer_auth(AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert!(!root.join("plan.txt").exists());
    let approved = http
        .post(format!("{base}/api/v1/pending/{id}/approve"))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), 200, "{}", approved.text().await.unwrap());
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "ship it");
}

#[test]
fn an_mcp_host_that_starts_the_gateway_over_stdio_gets_the_same_tools_and_policy() {
    let Some((tmp, python)) = fixture() else {
        return;
    };
    let dir = tmp.path();
    let root = dir.join("root");
    let plan = root.join("plan.txt").display().to_string();
    let read = format!(
        "fs__read_text_file={}",
        json!({"path": root.join("notes.txt")})
    );
    let write = format!(
        "fs__write_file={}",
        json!({"path": plan, "content": "ship it"})
    );
    let exe = env!("CARGO_BIN_EXE_tools");
    let config = dir.join("gw.toml").display().to_string();
    let store = dir.join("state.sqlite3");
    let lines = client(
        &python,
        &["--stdio", exe, "gateway", "--stdio", "--config", &config],
        &["list", &read, &write],
        &[("TOOLS_STORE", &store)],
    );
    let names = names(&lines);
    assert!(names.contains(&"fs__write_file".to_owned()), "{names:?}");
    let results = results(&lines);
    let [read, write] = results[..] else {
        panic!("{lines:#?}");
    };
    assert!(read.to_string().contains("buy milk"), "{read}");
    assert!(write.to_string().contains("op-"), "{write}");
    assert!(!root.join("plan.txt").exists(), "a write ran unapproved");
    // the operation waits in the store, for `tools pending` in another terminal
    let out = tools(dir).arg("pending").output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("fs__write_file"), "{listed}");
}

#[test]
fn an_upstream_servers_question_is_put_to_the_person_behind_the_gateway() {
    let Some((tmp, python)) = fixture() else {
        return;
    };
    let dir = tmp.path();
    let modules = test_support::mcp_servers().unwrap();
    let everything = format!("{modules}/@modelcontextprotocol/server-everything/dist/index.js");
    let config =
        format!("[mcp.servers.ev]\ncommand = \"node\"\nargs = [{everything:?}, \"stdio\"]\n");
    std::fs::write(dir.join("ev.toml"), config).unwrap();
    let exe = env!("CARGO_BIN_EXE_tools");
    let config = dir.join("ev.toml").display().to_string();
    let store = dir.join("state.sqlite3");
    // the host shows its person every form: first the gateway's confirmation of the call, then
    // the upstream server's own question, which the person fills in
    let lines = client_answering(
        &python,
        r#"fill:{"name": "Ada Lovelace"}"#,
        &["--stdio", exe, "gateway", "--stdio", "--config", &config],
        &["ev__trigger-elicitation-request={}"],
        &[
            ("TOOLS_STORE", &store),
            ("TOOLS_MCP_HOST_CONFIRMS", Path::new("1")),
        ],
    );
    let forms: Vec<&str> = (lines.iter())
        .filter_map(|l| l["elicitation"].as_str())
        .collect();
    let [confirmation, question] = forms[..] else {
        panic!("{lines:#?}");
    };
    assert!(
        confirmation.contains("trigger-elicitation-request"),
        "{confirmation}"
    );
    assert!(question.contains("The MCP server ev asks"), "{question}");
    let [result] = results(&lines)[..] else {
        panic!("{lines:#?}");
    };
    assert!(
        result.to_string().contains("Name: Ada Lovelace"),
        "{result}"
    );

    // a host that cannot show forms: the call waits for a person, and the question never
    // reaches anyone else
    let lines = client(
        &python,
        &["--stdio", exe, "gateway", "--stdio", "--config", &config],
        &["ev__trigger-elicitation-request={}"],
        &[("TOOLS_STORE", &store)],
    );
    assert!(
        !lines.iter().any(|l| l.get("elicitation").is_some()),
        "{lines:#?}"
    );
    assert!(results(&lines)[0].to_string().contains("op-"), "{lines:#?}");
}

#[test]
fn a_tool_the_upstream_server_adds_reaches_the_host_through_the_gateway_under_its_policy() {
    let Some((tmp, python)) = fixture() else {
        return;
    };
    let dir = tmp.path();
    // a server of the Python SDK whose `add` adds the tool `shout` and says so
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tool-mcp/tests/servers/list_changes.py"
    );
    let log = dir.join("calls.log");
    let config = format!(
        "[mcp.servers.lc]\ncommand = {python:?}\nargs = [{script:?}, {:?}]\n",
        log.display().to_string()
    );
    std::fs::write(dir.join("lc.toml"), config).unwrap();
    let exe = env!("CARGO_BIN_EXE_tools");
    let config = dir.join("lc.toml").display().to_string();
    let store = dir.join("state.sqlite3");
    // the host's person accepts every confirmation; bad arguments to the new tool never leave
    let lines = client_answering(
        &python,
        "accept",
        &["--stdio", exe, "gateway", "--stdio", "--config", &config],
        &[
            "list",
            "lc__add={}",
            "changed:20",
            "list",
            r#"lc__shout={"text": 7}"#,
            r#"lc__shout={"text": "hi"}"#,
        ],
        &[
            ("TOOLS_STORE", &store),
            ("TOOLS_MCP_HOST_CONFIRMS", Path::new("1")),
        ],
    );
    let lists: Vec<Vec<&str>> = (lines.iter())
        .filter_map(|l| l["tools"].as_array())
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .collect();
    let [before, after] = &lists[..] else {
        panic!("{lines:#?}");
    };
    assert!(!before.contains(&"lc__shout"), "{before:?}");
    assert!(after.contains(&"lc__shout"), "{after:?}");
    assert!(
        lines.iter().any(|l| l["list_changed"] == true),
        "the host was told: {lines:#?}"
    );
    let [added, bad, shouted] = results(&lines)[..] else {
        panic!("{lines:#?}");
    };
    assert!(added.to_string().contains("added"), "{added}");
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(bad.to_string().contains("INVALID_ARGUMENTS"), "{bad}");
    assert!(shouted.to_string().contains("HI"), "{shouted}");
    // the new tool asked the person like the first ones
    let forms: Vec<&str> = (lines.iter())
        .filter_map(|l| l["elicitation"].as_str())
        .collect();
    assert!(forms.iter().any(|f| f.contains("lc__shout")), "{forms:?}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "shout:hi\n");
}
