//! Confirmation in the MCP revisions without server-to-client requests (2026-07-28 on): a call
//! that needs a person is answered with an `InputRequiredResult` carrying the elicitation, and
//! the client retries the same call with its person's answer and the server's `requestState`.
//!
//! The call is parked as a pending operation when it is first asked about, exactly as a call
//! deferred to the approvals page: the answer that comes back decides that operation through
//! [`Executor::approve_via`](tool_runtime::Executor::approve_via) or
//! [`Executor::deny_via`](tool_runtime::Executor::deny_via), so it is decided once whichever
//! replica receives the retry, an answer that never comes leaves the operation to a person on the
//! page, and a second answer to the same operation is refused by the store. The `requestState` names
//! the operation and is sealed with rmcp's request-state codec (HMAC-SHA256) over the tool's name
//! and arguments, so a client can neither forge one nor carry one over to another call; only a
//! caller the operator granted in-band confirmation may answer at all (see
//! [`InBandConfirmation`](super::InBandConfirmation)).

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::model::{
    ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult,
    RequestStateCodec,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_runtime::executor::{Answer, ConfirmationHandler, ConfirmationRequest, write_canonical};

/// The key of the one input request a confirmation asks for.
pub(crate) const CONFIRM: &str = "confirm";

/// How many edited arguments that do not validate a person may send before the call is denied,
/// as when the executor asks in one round.
pub(crate) const MAX_EDITS: u8 = 3;

/// What `requestState` carries between the rounds of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ticket {
    /// The pending operation the answer decides.
    pub(crate) op: String,
    /// Until when (Unix milliseconds) an answer is taken as the host's: the confirmation
    /// timeout from the first round. Checked after the seal is verified, so that a late answer
    /// can still be told which operation it concerns.
    pub(crate) until_ms: u64,
    /// How many edits were refused so far.
    pub(crate) edits: u8,
}

/// Why a `requestState` was not accepted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    /// Not sealed by this server's key, altered, or sealed for another call.
    #[error("requestState was not issued by this server for this call (tool and arguments): {0}")]
    Rejected(String),
}

/// Seals and opens `requestState` with one key.
#[derive(Clone)]
pub(crate) struct States {
    codec: Arc<RequestStateCodec>,
}

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("States { key: redacted }")
    }
}

impl States {
    /// A key of the operating system's randomness: good for one process, so a retry must come
    /// back to the process that asked (one stdio connection always does).
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system's randomness is available");
        Self::with_key(&key).expect("32 bytes are a valid key")
    }

    /// A key the operator shares between replicas, so that any of them opens what another sealed.
    pub(crate) fn with_key(key: &[u8]) -> Result<Self, String> {
        RequestStateCodec::try_new(key.to_vec())
            .map(|codec| States {
                codec: Arc::new(codec),
            })
            .map_err(|e| e.to_string())
    }

    /// What a state is bound to: the call it was issued for.
    fn binding(tool: &str, arguments: &Value) -> Vec<u8> {
        let mut text = String::from("tool-runtime/mcp-confirmation\u{0}");
        text.push_str(tool);
        text.push('\u{0}');
        write_canonical(arguments, &mut text);
        text.into_bytes()
    }

    pub(crate) fn seal(&self, ticket: &Ticket, tool: &str, arguments: &Value) -> String {
        let binding = Self::binding(tool, arguments);
        let options = rmcp::model::SealOptions::new().associated_data(&binding);
        self.codec
            .seal_json_with(ticket, &options)
            .expect("a ticket serializes")
    }

    pub(crate) fn open(
        &self,
        state: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Ticket, StateError> {
        self.codec
            .open_json_with(state, &Self::binding(tool, arguments))
            .map_err(|e| StateError::Rejected(e.to_string()))
    }
}

/// A confirmation handler that asks nobody now: it keeps what the person is to be asked and
/// defers the call, which parks it as a pending operation; the question then travels to the
/// client in an `InputRequiredResult`.
#[derive(Default)]
pub(crate) struct AskInRounds {
    asked: Mutex<Option<ConfirmationRequest>>,
}

impl AskInRounds {
    /// The question the executor put, if it put one.
    pub(crate) fn asked(&self) -> Option<ConfirmationRequest> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl ConfirmationHandler for AskInRounds {
    fn confirm<'a>(&'a self, request: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.clone());
        Box::pin(async { Answer::Defer })
    }
}

/// The `InputRequiredResult` that asks `request` about the operation of `ticket`.
pub(crate) fn ask(
    states: &States,
    request: &ConfirmationRequest,
    ticket: &Ticket,
    tool: &str,
    arguments: &Value,
) -> Option<InputRequiredResult> {
    let params = super::elicit::params(request)?;
    let mut requests = InputRequests::new();
    requests.insert(
        CONFIRM.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    let state = states.seal(ticket, tool, arguments);
    Some(InputRequiredResult::new(Some(requests), Some(state)))
}

/// The person's answer among the client's input responses: `None` when there is none, or it is
/// not an elicitation result.
pub(crate) fn answer_of(responses: Option<&rmcp::model::InputResponses>) -> Option<Answer> {
    let result: ElicitResult = serde_json::from_value(responses?.get(CONFIRM)?.clone()).ok()?;
    Some(super::elicit::answer(
        result.action,
        result.content.as_ref(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ticket() -> Ticket {
        Ticket {
            op: "op-1".into(),
            until_ms: 10,
            edits: 0,
        }
    }

    #[test]
    fn a_state_opens_only_for_its_own_call_and_key() {
        let states = States::random();
        let args = json!({"id": "n1", "force": true});
        let sealed = states.seal(&ticket(), "delete_note", &args);
        // the same arguments in another order are the same call
        let reordered = json!({"force": true, "id": "n1"});
        assert_eq!(
            states.open(&sealed, "delete_note", &reordered).unwrap(),
            ticket()
        );
        assert!(
            states
                .open(&sealed, "delete_note", &json!({"id": "n2", "force": true}))
                .is_err()
        );
        assert!(states.open(&sealed, "delete_notes", &args).is_err());
        assert!(
            States::random()
                .open(&sealed, "delete_note", &args)
                .is_err()
        );
    }

    #[test]
    fn a_state_altered_or_made_up_by_a_client_is_refused() {
        let states = States::random();
        let args = json!({});
        let sealed = states.seal(&ticket(), "t", &args);
        let other = Ticket {
            op: "op-2".into(),
            ..ticket()
        };
        let other = states.seal(&other, "t", &args);
        // another operation's payload under this state's tag
        let (mine, theirs): (Vec<&str>, Vec<&str>) =
            (sealed.split('.').collect(), other.split('.').collect());
        assert_eq!(mine.len(), theirs.len(), "{sealed} {other}");
        let last = mine.len() - 1;
        let mut forged = mine.clone();
        forged[last - 1] = theirs[last - 1];
        assert!(states.open(&forged.join("."), "t", &args).is_err());
        assert_eq!(states.open(&other, "t", &args).unwrap().op, "op-2");
        for made_up in ["", "op-1", "rs1.e30.AAAA", &format!("{sealed}x")] {
            assert!(states.open(made_up, "t", &args).is_err(), "{made_up}");
        }
    }

    #[test]
    fn an_answer_is_read_from_the_confirm_response_only() {
        let mut responses = rmcp::model::InputResponses::new();
        assert_eq!(answer_of(Some(&responses)), None);
        responses.insert("other".into(), json!({"action": "accept"}));
        assert_eq!(answer_of(Some(&responses)), None);
        responses.insert(CONFIRM.into(), json!({"action": "accept", "content": {}}));
        assert_eq!(answer_of(Some(&responses)), Some(Answer::Yes));
        responses.insert(CONFIRM.into(), json!({"action": "decline"}));
        assert!(matches!(
            answer_of(Some(&responses)),
            Some(Answer::No { .. })
        ));
        responses.insert(CONFIRM.into(), json!({"not": "an elicitation result"}));
        assert_eq!(answer_of(Some(&responses)), None);
    }
}
