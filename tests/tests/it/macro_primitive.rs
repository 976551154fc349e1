//! `Tool::SCHEMA_JSON` for functions whose arguments are primitives (or vectors of them):
//! computed by the macro at compile time, and equal to what schemars derives at run time. Nested
//! types are covered by `macro_written.rs`.

use serde_json::Value;
use tool_runtime::{Tool, tool};

/// Every primitive kind, with docs, defaults and bounds.
#[tool(read_only)]
#[allow(clippy::too_many_arguments)]
fn primitives(
    /// A text
    text: String,
    flag: bool,
    small: i8,
    medium: i32,
    large: i64,
    /// How many
    #[arg(default = 10, min = 1, max = 50)]
    count: u32,
    byte: u8,
    id: u64,
    ratio: f64,
    #[arg(default)] verbose: bool,
    #[arg(min = -5)] offset: i16,
    /// Maybe a note
    note: Option<String>,
    limit: Option<u16>,
    #[arg(min_length = 2, max_length = 9)] code: String,
    scale: f32,
) -> usize {
    let _ = (
        flag, small, medium, large, byte, id, ratio, verbose, offset, note, limit, scale,
    );
    text.len() + count as usize + code.len()
}

/// No arguments at all.
#[tool(read_only)]
fn nothing_in() -> u8 {
    0
}

/// A vector of primitives: written at compile time too.
#[tool(read_only)]
fn with_vec(items: Vec<String>) -> usize {
    items.len()
}

/// A map argument: no constant, the definition is derived at run time.
#[tool(read_only)]
fn with_map(items: std::collections::HashMap<String, u8>) -> usize {
    items.len()
}

fn assert_same(constant: Option<&str>, derived: Value) {
    let constant: Value = serde_json::from_str(constant.expect("a constant schema")).unwrap();
    assert_eq!(constant, derived);
}

#[test]
fn the_compile_time_schema_equals_the_derived_one() {
    assert_same(
        <primitives as Tool>::SCHEMA_JSON,
        primitives::definition().parameters_value(),
    );
    assert_same(
        <nothing_in as Tool>::SCHEMA_JSON,
        nothing_in::definition().parameters_value(),
    );
    assert_same(
        <with_vec as Tool>::SCHEMA_JSON,
        with_vec::definition().parameters_value(),
    );
}

#[test]
fn unwritten_arguments_have_no_constant() {
    assert!(<with_map as Tool>::SCHEMA_JSON.is_none());
}
