//! Each provider's declaration of one tool, from the tool's name, description, canonical schema and
//! flags ([`ToolSpec`]). These are the exact JSON objects the codecs put in a request's tool list
//! (wire README §1-§6); `#[tool]` serializes the same values at compile time.
//!
//! Key order is part of the result (serde_json with `preserve_order`): the constants `#[tool]`
//! emits are compared byte for byte with what the codecs build, so both must come from here.

use serde_json::{Map, Value, json};

use crate::ViewError;
use crate::gemini::parameters_view;
use crate::inline::{has_refs, inline_refs};
use crate::strict::strict_view;

/// When the OpenAI codecs send the strict view of a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum StrictPolicy {
    /// Strict exactly for tools whose definition sets `strict: true`; such a tool whose schema
    /// cannot be strict is refused rather than silently downgraded.
    #[default]
    AsDeclared,
    /// Strict for every tool whose schema can be strict (unless it sets `strict: false`); the
    /// others are sent non-strict.
    Prefer,
    /// Never strict.
    Never,
}

/// Which Gemini field carries the argument schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum GeminiSchemaField {
    /// `parametersJsonSchema`: the canonical schema, unchanged (and `responseJsonSchema` from the
    /// output schema).
    #[default]
    JsonSchema,
    /// `parameters`: the OpenAPI subset view.
    Parameters,
}

/// MCP `ToolAnnotations` hints (spec 2025-11-25), derived from the tool's safety category, and
/// the framework's own safety facts, which MCP has no standard field for: they go in the
/// declaration's `_meta` under [`SAFETY_META_KEY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct McpHints {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `destructiveHint`.
    pub destructive: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
    /// `openWorldHint`.
    pub open_world: bool,
    /// The safety category's configuration name (`read_only`, `create`, `modify`, `external`,
    /// `unspecified`).
    pub category: &'static str,
    /// Whether every call waits for a person's yes, whatever the executor's configuration says
    /// (a modification, an undeclared category, a tool without a schema run under human
    /// approval); otherwise the configuration decides.
    pub always_confirmed: bool,
    /// Whether the first call in a session passes the first-time gate for external services.
    pub first_use_gate: bool,
    /// Whether a call can be undone.
    pub reversible: bool,
}

/// The `_meta` key of a declaration's framework safety facts (MCP reserves unprefixed keys; a
/// prefix names whose they are).
pub const SAFETY_META_KEY: &str = "tool-runtime/safety";

impl McpHints {
    /// The hints of a safety category by its configuration name (`read_only`, `create`, `modify`,
    /// `external`, `unspecified`), after DESIGN.md's table: read-only → read-only and idempotent;
    /// create → neither read-only nor destructive; modify → destructive; external → open world;
    /// unspecified → MCP's own defaults (destructive, open world). `None` for an unknown name.
    /// Not reversible and not run under human approval: see [`McpHints::reversible`] and
    /// [`McpHints::human_approval`].
    pub fn for_category(category: &str, idempotent: bool) -> Option<McpHints> {
        let (category, read_only, destructive, open_world): (&'static str, _, _, _) = match category
        {
            "read_only" => ("read_only", true, false, false),
            "create" => ("create", false, false, false),
            "modify" => ("modify", false, true, false),
            "external" => ("external", false, false, true),
            "unspecified" => ("unspecified", false, true, true),
            _ => return None,
        };
        Some(McpHints {
            read_only,
            destructive,
            // a tool that changes nothing is idempotent whatever its flag says
            idempotent: idempotent || read_only,
            open_world,
            category,
            always_confirmed: matches!(category, "modify" | "unspecified"),
            first_use_gate: matches!(category, "external" | "unspecified"),
            reversible: false,
        })
    }

    /// The same hints for a tool whose calls can (or cannot) be undone.
    pub fn reversible(self, reversible: bool) -> McpHints {
        McpHints { reversible, ..self }
    }

    /// The same hints for a tool without a schema that runs only with a person's approval
    /// (`no_schema_mode = human_approval`) when `yes`.
    pub fn human_approval(self, yes: bool) -> McpHints {
        McpHints {
            always_confirmed: self.always_confirmed || yes,
            ..self
        }
    }
}

/// What a declaration is built from: the canonical definition's fields that providers see.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// What the tool does, for the model (left out when empty).
    pub description: &'a str,
    /// The canonical argument schema.
    pub parameters: &'a Value,
    /// The schema of a successful result, when known.
    pub output_schema: Option<&'a Value>,
    /// OpenAI strict mode as the author requested it.
    pub strict: Option<bool>,
    /// MCP annotations.
    pub hints: McpHints,
}

/// The `parameters` to send to OpenAI under `policy` and whether they are the strict view; the
/// error is the strict view's refusal, for a tool that must be strict and cannot.
pub fn openai_parameters(
    spec: &ToolSpec<'_>,
    policy: StrictPolicy,
) -> Result<(Value, bool), ViewError> {
    let want = match policy {
        StrictPolicy::AsDeclared => spec.strict == Some(true),
        StrictPolicy::Prefer => spec.strict != Some(false),
        StrictPolicy::Never => false,
    };
    if !want {
        return Ok((spec.parameters.clone(), false));
    }
    match strict_view(spec.parameters) {
        Ok(view) => Ok((view, true)),
        Err(_) if policy == StrictPolicy::Prefer && spec.strict != Some(true) => {
            Ok((spec.parameters.clone(), false))
        }
        Err(e) => Err(e),
    }
}

/// Name, then the description unless it is empty.
fn named(spec: &ToolSpec<'_>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), json!(spec.name));
    if !spec.description.is_empty() {
        m.insert("description".into(), json!(spec.description));
    }
    m
}

/// OpenAI Chat Completions: `{"type": "function", "function": {name, description, parameters,
/// strict}}`. `strict` is always explicit so the request says which mode applies.
pub fn openai_chat(spec: &ToolSpec<'_>, policy: StrictPolicy) -> Result<Value, ViewError> {
    let (parameters, strict) = openai_parameters(spec, policy)?;
    let mut function = named(spec);
    function.insert("parameters".into(), parameters);
    function.insert("strict".into(), json!(strict));
    Ok(json!({"type": "function", "function": function}))
}

/// OpenAI Responses: flat `{"type": "function", name, description, parameters, strict}`.
pub fn openai_responses(spec: &ToolSpec<'_>, policy: StrictPolicy) -> Result<Value, ViewError> {
    let (parameters, strict) = openai_parameters(spec, policy)?;
    let mut tool = Map::new();
    tool.insert("type".into(), json!("function"));
    tool.extend(named(spec));
    tool.insert("parameters".into(), parameters);
    tool.insert("strict".into(), json!(strict));
    Ok(Value::Object(tool))
}

/// Anthropic Messages: `{name, description, input_schema}` with the canonical schema as is.
pub fn anthropic(spec: &ToolSpec<'_>) -> Value {
    let mut tool = named(spec);
    tool.insert("input_schema".into(), spec.parameters.clone());
    Value::Object(tool)
}

/// Ollama `/api/chat`: OpenAI's envelope without `strict`, with `$ref`s inlined (Ollama drops
/// them); a schema that cannot be inlined (recursive) is sent as it is.
pub fn ollama(spec: &ToolSpec<'_>) -> Value {
    let parameters = if has_refs(spec.parameters) {
        inline_refs(spec.parameters).unwrap_or_else(|_| spec.parameters.clone())
    } else {
        spec.parameters.clone()
    };
    let mut function = named(spec);
    function.insert("parameters".into(), parameters);
    json!({"type": "function", "function": function})
}

/// Gemini `functionDeclarations` entry: `parametersJsonSchema` (+ `responseJsonSchema`) with the
/// canonical schemas, or the `parameters` subset view (left out for a tool without parameters).
pub fn gemini(spec: &ToolSpec<'_>, field: GeminiSchemaField) -> Result<Value, ViewError> {
    let mut decl = named(spec);
    match field {
        GeminiSchemaField::JsonSchema => {
            decl.insert("parametersJsonSchema".into(), spec.parameters.clone());
            if let Some(out) = spec.output_schema {
                decl.insert("responseJsonSchema".into(), out.clone());
            }
        }
        GeminiSchemaField::Parameters => {
            if let Some(v) = parameters_view(spec.parameters)? {
                decl.insert("parameters".into(), v);
            }
        }
    }
    Ok(Value::Object(decl))
}

/// The name in words: separators become spaces, the first letter upper-case
/// (`search_notes` → "Search notes").
pub fn title_of(name: &str) -> String {
    let words = name.replace(['_', '-'], " ");
    let mut chars = words.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// MCP `ToolAnnotations`: the title and the four hints, always explicit.
pub fn mcp_annotations(spec: &ToolSpec<'_>) -> Value {
    json!({
        "title": title_of(spec.name),
        "readOnlyHint": spec.hints.read_only,
        "destructiveHint": spec.hints.destructive,
        "idempotentHint": spec.hints.idempotent,
        "openWorldHint": spec.hints.open_world,
    })
}

/// The declaration's `_meta`: the framework's safety facts under [`SAFETY_META_KEY`], for a
/// client that shows the user what a call will do before it is made.
pub fn mcp_meta(hints: &McpHints) -> Value {
    json!({
        SAFETY_META_KEY: {
            "category": hints.category,
            "confirmation": if hints.always_confirmed { "always" } else { "configured" },
            "first_use_gate": hints.first_use_gate,
            "reversible": hints.reversible,
        }
    })
}

/// MCP `tools/list` Tool: `{name, title, description, inputSchema, outputSchema, annotations,
/// _meta}`; `outputSchema` only when it is object-rooted, as the spec requires.
pub fn mcp(spec: &ToolSpec<'_>) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), json!(spec.name));
    tool.insert("title".into(), json!(title_of(spec.name)));
    if !spec.description.is_empty() {
        tool.insert("description".into(), json!(spec.description));
    }
    tool.insert("inputSchema".into(), spec.parameters.clone());
    if let Some(out) = spec.output_schema
        && out.get("type").and_then(Value::as_str) == Some("object")
    {
        tool.insert("outputSchema".into(), out.clone());
    }
    tool.insert("annotations".into(), mcp_annotations(spec));
    tool.insert("_meta".into(), mcp_meta(&spec.hints));
    Value::Object(tool)
}

/// The views `#[tool]` emits as constants: each provider's declaration under its default
/// settings, named by the provider's command-line name.
pub const DEFAULT_VIEWS: [&str; 6] = [
    "openai",
    "openai-responses",
    "anthropic",
    "ollama",
    "gemini",
    "mcp",
];

/// Whether a default view's declaration depends on the output schema (Gemini's
/// `responseJsonSchema`, MCP's `outputSchema`).
pub fn uses_output_schema(view: &str) -> bool {
    matches!(view, "gemini" | "mcp")
}

/// One default view's declaration; `Err` when the view refuses the schema (a strict tool whose
/// schema cannot be strict), `None` for an unknown view name.
pub fn default_declaration(view: &str, spec: &ToolSpec<'_>) -> Option<Result<Value, ViewError>> {
    Some(match view {
        "openai" => openai_chat(spec, StrictPolicy::AsDeclared),
        "openai-responses" => openai_responses(spec, StrictPolicy::AsDeclared),
        "anthropic" => Ok(anthropic(spec)),
        "ollama" => Ok(ollama(spec)),
        "gemini" => gemini(spec, GeminiSchemaField::JsonSchema),
        "mcp" => Ok(mcp(spec)),
        _ => return None,
    })
}

/// Every default view that can be built, serialized: what `#[tool]` emits. With
/// `output_known == false` (the output schema is only known at run time), the views that depend
/// on it are left out; a view that refuses the schema is left out too, so the codec reports the
/// refusal at run time as it would for any tool.
pub fn default_declarations(
    spec: &ToolSpec<'_>,
    output_known: bool,
) -> Vec<(&'static str, String)> {
    DEFAULT_VIEWS
        .iter()
        .filter(|v| output_known || !uses_output_schema(v))
        .filter_map(|v| match default_declaration(v, spec)? {
            Ok(decl) => Some((*v, decl.to_string())),
            Err(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(parameters: &'a Value, strict: Option<bool>) -> ToolSpec<'a> {
        ToolSpec {
            name: "search_notes",
            description: "Search",
            parameters,
            output_schema: None,
            strict,
            hints: McpHints::for_category("read_only", false).unwrap(),
        }
    }

    #[test]
    fn strict_refusal_leaves_the_openai_views_out() {
        let open = json!({"type": "object", "properties": {
            "h": {"type": "object", "additionalProperties": {"type": "string"}}}});
        let views: Vec<&str> = default_declarations(&spec(&open, Some(true)), true)
            .into_iter()
            .map(|(v, _)| v)
            .collect();
        assert_eq!(views, ["anthropic", "ollama", "gemini", "mcp"]);
        let without_output: Vec<&str> = default_declarations(&spec(&open, None), false)
            .into_iter()
            .map(|(v, _)| v)
            .collect();
        assert_eq!(
            without_output,
            ["openai", "openai-responses", "anthropic", "ollama"]
        );
    }

    #[test]
    fn hints_follow_the_category_table() {
        let h = McpHints::for_category("read_only", false).unwrap();
        assert!(h.read_only && h.idempotent && !h.destructive && !h.open_world);
        let u = McpHints::for_category("unspecified", false).unwrap();
        assert!(!u.read_only && u.destructive && u.open_world && !u.idempotent);
        assert!(McpHints::for_category("ReadOnly", false).is_none());
        assert_eq!(title_of("search-notes_now"), "Search notes now");
    }
}
