//! Provider wire formats for tool-runtime: a pure codec per provider (OpenAI Chat Completions and
//! Responses, Anthropic Messages, Ollama, Gemini, MCP), the HTTP clients, the agent loop and the
//! MCP server adapter.
#![warn(missing_docs)]

pub mod agent;
pub mod cli;
pub mod codec;
pub mod http;
pub mod mcp;
#[cfg(feature = "otel")]
pub mod telemetry;
