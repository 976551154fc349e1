//! `tools --mcp-config FILE`: the reference filesystem MCP server's tools through the `tools`
//! command line, as a person runs it. With `TOOLS_CONFIRMATION=deferred` a write parks and prints
//! its operation id; `approve` runs it once, on the server; `deny` leaves the directory byte for
//! byte as it was; arguments that do not fit are refused with exit 1 before anything is sent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// The command line, in `dir`, with its own store and deferred confirmation.
fn tools(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(["--mcp-config", "servers.json"])
        .args(args)
        .current_dir(dir)
        .env("TOOLS_STORE", dir.join("state.sqlite3"))
        .env("TOOLS_CONFIRMATION", "deferred")
        .env_remove("TOOLS_CONFIG")
        .output()
        .expect("the tools binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The operation id a parked call printed.
fn operation(out: &Output) -> String {
    let stdout = text(&out.stdout);
    let id = stdout
        .split_whitespace()
        .find(|w| w.starts_with("op-"))
        .unwrap_or_else(|| panic!("no operation id: {stdout}"));
    id.trim_end_matches(':').to_owned()
}

fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn an_mcp_servers_tools_are_listed_parked_approved_and_denied_on_the_command_line() {
    let Some(modules) = test_support::mcp_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "buy milk").unwrap();
    let server = format!("{modules}/@modelcontextprotocol/server-filesystem/dist/index.js");
    let servers = json!({"mcpServers": {"fs": {
        "command": "node", "args": [server, root], "trust": "annotations"
    }}});
    std::fs::write(dir.join("servers.json"), servers.to_string()).unwrap();

    let out = tools(dir, &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = (listed.as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    for name in ["search_notes", "fs__read_text_file", "fs__write_file"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }

    // a read runs at once
    let notes = root.join("notes.txt").display().to_string();
    let read = json!({"path": notes}).to_string();
    let out = tools(dir, &["call", "fs__read_text_file", &read]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("buy milk"),
        "{}",
        text(&out.stdout)
    );

    // arguments that do not fit: exit 1, nothing parked, nothing written
    let before = snapshot(&root);
    let out = tools(dir, &["call", "fs__write_file", r#"{"path": 7}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("INVALID_ARGUMENTS"),
        "{}",
        text(&out.stderr)
    );
    let out = tools(dir, &["pending"]);
    assert!(
        text(&out.stdout).contains("no pending operations"),
        "{}",
        text(&out.stdout)
    );

    // a denied write leaves the directory byte for byte as it was
    let plan = root.join("plan.txt").display().to_string();
    let write = json!({"path": plan, "content": "ship it"}).to_string();
    let parked = tools(dir, &["call", "fs__write_file", &write]);
    assert_eq!(parked.status.code(), Some(0), "{}", text(&parked.stderr));
    let id = operation(&parked);
    let out = tools(dir, &["pending"]);
    assert!(text(&out.stdout).contains(&id), "{}", text(&out.stdout));
    let out = tools(dir, &["deny", &id, "--reason", "not now"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(snapshot(&root), before);

    // an approved write runs once, on the server
    let parked = tools(dir, &["call", "fs__write_file", &write]);
    let id = operation(&parked);
    assert!(
        !root.join("plan.txt").exists(),
        "a write ran before its approval"
    );
    let out = tools(dir, &["approve", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(root.join("plan.txt")).unwrap(),
        "ship it"
    );
    let again = tools(dir, &["approve", &id]);
    assert_ne!(again.status.code(), Some(0), "approved twice");

    // a file that is not an mcpServers file: a usage error naming it
    std::fs::write(dir.join("servers.json"), r#"{"servers": {}}"#).unwrap();
    let out = tools(dir, &["list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("mcpServers"),
        "{}",
        text(&out.stderr)
    );
}
