//! Pure provider codecs: JSON in, JSON out, no IO.
//!
//! One module per wire format ([`openai_chat`], [`openai_responses`], [`anthropic`], [`ollama`],
//! [`gemini`], [`mcp`]), all behind the [`Codec`] trait, plus the pieces they share:
//!
//! - [`schema`]: provider views of the canonical schema (OpenAI strict, `$ref` inlining, Gemini's
//!   OpenAPI subset). Views are computed on a copy; the canonical schema is what validates.
//! - [`cache`]: each tool's declaration built once per provider view, kept pre-serialized and
//!   spliced into the request body.
//! - [`stream`]: the [`StreamAccumulator`] trait and stream-capture parsing (SSE or NDJSON).
//! - [`outcome`]: [`ToolOutcome`] (success, error, denial) and its model-facing rendering.
//! - [`ids`]: stable ids for calls a provider sent without one.
//! - [`prompt`]: the fallback for models without native function calling.
//!
//! The flow: `encode_tools` → HTTP → `decode_response` (or an accumulator over the stream) →
//! [`Decoded::hydrate`] → executor → `encode_results`.

pub mod anthropic;
pub mod cache;
pub mod gemini;
pub mod ids;
pub mod mcp;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;
pub mod outcome;
pub mod prompt;
pub mod schema;
pub mod stream;

mod json;

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};
use tool_runtime::{
    ErrorCode, ToolCall, ToolError, ToolSet,
    definition::{NoSchemaMode, Safety, ToolDefinition},
    hydrate::ToolInstance,
};

pub use cache::DeclarationCache;
pub use outcome::{ToolOutcome, ToolResult};
pub use stream::{StreamAccumulator, StreamCapture};

/// The wire formats this crate speaks, with the names the command line uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    /// OpenAI Chat Completions (`openai`).
    OpenAiChat,
    /// OpenAI Responses (`openai-responses`).
    OpenAiResponses,
    /// Anthropic Messages (`anthropic`).
    Anthropic,
    /// Ollama `/api/chat` (`ollama`).
    Ollama,
    /// Google Gemini `generateContent` (`gemini`).
    Gemini,
    /// Model Context Protocol `tools/list` / `tools/call` (`mcp`).
    Mcp,
}

impl Provider {
    /// Every provider, in the order the command line lists them.
    pub const ALL: [Provider; 6] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Ollama,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The command-line name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    /// The provider's codec with its default settings.
    pub fn codec(self) -> Box<dyn Codec> {
        match self {
            Provider::OpenAiChat => Box::new(openai_chat::OpenAiChat::default()),
            Provider::OpenAiResponses => Box::new(openai_responses::OpenAiResponses::default()),
            Provider::Anthropic => Box::new(anthropic::Anthropic),
            Provider::Ollama => Box::new(ollama::Ollama),
            Provider::Gemini => Box::new(gemini::Gemini::default()),
            Provider::Mcp => Box::new(mcp::Mcp),
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = CodecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| CodecError::UnknownProvider(s.to_owned()))
    }
}

/// Which tools the model may or must call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides (every provider's default).
    #[default]
    Auto,
    /// The model must not call a tool.
    None,
    /// The model must call at least one tool (`required` / `any` / `ANY`).
    Required,
    /// The model must call this tool.
    Named(String),
    /// Only these tools may be called; the declared list stays the same where the provider can
    /// express that (OpenAI `allowed_tools`, which keeps the prompt cache), otherwise the
    /// declarations are filtered to the subset.
    Allowed {
        /// The tools that may be called.
        tools: Vec<String>,
        /// Whether one of them must be called.
        required: bool,
    },
    /// The model decides between text and calls, and every call it makes is constrained to the
    /// declared schema (Gemini's `VALIDATED` mode). Only Gemini has it; the others refuse it
    /// (OpenAI's counterpart is per tool: strict declarations, see
    /// [`openai_chat::StrictPolicy`]).
    Validated {
        /// Only these tools may be called (`allowedFunctionNames`); `None`: any declared tool.
        tools: Option<Vec<String>>,
    },
}

/// The tool choice plus the parallel-calls switch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolConfig {
    /// Which tools the model may or must call.
    pub choice: ToolChoice,
    /// `Some(false)`: at most one call per turn. `None`: the provider's default. Providers
    /// without the switch refuse `Some(_)` rather than silently ignore it.
    pub parallel: Option<bool>,
}

impl ToolConfig {
    /// A configuration with this choice and the provider's default for parallel calls.
    pub fn new(choice: ToolChoice) -> Self {
        ToolConfig {
            choice,
            parallel: None,
        }
    }

    /// Sets the parallel-calls switch.
    pub fn parallel(mut self, parallel: bool) -> Self {
        self.parallel = Some(parallel);
        self
    }
}

/// How a provider's choice settings land in the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChoiceEncoding {
    /// Top-level request fields to add (`tool_choice`, `parallel_tool_calls`, `toolConfig`).
    pub fields: Map<String, Value>,
    /// Declare only these tools (the provider cannot restrict calls otherwise).
    pub only: Option<Vec<String>>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// It wants tools to be called (or the response held calls, for providers without a
    /// dedicated reason).
    ToolCalls,
    /// It finished its answer.
    EndTurn,
    /// It ran out of output tokens; any call may be truncated.
    MaxTokens,
    /// Anything else, as the provider named it.
    Other(String),
    /// The response did not say (a stream that ended early).
    Unknown,
}

/// A decoded response: the text, the calls in order, why it stopped, and the assistant turn as
/// the provider sent it (to echo verbatim in the next request, which keeps provider-only data such
/// as Gemini thought signatures and Anthropic thinking blocks).
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The text parts, concatenated.
    pub text: String,
    /// The tool calls, in the order the model made them.
    pub calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub stop: StopReason,
    /// The assistant message/content/items verbatim, when decoded from a full response (and for
    /// Gemini streams, rebuilt with each call's `thoughtSignature`). `None`: echo with
    /// [`Codec::encode_assistant`].
    pub assistant: Option<Value>,
}

impl Decoded {
    /// Hydrates every call against `toolset`, in order: a typed instance or a structured error
    /// for each. Nothing runs.
    // same result type as `ToolSet::hydrate`, which callers match on
    #[allow(clippy::result_large_err)]
    pub fn hydrate(&self, toolset: &ToolSet) -> Vec<Result<ToolInstance, ToolError>> {
        self.calls
            .iter()
            .map(|c| hydrate_call(toolset, c))
            .collect()
    }
}

/// Hydrates one decoded call with [`ToolSet::hydrate`], after one normalization: a `null` sent for
/// an optional property whose canonical schema does not accept `null` means "absent" and is
/// removed (see [`schema::strict::strip_optional_nulls`]). OpenAI strict declarations make every
/// optional property nullable, so strict models send exactly such `null`s; without this step a
/// strict declaration would make valid calls fail the canonical schema. Arguments without any
/// `null`, and arguments that needed a repair to parse, go to hydration untouched (keeping its
/// recorded repairs).
// same signature as `ToolSet::hydrate`, which it wraps
#[allow(clippy::result_large_err)]
pub fn hydrate_call(toolset: &ToolSet, call: &ToolCall) -> Result<ToolInstance, ToolError> {
    let has_null = match &call.arguments {
        tool_runtime::hydrate::Arguments::Text(t) => t.contains("null"),
        tool_runtime::hydrate::Arguments::Json(v) => contains_null(v),
    };
    if has_null && let Some(def) = toolset.get(&call.name) {
        // Arguments that parse only once repaired are hydrated as sent: the call rebuilt from
        // the stripped value would no longer record the repairs, and what needed them would
        // pass as if the model had sent clean JSON.
        let Ok((value, repairs)) =
            tool_runtime::hydrate::parse_arguments(&call.arguments, toolset.limits())
        else {
            return toolset.hydrate(call);
        };
        if !repairs.is_empty() {
            return toolset.hydrate(call);
        }
        let cleaned = schema::strict::strip_optional_nulls(&def.parameters_value(), value.clone());
        if cleaned != value {
            return toolset.hydrate(&ToolCall::new(call.id.clone(), call.name.clone(), cleaned));
        }
    }
    toolset.hydrate(call)
}

fn contains_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(contains_null),
        Value::Object(m) => m.values().any(contains_null),
        _ => false,
    }
}

/// A provider's wire format. Pure: JSON in, JSON out.
pub trait Codec: Send + Sync {
    /// Which provider this is.
    fn provider(&self) -> Provider;

    /// Distinguishes settings of the same provider that change declarations (strict policy,
    /// Gemini schema field), so the [`DeclarationCache`] never mixes them.
    fn view_key(&self) -> u64 {
        0
    }

    /// The name of the compile-time declaration ([`PrebuiltDeclarations`] view) equal to what
    /// [`Codec::declare`] builds under this codec's current settings, or `None` when the settings
    /// are not the defaults `#[tool]` builds for (or the codec has no such view). The
    /// [`DeclarationCache`] then splices the constant instead of building the declaration.
    ///
    /// [`PrebuiltDeclarations`]: tool_runtime::__private::PrebuiltDeclarations
    fn prebuilt_view(&self) -> Option<&'static str> {
        None
    }

    /// One tool's declaration, built from the canonical definition (uncached).
    fn declare(&self, def: &ToolDefinition) -> Result<Value, CodecError>;

    /// How `config` lands in the request, given the tools being declared.
    fn encode_choice(&self, config: &ToolConfig) -> Result<ChoiceEncoding, CodecError>;

    /// Writes the tool-list field(s) around the already serialized declarations (a JSON array's
    /// inner text, comma separated) into `out`, which is inside an object. The default is
    /// `"tools":[...]`.
    fn write_tools_field(&self, declarations: &str, out: &mut String) {
        out.push_str("\"tools\":[");
        out.push_str(declarations);
        out.push(']');
    }

    /// The request fragment that declares `tools` under `config`, built afresh (no cache). Merge its
    /// fields into the request body. [`DeclarationCache::encode_tools`] gives the same JSON without
    /// rebuilding any declaration.
    fn encode_tools(
        &self,
        tools: &[&ToolDefinition],
        config: &ToolConfig,
    ) -> Result<Value, CodecError> {
        let choice = self.encode_choice(config)?;
        let selected = select_tools(tools, &choice, config)?;
        let declarations = selected
            .iter()
            .map(|d| self.declare(d).map(|v| v.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let text = assemble(self, &declarations.join(","), &choice.fields);
        serde_json::from_str(&text).map_err(|e| CodecError::Assembly(e.to_string()))
    }

    /// Decodes a full (non-streamed) response body.
    fn decode_response(&self, body: &Value) -> Result<Decoded, CodecError>;

    /// A fresh accumulator for one streamed response.
    fn accumulator(&self) -> Box<dyn StreamAccumulator>;

    /// The assistant turn to echo before the results when the verbatim one is not at hand (a
    /// streamed response): messages, content or items, as the provider expects them.
    fn encode_assistant(&self, text: &str, calls: &[ToolCall]) -> Vec<Value>;

    /// The results of the calls, as the messages/parts/items to append to the conversation.
    fn encode_results(&self, results: &[ToolResult]) -> Vec<Value>;
}

/// What [`tool_wire`] builds a declaration from: the definition's fields, with `parameters` parsed
/// by the caller (once per declaration).
pub(crate) fn spec_of<'a>(
    def: &'a ToolDefinition,
    parameters: &'a Value,
) -> tool_wire::ToolSpec<'a> {
    tool_wire::ToolSpec {
        name: &def.name,
        description: &def.description,
        parameters,
        output_schema: def.output_schema.as_ref(),
        strict: def.strict,
        hints: mcp_hints(def),
    }
}

/// The MCP hints of a definition, from its safety category's own predicates.
pub(crate) fn mcp_hints(def: &ToolDefinition) -> tool_wire::McpHints {
    let safety = def.safety;
    tool_wire::McpHints {
        read_only: safety.is_read_only(),
        destructive: safety.is_destructive(),
        idempotent: def.idempotent || safety.is_read_only(),
        open_world: safety.is_open_world(),
        category: safety.as_str(),
        always_confirmed: matches!(safety, Safety::Modify | Safety::Unspecified)
            || def.no_schema_mode() == Some(NoSchemaMode::HumanApproval),
        first_use_gate: matches!(safety, Safety::External | Safety::Unspecified),
        reversible: def.reversible,
    }
}

/// Keeps the tools the choice restricts the declarations to, in declaration order; refuses a
/// choice that names a tool that is not declared.
pub(crate) fn select_tools<'a>(
    tools: &[&'a ToolDefinition],
    choice: &ChoiceEncoding,
    config: &ToolConfig,
) -> Result<Vec<&'a ToolDefinition>, CodecError> {
    let named: &[String] = match &config.choice {
        ToolChoice::Named(n) => std::slice::from_ref(n),
        ToolChoice::Allowed { tools, .. } => tools,
        ToolChoice::Validated { tools: Some(tools) } => tools,
        _ => &[],
    };
    for n in named {
        if !tools.iter().any(|t| t.name == n.as_str()) {
            return Err(CodecError::UnknownChoice(n.clone()));
        }
    }
    match choice.only.as_deref() {
        None => Ok(tools.to_vec()),
        Some(names) => Ok(tools
            .iter()
            .copied()
            .filter(|t| names.iter().any(|n| t.name == n.as_str()))
            .collect()),
    }
}

/// Builds `{tools-field, choice fields...}` from the comma-joined declarations.
pub(crate) fn assemble<C: Codec + ?Sized>(
    codec: &C,
    declarations: &str,
    fields: &Map<String, Value>,
) -> String {
    let mut out = String::with_capacity(declarations.len() + 64);
    out.push('{');
    codec.write_tools_field(declarations, &mut out);
    for (k, v) in fields {
        out.push(',');
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        out.push_str(&v.to_string());
    }
    out.push('}');
    out
}

/// Errors of the codecs: malformed provider JSON, settings a provider cannot express, schemas a
/// view cannot represent. Converts into a [`ToolError`] for callers that report structured errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodecError {
    /// The provider's JSON does not have the expected shape.
    #[error("{provider}: malformed response at {pointer:?}: {message}")]
    Malformed {
        /// Which provider's format.
        provider: Provider,
        /// JSON pointer into the body or event.
        pointer: String,
        /// What was expected.
        message: String,
    },
    /// The provider has no way to express this setting.
    #[error("{provider} does not support {feature}")]
    Unsupported {
        /// Which provider.
        provider: Provider,
        /// What was asked.
        feature: String,
    },
    /// A tool choice names a tool that is not declared.
    #[error("the tool choice names {0:?}, which is not among the declared tools")]
    UnknownChoice(String),
    /// A schema cannot be expressed in a provider's view.
    #[error("tool {tool:?} cannot be declared as {view}: {reason} (at {pointer:?})")]
    Schema {
        /// The tool.
        tool: String,
        /// The view (`openai strict`, `gemini parameters`).
        view: &'static str,
        /// JSON pointer into the canonical schema.
        pointer: String,
        /// Why.
        reason: String,
    },
    /// The declarations did not join into one JSON document (a schema nested too deep to be
    /// read once wrapped in the request).
    #[error("the tool declarations cannot be assembled into a request: {0}")]
    Assembly(String),
    /// A provider name the command line does not know.
    #[error(
        "unknown provider {0:?}; expected one of openai, openai-responses, anthropic, ollama, gemini, mcp"
    )]
    UnknownProvider(String),
}

impl CodecError {
    pub(crate) fn malformed(
        provider: Provider,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        CodecError::Malformed {
            provider,
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    pub(crate) fn unsupported(provider: Provider, feature: impl Into<String>) -> Self {
        CodecError::Unsupported {
            provider,
            feature: feature.into(),
        }
    }
}

/// A tool's canonical schema as a [`Value`], refused when it nests deeper than
/// [`MAX_SCHEMA_DEPTH`](tool_runtime::definition::MAX_SCHEMA_DEPTH) (registration refuses such a
/// schema; a definition built without a `ToolSet` may still carry one).
pub(crate) fn parameters_of(def: &ToolDefinition) -> Result<Value, CodecError> {
    def.try_parameters_value().map_err(|e| CodecError::Schema {
        tool: def.name.to_string(),
        view: "any provider",
        pointer: String::new(),
        reason: e.to_string(),
    })
}

/// The code of a provider response that could not be decoded.
pub const MALFORMED_RESPONSE: ErrorCode = ErrorCode::of("MALFORMED_RESPONSE");
/// The code of a declaration or setting a provider cannot express.
pub const UNSUPPORTED_BY_PROVIDER: ErrorCode = ErrorCode::of("UNSUPPORTED_BY_PROVIDER");

impl From<CodecError> for ToolError {
    fn from(err: CodecError) -> Self {
        let code = match &err {
            CodecError::Malformed { .. } => MALFORMED_RESPONSE,
            _ => UNSUPPORTED_BY_PROVIDER,
        };
        let mut out = ToolError::new(code, err.to_string());
        if let CodecError::Malformed { pointer, .. } | CodecError::Schema { pointer, .. } = &err {
            out = out.with_detail("pointer", pointer.clone());
        }
        out
    }
}
