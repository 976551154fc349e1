//! The server of the official MCP conformance suite (`@modelcontextprotocol/conformance`, its
//! `server` scenarios): the suite's fixture tools written with `#[tool]` as far as the runtime
//! supports them, served through the executor like any app's, and its resources, prompts and
//! completions from an rmcp handler of the application's own ([`Fixtures`]), composed with the
//! tools into one MCP server.
//!
//! Every scenario of the suite that a `#[tool]` can serve has its fixture here; the ones left
//! fail on an unknown tool rather than pass on a stand-in.

mod app;
mod asking;
pub mod client;
mod rich;
mod tools;

use std::error::Error;
use std::sync::Arc;

use tool_runtime::executor::Deferred;
use tool_runtime::store::MemoryStore;
use tool_runtime::{Executor, ToolSet};

pub use app::{Fixtures, TEST_IMAGE_BASE64};
pub use rich::{
    TEST_IMAGE_PNG, TestMultipleContentTypes, silent_wav, test_audio_content,
    test_embedded_resource, test_image_content,
};
pub use tools::{
    Address, JsonSchema202012, POLL_AFTER, test_error_handling, test_reconnection,
    test_simple_text, test_tool_with_progress,
};

/// The fixture tools.
pub fn toolset() -> Result<ToolSet, Box<dyn Error + Send + Sync>> {
    let set = ToolSet::new()
        .with::<test_simple_text>()?
        .with::<test_error_handling>()?
        .with::<test_tool_with_progress>()?
        .with::<test_reconnection>()?
        .with::<JsonSchema202012>()?
        .with::<TestMultipleContentTypes>()?
        .with::<test_image_content>()?
        .with::<test_audio_content>()?
        .with::<test_embedded_resource>()?;
    asking::register(set)
}

/// An executor over the fixture tools, with a store in memory (the suite's calls leave nothing
/// behind) and every confirmation waiting for the approvals page (no fixture needs one).
pub fn executor() -> Result<Executor, Box<dyn Error + Send + Sync>> {
    Ok(Executor::builder(toolset()?)
        .store(Arc::new(MemoryStore::new()))
        .confirmation(Deferred)
        .build()?)
}
