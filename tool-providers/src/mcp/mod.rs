//! Serving a ToolSet as an MCP server.
