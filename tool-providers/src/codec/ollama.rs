//! Ollama `/api/chat`, wire README §4.
//!
//! Declarations use OpenAI's envelope without `strict`. Ollama's server keeps only a few schema
//! keywords and drops `$ref`, so schemas with references are sent with them inlined (a recursive
//! schema, which cannot be inlined, is sent as is); the canonical schema still validates every
//! call here. Ollama has no tool choice: [`ToolChoice::None`] declares no tools and an optional
//! allowed subset declares only the subset, while forcing a call (`Required`, `Named`, a required
//! subset) and the parallel switch are refused, since the model could not be held to them.
//! Arguments arrive as objects; calls arrive whole, so a streamed call is complete in the chunk
//! that carries it. Servers before mid-2025 send no call ids: stable ones are generated.

use serde_json::{Map, Value, json};
use tool_runtime::{ToolCall, definition::ToolDefinition};

use super::ids::is_generated;
use super::json::{self, array_opt, object, str_opt, str_req};
use super::parameters_of;
use super::stream::{Gathered, StreamAccumulator};
use super::{
    ChoiceEncoding, Codec, CodecError, Decoded, Provider, StopReason, ToolChoice, ToolConfig,
    ToolResult, spec_of,
};

const P: Provider = Provider::Ollama;

/// The Ollama `/api/chat` codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ollama;

fn calls_of(message: &Value, at: &str, first_position: usize) -> Result<Vec<ToolCall>, CodecError> {
    let mut calls = Vec::new();
    for (i, tc) in array_opt(P, message, "tool_calls", at)?.iter().enumerate() {
        let at = format!("{at}/tool_calls/{i}");
        let function = tc
            .get("function")
            .ok_or_else(|| CodecError::malformed(P, format!("{at}/function"), "missing"))?;
        let name = str_req(P, function, "name", &format!("{at}/function"))?;
        calls.push(json::call(
            P,
            first_position + i,
            str_opt(tc, "id"),
            name,
            json::object_arguments(function.get("arguments")),
        ));
    }
    Ok(calls)
}

fn stop_of(body: &Value, has_calls: bool) -> Option<StopReason> {
    if has_calls {
        return Some(StopReason::ToolCalls);
    }
    if body.get("done") != Some(&Value::Bool(true)) {
        return None;
    }
    Some(match str_opt(body, "done_reason") {
        Some("stop") | None => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    })
}

impl Codec for Ollama {
    fn provider(&self) -> Provider {
        P
    }

    fn prebuilt_view(&self) -> Option<&'static str> {
        Some("ollama")
    }

    fn declare(&self, def: &ToolDefinition) -> Result<Value, CodecError> {
        let parameters = parameters_of(def)?;
        Ok(tool_wire::declare::ollama(&spec_of(def, &parameters)))
    }

    fn encode_choice(&self, config: &ToolConfig) -> Result<ChoiceEncoding, CodecError> {
        if config.parallel.is_some() {
            return Err(CodecError::unsupported(P, "switching parallel tool calls"));
        }
        let only = match &config.choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(Vec::new()),
            ToolChoice::Allowed {
                tools,
                required: false,
            } => Some(tools.clone()),
            ToolChoice::Required | ToolChoice::Named(_) | ToolChoice::Allowed { .. } => {
                return Err(CodecError::unsupported(P, "forcing a tool call"));
            }
            ToolChoice::Validated { .. } => {
                return Err(CodecError::unsupported(P, "schema-validated tool choice"));
            }
        };
        Ok(ChoiceEncoding {
            fields: Map::new(),
            only,
        })
    }

    fn decode_response(&self, body: &Value) -> Result<Decoded, CodecError> {
        object(P, body, "")?;
        if let Some(e) = body.get("error") {
            return Err(CodecError::malformed(
                P,
                "/error",
                format!("the response is an error: {e}"),
            ));
        }
        let message = body
            .get("message")
            .ok_or_else(|| CodecError::malformed(P, "/message", "missing"))?;
        object(P, message, "/message")?;
        let calls = calls_of(message, "/message", 0)?;
        Ok(Decoded {
            text: str_opt(message, "content").unwrap_or_default().to_owned(),
            stop: stop_of(body, !calls.is_empty()).unwrap_or(StopReason::Unknown),
            calls,
            assistant: Some(message.clone()),
        })
    }

    fn accumulator(&self) -> Box<dyn StreamAccumulator> {
        Box::<OllamaAccumulator>::default()
    }

    fn encode_assistant(&self, text: &str, calls: &[ToolCall]) -> Vec<Value> {
        let mut msg = json!({"role": "assistant", "content": text});
        if !calls.is_empty() {
            msg["tool_calls"] = calls
                .iter()
                .map(|c| {
                    let mut tc = json!({"function": {"name": c.name,
                        "arguments": json::arguments_value(&c.arguments)}});
                    if !is_generated(&c.id) {
                        tc["id"] = json!(c.id);
                    }
                    tc
                })
                .collect();
        }
        vec![msg]
    }

    fn encode_results(&self, results: &[ToolResult]) -> Vec<Value> {
        results
            .iter()
            .map(|r| {
                let mut msg =
                    json!({"role": "tool", "tool_name": r.name, "content": r.outcome.to_text()});
                if !is_generated(&r.call_id) {
                    msg["tool_call_id"] = json!(r.call_id);
                }
                msg
            })
            .collect()
    }
}

/// NDJSON chunks; every call arrives whole.
#[derive(Debug, Default)]
struct OllamaAccumulator {
    gathered: Gathered,
}

impl StreamAccumulator for OllamaAccumulator {
    fn push(&mut self, event: &Value) -> Result<Vec<ToolCall>, CodecError> {
        if let Some(e) = event.get("error") {
            return Err(CodecError::malformed(
                P,
                "/error",
                format!("the stream reported an error: {e}"),
            ));
        }
        let mut done = Vec::new();
        if let Some(message) = event.get("message") {
            if let Some(t) = str_opt(message, "content") {
                self.gathered.text.push_str(t);
            }
            done = calls_of(message, "/message", self.gathered.calls.len())?;
            self.gathered.calls.extend(done.iter().cloned());
        }
        // only the closing line (`done: true`) says the answer is whole: calls seen before it
        // do not, or a stream cut short would look complete
        if event.get("done") == Some(&Value::Bool(true))
            && let Some(stop) = stop_of(event, !self.gathered.calls.is_empty())
        {
            self.gathered.stop = Some(stop);
        }
        Ok(done)
    }

    fn finish(self: Box<Self>) -> Result<Decoded, CodecError> {
        Ok(self.gathered.into_decoded())
    }
}
