//! Shared pieces of the example agents: model selection, their command line (`cli`) and their
//! domains.

// Tools return the framework's `ToolError` by design (it is what the model sees).
#![allow(clippy::result_large_err)]

pub mod catalog;
pub mod cli;
pub mod conformance;
pub mod events;
pub mod graph;
pub mod history;
pub mod input;
pub mod research;
pub mod setup;
pub mod tasks;

use std::path::Path;
use std::sync::Arc;

use tool_runtime::ToolError;
use tool_runtime::store::{SqliteStore, Store};

/// Opens (creating it and its directory if needed) the SQLite store at `path`: the pending
/// operations, audit records and undo journal an app keeps next to its data.
pub fn open_store(path: &Path) -> Result<Arc<dyn Store>, ToolError> {
    let store = SqliteStore::open(path).map_err(|e| ToolError::execution(e.to_string()))?;
    Ok(Arc::new(store))
}
