//! The integration tests of tool-server, built as one binary: one link instead of one per file,
//! which keeps the workspace's test build small. `support` is the notes app the tests serve.

mod support;

mod api;
mod api_load;
mod approver_api;
mod chat;
mod chat_crash;
mod chat_crash_loop;
mod chat_events;
mod chat_resume;
mod feed;
#[cfg(feature = "gateway")]
mod held_tools;
mod hygiene;
mod limits;
mod mcp_app;
mod mcp_http;
mod mcp_inspector;
mod mcp_revisions;
mod mcp_session_restore;
mod mcp_sse;
mod page;
mod page_diff;
mod page_questions;
mod questions;
mod questions_elsewhere;
mod replicas;
