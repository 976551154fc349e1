#![cfg_attr(docsrs, feature(doc_cfg))]
//! MCP for [`tool_runtime`], both ways, every call through the executor's policy:
//!
//! - [`server`]: a [`ToolSet`](tool_runtime::ToolSet) served to MCP clients, each call validated,
//!   confirmed (in-band by a granted host, or by a person elsewhere), gated, rate limited and
//!   audited as in the agent loop;
//! - [`client`]: the tools of other people's MCP servers imported into a `ToolSet`, where the
//!   executor treats them exactly like tools written with `#[tool]`.
//!
//! ```no_run
//! # async fn demo(executor: tool_runtime::Executor) -> Result<(), Box<dyn std::error::Error>> {
//! use tool_mcp::server::McpServer;
//!
//! // Serve the executor's tools on stdin/stdout until the client disconnects.
//! McpServer::new(executor).serve_stdio().await?;
//! # Ok(()) }
//! ```
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use tool_mcp::client::{McpClient, ServerConfig};
//! use tool_runtime::ToolSet;
//!
//! let fs = ServerConfig::stdio("mcp-server-filesystem", ["/srv/notes"]).trusting_annotations();
//! let client = McpClient::connect("fs", fs).await?;
//! let mut set = ToolSet::new();
//! let imported = client.import(&mut set);
//! println!("{:?} registered, {:?} refused", imported.registered, imported.refused);
//! # Ok(()) }
//! ```
//!
//! # Features
//! - `server` (default): [`McpServer`](server::McpServer), the handler and the stdio transport
//!   (`serve_stdio`); over streamable HTTP, `tool-server` mounts it at `/mcp`.
//! - `client` (default): servers started as child processes, over stdio.
//! - `client-http` (default): servers reached over streamable HTTP.
//! - `cli`: `--mcp-config FILE` for the `tools` command line
#![cfg_attr(
    feature = "cli",
    doc = "  ([`McpConfigOption`](client::McpConfigOption))."
)]
#![cfg_attr(not(feature = "cli"), doc = "  (`client::McpConfigOption`).")]
//!
//! `tools gateway`, the imported tools beside the application's own served over MCP, the HTTP API
//! and the approvals page, is `tool-server`'s (its `gateway` feature).

#[cfg(any(feature = "server", feature = "client"))]
mod lines;

#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod server;

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
