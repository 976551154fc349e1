//! Google Gemini `generateContent` / `streamGenerateContent`, wire README §5.
//!
//! **Schema field: `parametersJsonSchema` by default.** Gemini accepts either an OpenAPI-style
//! `parameters` subset or standard JSON Schema in `parametersJsonSchema`. The JSON Schema field
//! takes the canonical schema unchanged: unions, nullable type lists, `const`, `$defs`/`$ref`,
//! `additionalProperties` all survive, so what the model is told is exactly what hydration
//! validates, and no conversion can fail or silently weaken a constraint. The `parameters` subset
//! (see [`crate::codec::schema::gemini`]) rejects or drops several of these keywords (observed
//! 400s for `additionalProperties`, `const`, type lists), so it is kept as an option,
//! [`GeminiSchemaField::Parameters`], for endpoints or models that only take the subset.
//!
//! Tool choice is `toolConfig.functionCallingConfig.mode`: `AUTO`, `NONE`, `ANY` (with
//! `allowedFunctionNames` for a named tool or a required subset) and `VALIDATED`
//! ([`ToolChoice::Validated`]: text or calls, calls held to the schema, optionally limited by
//! `allowedFunctionNames`). An optional subset without validation declares only the subset, since
//! `allowedFunctionNames` does not apply in `AUTO` mode.
//!
//! Calls are `functionCall` parts with `args` objects; `id` may be absent, in which case a stable
//! id is generated and left out of the `functionResponse` again. Results are `functionResponse`
//! parts with `response.output`, `response.error` (the structured error) or, for a denial,
//! `response.output` with `status: "denied"`.

use serde_json::{Map, Value, json};
use tool_runtime::content::{Content, ResourceBody};
use tool_runtime::{ToolCall, definition::ToolDefinition, hydrate::Arguments};

use super::ids::is_generated;
use super::json::{self, array_opt, object, str_opt};
use super::outcome::ToolOutcome;
use super::parameters_of;
use super::stream::{Gathered, StreamAccumulator};
use super::{
    ChoiceEncoding, Codec, CodecError, Decoded, Provider, StopReason, ToolChoice, ToolConfig,
    ToolResult, spec_of,
};

const P: Provider = Provider::Gemini;

pub use tool_wire::GeminiSchemaField;

/// The Gemini codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gemini {
    /// Which field carries the argument schema.
    pub schema_field: GeminiSchemaField,
}

fn stop_reason(reason: Option<&str>) -> Option<StopReason> {
    Some(match reason? {
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    })
}

fn function_call_of(fc: &Value, position: usize, at: &str) -> Result<ToolCall, CodecError> {
    let name = json::str_req(P, fc, "name", at)?;
    Ok(json::call(
        P,
        position,
        str_opt(fc, "id"),
        name,
        json::object_arguments(fc.get("args")),
    ))
}

impl Codec for Gemini {
    fn provider(&self) -> Provider {
        P
    }

    fn view_key(&self) -> u64 {
        self.schema_field as u64
    }

    fn prebuilt_view(&self) -> Option<&'static str> {
        (self.schema_field == GeminiSchemaField::JsonSchema).then_some("gemini")
    }

    fn declare(&self, def: &ToolDefinition) -> Result<Value, CodecError> {
        let parameters = parameters_of(def)?;
        tool_wire::declare::gemini(&spec_of(def, &parameters), self.schema_field).map_err(|e| {
            CodecError::Schema {
                tool: def.name.to_string(),
                view: "gemini parameters",
                pointer: e.pointer,
                reason: e.reason,
            }
        })
    }

    fn encode_choice(&self, config: &ToolConfig) -> Result<ChoiceEncoding, CodecError> {
        if config.parallel.is_some() {
            return Err(CodecError::unsupported(P, "switching parallel tool calls"));
        }
        let mut only = None;
        let mut fc = match &config.choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Named(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
            ToolChoice::Allowed {
                tools,
                required: true,
            } => json!({"mode": "ANY", "allowedFunctionNames": tools}),
            ToolChoice::Allowed {
                tools,
                required: false,
            } => {
                // allowedFunctionNames only applies in ANY (and VALIDATED) mode: declare the
                // subset instead
                only = Some(tools.clone());
                json!({"mode": "AUTO"})
            }
            ToolChoice::Validated { tools: None } => json!({"mode": "VALIDATED"}),
            ToolChoice::Validated { tools: Some(tools) } => {
                json!({"mode": "VALIDATED", "allowedFunctionNames": tools})
            }
        };
        let mut fields = Map::new();
        fields.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": fc.take()}),
        );
        Ok(ChoiceEncoding { fields, only })
    }

    fn write_tools_field(&self, declarations: &str, out: &mut String) {
        out.push_str("\"tools\":[{\"functionDeclarations\":[");
        out.push_str(declarations);
        out.push_str("]}]");
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
        let candidates = array_opt(P, body, "candidates", "")?;
        let Some(candidate) = candidates.first() else {
            let blocked = body
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
                .unwrap_or("no candidates");
            return Ok(Decoded {
                text: String::new(),
                calls: Vec::new(),
                stop: StopReason::Other(blocked.to_owned()),
                assistant: None,
            });
        };
        let content = candidate.get("content").unwrap_or(&Value::Null);
        let mut text = String::new();
        let mut calls = Vec::new();
        for (i, part) in array_opt(P, content, "parts", "/candidates/0/content")?
            .iter()
            .enumerate()
        {
            if let Some(fc) = part.get("functionCall") {
                let at = format!("/candidates/0/content/parts/{i}/functionCall");
                calls.push(function_call_of(fc, calls.len(), &at)?);
            } else if part.get("thought") != Some(&Value::Bool(true))
                && let Some(t) = str_opt(part, "text")
            {
                text.push_str(t);
            }
        }
        let stop = if calls.is_empty() {
            stop_reason(str_opt(candidate, "finishReason")).unwrap_or(StopReason::Unknown)
        } else {
            StopReason::ToolCalls
        };
        Ok(Decoded {
            text,
            calls,
            stop,
            assistant: (!content.is_null()).then(|| content.clone()),
        })
    }

    fn accumulator(&self) -> Box<dyn StreamAccumulator> {
        Box::<GeminiAccumulator>::default()
    }

    fn encode_assistant(&self, text: &str, calls: &[ToolCall]) -> Vec<Value> {
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(json!({"text": text}));
        }
        parts.extend(calls.iter().map(|c| {
            let mut fc = json!({"name": c.name, "args": json::arguments_value(&c.arguments)});
            if !is_generated(&c.id) {
                fc["id"] = json!(c.id);
            }
            json!({"functionCall": fc})
        }));
        vec![json!({"role": "model", "parts": parts})]
    }

    fn encode_results(&self, results: &[ToolResult]) -> Vec<Value> {
        if results.is_empty() {
            return Vec::new();
        }
        let parts: Vec<Value> = results
            .iter()
            .map(|r| {
                let blocks = r.outcome.blocks();
                let response = match (&r.outcome, &blocks) {
                    (ToolOutcome::Error(e), _) => json!({"error": e.to_json()}),
                    (_, Some(_)) => json!({"output": r.outcome.to_text()}),
                    (other, None) => json!({"output": other.to_value()}),
                };
                let mut fr = json!({"name": r.name, "response": response});
                let parts: Vec<Value> = blocks.iter().flatten().filter_map(inline_part).collect();
                if !parts.is_empty() {
                    fr["parts"] = Value::Array(parts);
                }
                if !is_generated(&r.call_id) {
                    fr["id"] = json!(r.call_id);
                }
                json!({"functionResponse": fr})
            })
            .collect();
        vec![json!({"role": "user", "parts": parts})]
    }
}

/// The bytes of a rich result's block as a function-response part (`inlineData`), for the kinds
/// Gemini reads there: images and PDFs. Every block is also in the response's text stand-in,
/// which names the type and size of those sent as parts.
fn inline_part(block: &Content) -> Option<Value> {
    let (data, mime) = match block {
        Content::Image { data, mime_type } => (data, mime_type),
        Content::Resource { resource } => match (&resource.body, &resource.mime_type) {
            (ResourceBody::Blob { blob }, Some(mime)) if mime == "application/pdf" => (blob, mime),
            _ => return None,
        },
        _ => return None,
    };
    Some(json!({"inlineData": {"mimeType": mime, "data": data}}))
}

#[derive(Debug, Default)]
struct OpenCall {
    id: Option<String>,
    name: String,
    args: Value,
    /// The last partial argument said more of its string follows.
    continuing: Option<String>,
    signature: Option<Value>,
}

/// Chunks of `candidates[0].content.parts`. A `functionCall` with `args` is complete at once; with
/// `streamFunctionCallArguments` (`willContinue` + `partialArgs`), the call is complete when a
/// `functionCall` without `willContinue` (typically the empty `functionCall: {}`) closes it.
#[derive(Debug, Default)]
struct GeminiAccumulator {
    open: Option<OpenCall>,
    gathered: Gathered,
    /// The `functionCall` parts as they will be echoed, each with its `thoughtSignature` (Gemini 3
    /// refuses a history whose calls lost theirs).
    echo_parts: Vec<Value>,
}

impl GeminiAccumulator {
    fn close(&mut self) -> Option<ToolCall> {
        let open = self.open.take()?;
        let position = self.gathered.calls.len();
        let mut fc = json!({"name": open.name, "args": open.args});
        if let Some(id) = &open.id {
            fc["id"] = json!(id);
        }
        self.record(fc, open.signature);
        let call = json::call(
            P,
            position,
            open.id.as_deref(),
            &open.name,
            Arguments::Json(open.args),
        );
        self.gathered.calls.push(call.clone());
        Some(call)
    }

    fn record(&mut self, function_call: Value, signature: Option<Value>) {
        let mut part = json!({ "functionCall": function_call });
        if let Some(sig) = signature {
            part["thoughtSignature"] = sig;
        }
        self.echo_parts.push(part);
    }

    fn apply_partial(&mut self, partial: &Value) -> Result<(), CodecError> {
        let open = self.open.as_mut().ok_or_else(|| {
            CodecError::malformed(P, "/partialArgs", "partial arguments outside a call")
        })?;
        let path = str_opt(partial, "jsonPath").unwrap_or("$");
        let continues = partial.get("willContinue") == Some(&Value::Bool(true));
        let value = if let Some(s) = partial.get("stringValue").and_then(Value::as_str) {
            if open.continuing.as_deref() == Some(path) {
                let existing = get_path(&open.args, path)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Value::String(format!("{existing}{s}"))
            } else {
                Value::String(s.to_owned())
            }
        } else if let Some(n) = partial.get("numberValue") {
            n.clone()
        } else if let Some(b) = partial.get("boolValue") {
            b.clone()
        } else {
            Value::Null
        };
        set_path(&mut open.args, path)
            .map(|slot| *slot = value)
            .ok_or_else(|| {
                CodecError::malformed(
                    P,
                    "/partialArgs/jsonPath",
                    format!("unsupported path {path:?}"),
                )
            })?;
        open.continuing = continues.then(|| path.to_owned());
        Ok(())
    }
}

/// Splits `$.a.b[0]` into segments.
fn segments(path: &str) -> Option<Vec<Result<String, usize>>> {
    let rest = path.strip_prefix('$')?;
    let mut out = Vec::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut key = String::new();
                while let Some(&n) = chars.peek() {
                    if n == '.' || n == '[' {
                        break;
                    }
                    key.push(n);
                    chars.next();
                }
                out.push(Ok(key));
            }
            '[' => {
                let mut idx = String::new();
                for n in chars.by_ref() {
                    if n == ']' {
                        break;
                    }
                    idx.push(n);
                }
                let idx = idx.trim_matches(|c| c == '\'' || c == '"');
                match idx.parse::<usize>() {
                    Ok(i) => out.push(Err(i)),
                    Err(_) => out.push(Ok(idx.to_owned())),
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

fn get_path<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for seg in segments(path)? {
        cur = match seg {
            Ok(k) => cur.get(&k)?,
            Err(i) => cur.get(i)?,
        };
    }
    Some(cur)
}

fn set_path<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = root;
    for seg in segments(path)? {
        cur = match seg {
            Ok(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur.as_object_mut()?.entry(k).or_insert(Value::Null)
            }
            Err(i) => {
                if !cur.is_array() {
                    *cur = Value::Array(Vec::new());
                }
                let arr = cur.as_array_mut()?;
                if arr.len() <= i {
                    arr.resize(i + 1, Value::Null);
                }
                &mut arr[i]
            }
        };
    }
    Some(cur)
}

impl StreamAccumulator for GeminiAccumulator {
    fn push(&mut self, event: &Value) -> Result<Vec<ToolCall>, CodecError> {
        if let Some(e) = event.get("error") {
            return Err(CodecError::malformed(
                P,
                "/error",
                format!("the stream reported an error: {e}"),
            ));
        }
        let mut done = Vec::new();
        let Some(candidate) = event.get("candidates").and_then(|c| c.get(0)) else {
            return Ok(done);
        };
        let content = candidate.get("content").unwrap_or(&Value::Null);
        for (i, part) in array_opt(P, content, "parts", "/candidates/0/content")?
            .iter()
            .enumerate()
        {
            let Some(fc) = part.get("functionCall") else {
                if part.get("thought") != Some(&Value::Bool(true))
                    && let Some(t) = str_opt(part, "text")
                {
                    self.gathered.text.push_str(t);
                }
                continue;
            };
            let continues = fc.get("willContinue") == Some(&Value::Bool(true));
            let partials = array_opt(P, fc, "partialArgs", "/functionCall")?;
            if let Some(name) = str_opt(fc, "name") {
                // a named part starts a new call; whatever was open is complete
                done.extend(self.close());
                if continues || !partials.is_empty() {
                    self.open = Some(OpenCall {
                        id: str_opt(fc, "id").map(str::to_owned),
                        name: name.to_owned(),
                        args: match fc.get("args") {
                            Some(v @ Value::Object(_)) => v.clone(),
                            _ => Value::Object(Map::new()),
                        },
                        continuing: None,
                        signature: part.get("thoughtSignature").cloned(),
                    });
                } else {
                    let at = format!("/candidates/0/content/parts/{i}/functionCall");
                    let call = function_call_of(fc, self.gathered.calls.len(), &at)?;
                    self.record(fc.clone(), part.get("thoughtSignature").cloned());
                    self.gathered.calls.push(call.clone());
                    done.push(call);
                    continue;
                }
            }
            for p in partials {
                self.apply_partial(p)?;
            }
            if !continues {
                done.extend(self.close());
            }
        }
        if let Some(reason) = stop_reason(str_opt(candidate, "finishReason")) {
            done.extend(self.close());
            self.gathered.stop = Some(if self.gathered.calls.is_empty() {
                reason
            } else {
                StopReason::ToolCalls
            });
        }
        Ok(done)
    }

    /// The decoded response carries, as `assistant`, the model content to echo: the text and
    /// every `functionCall` part with its `thoughtSignature`.
    fn finish(mut self: Box<Self>) -> Result<Decoded, CodecError> {
        // no `finishReason` means the stream ended early: the stop stays unknown, so the
        // caller can tell a whole answer from a cut one
        self.close();
        let mut parts = Vec::new();
        if !self.gathered.text.is_empty() {
            parts.push(json!({"text": self.gathered.text}));
        }
        parts.append(&mut self.echo_parts);
        if !parts.is_empty() {
            self.gathered.assistant = Some(json!({"role": "model", "parts": parts}));
        }
        Ok(self.gathered.into_decoded())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_set_nested_values() {
        let mut v = json!({});
        *set_path(&mut v, "$.a.b[1]").unwrap() = json!(3);
        *set_path(&mut v, "$.c").unwrap() = json!("x");
        assert_eq!(v, json!({"a": {"b": [null, 3]}, "c": "x"}));
        assert_eq!(get_path(&v, "$.a.b[1]"), Some(&json!(3)));
        assert!(set_path(&mut v, "a.b").is_none());
    }
}
