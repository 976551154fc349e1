//! One registered tool: its definition, how its arguments are checked, and its body; and the
//! fast and slow paths a call takes through them. `ToolSet` is the registry of entries and owns
//! none of this, so hydration depends on nothing above it.

use std::any::Any;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::plain::Plain;
use super::plan::Plan;
use super::plan::fields::Bound;
use super::plan::tree::{Tape, Tree};
use super::refusal::invalid_arguments;
use super::{
    Arguments, Limits, Repair, ToolCall, ToolInstance, check_size, check_value_limits, exact_text,
    exact_value, parse_arguments,
};
use crate::definition::{
    MAX_SCHEMA_DEPTH, NoSchemaMode, SchemaOrigin, SchemaTooDeep, ToolDefinition,
    is_valid_tool_name, json_depth,
};
use crate::error::{ErrorCode, ToolError, Violation};
use crate::executor::audit::KeyPlan;
use crate::tool::{CallContext, StateRequirement};
use crate::validate::{SchemaError, Validator};

/// The body of a tool registered at run time: JSON arguments in, JSON result out.
pub type DynHandler =
    Arc<dyn Fn(Value, CallContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegistrationError {
    /// Two tools share a name.
    #[error("two tools are named {0:?}; tool names must be unique within a ToolSet")]
    DuplicateName(String),
    /// A name providers reject.
    #[error("tool name {0:?} is invalid: providers require ^[a-zA-Z0-9_-]{{1,64}}$")]
    InvalidName(String),
    /// The schema does not compile.
    #[error("tool {name:?}: {error}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// Why.
        error: SchemaError,
    },
    /// The schema's top level is not an object schema.
    #[error("tool {0:?}: the parameters schema must describe an object (\"type\": \"object\")")]
    NotAnObject(String),
    /// The schema refers to a document outside itself; nothing is fetched at run time.
    #[error(
        "tool {name:?}: remote $ref {reference:?} is not allowed; inline it or use a local \"#/$defs/...\" reference"
    )]
    RemoteRef {
        /// The tool.
        name: String,
        /// The offending reference.
        reference: String,
    },
    /// A dynamic definition is not in the canonical shape.
    #[error("tool {name:?}: {reason}")]
    InvalidDefinition {
        /// The tool (or the catalog position when it has no name).
        name: String,
        /// Why.
        reason: String,
    },
    /// A tool needs state that was not provided.
    #[error("tool {tool:?} needs state of type {type_name}; add it with ToolSet::with_state")]
    MissingState {
        /// The tool.
        tool: String,
        /// The missing type.
        type_name: &'static str,
    },
    /// A verbatim schema allows a value for a property that the tool's argument type refuses
    /// (checked at registration for the types `#[tool]` cannot see into).
    #[error(
        "tool {name:?}: property {property:?} is {schema}; the schema allows {allows}, but the \
         argument type refuses it ({refused}): {fix}"
    )]
    TypeDisagrees {
        /// The tool.
        name: String,
        /// The property, as the schema names it.
        property: String,
        /// The property's schema.
        schema: String,
        /// What the schema allows that the type refused.
        allows: String,
        /// The type's refusal.
        refused: String,
        /// What to change.
        fix: String,
    },
    /// A catalog file could not be read.
    #[error("catalog: {0}")]
    Catalog(String),
    /// The schema nests objects and arrays deeper than
    /// [`MAX_SCHEMA_DEPTH`] levels.
    #[error("tool {name:?}: {error}")]
    SchemaTooDeep {
        /// The tool.
        name: String,
        /// How deep.
        error: SchemaTooDeep,
    },
}

/// Arguments as the fast path reads them: text, or an object a provider already parsed.
#[derive(Clone, Copy)]
pub(crate) enum Sent<'a> {
    Text(&'a str),
    Object(&'a Value),
}

/// Type-erased access to one registered tool.
pub(crate) trait Handler: Send + Sync {
    /// Slow path: the arguments were validated as JSON; now make them typed.
    fn deserialize(&self, args: Value) -> Result<Box<dyn Any + Send + Sync>, ToolError>;
    /// Fast path through the guard: straight from what was sent into the typed arguments, the
    /// plan checking it as it is read (a generated reader is called from the check itself, see
    /// [`Check::Plan`]). `None` sends the call down the slow path, which explains what is wrong.
    fn fast(
        &self,
        _sent: Sent<'_>,
        _plan: &Plan,
        _max_depth: usize,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        None
    }
    /// The typed arguments as JSON.
    fn to_json(&self, typed: &(dyn Any + Send + Sync)) -> Value;
    /// The typed arguments as a [`Plain`] tree, which stands for [`Handler::to_json`] without
    /// building its maps; `None` where it cannot (then `to_json` makes them).
    fn to_plain(&self, _typed: &(dyn Any + Send + Sync)) -> Option<Plain> {
        None
    }
    fn run(
        &self,
        args: Box<dyn Any + Send + Sync>,
        cx: CallContext,
    ) -> BoxFuture<'static, Result<Value, ToolError>>;
    fn required_state(&self) -> Vec<StateRequirement>;
    fn is_runnable(&self) -> bool {
        true
    }
    /// Whether [`Handler::to_json`] writes an argument the model left unset as `null` (a typed
    /// argument's `None`), so that a null there says nothing the tool would not read from its
    /// absence. Arguments held as JSON are as the model sent them.
    fn writes_unset_as_null(&self) -> bool {
        false
    }
}

struct Dynamic(Option<DynHandler>);

impl Handler for Dynamic {
    fn deserialize(&self, args: Value) -> Result<Box<dyn Any + Send + Sync>, ToolError> {
        Ok(Box::new(args))
    }

    fn to_json(&self, typed: &(dyn Any + Send + Sync)) -> Value {
        typed
            .downcast_ref::<Value>()
            .expect("dynamic tools hold JSON")
            .clone()
    }

    fn run(
        &self,
        args: Box<dyn Any + Send + Sync>,
        cx: CallContext,
    ) -> BoxFuture<'static, Result<Value, ToolError>> {
        let args = *args.downcast::<Value>().expect("dynamic tools hold JSON");
        match &self.0 {
            Some(h) => h(args, cx),
            None => futures::future::ready(Err(ToolError::new(
                ErrorCode::NOT_ALLOWED,
                "this tool is declared without a body in this process and cannot be run here",
            )))
            .boxed(),
        }
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        Vec::new()
    }

    fn is_runnable(&self) -> bool {
        self.0.is_some()
    }
}

/// How one tool's arguments are checked.
pub(crate) enum Check {
    /// `allow_no_schema`: nothing to check against.
    None,
    /// A plan compiled from the schema decides; the validator, compiled on the first refusal,
    /// explains. `fast` is whether the typed arguments may be deserialized straight from the
    /// text, the plan checking the text as it is read (derived schemas). Verbatim and dynamic
    /// schemas are decided on the parsed `Value`, the document the author's schema describes.
    Plan {
        plan: Plan,
        fast: bool,
        /// The reader `#[tool]` generated, with how it lines up with the plan, when it can stand
        /// for it.
        reader: Option<Bound>,
        validator: OnceLock<Result<Validator, SchemaError>>,
    },
    /// The schema uses keywords no plan expresses: the validator, compiled at registration.
    Validator(Validator),
}

/// How many times registration has compiled a tool's check in this process (see
/// [`crate::__private::compiled`]).
pub(crate) static CHECKS_COMPILED: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

impl Check {
    /// Checks a definition the way registration promises (a valid name, an object schema, no
    /// remote `$ref`, a schema that is itself valid) and compiles how its arguments are checked.
    pub(super) fn of(definition: &ToolDefinition) -> Result<Check, RegistrationError> {
        CHECKS_COMPILED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = valid_name(definition)?;
        // before anything reads the schema into a tree: past serde_json's recursion limit a
        // `Value` cannot be made at all, and the provider views add levels of their own
        let depth = json_depth(definition.parameters.get());
        if depth > MAX_SCHEMA_DEPTH {
            return Err(RegistrationError::SchemaTooDeep {
                name,
                error: SchemaTooDeep { depth },
            });
        }
        valid_kind(definition, &name)?;
        Ok(match definition.schema_origin {
            SchemaOrigin::None(_) => Check::None,
            SchemaOrigin::Derived => {
                // a derived schema is valid by construction and needs no `Value`: the plan is
                // compiled from the text read onto a tape (see `plan::tree`); only a schema the
                // plan cannot express is read again, for its validator
                let text = definition.parameters.get();
                // a valid text serde_json still cannot read (nested deeper than its recursion
                // limit) is refused here, where a `Value` would panic later
                let tape = Tape::parse(text).map_err(|e| RegistrationError::InvalidSchema {
                    name: name.clone(),
                    error: SchemaError(format!("the schema cannot be read: {e}")),
                })?;
                registrable(&name, tape.root())?;
                match Plan::compile_tree(tape.root()) {
                    Ok(plan) => Check::Plan {
                        plan,
                        fast: true,
                        reader: None,
                        validator: OnceLock::new(),
                    },
                    Err(_) => Check::Validator(
                        Validator::compile(&definition.parameters_value())
                            .map_err(|error| RegistrationError::InvalidSchema { name, error })?,
                    ),
                }
            }
            SchemaOrigin::Verbatim | SchemaOrigin::Dynamic => {
                // valid JSON that serde_json still cannot read into a tree (a number beyond
                // `f64`, such as `1e400`) is refused here, where a `Value` would panic later
                let schema: Value =
                    serde_json::from_str(definition.parameters.get()).map_err(|e| {
                        RegistrationError::InvalidSchema {
                            name: name.clone(),
                            error: SchemaError(format!("the schema cannot be read: {e}")),
                        }
                    })?;
                registrable(&name, &schema)?;
                if let Some(key) = property_with_control_character(&schema) {
                    return Err(RegistrationError::InvalidDefinition {
                        name,
                        reason: format!(
                            "property name {key:?} contains a control character; providers and \
                             terminals cannot show it faithfully, so rename the property"
                        ),
                    });
                }
                let invalid = |error| RegistrationError::InvalidSchema {
                    name: name.clone(),
                    error,
                };
                match Plan::compile(&schema) {
                    Ok(plan) => {
                        // checked against the meta-schema now, its validator compiled on first
                        // refusal; only derived schemas (above) take the fast path, whose typed
                        // reading is known to match the schema.
                        // jsonschema reads `$schema` and `$id` as URIs when it compiles, and the
                        // meta-schema's `format: uri` does not check them: a schema naming one is
                        // compiled now, so that a bad URI is refused here and not at the first
                        // refusal of a call (compiling checks it against the meta-schema too)
                        let validator = OnceLock::new();
                        let text = definition.parameters.get();
                        if text.contains("\"$schema\"") || text.contains("\"$id\"") {
                            let _ =
                                validator.set(Ok(Validator::compile(&schema).map_err(invalid)?));
                        } else {
                            Validator::check_meta(&schema).map_err(invalid)?;
                        }
                        Check::Plan {
                            plan,
                            fast: false,
                            reader: None,
                            validator,
                        }
                    }
                    Err(_) => Check::Validator(Validator::compile(&schema).map_err(invalid)?),
                }
            }
        })
    }
}

/// What registration asks of any argument schema, whichever tree it was read into: an object at
/// the top, and no `$ref` outside the document.
fn registrable<'t, J: Tree<'t>>(name: &str, schema: J) -> Result<(), RegistrationError> {
    if schema.get("type").and_then(Tree::as_str) != Some("object") {
        return Err(RegistrationError::NotAnObject(name.to_owned()));
    }
    if let Some(reference) = schema.remote_ref() {
        return Err(RegistrationError::RemoteRef {
            name: name.to_owned(),
            reference: reference.to_owned(),
        });
    }
    Ok(())
}

/// The first property name (under any `properties`) holding a control character: a name a
/// confirmation box would print raw, or a provider would refuse.
fn property_with_control_character(schema: &Value) -> Option<&str> {
    match schema {
        Value::Object(map) => map.iter().find_map(|(key, value)| {
            let named = match (key.as_str(), value) {
                ("properties", Value::Object(properties)) => properties
                    .keys()
                    .find(|name| name.chars().any(char::is_control))
                    .map(String::as_str),
                _ => None,
            };
            named.or_else(|| property_with_control_character(value))
        }),
        Value::Array(items) => items.iter().find_map(property_with_control_character),
        _ => None,
    }
}

/// One registered tool: its definition, how its arguments are checked, and its body.
pub(crate) struct Entry {
    /// Borrowed for typed tools: their definition is a `static` that nothing can change.
    definition: Cow<'static, ToolDefinition>,
    /// Shared by every set that registers the same typed tool (see [`typed_check`](super::typed::typed_check)).
    check: Arc<Check>,
    handler: Box<dyn Handler>,
    /// Which argument keys the audit need not test for secrets, made from the schema by the
    /// first call that asks (registration does not pay for tools that are never called).
    keys: OnceLock<KeyPlan>,
}

impl Entry {
    pub(crate) fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// This tool's plan of argument keys that are not secret (see [`KeyPlan`]).
    pub(crate) fn key_plan(&self) -> &KeyPlan {
        self.keys.get_or_init(|| KeyPlan::of(&self.definition))
    }

    pub(crate) fn is_runnable(&self) -> bool {
        self.handler.is_runnable()
    }

    pub(crate) fn run(
        &self,
        typed: Box<dyn Any + Send + Sync>,
        cx: CallContext,
    ) -> BoxFuture<'static, Result<Value, ToolError>> {
        self.handler.run(typed, cx)
    }

    pub(crate) fn arguments_json(&self, typed: &(dyn Any + Send + Sync)) -> Value {
        self.handler.to_json(typed)
    }

    /// See [`Handler::to_plain`].
    pub(crate) fn arguments_plain(&self, typed: &(dyn Any + Send + Sync)) -> Option<Plain> {
        self.handler.to_plain(typed)
    }

    /// See [`Handler::writes_unset_as_null`].
    pub(crate) fn writes_unset_as_null(&self) -> bool {
        self.handler.writes_unset_as_null()
    }

    /// Builds the entry, checking the definition the way registration promises (see
    /// [`Check::of`]).
    fn build(
        definition: ToolDefinition,
        handler: Box<dyn Handler>,
    ) -> Result<Entry, RegistrationError> {
        let check = Arc::new(Check::of(&definition)?);
        Ok(Entry {
            definition: with_schema_secrets(Cow::Owned(definition)),
            check,
            handler,
            keys: OnceLock::new(),
        })
    }

    /// The fast path: typed arguments straight from what was sent, checked by the plan. `None`
    /// when it does not apply or refuses; the slow path then decides and explains.
    // inlined into `hydrate`, which every call goes through
    #[inline]
    pub(crate) fn fast(
        &self,
        arguments: &Arguments,
        limits: &Limits,
    ) -> Result<Option<Box<dyn Any + Send + Sync>>, ToolError> {
        let Check::Plan {
            plan,
            fast: true,
            reader,
            ..
        } = &*self.check
        else {
            return Ok(None);
        };
        let sent = match arguments {
            Arguments::Text(text) => {
                // Only the size is checked before reading: the plan counts the nesting as serde
                // reads, and text too deep goes to the slow path, whose scan says so.
                check_size(text, limits)?;
                Sent::Text(text)
            }
            Arguments::Json(value) if !value.is_string() => {
                check_value_limits(value, limits)?;
                Sent::Object(value)
            }
            Arguments::Json(_) => return Ok(None),
        };
        // the generated reader, called straight from the check; the guard through the handler
        Ok(match (reader, sent) {
            (Some(reader), Sent::Text(text)) => reader.text(text, plan, limits.max_depth),
            (Some(reader), Sent::Object(object)) => reader.object(object, plan, limits.max_depth),
            (None, sent) => self.handler.fast(sent, plan, limits.max_depth),
        })
    }

    /// Every violation of the schema by `value`; empty when it is valid.
    fn violations(&self, value: &Value) -> Vec<Violation> {
        match &*self.check {
            Check::None => Vec::new(),
            Check::Validator(v) => v.violations(value),
            Check::Plan {
                plan, validator, ..
            } => {
                if plan.accepts(value) {
                    return Vec::new();
                }
                let compiled = validator
                    .get_or_init(|| Validator::compile(&self.definition.parameters_value()));
                match compiled {
                    Ok(v) => v.violations(value),
                    // the meta-schema accepted it at registration, so this is not expected; the
                    // plan's refusal still stands
                    Err(e) => vec![Violation::new(
                        "",
                        format!("the arguments do not satisfy the schema ({e})"),
                    )],
                }
            }
        }
    }

    /// A typed tool's entry (see `typed`), its check shared by every set in the process.
    pub(super) fn typed_of(
        definition: &'static ToolDefinition,
        check: Arc<Check>,
        handler: Box<dyn Handler>,
    ) -> Entry {
        Entry {
            definition: with_schema_secrets(Cow::Borrowed(definition)),
            check,
            handler,
            keys: OnceLock::new(),
        }
    }

    /// A tool defined at run time, with a body or declared without one.
    pub(crate) fn dynamic(
        definition: ToolDefinition,
        handler: Option<DynHandler>,
    ) -> Result<Entry, RegistrationError> {
        Entry::build(definition, Box::new(Dynamic(handler)))
    }

    /// The state its body extracts, which the set must hold.
    pub(crate) fn required_state(&self) -> Vec<StateRequirement> {
        self.handler.required_state()
    }

    /// Whether the reader `#[tool]` generated reads its arguments (see `hydrate::plan::fields`).
    pub(crate) fn has_generated_reader(&self) -> bool {
        matches!(
            &*self.check,
            Check::Plan {
                fast: true,
                reader: Some(_),
                ..
            }
        )
    }

    /// Hydrates a call to this tool: the fast path when it applies and accepts; otherwise parse
    /// (with the limits and one recorded repair), validate collecting every violation, and only
    /// then deserialize into the typed arguments. Runs nothing.
    pub(crate) fn hydrate(
        self: &Arc<Self>,
        call: &ToolCall,
        limits: &Limits,
    ) -> Result<ToolInstance, ToolError> {
        // The fast path reads integers only from integer literals (serde refuses a float for
        // an integer type), so numbers need a second look only here.
        if let Some(typed) = self.fast(&call.arguments, limits)? {
            return Ok(self.instance(call, typed, Vec::new()));
        }
        self.hydrate_slow(call, limits)
    }

    /// The slow path of [`Entry::hydrate`]: parse, validate collecting every violation, then
    /// deserialize. A function of its own, so that the fast path's frame holds none of its
    /// state.
    #[inline(never)]
    fn hydrate_slow(
        self: &Arc<Self>,
        call: &ToolCall,
        limits: &Limits,
    ) -> Result<ToolInstance, ToolError> {
        let exact = exact_numbers(&call.arguments, limits)
            .map_err(|e| e.with_detail("tool", self.definition.name.as_ref()))?;
        let sent = exact.as_ref().unwrap_or(&call.arguments);
        let (arguments, repairs) = parse_arguments(sent, limits)?;
        if self.is_checked() {
            let violations = self.violations(&arguments);
            if !violations.is_empty() {
                return Err(invalid_arguments(&self.definition, &arguments, violations));
            }
        } else if self.definition.no_schema_mode() == Some(NoSchemaMode::ReadOnly)
            && !self.definition.safety.is_read_only()
        {
            return Err(ToolError::new(
                ErrorCode::SCHEMA_REQUIRED,
                format!(
                    "tool {:?} has no schema and is registered for read-only use only",
                    self.definition.name
                ),
            ));
        }
        let typed = self.handler.deserialize(arguments)?;
        Ok(self.instance(call, typed, repairs))
    }

    fn instance(
        self: &Arc<Self>,
        call: &ToolCall,
        typed: Box<dyn Any + Send + Sync>,
        repairs: Vec<Repair>,
    ) -> ToolInstance {
        ToolInstance {
            call_id: call.id.clone(),
            entry: self.clone(),
            arguments: OnceLock::new(),
            typed,
            repairs,
        }
    }

    /// Whether a validator, or a plan standing for one, checks this tool's arguments.
    pub(crate) fn is_checked(&self) -> bool {
        !matches!(*self.check, Check::None)
    }

    /// Whether calls to this tool can take the fast path (a plan over a derived schema).
    pub(crate) fn has_fast_path(&self) -> bool {
        matches!(*self.check, Check::Plan { fast: true, .. })
    }
}

/// What registration checks of a definition besides its schema, each time a tool registers
/// (its check may be shared with a tool of the same schema, see `typed`): a valid name and
/// `"type": "function"`.
pub(super) fn admitted(definition: &ToolDefinition) -> Result<(), RegistrationError> {
    let name = valid_name(definition)?;
    valid_kind(definition, &name)
}

fn valid_name(definition: &ToolDefinition) -> Result<String, RegistrationError> {
    let name = definition.name.to_string();
    if !is_valid_tool_name(&name) {
        return Err(RegistrationError::InvalidName(name));
    }
    Ok(name)
}

fn valid_kind(definition: &ToolDefinition, name: &str) -> Result<(), RegistrationError> {
    if definition.kind != "function" {
        return Err(RegistrationError::InvalidDefinition {
            name: name.to_owned(),
            reason: format!(
                "\"type\" is {:?}; canonical definitions have \"type\": \"function\"",
                definition.kind
            ),
        });
    }
    Ok(())
}

/// The definition with the properties its schema marks as secret added to its sensitive names
/// (see [`ToolDefinition::schema_secret_names`]); borrowed as it is when there are none.
fn with_schema_secrets(
    mut definition: Cow<'static, ToolDefinition>,
) -> Cow<'static, ToolDefinition> {
    for name in definition.schema_secret_names() {
        if !definition.sensitive.iter().any(|s| *s == name) {
            definition.to_mut().sensitive.push(Cow::Owned(name));
        }
    }
    definition
}

/// The arguments with integer-valued numbers written as integers, or `None` when they have none
/// to rewrite; a refusal for a number that is not an integer but would read as one (see
/// `hydrate::numbers`). Text is scanned within the size limit only.
fn exact_numbers(arguments: &Arguments, limits: &Limits) -> Result<Option<Arguments>, ToolError> {
    Ok(match arguments {
        Arguments::Text(text) => {
            check_size(text, limits)?;
            exact_text(text)?.map(Arguments::Text)
        }
        Arguments::Json(Value::String(text)) => {
            check_size(text, limits)?;
            exact_text(text)?.map(|t| Arguments::Json(Value::String(t)))
        }
        Arguments::Json(value) => exact_value(value).map(Arguments::Json),
    })
}
