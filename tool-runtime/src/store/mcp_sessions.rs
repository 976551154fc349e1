//! MCP sessions kept in the store, so that a session opened on one server process is served by
//! another (a replica, or the same server after a restart) without the client opening a new one.
//!
//! The store does not read a session's state: it keeps the text its writer gives (the MCP
//! server's record of the session's `initialize`, enough to replay it) under the session's id,
//! until it expires. An expired entry is never returned; the writer renews an entry in use by
//! writing it again.

use super::StoreError;

/// The error of a store that keeps no MCP sessions (the default of the session methods).
pub(crate) fn no_mcp_sessions() -> StoreError {
    StoreError::new(
        "this store keeps no MCP sessions; use the SQLite, Redis or in-memory store to serve MCP \
         sessions from several processes",
    )
}
