//! The canonical definition of a tool: what every provider view, validator and policy decision is
//! derived from.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// What a tool may do to the world, which decides how the executor gates it.
///
/// The order of the variants is not meaningful; use [`Safety::requires_confirmation_by_default`]
/// and friends rather than comparing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Safety {
    /// Reads and changes nothing; runs at once.
    ReadOnly,
    /// Adds new artefacts and touches nothing existing (note-taking); confirmation is configurable.
    Create,
    /// Changes or deletes existing work; always confirmed, with a preview.
    Modify,
    /// Talks to a service outside the system; gated on first use per session.
    External,
    /// No category was declared. Treated as the most restrictive of all: confirmed like
    /// [`Safety::Modify`] and gated like [`Safety::External`], as MCP's annotation defaults assume a
    /// destructive, open-world tool. Forgetting the category can cost a confirmation, never skip one.
    #[default]
    Unspecified,
}

impl Safety {
    /// Whether the tool only reads.
    pub fn is_read_only(self) -> bool {
        matches!(self, Safety::ReadOnly)
    }

    /// Whether the tool may change or delete existing work (MCP `destructiveHint`).
    pub fn is_destructive(self) -> bool {
        matches!(self, Safety::Modify | Safety::Unspecified)
    }

    /// Whether the tool talks to something outside the system (MCP `openWorldHint`).
    pub fn is_open_world(self) -> bool {
        matches!(self, Safety::External | Safety::Unspecified)
    }

    /// The name used in configuration, audit records and the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Safety::ReadOnly => "read_only",
            Safety::Create => "create",
            Safety::Modify => "modify",
            Safety::External => "external",
            Safety::Unspecified => "unspecified",
        }
    }
}

/// How a tool without a schema may be used (seed 004's explicit opt-in modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoSchemaMode {
    /// Instantiation allowed only for read-only operation; side effects need explicit approval.
    ReadOnly,
    /// Every call is queued for human approval before it runs.
    HumanApproval,
    /// Runs without a schema. Not recommended without other guardrails.
    Full,
}

/// Where a tool's argument schema came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "mode")]
pub enum SchemaOrigin {
    /// Derived from the argument type with schemars.
    Derived,
    /// Supplied by the author (inline or from a file) and kept byte-for-byte.
    Verbatim,
    /// Registered at run time from JSON (an MCP server, a catalog file).
    Dynamic,
    /// The author opted out of a schema with `allow_no_schema`, constrained by this mode.
    None(NoSchemaMode),
}

/// The canonical definition of one tool.
///
/// This is the single source of truth: provider declarations are views of it, the validator is
/// compiled from `parameters`, and the executor's policy reads `safety` and the flags.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Always `"function"`, as in seed 004's canonical shape.
    #[serde(rename = "type", default = "function_type")]
    pub kind: Cow<'static, str>,
    /// Unique name, `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: Cow<'static, str>,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: Cow<'static, str>,
    /// The canonical JSON Schema of the arguments. For verbatim schemas the exact bytes the
    /// author wrote; compare with [`ToolDefinition::parameters_value`] for structure.
    pub parameters: Box<RawValue>,
    /// JSON Schema of a successful result, when known (MCP `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// OpenAI strict mode requested by the author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Safety category.
    #[serde(default)]
    pub safety: Safety,
    /// Whether the effect can be undone.
    #[serde(default)]
    pub reversible: bool,
    /// Whether calling twice with the same arguments has the same effect as once.
    #[serde(default)]
    pub idempotent: bool,
    /// Human-readable template such as `"Search your notes for {query}"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Cow<'static, str>>,
    /// Free-form tags, used by pre-selection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Cow<'static, str>>,
    /// Example argument objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
    /// Per-tool timeout, overriding the executor's default.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Argument names the audit trail must redact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive: Vec<Cow<'static, str>>,
    /// Where the schema came from.
    #[serde(default = "dynamic_origin")]
    pub schema_origin: SchemaOrigin,
}

fn function_type() -> Cow<'static, str> {
    Cow::Borrowed("function")
}

fn dynamic_origin() -> SchemaOrigin {
    SchemaOrigin::Dynamic
}

impl ToolDefinition {
    /// A definition with the given name, description and schema, every other field defaulted
    /// (category unspecified, so the most restrictive policy applies).
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        parameters: &Value,
    ) -> Self {
        ToolDefinition {
            kind: function_type(),
            name: name.into(),
            description: description.into(),
            parameters: RawValue::from_string(parameters.to_string())
                .expect("a serde_json::Value always serializes to valid JSON"),
            output_schema: None,
            strict: None,
            safety: Safety::Unspecified,
            reversible: false,
            idempotent: false,
            intent: None,
            tags: Vec::new(),
            examples: Vec::new(),
            timeout: None,
            sensitive: Vec::new(),
            schema_origin: SchemaOrigin::Dynamic,
        }
    }

    /// The argument schema parsed into a [`Value`].
    pub fn parameters_value(&self) -> Value {
        serde_json::from_str(self.parameters.get())
            .expect("parameters is a RawValue and therefore valid JSON")
    }

    /// Whether the tool may run without a validated schema, and how.
    pub fn no_schema_mode(&self) -> Option<NoSchemaMode> {
        match self.schema_origin {
            SchemaOrigin::None(mode) => Some(mode),
            _ => None,
        }
    }

    /// Fills the intent template with the given arguments: `{query}` becomes the argument's value
    /// (strings without quotes, anything else as compact JSON). Unknown placeholders are left as
    /// they are so nothing is silently hidden from the user.
    pub fn render_intent(&self, args: &Value) -> Option<String> {
        let template = self.intent.as_deref()?;
        let mut out = String::with_capacity(template.len() + 16);
        let mut rest = template;
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            match after.find('}') {
                Some(end) => {
                    let key = &after[..end];
                    match args.get(key) {
                        Some(Value::String(s)) => out.push_str(s),
                        Some(v) => out.push_str(&v.to_string()),
                        None => {
                            out.push('{');
                            out.push_str(key);
                            out.push('}');
                        }
                    }
                    rest = &after[end + 1..];
                }
                None => {
                    out.push_str(&rest[start..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        Some(out)
    }
}

/// Whether a name is accepted by every provider: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(d.as_millis() as u64),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_provider_rules() {
        assert!(is_valid_tool_name("search_notes"));
        assert!(is_valid_tool_name("a-b_C9"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("has space"));
        assert!(!is_valid_tool_name("dotted.name"));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
    }

    #[test]
    fn intent_fills_placeholders_and_keeps_unknown_ones() {
        let mut def = ToolDefinition::new("s", "d", &json!({"type": "object"}));
        def.intent = Some("Search {query} in {limit} notes, {missing}".into());
        let text = def.render_intent(&json!({"query": "rust", "limit": 3}));
        assert_eq!(text.as_deref(), Some("Search rust in 3 notes, {missing}"));
    }

    #[test]
    fn verbatim_parameters_survive_a_round_trip_byte_for_byte() {
        let raw = r#"{ "type":"object",  "properties":{"b":{"type":"string"},"a":{}} }"#;
        let json = format!(r#"{{"name":"t","description":"d","parameters":{raw}}}"#);
        let def: ToolDefinition = serde_json::from_str(&json).unwrap();
        assert_eq!(def.parameters.get(), raw);
        assert!(serde_json::to_string(&def).unwrap().contains(raw));
        assert_eq!(def.safety, Safety::Unspecified);
    }
}
