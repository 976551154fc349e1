//! `ToolSet`: the registry. Names unique, schemas present, validators compiled, state checked, all
//! at registration; hydration of calls against it.

mod prepare;

pub use prepare::Prepare;

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, LazyLock, OnceLock, RwLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::definition::{
    MAX_SCHEMA_DEPTH, NoSchemaMode, SchemaOrigin, SchemaTooDeep, ToolDefinition,
    is_valid_tool_name, json_depth,
};
use crate::error::{ErrorCode, ToolError, Violation};
use crate::hydrate::plan::Plan;
use crate::hydrate::plan::fields::Layout;
use crate::hydrate::plan::tree::{Tape, Tree};
use crate::hydrate::{
    Arguments, Limits, Repair, ToolCall, ToolInstance, check_size, check_value_limits, exact_text,
    exact_value, parse_arguments,
};
use crate::tool::{CallContext, Extensions, StateRequirement, Tool};
use crate::validate::{SchemaError, Validator};

/// The body of a tool registered at run time: JSON arguments in, JSON result out.
pub type DynHandler =
    Arc<dyn Fn(Value, CallContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// The longest tool name any provider accepts, in characters: unknown names are compared and
/// echoed only this far.
const MAX_NAME_CHARS: usize = 64;

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
    /// Fast path: straight from what was sent into the typed arguments, the plan checking it
    /// as it is read. `None` sends the call down the slow path, which explains what is wrong.
    fn fast(
        &self,
        _sent: Sent<'_>,
        _plan: &Plan,
        _layout: Option<&Layout>,
        _max_depth: usize,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        None
    }
    /// The typed arguments as JSON.
    fn to_json(&self, typed: &(dyn Any + Send + Sync)) -> Value;
    fn run(
        &self,
        args: Box<dyn Any + Send + Sync>,
        cx: CallContext,
    ) -> BoxFuture<'static, Result<Value, ToolError>>;
    fn required_state(&self) -> Vec<StateRequirement>;
    fn is_runnable(&self) -> bool {
        true
    }
}

struct Typed<T>(PhantomData<fn() -> T>);

impl<T: Tool> Handler for Typed<T> {
    fn fast(
        &self,
        sent: Sent<'_>,
        plan: &Plan,
        layout: Option<&Layout>,
        max_depth: usize,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        // what was sent is checked as it is read, never the typed value: serde may accept more
        // than the schema (aliases, `deserialize_with`, a struct sent as an array)
        Some(match (sent, layout, &T::__READER) {
            (Sent::Text(text), Some(layout), Some(reader)) => {
                (reader.read)(text, plan, layout, max_depth)?
            }
            (Sent::Object(object), Some(layout), Some(reader)) => {
                (reader.read_value)(object, plan, layout, max_depth)?
            }
            (Sent::Text(text), ..) => Box::new(plan.from_str::<T::Args>(text, max_depth).ok()?),
            (Sent::Object(object), ..) => {
                if !plan.accepts(object) {
                    return None;
                }
                Box::new(T::Args::deserialize(object).ok()?)
            }
        })
    }

    fn to_json(&self, typed: &(dyn Any + Send + Sync)) -> Value {
        let args = typed
            .downcast_ref::<T::Args>()
            .expect("a ToolInstance only ever holds its own tool's argument type");
        // an argument type that deserialized from JSON serializes back; if a hand-written
        // Serialize impl fails anyway, audit records null rather than the process panicking
        serde_json::to_value(args).unwrap_or(Value::Null)
    }

    fn deserialize(&self, args: Value) -> Result<Box<dyn Any + Send + Sync>, ToolError> {
        serde_json::from_value::<T::Args>(args)
            .map(|a| Box::new(a) as Box<dyn Any + Send + Sync>)
            .map_err(|e| {
                ToolError::new(
                    ErrorCode::INVALID_ARGUMENTS,
                    format!("the arguments do not fit the tool: {e}"),
                )
                .retryable(true)
                .recover("correct the arguments to match the tool's schema and call it again")
            })
    }

    fn run(
        &self,
        args: Box<dyn Any + Send + Sync>,
        cx: CallContext,
    ) -> BoxFuture<'static, Result<Value, ToolError>> {
        let args = *args
            .downcast::<T::Args>()
            .expect("a ToolInstance only ever holds its own tool's argument type");
        async move {
            let out = T::call(args, &cx).await?;
            Ok(serde_json::to_value(out)?)
        }
        .boxed()
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        T::required_state()
    }
}

use serde::Deserialize as _;

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
enum Check {
    /// `allow_no_schema`: nothing to check against.
    None,
    /// A plan compiled from the schema decides; the validator, compiled on the first refusal,
    /// explains. `fast` is whether the typed arguments may be deserialized straight from the
    /// text, the plan checking the text as it is read (derived schemas). Verbatim and dynamic
    /// schemas are decided on the parsed `Value`, the document the author's schema describes.
    Plan {
        plan: Plan,
        fast: bool,
        /// How the reader `#[tool]` generated lines up with the plan, when it can stand for it.
        layout: Option<Layout>,
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
    fn of(definition: &ToolDefinition) -> Result<Check, RegistrationError> {
        CHECKS_COMPILED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = definition.name.to_string();
        if !is_valid_tool_name(&name) {
            return Err(RegistrationError::InvalidName(name));
        }
        // before anything reads the schema into a tree: past serde_json's recursion limit a
        // `Value` cannot be made at all, and the provider views add levels of their own
        let depth = json_depth(definition.parameters.get());
        if depth > MAX_SCHEMA_DEPTH {
            return Err(RegistrationError::SchemaTooDeep {
                name,
                error: SchemaTooDeep { depth },
            });
        }
        if definition.kind != "function" {
            return Err(RegistrationError::InvalidDefinition {
                name,
                reason: format!(
                    "\"type\" is {:?}; canonical definitions have \"type\": \"function\"",
                    definition.kind
                ),
            });
        }
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
                        layout: None,
                        validator: OnceLock::new(),
                    },
                    Err(_) => Check::Validator(
                        Validator::compile(&definition.parameters_value())
                            .map_err(|error| RegistrationError::InvalidSchema { name, error })?,
                    ),
                }
            }
            SchemaOrigin::Verbatim | SchemaOrigin::Dynamic => {
                let schema = definition.parameters_value();
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
                        // reading is known to match the schema
                        Validator::check_meta(&schema).map_err(invalid)?;
                        // jsonschema reads `$schema` and `$id` as URIs when it compiles, and the
                        // meta-schema's `format: uri` does not check them: a schema naming one is
                        // compiled now, so that a bad URI is refused here and not at the first
                        // refusal of a call
                        let validator = OnceLock::new();
                        let text = definition.parameters.get();
                        if text.contains("\"$schema\"") || text.contains("\"$id\"") {
                            let _ =
                                validator.set(Ok(Validator::compile(&schema).map_err(invalid)?));
                        }
                        Check::Plan {
                            plan,
                            fast: false,
                            layout: None,
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
    /// Shared by every set that registers the same typed tool (see [`typed_check`]).
    check: Arc<Check>,
    handler: Box<dyn Handler>,
}

/// The check of each typed tool registered so far in this process, by the tool's type. A typed
/// tool's definition is a `static` derived once and never changed, so the check compiled from it
/// holds for every set that registers the tool: a second set (one per session or agent, say)
/// neither parses its schema nor compiles its plan again, and the explaining validator, once
/// compiled for one set, serves them all.
fn typed_check<T: Tool>() -> Result<Arc<Check>, RegistrationError> {
    static CHECKS: LazyLock<RwLock<HashMap<TypeId, Arc<Check>, foldhash::fast::RandomState>>> =
        LazyLock::new(Default::default);
    let id = TypeId::of::<T>();
    if let Some(check) = CHECKS.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Ok(check.clone());
    }
    // what a derived schema only tells at run time: whether `strict` holds, whether the
    // declared examples fit it
    crate::__private::check(T::definition())?;
    let mut check = Check::of(T::definition())?;
    if let (
        Check::Plan {
            plan,
            fast: true,
            layout,
            ..
        },
        Some(reader),
    ) = (&mut check, &T::__READER)
    {
        *layout = Layout::new(plan, reader.fields);
    }
    // two threads preparing the same tool keep the first check, so every set shares one
    Ok(CHECKS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .entry(id)
        .or_insert_with(|| Arc::new(check))
        .clone())
}

impl Entry {
    pub(crate) fn definition(&self) -> &ToolDefinition {
        &self.definition
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
        })
    }

    /// The fast path: typed arguments straight from what was sent, checked by the plan. `None`
    /// when it does not apply or refuses; the slow path then decides and explains.
    fn fast(
        &self,
        arguments: &Arguments,
        limits: &Limits,
    ) -> Result<Option<Box<dyn Any + Send + Sync>>, ToolError> {
        let Check::Plan {
            plan,
            fast: true,
            layout,
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
        Ok(self
            .handler
            .fast(sent, plan, layout.as_ref(), limits.max_depth))
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

    /// Whether a validator, or a plan standing for one, checks this tool's arguments.
    pub(crate) fn is_checked(&self) -> bool {
        !matches!(*self.check, Check::None)
    }

    /// Whether calls to this tool can take the fast path (a plan over a derived schema).
    pub(crate) fn has_fast_path(&self) -> bool {
        matches!(*self.check, Check::Plan { fast: true, .. })
    }
}

/// The registry of tools an agent can call.
#[derive(Clone, Default)]
pub struct ToolSet {
    entries: Vec<Arc<Entry>>,
    /// Seeded per process (foldhash's `RandomState`), so names a model sends cannot be chosen
    /// to collide.
    by_name: HashMap<String, usize, foldhash::fast::RandomState>,
    state: Arc<Extensions>,
    limits: Limits,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field(
                "tools",
                &self
                    .entries
                    .iter()
                    .map(|e| &e.definition.name)
                    .collect::<Vec<_>>(),
            )
            .field("state", &self.state)
            .field("limits", &self.limits)
            .finish()
    }
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a typed tool (what `#[tool]` generates).
    pub fn register<T: Tool>(&mut self) -> Result<&mut Self, RegistrationError> {
        let definition = T::definition();
        self.ensure_new(&definition.name)?;
        let entry = Entry {
            definition: with_schema_secrets(Cow::Borrowed(definition)),
            check: typed_check::<T>()?,
            handler: Box::new(Typed::<T>(PhantomData)),
        };
        self.push(entry);
        Ok(self)
    }

    /// Builder form of [`ToolSet::register`].
    pub fn with<T: Tool>(mut self) -> Result<Self, RegistrationError> {
        self.register::<T>()?;
        Ok(self)
    }

    /// Registers a tool defined at run time (learned from an MCP server, read from a file), with a
    /// body or without one (declared for the model, hydrated and validated, but not runnable here).
    ///
    /// Its schema is always checked against the draft 2020-12 meta-schema and every call is
    /// validated against it, whatever the definition's `schema_origin` says: the origin is
    /// recorded as [`SchemaOrigin::Dynamic`] (a definition printed by `tools schema` says
    /// `derived` or `verbatim`, which described the process it came from). A definition that
    /// claims no schema (`{"kind": "none", ..}`) is refused: only `#[tool(allow_no_schema)]`, in
    /// code, can opt a tool out of validation.
    pub fn register_dynamic(
        &mut self,
        mut definition: ToolDefinition,
        handler: Option<DynHandler>,
    ) -> Result<&mut Self, RegistrationError> {
        as_dynamic(&mut definition)?;
        self.insert(definition, Box::new(Dynamic(handler)))
    }

    /// Registers every definition of a catalog: a JSON array of definitions in the canonical shape
    /// `{"type": "function", "name", "description", "parameters", "strict"?, ...}` (plus the
    /// optional safety fields), without bodies.
    ///
    /// All or nothing: when one definition is refused, none is registered, and the error names it.
    /// Each definition is checked and validated as [`ToolSet::register_dynamic`] describes.
    pub fn register_catalog(&mut self, json: &str) -> Result<&mut Self, RegistrationError> {
        // One pass over the text; only when it fails is it read again, definition by
        // definition, to name the one at fault.
        let mut defs: Vec<ToolDefinition> =
            serde_json::from_str(json).map_err(|e| catalog_error(json, e))?;
        for def in &mut defs {
            as_dynamic(def)?;
        }
        let mut staged: Vec<Entry> = Vec::with_capacity(defs.len());
        let mut names: HashMap<&str, usize> = HashMap::with_capacity(defs.len());
        for (i, def) in defs.iter().enumerate() {
            let name = def.name.as_ref();
            if self.by_name.contains_key(name) || names.insert(name, i).is_some() {
                return Err(RegistrationError::DuplicateName(name.to_owned()));
            }
        }
        // each definition's check (its meta-schema check, its plan or its validator) is
        // compiled on every core; the first refusal in the catalog's order is the one reported
        for entry in prepare::spread(defs, |def| Entry::build(def, Box::new(Dynamic(None)))) {
            staged.push(entry?);
        }
        for entry in staged {
            self.push(entry);
        }
        Ok(self)
    }

    /// Adds application state that `State<T>` parameters extract.
    pub fn with_state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.state).insert(value);
        self
    }

    /// Sets the hydration limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Checks that every tool's injected state is present. Call once after all state is added;
    /// the agent and the executor call it for you.
    pub fn check_state(&self) -> Result<(), RegistrationError> {
        for entry in &self.entries {
            for req in entry.handler.required_state() {
                if !self.state.contains(req.type_id) {
                    return Err(RegistrationError::MissingState {
                        tool: entry.definition.name.to_string(),
                        type_name: req.type_name,
                    });
                }
            }
        }
        Ok(())
    }

    fn insert(
        &mut self,
        definition: ToolDefinition,
        handler: Box<dyn Handler>,
    ) -> Result<&mut Self, RegistrationError> {
        self.ensure_new(&definition.name)?;
        let entry = Entry::build(definition, handler)?;
        self.push(entry);
        Ok(self)
    }

    /// Refuses a name already registered.
    fn ensure_new(&self, name: &str) -> Result<(), RegistrationError> {
        if self.by_name.contains_key(name) {
            return Err(RegistrationError::DuplicateName(name.to_owned()));
        }
        Ok(())
    }

    fn push(&mut self, entry: Entry) {
        self.by_name
            .insert(entry.definition.name.to_string(), self.entries.len());
        self.entries.push(Arc::new(entry));
    }

    /// Removes a tool; returns whether it was present.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(idx) = self.by_name.remove(name) else {
            return false;
        };
        self.entries.remove(idx);
        for v in self.by_name.values_mut() {
            if *v > idx {
                *v -= 1;
            }
        }
        true
    }

    /// Every definition, in registration order.
    pub fn definitions(&self) -> impl ExactSizeIterator<Item = &ToolDefinition> {
        self.entries.iter().map(|e| &*e.definition)
    }

    /// One definition by name.
    pub fn get(&self, name: &str) -> Option<&ToolDefinition> {
        self.by_name
            .get(name)
            .map(|&i| &*self.entries[i].definition)
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The shared state tools extract from.
    pub fn state(&self) -> &Arc<Extensions> {
        &self.state
    }

    /// The hydration limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Hydrates a call: find the tool, parse the arguments (with limits and one recorded repair),
    /// validate them against the canonical schema collecting every violation, and only then
    /// deserialize them into the tool's typed arguments. Runs nothing.
    pub fn hydrate(&self, call: &ToolCall) -> Result<ToolInstance, ToolError> {
        let entry = self.lookup(&call.name)?;
        // The fast path reads integers only from integer literals (serde refuses a float for
        // an integer type), so numbers need a second look only here.
        if let Some(typed) = entry.fast(&call.arguments, &self.limits)? {
            return Ok(self.instance(call, entry, typed, Vec::new()));
        }
        let exact = self
            .exact_numbers(&call.arguments)
            .map_err(|e| e.with_detail("tool", entry.definition.name.as_ref()))?;
        let sent = exact.as_ref().unwrap_or(&call.arguments);
        let (arguments, repairs) = parse_arguments(sent, &self.limits)?;
        if entry.is_checked() {
            let violations = entry.violations(&arguments);
            if !violations.is_empty() {
                return Err(invalid_arguments(&entry.definition, &arguments, violations));
            }
        } else if entry.definition.no_schema_mode() == Some(NoSchemaMode::ReadOnly)
            && !entry.definition.safety.is_read_only()
        {
            return Err(ToolError::new(
                ErrorCode::SCHEMA_REQUIRED,
                format!(
                    "tool {:?} has no schema and is registered for read-only use only",
                    entry.definition.name
                ),
            ));
        }
        let typed = entry.handler.deserialize(arguments)?;
        Ok(self.instance(call, entry, typed, repairs))
    }

    /// The arguments with integer-valued numbers written as integers, or `None` when they
    /// have none to rewrite; a refusal for a number that is not an integer but would read as
    /// one (see `hydrate::numbers`). Text is scanned within the size limit only.
    fn exact_numbers(&self, arguments: &Arguments) -> Result<Option<Arguments>, ToolError> {
        Ok(match arguments {
            Arguments::Text(text) => {
                check_size(text, &self.limits)?;
                exact_text(text)?.map(Arguments::Text)
            }
            Arguments::Json(Value::String(text)) => {
                check_size(text, &self.limits)?;
                exact_text(text)?.map(|t| Arguments::Json(Value::String(t)))
            }
            Arguments::Json(value) => exact_value(value).map(Arguments::Json),
        })
    }

    fn instance(
        &self,
        call: &ToolCall,
        entry: &Arc<Entry>,
        typed: Box<dyn Any + Send + Sync>,
        repairs: Vec<Repair>,
    ) -> ToolInstance {
        ToolInstance {
            call_id: call.id.clone(),
            entry: entry.clone(),
            arguments: OnceLock::new(),
            typed,
            repairs,
        }
    }

    /// Whether `name` is registered with a body that can run in this process (dynamic tools may
    /// be declared without one).
    pub fn is_runnable(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.entries[i].is_runnable())
    }

    /// Whether calls to `name` are hydrated on the fast path (straight into the typed arguments,
    /// checked by a compiled plan) rather than through a `Value` and the validator. For tests,
    /// benchmarks and the `tools list --json` report.
    pub fn has_fast_path(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.entries[i].has_fast_path())
    }

    /// Whether calls to `name` are read by the reader `#[tool]` generated for its argument type
    /// (see `hydrate::plan::fields`) rather than through the guard. For tests and benchmarks.
    #[doc(hidden)]
    pub fn has_generated_reader(&self, name: &str) -> bool {
        self.by_name.get(name).is_some_and(|&i| {
            matches!(
                &*self.entries[i].check,
                Check::Plan {
                    fast: true,
                    layout: Some(_),
                    ..
                }
            )
        })
    }

    /// Only the fast path, with no fallback: the typed arguments when it accepts `arguments`,
    /// `None` when it refuses (where hydration would go on to the slow path). For the
    /// differential tests, which must know that the fast path never accepts what the validator
    /// refuses.
    #[doc(hidden)]
    pub fn hydrate_fast_only(
        &self,
        name: &str,
        arguments: impl Into<Arguments>,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        let entry = self.lookup(name).ok()?;
        entry.fast(&arguments.into(), &self.limits).ok().flatten()
    }

    fn lookup(&self, name: &str) -> Result<&Arc<Entry>, ToolError> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(&self.entries[i]);
        }
        let suggestions = self.nearest_names(name, 3);
        let shown = match name.char_indices().nth(MAX_NAME_CHARS) {
            // the model gets its own name back, but not a megabyte of it
            Some((end, _)) => format!("{:?}... ({} bytes)", &name[..end], name.len()),
            None => format!("{name:?}"),
        };
        let mut err = ToolError::new(
            ErrorCode::UNKNOWN_TOOL,
            format!("there is no tool named {shown}"),
        )
        .with_detail("available", self.by_name.len());
        err = if suggestions.is_empty() {
            err.recover("call one of the tools you were given")
        } else {
            err.recover(format!("did you mean {}?", quoted_list(&suggestions)))
                .with_detail("suggestions", suggestions)
        };
        Err(err)
    }

    /// The registered names nearest to `name`, best first.
    ///
    /// Only the first 64 characters of `name` are compared (no provider accepts a longer tool
    /// name, and registered names are at most that long), so the work per registered tool is
    /// bounded however long a name a model sends.
    pub fn nearest_names(&self, name: &str, max: usize) -> Vec<String> {
        let probe: String = name
            .chars()
            .take(MAX_NAME_CHARS)
            .collect::<String>()
            .to_lowercase();
        let mut scored: Vec<(f64, &str)> = self
            .entries
            .iter()
            .map(|e| {
                let n = e.definition.name.as_ref();
                (strsim::jaro_winkler(&probe, &n.to_ascii_lowercase()), n)
            })
            .filter(|(s, _)| *s >= 0.75)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(max)
            .map(|(_, n)| n.to_owned())
            .collect()
    }
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

/// Makes a definition registered at run time a dynamic one. Its `schema_origin` came with the
/// JSON, and a claim in the JSON must not decide how its calls are checked: `derived` would skip
/// the meta-schema check and `none` would skip validation altogether.
/// Why a catalog did not read as definitions: the first definition that does not, by its index,
/// or the array itself.
fn catalog_error(json: &str, whole: serde_json::Error) -> RegistrationError {
    let raw: Vec<Box<serde_json::value::RawValue>> = match serde_json::from_str(json) {
        Ok(raw) => raw,
        Err(e) => {
            return RegistrationError::Catalog(format!(
                "expected a JSON array of tool definitions: {e}"
            ));
        }
    };
    for (i, r) in raw.iter().enumerate() {
        if let Err(e) = serde_json::from_str::<ToolDefinition>(r.get()) {
            return RegistrationError::Catalog(format!("definition {i}: {e}"));
        }
    }
    RegistrationError::Catalog(format!(
        "expected a JSON array of tool definitions: {whole}"
    ))
}

fn as_dynamic(definition: &mut ToolDefinition) -> Result<(), RegistrationError> {
    if let SchemaOrigin::None(_) = definition.schema_origin {
        return Err(RegistrationError::InvalidDefinition {
            name: definition.name.to_string(),
            reason: "a definition registered at run time cannot opt out of its schema \
                     (\"schema_origin\": {\"kind\": \"none\"}); remove schema_origin and give it \
                     a schema (`{\"type\": \"object\"}` accepts any object, and is still checked)"
                .to_owned(),
        });
    }
    definition.schema_origin = SchemaOrigin::Dynamic;
    Ok(())
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// At most this many violations are returned: a model fixes the first ones and tries again, and
/// a payload that breaks a rule a million times must not become a million-line answer.
const MAX_VIOLATIONS: usize = 50;
/// Each violation's message is cut to this many characters (a list of unexpected keys can be
/// as long as the arguments).
const MAX_VIOLATION_CHARS: usize = 1_000;

pub(crate) fn invalid_arguments(
    def: &ToolDefinition,
    arguments: &Value,
    mut violations: Vec<Violation>,
) -> ToolError {
    let total = violations.len();
    violations.truncate(MAX_VIOLATIONS);
    for v in &mut violations {
        if let Some((cut, _)) = v.message.char_indices().nth(MAX_VIOLATION_CHARS) {
            let more = v.message[cut..].chars().count();
            v.message.truncate(cut);
            v.message.push_str(&format!("... ({more} more characters)"));
        }
    }
    // An object sent as a string holding JSON is refused, never decoded: only the arguments as
    // a whole are decoded twice (a known provider quirk); inside them a string is a string, and
    // guessing otherwise could change what a legitimate string argument means. Say so, though.
    for v in &mut violations {
        if let Some(Value::String(text)) = arguments.pointer(&v.pointer)
            && looks_like_encoded_json(text)
        {
            v.message.push_str(
                " (this is JSON encoded as a string; send the object or array itself, not a string)",
            );
        }
    }
    let summary = violations
        .iter()
        .map(|v| {
            if v.pointer.is_empty() {
                v.message.clone()
            } else {
                format!("{}: {}", v.pointer, v.message)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let unlisted = total - violations.len();
    let summary = if unlisted > 0 {
        format!("{summary}; and {unlisted} more violations")
    } else {
        summary
    };
    let error = ToolError::new(
        ErrorCode::INVALID_ARGUMENTS,
        format!(
            "the arguments for {:?} do not match its schema: {summary}",
            def.name
        ),
    )
    .retryable(true)
    .recover("fix each argument named in violations and call the tool again")
    .with_violations(violations)
    .with_detail("tool", def.name.as_ref());
    if unlisted > 0 {
        error.with_detail("violations_total", total)
    } else {
        error
    }
}

fn looks_like_encoded_json(text: &str) -> bool {
    let t = text.trim_start();
    (t.starts_with('{') || t.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}
