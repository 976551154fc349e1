//! OpenAI Responses (`POST /v1/responses`), wire README §2 and §7.
//!
//! Declarations are flat: `{"type": "function", name, description, parameters, strict}`. `strict`
//! is always explicit: left out, Responses silently normalizes the schema to strict and falls back
//! to non-strict, which would make the mode depend on the server. Calls are `function_call` output
//! items, answered by `call_id` (not the item's `id`).

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value, json};
use tool_runtime::content::{Content, ResourceBody};
use tool_runtime::{ToolCall, definition::ToolDefinition, hydrate::Arguments};

use super::json::{self, array_opt, object, str_opt, str_req};
use super::openai_chat::{StrictPolicy, strict_refusal};
use super::parameters_of;
use super::stream::{Gathered, StreamAccumulator};
use super::{
    ChoiceEncoding, Codec, CodecError, Decoded, Provider, StopReason, ToolChoice, ToolConfig,
    ToolResult, spec_of,
};

const P: Provider = Provider::OpenAiResponses;

/// The OpenAI Responses codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiResponses {
    /// When to send the strict view.
    pub strict: StrictPolicy,
}

impl OpenAiResponses {
    /// A codec with this strict policy.
    pub fn with_strict(strict: StrictPolicy) -> Self {
        OpenAiResponses { strict }
    }
}

fn stop_of(body: &Value, has_calls: bool) -> StopReason {
    if has_calls {
        return StopReason::ToolCalls;
    }
    match str_opt(body, "status") {
        Some("completed") => StopReason::EndTurn,
        Some("incomplete") => match body
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
        {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
            None => StopReason::Other("incomplete".into()),
        },
        Some(other) => StopReason::Other(other.to_owned()),
        None => StopReason::Unknown,
    }
}

fn message_text(item: &Value) -> String {
    item.get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| str_opt(p, "type") == Some("output_text"))
                .filter_map(|p| str_opt(p, "text"))
                .collect()
        })
        .unwrap_or_default()
}

/// A `function_call` item as a call. Its id is the `call_id` (what `function_call_output` must
/// answer), never the item's own `id` (`fc_...`), which names the output item, not the call;
/// a server that sends no `call_id` gets a stable generated one (the same in a body and a stream).
fn call_of(item: &Value, position: usize, at: &str) -> Result<ToolCall, CodecError> {
    let name = str_req(P, item, "name", at)?;
    if let Some(status) = str_opt(item, "status").filter(|&s| s != "completed") {
        // an item still in progress, or cut off, may carry arguments cut short
        return Err(CodecError::malformed(
            P,
            format!("{at}/status"),
            format!("the function call {name:?} is {status}, not completed: it is not run"),
        ));
    }
    Ok(json::call(
        P,
        position,
        str_opt(item, "call_id"),
        name,
        json::arguments(item.get("arguments")),
    ))
}

impl Codec for OpenAiResponses {
    fn provider(&self) -> Provider {
        P
    }

    fn view_key(&self) -> u64 {
        self.strict as u64
    }

    fn prebuilt_view(&self) -> Option<&'static str> {
        (self.strict == StrictPolicy::AsDeclared).then_some("openai-responses")
    }

    fn declare(&self, def: &ToolDefinition) -> Result<Value, CodecError> {
        let parameters = parameters_of(def)?;
        tool_wire::declare::openai_responses(&spec_of(def, &parameters), self.strict)
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
            ToolChoice::Named(name) => json!({"type": "function", "name": name}),
            ToolChoice::Allowed { tools, required } => json!({
                "type": "allowed_tools",
                "mode": if *required { "required" } else { "auto" },
                "tools": tools.iter().map(|n| json!({"type": "function", "name": n})).collect::<Vec<_>>(),
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
        if body.get("output").is_none() {
            return Err(CodecError::malformed(P, "/output", "missing"));
        }
        let output = array_opt(P, body, "output", "")?;
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut echo = output.to_vec();
        for (i, item) in output.iter().enumerate() {
            match str_opt(item, "type") {
                Some("message") => text.push_str(&message_text(item)),
                Some("function_call") => {
                    let call = call_of(item, i, &format!("/output/{i}"))?;
                    if item.get("call_id").is_none() {
                        // the echoed item must carry the id its output answers
                        echo[i]["call_id"] = json!(call.id);
                    }
                    calls.push(call);
                }
                _ => {}
            }
        }
        Ok(Decoded {
            text,
            stop: stop_of(body, !calls.is_empty()),
            calls,
            assistant: Some(Value::Array(echo)),
        })
    }

    fn accumulator(&self) -> Box<dyn StreamAccumulator> {
        Box::<ResponsesAccumulator>::default()
    }

    fn encode_assistant(&self, text: &str, calls: &[ToolCall]) -> Vec<Value> {
        let mut items = Vec::new();
        if !text.is_empty() {
            items.push(json!({"role": "assistant", "content": text}));
        }
        items.extend(calls.iter().map(|c| {
            json!({"type": "function_call", "call_id": c.id, "name": c.name,
                   "arguments": json::arguments_text(&c.arguments)})
        }));
        items
    }

    fn encode_results(&self, results: &[ToolResult]) -> Vec<Value> {
        results
            .iter()
            .map(|r| {
                let output = match r.outcome.blocks() {
                    Some(blocks) => Value::Array(blocks.iter().map(rich_item).collect()),
                    None => Value::String(r.outcome.to_text()),
                };
                json!({"type": "function_call_output", "call_id": r.call_id, "output": output})
            })
            .collect()
    }
}

/// One block of a rich result as a `function_call_output` item: images as `input_image`,
/// embedded binary resources as `input_file` (both as data URLs), anything else as its text
/// stand-in (`input_text`).
fn rich_item(block: &Content) -> Value {
    match block {
        Content::Image { data, mime_type } => json!({"type": "input_image",
            "image_url": format!("data:{mime_type};base64,{}", data.as_str())}),
        Content::Resource { resource } => match (&resource.body, &resource.mime_type) {
            (ResourceBody::Blob { blob }, Some(mime)) => json!({"type": "input_file",
                "filename": file_name(&resource.uri),
                "file_data": format!("data:{mime};base64,{}", blob.as_str())}),
            _ => json!({"type": "input_text", "text": block.stand_in()}),
        },
        other => json!({"type": "input_text", "text": other.stand_in()}),
    }
}

/// The last segment of a URI, the name a file part is given.
fn file_name(uri: &str) -> &str {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    path.rsplit('/').find(|s| !s.is_empty()).unwrap_or(path)
}

#[derive(Debug)]
struct Open {
    output_index: usize,
    call_id: Option<String>,
    name: String,
    arguments: String,
}

/// Argument deltas keyed by `item_id`; `call_id` and `name` come from `output_item.added`. A call
/// is complete at `function_call_arguments.done` (or `output_item.done`, whichever comes first).
#[derive(Debug, Default)]
struct ResponsesAccumulator {
    open: BTreeMap<String, Open>,
    finished: HashSet<String>,
    gathered: Gathered,
}

impl ResponsesAccumulator {
    fn complete(&mut self, item_id: &str, arguments: Option<&str>) -> Option<ToolCall> {
        let open = self.open.remove(item_id)?;
        self.finished.insert(item_id.to_owned());
        let args = arguments.map(str::to_owned).unwrap_or(open.arguments);
        let call = json::call(
            P,
            open.output_index,
            open.call_id.as_deref(),
            &open.name,
            Arguments::Text(args),
        );
        self.gathered.calls.push(call.clone());
        Some(call)
    }
}

impl StreamAccumulator for ResponsesAccumulator {
    fn push(&mut self, event: &Value) -> Result<Vec<ToolCall>, CodecError> {
        let kind = str_opt(event, "type").unwrap_or_default();
        let output_index = event
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let mut done = Vec::new();
        match kind {
            "response.output_item.added" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                if str_opt(item, "type") == Some("function_call") {
                    let id = str_req(P, item, "id", "/item")?.to_owned();
                    self.open.insert(
                        id,
                        Open {
                            output_index,
                            call_id: str_opt(item, "call_id").map(str::to_owned),
                            name: str_opt(item, "name").unwrap_or_default().to_owned(),
                            arguments: str_opt(item, "arguments").unwrap_or_default().to_owned(),
                        },
                    );
                }
            }
            "response.function_call_arguments.delta" => {
                let id = str_req(P, event, "item_id", "")?;
                let delta = str_req(P, event, "delta", "")?;
                match self.open.get_mut(id) {
                    Some(open) => open.arguments.push_str(delta),
                    None => {
                        return Err(CodecError::malformed(
                            P,
                            "/item_id",
                            format!("arguments for {id:?}, which no output_item.added opened"),
                        ));
                    }
                }
            }
            "response.function_call_arguments.done" => {
                let id = str_req(P, event, "item_id", "")?.to_owned();
                if let Some(open) = self.open.get_mut(&id)
                    && let Some(name) = str_opt(event, "name")
                    && open.name.is_empty()
                {
                    open.name = name.to_owned();
                }
                done.extend(self.complete(&id, str_opt(event, "arguments")));
            }
            "response.output_item.done" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                if str_opt(item, "type") == Some("function_call") {
                    let id = str_req(P, item, "id", "/item")?.to_owned();
                    if !self.finished.contains(&id) {
                        if !self.open.contains_key(&id) {
                            let call = call_of(item, output_index, "/item")?;
                            self.finished.insert(id);
                            self.gathered.calls.push(call.clone());
                            done.push(call);
                        } else {
                            done.extend(self.complete(&id, str_opt(item, "arguments")));
                        }
                    }
                }
            }
            "response.output_text.delta" => {
                if let Some(d) = str_opt(event, "delta") {
                    self.gathered.text.push_str(d);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = event.get("response").unwrap_or(&Value::Null);
                let has_calls = !self.gathered.calls.is_empty() || !self.open.is_empty();
                self.gathered.stop = Some(stop_of(response, has_calls));
            }
            "error" => {
                return Err(CodecError::malformed(
                    P,
                    "",
                    format!("the stream reported an error: {event}"),
                ));
            }
            _ => {}
        }
        Ok(done)
    }

    fn finish(mut self: Box<Self>) -> Result<Decoded, CodecError> {
        let ids: Vec<String> = self.open.keys().cloned().collect();
        for id in ids {
            self.complete(&id, None);
        }
        Ok(self.gathered.into_decoded())
    }
}
