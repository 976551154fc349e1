//! The slow path and plain deserialization of tools with a generated reader: the reader is the
//! only deserializer compiled for their arguments, so it must read what serde's derive reads.

use serde_json::{Value, json};
use tool_runtime::__private::TestHooks as _;
use tool_runtime::{ErrorCode, Tool, ToolCall, ToolSet, hydrate::Arguments};

fn call(name: &str, args: impl Into<Arguments>) -> ToolCall {
    ToolCall::new("call_1", name, args)
}

/// Looks up a record.
#[tool_runtime::tool(read_only)]
async fn slow_lookup(
    /// The key.
    key: String,
    /// How many.
    limit: u32,
    /// Archived too.
    archived: Option<bool>,
    /// Tags.
    #[arg(default)]
    tags: Vec<String>,
) -> String {
    format!("{key}{limit}{archived:?}{tags:?}")
}

/// A tool with a generated reader has no other deserializer of its arguments compiled: what the
/// fast path refuses and validation accepts (a repaired text, an integer written `3.0`) is read
/// on the slow path by the same reader, into what serde's derive would build, and what the
/// argument type still refuses is a structured error.
#[test]
fn the_slow_path_of_a_tool_with_a_reader_reads_with_its_reader() {
    let set = ToolSet::new().with::<slow_lookup>().unwrap();
    assert!(set.has_generated_reader("slow_lookup"));
    let repaired = r#"```json
{"key": "k", "limit": 3, "tags": ["a", "b"],}
```"#;
    assert!(set.hydrate_fast_only("slow_lookup", repaired).is_none());
    let inst = set.hydrate(&call("slow_lookup", repaired)).unwrap();
    assert!(!inst.repairs().is_empty());
    assert_eq!(
        inst.arguments(),
        &json!({"key": "k", "limit": 3, "archived": null, "tags": ["a", "b"]})
    );
    let floats = r#"{"key": "k", "limit": 3.0, "archived": true}"#;
    assert!(set.hydrate_fast_only("slow_lookup", floats).is_none());
    let inst = set.hydrate(&call("slow_lookup", floats)).unwrap();
    assert_eq!(
        inst.arguments(),
        &json!({"key": "k", "limit": 3, "archived": true, "tags": []})
    );
    // as an object, with the defaulted and optional fields left out
    let inst = set
        .hydrate(&call("slow_lookup", json!({"key": "k", "limit": 7.0})))
        .unwrap();
    assert_eq!(
        inst.arguments(),
        &json!({"key": "k", "limit": 7, "archived": null, "tags": []})
    );
    // what validation refuses never reaches the reader
    let err = set
        .hydrate(&call("slow_lookup", json!({"key": "k", "limit": 2.5})))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
}

/// A shape: an externally tagged enum with data, which the fast path leaves to the slow path.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum SlowShape {
    Circle { radius: f64 },
    Square(u16),
    Empty,
}

/// Draws a shape.
#[tool_runtime::tool(read_only)]
async fn slow_draw(
    /// The shape.
    shape: SlowShape,
    /// A seed.
    seed: u64,
    /// Weights by layer.
    #[arg(default)]
    weights: std::collections::BTreeMap<u32, f64>,
) -> String {
    format!("{shape:?}{seed}{weights:?}")
}

/// The slow path reads what only it can read (a data variant `{"square": 7}`, a map with
/// integer keys) through the tool's reader: from text and from an object, in every form.
#[test]
fn the_slow_path_reads_data_variants_of_an_enum_field_through_the_reader() {
    // the reader is the tool's only deserializer: no guard is compiled for it
    assert!(<slow_draw as tool_runtime::Tool>::__GUARD.is_none());
    let set = ToolSet::new().with::<slow_draw>().unwrap();
    for shape in [
        json!({"square": 7}),
        json!({"circle": {"radius": 1.5}}),
        json!("empty"),
    ] {
        let args = json!({"shape": shape, "seed": 0, "weights": {"1": 0.5, "20": 2.0}});
        let text = set.hydrate(&call("slow_draw", args.to_string())).unwrap();
        assert_eq!(text.arguments(), &args);
        let object = set.hydrate(&call("slow_draw", args.clone())).unwrap();
        assert_eq!(object.arguments(), &args);
    }
    let err = set
        .hydrate(&call(
            "slow_draw",
            json!({"shape": {"triangle": 3}, "seed": 0}),
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
}

/// `slow_draw`'s arguments as serde's derive reads them, to compare its generated
/// `Deserialize` with.
#[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
struct DerivedDrawArgs {
    shape: SlowShape,
    seed: u64,
    #[serde(default)]
    weights: std::collections::BTreeMap<u32, f64>,
}

/// A function tool's hidden args type implements `Deserialize` with its reader rather than
/// serde's derive (one deserializer compiled per tool): outside hydration, with no schema in
/// play, it reads what the derive reads and refuses what the derive refuses, naming the field.
#[test]
fn a_function_tools_arguments_deserialize_as_serdes_derive_would() {
    type Args = <slow_draw as Tool>::Args;
    let same = |text: &str| {
        let ours = serde_json::from_str::<Args>(text).map(|a| serde_json::to_value(a).unwrap());
        let derived = serde_json::from_str::<DerivedDrawArgs>(text);
        match (&ours, &derived) {
            (Ok(a), Ok(d)) => {
                assert_eq!(a, &serde_json::to_value(d).unwrap());
                // and from a `Value`, the other way arguments arrive
                let value: Value = serde_json::from_str(text).unwrap();
                let from_value = serde_json::from_value::<Args>(value).unwrap();
                assert_eq!(
                    serde_json::to_value(from_value).unwrap(),
                    serde_json::to_value(d).unwrap()
                );
            }
            (Err(_), Err(_)) => {}
            _ => panic!("{text}: generated {ours:?}, derived {derived:?}"),
        }
        ours.map(|_| ()).map_err(|e| e.to_string())
    };
    // accepted: every variant form, a defaulted field left out, an unknown key ignored, a
    // bound the schema would refuse (plain deserialization checks no schema)
    for text in [
        r#"{"shape": {"square": 7}, "seed": 1, "weights": {"1": 0.5}}"#,
        r#"{"shape": {"circle": {"radius": 1.5}}, "seed": 2}"#,
        r#"{"seed": 3, "shape": "empty", "extra": [1, {"deep": null}]}"#,
    ] {
        same(text).unwrap();
    }
    // refused, with serde's own words for the field
    let missing = same(r#"{"shape": "empty"}"#).unwrap_err();
    assert!(missing.contains("missing field `seed`"), "{missing}");
    let repeated = same(r#"{"shape": "empty", "seed": 1, "seed": 2}"#).unwrap_err();
    assert!(repeated.contains("duplicate field `seed`"), "{repeated}");
    for text in [
        r#"{"shape": {"triangle": 3}, "seed": 1}"#,
        r#"{"shape": "empty", "seed": -1}"#,
        r#"{"shape": "empty", "seed": "1"}"#,
        r#"{"shape": "empty", "seed": 1, "weights": {"x": 1.0}}"#,
        r#""empty""#,
        r#"null"#,
    ] {
        same(text).unwrap_err();
    }
}

/// Tools over one argument type and one schema share a compiled check, but only tools that read
/// their arguments the same way: a hand-written tool (read through the guard) and the `#[tool]`
/// struct of the same type (its generated reader) each keep their own, whichever registers
/// first.
#[test]
fn a_check_is_shared_only_by_tools_that_read_their_arguments_alike() {
    use crate::common::{SearchNotes, SearchNotesTool, VALID};
    let guarded = ToolSet::new().with::<SearchNotes>().unwrap();
    let read = ToolSet::new().with::<SearchNotesTool>().unwrap();
    assert!(guarded.has_fast_path("search_notes"));
    assert!(!guarded.has_generated_reader("search_notes"));
    assert!(read.has_generated_reader("search_notes"));
    for set in [&guarded, &read] {
        assert!(set.hydrate_fast_only("search_notes", VALID).is_some());
    }
}

/// A level, one of whose variants the schema leaves out: serde reads `"hidden"`, the schema's
/// `enum` does not list it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    serde::Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
    tool_runtime::ToolArgs,
)]
#[serde(rename_all = "snake_case")]
enum NarrowLevel {
    Low,
    High,
    #[schemars(skip)]
    Hidden,
}

/// Sets two levels, read at two places of the schema.
#[tool_runtime::tool(read_only)]
async fn set_levels(
    /// The first.
    first: NarrowLevel,
    /// The second, optional.
    second: Option<NarrowLevel>,
) -> String {
    format!("{first:?}{second:?}")
}

/// The reader looks up the schema's verdict on a variant name, worked out once per place: the
/// verdict is the schema's own, on every call, at every place the enum is read, for a name the
/// schema admits and for one serde reads but the schema's `enum` leaves out.
#[test]
fn a_variant_the_schema_leaves_out_is_refused_on_every_call_at_every_place() {
    let set = ToolSet::new().with::<set_levels>().unwrap();
    assert!(set.has_generated_reader("set_levels"));
    for _ in 0..3 {
        for (args, admitted) in [
            (r#"{"first": "low"}"#, true),
            (r#"{"first": "high", "second": "low"}"#, true),
            (r#"{"first": "low", "second": null}"#, true),
            (r#"{"first": "hidden"}"#, false),
            (r#"{"first": "low", "second": "hidden"}"#, false),
            (r#"{"first": "medium"}"#, false),
        ] {
            assert_eq!(
                set.hydrate_fast_only("set_levels", args).is_some(),
                admitted,
                "{args}"
            );
            match set.hydrate(&call("set_levels", args)) {
                Ok(_) => assert!(admitted, "{args}"),
                Err(e) => {
                    assert!(!admitted, "{args}: {e:?}");
                    assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
                }
            }
        }
    }
}
