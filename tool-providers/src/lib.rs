//! Provider wire formats for tool-runtime: a pure codec per provider (OpenAI Chat Completions and
//! Responses, Anthropic Messages, Ollama, Gemini, MCP), the HTTP clients and the agent loop. Serving
//! a tool set over MCP is the `tool-mcp` crate's, which builds on the MCP codec here.
//!
//! ## Features
//!
//! | Feature | Default | What it adds |
//! |---|---|---|
//! | `cli` | no | `cli`: the `decode` command line (clap, and tool-runtime's `cli` feature) |
//! | `otel` | no | `telemetry`: the agent's and the executor's spans exported over OTLP |
//!
//! Without them, the codecs, the HTTP clients and the agent loop are all there.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
pub mod codec;
pub mod http;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod telemetry;

// The README is the crate's page on crates.io: its example runs as a doctest, so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
