//! The integration tests of tool-providers, built as one binary: one link instead of one per
//! file, which keeps the workspace's test build small. Each module is one concern; `common` (tools
//! and wire fixtures) and `mock` (a scripted model server on 127.0.0.1) hold what several share.

mod common;
mod mock;

mod agent_checkpoint;
mod agent_loop;
mod agent_prompt;
mod agent_providers;
mod agent_repair;
mod cli;
mod decode_fixtures;
mod decode_strictness;
mod disconnects;
mod encode;
mod encode_prebuilt;
mod encode_rich;
mod http_client;
mod llm_classifier;
mod prompt_fallback;
mod request_body;
mod snapshots;
mod streaming;
