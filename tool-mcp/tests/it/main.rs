//! The MCP client against MCP servers, started as a host would start them: reference servers
//! nobody here wrote (npm and PyPI), and small servers written with the official Python SDK in
//! `tests/servers/` for what the reference servers cannot be made to do (change a tool, die).

mod everything;
mod filesystem;
mod git;
mod http;
mod list_changes;
mod memory;
mod oauth;
mod oauth_grants;
mod paging;
mod pinning;
mod restart;
mod server_calls;
mod server_compose;
mod server_host;
mod server_progress;
mod time;
