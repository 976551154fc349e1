//! The fallback for models without native function calling: the tools are described
//! in the system prompt, and calls are parsed out of the model's text, then hydrated exactly like
//! native ones.
//!
//! The model is asked to answer with `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
//! blocks, one per call. The parser also accepts what models commonly produce instead: fenced
//! blocks (```` ```json ````, ```` ```tool_call ````) holding such an object or an array of them, and
//! `parameters`/`args` instead of `arguments`. A fenced block whose JSON is not call-shaped is
//! ordinary prose; a `<tool_call>` block that is not valid JSON becomes an `INVALID_JSON` error for
//! the model, so it can try again.

use serde_json::Value;
use tool_runtime::{
    ErrorCode, ToolCall, ToolError, definition::ToolDefinition, hydrate::Arguments,
};

use super::ids::stable_id;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// The system-prompt section that describes `tools` and how to call them.
pub fn system_prompt(tools: &[&ToolDefinition]) -> String {
    let mut out = String::from(
        "You can call tools. To call one, reply with a block of exactly this form, one block per \
         call (several blocks for several calls):\n\
         <tool_call>{\"name\": \"TOOL_NAME\", \"arguments\": {...}}</tool_call>\n\
         The arguments must be one JSON object matching the tool's parameters. After the blocks, \
         stop and wait: each result comes back in the next message. If no tool is needed, answer \
         normally without any block.\n\nTools:\n",
    );
    for def in tools {
        out.push_str("- ");
        out.push_str(&def.name);
        out.push('(');
        out.push_str(&compact_params(&def.parameters_value()));
        out.push(')');
        if !def.description.is_empty() {
            out.push_str(": ");
            out.push_str(def.description.trim());
        }
        out.push('\n');
    }
    out
}

/// `city: string, unit?: "c"|"f", limit?: integer = 10`: one line per tool keeps a long tool list
/// readable for small models.
fn compact_params(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, p)| {
            let mut s = name.clone();
            if !required.contains(&name.as_str()) {
                s.push('?');
            }
            s.push_str(": ");
            s.push_str(&type_of(schema, p));
            if let Some(d) = p.get("default") {
                s.push_str(&format!(" = {d}"));
            }
            if let Some(desc) = p.get("description").and_then(Value::as_str) {
                s.push_str(&format!(" ({desc})"));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn type_of(root: &Value, p: &Value) -> String {
    let p = match p.get("$ref").and_then(Value::as_str) {
        Some(r) => super::schema::resolve(root, r).unwrap_or(p),
        None => p,
    };
    if let Some(Value::Array(values)) = p.get("enum") {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("|");
    }
    if let Some(Value::Array(branches)) = p.get("anyOf").or_else(|| p.get("oneOf")) {
        return branches
            .iter()
            .map(|b| type_of(root, b))
            .collect::<Vec<_>>()
            .join("|");
    }
    match p.get("type") {
        Some(Value::String(t)) if t == "array" => match p.get("items") {
            Some(items) => format!("{}[]", type_of(root, items)),
            None => "array".into(),
        },
        Some(Value::String(t)) if t == "object" => match p.get("properties") {
            Some(_) => format!("{{{}}}", compact_params(p)),
            None => "object".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".into(),
    }
}

/// What the parser found in a model's text.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptDecoded {
    /// The text with the call blocks removed.
    pub text: String,
    /// The calls, in order, with stable generated ids.
    pub calls: Vec<ToolCall>,
    /// Blocks that were meant as calls but could not be read, for the model to correct.
    pub errors: Vec<ToolError>,
}

/// Finds the calls in `text`.
pub fn parse_calls(text: &str) -> PromptDecoded {
    let mut out = PromptDecoded {
        text: String::new(),
        calls: Vec::new(),
        errors: Vec::new(),
    };
    let mut rest = text;
    loop {
        let tag = rest.find(OPEN);
        let fence = rest.find("```");
        match (tag, fence) {
            (Some(t), f) if f.is_none_or(|f| t < f) => {
                out.text.push_str(&rest[..t]);
                let body_start = t + OPEN.len();
                let (body, next) = match rest[body_start..].find(CLOSE) {
                    Some(end) => (
                        &rest[body_start..body_start + end],
                        body_start + end + CLOSE.len(),
                    ),
                    // an unclosed block runs to the end (the model stopped at the closing tag)
                    None => (&rest[body_start..], rest.len()),
                };
                let body = strip_fence(body.trim());
                match serde_json::from_str::<Value>(body) {
                    Ok(v) => {
                        if !push_calls(&mut out, &v) {
                            out.errors.push(not_a_call(body));
                        }
                    }
                    Err(e) => out.errors.push(
                        ToolError::new(
                            ErrorCode::INVALID_JSON,
                            format!("a <tool_call> block is not valid JSON: {e}"),
                        )
                        .retryable(true)
                        .recover(
                            "write the call as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>",
                        ),
                    ),
                }
                rest = &rest[next..];
            }
            (_, Some(f)) => {
                let after = &rest[f + 3..];
                let Some(end) = after.find("```") else {
                    out.text.push_str(rest);
                    break;
                };
                let block = &after[..end];
                let (lang, body) = block.split_once('\n').unwrap_or(("", block));
                let lang = lang.trim();
                let parsed = matches!(lang, "" | "json" | "tool_call" | "tool_code")
                    .then(|| serde_json::from_str::<Value>(body.trim()).ok())
                    .flatten();
                match parsed {
                    Some(v) if is_call_shaped(&v) => {
                        out.text.push_str(&rest[..f]);
                        push_calls(&mut out, &v);
                    }
                    _ => out.text.push_str(&rest[..f + 3 + end + 3]),
                }
                rest = &after[end + 3..];
            }
            _ => {
                out.text.push_str(rest);
                break;
            }
        }
    }
    out.text = out.text.trim().to_owned();
    out
}

fn strip_fence(body: &str) -> &str {
    let Some(inner) = body.strip_prefix("```") else {
        return body;
    };
    let inner = inner.split_once('\n').map_or(inner, |(_, b)| b);
    inner.trim_end().strip_suffix("```").unwrap_or(inner).trim()
}

fn not_a_call(body: &str) -> ToolError {
    ToolError::new(
        ErrorCode::INVALID_ARGUMENTS,
        format!("a <tool_call> block has no tool name: {body}"),
    )
    .retryable(true)
    .recover("write the call as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>")
}

fn call_object(v: &Value) -> Option<(&str, Option<&Value>)> {
    let name = v.get("name").and_then(Value::as_str)?;
    let args = v
        .get("arguments")
        .or_else(|| v.get("parameters"))
        .or_else(|| v.get("args"));
    Some((name, args))
}

fn is_call_shaped(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(|i| call_object(i).is_some()),
        other => call_object(other).is_some(),
    }
}

/// Adds the call(s) in `v`; false when `v` is not call-shaped.
fn push_calls(out: &mut PromptDecoded, v: &Value) -> bool {
    if !is_call_shaped(v) {
        return false;
    }
    let items: Vec<&Value> = match v {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for item in items {
        let (name, args) = call_object(item).expect("checked call-shaped");
        let arguments = match args {
            None | Some(Value::Null) => Arguments::Json(Value::Object(Default::default())),
            Some(Value::String(s)) => Arguments::Text(s.clone()),
            Some(v) => Arguments::Json(v.clone()),
        };
        let text = match &arguments {
            Arguments::Text(s) => s.clone(),
            Arguments::Json(v) => v.to_string(),
        };
        let id = stable_id("prompt", out.calls.len(), name, &text);
        out.calls.push(ToolCall {
            id: id.into(),
            name: name.to_owned(),
            arguments,
        });
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_tagged_and_fenced_calls_and_keeps_prose() {
        let text = "Let me check.\n<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\n\
                    ```json\n[{\"name\": \"weather\", \"parameters\": {\"city\": \"Oslo\"}}]\n```\n\
                    Here is data: ```json\n{\"temp\": 3}\n```\n<tool_call>{oops</tool_call>";
        let d = parse_calls(text);
        assert_eq!(d.calls.len(), 2);
        assert_eq!(d.calls[0].name, "weather");
        assert_eq!(
            d.calls[0].arguments,
            Arguments::Json(json!({"city": "Paris"}))
        );
        assert_eq!(
            d.calls[1].arguments,
            Arguments::Json(json!({"city": "Oslo"}))
        );
        assert_ne!(d.calls[0].id, d.calls[1].id);
        assert_eq!(
            parse_calls(text).calls[0].id,
            d.calls[0].id,
            "ids are stable"
        );
        assert!(d.text.starts_with("Let me check."));
        assert!(
            d.text.contains("{\"temp\": 3}"),
            "non-call JSON stays prose: {}",
            d.text
        );
        assert_eq!(d.errors.len(), 1);
        assert_eq!(d.errors[0].code, ErrorCode::INVALID_JSON);
    }

    #[test]
    fn the_prompt_lists_tools_with_compact_parameters() {
        let def = ToolDefinition::new(
            "weather",
            "Current weather",
            &json!({"type": "object", "properties": {
                "city": {"type": "string", "description": "city name"},
                "unit": {"enum": ["c", "f"], "default": "c"},
                "days": {"type": "array", "items": {"type": "integer"}}},
                "required": ["city"]}),
        );
        let p = system_prompt(&[&def]);
        assert!(p.contains("<tool_call>"));
        assert!(
            p.contains(
                "- weather(city: string (city name), unit?: \"c\"|\"f\" = \"c\", days?: integer[]): Current weather"
            ),
            "{p}"
        );
    }
}
