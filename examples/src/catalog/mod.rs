//! The catalog agent: a few struct-form tools with verbatim schemas among a catalog of
//! hundreds of declared tools (BFCL functions, `examples/data/catalog.json`, compiled in), and
//! `pick` narrowing them to the handful relevant to each request before the model sees any.
//!
//! The catalog's tools are declarations without bodies in this process (as a planner would see
//! a remote registry): if the model picks one, the executor answers with a clear `NOT_ALLOWED`
//! error; the struct-form tools run here.

pub mod tools;

use std::sync::Arc;

use tool_runtime::executor::{ConfirmationHandler, Executor, ExecutorConfig};
use tool_runtime::select::{Candidate, PickOptions};
use tool_runtime::store::MemoryStore;
use tool_runtime::{ToolError, ToolSet, toolset};

pub use tools::{CompoundInterest, ConvertUnits};

/// The catalog of declared tools: BFCL functions (names made valid, BFCL's `dict`/`float` types
/// turned into JSON Schema's `object`/`number`), copied into the repository.
pub const CATALOG_JSON: &str = include_str!("../../data/catalog.json");

/// The system prompt.
pub const SYSTEM: &str = "You are a helpful assistant. Call the one tool that answers the \
request, then answer briefly with its result.";

/// The struct-form tools plus every catalog declaration.
pub fn toolset() -> ToolSet {
    let mut ts = toolset![ConvertUnits, CompoundInterest].expect("the struct-form tools are valid");
    ts.register_catalog(CATALOG_JSON)
        .expect("the catalog has unique, valid definitions");
    ts
}

/// The executor over [`toolset()`] (every tool is read-only, so nothing is ever confirmed).
pub fn executor(
    confirmer: Arc<dyn ConfirmationHandler>,
    config: ExecutorConfig,
) -> Result<Executor, ToolError> {
    Executor::builder(toolset())
        .config(config)
        .store(Arc::new(MemoryStore::new()))
        .confirmation_shared(confirmer)
        .build()
        .map_err(|e| ToolError::execution(e.to_string()))
}

/// The selection used before each request: the few best tools by BM25 over names, descriptions
/// and parameters.
pub fn selection(max: usize) -> PickOptions {
    PickOptions::new().max_candidates(max)
}

/// The tools `pick` offers for `request`, best first.
pub async fn narrow(
    toolset: &ToolSet,
    request: &str,
    max: usize,
) -> Result<Vec<Candidate>, ToolError> {
    tool_runtime::select::pick(toolset, request, &selection(max)).await
}
