//! The integration tests of tool-runtime, built as one binary (one link instead of one per file).
//! Each module is one concern; `common` and `executor_support` hold what several share.
//! `compiled_once` and `load` stay binaries of their own: they measure process-wide counters and
//! the resident set size, which other tests running beside them in one process would disturb.

mod common;
mod content;
mod executor_support;

mod agree_registration;
mod cache_replicas;
mod cli;
mod crash;
mod decided_secrets;
mod differential;
mod differential_serde;
mod dynamic;
mod executor_audit;
mod executor_audit_in_place;
mod executor_audit_typed;
mod executor_blocking;
mod executor_cancelled;
mod executor_cli;
mod executor_non_blocking;
mod executor_pending;
mod executor_policy;
mod executor_policy_input;
mod executor_redis;
mod executor_running;
mod executor_store;
mod executor_sync_hint;
mod executor_sync_timeout;
mod executor_tools_update;
mod executor_typed_hooks;
mod executor_undo_chain;
mod faults_redis;
mod faults_sqlite;
mod hostile;
mod hydrate;
mod hydrate_reader;
mod pending_limits;
mod prepare;
mod property_approval;
mod property_secrets;
mod redaction;
mod select_cli;
mod select_embedding;
mod select_minilm;
mod select_pick;
mod store_mcp_sessions;
mod store_pins;
mod store_runs;
mod store_spool;
mod terminal_question;
