//! Checks shared by the end-to-end tests against the local model server.

use std::sync::Mutex;

use tool_providers::agent::{Agent, AgentError, RunReport};
use tool_runtime::executor::{AuditRecord, ConfirmationRequest, Decider, Status};

/// Fresh conversations a confirmation test may start for one valid call.
pub const CONVERSATIONS: usize = 5;

/// `agent.run(prompt)`, starting a fresh conversation (up to [`CONVERSATIONS`]) after one that
/// went nowhere. A 135M model sampling at the server's default temperature sometimes repeats an
/// invalid call, or loops its output until the token cap, until the retry budget is spent. Such
/// a conversation must have refused every call by policy before anyone was asked (`asked` stays
/// empty) and left the application's data alone (`unchanged`).
pub async fn run_until_a_valid_call(
    agent: &Agent,
    prompt: &str,
    asked: &Mutex<Vec<ConfirmationRequest>>,
    unchanged: impl Fn() -> bool,
) -> RunReport {
    for conversation in 1..=CONVERSATIONS {
        asked.lock().unwrap().clear();
        match agent.run(prompt).await {
            Ok(report) => return report,
            Err(e) if conversation < CONVERSATIONS => {
                let partial = e.partial().unwrap_or_else(|| panic!("{e}"));
                assert!(
                    matches!(e.cause(), AgentError::RetriesExhausted { .. }),
                    "only the model's own invalid calls may end a conversation: {e}"
                );
                for record in &partial.audit {
                    assert_eq!(record.decided_by, Decider::Policy, "{record:#?}");
                    assert_ne!(record.status, Status::Success, "{record:#?}");
                }
                assert!(asked.lock().unwrap().is_empty());
                assert!(
                    unchanged(),
                    "a conversation without a valid call changed the data"
                );
                eprintln!("conversation {conversation} spent its retries: {e}");
            }
            Err(e) => panic!("{CONVERSATIONS} conversations without a valid call: {e:?}"),
        }
    }
    unreachable!("the last conversation returns or panics")
}

/// The `tool` calls of `report` that ran and succeeded, after checking what a confirmed tool
/// promises: the model made at least one valid call; a person was asked once for each call that
/// reached them, about that tool, and decided it; every other call was refused by policy before
/// anyone was asked and before it ran. A call the person confirmed may still fail in the tool
/// itself (a small model sends `"eta": "medium"`, which the schema's string admits and the tool
/// refuses): it was asked about and ran, so it counts as reaching the person.
pub fn confirmed_calls<'a>(
    report: &'a RunReport,
    tool: &str,
    asked: &[ConfirmationRequest],
) -> Vec<&'a AuditRecord> {
    let created: Vec<_> = report.audit.iter().filter(|r| r.tool == tool).collect();
    let ran: Vec<_> = created
        .iter()
        .copied()
        .filter(|r| r.status == Status::Success)
        .collect();
    assert!(
        !ran.is_empty(),
        "the model made a valid {tool} call: {:#?}",
        report.transcript
    );
    let (reached, refused): (Vec<&AuditRecord>, Vec<&AuditRecord>) = created
        .iter()
        .copied()
        .partition(|r| r.decided_by == Decider::User);
    for refused in refused {
        assert_eq!(refused.decided_by, Decider::Policy, "{refused:#?}");
        assert_eq!(refused.attempts, 0, "{refused:#?}");
        assert_ne!(refused.status, Status::Success, "{refused:#?}");
    }
    for r in &reached {
        assert!(r.attempts >= 1, "a confirmed call ran: {r:#?}");
    }
    // invalid calls never reach the user
    assert_eq!(asked.len(), reached.len(), "{created:#?}");
    assert!(asked.iter().all(|q| q.preview.tool == tool));
    assert!(ran.iter().all(|r| r.decided_by == Decider::User));
    ran
}
