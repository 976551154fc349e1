//! Compiling a tool's check is the costly part of registration: it happens once per tool and
//! process, however many sets register the tool and however many calls they check. The counters
//! are process-wide, so this file holds one test and runs as a process of its own.

use serde_json::json;
use tool_runtime::{ToolCall, ToolSet, tool};

/// Adds two small numbers.
#[tool(read_only)]
fn add(
    /// The first.
    #[arg(max = 100)]
    a: u32,
    /// The second.
    b: u32,
) -> u32 {
    a + b
}

/// Renames a file (a verbatim schema the plan cannot express, so a validator checks it).
#[tool(
    modify,
    parameters = r#"{"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"}}, "required": ["from", "to"], "not": {"required": ["same"]}}"#
)]
fn rename(from: String, to: String) -> String {
    format!("{from} -> {to}")
}

fn compiled() -> (usize, usize) {
    tool_runtime::__private::compiled()
}

#[test]
fn each_tools_check_is_compiled_once_per_process() {
    let start = compiled();
    let sets: Vec<ToolSet> = (0..3)
        .map(|_| {
            ToolSet::new()
                .with::<add>()
                .unwrap()
                .with::<rename>()
                .unwrap()
        })
        .collect();
    let after_registration = compiled();
    assert_eq!(
        after_registration.0 - start.0,
        2,
        "one check per tool for three sets"
    );
    assert_eq!(
        after_registration.1 - start.1,
        1,
        "one validator, for the schema the plan cannot express"
    );

    let valid = ToolCall::new("c", "add", r#"{"a": 1, "b": 2}"#);
    let invalid = ToolCall::new("c", "add", r#"{"a": 500, "b": 2}"#);
    for set in &sets {
        for _ in 0..10 {
            set.hydrate(&valid).unwrap();
            let err = set.hydrate(&invalid).unwrap_err();
            assert_eq!(err.violations[0].pointer, "/a");
            set.hydrate(&ToolCall::new(
                "c",
                "rename",
                json!({"from": "a", "to": "b"}),
            ))
            .unwrap();
        }
    }
    let after_calls = compiled();
    assert_eq!(
        after_calls.0, after_registration.0,
        "no call compiles a check"
    );
    // a refused call is explained by a validator compiled on the first refusal, shared by every
    // set: one more, not one per set or per call
    assert!(
        after_calls.1 - after_registration.1 <= 1,
        "{} validators compiled for 30 refusals in three sets",
        after_calls.1 - after_registration.1
    );
}
