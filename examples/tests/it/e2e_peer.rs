//! End to end over two more wire formats: the `research` binary with `--provider anthropic`
//! (Anthropic Messages, streamed and not) and `--provider openai-responses` (OpenAI Responses),
//! against a real peer that speaks them: the LiteLLM proxy (`scripts/peer-proxy.sh`) in front of
//! the local llama.cpp server with SmolLM2-135M. Real HTTP, real tool calls decoded from each
//! format, confirmations answered on stdin, results sent back in the format, SQLite checked.
//!
//! Needs `TOOLS_PEER_URL` (the proxy, e.g. `http://127.0.0.1:4000`, set by `.ci/run`). Without
//! it the test prints why and passes vacuously, except when `CI` is set: then it fails.

use crate::support;

use support::{Run, research};

fn peer_url() -> Option<String> {
    test_support::service_url(
        "TOOLS_PEER_URL",
        "the LiteLLM proxy (`scripts/peer-proxy.sh install && scripts/peer-proxy.sh start`, in \
         front of `scripts/llama-server.sh start`, as .ci/run does)",
    )
}

/// The checks every run shares: the model spoke the format, called a tool, the session ended
/// with its answer, and the database changed exactly as the run reported.
fn check(run: &Run, provider: &str) {
    let Run {
        stdout,
        stderr,
        notes,
    } = run;
    assert!(
        stderr.contains(&format!("model: {provider} at http://127.0.0.1")),
        "{stderr}"
    );
    assert!(stderr.contains("→ "), "the model called a tool: {stderr}");
    assert!(
        !stdout.trim().is_empty() && !stdout.contains("(no final answer"),
        "an answer ended the session: {stdout}\n{stderr}"
    );
    let created = stderr.matches("← create_note [success]").count();
    let deleted = stderr.matches("← delete_note [success]").count();
    assert_eq!(notes + deleted, 2 + created, "{stderr}");
}

#[test]
fn anthropic_messages_through_the_proxy_with_a_confirmation_on_stdin() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("ANTHROPIC_BASE_URL", format!("{url}/v1")),
        ("ANTHROPIC_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "anthropic",
            "--small-model",
            "Create a note titled Llamas saying that llamas are camelids",
        ],
        "y\ny\n",
    );
    check(&run, "anthropic");
    if run.stderr.contains("← create_note [success]") {
        assert!(run.stderr.contains("Proceed? [Y/n/e]"), "{}", run.stderr);
    }
}

#[test]
fn anthropic_messages_streamed_through_the_proxy() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("ANTHROPIC_BASE_URL", format!("{url}/v1")),
        ("ANTHROPIC_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "anthropic",
            "--small-model",
            "--stream",
            "--yes",
            "Search the bibliography for Toolformer",
        ],
        "",
    );
    check(&run, "anthropic");
}

#[test]
fn openai_responses_through_the_proxy() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("OPENAI_BASE_URL", format!("{url}/v1")),
        ("OPENAI_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "openai-responses",
            "--small-model",
            "--yes",
            "Create a note titled Llamas saying that llamas are camelids",
        ],
        "",
    );
    check(&run, "openai-responses");
}
