//! A typed tool (what `#[tool]` generates) behind the type-erased [`Handler`]: its hydration
//! paths, its body, and its registration. Each generic function here is compiled once per tool,
//! so each only gathers the tool's own functions and constants and hands them to a function
//! compiled once.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, LazyLock, RwLock};

use futures::future::BoxFuture;
use serde_json::Value;

use super::entry::{Check, Entry, Handler, RegistrationError, Sent};
use super::plain::Plain;
use super::plan::Plan;
use super::plan::fields::{self, Bound};
use crate::definition::{SchemaOrigin, ToolDefinition};
use crate::error::{ErrorCode, ToolError};
use crate::tool::{CallContext, StateRequirement, Tool};

struct Typed<T>(PhantomData<fn() -> T>);

/// A typed tool's reader functions: `read`, `read_value` and `fields` of its `ReaderOf`.
type ReaderFns = (fields::ReadText, fields::ReadValue, &'static [&'static str]);
/// The guard's check that a verbatim schema agrees with the argument type.
type Agree = fn(&ToolDefinition) -> Result<(), RegistrationError>;
/// A typed tool's guard functions: `text`, `object` and `value` of its `GuardOf`.
type GuardFns = (
    fn(&Plan, &str, usize) -> Option<fields::Typed>,
    fn(&Plan, &Value) -> Option<fields::Typed>,
    fn(Value) -> Result<fields::Typed, serde_json::Error>,
);

impl<T: Tool> Typed<T> {
    // Matched by hand rather than with `Option::map` and a closure, which would be one more
    // function compiled per tool.
    const READER: Option<ReaderFns> = match &T::__READER {
        Some(r) => Some((r.read, r.read_value, r.fields)),
        None => None,
    };
    const GUARD: Option<GuardFns> = match &T::__GUARD {
        Some(g) => Some((g.text, g.object, g.value)),
        None => None,
    };
    const AGREE: Option<Agree> = match &T::__GUARD {
        Some(g) => Some(g.agree),
        None => None,
    };
}

// This impl is compiled once per tool, so what it holds is multiplied by the number of tools:
// where a method's work does not depend on the tool's types, it passes the tool's functions to
// a function compiled once.
impl<T: Tool> Handler for Typed<T> {
    fn fast(
        &self,
        sent: Sent<'_>,
        plan: &Plan,
        max_depth: usize,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        fast(sent, plan, max_depth, Self::GUARD)
    }

    fn to_json(&self, typed: &(dyn Any + Send + Sync)) -> Value {
        let args = typed
            .downcast_ref::<T::Args>()
            .expect("a ToolInstance only ever holds its own tool's argument type");
        // an argument type that deserialized from JSON serializes back; if a hand-written
        // Serialize impl fails anyway, audit records null rather than the process panicking
        serde_json::to_value(args).unwrap_or(Value::Null)
    }

    fn to_plain(&self, typed: &(dyn Any + Send + Sync)) -> Option<Plain> {
        let args = typed
            .downcast_ref::<T::Args>()
            .expect("a ToolInstance only ever holds its own tool's argument type");
        Plain::of(args)
    }

    fn writes_unset_as_null(&self) -> bool {
        true
    }

    fn deserialize(&self, args: Value) -> Result<Box<dyn Any + Send + Sync>, ToolError> {
        deserialize(args, Self::READER, Self::GUARD)
    }

    fn run(
        &self,
        args: Box<dyn Any + Send + Sync>,
        cx: CallContext,
    ) -> BoxFuture<'static, Result<Value, ToolError>> {
        let Ok(args) = args.downcast::<T::Args>() else {
            return wrong_arguments();
        };
        // moved out of its box here, so that the future does not own (and free) the box
        let args = *args;
        Box::pin(async move {
            let out = T::call(args, &cx).await?;
            Ok(crate::content::output_value(out)?)
        })
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        T::required_state()
    }
}

/// The fast path of a typed tool through its guard (a generated reader that lines up with the
/// plan is called from the tool's check instead, see `Check::Plan`). What was sent is checked as
/// it is read, never the typed value: serde may accept more than the schema (aliases,
/// `deserialize_with`, a struct sent as an array).
fn fast(
    sent: Sent<'_>,
    plan: &Plan,
    max_depth: usize,
    guard: Option<GuardFns>,
) -> Option<Box<dyn Any + Send + Sync>> {
    match (sent, guard) {
        (Sent::Text(text), Some((guard, _, _))) => guard(plan, text, max_depth),
        (Sent::Object(object), Some((_, guard, _))) => guard(plan, object),
        // no guard (registration then reports no fast path): the slow path reads
        (_, None) => None,
    }
}

/// The slow path's typed arguments, from arguments already validated: the argument type's own
/// `Deserialize` when the tool has a guard, else its generated reader, which deserializes as
/// that derive does (so a tool with a reader has no other deserialization compiled).
fn deserialize(
    args: Value,
    reader: Option<ReaderFns>,
    guard: Option<GuardFns>,
) -> Result<Box<dyn Any + Send + Sync>, ToolError> {
    let read = match (guard, reader) {
        (Some((_, _, value)), _) => value(args),
        (None, Some((_, read_value, fields))) => fields::read_validated(&args, fields, read_value),
        (None, None) => {
            return Err(ToolError::new(
                ErrorCode::INTERNAL,
                "the tool declares neither a reader nor a guard for its arguments",
            ));
        }
    };
    read.map_err(|e| {
        ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            format!("the arguments do not fit the tool: {e}"),
        )
        .retryable(true)
        .recover("correct the arguments to match the tool's schema and call it again")
    })
}

/// A typed tool handed another tool's arguments: a bug in the set, reported as an error.
fn wrong_arguments() -> BoxFuture<'static, Result<Value, ToolError>> {
    Box::pin(futures::future::ready(Err(ToolError::new(
        ErrorCode::INTERNAL,
        "a tool was handed arguments of another tool",
    ))))
}

/// The check of each typed tool registered so far in this process, by the tool's type. A typed
/// tool's definition is a `static` derived once and never changed, so the check compiled from it
/// holds for every set that registers the tool: a second set (one per session or agent, say)
/// neither parses its schema nor compiles its plan again, and the explaining validator, once
/// compiled for one set, serves them all.
pub(crate) fn typed_check<T: Tool>() -> Result<Arc<Check>, RegistrationError> {
    TypedParts::of::<T>().check()
}

/// What registering a typed tool needs of it, as values: the code that registers it is then
/// compiled once, not once per tool.
#[derive(Clone, Copy)]
pub(crate) struct TypedParts {
    id: TypeId,
    /// The argument type's: with the schema's text and origin, what decides the check.
    args: TypeId,
    definition: &'static ToolDefinition,
    /// The generated reader's functions, when the tool has one.
    reader: Option<ReaderFns>,
    /// The guard's agreement check, when the tool has a guard.
    agree: Option<Agree>,
}

impl TypedParts {
    pub(crate) fn of<T: Tool>() -> TypedParts {
        TypedParts {
            id: TypeId::of::<T>(),
            args: TypeId::of::<T::Args>(),
            definition: T::definition(),
            reader: Typed::<T>::READER,
            agree: Typed::<T>::AGREE,
        }
    }

    /// The tool's check (see [`typed_check`]).
    fn check(&self) -> Result<Arc<Check>, RegistrationError> {
        static CHECKS: LazyLock<RwLock<HashMap<TypeId, Arc<Check>, foldhash::fast::RandomState>>> =
            LazyLock::new(Default::default);
        if let Some(check) = CHECKS
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.id)
        {
            return Ok(check.clone());
        }
        let definition = self.definition;
        // what a derived schema only tells at run time: whether `strict` holds, whether the
        // declared examples fit it
        crate::__private::check(definition)?;
        let check = match self.same_schema() {
            Some(shared) => {
                super::entry::admitted(definition)?;
                shared
            }
            None => self.compile()?,
        };
        // two threads preparing the same tool keep the first check, so every set shares one
        Ok(CHECKS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(self.id)
            .or_insert(check)
            .clone())
    }

    /// The check already compiled for a tool with the same argument type, the same schema text
    /// and origin, and the same way of reading its arguments (a generated reader, a guard), if
    /// any: everything the check holds (the plan, how the reader lines up with it, the agreement
    /// of a verbatim schema with the type, the explaining validator) follows from those, so tools
    /// that share them share one check. Many tools over one argument type (a family of tools
    /// differing in name, description or body) then compile it once.
    fn same_schema(&self) -> Option<Arc<Check>> {
        BY_SCHEMA
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.args)?
            .iter()
            .find(|(key, _)| self.reads_as(key))
            .map(|(_, check)| check.clone())
    }

    /// Whether a check compiled for `other` (a tool with the same argument type) holds for this
    /// tool (see [`TypedParts::same_schema`]).
    fn reads_as(&self, other: &TypedParts) -> bool {
        let (a, b) = (self.definition, other.definition);
        a.schema_origin == b.schema_origin
            && self.reader.is_some() == other.reader.is_some()
            && self.agree.is_some() == other.agree.is_some()
            && a.parameters.get() == b.parameters.get()
    }

    /// Compiles the tool's check and keeps it for the tools with the same schema (see
    /// [`TypedParts::same_schema`]).
    fn compile(&self) -> Result<Arc<Check>, RegistrationError> {
        let definition = self.definition;
        let mut check = Check::of(definition)?;
        if let (SchemaOrigin::Verbatim, Some(agree)) = (definition.schema_origin, self.agree) {
            // the types the macro could not compare with the schema
            agree(definition)?;
        }
        if let Check::Plan {
            plan,
            fast: fast @ true,
            reader,
            ..
        } = &mut check
        {
            if let Some((read, read_value, fields)) = self.reader {
                *reader = Bound::new(plan, fields, read, read_value);
            }
            // a reader whose fields do not line up with the schema, and no guard to fall back
            // on: every call takes the slow path, and the set says so
            *fast = reader.is_some() || self.agree.is_some();
        }
        let check = Arc::new(check);
        BY_SCHEMA
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(self.args)
            .or_default()
            .push((*self, check.clone()));
        Ok(check)
    }
}

/// The checks compiled so far, by argument type, each with the tool it was compiled for (see
/// [`TypedParts::same_schema`]).
type BySchema = HashMap<TypeId, Vec<(TypedParts, Arc<Check>)>, foldhash::fast::RandomState>;
static BY_SCHEMA: LazyLock<RwLock<BySchema>> = LazyLock::new(Default::default);

impl Entry {
    /// A typed tool's entry (what `#[tool]` generates), its check shared by every set in the
    /// process.
    pub(crate) fn typed<T: Tool>() -> Result<Entry, RegistrationError> {
        typed_entry(TypedParts::of::<T>(), Box::new(Typed::<T>(PhantomData)))
    }
}

fn typed_entry(parts: TypedParts, handler: Box<dyn Handler>) -> Result<Entry, RegistrationError> {
    Ok(Entry::typed_of(parts.definition, parts.check()?, handler))
}
