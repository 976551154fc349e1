//! A chat model behind one provider: the HTTP client plus the provider's codec. It builds each
//! request (system prompt, conversation, declarations from the cache), sends it (streamed or not)
//! and decodes the answer, natively or through the prompt-based fallback.

use serde_json::{Value, json};
use tool_runtime::definition::ToolDefinition;

use crate::codec::{
    Codec, CodecError, DeclarationCache, Decoded, Provider, StopReason, ToolConfig, ToolResult,
    prompt,
};
use crate::http::{HttpClient, HttpError, HttpErrorKind, RequestBody, Usage};

use super::{AgentError, spans};
use tracing::Instrument;

/// How the model is told about tools. Parses from `native` and `prompt` (for a command-line
/// flag or a setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// The provider's native function calling.
    #[default]
    Native,
    /// For models without native function calling: tools described in the system
    /// prompt, calls parsed from the text, results sent back as a user message.
    Prompt,
}

impl ToolMode {
    /// The setting's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolMode::Native => "native",
            ToolMode::Prompt => "prompt",
        }
    }
}

impl std::fmt::Display for ToolMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ToolMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "native" => Ok(ToolMode::Native),
            "prompt" => Ok(ToolMode::Prompt),
            other => Err(format!(
                "unknown tool mode {other:?}: expected `native` or `prompt`"
            )),
        }
    }
}

/// One model answer.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Text, calls and stop reason.
    pub decoded: Decoded,
    /// Tokens this request spent.
    pub usage: Usage,
    /// Call blocks the prompt-based fallback could not read (errors for the model).
    pub unreadable: Vec<tool_runtime::ToolError>,
}

/// A client and a codec for the same provider.
pub struct ChatModel {
    client: HttpClient,
    codec: Box<dyn Codec>,
    cache: DeclarationCache,
    mode: ToolMode,
    stream: bool,
}

impl std::fmt::Debug for ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("client", &self.client)
            .field("mode", &self.mode)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl ChatModel {
    /// A model speaking the client's provider with that provider's default codec.
    pub fn new(client: HttpClient) -> Self {
        let codec = client.provider().codec();
        ChatModel {
            client,
            codec,
            cache: DeclarationCache::new(),
            mode: ToolMode::Native,
            stream: false,
        }
    }

    /// Uses another codec of the same provider (for instance one with other strict settings).
    pub fn with_codec(mut self, codec: Box<dyn Codec>) -> Self {
        self.codec = codec;
        self
    }

    /// Streams responses (text deltas reach the event sink as they arrive).
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Chooses native or prompt-based tool calling.
    pub fn tool_mode(mut self, mode: ToolMode) -> Self {
        self.mode = mode;
        self
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.client.provider()
    }

    /// How the client retries failed requests.
    pub fn retry_policy(&self) -> crate::http::RetryPolicy {
        self.client.config().retry
    }

    /// The model asked (as the client is configured).
    pub fn model_name(&self) -> &str {
        &self.client.config().model
    }

    /// The codec.
    pub fn codec(&self) -> &dyn Codec {
        self.codec.as_ref()
    }

    /// The tool mode.
    pub fn mode(&self) -> ToolMode {
        self.mode
    }

    /// The conversation entry for a user's text.
    pub fn user_message(&self, text: &str) -> Value {
        match self.provider() {
            Provider::Gemini => json!({"role": "user", "parts": [{"text": text}]}),
            _ => json!({"role": "user", "content": text}),
        }
    }

    /// The conversation entries for an assistant turn: the provider's own message when the
    /// response was not streamed (keeps provider-only data), else rebuilt by the codec.
    pub fn assistant_entries(&self, decoded: &Decoded) -> Vec<Value> {
        self.assistant_entries_in(self.mode, decoded)
    }

    pub(crate) fn assistant_entries_in(&self, mode: ToolMode, decoded: &Decoded) -> Vec<Value> {
        if mode == ToolMode::Prompt {
            return vec![self.text_message("assistant", &decoded.text_with_calls())];
        }
        match &decoded.assistant {
            Some(Value::Array(items)) => items.clone(),
            Some(v) => vec![v.clone()],
            None => self.codec.encode_assistant(&decoded.text, &decoded.calls),
        }
    }

    /// The conversation entries carrying the results of a turn's calls.
    pub fn result_entries(&self, results: &[ToolResult]) -> Vec<Value> {
        self.result_entries_in(self.mode, results)
    }

    pub(crate) fn result_entries_in(&self, mode: ToolMode, results: &[ToolResult]) -> Vec<Value> {
        if results.is_empty() {
            return Vec::new();
        }
        if mode == ToolMode::Prompt {
            let lines: Vec<String> = results
                .iter()
                .map(|r| {
                    json!({"tool": r.name, "call_id": r.call_id, "result": r.outcome.to_value()})
                        .to_string()
                })
                .collect();
            return vec![self.user_message(&format!(
                "Tool results (one JSON object per call):\n{}",
                lines.join("\n")
            ))];
        }
        self.codec.encode_results(results)
    }

    fn text_message(&self, role: &str, text: &str) -> Value {
        match self.provider() {
            Provider::Gemini => {
                let role = if role == "assistant" { "model" } else { role };
                json!({"role": role, "parts": [{"text": text}]})
            }
            _ => json!({"role": role, "content": text}),
        }
    }

    /// The request body for one turn. The tool declarations come from the cache as one
    /// pre-serialized fragment and stay text: a request declaring 100 tools parses and
    /// serializes none of their schemas.
    pub fn request(
        &self,
        system: Option<&str>,
        conversation: &[Value],
        tools: &[&ToolDefinition],
        config: &ToolConfig,
    ) -> Result<RequestBody, AgentError> {
        self.request_in(self.mode, system, conversation, tools, config)
    }

    pub(crate) fn request_in(
        &self,
        mode: ToolMode,
        system: Option<&str>,
        conversation: &[Value],
        tools: &[&ToolDefinition],
        config: &ToolConfig,
    ) -> Result<RequestBody, AgentError> {
        let p = self.provider();
        let mut system = system.map(str::to_owned);
        let mut body = RequestBody::new();
        if !tools.is_empty() {
            match mode {
                ToolMode::Native => {
                    let raw = self
                        .cache
                        .encode_tools_text(self.codec.as_ref(), tools, config)
                        .map_err(AgentError::Codec)?;
                    body = body.with_raw_object(raw);
                }
                ToolMode::Prompt => {
                    let section = prompt::system_prompt(tools);
                    system = Some(match system {
                        Some(s) => format!("{s}\n\n{section}"),
                        None => section,
                    });
                }
            }
        }
        let whole = || Value::Array(conversation.to_vec());
        match p {
            Provider::OpenAiChat | Provider::Ollama => {
                let mut messages = Vec::with_capacity(conversation.len() + 1);
                if let Some(s) = system {
                    messages.push(json!({"role": "system", "content": s}));
                }
                messages.extend(conversation.iter().cloned());
                body.insert("messages", Value::Array(messages));
            }
            Provider::OpenAiResponses => {
                if let Some(s) = system {
                    body.insert("instructions", Value::String(s));
                }
                body.insert("input", whole());
            }
            Provider::Anthropic => {
                if let Some(s) = system {
                    body.insert("system", Value::String(s));
                }
                body.insert("messages", whole());
            }
            Provider::Gemini => {
                if let Some(s) = system {
                    body.insert("systemInstruction", json!({"parts": [{"text": s}]}));
                }
                body.insert("contents", whole());
            }
            Provider::Mcp => {
                return Err(AgentError::Codec(CodecError::Unsupported {
                    provider: p,
                    feature: "chat requests (MCP is a tool protocol)".into(),
                }));
            }
        }
        Ok(body)
    }

    /// Sends one turn and decodes the answer; `on_text` receives text as it arrives (the whole
    /// text at once when not streaming).
    pub async fn complete(
        &self,
        body: &RequestBody,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Turn, AgentError> {
        self.complete_in(self.mode, body, on_text).await
    }

    /// One request inside its `chat {model}` span, with the answer's model and tokens on it.
    pub(crate) async fn complete_in(
        &self,
        mode: ToolMode,
        body: &RequestBody,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Turn, AgentError> {
        let config = self.client.config();
        let span = spans::chat(self.provider(), &config.model, &config.base_url);
        let result = self
            .complete_untraced(mode, body, on_text, &span)
            .instrument(span.clone())
            .await;
        spans::record_chat(&span, result.as_ref().map(|t| &t.usage));
        result
    }

    async fn complete_untraced(
        &self,
        mode: ToolMode,
        body: &RequestBody,
        on_text: &mut (dyn FnMut(&str) + Send),
        span: &tracing::Span,
    ) -> Result<Turn, AgentError> {
        let (mut decoded, usage) = if self.stream {
            use futures::StreamExt;
            let mut events = self
                .client
                .stream_body(body)
                .await
                .map_err(AgentError::Http)?;
            let mut acc = self.codec.accumulator();
            while let Some(event) = events.next().await {
                let event = event.map_err(AgentError::Http)?;
                spans::record_response_model(span, &event);
                if let Some(delta) = text_delta(self.provider(), &event) {
                    on_text(&delta);
                }
                acc.push(&event).map_err(AgentError::Codec)?;
            }
            let usage = events.usage();
            let decoded = acc.finish().map_err(AgentError::Codec)?;
            if decoded.stop == StopReason::Unknown {
                // the server closed a stream that had not finished: none of its calls may run,
                // and the turn is asked again like any answer that broke off
                return Err(AgentError::Http(HttpError::new(
                    self.provider(),
                    HttpErrorKind::Disconnected,
                    "the stream ended before the model's stop event, so the answer may be cut \
                     short; none of its calls were run",
                    "ask again; if it keeps happening, check the server or proxy in between",
                )));
            }
            (decoded, usage)
        } else {
            let reply = self
                .client
                .send_body(body)
                .await
                .map_err(AgentError::Http)?;
            spans::record_response_model(span, &reply.body);
            let decoded = self
                .codec
                .decode_response(&reply.body)
                .map_err(AgentError::Codec)?;
            if !decoded.text.is_empty() {
                on_text(&decoded.text);
            }
            (decoded, reply.usage)
        };
        let mut unreadable = Vec::new();
        if mode == ToolMode::Prompt {
            let parsed = prompt::parse_calls(&decoded.text);
            decoded.text = parsed.text.trim().to_owned();
            decoded.calls = parsed.calls;
            unreadable = parsed.errors;
            if !decoded.calls.is_empty() {
                decoded.stop = StopReason::ToolCalls;
            }
            // The verbatim message holds the raw text; the fallback echoes its own rendering.
            decoded.assistant = None;
        }
        Ok(Turn {
            decoded,
            usage,
            unreadable,
        })
    }
}

/// The text a stream event adds, per provider.
fn text_delta(provider: Provider, event: &Value) -> Option<String> {
    let s = match provider {
        Provider::OpenAiChat => event
            .pointer("/choices/0/delta/content")?
            .as_str()?
            .to_owned(),
        Provider::OpenAiResponses => {
            if event.get("type")?.as_str()? != "response.output_text.delta" {
                return None;
            }
            event.get("delta")?.as_str()?.to_owned()
        }
        Provider::Anthropic => {
            if event.pointer("/delta/type")?.as_str()? != "text_delta" {
                return None;
            }
            event.pointer("/delta/text")?.as_str()?.to_owned()
        }
        Provider::Ollama => event.pointer("/message/content")?.as_str()?.to_owned(),
        Provider::Gemini => event
            .pointer("/candidates/0/content/parts")?
            .as_array()?
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Provider::Mcp => return None,
    };
    (!s.is_empty()).then_some(s)
}

/// Renders a decoded turn's calls back into the fallback's text form, for the echo.
trait TextWithCalls {
    fn text_with_calls(&self) -> String;
}

impl TextWithCalls for Decoded {
    fn text_with_calls(&self) -> String {
        let mut out = self.text.clone();
        for c in &self.calls {
            let args = match &c.arguments {
                tool_runtime::hydrate::Arguments::Json(v) => v.clone(),
                tool_runtime::hydrate::Arguments::Text(t) => {
                    serde_json::from_str(t).unwrap_or(Value::String(t.clone()))
                }
            };
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!(
                "<tool_call>{}</tool_call>",
                json!({"name": c.name, "arguments": args})
            ));
        }
        out
    }
}

/// Whether a failed request was refused because of its native tool declarations: a client
/// error or server error whose message speaks of tools or functions (Ollama's "does not support
/// tools", llama.cpp's "tools param requires --jinja flag", vLLM's "auto tool choice requires
/// --enable-auto-tool-choice"). Authentication, rate limits and unknown paths are not that.
pub(super) fn refuses_tools(e: &HttpError) -> bool {
    let HttpErrorKind::Status(status) = e.kind else {
        return false;
    };
    if matches!(status, 401 | 403 | 404 | 408 | 429) || !(400..600).contains(&status) {
        return false;
    }
    let m = e.message.to_ascii_lowercase();
    // A server error naming a "function" is too often about something else.
    m.contains("tool") || (status < 500 && m.contains("function"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_deltas_are_read_from_every_providers_stream_events() {
        let cases = [
            (
                Provider::OpenAiChat,
                json!({"choices":[{"delta":{"content":"Hel"}}]}),
                Some("Hel"),
            ),
            (
                Provider::OpenAiChat,
                json!({"choices":[{"delta":{"tool_calls":[]}}]}),
                None,
            ),
            (
                Provider::OpenAiResponses,
                json!({"type":"response.output_text.delta","delta":"lo"}),
                Some("lo"),
            ),
            (
                Provider::Anthropic,
                json!({"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}),
                Some("x"),
            ),
            (
                Provider::Anthropic,
                json!({"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}),
                None,
            ),
            (
                Provider::Ollama,
                json!({"message":{"content":"y"}}),
                Some("y"),
            ),
            (
                Provider::Gemini,
                json!({"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}]}}]}),
                Some("ab"),
            ),
        ];
        for (p, ev, want) in cases {
            assert_eq!(text_delta(p, &ev).as_deref(), want, "{p}: {ev}");
        }
    }
}
