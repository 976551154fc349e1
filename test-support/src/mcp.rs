//! The official MCP SDKs' clients, run as a person's MCP host would run them, against this
//! project's servers: the scripts in `tool-server/tests/mcp` (`client.py` for the Python SDK,
//! `client.mjs` for the TypeScript SDK) take the same steps and print the same JSON lines.

use std::process::Command;

use serde_json::Value;

/// Which SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `mcp` on PyPI, its high-level `Client`.
    Python,
    /// `@modelcontextprotocol/client` on npm.
    TypeScript,
}

/// How the client picks the protocol revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `server/discover`, then the newest revision the server offers (2026-07-28: per-request
    /// metadata, no session, confirmations asked with `InputRequiredResult`).
    Auto,
    /// The `initialize` handshake of the revisions before 2026-07-28, and a session.
    Legacy,
}

/// One client: an SDK in a mode, and what runs it (the Python, or the `node_modules` folder).
#[derive(Debug, Clone)]
pub struct McpClient {
    /// The SDK.
    pub sdk: Sdk,
    /// The mode.
    pub mode: Mode,
    runner: String,
}

/// Every SDK client this machine has, in both modes; an SDK that is missing is skipped with a
/// note outside CI and fails the test under it (see [`crate::service`]).
pub fn clients() -> Vec<McpClient> {
    let mut out = Vec::new();
    let mut both = |sdk, runner: String| {
        for mode in [Mode::Auto, Mode::Legacy] {
            out.push(McpClient {
                sdk,
                mode,
                runner: runner.clone(),
            });
        }
    };
    if let Some(python) = crate::conformance_python() {
        both(Sdk::Python, python);
    }
    if let Some(modules) = crate::mcp_typescript_sdk() {
        both(Sdk::TypeScript, modules);
    }
    out
}

impl McpClient {
    /// Runs `steps` against `target` (`--http URL --token T` or `--stdio COMMAND ARG...`), the
    /// person's confirmations answered by `answer`, with `env` set for the client (and a server it
    /// starts); the JSON lines it printed. Panics when the client fails.
    pub fn run(
        &self,
        target: &[String],
        env: &[(&str, &str)],
        answer: &str,
        steps: &[&str],
    ) -> Vec<Value> {
        let scripts = concat!(env!("CARGO_MANIFEST_DIR"), "/../tool-server/tests/mcp");
        let mut command = match self.sdk {
            Sdk::Python => {
                let mut c = Command::new(&self.runner);
                c.arg(format!("{scripts}/client.py"));
                c
            }
            Sdk::TypeScript => {
                let mut c = Command::new("node");
                c.env("TOOLS_MCP_TS_SDK", &self.runner)
                    .arg(format!("{scripts}/client.mjs"));
                c
            }
        };
        // --stdio takes the rest of the line: the steps come before it
        let (before, stdio) = match target.iter().position(|a| a == "--stdio") {
            Some(i) => target.split_at(i),
            None => (target, &[][..]),
        };
        let mode = match self.mode {
            Mode::Auto => "auto",
            Mode::Legacy => "legacy",
        };
        let out = command
            .envs(env.iter().copied())
            .args(before)
            .args(["--mode", mode, "--answer", answer])
            .args(steps)
            .args(stdio)
            .output()
            .unwrap_or_else(|e| panic!("{self:?} could not start: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{self:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    /// Checks the revision the client ended up with, from the first line [`McpClient::run`]
    /// returned: 2026-07-28 in [`Mode::Auto`], an earlier one over the handshake.
    pub fn assert_protocol(&self, lines: &[Value]) {
        let version = lines[0]["protocol"].as_str().unwrap_or_default();
        match self.mode {
            Mode::Auto => assert_eq!(version, "2026-07-28", "{self:?}: {lines:?}"),
            Mode::Legacy => assert!(
                ("2024".."2026-07-28").contains(&version),
                "{self:?}: {lines:?}"
            ),
        }
    }
}

/// The result of each call step, in order.
pub fn calls(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l.get("call").is_some()).collect()
}

/// What a call step's result says in its text, read as JSON where it is JSON.
pub fn text_of(step: &Value) -> Value {
    let text = step["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {step}"));
    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
}

/// The error code of a call step whose result is a tool error.
pub fn error_code(step: &Value) -> String {
    assert_eq!(step["result"]["isError"], true, "{step}");
    text_of(step)["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The elicitation messages the client's person was shown.
pub fn asked(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|l| l["elicitation"].as_str())
        .collect()
}

/// One `tools/call` through the official MCP Inspector's command line (`--cli`, from the
/// `node_modules` folder `modules`), as a person runs it: `target` is a server URL ending in
/// `/mcp` or a command and its arguments (stdio), `options` go before it (`--header`, `-e`).
/// Returned in the shape of a client script's call step (`{"call", "result"}`, so [`text_of`]
/// and [`error_code`] read it), with `"exit_ok"`: whether the Inspector exited 0.
pub fn inspector_call(
    modules: &str,
    options: &[String],
    target: &[String],
    tool: &str,
    args: &[&str],
) -> Value {
    let cli = format!("{modules}/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let mut command = Command::new("node");
    command.arg(cli).arg("--cli").args(options).args([
        "--method",
        "tools/call",
        "--tool-name",
        tool,
    ]);
    if !args.is_empty() {
        command.arg("--tool-arg").args(args);
    }
    let out = command.arg("--").args(target).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // the result is the first JSON document printed; what follows may comment on it
    let result = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| {
            panic!(
                "no JSON from the Inspector:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::json!({"call": tool, "result": result, "exit_ok": out.status.success()})
}
