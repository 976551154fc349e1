//! `crate = ..` takes a path: anything else is refused at the value, and nothing else is
//! reported: the runtime is reachable only as `renamed_runtime`, so code naming it otherwise
//! would add errors of rustc's.
extern crate tool_runtime as renamed_runtime;
extern crate core as tool_runtime;

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

/// A rejected tool's stub impl names the runtime by the path given, next to an unknown option...
#[tool(read_only, crate = renamed_runtime, colour = "blue")]
fn unknown_option() -> u8 {
    1
}

/// ... and next to a failed check.
#[tool(read_only, crate = renamed_runtime, name = "has space")]
fn bad_name() -> u8 {
    1
}

fn main() {
    let _ = renamed_runtime::toolset![unknown_option, bad_name];
}
