//! The workspace's cross-crate tests, built as one binary: one link instead of one per file, which
//! keeps the workspace's test build small. `compile_pass` holds the programs the macros must accept,
//! `ui` the ones they must refuse (trybuild); `support` the checks the end-to-end tests share.

mod compile_pass;
mod support;

mod confirm_tmux;
mod conformance;
mod e2e_imported;
mod e2e_research;
mod e2e_tasks;
mod macro_fn;
mod macro_primitive;
mod macro_struct;
mod macro_written;
mod pending_crash;
mod ui;
