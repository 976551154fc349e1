//! Checks shared by the end-to-end tests against the local model server.

use tool_providers::agent::RunReport;
use tool_runtime::executor::{AuditRecord, ConfirmationRequest, Decider, Status};

/// The `tool` calls of `report` that ran, after checking what a confirmed tool promises: the
/// model made at least one valid call; every other call was refused by policy before it ran; a
/// person was asked once for each call that ran, about that tool, and decided it.
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
    for refused in created.iter().filter(|r| r.status != Status::Success) {
        // Anything else was refused before it ran and before anyone was asked.
        assert_eq!(refused.decided_by, Decider::Policy, "{refused:#?}");
        assert_eq!(refused.attempts, 0, "{refused:#?}");
    }
    // invalid calls never reach the user
    assert_eq!(asked.len(), ran.len(), "{created:#?}");
    assert!(asked.iter().all(|q| q.preview.tool == tool));
    assert!(ran.iter().all(|r| r.decided_by == Decider::User));
    ran
}
