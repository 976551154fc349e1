//! Anthropic Messages (`POST /v1/messages`), wire README §3.
//!
//! Declarations are `{name, description, input_schema}` with the canonical schema as is
//! (Anthropic accepts any object-rooted JSON Schema). Anthropic has no way to allow a subset of
//! the declared tools, so [`ToolChoice::Allowed`] declares only the subset. Results go back as one
//! user message whose content is all the `tool_result` blocks, in call order; only errors set
//! `is_error` (a denial is not an error).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use tool_runtime::content::{Content, ResourceBody};
use tool_runtime::{ToolCall, definition::ToolDefinition, hydrate::Arguments};

use super::json::{self, array_opt, object, str_opt, str_req};
use super::parameters_of;
use super::stream::{Gathered, StreamAccumulator};
use super::{
    ChoiceEncoding, Codec, CodecError, Decoded, Provider, StopReason, ToolChoice, ToolConfig,
    ToolResult, spec_of,
};

const P: Provider = Provider::Anthropic;

/// The Anthropic Messages codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Anthropic;

fn stop_reason(reason: Option<&str>) -> Option<StopReason> {
    Some(match reason? {
        "tool_use" => StopReason::ToolCalls,
        "end_turn" => StopReason::EndTurn,
        "max_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    })
}

impl Codec for Anthropic {
    fn provider(&self) -> Provider {
        P
    }

    fn prebuilt_view(&self) -> Option<&'static str> {
        Some("anthropic")
    }

    fn declare(&self, def: &ToolDefinition) -> Result<Value, CodecError> {
        let parameters = parameters_of(def)?;
        Ok(tool_wire::declare::anthropic(&spec_of(def, &parameters)))
    }

    fn encode_choice(&self, config: &ToolConfig) -> Result<ChoiceEncoding, CodecError> {
        let mut only = None;
        let mut choice = match &config.choice {
            ToolChoice::Validated { .. } => {
                return Err(CodecError::unsupported(P, "schema-validated tool choice"));
            }
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Named(name) => json!({"type": "tool", "name": name}),
            ToolChoice::Allowed { tools, required } => {
                only = Some(tools.clone());
                json!({"type": if *required { "any" } else { "auto" }})
            }
        };
        if let Some(parallel) = config.parallel
            && config.choice != ToolChoice::None
        {
            choice["disable_parallel_tool_use"] = json!(!parallel);
        }
        let mut fields = Map::new();
        fields.insert("tool_choice".into(), choice);
        Ok(ChoiceEncoding { fields, only })
    }

    fn decode_response(&self, body: &Value) -> Result<Decoded, CodecError> {
        object(P, body, "")?;
        if str_opt(body, "type") == Some("error") {
            return Err(CodecError::malformed(
                P,
                "/error",
                format!("the response is an error: {}", body["error"]),
            ));
        }
        if body.get("content").is_none() {
            return Err(CodecError::malformed(P, "/content", "missing"));
        }
        let content = array_opt(P, body, "content", "")?;
        let mut text = String::new();
        let mut calls = Vec::new();
        for (i, block) in content.iter().enumerate() {
            match str_opt(block, "type") {
                Some("text") => text.push_str(str_opt(block, "text").unwrap_or_default()),
                Some("tool_use") => {
                    let at = format!("/content/{i}");
                    let name = str_req(P, block, "name", &at)?;
                    calls.push(json::call(
                        P,
                        i,
                        str_opt(block, "id"),
                        name,
                        json::object_arguments(block.get("input")),
                    ));
                }
                _ => {}
            }
        }
        Ok(Decoded {
            text,
            calls,
            stop: stop_reason(str_opt(body, "stop_reason")).unwrap_or(StopReason::Unknown),
            assistant: Some(json!({"role": "assistant", "content": content})),
        })
    }

    fn accumulator(&self) -> Box<dyn StreamAccumulator> {
        Box::<AnthropicAccumulator>::default()
    }

    fn encode_assistant(&self, text: &str, calls: &[ToolCall]) -> Vec<Value> {
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        content.extend(calls.iter().map(|c| {
            json!({"type": "tool_use", "id": c.id, "name": c.name,
                   "input": json::arguments_value(&c.arguments)})
        }));
        vec![json!({"role": "assistant", "content": content})]
    }

    fn encode_results(&self, results: &[ToolResult]) -> Vec<Value> {
        if results.is_empty() {
            return Vec::new();
        }
        let blocks: Vec<Value> = results
            .iter()
            .map(|r| {
                let content = match r.outcome.blocks() {
                    Some(blocks) => Value::Array(blocks.iter().map(rich_block).collect()),
                    None => Value::String(r.outcome.to_text()),
                };
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": r.call_id,
                    "content": content,
                });
                if r.outcome.is_error() {
                    block["is_error"] = json!(true);
                }
                block
            })
            .collect();
        vec![json!({"role": "user", "content": blocks})]
    }
}

/// One block of a rich result as `tool_result` content: images of the types Messages reads as
/// image blocks, PDFs and text resources as documents, anything else as its text stand-in.
fn rich_block(block: &Content) -> Value {
    match block {
        Content::Image { data, mime_type }
            if matches!(
                mime_type.as_str(),
                "image/jpeg" | "image/png" | "image/gif" | "image/webp"
            ) =>
        {
            json!({"type": "image",
                   "source": {"type": "base64", "media_type": mime_type, "data": data}})
        }
        Content::Resource { resource } => match &resource.body {
            ResourceBody::Blob { blob }
                if resource.mime_type.as_deref() == Some("application/pdf") =>
            {
                json!({"type": "document", "title": resource.uri,
                       "source": {"type": "base64", "media_type": "application/pdf", "data": blob}})
            }
            ResourceBody::Text { text } => {
                json!({"type": "document", "title": resource.uri,
                       "source": {"type": "text", "media_type": "text/plain", "data": text}})
            }
            ResourceBody::Blob { .. } => json!({"type": "text", "text": block.stand_in()}),
        },
        other => json!({"type": "text", "text": other.stand_in()}),
    }
}

#[derive(Debug)]
struct Open {
    id: Option<String>,
    name: String,
    start_input: Value,
    partial: String,
}

/// `input_json_delta` fragments keyed by content-block `index`; a call is complete at its
/// `content_block_stop`.
#[derive(Debug, Default)]
struct AnthropicAccumulator {
    open: BTreeMap<u64, Open>,
    gathered: Gathered,
}

impl AnthropicAccumulator {
    fn complete(&mut self, index: u64) -> Option<ToolCall> {
        let open = self.open.remove(&index)?;
        // an empty stream of fragments is a tool without arguments: the start block's input
        let arguments = if open.partial.trim().is_empty() {
            Arguments::Json(open.start_input)
        } else {
            Arguments::Text(open.partial)
        };
        let call = json::call(P, index as usize, open.id.as_deref(), &open.name, arguments);
        self.gathered.calls.push(call.clone());
        Some(call)
    }
}

impl StreamAccumulator for AnthropicAccumulator {
    fn push(&mut self, event: &Value) -> Result<Vec<ToolCall>, CodecError> {
        let index = event.get("index").and_then(Value::as_u64);
        let mut done = Vec::new();
        match str_opt(event, "type").unwrap_or_default() {
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                match str_opt(block, "type") {
                    Some("tool_use") => {
                        let index = index.ok_or_else(|| {
                            CodecError::malformed(P, "/index", "expected an integer")
                        })?;
                        self.open.insert(
                            index,
                            Open {
                                id: str_opt(block, "id").map(str::to_owned),
                                name: str_req(P, block, "name", "/content_block")?.to_owned(),
                                start_input: match block.get("input") {
                                    Some(v @ Value::Object(_)) => v.clone(),
                                    _ => json!({}),
                                },
                                partial: String::new(),
                            },
                        );
                    }
                    Some("text") => {
                        self.gathered
                            .text
                            .push_str(str_opt(block, "text").unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match str_opt(delta, "type") {
                    Some("input_json_delta") => {
                        let index = index.unwrap_or_default();
                        let open = self.open.get_mut(&index).ok_or_else(|| {
                            CodecError::malformed(
                                P,
                                "/index",
                                format!(
                                    "input_json_delta for block {index}, which is not a tool_use"
                                ),
                            )
                        })?;
                        open.partial
                            .push_str(str_opt(delta, "partial_json").unwrap_or_default());
                    }
                    Some("text_delta") => {
                        self.gathered
                            .text
                            .push_str(str_opt(delta, "text").unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(i) = index {
                    done.extend(self.complete(i));
                }
            }
            "message_delta" => {
                if let Some(r) =
                    stop_reason(event.pointer("/delta/stop_reason").and_then(Value::as_str))
                {
                    self.gathered.stop = Some(r);
                }
            }
            "error" => {
                return Err(CodecError::malformed(
                    P,
                    "/error",
                    format!("the stream reported an error: {}", event["error"]),
                ));
            }
            _ => {}
        }
        Ok(done)
    }

    fn finish(mut self: Box<Self>) -> Result<Decoded, CodecError> {
        let open: Vec<u64> = self.open.keys().copied().collect();
        for i in open {
            self.complete(i);
        }
        Ok(self.gathered.into_decoded())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_subset_filters_declarations_and_parallel_off_is_explicit() {
        let cfg = ToolConfig::new(ToolChoice::Allowed {
            tools: vec!["a".into()],
            required: true,
        })
        .parallel(false);
        let enc = Anthropic.encode_choice(&cfg).unwrap();
        assert_eq!(enc.only, Some(vec!["a".to_owned()]));
        assert_eq!(
            enc.fields["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
    }
}
