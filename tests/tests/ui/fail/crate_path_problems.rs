//! `crate = ..` takes a path: anything else is refused at the value.
extern crate tool_runtime as renamed_runtime;

use renamed_runtime::{ToolArgs, tool};

/// A number is no path.
#[tool(read_only, crate = 42)]
fn number() -> u8 {
    1
}

/// Neither is a string that does not hold one.
#[tool(read_only, crate = "not a path")]
fn sentence() -> u8 {
    1
}

/// Nor a bare word.
#[tool(read_only, crate)]
fn word() -> u8 {
    1
}

#[derive(serde::Deserialize, ToolArgs)]
#[tool_args(crate = 42)]
struct Window {
    start: u32,
}

#[derive(serde::Deserialize, ToolArgs)]
#[tool_args(krate = renamed_runtime)]
struct Misspelled {
    start: u32,
}

fn main() {}
