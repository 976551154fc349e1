//! Confirmation: what a person is asked, what they can answer, and who asks them.
//!
//! One mechanism serves both ways of confirming: a [`ConfirmationHandler`] either answers now
//! (inline: a terminal, a UI dialog) or answers [`Answer::Defer`], and the executor parks the call
//! as a pending operation to be approved or denied by id later, from any task or process.

#[cfg(feature = "terminal")]
mod lines;
#[cfg(feature = "terminal")]
mod question;
#[cfg(feature = "terminal")]
mod terminal;

use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(feature = "terminal")]
pub use lines::read_stdin_line;
#[cfg(feature = "terminal")]
pub use terminal::TerminalConfirmer;

use crate::records::{Decider, Preview};

/// What a person is asked to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationRequest {
    /// The intent, parameters, category, undo-ability, change preview and first-use notice.
    pub preview: Preview,
    /// Set when the person's previous answer was an edit that did not validate: why, so they can
    /// correct it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// How long the executor waits for the answer; after that the call is denied.
    #[serde(with = "millis")]
    pub timeout: Duration,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// Run it.
    Yes,
    /// Do not run it; the reason goes back to the model as a denial.
    No {
        /// The person's words, if any.
        reason: Option<String>,
    },
    /// Run it with these arguments instead (validated again before anything runs).
    Edit {
        /// The complete new arguments.
        arguments: Value,
    },
    /// Nobody answered in time (a denial).
    Timeout,
    /// Not now: park the call as a pending operation.
    Defer,
}

/// Asks a person about a call.
///
/// Nothing the model produced takes part in the answer: the handler sees the request, built by
/// the executor from the tool's definition and the validated arguments, and answers from outside.
/// The executor applies its own timeout around [`ConfirmationHandler::confirm`] as well.
pub trait ConfirmationHandler: Send + Sync {
    /// Asks and waits for the answer.
    fn confirm<'a>(&'a self, request: &'a ConfirmationRequest) -> BoxFuture<'a, Answer>;

    /// Who answers through this handler, as the audit record names them. A person at this
    /// process's own terminal or UI by default; a handler that relays an answer from elsewhere
    /// (an MCP host) says so, so that the record never claims more than the process knows.
    fn route(&self) -> ConfirmationRoute {
        ConfirmationRoute::default()
    }

    /// The person this handler puts confirmations to, as a host of the calls it sees: a tool's
    /// questions ([`CallContext::ask`](crate::CallContext::ask)) go to the same person by the
    /// same way. The executor gives it to every call whose context has no host of its own; `None`
    /// (the default) when the handler has nobody to ask now.
    fn host(&self) -> Option<crate::host::Host> {
        None
    }
}

/// Who decided a call and by which way, for the audit record ([`ConfirmationHandler::route`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmationRoute {
    /// Recorded as the record's `decided_by` when the handler answers yes, no or an edit.
    pub decider: Decider,
    /// Recorded as the record's `decided_via`: the route and the party, in a person's words
    /// (e.g. `MCP host "Claude Desktop" via elicitation`).
    pub via: Option<String>,
}

impl Default for ConfirmationRoute {
    fn default() -> Self {
        ConfirmationRoute {
            decider: Decider::User,
            via: None,
        }
    }
}

/// Says yes to everything: for `--yes` on the command line, where the person approved in advance,
/// and for trusted batch jobs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

impl ConfirmationHandler for ApproveAll {
    fn confirm<'a>(&'a self, _: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        Box::pin(async { Answer::Yes })
    }
}

/// Says no to everything that needs confirmation, with a fixed reason: for unattended processes
/// where nobody can answer.
#[derive(Debug, Clone, Default)]
pub struct DenyAll(pub Option<String>);

impl ConfirmationHandler for DenyAll {
    fn confirm<'a>(&'a self, _: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        let reason = self.0.clone();
        Box::pin(async move { Answer::No { reason } })
    }
}

/// Parks every call that needs confirmation as a pending operation, decided later by id.
#[derive(Debug, Clone, Copy, Default)]
pub struct Deferred;

impl ConfirmationHandler for Deferred {
    fn confirm<'a>(&'a self, _: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        Box::pin(async { Answer::Defer })
    }
}

/// A handler from an async closure (a UI channel, a test script).
pub struct FnConfirmer<F>(pub F);

impl<F> ConfirmationHandler for FnConfirmer<F>
where
    F: Fn(ConfirmationRequest) -> BoxFuture<'static, Answer> + Send + Sync,
{
    fn confirm<'a>(&'a self, request: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        (self.0)(request.clone())
    }
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}
