//! Support for the `#[tool]` expansion. Not a public API.

pub use schemars;
pub use serde;
pub use serde_json;
pub use tool_macros::__check_unique_names as check_unique_names;

pub use crate::definition::DefinitionBuilder;

use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::tool::{CallContext, FromCallContext, StateRequirement, Tool};
use crate::toolset::{RegistrationError, ToolSet};
use crate::validate::SchemaError;

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

/// The run-time checks of a macro-built definition: what a derived schema only tells at run time
/// (whether `strict` can hold, whether the examples fit it).
pub fn check(def: &ToolDefinition) -> Result<(), RegistrationError> {
    if def.schema_origin == crate::definition::SchemaOrigin::Derived && !def.examples.is_empty() {
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
    // Verbatim schemas were checked by the macro, and hand-built or dynamic definitions get the
    // strict view of the OpenAI codecs, which refuses what cannot be made strict when encoding.
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

/// Turns a body's result into the tool's result.
pub fn into_result<T, E: Into<ToolError>>(r: Result<T, E>) -> Result<T, ToolError> {
    r.map_err(Into::into)
}
