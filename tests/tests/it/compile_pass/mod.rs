//! Programs that must compile and run: each form of `#[tool]`, `#[derive(ToolArgs)]` and
//! `toolset!` a user writes, built with the rest of the tests (a failure to compile fails the build,
//! and each `runs` checks what the expansion produced). The programs that must not compile are
//! in `ui`.

mod container_default;
mod fn_result_and_state;
mod fn_sync_async;
mod no_schema;
mod struct_form;
mod tool_args;
mod toolset;
mod verbatim;
