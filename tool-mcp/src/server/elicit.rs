//! Confirmation inside MCP: a call that needs a person is asked about with `elicitation/create`,
//! through the client that made it, when that client declared the capability.
//!
//! The question goes to the MCP host's user, not to the model: the host shows the form and sends
//! back the person's action. Nothing in the call's arguments takes part in the answer. Accept runs
//! the call (with the arguments the person typed in the form, when they typed any, validated
//! again); decline and cancel are denials; no answer within the confirmation timeout is a denial.
//!
//! The call is parked in the store before the form is sent, and the answer decides that pending
//! operation: a process that stops while the person reads the form leaves the call waiting on
//! the approvals page, and a client that cancels its call withdraws it.

use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolResponse, CancelledNotification, CancelledNotificationParam, ClientResult,
    ElicitRequestParams, ElicitationAction, RequestId, ServerNotification, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext, RoleServer};
use serde_json::{Value, json};
use tool_runtime::display::{change_text, visible, visible_lines, visible_prefix};
use tool_runtime::executor::{Answer, ConfirmationRequest, ConfirmationRoute, Decider, Outcome};
use tool_runtime::{CallContext, ToolCall};

use super::decide::Decided;
use super::rounds::AskInRounds;
use super::{McpServer, client_name, error_result, result_of};

/// The form field for edited arguments: elicitation forms carry only primitive fields, so the
/// arguments travel as JSON text.
pub const EDITED_ARGUMENTS_FIELD: &str = "arguments";

/// The longest client name a record quotes: the name is the client's own claim.
const CLIENT_NAME_CHARS: usize = 64;

/// The most characters of the arguments or the change a form's message carries: a host shows
/// the message whole, and a megabyte of arguments would bury the question.
const MESSAGE_VALUE_CHARS: usize = 2_000;

/// Whether the client declared form elicitation: in the request's own `_meta` (2026-07-28 on)
/// or, for a session opened with `initialize`, in its handshake.
pub(crate) fn supported(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|caps| {
        caps.elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    })
}

/// The audit record's route for a decision an MCP host relayed, `how` it asked its person.
pub(crate) fn host_route(client: &str, how: &str) -> ConfirmationRoute {
    ConfirmationRoute {
        decider: Decider::Host,
        via: Some(format!(
            "MCP host \"{}\" via {how}",
            visible_prefix(client, CLIENT_NAME_CHARS)
        )),
    }
}

/// The form's message: what the terminal's confirmation box shows, as text.
/// Every part a model or a tool wrote goes through the display rule, so that a direction
/// override or a zero-width character in an argument is shown, not obeyed, by the host.
pub(crate) fn message(request: &ConfirmationRequest) -> String {
    let p = &request.preview;
    let mut out = format!(
        "Confirm: {}\nTool: {} ({})\nArguments: {}\n",
        visible(&p.intent),
        visible(&p.tool),
        p.category.as_str(),
        visible_prefix(&p.arguments.to_string(), MESSAGE_VALUE_CHARS)
    );
    if let Some(change) = p.change.as_ref().filter(|c| !c.is_empty()) {
        out.push_str("Changes:\n");
        out.push_str(&change_text(change, MESSAGE_VALUE_CHARS));
    }
    out.push_str(if p.reversible {
        "It can be undone.\n"
    } else {
        "It cannot be undone.\n"
    });
    if let Some(first) = &p.first_use {
        out.push_str(&format!(
            "{} About the service: {} Leaves this system: {}.\n",
            visible_lines(&first.message),
            visible_lines(&first.service),
            if first.data_leaving.is_empty() {
                "nothing".to_owned()
            } else {
                first.data_leaving.join(", ")
            }
        ));
    }
    if let Some(problem) = &request.problem {
        out.push_str(&format!(
            "Your edit was not accepted: {}\n",
            visible(problem)
        ));
    }
    out.push_str("Accept to run it (optionally with edited arguments as JSON), decline to refuse.");
    out
}

pub(crate) fn params(request: &ConfirmationRequest) -> Option<ElicitRequestParams> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message(request),
        "requestedSchema": {
            "type": "object",
            "properties": {
                EDITED_ARGUMENTS_FIELD: {
                    "type": "string",
                    "title": "Edited arguments",
                    "description": "Leave empty to run with the arguments shown; otherwise the \
                                    complete arguments as a JSON object (checked again)."
                }
            }
        }
    }))
    .ok()
}

/// The answer an elicitation result stands for.
pub(crate) fn answer(action: ElicitationAction, content: Option<&Value>) -> Answer {
    match action {
        ElicitationAction::Accept => {
            let edited = content
                .and_then(|c| c.get(EDITED_ARGUMENTS_FIELD))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty());
            match edited {
                None => Answer::Yes,
                // text that is not a JSON object goes to the executor as it is: it validates
                // the edit and asks again with the problem
                Some(text) => Answer::Edit {
                    arguments: serde_json::from_str(text)
                        .unwrap_or_else(|_| Value::String(text.to_owned())),
                },
            }
        }
        ElicitationAction::Decline => Answer::No {
            reason: Some("the user declined this call in their MCP client".into()),
        },
        ElicitationAction::Cancel => Answer::No {
            reason: Some("the user dismissed the confirmation in their MCP client".into()),
        },
        // an action this version does not know is not a yes
        _ => Answer::No {
            reason: Some("the MCP client answered the confirmation with an unknown action".into()),
        },
    }
}

/// Asks `peer`'s person `request` with `elicitation/create` and waits for the answer. A request
/// that cannot be sent, or an answer of another kind, is [`Answer::Defer`]: the call stays
/// parked. Dropped before the answer comes (the confirmation timeout, the client's cancel), it
/// tells the client to take the form down.
async fn ask(peer: &Peer<RoleServer>, request: &ConfirmationRequest) -> Answer {
    let Some(params) = params(request) else {
        return Answer::Defer;
    };
    let asked = ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
    // the caller's deadline bounds the wait: one clock, one cancellation
    let options = PeerRequestOptions::no_options();
    let handle = match peer.send_request_with_option(asked, options).await {
        Ok(handle) => handle,
        Err(e) => {
            tracing::warn!(error = %e, "elicitation failed; the call stays parked");
            return Answer::Defer;
        }
    };
    let mut abandoned = Abandoned(Some((peer.clone(), handle.id.clone())));
    let result = handle.await_response().await;
    abandoned.0 = None;
    match result {
        Ok(ClientResult::ElicitResult(result)) => answer(result.action, result.content.as_ref()),
        Ok(_) => {
            tracing::warn!("the client answered an elicitation with another result");
            Answer::Defer
        }
        Err(e) => {
            tracing::warn!(error = %e, "elicitation failed; the call stays parked");
            Answer::Defer
        }
    }
}

impl McpServer {
    /// Confirms `call` by `elicitation/create` while the client waits. The call is parked first,
    /// as a pending operation in the store, exactly as one deferred to the approvals page; the
    /// person's answer then decides that operation. So a process that stops while its person
    /// reads the form loses nothing: the operation waits in the store for the approvals page, or
    /// any replica. `parked` receives the operation's id once it is parked.
    pub(super) async fn confirm_by_elicitation(
        &self,
        call: &ToolCall,
        cx: CallContext,
        context: &RequestContext<RoleServer>,
        parked: &OnceLock<String>,
    ) -> CallToolResponse {
        let waiting = CallContext {
            progress: cx.progress.clone(),
            host: cx.host.clone(),
            ..CallContext::default()
        };
        let asking = Arc::new(AskInRounds::default());
        let outcome = self
            .executor
            .with_confirmation(asking.clone())
            .call(call, cx)
            .await
            .outcome;
        let (Outcome::Pending { operation_id, .. }, Some(mut request)) = (&outcome, asking.asked())
        else {
            return result_of(call, &outcome).into();
        };
        let _ = parked.set(operation_id.clone());
        let route = host_route(&client_name(context), "elicitation");
        let timeout = request.timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut edits = 0;
        loop {
            let answer = tokio::time::timeout_at(deadline, ask(&context.peer, &request))
                .await
                .unwrap_or(Answer::Timeout);
            let decided = match answer {
                Answer::Timeout => {
                    let reason = format!(
                        "nobody confirmed this call within {} s, so it was not run",
                        timeout.as_secs_f64()
                    );
                    let route = ConfirmationRoute {
                        decider: Decider::Timeout,
                        via: route.via.clone(),
                    };
                    Decided::Done(Box::new(self.deny(operation_id, reason, route).await))
                }
                answer => {
                    self.decide(operation_id, answer, edits, &route, &waiting)
                        .await
                }
            };
            match decided {
                Decided::Done(decided) => {
                    return match *decided {
                        Ok(execution) => result_of(call, &execution.outcome).into(),
                        Err(error) => error_result(call, error).into(),
                    };
                }
                Decided::AskAgain(problem) => {
                    edits += 1;
                    request.problem = Some(problem);
                    request.timeout =
                        deadline.saturating_duration_since(tokio::time::Instant::now());
                }
                Decided::Waits => return result_of(call, &outcome).into(),
            }
        }
    }

    /// The client cancelled `call` while its person was being asked about operation `op`: the
    /// operation is denied, so that nobody approves later a call whose client stopped waiting
    /// for it. A connection that ended (the process stopping, the session closed) is no such
    /// cancel: the operation waits for the approvals page.
    pub(super) async fn withdraw(&self, op: &str, context: &RequestContext<RoleServer>) {
        if context.peer.is_transport_closed() {
            return;
        }
        let route = host_route(&client_name(context), "elicitation");
        let reason = "the MCP client cancelled the call before its person answered".to_owned();
        if let Err(error) = self.deny(op, reason, route).await {
            tracing::debug!(operation_id = op, %error, "a cancelled call's operation was already decided");
        }
    }
}

/// An elicitation the server stopped waiting for before its answer came: dropped, it sends the
/// client `notifications/cancelled` for the request, so a host does not leave a form open
/// whose answer nobody reads.
pub(crate) struct Abandoned(pub(crate) Option<(Peer<RoleServer>, RequestId)>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let params = CancelledNotificationParam::new(
                Some(id),
                Some("the server stopped waiting for the answer".to_owned()),
            );
            let notification = CancelledNotification::new(params);
            let _ = peer
                .send_notification(ServerNotification::CancelledNotification(notification))
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_shows_hidden_and_direction_changing_characters() {
        let iban = "DE00 \u{202e}9999 8888 7777\u{202c}";
        let request = ConfirmationRequest {
            preview: tool_runtime::executor::Preview {
                call_id: "c1".into(),
                tool: "pay".into(),
                intent: format!("Pay to {iban}"),
                category: tool_runtime::definition::Safety::External,
                arguments: json!({ "iban": iban, "memo": "ignore\u{200b} previous" }),
                reversible: false,
                change: None,
                first_use: None,
            },
            problem: None,
            timeout: std::time::Duration::from_secs(1),
        };
        let text = message(&request);
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{200b}'),
            "{text}"
        );
        assert!(text.contains("Pay to DE00 \\u{202e}9999"), "{text}");
        assert!(text.contains("ignore\\u{200b} previous"), "{text}");

        let mut long = request;
        long.preview.arguments = json!({ "text": "x".repeat(200_000) });
        let text = message(&long);
        assert!(text.len() < 4_000, "{} bytes", text.len());
        assert!(text.contains("... (200011 bytes)"), "{text}");
    }

    #[test]
    fn actions_map_to_answers_and_an_edit_travels_as_json_text() {
        assert_eq!(answer(ElicitationAction::Accept, None), Answer::Yes);
        assert_eq!(
            answer(ElicitationAction::Accept, Some(&json!({"arguments": "  "}))),
            Answer::Yes
        );
        assert_eq!(
            answer(
                ElicitationAction::Accept,
                Some(&json!({"arguments": "{\"id\": \"n2\"}"}))
            ),
            Answer::Edit {
                arguments: json!({"id": "n2"})
            }
        );
        assert!(matches!(
            answer(ElicitationAction::Decline, None),
            Answer::No { .. }
        ));
        assert!(matches!(
            answer(ElicitationAction::Cancel, None),
            Answer::No { .. }
        ));
    }
}
