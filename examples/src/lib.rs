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
pub mod leaving;
pub mod research;
pub mod retention;
pub mod setup;
pub mod tasks;

use std::path::Path;
use std::sync::Arc;

use tool_runtime::ToolError;
use tool_runtime::executor::StoreConfig;
use tool_runtime::store::Store;

/// The store an app keeps its pending operations, audit records, undo journal and agent runs
/// in: the one `TOOLS_STORE` names when it is set (`redis://...` for replicas sharing state,
/// `memory`, or a SQLite path), else the SQLite file at `path`, next to the app's data (created
/// with its directory if needed). On Redis every key starts with `TOOLS_STORE__PREFIX` (default
/// `tools:`), the setting the executor's configuration reads too: deployments sharing one Redis
/// server each set their own, so that none sees the others' operations, audit or runs.
pub fn open_store(path: &Path) -> Result<Arc<dyn Store>, ToolError> {
    let mut config = match std::env::var("TOOLS_STORE") {
        Ok(named) if !named.trim().is_empty() => StoreConfig::parse(&named)
            .map_err(|e| ToolError::execution(format!("TOOLS_STORE: {e}")))?,
        _ => StoreConfig::sqlite(path),
    };
    if let Ok(prefix) = std::env::var("TOOLS_STORE__PREFIX")
        && !prefix.trim().is_empty()
    {
        config.prefix = prefix.trim().to_owned();
    }
    config
        .open()
        .map_err(|e| ToolError::execution(e.to_string()))
}
