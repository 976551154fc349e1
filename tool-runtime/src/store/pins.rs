//! Definition pins: the exact definition of a tool from someone else's server (an MCP server's
//! tool) as a person first let it run, kept by hash so that a later, different definition is
//! noticed (a "rug pull": a description or schema changed after the tool was trusted) and held
//! until a person approves the change.
//!
//! The store keeps a pin per registered tool name and compares hashes only; what goes into a
//! definition and how it is hashed is the importer's (`tool-mcp`). Writing a pin is a
//! compare-and-set on the hash it replaces ([`Store::put_pin`](super::Store::put_pin)), so two
//! processes that pin the same tool at once, or a person approving a change while another
//! approves a different one, cannot both win.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StoreError;

/// The definition of one tool as a person let it run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolPin {
    /// The tool's registered name (`<server>__<tool>`).
    pub tool: String,
    /// The server it comes from, by the name the configuration gives it.
    pub server: String,
    /// The hash of `definition` (`sha256:` and 64 hex digits).
    pub hash: String,
    /// The definition itself, to show what changed when the server serves another one.
    pub definition: Value,
    /// When it was pinned or its change approved (ms since the epoch).
    pub pinned_ms: u64,
}

/// The error of a store that keeps no pins (the default of the pin methods).
pub(crate) fn no_pins() -> StoreError {
    StoreError::new(
        "this store keeps no definition pins; use the SQLite, Redis or in-memory store to pin \
         the definitions of imported tools",
    )
}
