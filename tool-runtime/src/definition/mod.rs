//! The canonical definition of a tool: what every provider view, validator and policy decision is
//! derived from.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// What a tool may do to the world, which decides how the executor gates it.
///
/// The order of the variants is not meaningful; use [`Safety::is_read_only`], [`Safety::is_destructive`]
/// and [`Safety::is_open_world`] rather than comparing.
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

/// How a tool without a schema may be used: each mode an explicit opt-in.
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
    /// Always `"function"`, as in the canonical definition's shape.
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
    /// Whether the executor may retry a failed call although the tool is neither read-only nor
    /// idempotent (`#[tool(retry)]`): the author vouches that repeating it is harmless.
    #[serde(default, skip_serializing_if = "is_false")]
    pub retry: bool,
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
    /// Who the tool's calls go to, in words for the person at its first-time gate (an
    /// imported MCP tool: its server, and the command that starts it or its URL). The
    /// description stands in when absent. Never shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<Cow<'static, str>>,
    /// Where the schema came from. Set by the macro and by [`DefinitionBuilder`]; a definition
    /// registered at run time (`ToolSet::register_dynamic`, a catalog) is always
    /// [`SchemaOrigin::Dynamic`], whatever its JSON says, so that JSON cannot switch off the
    /// meta-schema check or validation.
    #[serde(default = "dynamic_origin")]
    pub schema_origin: SchemaOrigin,
    /// Provider declarations `#[tool]` serialized at compile time, when the whole schema was known
    /// then; see [`PrebuiltDeclarations`]. Never serialized.
    #[serde(skip)]
    #[doc(hidden)]
    pub prebuilt: Option<&'static PrebuiltDeclarations>,
}

/// `value` as JSON text, serialized straight into the `RawValue` (a `Value` always serializes to
/// valid JSON, so the text is not parsed again to be checked).
/// Whether a written schema that differs from schemars' panics (debug builds only).
pub(crate) fn strict_written() -> bool {
    std::env::var("TOOL_RUNTIME_STRICT_WRITTEN").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("a serde_json::Value always serializes")
}

fn is_false(b: &bool) -> bool {
    !*b
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
            parameters: raw(parameters),
            output_schema: None,
            strict: None,
            safety: Safety::Unspecified,
            reversible: false,
            idempotent: false,
            retry: false,
            intent: None,
            tags: Vec::new(),
            examples: Vec::new(),
            timeout: None,
            sensitive: Vec::new(),
            service: None,
            schema_origin: SchemaOrigin::Dynamic,
            prebuilt: None,
        }
    }

    /// The argument schema parsed into a [`Value`].
    ///
    /// # Panics
    ///
    /// When the schema nests deeper than serde_json can read (128 levels), which registration
    /// refuses (see [`MAX_SCHEMA_DEPTH`]): every definition a [`ToolSet`](crate::ToolSet) holds
    /// can be read. For a definition that did not come from one, use
    /// [`ToolDefinition::try_parameters_value`].
    pub fn parameters_value(&self) -> Value {
        self.try_parameters_value()
            .expect("registered schemas nest at most MAX_SCHEMA_DEPTH levels")
    }

    /// The argument schema parsed into a [`Value`], or why it is not read: it nests deeper than
    /// [`MAX_SCHEMA_DEPTH`] levels.
    pub fn try_parameters_value(&self) -> Result<Value, SchemaTooDeep> {
        let text = self.parameters.get();
        let depth = json_depth(text);
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaTooDeep { depth });
        }
        serde_json::from_str(text).map_err(|_| SchemaTooDeep { depth })
    }

    /// The names of the properties the schema itself marks as secret, at any depth (nested
    /// objects, array items, `$defs`): `"format": "password"`, `"writeOnly": true` or
    /// `"x-sensitive": true`. Registration adds them to [`ToolDefinition::sensitive`], so the
    /// audit trail, the previews and the stores redact them like names listed there.
    pub fn schema_secret_names(&self) -> Vec<String> {
        let text = self.parameters.get();
        if !["password", "writeOnly", "x-sensitive"]
            .iter()
            .any(|marker| text.contains(marker))
        {
            return Vec::new();
        }
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(map) => {
                    if let Some(Value::Object(props)) = map.get("properties") {
                        for (name, prop) in props {
                            let marked = prop.get("format").and_then(Value::as_str)
                                == Some("password")
                                || prop.get("writeOnly") == Some(&Value::Bool(true))
                                || prop.get("x-sensitive") == Some(&Value::Bool(true));
                            if marked && !out.contains(name) {
                                out.push(name.clone());
                            }
                        }
                    }
                    map.values().for_each(|v| walk(v, out));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        if let Ok(schema) = self.try_parameters_value() {
            walk(&schema, &mut out);
        }
        out
    }

    /// Whether the tool may run without a validated schema, and how.
    pub fn no_schema_mode(&self) -> Option<NoSchemaMode> {
        match self.schema_origin {
            SchemaOrigin::None(mode) => Some(mode),
            _ => None,
        }
    }
}

/// Builds a [`ToolDefinition`] step by step; what `#[tool]` expands to, and the easiest way to
/// write a definition by hand.
///
/// ```
/// use tool_runtime::definition::DefinitionBuilder;
/// use tool_runtime::definition::Safety;
///
/// let def = DefinitionBuilder::new("ping", "Answers pong")
///     .verbatim(r#"{"type":"object","properties":{}}"#)
///     .safety(Safety::ReadOnly)
///     .build();
/// assert_eq!(def.parameters.get(), r#"{"type":"object","properties":{}}"#);
/// ```
#[derive(Debug, Clone)]
pub struct DefinitionBuilder {
    def: ToolDefinition,
}

impl DefinitionBuilder {
    /// A definition named `name` with an empty object schema, origin derived.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
    ) -> Self {
        let mut def = ToolDefinition::new(
            name,
            description,
            &serde_json::json!({"type": "object", "properties": {}}),
        );
        def.schema_origin = SchemaOrigin::Derived;
        DefinitionBuilder { def }
    }

    /// The argument schema derived from `A` with schemars (see [`crate::schema::derive`]).
    pub fn derived<A: schemars::JsonSchema>(self) -> Self {
        self.derived_by(crate::schema::derive::<A>)
    }

    /// [`DefinitionBuilder::derived`] with schemars' derivation passed as a function, so that
    /// the builder's code is compiled once rather than once per argument type.
    #[inline(never)]
    fn derived_by(mut self, derive: fn() -> Value) -> Self {
        self.def.parameters = raw(&derive());
        self.def.schema_origin = SchemaOrigin::Derived;
        self
    }

    /// The argument schema `#[tool]` wrote for `A` at compile time (see
    /// `__private::written`): the same text schemars derives, without deriving it. Without
    /// one (`None`), or when a type nested in `A` has none, it is derived by schemars.
    ///
    /// With the `verify-written` feature, debug builds derive it with schemars too and compare.
    /// On a difference, which would be a bug in the macros, a hand-written `JsonSchema` on a
    /// `#[derive(ToolArgs)]` type, or a schemars release that prints schemas differently, they
    /// keep schemars' text and log a warning naming the tool; with the environment variable
    /// `TOOL_RUNTIME_STRICT_WRITTEN` set to anything but `0` (this workspace sets it for its own
    /// tests and examples in `.cargo/config.toml`) they panic instead, so that a test suite fails
    /// on it.
    pub fn written<A: schemars::JsonSchema>(
        self,
        written: Option<&'static crate::schema::written::Written>,
    ) -> Self {
        self.written_by(written, crate::schema::derive::<A>)
    }

    /// [`DefinitionBuilder::written`], compiled once: only schemars' derivation depends on the
    /// argument type, and it is passed as a function.
    #[inline(never)]
    fn written_by(
        mut self,
        written: Option<&'static crate::schema::written::Written>,
        derive: fn() -> Value,
    ) -> Self {
        let Some(text) = written.and_then(crate::schema::written::compose) else {
            return self.derived_by(derive);
        };
        if cfg!(all(debug_assertions, feature = "verify-written")) {
            let derived = raw(&derive());
            if derived.get() != text {
                if strict_written() {
                    panic!(
                        "tool {:?}: the schema #[tool] wrote differs from schemars'\n  written: \
                         {text}\n  derived: {}",
                        self.def.name,
                        derived.get()
                    );
                }
                tracing::warn!(
                    tool = %self.def.name,
                    written = %text,
                    derived = %derived.get(),
                    "the schema #[tool] wrote differs from schemars'; using schemars'"
                );
                self.def.parameters = derived;
                self.def.schema_origin = SchemaOrigin::Derived;
                return self;
            }
        }
        self.def.parameters = RawValue::from_string(text)
            .expect("the macros write whole JSON texts, and serde_json the defaults");
        self.def.schema_origin = SchemaOrigin::Derived;
        self
    }

    /// The argument schema `#[tool]` wrote whole at compile time (nothing in it left to run
    /// time), used as written: what `#[tool]` emits without the `verify-written` feature, so that
    /// schemars is not compiled for the arguments.
    #[doc(hidden)]
    pub fn written_text(mut self, text: &'static str) -> Self {
        self.def.parameters =
            RawValue::from_string(text.to_owned()).expect("the macros write whole JSON texts");
        self.def.schema_origin = SchemaOrigin::Derived;
        self
    }

    /// A verbatim schema, stored byte-for-byte.
    ///
    /// # Panics
    /// If `text` is not valid JSON. `#[tool]` checks this at compile time.
    pub fn verbatim(mut self, text: &str) -> Self {
        self.def.parameters = RawValue::from_string(text.to_owned()).unwrap_or_else(|e| {
            panic!(
                "tool {:?}: verbatim schema is not valid JSON: {e}",
                self.def.name
            )
        });
        self.def.schema_origin = SchemaOrigin::Verbatim;
        self
    }

    /// No schema (`allow_no_schema`): an open object is declared, nothing is validated, and the
    /// mode constrains how the tool may run.
    pub fn no_schema(mut self, mode: NoSchemaMode) -> Self {
        self.def.parameters =
            RawValue::from_string(r#"{"type":"object"}"#.to_owned()).expect("constant JSON");
        self.def.schema_origin = SchemaOrigin::None(mode);
        self
    }

    /// The output schema, derived from `T` (MCP `outputSchema`). A `null` schema (unit output)
    /// is left out.
    pub fn output<T: schemars::JsonSchema>(mut self) -> Self {
        let schema = crate::schema::output::<T>();
        // a unit output has no result to describe, and a rich one (`Content`) is not structured
        self.def.output_schema = (schema.get("type").and_then(Value::as_str) != Some("null")
            && !crate::content::is_content_schema(&schema))
        .then_some(schema);
        self
    }

    /// The safety category.
    pub fn safety(mut self, safety: Safety) -> Self {
        self.def.safety = safety;
        self
    }

    /// Whether the effect can be undone.
    pub fn reversible(mut self, yes: bool) -> Self {
        self.def.reversible = yes;
        self
    }

    /// Whether repeating a call has no further effect.
    pub fn idempotent(mut self, yes: bool) -> Self {
        self.def.idempotent = yes;
        self
    }

    /// Lets the executor retry failed calls of a tool that is neither read-only nor idempotent.
    pub fn retry(mut self, yes: bool) -> Self {
        self.def.retry = yes;
        self
    }

    /// Requests OpenAI strict mode. Whether the schema can be strict is checked at compile time for
    /// verbatim schemas and by [`ToolDefinition::strict_problems`] at registration otherwise.
    pub fn strict(mut self, yes: bool) -> Self {
        self.def.strict = yes.then_some(true);
        self
    }

    /// The intent template, e.g. `"Search your notes for {query}"`.
    pub fn intent(mut self, template: impl Into<Cow<'static, str>>) -> Self {
        self.def.intent = Some(template.into());
        self
    }

    /// Tags for pre-selection.
    pub fn tags(mut self, tags: &[&'static str]) -> Self {
        self.def.tags = tags.iter().map(|t| Cow::Borrowed(*t)).collect();
        self
    }

    /// Example argument objects, as JSON texts.
    ///
    /// # Panics
    /// If one is not valid JSON. `#[tool]` checks this at compile time.
    pub fn examples(mut self, examples: &[&str]) -> Self {
        self.def.examples = examples
            .iter()
            .map(|e| {
                serde_json::from_str(e).unwrap_or_else(|err| {
                    panic!("tool {:?}: example is not JSON: {err}", self.def.name)
                })
            })
            .collect();
        self
    }

    /// The per-tool timeout in milliseconds.
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.def.timeout = Some(Duration::from_millis(ms));
        self
    }

    /// Argument names the audit trail redacts.
    pub fn sensitive(mut self, names: &[&'static str]) -> Self {
        self.def.sensitive = names.iter().map(|t| Cow::Borrowed(*t)).collect();
        self
    }

    /// The definition. A derived schema with `strict` set is brought into strict form here
    /// (see [`crate::schema::strictify`]); a verbatim one is never touched.
    pub fn build(mut self) -> ToolDefinition {
        if self.def.strict == Some(true) && self.def.schema_origin == SchemaOrigin::Derived {
            let mut schema = self.def.parameters_value();
            crate::schema::strictify(&mut schema);
            self.def.parameters = raw(&schema);
        }
        self.def
    }
}

impl ToolDefinition {
    /// Why this definition's schema cannot be used in OpenAI strict mode, when `strict` is set:
    /// one `(JSON pointer, message)` per problem; empty when strict is not requested or holds.
    ///
    /// Strict mode needs `additionalProperties: false` on every object, every property listed in
    /// `required` (optional ones as a union with `null`), and no open maps. `#[tool]` checks this
    /// at compile time for verbatim schemas; derived schemas are only known at run time, so
    /// registration through `toolset!` checks them with this.
    pub fn strict_problems(&self) -> Vec<(String, String)> {
        if self.strict != Some(true) {
            return Vec::new();
        }
        crate::schema::strict_problems(&self.parameters_value())
    }
}

/// Provider declarations serialized by `#[tool]` at compile time, for tools whose whole schema is
/// known then (verbatim schemas, arguments of primitive types): the provider codecs splice these
/// texts into requests instead of building and serializing each declaration at run time.
///
/// The texts are built by `tool-wire`, the same code the codecs use, from the fields recorded here.
/// A codec uses one only while the definition still has exactly these fields (a clone changed after
/// it was built gets its declarations built at run time, like any other definition).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrebuiltDeclarations {
    /// The name the declarations carry.
    pub name: &'static str,
    /// The description they carry.
    pub description: &'static str,
    /// The exact text of [`ToolDefinition::parameters`] they were built from.
    pub parameters: &'static str,
    /// [`ToolDefinition::strict`] as it was.
    pub strict: Option<bool>,
    /// [`ToolDefinition::safety`] as it was (MCP annotations).
    pub safety: Safety,
    /// [`ToolDefinition::idempotent`] as it was (MCP annotations).
    pub idempotent: bool,
    /// [`ToolDefinition::reversible`] as it was (the MCP declaration's safety facts).
    pub reversible: bool,
    /// The output schema the output-dependent views (Gemini, MCP) were built with, compact JSON:
    /// `Some(None)` for none, `None` when it was not known at compile time (those views are then
    /// absent from `views`).
    pub output_schema: Option<Option<&'static str>>,
    /// `(view, declaration)`: the view is a provider's command-line name (`openai`,
    /// `openai-responses`, `anthropic`, `ollama`, `gemini`, `mcp`) under its default settings; the
    /// declaration is compact JSON. A view that refused the schema is absent.
    pub views: &'static [(&'static str, &'static str)],
}

/// Whether a name is accepted by every provider: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The deepest nesting of objects and arrays a tool's `parameters` schema may have, counted from
/// the schema's own top level.
///
/// Real schemas stay under about ten levels (the Berkeley Function Calling Leaderboard's deepest
/// is six). The limit is far below serde_json's recursion limit of 128 because every provider
/// view wraps the schema in a few levels of its own (the declaration, the `tools` array, the
/// request body) and the Gemini view rewrites it recursively: a schema accepted here can always
/// be read, rewritten and sent without reaching that limit. Registration refuses deeper schemas
/// ([`RegistrationError::SchemaTooDeep`](crate::toolset::RegistrationError::SchemaTooDeep)).
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// A schema nests deeper than [`MAX_SCHEMA_DEPTH`] levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the parameters schema nests {depth} levels deep, more than the {MAX_SCHEMA_DEPTH} allowed; \
     flatten it or move repeated parts under \"$defs\" and refer to them with \"$ref\""
)]
pub struct SchemaTooDeep {
    /// How deep the schema nests.
    pub depth: usize,
}

/// How deeply objects and arrays nest in a JSON text (`0` for a scalar, `1` for `{}`), read in
/// one pass without recursion, so that any depth is measured without exhausting the stack.
///
/// The text is expected to be valid JSON (a `RawValue`'s); on other text the count is still
/// finite and means little.
pub fn json_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
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

mod intent;
pub use intent::INTENT_VALUE_CHARS;

#[cfg(test)]
mod tests;
