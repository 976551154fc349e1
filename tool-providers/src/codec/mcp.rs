//! Model Context Protocol (spec 2025-11-25), wire README §6: the `tools/list` result, `tools/call`
//! requests, and `CallToolResult`s.
//!
//! `Tool.annotations` come from the safety category (DESIGN.md's table): read-only →
//! `readOnlyHint: true`; create → `readOnlyHint: false, destructiveHint: false`; modify →
//! `destructiveHint: true`; external → `openWorldHint: true`; unspecified → MCP's own defaults
//! (not read-only, destructive, open world), stated explicitly. `idempotentHint` is the
//! definition's flag (a read-only tool is always idempotent). The definition has no title, so
//! `title` is the name in words (`search_notes` → "Search notes"). `outputSchema` is sent only
//! when it is object-rooted, as the spec requires. There is no tool choice in MCP: only `Auto`
//! and an optional allowed subset (which lists only the subset) are accepted.

use serde_json::{Map, Value, json};
use tool_runtime::content;
use tool_runtime::{ToolCall, definition::ToolDefinition};

use super::json::{self, object, str_opt, str_req};
use super::outcome::ToolOutcome;
use super::parameters_of;
use super::stream::{Gathered, StreamAccumulator};
use super::{
    ChoiceEncoding, Codec, CodecError, Decoded, Provider, StopReason, ToolChoice, ToolConfig,
    ToolResult, spec_of,
};

const P: Provider = Provider::Mcp;

/// The MCP codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mcp;

pub use tool_wire::declare::title_of;

/// MCP `ToolAnnotations` for a definition.
pub fn annotations(def: &ToolDefinition) -> Value {
    let parameters = Value::Null;
    tool_wire::declare::mcp_annotations(&spec_of(def, &parameters))
}

fn call_of(
    params: &Value,
    id: Option<String>,
    position: usize,
    at: &str,
) -> Result<ToolCall, CodecError> {
    let name = str_req(P, params, "name", at)?;
    Ok(json::call(
        P,
        position,
        id.as_deref(),
        name,
        json::object_arguments(params.get("arguments")),
    ))
}

/// One `tools/call` request (or its bare `params`) as a call.
fn request_call(request: &Value, position: usize, at: &str) -> Result<ToolCall, CodecError> {
    object(P, request, at)?;
    let (params, params_at) = match request.get("method") {
        Some(Value::String(m)) if m == "tools/call" => (
            request
                .get("params")
                .ok_or_else(|| CodecError::malformed(P, format!("{at}/params"), "missing"))?,
            format!("{at}/params"),
        ),
        Some(other) => {
            return Err(CodecError::malformed(
                P,
                format!("{at}/method"),
                format!("expected \"tools/call\", found {other}"),
            ));
        }
        None => (request, at.to_owned()),
    };
    let id = match request.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    call_of(params, id, position, &params_at)
}

impl Codec for Mcp {
    fn provider(&self) -> Provider {
        P
    }

    fn prebuilt_view(&self) -> Option<&'static str> {
        Some("mcp")
    }

    fn declare(&self, def: &ToolDefinition) -> Result<Value, CodecError> {
        let parameters = parameters_of(def)?;
        Ok(tool_wire::declare::mcp(&spec_of(def, &parameters)))
    }

    fn encode_choice(&self, config: &ToolConfig) -> Result<ChoiceEncoding, CodecError> {
        if config.parallel.is_some() {
            return Err(CodecError::unsupported(P, "switching parallel tool calls"));
        }
        let only = match &config.choice {
            ToolChoice::Auto => None,
            ToolChoice::Allowed {
                tools,
                required: false,
            } => Some(tools.clone()),
            other => {
                return Err(CodecError::unsupported(P, format!("tool choice {other:?}")));
            }
        };
        Ok(ChoiceEncoding {
            fields: Map::new(),
            only,
        })
    }

    /// Decodes a `tools/call` request, a batch (array) of them, or bare `{name, arguments}` params.
    fn decode_response(&self, body: &Value) -> Result<Decoded, CodecError> {
        let calls = match body {
            Value::Array(batch) => batch
                .iter()
                .enumerate()
                .map(|(i, r)| request_call(r, i, &format!("/{i}")))
                .collect::<Result<Vec<_>, _>>()?,
            other => vec![request_call(other, 0, "")?],
        };
        Ok(Decoded {
            text: String::new(),
            calls,
            stop: StopReason::ToolCalls,
            assistant: Some(body.clone()),
        })
    }

    fn accumulator(&self) -> Box<dyn StreamAccumulator> {
        Box::<McpAccumulator>::default()
    }

    /// The calls as JSON-RPC `tools/call` requests (MCP has no assistant turn).
    fn encode_assistant(&self, _text: &str, calls: &[ToolCall]) -> Vec<Value> {
        calls
            .iter()
            .map(|c| {
                json!({"jsonrpc": "2.0", "id": c.id, "method": "tools/call",
                       "params": {"name": c.name, "arguments": json::arguments_value(&c.arguments)}})
            })
            .collect()
    }

    /// One `CallToolResult` per result: the text for the model in `content`, a successful object
    /// result also as `structuredContent`, `isError` only for errors (a denial is reported in the
    /// text, not flagged as an error, and carries no `structuredContent` since it would not match
    /// the tool's `outputSchema`).
    fn encode_results(&self, results: &[ToolResult]) -> Vec<Value> {
        results
            .iter()
            .map(|r| {
                if let ToolOutcome::Success(v) = &r.outcome
                    && content::is_rich(v)
                {
                    // content blocks are MCP's own shape: sent as they are, never structured
                    return json!({"content": v[content::CONTENT_KEY], "isError": false});
                }
                let mut out = json!({
                    "content": [{"type": "text", "text": r.outcome.to_text()}],
                    "isError": r.outcome.is_error(),
                });
                if let ToolOutcome::Success(v @ Value::Object(_)) = &r.outcome {
                    out["structuredContent"] = v.clone();
                }
                out
            })
            .collect()
    }
}

/// Each event is one `tools/call` request, complete at once.
#[derive(Debug, Default)]
struct McpAccumulator {
    gathered: Gathered,
}

impl StreamAccumulator for McpAccumulator {
    fn push(&mut self, event: &Value) -> Result<Vec<ToolCall>, CodecError> {
        if str_opt(event, "method") != Some("tools/call") {
            return Ok(Vec::new());
        }
        let call = request_call(event, self.gathered.calls.len(), "")?;
        self.gathered.calls.push(call.clone());
        self.gathered.stop = Some(StopReason::ToolCalls);
        Ok(vec![call])
    }

    fn finish(self: Box<Self>) -> Result<Decoded, CodecError> {
        Ok(self.gathered.into_decoded())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_runtime::definition::Safety;

    /// `#[tool]` derives the hints from the category's name (`tool_wire`), the codec from
    /// `Safety`'s predicates: both must agree for every category, or constants would drift.
    #[test]
    fn compile_time_hints_agree_with_the_safety_predicates() {
        let mut def = ToolDefinition::new("t", "d", &json!({"type": "object"}));
        for safety in [
            Safety::ReadOnly,
            Safety::Create,
            Safety::Modify,
            Safety::External,
            Safety::Unspecified,
        ] {
            for (idempotent, reversible) in [(false, false), (true, false), (false, true)] {
                def.safety = safety;
                def.idempotent = idempotent;
                def.reversible = reversible;
                assert_eq!(
                    tool_wire::McpHints::for_category(safety.as_str(), idempotent)
                        .map(|h| h.reversible(reversible)),
                    Some(crate::codec::mcp_hints(&def)),
                    "{safety:?} idempotent={idempotent} reversible={reversible}"
                );
            }
        }
    }

    #[test]
    fn annotations_follow_the_safety_table() {
        let mut def = ToolDefinition::new("delete_file", "d", &json!({"type": "object"}));
        let a = |def: &ToolDefinition| annotations(def);
        def.safety = Safety::ReadOnly;
        assert_eq!(a(&def)["readOnlyHint"], true);
        assert_eq!(a(&def)["idempotentHint"], true);
        def.safety = Safety::Create;
        assert_eq!(
            (
                a(&def)["readOnlyHint"].clone(),
                a(&def)["destructiveHint"].clone()
            ),
            (json!(false), json!(false))
        );
        def.safety = Safety::Modify;
        assert_eq!(a(&def)["destructiveHint"], true);
        assert_eq!(a(&def)["openWorldHint"], false);
        def.safety = Safety::External;
        assert_eq!(a(&def)["openWorldHint"], true);
        def.safety = Safety::Unspecified;
        assert_eq!(
            a(&def),
            json!({"title": "Delete file", "readOnlyHint": false, "destructiveHint": true,
                   "idempotentHint": false, "openWorldHint": true})
        );
    }
}
