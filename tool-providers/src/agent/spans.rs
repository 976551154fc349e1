//! The run's and each model request's `tracing` spans, named and attributed after OpenTelemetry's
//! GenAI semantic conventions (`invoke_agent`, `chat {model}`), so that an OpenTelemetry layer
//! (the `otel` feature's `telemetry` module, or any other) exports them as such. The executor's
//! `execute_tool {tool}` spans open inside the run's span, so a trace holds the whole run.
//!
//! What a span carries is chosen so that it can leave the machine: providers, models, token
//! counts, ids, statuses and error kinds. Never the conversation, the user's request, tool
//! arguments or results, or a provider's error text (which can quote the request).

use serde_json::Value;
use tracing::Instrument;
use tracing::field::Empty;

use crate::codec::Provider;
use crate::http::{HttpErrorKind, Usage};

use super::{Agent, AgentError, Progress, RunReport, RunStatus};

/// The `gen_ai.provider.name` of a provider (the conventions' well-known values where there is
/// one: both OpenAI APIs are `openai`, Gemini is `gcp.gemini`).
pub(crate) fn provider_name(p: Provider) -> &'static str {
    match p {
        Provider::OpenAiChat | Provider::OpenAiResponses => "openai",
        Provider::Anthropic => "anthropic",
        Provider::Ollama => "ollama",
        Provider::Gemini => "gcp.gemini",
        Provider::Mcp => "mcp",
    }
}

/// Host and port of a base URL, never its user-info or path.
fn server(base_url: &str) -> (String, Option<u16>) {
    match reqwest::Url::parse(base_url) {
        Ok(u) => (
            u.host_str().unwrap_or_default().to_owned(),
            u.port_or_known_default(),
        ),
        Err(_) => (String::new(), None),
    }
}

/// A count as an OTLP integer: `tracing-opentelemetry` exports a `u64` as a string.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A short, stable name for what went wrong: it becomes `error.type`.
fn error_type(e: &AgentError) -> String {
    match e.cause() {
        AgentError::Http(h) => match h.kind {
            HttpErrorKind::Status(s) => s.to_string(),
            HttpErrorKind::MissingKey => "missing_key".into(),
            HttpErrorKind::Connect => "connect".into(),
            HttpErrorKind::Timeout => "timeout".into(),
            HttpErrorKind::Decode => "decode".into(),
            HttpErrorKind::Stream => "stream".into(),
            HttpErrorKind::Disconnected => "disconnected".into(),
            HttpErrorKind::Config => "config".into(),
            HttpErrorKind::TooLarge => "too_large".into(),
        },
        AgentError::Codec(_) => "codec".into(),
        AgentError::RetriesExhausted { .. } => "retries_exhausted".into(),
        AgentError::Selection(_) => "selection".into(),
        AgentError::Resume(_) => "resume".into(),
        AgentError::Store(_) => "store".into(),
        AgentError::LeaseLost(_) => "lease_lost".into(),
        AgentError::Claimed { .. } => "claimed".into(),
        AgentError::Checkpoint(_) => "checkpoint".into(),
        AgentError::Interrupted { .. } => "interrupted".into(),
    }
}

/// The `chat {model}` span of one model request; the answer's model and token counts are
/// recorded by [`record_chat`] and [`record_response_model`].
pub(crate) fn chat(provider: Provider, model: &str, base_url: &str) -> tracing::Span {
    let (address, port) = server(base_url);
    tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        server.address = address,
        server.port = port.map(i64::from),
        error.type = Empty,
    )
}

/// The model a response (or one stream event) says answered, per provider: OpenAI, Ollama and
/// Anthropic's whole responses have `model`, Anthropic's stream `message.model`, OpenAI
/// Responses' stream `response.model`, Gemini `modelVersion`.
pub(crate) fn record_response_model(span: &tracing::Span, body: &Value) {
    let found = [
        "/model",
        "/message/model",
        "/response/model",
        "/modelVersion",
    ]
    .iter()
    .find_map(|p| body.pointer(p).and_then(Value::as_str))
    .filter(|m| !m.is_empty());
    if let Some(model) = found {
        span.record("gen_ai.response.model", model);
    }
}

/// Records a model request's token counts, or its failure.
pub(crate) fn record_chat(span: &tracing::Span, result: Result<&Usage, &AgentError>) {
    match result {
        Ok(usage) => {
            span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
            span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
        }
        Err(e) => {
            span.record("otel.status_code", "error");
            span.record("error.type", error_type(e).as_str());
        }
    }
}

impl Agent {
    /// Drives the run inside its `invoke_agent` span (the parent of every `chat` and
    /// `execute_tool` span of the run), and records how it ended.
    pub(super) async fn drive_traced(&self, p: &mut Progress) -> Result<RunReport, AgentError> {
        let provider = self.model.provider();
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = %format_args!("invoke_agent {}", provider_name(provider)),
            otel.kind = "internal",
            otel.status_code = Empty,
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = provider_name(provider),
            gen_ai.request.model = self.model.model_name(),
            gen_ai.conversation.id = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            correlation_id = %p.correlation_id,
            agent.status = Empty,
            agent.iterations = Empty,
            error.type = Empty,
        );
        if let Some(session) = &self.config.session {
            span.record("gen_ai.conversation.id", session.as_str());
        }
        let result = self.drive(p).instrument(span.clone()).await;
        span.record("gen_ai.usage.input_tokens", int(p.usage.input_tokens));
        span.record("gen_ai.usage.output_tokens", int(p.usage.output_tokens));
        span.record("agent.iterations", i64::from(p.iterations));
        match &result {
            Ok(report) => {
                let status = match report.status {
                    RunStatus::Answered => "answered",
                    RunStatus::MaxIterations => "max_iterations",
                    RunStatus::Suspended { .. } => "suspended",
                };
                span.record("agent.status", status);
            }
            Err(e) => {
                span.record("agent.status", "failed");
                span.record("otel.status_code", "error");
                span.record("error.type", error_type(e).as_str());
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_host_and_port_without_credentials() {
        assert_eq!(
            server("https://user:pw@api.example.com/v1"),
            ("api.example.com".to_owned(), Some(443))
        );
        assert_eq!(
            server("http://127.0.0.1:8089"),
            ("127.0.0.1".to_owned(), Some(8089))
        );
        assert_eq!(server("not a url"), (String::new(), None));
    }
}
