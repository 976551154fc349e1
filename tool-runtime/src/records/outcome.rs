//! What a call ends as: the value sent back to the model, and the record of who decided.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Change;
use crate::definition::Safety;
use crate::error::ToolError;
use crate::id::SharedId;

/// How a call ended, as it is sent back to the model.
///
/// A denial is not an error: it is the user's choice, and the model is told so (a result
/// with `isError: false`). A pending operation is neither: the call waits for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and returned `value`.
    Success {
        /// The result for the model; shortened when `truncated` (the caller keeps the full value
        /// in [`Execution::full`]).
        value: Value,
        /// The value was summarised or cut to fit `max_result_chars`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    /// The call failed (policy refusal, invalid arguments, timeout, the tool's own failure).
    Error {
        /// The structured error. Boxed: an outcome is moved by value through every layer of a
        /// call, and the common outcome, a success, should not move the size of an error.
        error: Box<ToolError>,
    },
    /// A person (or the confirmation timeout) said no.
    Denied {
        /// Why, in the user's words when they gave one.
        reason: String,
        /// Who made the decision.
        by: Decider,
    },
    /// The call waits for approval by id ([`crate::executor::Executor::approve`]).
    Pending {
        /// The pending operation's id.
        operation_id: String,
        /// What will happen if it is approved. Boxed, as [`Outcome::Error`]'s error is.
        preview: Box<Preview>,
    },
}

impl Outcome {
    /// Whether this is [`Outcome::Success`].
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Success { .. })
    }

    /// The error, if the call failed.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Outcome::Error { error } => Some(error),
            _ => None,
        }
    }

    /// The status word used in audit records and on the command line.
    pub fn status(&self) -> Status {
        match self {
            Outcome::Success { .. } => Status::Success,
            Outcome::Error { .. } => Status::Error,
            Outcome::Denied { .. } => Status::Denied,
            Outcome::Pending { .. } => Status::Pending,
        }
    }

    /// The outcome as JSON for the model.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("Outcome always serializes")
    }

    pub(crate) fn error_from(error: ToolError) -> Self {
        Outcome::Error {
            error: Box::new(error),
        }
    }
}

/// The status of a finished call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Ran and succeeded.
    Success,
    /// Failed.
    Error,
    /// Refused by a person or the confirmation timeout.
    Denied,
    /// Waiting for approval.
    Pending,
    /// Started, then dropped before it finished: whoever waited for it stopped waiting (an MCP
    /// client's `notifications/cancelled`, an HTTP client that went away). The tool body, if it
    /// had started, was cancelled with it; the record's
    /// [`cancelled_by`](crate::executor::AuditRecord::cancelled_by) says who stopped it.
    Cancelled,
}

impl Status {
    /// The name used in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Error => "error",
            Status::Denied => "denied",
            Status::Pending => "pending",
            Status::Cancelled => "cancelled",
        }
    }
}

/// Who made the decision about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// The configured policy (read-only tools, auto-confirmed categories, allow/deny lists).
    Policy,
    /// A person, through a confirmation handler, the pending-operation API or `--yes`.
    User,
    /// Whoever answers through an MCP host's own confirmation (elicitation): the host says a
    /// person answered, and the server takes it only from a host it was told to trust (see
    /// [`ConfirmationRoute`](crate::executor::ConfirmationRoute)); the record's `decided_via`
    /// names the host.
    Host,
    /// Nobody answered before the confirmation timeout.
    Timeout,
}

/// What was decided about a call before (or instead of) running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Ran without asking (policy).
    Allowed,
    /// Ran after a person said yes.
    Confirmed,
    /// Ran with arguments a person changed.
    Edited,
    /// A person said no, or the confirmation timed out.
    Denied,
    /// Parked as a pending operation.
    Deferred,
    /// Refused by policy (deny list, outside the allow list) or before policy (hydration failed).
    Refused,
    /// An undo of an earlier call, asked for by a person.
    Undo,
    /// A person was asked, and the call was cancelled before anyone answered.
    Unanswered,
}

/// What a person is shown before a call runs, and what a pending operation carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    /// The call this is about.
    pub call_id: SharedId,
    /// The tool.
    pub tool: String,
    /// The tool's intent template filled in with the arguments, or a generic sentence.
    pub intent: String,
    /// The safety category.
    pub category: Safety,
    /// The arguments the tool will receive, without the optional ones the model left unset,
    /// which a typed tool's arguments write as `null` (the tool reads them as absent).
    pub arguments: Value,
    /// Whether the effect can be undone: an undo is registered for the tool, so
    /// [`crate::executor::Executor::undo`] can revert the call once it has run.
    pub reversible: bool,
    /// For modifications: the change the tool will make, as the tool's previewer describes it.
    /// A preview stored as plain JSON reads as [`Change::json`] of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    /// Present when this is the first use of an external tool in the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_use: Option<FirstUse>,
}

/// The first-time gate of an external tool: what it is and what leaves the system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstUse {
    /// Who the calls go to ([`ToolDefinition::service`](crate::definition::ToolDefinition::service))
    /// and the tool's description, so the person knows what service this is.
    pub service: String,
    /// The argument names whose values will be sent out of the system.
    pub data_leaving: Vec<String>,
    /// A sentence for the person.
    pub message: String,
}

/// The result of running one call through the executor.
///
/// An execution is returned by value through the executor's layers, so what most calls leave
/// empty is boxed ([`Execution::full`], [`Execution::undo`], and the error and preview inside
/// [`Outcome`]): the execution of a call that succeeded moves in few bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    /// The call id.
    pub call_id: SharedId,
    /// The tool: its definition's name, shared rather than copied when the name is static.
    pub tool: Cow<'static, str>,
    /// What goes back to the model.
    pub outcome: Outcome,
    /// The full result when the outcome's value was truncated for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<Box<Value>>,
    /// Why the call's audit record could not be written (the store failed), when it could not.
    /// The outcome is still what happened: a tool that ran has run. With
    /// [`ExecutorConfig::audit_required`](crate::executor::ExecutorConfig::audit_required) (the default)
    /// callers treat this as a failure of the call; the `tools` command line exits 1 with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_failure: Option<String>,
    /// For a call that succeeded and whose tool plans undos: the id to undo it by, or why it
    /// cannot be undone after all (the confirmation said it could be, so the person must learn
    /// that it cannot). `None` for every other call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<Box<Undo>>,
}

/// Whether a call that succeeded can be undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Undo {
    /// Journaled: [`crate::executor::Executor::undo`] with `id` reverts this call, and no other
    /// call, whatever ids the provider reuses.
    Journaled {
        /// The journal entry's id (`un-` and 32 hex digits).
        id: String,
    },
    /// The planner decided there is nothing to revert (it returned no inverse call).
    NotNeeded,
    /// The undo could not be planned or journaled; the call stands and cannot be undone.
    Unavailable {
        /// Why, for the person.
        reason: String,
    },
}

impl Execution {
    /// The execution of `call_id` with `outcome`, nothing truncated, its record not yet written,
    /// nothing to undo.
    pub(crate) fn new(
        call_id: SharedId,
        tool: impl Into<Cow<'static, str>>,
        outcome: Outcome,
    ) -> Self {
        Execution {
            call_id,
            tool: tool.into(),
            outcome,
            full: None,
            audit_failure: None,
            undo: None,
        }
    }

    /// The id that [`crate::executor::Executor::undo`] takes to revert this call, if it was
    /// journaled.
    pub fn undo_id(&self) -> Option<&str> {
        match self.undo.as_deref() {
            Some(Undo::Journaled { id }) => Some(id),
            _ => None,
        }
    }

    /// The complete result value, untruncated, if the call succeeded.
    pub fn value(&self) -> Option<&Value> {
        match (self.full.as_deref(), &self.outcome) {
            (Some(full), _) => Some(full),
            (None, Outcome::Success { value, .. }) => Some(value),
            _ => None,
        }
    }
}
