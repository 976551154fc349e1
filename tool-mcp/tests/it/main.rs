//! The MCP client against MCP servers nobody here wrote, started as a host would start them.

mod filesystem;
mod http;
mod list_changes;
mod pinning;
mod restart;
