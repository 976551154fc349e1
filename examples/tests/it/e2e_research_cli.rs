//! End to end: the `research` binary, as the README runs it, against the real local llama.cpp
//! server with SmolLM2-135M. One turn from an argument ends with a printed answer (the local
//! configuration forces one round of tool calls, then asks for the answer with
//! `tool_choice: none`), the confirmation is answered on stdin, and the SQLite file holds exactly
//! the notes the run reports.
//!
//! Needs `TOOLS_LLAMA_URL` (set by `.ci/run`). Without it the test prints why and passes
//! vacuously, except when `CI` is set: then it fails.

use crate::support;

use support::{Run, research};
use test_support::llama_url;

#[test]
fn one_turn_against_the_real_model_ends_with_an_answer() {
    let Some(url) = llama_url() else { return };
    // Every confirmation this run may ask (two attempts at most) is answered yes.
    let Run {
        stdout,
        stderr,
        notes,
    } = research(
        &[("TOOLS_LLAMA_URL", url)],
        &["Create a note titled Llamas saying that llamas are camelids"],
        "y\ny\n",
    );

    // The session ended with an answer from the model, not with the iteration limit.
    assert!(
        !stdout.trim().is_empty() && !stdout.contains("(no final answer"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("→ "), "the model called a tool: {stderr}");
    assert!(stderr.contains("model requests"), "{stderr}");

    // Exactly the notes the run reports as created (or deleted) changed in the file.
    let created = stderr.matches("← create_note [success]").count();
    let deleted = stderr.matches("← delete_note [success]").count();
    assert_eq!(notes + deleted, 2 + created, "{stderr}");
    if created > 0 {
        // The confirmation box was shown and answered on stdin.
        assert!(stderr.contains("Proceed? [Y/n/e]"), "{stderr}");
    }
}
