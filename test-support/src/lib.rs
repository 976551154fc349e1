//! What the workspace's tests and benchmarks share, in one place instead of copies.
//!
//! - The one rule for tests that need something from outside the build (Redis, the local model
//!   server, the Python SDKs, tmux, Chromium, the MiniLM files): without it a test prints why it
//!   skipped and passes, except under CI, where a missing service is a broken setup and fails the
//!   test, so that a green CI run means every such test ran.
//! - [`instr`]: instruction counts of a benchmark's cases under callgrind.
//! - [`bfcl`]: the Berkeley Function Calling Leaderboard subset as a tool catalog and questions.
//! - [`mcp`]: the official MCP SDKs' clients, run against this project's MCP servers.

pub mod bfcl;
pub mod instr;
pub mod mcp;

/// Whether this run is CI: `CI` set to anything but empty, `false` or `0` (CI systems set
/// `CI=true`; `CI=0` turns the rule off for a local run that exports it).
pub fn in_ci() -> bool {
    ci_from(std::env::var("CI").ok().as_deref())
}

/// Whether `value`, the `CI` variable's, means CI (see [`in_ci`]).
pub fn ci_from(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether a prerequisite of a test is `available`. When it is not: under CI, a panic that names
/// `what` and `how` to provide it; otherwise a `SKIPPED` line on standard error and `false`, so
/// the test returns early.
pub fn prerequisite(available: bool, what: &str, how: &str) -> bool {
    require(available, in_ci(), what, how)
}

/// [`prerequisite`] with the CI decision given, so the rule itself can be tested.
fn require(available: bool, ci: bool, what: &str, how: &str) -> bool {
    if available {
        return true;
    }
    assert!(
        !ci,
        "CI is set but {what} is missing: these tests need it ({how})"
    );
    eprintln!("SKIPPED: {what} is missing ({how})");
    false
}

/// The value of the environment variable `var`, which names a service or program a test needs;
/// when it is unset or empty, [`prerequisite`]'s rule applies.
pub fn service(var: &str, how: &str) -> Option<String> {
    let value = std::env::var(var).ok().filter(|v| !v.is_empty());
    prerequisite(value.is_some(), var, how).then(|| value.unwrap_or_default())
}

/// [`service`] for a URL, without a trailing slash.
pub fn service_url(var: &str, how: &str) -> Option<String> {
    service(var, how).map(|u| u.trim_end_matches('/').to_owned())
}

/// The local llama.cpp server the end-to-end tests run against (`TOOLS_LLAMA_URL`).
pub fn llama_url() -> Option<String> {
    service_url(
        "TOOLS_LLAMA_URL",
        "the local model server: `scripts/llama-server.sh start`, then export TOOLS_LLAMA_URL=<the \
         printed URL>, as .ci/run does",
    )
}

/// The Redis server the store tests use (`TOOL_RUNTIME_TEST_REDIS_URL`); each test keeps its keys
/// under a prefix of its own.
pub fn redis_url() -> Option<String> {
    service(
        "TOOL_RUNTIME_TEST_REDIS_URL",
        "a redis:// URL of a running redis-server, as .ci/run starts",
    )
}

/// A Python with the provider SDKs and the MCP SDK installed (`TOOLS_CONFORMANCE_PYTHON`).
pub fn conformance_python() -> Option<String> {
    service(
        "TOOLS_CONFORMANCE_PYTHON",
        "a Python with openai, anthropic, ollama, mcp, google-genai and pydantic installed, as \
         .ci/run makes",
    )
}

/// The folder of `node_modules` that holds the official MCP TypeScript SDK's client
/// (`@modelcontextprotocol/client`), for the MCP tests that drive this project with it
/// (`TOOLS_MCP_TS_SDK`); `node` is taken from the PATH.
pub fn mcp_typescript_sdk() -> Option<String> {
    service(
        "TOOLS_MCP_TS_SDK",
        "a node_modules folder with @modelcontextprotocol/client installed from npm, as .ci/run \
         makes",
    )
}

/// The folder of `node_modules` that holds the official MCP Inspector
/// (`@modelcontextprotocol/inspector`, `TOOLS_MCP_INSPECTOR`), whose command line (`--cli`) the
/// MCP tests run as a person would; `node` is taken from the PATH.
pub fn mcp_inspector() -> Option<String> {
    service(
        "TOOLS_MCP_INSPECTOR",
        "a node_modules folder with @modelcontextprotocol/inspector installed from npm, as \
         .ci/run makes",
    )
}

/// The folder of `node_modules` that holds the reference MCP servers the client tests import
/// tools from (`@modelcontextprotocol/server-filesystem`, `server-memory` and
/// `server-everything`, `TOOLS_MCP_SERVERS`); `node` is taken from the PATH.
pub fn mcp_servers() -> Option<String> {
    service(
        "TOOLS_MCP_SERVERS",
        "a node_modules folder with @modelcontextprotocol/server-filesystem, server-memory and \
         server-everything installed from npm, as .ci/run makes",
    )
}

/// The console script of the reference MCP server `mcp-server-time` (PyPI), installed beside
/// [`conformance_python`] in its virtual environment.
pub fn mcp_time_server() -> Option<String> {
    let python = conformance_python()?;
    let script = std::path::Path::new(&python).with_file_name("mcp-server-time");
    prerequisite(
        script.is_file(),
        "mcp-server-time",
        "pip install mcp-server-time into the TOOLS_CONFORMANCE_PYTHON environment, as .ci/run does",
    )
    .then(|| script.display().to_string())
}

/// The OTLP receiver the telemetry tests export to: its base URL (`TOOLS_OTLP_URL`, for
/// `OTEL_EXPORTER_OTLP_ENDPOINT`) and the file it writes each received span to as a JSON line
/// (`TOOLS_OTLP_SPANS`).
pub fn otlp_receiver() -> Option<(String, std::path::PathBuf)> {
    let how = "an OTLP/HTTP receiver writing spans as JSON lines: `scripts/otlp-receiver.sh install \
               && scripts/otlp-receiver.sh start`, then export TOOLS_OTLP_URL=<the printed URL> \
               and TOOLS_OTLP_SPANS=$(scripts/otlp-receiver.sh spans-file), as .ci/run does";
    let url = service_url("TOOLS_OTLP_URL", how)?;
    let spans = service("TOOLS_OTLP_SPANS", how)?;
    Some((url, spans.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_any_value_but_empty_false_or_zero() {
        for on in ["true", "1", "github-actions"] {
            assert!(ci_from(Some(on)), "{on}");
        }
        for off in [None, Some(""), Some("false"), Some("0")] {
            assert!(!ci_from(off), "{off:?}");
        }
    }

    #[test]
    fn a_missing_prerequisite_skips_outside_ci_and_fails_under_it() {
        assert!(require(true, true, "tmux", "apt-get install tmux"));
        assert!(require(true, false, "tmux", "apt-get install tmux"));
        assert!(!require(false, false, "tmux", "apt-get install tmux"));
        let failed =
            std::panic::catch_unwind(|| require(false, true, "tmux", "apt-get install tmux"));
        let message = *failed.unwrap_err().downcast::<String>().unwrap();
        assert!(
            message.contains("tmux is missing") && message.contains("apt-get install tmux"),
            "{message}"
        );
    }
}
