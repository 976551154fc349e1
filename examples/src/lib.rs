//! Shared pieces of the example agents: model selection and the research assistant's domain.

// Tools return the framework's `ToolError` by design (it is what the model sees).
#![allow(clippy::result_large_err)]

pub mod catalog;
pub mod events;
pub mod graph;
pub mod history;
pub mod input;
pub mod research;
pub mod setup;
pub mod tasks;
