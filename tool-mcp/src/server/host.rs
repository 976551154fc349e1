//! The MCP client as the host of a call ([`tool_runtime::host::CallHost`]): a tool's log entries
//! become `notifications/message`, its questions `elicitation/create` (form mode), its sampling
//! `sampling/createMessage`, each only where the client declared what it takes.
//!
//! The level of `notifications/message` belongs to the tool server: `logging/setLevel` sets it
//! for the connection (an HTTP session, a stdio connection), `info` until the client sets one,
//! and is then passed on to an application's handler composed with
//! [`McpServer::with_app`](super::McpServer::with_app), whose own answer is the client's unless
//! it serves no logging at all. A client of MCP 2026-07-28 on, which takes no requests from the
//! server, is not asked questions nor sampled: the tool gets the structured error.
//!
//! A question goes to any client that declared form elicitation, not only to the hosts granted
//! in-band confirmation: the answer is data for the tool, which never approves a call (the
//! executor's policy confirms calls before they run).

// `logging` and `sampling` are deprecated by rmcp for the 2026-07-28 revision; clients of the
// earlier ones use them.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use futures::future::BoxFuture;
use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestParams, ElicitRequest,
    ElicitRequestParams, ElicitationAction, LoggingLevel, LoggingMessageNotificationParam,
    ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext, RoleServer};
use serde_json::{Value, json};
use tool_runtime::display::visible_lines;
use tool_runtime::host::{
    CallHost, Form, LogEntry, LogLevel, Reply, SampleRequest, Sampled, not_supported,
};
use tool_runtime::{ErrorCode, ToolError};

use super::elicit::Abandoned;
use super::progress::{Note, Notes};

/// The connection's logging level, shared by its calls: the least severe level sent.
#[derive(Debug, Clone)]
pub(crate) struct Level(Arc<AtomicU8>);

impl Default for Level {
    fn default() -> Self {
        Level(Arc::new(AtomicU8::new(LogLevel::Info as u8)))
    }
}

impl Level {
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(from_mcp(level) as u8, Ordering::Relaxed);
    }

    fn passes(&self, level: LogLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

fn from_mcp(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

fn to_mcp(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// The client of one `tools/call`, as its tool's host.
pub(crate) struct McpHost {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) notes: Notes,
    pub(crate) level: Level,
    /// The tool's name, the `logger` of its entries.
    pub(crate) tool: String,
    /// The client declared form elicitation and takes requests from the server.
    pub(crate) can_ask: bool,
    /// The client declared sampling and takes requests from the server.
    pub(crate) can_sample: bool,
    /// Cancelled when the client sends `notifications/cancelled` for the call.
    /// Whether the request's cancellation token has fired.
    pub(crate) cancelled: Box<dyn Fn() -> bool + Send + Sync>,
}

impl McpHost {
    /// What the client of `context` can do for a call to `tool`.
    pub(crate) fn of(
        context: &RequestContext<RoleServer>,
        notes: Notes,
        level: Level,
        tool: &str,
        in_rounds: bool,
    ) -> Self {
        let caps = context.client_capabilities();
        McpHost {
            peer: context.peer.clone(),
            notes,
            level,
            tool: tool.to_owned(),
            can_ask: !in_rounds && super::elicit::supported(context),
            can_sample: !in_rounds && caps.is_some_and(|c| c.sampling.is_some()),
            cancelled: {
                let ct = context.ct.clone();
                Box::new(move || ct.is_cancelled())
            },
        }
    }
}

impl CallHost for McpHost {
    fn cancelled_by(&self) -> Option<String> {
        (self.cancelled)().then(|| "the client".to_owned())
    }

    fn log(&self, entry: LogEntry) {
        if !self.level.passes(entry.level) {
            return;
        }
        let mut param =
            LoggingMessageNotificationParam::new(to_mcp(entry.level), Value::String(entry.message));
        param.logger = Some(self.tool.clone());
        self.notes.send(Note::Log(param));
    }

    fn ask<'a>(&'a self, form: &'a Form) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
        Box::pin(async move {
            if !self.can_ask {
                return Err(not_supported(
                    "the MCP client did not declare form elicitation, so there is nobody to ask",
                ));
            }
            let params: ElicitRequestParams = serde_json::from_value(json!({
                "mode": "form",
                "message": visible_lines(&form.message),
                "requestedSchema": form.schema,
            }))
            .map_err(|e| {
                ToolError::new(
                    ErrorCode::INVALID_FORM,
                    format!("the question is not a form MCP elicitation takes: {e}"),
                )
            })?;
            let asked = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            let result = self.request(asked).await?;
            let ClientResult::ElicitResult(result) = result else {
                return Err(failed("answered the question with another result"));
            };
            Ok(match result.action {
                ElicitationAction::Accept => {
                    Reply::Accepted(result.content.unwrap_or_else(|| json!({})))
                }
                ElicitationAction::Decline => Reply::Declined,
                // an action this version does not know is no answer
                _ => Reply::Cancelled,
            })
        })
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, ToolError>> {
        Box::pin(async move {
            if !self.can_sample {
                return Err(not_supported(
                    "the MCP client did not declare sampling, so there is no model to ask",
                ));
            }
            let messages: Vec<Value> = request
                .messages
                .iter()
                .map(|m| json!({"role": m.role, "content": {"type": "text", "text": m.text}}))
                .collect();
            let mut params = json!({ "messages": messages, "maxTokens": request.max_tokens });
            if let Some(system) = &request.system {
                params["systemPrompt"] = json!(system);
            }
            if let Some(t) = request.temperature {
                params["temperature"] = json!(t);
            }
            let params: CreateMessageRequestParams =
                serde_json::from_value(params).map_err(|e| {
                    ToolError::new(
                        ErrorCode::INVALID_ARGUMENTS,
                        format!("the sampling request is not one MCP takes: {e}"),
                    )
                })?;
            let asked = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
            let ClientResult::CreateMessageResult(result) = self.request(asked).await? else {
                return Err(failed("answered the sampling request with another result"));
            };
            let message = serde_json::to_value(&result.message).unwrap_or(Value::Null);
            let text = match &message["content"] {
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                block => block["text"].as_str().unwrap_or_default().to_owned(),
            };
            Ok(Sampled {
                text,
                model: result.model.clone(),
                stop_reason: result.stop_reason.clone(),
            })
        })
    }
}

impl McpHost {
    /// Sends `request` and waits for the client's answer; dropped before it comes (the question
    /// timed out, the call was cancelled), the client is told to drop the request.
    async fn request(&self, request: ServerRequest) -> Result<ClientResult, ToolError> {
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| failed(&format!("could not be sent the request: {e}")))?;
        let mut abandoned = Abandoned(Some((self.peer.clone(), handle.id.clone())));
        let result = handle.await_response().await;
        abandoned.0 = None;
        result.map_err(|e| match e {
            rmcp::service::ServiceError::McpError(error) => ToolError::new(
                ErrorCode::NOT_SUPPORTED_BY_CALLER,
                format!("the MCP client refused the request: {}", error.message),
            ),
            other => failed(&format!("failed to answer: {other}")),
        })
    }
}

fn failed(what: &str) -> ToolError {
    ToolError::new(
        ErrorCode::EXECUTION_FAILED,
        format!("the MCP client {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_passes_entries_at_or_above_it() {
        let level = Level::default();
        assert!(level.passes(LogLevel::Info) && !level.passes(LogLevel::Debug));
        level.set(LoggingLevel::Error);
        assert!(!level.passes(LogLevel::Warning) && level.passes(LogLevel::Critical));
        level.set(LoggingLevel::Debug);
        assert!(level.passes(LogLevel::Debug));
    }
}
