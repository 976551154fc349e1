//! What an upstream server sends back while one of its tools runs, relayed to whoever runs the
//! call: its progress (`notifications/progress`) to the call's progress sink, and its questions
//! (`elicitation/create`, or the input requests of a 2026-07-28 server's `InputRequiredResult`)
//! to the call's host, which puts them to the person through the same route as the call's
//! confirmation (the terminal, the approvals page, the MCP host in front of a gateway). A
//! question never reaches the model: with nobody to ask, the server is told the person declined.
//! An accepted answer carries the form's defaults for the fields the person left out, as the
//! form showed them pre-filled.
//!
//! A progress report names its call by the token the request went out with. A question sent as
//! `elicitation/create` names no call, so it goes to the host of the oldest call in flight on
//! that connection that has one; the form says which server asks.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputResponses, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use serde_json::{Value, json};
use tool_runtime::CallContext;
use tool_runtime::host::{DEFAULT_QUESTION_TIMEOUT, Form, Host, Reply};
use tool_runtime::id::SharedId;
use tool_runtime::progress::{Progress, Reporter};

/// The calls in flight on one connection that someone listens to, in the order they were sent.
#[derive(Default)]
pub(crate) struct Relay {
    next: AtomicU64,
    calls: Mutex<Vec<InFlight>>,
}

struct InFlight {
    /// Tells this entry from the others.
    key: u64,
    /// The progress token the request went out with (rmcp gives every request one), once sent.
    token: Option<ProgressToken>,
    call_id: SharedId,
    progress: Option<Reporter>,
    host: Option<Host>,
}

/// A call's place in the relay, given up when dropped (the call ended or was cancelled).
struct Registration<'a> {
    relay: &'a Relay,
    key: u64,
}

impl Registration<'_> {
    /// The request went out with `token`.
    fn sent_with(&self, token: &ProgressToken) {
        if let Some(call) = self.relay.calls().iter_mut().find(|c| c.key == self.key) {
            call.token = Some(token.clone());
        }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.relay.calls().retain(|c| c.key != self.key);
    }
}

/// Tells the server about a request nobody waits for any more (the executor's timeout, a
/// cancelled call): armed while the answer is awaited.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = "the caller stopped waiting for the call".to_owned();
        tokio::spawn(async move {
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                .await;
        });
    }
}

impl Relay {
    fn calls(&self) -> std::sync::MutexGuard<'_, Vec<InFlight>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a request about to be sent for `cx`, before it is sent so that nothing the
    /// server sends back can come first; nothing is kept when the context neither listens for
    /// progress nor can ask the person.
    fn register(&self, cx: &CallContext) -> Option<Registration<'_>> {
        if cx.progress.is_none() && cx.host.is_none() {
            return None;
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls().push(InFlight {
            key,
            token: None,
            call_id: cx.call_id.clone(),
            progress: cx.progress.clone(),
            host: cx.host.clone(),
        });
        Some(Registration { relay: self, key })
    }

    /// Passes a server's progress report to the call sent with `token`; a report for no call in
    /// flight (late, or made up) is dropped.
    pub(crate) fn progress(&self, token: &ProgressToken, progress: Progress) {
        let sink = (self.calls().iter())
            .find(|c| c.token.as_ref() == Some(token))
            .and_then(|c| Some((c.call_id.clone(), c.progress.clone()?)));
        if let Some((call_id, reporter)) = sink {
            reporter.report_for(&call_id, progress);
        }
    }

    /// Puts the server's question to the person behind the oldest call in flight that has one.
    pub(crate) async fn elicit(&self, server: &str, request: ElicitRequestParams) -> ElicitResult {
        let host = self.calls().iter().find_map(|c| c.host.clone());
        ask(server, host.as_ref(), request).await
    }

    /// Sends `params` to the server for the call `cx`: its progress and questions reach `cx`
    /// while it runs, the input requests of a server that asks in rounds (`InputRequiredResult`)
    /// are answered through `cx`'s host as `elicitation/create` is, and dropping the future
    /// cancels the request at the server.
    pub(crate) async fn call(
        &self,
        peer: &Peer<RoleClient>,
        server: &str,
        mut params: CallToolRequestParams,
        cx: &CallContext,
    ) -> Result<CallToolResult, ServiceError> {
        for round in 0..MAX_ROUNDS {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let registration = self.register(cx);
            let handle = peer
                .send_cancellable_request(request, PeerRequestOptions::no_options())
                .await?;
            if let Some(registration) = &registration {
                registration.sent_with(&handle.progress_token);
            }
            let mut abandoned = Abandoned {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            let answer = handle.await_response().await;
            abandoned.id = None;
            // notifications read before the answer are handled on their own tasks: let them
            // reach the call before it ends (a report still running then is dropped)
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            drop(registration);
            let asked = match answer? {
                ServerResult::CallToolResult(result) => return Ok(result),
                ServerResult::InputRequiredResult(asked) => asked,
                // tasks are not declared by this client, so a server has no reason to answer one
                ServerResult::CreateTaskResult(_) => return Err(ServiceError::UnexpectedResponse),
                // a result with nothing but what every result may carry reads as another type
                other => {
                    return serde_json::to_value(other)
                        .and_then(serde_json::from_value)
                        .map_err(|_| ServiceError::UnexpectedResponse);
                }
            };
            let mut answers = InputResponses::new();
            for (key, request) in asked.input_requests.unwrap_or_default() {
                let answer = match request {
                    InputRequest::Elicitation(request) => {
                        serde_json::to_value(ask(server, cx.host.as_ref(), request.params).await)
                            .unwrap_or(Value::Null)
                    }
                    InputRequest::ListRoots(_) => json!({ "roots": [] }),
                    // sampling is not declared by this client
                    _ => return Err(ServiceError::UnexpectedResponse),
                };
                answers.insert(key, answer);
            }
            if answers.is_empty() {
                // the server only wants its state back: give it time before asking again
                tokio::time::sleep(Duration::from_millis(100 << round.min(4))).await;
            }
            params.input_responses = (!answers.is_empty()).then_some(answers);
            params.request_state = asked.request_state;
        }
        Err(ServiceError::UnexpectedResponse)
    }
}

/// How many rounds of questions a server that asks in rounds gets for one call.
const MAX_ROUNDS: usize = 8;

/// Puts `request` to `host`'s person, bounded by the question timeout; declined when there is
/// nobody to ask, when the host cannot ask, or for a URL to open (nothing here opens a URL a
/// third-party server names).
pub(crate) async fn ask(
    server: &str,
    host: Option<&Host>,
    request: ElicitRequestParams,
) -> ElicitResult {
    let decline = || ElicitResult::new(ElicitationAction::Decline);
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = request
    else {
        tracing::warn!(server = %server, "the MCP server asked the person to open a URL; declined");
        return decline();
    };
    let Some(host) = host else {
        tracing::warn!(
            server = %server,
            "the MCP server asked a question with nobody to put it to; declined"
        );
        return decline();
    };
    let form = Form {
        message: format!("The MCP server {server} asks: {message}"),
        schema: serde_json::to_value(&requested_schema).unwrap_or(Value::Null),
        timeout: DEFAULT_QUESTION_TIMEOUT,
    };
    answer_of(host, &form, form.timeout).await
}

async fn answer_of(host: &Host, form: &Form, timeout: Duration) -> ElicitResult {
    match tokio::time::timeout(timeout, host.get().ask(form)).await {
        Ok(Ok(Reply::Accepted(content))) => ElicitResult::new(ElicitationAction::Accept)
            .with_content(with_defaults(&form.schema, content)),
        Ok(Ok(Reply::Declined)) => ElicitResult::new(ElicitationAction::Decline),
        // the person dismissed it, or did not answer in time
        Ok(Ok(_)) | Err(_) => ElicitResult::new(ElicitationAction::Cancel),
        Ok(Err(e)) => {
            tracing::warn!("a question of an MCP server could not be asked: {e}");
            ElicitResult::new(ElicitationAction::Decline)
        }
    }
}

/// An accepted answer with the form's defaults for the fields the person left out, as the
/// form showed them pre-filled.
fn with_defaults(schema: &Value, mut content: Value) -> Value {
    let (Some(fields), Some(answer)) = (
        schema.get("properties").and_then(Value::as_object),
        content.as_object_mut(),
    ) else {
        return content;
    };
    for (name, field) in fields {
        if let Some(default) = field.get("default").filter(|_| !answer.contains_key(name)) {
            answer.insert(name.clone(), default.clone());
        }
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_answer_gets_the_defaults_of_the_fields_left_out_and_keeps_the_rest() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"},
        }});
        assert_eq!(
            with_defaults(&schema, json!({"age": 41})),
            json!({"name": "John Doe", "age": 41})
        );
        assert_eq!(with_defaults(&json!({}), json!({"a": 1})), json!({"a": 1}));
    }
}
