#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
pub mod content;
pub mod definition;
pub mod display;
pub mod error;
pub mod executor;
pub mod host;
pub mod hydrate;
pub mod id;
pub mod progress;
mod records;
pub mod schema;
#[cfg(feature = "select")]
#[cfg_attr(docsrs, doc(cfg(feature = "select")))]
pub mod select;
pub mod store;
pub mod tool;
pub mod toolset;
pub mod validate;

// The root holds what an application writes; everything else is reached through its module
// (`definition::Safety`, `hydrate::Arguments`, `executor::ExecutorBuilder`, ...).
pub use error::{ErrorCode, ToolError};
pub use executor::{Executor, Outcome};
pub use hydrate::ToolCall;
pub use tool::{CallContext, Credential, State, Tool};
pub use tool_runtime_macros::{ToolArgs, tool};
pub use toolset::ToolSet;

// `#[tool]` names the crate by its path, `::tool_runtime`, in the expansion.
#[cfg(test)]
extern crate self as tool_runtime;
#[cfg(test)]
mod lean;

/// What the `#[tool]` macro's expansion refers to. Not a public API: it may change in any release.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
mod bodies;
