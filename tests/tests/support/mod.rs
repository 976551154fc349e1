//! Checks shared by the end-to-end tests against the local model server.

use tool_providers::agent::RunReport;
use tool_runtime::executor::{AuditRecord, ConfirmationRequest, Decider, Status};

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
