//! `ToolSet`: the registry. Names unique, schemas present, validators compiled, state checked, all
//! at registration; hydration of calls against it.

use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::definition::{NoSchemaMode, SchemaOrigin, ToolDefinition, is_valid_tool_name};
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::{Limits, ToolCall, ToolInstance, parse_arguments};
use crate::tool::{CallContext, Extensions, StateRequirement, Tool};
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
}

/// Type-erased access to one registered tool.
pub(crate) trait Handler: Send + Sync {
    fn deserialize(&self, args: &Value) -> Result<Box<dyn Any + Send + Sync>, ToolError>;
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
    fn deserialize(&self, args: &Value) -> Result<Box<dyn Any + Send + Sync>, ToolError> {
        T::Args::deserialize(args)
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
    fn deserialize(&self, args: &Value) -> Result<Box<dyn Any + Send + Sync>, ToolError> {
        Ok(Box::new(args.clone()))
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

/// One registered tool: its definition, its compiled validator and its body.
pub(crate) struct Entry {
    definition: ToolDefinition,
    validator: Option<Validator>,
    handler: Box<dyn Handler>,
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
}

/// The registry of tools an agent can call.
#[derive(Clone, Default)]
pub struct ToolSet {
    entries: Vec<Arc<Entry>>,
    by_name: HashMap<String, usize>,
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
        self.insert(T::definition().clone(), Box::new(Typed::<T>(PhantomData)))
    }

    /// Builder form of [`ToolSet::register`].
    pub fn with<T: Tool>(mut self) -> Result<Self, RegistrationError> {
        self.register::<T>()?;
        Ok(self)
    }

    /// Registers a tool defined at run time (learned from an MCP server, read from a file), with a
    /// body or without one (declared for the model, hydrated and validated, but not runnable here).
    pub fn register_dynamic(
        &mut self,
        definition: ToolDefinition,
        handler: Option<DynHandler>,
    ) -> Result<&mut Self, RegistrationError> {
        self.insert(definition, Box::new(Dynamic(handler)))
    }

    /// Registers every definition of a catalog: a JSON array of definitions in the canonical shape
    /// `{"type": "function", "name", "description", "parameters", "strict"?, ...}`.
    pub fn register_catalog(&mut self, json: &str) -> Result<&mut Self, RegistrationError> {
        let defs: Vec<ToolDefinition> =
            serde_json::from_str(json).map_err(|e| RegistrationError::Catalog(e.to_string()))?;
        for def in defs {
            self.register_dynamic(def, None)?;
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
        let name = definition.name.to_string();
        if !is_valid_tool_name(&name) {
            return Err(RegistrationError::InvalidName(name));
        }
        if self.by_name.contains_key(&name) {
            return Err(RegistrationError::DuplicateName(name));
        }
        let validator = match definition.schema_origin {
            SchemaOrigin::None(_) => None,
            _ => {
                let schema = definition.parameters_value();
                if schema.get("type").and_then(Value::as_str) != Some("object") {
                    return Err(RegistrationError::NotAnObject(name));
                }
                Some(Validator::compile(&schema).map_err(|error| {
                    RegistrationError::InvalidSchema {
                        name: name.clone(),
                        error,
                    }
                })?)
            }
        };
        self.by_name.insert(name, self.entries.len());
        self.entries.push(Arc::new(Entry {
            definition,
            validator,
            handler,
        }));
        Ok(self)
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
        self.entries.iter().map(|e| &e.definition)
    }

    /// One definition by name.
    pub fn get(&self, name: &str) -> Option<&ToolDefinition> {
        self.by_name.get(name).map(|&i| &self.entries[i].definition)
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
        let (arguments, repairs) = parse_arguments(&call.arguments, &self.limits)?;
        match &entry.validator {
            Some(v) => {
                let violations = v.violations(&arguments);
                if !violations.is_empty() {
                    return Err(invalid_arguments(&entry.definition, violations));
                }
            }
            None => {
                if entry.definition.no_schema_mode() == Some(NoSchemaMode::ReadOnly)
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
            }
        }
        let typed = entry.handler.deserialize(&arguments)?;
        Ok(ToolInstance {
            call_id: call.id.clone(),
            entry: entry.clone(),
            arguments,
            typed,
            repairs,
        })
    }

    fn lookup(&self, name: &str) -> Result<&Arc<Entry>, ToolError> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(&self.entries[i]);
        }
        let suggestions = self.nearest_names(name, 3);
        let mut err = ToolError::new(
            ErrorCode::UNKNOWN_TOOL,
            format!("there is no tool named {name:?}"),
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
    pub fn nearest_names(&self, name: &str, max: usize) -> Vec<String> {
        let mut scored: Vec<(f64, &str)> = self
            .entries
            .iter()
            .map(|e| {
                let n = e.definition.name.as_ref();
                (
                    strsim::jaro_winkler(&name.to_lowercase(), &n.to_lowercase()),
                    n,
                )
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

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

pub(crate) fn invalid_arguments(
    def: &ToolDefinition,
    violations: Vec<crate::error::Violation>,
) -> ToolError {
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
    ToolError::new(
        ErrorCode::INVALID_ARGUMENTS,
        format!(
            "the arguments for {:?} do not match its schema: {summary}",
            def.name
        ),
    )
    .retryable(true)
    .recover("fix each argument named in violations and call the tool again")
    .with_violations(violations)
}
