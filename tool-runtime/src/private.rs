//! Support for the `#[tool]` expansion. Not a public API.

pub use schemars;
pub use serde;
pub use serde_json;
pub use tool_runtime_macros::__check_unique_names as check_unique_names;

pub use crate::definition::DefinitionBuilder;
// The public items the expansion implements or names, here too so that it reaches the runtime
// through this one module, wherever `#[tool(crate = ..)]` says the runtime is.
pub use crate::definition::{NoSchemaMode, Safety, ToolDefinition};
pub use crate::error::ToolError;
/// The schemas `#[tool]` writes at compile time, and their composition.
pub mod written {
    pub use crate::schema::written::*;
}
pub use crate::tool::{CallContext, FromCallContext, Run, StateRequirement, Tool};

/// Whether debug builds compare the schemas `#[tool]` writes with schemars' (the
/// `verify-written` feature).
pub fn verifies_written() -> bool {
    cfg!(feature = "verify-written")
}

/// Expands to its first group with the `verify-written` feature, to its second without: what
/// `#[tool]` emits for a schema it wrote whole, which needs schemars only for the comparison.
#[cfg(feature = "verify-written")]
#[doc(hidden)]
#[macro_export]
macro_rules! __verify_written {
    ({ $($on:tt)* } { $($off:tt)* }) => { $($on)* };
}

/// Expands to its first group with the `verify-written` feature, to its second without: what
/// `#[tool]` emits for a schema it wrote whole, which needs schemars only for the comparison.
#[cfg(not(feature = "verify-written"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __verify_written {
    ({ $($on:tt)* } { $($off:tt)* }) => { $($off)* };
}

pub use crate::__verify_written as verify_written;

/// The declarations `#[tool]` serializes at compile time.
pub use crate::definition::PrebuiltDeclarations;
/// The compiled argument check, for the differential tests and fuzzers that compare it with the
/// validator.
pub use crate::hydrate::plan::Plan;

/// What tests and benchmarks ask of a [`ToolSet`] about its hydration paths; not for applications.
pub trait TestHooks {
    /// Whether calls to `name` are read by the reader `#[tool]` generated for its argument type
    /// rather than through the guard.
    fn has_generated_reader(&self, name: &str) -> bool;
    /// Only the fast path, with no fallback: the typed arguments when it accepts `arguments`,
    /// `None` when it refuses (where hydration would go on to the slow path). The differential
    /// tests use it to show the fast path never accepts what the validator refuses.
    fn hydrate_fast_only(
        &self,
        name: &str,
        arguments: impl Into<crate::hydrate::Arguments>,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>>;
}

impl TestHooks for ToolSet {
    fn has_generated_reader(&self, name: &str) -> bool {
        self.has_generated_reader_(name)
    }
    fn hydrate_fast_only(
        &self,
        name: &str,
        arguments: impl Into<crate::hydrate::Arguments>,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>> {
        self.hydrate_fast_only_(name, arguments.into())
    }
}

/// The argument readers `#[tool]` generates (see `hydrate::plan::fields`).
pub mod fast {
    pub use crate::hydrate::plan::fields::{
        AsGuarded, AsLeaf, Fields, KeyText, Kind, Layout, Leaf, Place, Probe, Reader, ReaderOf,
        ViaGuard, ViaLeaf, deserialize, nested, reader, unknown_variant, variant,
    };
    pub use crate::hydrate::plan::{GuardOf, guard};
}

use crate::toolset::{RegistrationError, ToolSet};
use crate::validate::SchemaError;

/// How many argument checks (plans or validators, one per tool) and how many jsonschema
/// validators this process has compiled so far. Compiling is the costly part of registration and
/// must happen once per tool and process, never per set or per call; tests hold it to that.
pub fn compiled() -> (usize, usize) {
    use std::sync::atomic::Ordering::Relaxed;
    (
        crate::hydrate::entry::CHECKS_COMPILED.load(Relaxed),
        crate::validate::VALIDATORS_COMPILED.load(Relaxed),
    )
}

/// Byte equality of two strings, usable in constants (`toolset!`'s duplicate-name check).
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() || a.is_empty() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The state requirements of a tool's injected parameters.
pub fn requirements(reqs: &[fn() -> Option<StateRequirement>]) -> Vec<StateRequirement> {
    reqs.iter().filter_map(|r| r()).collect()
}

/// Extracts one injected parameter.
pub fn extract<T: FromCallContext>(cx: &CallContext) -> Result<T, ToolError> {
    T::from_call_context(cx)
}

/// Registers `T` ([`ToolSet::register`] runs the run-time checks of [`check`]).
pub fn register<T: Tool>(set: &mut ToolSet) -> Result<(), RegistrationError> {
    set.register::<T>()?;
    Ok(())
}

/// The run-time checks of a macro-built definition: whether its examples fit its schema (a
/// derived schema is known only now; a verbatim one the macro checks them against only with the
/// `schema-checks` feature), and whether `strict` can hold for a derived schema.
pub fn check(def: &ToolDefinition) -> Result<(), RegistrationError> {
    if !def.examples.is_empty() {
        let validator =
            crate::validate::Validator::compile(&def.parameters_value()).map_err(|error| {
                RegistrationError::InvalidSchema {
                    name: def.name.to_string(),
                    error,
                }
            })?;
        for (i, example) in def.examples.iter().enumerate() {
            let violations = validator.violations(example);
            if let Some(v) = violations.first() {
                return Err(RegistrationError::InvalidSchema {
                    name: def.name.to_string(),
                    error: SchemaError(format!(
                        "example {} does not match the schema: {}: {}",
                        i + 1,
                        if v.pointer.is_empty() {
                            "/"
                        } else {
                            &v.pointer
                        },
                        v.message
                    )),
                });
            }
        }
    }
    // Verbatim schemas were checked by the macro or by `Check::of`, and hand-built or dynamic
    // definitions get the strict view of the OpenAI codecs, which refuses what cannot be made strict when encoding.
    if def.schema_origin != crate::definition::SchemaOrigin::Derived {
        return Ok(());
    }
    let problems = def.strict_problems();
    if problems.is_empty() {
        return Ok(());
    }
    let list = problems
        .iter()
        .map(|(p, m)| format!("{p}: {m}"))
        .collect::<Vec<_>>()
        .join("; ");
    Err(RegistrationError::InvalidSchema {
        name: def.name.to_string(),
        error: SchemaError(format!(
            "`strict` was requested but the schema cannot be strict: {list}"
        )),
    })
}

pub use crate::bodies::BodyTimes;

/// Runs a sync tool body on the threads kept for sync bodies (see `bodies`) and waits for it
/// without blocking, so that the executor's timeout can fire while the body blocks (the body
/// itself cannot be stopped: it keeps its thread until it returns, and its result is dropped). A
/// panic in the body is resumed here, so the executor reports it as it does for async bodies.
/// `times`, the tool's own record, learns how long its bodies run. Outside a tokio runtime the
/// body runs inline.
pub async fn run_blocking<T, F>(times: &'static BodyTimes, body: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        // the verdict is told here, on the caller's thread, inside the call's span
        Ok(handle) => match crate::bodies::run(handle, times.watching(), body).await {
            Ok((result, ran)) => {
                if let Some(ran) = ran {
                    times.record(ran);
                }
                result
            }
            Err(crate::bodies::Lost::Panicked(payload)) => std::panic::resume_unwind(payload),
            Err(crate::bodies::Lost::Dropped) => Err(ToolError::new(
                crate::error::ErrorCode::INTERNAL,
                "the tool's body was dropped before it ran (the process is ending)",
            )),
        },
        Err(_) => body(),
    }
}

/// A sync tool function runs on a blocking thread (see [`run_blocking`]), so the values injected
/// into it move there: they must be `Send + 'static`. Emitted at each injected parameter so that
/// a type that is not says so at the parameter.
pub const fn movable_to_blocking_thread<T: Send + 'static>() {}

/// Turns a body's result into the tool's result.
pub fn into_result<T, E: Into<ToolError>>(r: Result<T, E>) -> Result<T, ToolError> {
    r.map_err(Into::into)
}
