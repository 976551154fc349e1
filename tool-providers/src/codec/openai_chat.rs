//! OpenAI Chat Completions (`POST /v1/chat/completions`), wire README §1 and §7.
//!
//! Declarations are `{"type": "function", "function": {name, description, parameters, strict}}`.
//! `strict` is always sent explicitly (`false` when the strict view is not used) so the request
//! says exactly which mode applies. Arguments come back as a JSON string; hydration parses and,
//! once, repairs them.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use tool_runtime::{ToolCall, definition::ToolDefinition};

use super::json::{self, array_opt, object, str_opt};
use super::parameters_of;
use super::stream::{Gathered, StreamAccumulator};
use super::{
    ChoiceEncoding, Codec, CodecError, Decoded, Provider, StopReason, ToolChoice, ToolConfig,
    ToolResult, spec_of,
};

const P: Provider = Provider::OpenAiChat;

pub use tool_wire::StrictPolicy;

/// The refusal of the strict view as the codec's error, naming the tool and the API.
pub(crate) fn strict_refusal(
    provider: Provider,
    name: &str,
    e: tool_wire::ViewError,
) -> CodecError {
    CodecError::Schema {
        tool: name.to_owned(),
        view: if provider == Provider::OpenAiChat {
            "openai strict"
        } else {
            "openai-responses strict"
        },
        pointer: e.pointer,
        reason: e.reason,
    }
}

/// The OpenAI Chat Completions codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiChat {
    /// When to send the strict view.
    pub strict: StrictPolicy,
}

impl OpenAiChat {
    /// A codec with this strict policy.
    pub fn with_strict(strict: StrictPolicy) -> Self {
        OpenAiChat { strict }
    }
}

fn function_ref(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name}})
}

pub(crate) fn stop_reason(reason: Option<&str>) -> Option<StopReason> {
    Some(match reason? {
        "tool_calls" | "function_call" => StopReason::ToolCalls,
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    })
}

/// Text of a `content` that is a string, `null`, or an array of text parts.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

impl Codec for OpenAiChat {
    fn provider(&self) -> Provider {
        P
    }

    fn view_key(&self) -> u64 {
        self.strict as u64
    }

    fn prebuilt_view(&self) -> Option<&'static str> {
        (self.strict == StrictPolicy::AsDeclared).then_some("openai")
    }

    fn declare(&self, def: &ToolDefinition) -> Result<Value, CodecError> {
        let parameters = parameters_of(def)?;
        tool_wire::declare::openai_chat(&spec_of(def, &parameters), self.strict)
            .map_err(|e| strict_refusal(P, &def.name, e))
    }

    fn encode_choice(&self, config: &ToolConfig) -> Result<ChoiceEncoding, CodecError> {
        let choice = match &config.choice {
            ToolChoice::Validated { .. } => {
                return Err(CodecError::unsupported(
                    P,
                    "schema-validated tool choice (declare the tools strict instead)",
                ));
            }
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Named(name) => function_ref(name),
            ToolChoice::Allowed { tools, required } => json!({
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": if *required { "required" } else { "auto" },
                    "tools": tools.iter().map(|n| function_ref(n)).collect::<Vec<_>>(),
                }
            }),
        };
        let mut fields = Map::new();
        fields.insert("tool_choice".into(), choice);
        if let Some(p) = config.parallel {
            fields.insert("parallel_tool_calls".into(), json!(p));
        }
        Ok(ChoiceEncoding { fields, only: None })
    }

    fn decode_response(&self, body: &Value) -> Result<Decoded, CodecError> {
        object(P, body, "")?;
        let choices = array_opt(P, body, "choices", "")?;
        let choice = choices
            .first()
            .ok_or_else(|| CodecError::malformed(P, "/choices", "no choices in the response"))?;
        if choices.len() > 1 {
            // reading the first would drop the others' calls in silence
            return Err(CodecError::malformed(
                P,
                "/choices",
                format!(
                    "{} choices in the response; one is read per turn (do not ask for n > 1)",
                    choices.len()
                ),
            ));
        }
        let message = choice
            .get("message")
            .ok_or_else(|| CodecError::malformed(P, "/choices/0/message", "missing"))?;
        object(P, message, "/choices/0/message")?;
        let mut calls = Vec::new();
        for (i, tc) in array_opt(P, message, "tool_calls", "/choices/0/message")?
            .iter()
            .enumerate()
        {
            let at = format!("/choices/0/message/tool_calls/{i}");
            if let Some(kind) = str_opt(tc, "type").filter(|&k| k != "function") {
                // a custom or built-in tool call has no function to hydrate
                return Err(CodecError::malformed(
                    P,
                    format!("{at}/type"),
                    format!("a tool call of type {kind:?}; only function tools are declared"),
                ));
            }
            let function = tc
                .get("function")
                .ok_or_else(|| CodecError::malformed(P, format!("{at}/function"), "missing"))?;
            let name = json::str_req(P, function, "name", &format!("{at}/function"))?;
            calls.push(json::call(
                P,
                i,
                str_opt(tc, "id"),
                name,
                json::arguments(function.get("arguments")),
            ));
        }
        let mut text = content_text(message.get("content"));
        if let Some(refusal) = str_opt(message, "refusal") {
            text.push_str(refusal);
        }
        Ok(Decoded {
            text,
            calls,
            stop: stop_reason(str_opt(choice, "finish_reason")).unwrap_or(StopReason::Unknown),
            assistant: Some(message.clone()),
        })
    }

    fn accumulator(&self) -> Box<dyn StreamAccumulator> {
        Box::<ChatAccumulator>::default()
    }

    fn encode_assistant(&self, text: &str, calls: &[ToolCall]) -> Vec<Value> {
        let mut msg = Map::new();
        msg.insert("role".into(), json!("assistant"));
        msg.insert(
            "content".into(),
            if text.is_empty() {
                Value::Null
            } else {
                json!(text)
            },
        );
        if !calls.is_empty() {
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function", "function": {
                        "name": c.name, "arguments": json::arguments_text(&c.arguments)}})
                })
                .collect();
            msg.insert("tool_calls".into(), Value::Array(tool_calls));
        }
        vec![Value::Object(msg)]
    }

    fn encode_results(&self, results: &[ToolResult]) -> Vec<Value> {
        results
            .iter()
            .map(|r| json!({"role": "tool", "tool_call_id": r.call_id, "content": r.outcome.to_text()}))
            .collect()
    }
}

#[derive(Debug, Default)]
struct Partial {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Chat deltas keyed by `index`. OpenAI streams parallel calls one after another, so a call is
/// complete when a higher index starts or a `finish_reason` arrives.
///
/// Quirks of OpenAI-compatible servers are absorbed here: a delta without `index` belongs to the
/// open call with its `id`, or starts the next call when it brings a new `id`, or else continues
/// the latest call (its position in the array when one delta carries several); a name sent again
/// in every delta is kept once, not concatenated.
#[derive(Debug, Default)]
struct ChatAccumulator {
    open: BTreeMap<u64, Partial>,
    /// The highest index seen so far, open or closed.
    highest: Option<u64>,
    gathered: Gathered,
}

impl ChatAccumulator {
    /// The index of a tool-call delta that has none (see the type's docs).
    fn index_without_one(&self, tc: &Value, position: usize, in_delta: usize) -> u64 {
        let next = self.highest.map_or(position as u64, |h| h + 1);
        match str_opt(tc, "id") {
            Some(id) => self
                .open
                .iter()
                .find(|(_, p)| p.id.as_deref() == Some(id))
                .map_or(next, |(k, _)| *k),
            None if in_delta > 1 => position as u64,
            None => self.highest.unwrap_or(0),
        }
    }
}

impl ChatAccumulator {
    fn close_below(&mut self, limit: Option<u64>) -> Vec<ToolCall> {
        let keys: Vec<u64> = self
            .open
            .keys()
            .copied()
            .filter(|k| limit.is_none_or(|l| *k < l))
            .collect();
        let mut done = Vec::new();
        for k in keys {
            let p = self.open.remove(&k).expect("key just listed");
            let call = json::call(
                P,
                k as usize,
                p.id.as_deref(),
                &p.name,
                tool_runtime::hydrate::Arguments::Text(p.arguments),
            );
            self.gathered.calls.push(call.clone());
            done.push(call);
        }
        done
    }
}

impl StreamAccumulator for ChatAccumulator {
    fn push(&mut self, event: &Value) -> Result<Vec<ToolCall>, CodecError> {
        if let Some(err) = event.get("error") {
            return Err(CodecError::malformed(
                P,
                "/error",
                format!("the stream reported an error: {err}"),
            ));
        }
        let mut done = Vec::new();
        for (ci, choice) in array_opt(P, event, "choices", "")?.iter().enumerate() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue; // only the first choice is decoded
            }
            if let Some(delta) = choice.get("delta") {
                if let Some(t) = str_opt(delta, "content") {
                    self.gathered.text.push_str(t);
                }
                let at = format!("/choices/{ci}/delta");
                let tool_calls = array_opt(P, delta, "tool_calls", &at)?;
                for (i, tc) in tool_calls.iter().enumerate() {
                    let index = match tc.get("index") {
                        None | Some(Value::Null) => self.index_without_one(tc, i, tool_calls.len()),
                        Some(v) => v.as_u64().ok_or_else(|| {
                            CodecError::malformed(
                                P,
                                format!("{at}/tool_calls/{i}/index"),
                                "expected an integer",
                            )
                        })?,
                    };
                    done.extend(self.close_below(Some(index)));
                    self.highest = Some(self.highest.map_or(index, |h| h.max(index)));
                    let partial = self.open.entry(index).or_default();
                    if let Some(id) = str_opt(tc, "id") {
                        partial.id = Some(id.to_owned());
                    }
                    if let Some(f) = tc.get("function") {
                        // OpenAI sends the name once; some servers send it again in every delta
                        // (kept once), a few in pieces (joined)
                        if let Some(n) = str_opt(f, "name")
                            && partial.name != n
                        {
                            partial.name.push_str(n);
                        }
                        match f.get("arguments") {
                            Some(Value::String(a)) => partial.arguments.push_str(a),
                            Some(Value::Object(_)) => {
                                partial.arguments.push_str(&f["arguments"].to_string())
                            }
                            _ => {}
                        }
                    }
                }
            }
            if let Some(reason) = stop_reason(str_opt(choice, "finish_reason")) {
                done.extend(self.close_below(None));
                self.gathered.stop = Some(reason);
            }
        }
        Ok(done)
    }

    fn finish(mut self: Box<Self>) -> Result<Decoded, CodecError> {
        self.close_below(None);
        Ok(self.gathered.into_decoded())
    }
}
