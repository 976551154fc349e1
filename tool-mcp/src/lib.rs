#![cfg_attr(docsrs, feature(doc_cfg))]
//! MCP for [`tool_runtime`]: the tools of other people's MCP servers imported into a
//! [`ToolSet`](tool_runtime::ToolSet), where the executor validates, confirms, gates, rate limits
//! and audits them exactly like tools written with `#[tool]`.
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
//! - `client` (default): servers started as child processes, over stdio.
//! - `client-http` (default): servers reached over streamable HTTP.
//! - `cli`: `--mcp-config FILE` for the `tools` command line
//!   ([`McpConfigOption`](client::McpConfigOption)).
//! - `gateway`: `tools gateway`, the imported tools beside the application's own served over
//!   MCP (stdio and streamable HTTP), the HTTP API and the approvals page
//!   ([`GatewayCommand`](gateway::GatewayCommand)).

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;

#[cfg(feature = "gateway")]
#[cfg_attr(docsrs, doc(cfg(feature = "gateway")))]
pub mod gateway;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
