//! `tools --mcp-config FILE`: the reference filesystem MCP server's tools through the `tools`
//! command line, as a person runs it. With `TOOLS_CONFIRMATION=deferred` a write parks and prints
//! its operation id; `approve` runs it once, on the server; `deny` leaves the directory byte for
//! byte as it was; arguments that do not fit are refused with exit 1 before anything is sent.
//! The `[mcp.servers.NAME]` tables of the configuration (`./tools.toml`, or a subcommand's
//! `--config FILE`) name servers the same way, for every command, without `--mcp-config`.

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

/// The command line in `dir` without `--mcp-config`: the servers come from the configuration.
fn configured_tools(dir: &Path, args: &[&str]) -> Output {
    crate::support::isolated(env!("CARGO_BIN_EXE_tools"))
        .args(args)
        .current_dir(dir)
        .env("TOOLS_STORE", dir.join("state.sqlite3"))
        .env("TOOLS_CONFIRMATION", "deferred")
        .env_remove("TOOLS_CONFIG")
        .output()
        .expect("the tools binary runs")
}

#[test]
fn every_command_sees_the_configurations_mcp_servers_without_mcp_config() {
    let Some(modules) = test_support::mcp_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "buy milk").unwrap();
    let server = format!("{modules}/@modelcontextprotocol/server-filesystem/dist/index.js");
    let table = format!(
        "[mcp.servers.fs]\ncommand = \"node\"\nargs = [{:?}, {:?}]\ntrust = \"annotations\"\n",
        server,
        root.display().to_string()
    );
    // ./tools.toml is the configuration when nothing names another
    std::fs::write(dir.join("tools.toml"), &table).unwrap();

    let out = configured_tools(dir, &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = (listed.as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"fs__write_file"), "{names:?}");

    // an app's own `tools` group sees them beside the app's tools
    let out = crate::support::isolated(env!("CARGO_BIN_EXE_tasks"))
        .args(["tools", "list", "--json"])
        .current_dir(dir)
        .env("TOOLS_STORE", dir.join("state.sqlite3"))
        .env_remove("TOOLS_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = (listed.as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"fs__write_file"), "{names:?}");
    assert!(names.len() > 14, "the app's own tools too: {names:?}");

    // a write parks; `approve` runs it once, on the server
    let plan = root.join("plan.txt").display().to_string();
    let write = json!({"path": plan, "content": "ship it"}).to_string();
    let parked = configured_tools(dir, &["call", "fs__write_file", &write]);
    assert_eq!(parked.status.code(), Some(0), "{}", text(&parked.stderr));
    let id = operation(&parked);
    assert!(!root.join("plan.txt").exists(), "a write ran unapproved");
    let out = configured_tools(dir, &["pending"]);
    assert!(text(&out.stdout).contains(&id), "{}", text(&out.stdout));
    let out = configured_tools(dir, &["approve", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(root.join("plan.txt")).unwrap(),
        "ship it"
    );
    let again = configured_tools(dir, &["approve", &id]);
    assert_ne!(again.status.code(), Some(0), "approved twice");

    // the approved call pinned the tool's definition, which `pins` shows served unchanged
    let out = configured_tools(dir, &["pins", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pins: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pin = (pins.as_array().unwrap().iter())
        .find(|p| p["tool"] == "fs__write_file")
        .unwrap_or_else(|| panic!("{pins}"));
    assert_eq!(pin["status"], "approved", "{pins}");

    // a subcommand's --config names another configuration: its servers, not ./tools.toml's
    std::fs::remove_file(dir.join("tools.toml")).unwrap();
    std::fs::write(
        dir.join("other.toml"),
        table.replace("servers.fs]", "servers.disk]"),
    )
    .unwrap();
    let denied = json!({"path": root.join("denied.txt").display().to_string(), "content": "x"});
    let before = snapshot(&root);
    let args = denied.to_string();
    let out = configured_tools(
        dir,
        &["call", "--config", "other.toml", "disk__write_file", &args],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = operation(&out);
    let out = configured_tools(dir, &["deny", "--config", "other.toml", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(snapshot(&root), before);
    let out = configured_tools(dir, &["call", "disk__write_file", &args]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "without its configuration: {}",
        text(&out.stdout)
    );

    // a table that is not a server's: a usage error naming it, and nothing runs
    std::fs::write(
        dir.join("tools.toml"),
        "[mcp.servers.bad]\nargs = [\"x\"]\n",
    )
    .unwrap();
    let out = configured_tools(dir, &["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("bad"), "{}", text(&out.stderr));
}
