//! Hydration as a caller relies on it: the fast path and the slow path agree, every failure is a
//! structured error with a stable code, and repairs are recorded.

use crate::common;
use tool_runtime::__private::TestHooks as _;

use serde_json::{Value, json};
use tool_runtime::{
    ErrorCode, Tool, ToolCall, ToolSet,
    definition::{SchemaOrigin, ToolDefinition},
    hydrate::{Arguments, Limits, Repair},
};

use common::{CreateNote, INVALID, ListNotebooks, NoteArgs, SearchArgs, SearchNotes, VALID};

fn set() -> ToolSet {
    ToolSet::new()
        .with::<SearchNotes>()
        .unwrap()
        .with::<ListNotebooks>()
        .unwrap()
        .with::<CreateNote>()
        .unwrap()
}

fn call(name: &str, args: impl Into<Arguments>) -> ToolCall {
    ToolCall::new("call_1", name, args)
}

#[test]
fn valid_text_hydrates_on_the_fast_path_into_the_typed_arguments() {
    let set = set();
    assert!(set.has_fast_path("search_notes"));
    let sent = call("search_notes", VALID);
    let inst = set.hydrate(&sent).unwrap();
    let args = inst.args::<SearchArgs>().unwrap();
    assert_eq!(args.limit, 10);
    assert_eq!(args.filter.author.as_deref(), Some("ana"));
    assert!(inst.repairs().is_empty());
    assert!(inst.validated());
    assert_eq!(inst.call_id(), "call_1");
    // the instance shares the call's id instead of copying it
    assert!(std::ptr::eq(inst.call_id().as_str(), sent.id.as_str()));
    // arguments() is the typed value as JSON, made on demand
    assert_eq!(
        inst.arguments(),
        &serde_json::from_str::<Value>(VALID).unwrap()
    );
}

#[test]
fn arguments_as_an_object_hydrate_the_same() {
    let set = set();
    let value: Value = serde_json::from_str(VALID).unwrap();
    let inst = set.hydrate(&call("search_notes", value.clone())).unwrap();
    assert_eq!(inst.arguments(), &value);
}

#[test]
fn arguments_json_has_defaults_filled_whichever_path_was_taken() {
    let set = set();
    let text = r#"{"query":"q","limit":1,"sort":"newest","filter":{"min_score":0},"tags":[]}"#;
    let fast = set.hydrate(&call("search_notes", text)).unwrap();
    let fenced = format!("```json\n{text}\n```");
    let slow = set.hydrate(&call("search_notes", fenced.as_str())).unwrap();
    assert_eq!(slow.repairs(), &[Repair::CodeFence]);
    assert_eq!(fast.arguments(), slow.arguments());
    assert_eq!(fast.arguments()["include_archived"], false);
    assert_eq!(fast.arguments()["filter"]["author"], Value::Null);
}

#[test]
fn invalid_arguments_list_every_violation_with_pointers() {
    let err = set().hydrate(&call("search_notes", INVALID)).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert!(err.retryable);
    let mut pointers: Vec<&str> = err.violations.iter().map(|v| v.pointer.as_str()).collect();
    pointers.sort();
    assert_eq!(pointers, ["/filter/min_score", "/limit", "/query"]);
    assert_eq!(err.details["tool"], "search_notes");
    assert!(err.recover_action.is_some());
}

#[test]
fn wrong_types_and_missing_fields_are_violations() {
    let err = set()
        .hydrate(&call("search_notes", r#"{"query": 5, "sort": "sideways"}"#))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    let pointers: Vec<&str> = err.violations.iter().map(|v| v.pointer.as_str()).collect();
    assert!(pointers.contains(&"/query"), "{pointers:?}");
    assert!(pointers.contains(&"/sort"), "{pointers:?}");
    // the missing required fields are reported at the root
    assert!(
        err.violations
            .iter()
            .any(|v| v.pointer.is_empty() && v.message.contains("limit"))
    );
}

#[test]
fn unknown_keys_are_refused_where_the_type_is_closed() {
    let err = set()
        .hydrate(&call(
            "create_note",
            r#"{"title":"t","slug":"s","colour":"red"}"#,
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert!(err.message.contains("colour"), "{}", err.message);
    let ok = set()
        .hydrate(&call(
            "create_note",
            r#"{"title":"t","slug":"a-1","meta":{"x":1}}"#,
        ))
        .unwrap();
    assert_eq!(ok.args::<NoteArgs>().unwrap().meta["x"], 1);
    let bad_pattern = set()
        .hydrate(&call("create_note", r#"{"title":"t","slug":"Not A Slug"}"#))
        .unwrap_err();
    assert_eq!(bad_pattern.violations[0].pointer, "/slug");
}

#[test]
fn malformed_json_is_invalid_json_with_a_position() {
    let err = set()
        .hydrate(&call("search_notes", r#"{"query": "x", "limit": }"#))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_JSON);
    assert!(err.retryable);
    assert_eq!(err.details["line"], 1);
    assert!(err.details["column"].as_u64().unwrap() > 20);
}

#[test]
fn unknown_tools_suggest_the_nearest_names() {
    let err = set().hydrate(&call("search_note", "{}")).unwrap_err();
    assert_eq!(err.code, ErrorCode::UNKNOWN_TOOL);
    assert_eq!(err.details["suggestions"][0], "search_notes");
    assert!(err.recover_action.unwrap().contains("\"search_notes\""));
    let err = set().hydrate(&call("zzz", "{}")).unwrap_err();
    assert_eq!(err.code, ErrorCode::UNKNOWN_TOOL);
    assert!(err.details.get("suggestions").is_none());
}

/// A name no provider would send (a megabyte long) is compared by its first 64 characters only,
/// so the work per tool is bounded, and the error quotes that much of it with the full length.
#[test]
fn unknown_names_are_compared_and_echoed_only_up_to_64_characters() {
    let huge = format!("search_notes{}", "x".repeat(1 << 20));
    let err = set().hydrate(&call(&huge, "{}")).unwrap_err();
    assert_eq!(err.code, ErrorCode::UNKNOWN_TOOL);
    assert!(err.message.len() < 200, "{}", err.message);
    assert!(err.message.contains(&format!("({} bytes)", huge.len())));
    // only the first 64 characters count: a long name that differs from a tool's by one letter
    // there is still recognised, whatever follows
    let name = format!("lookup_{}", "record_".repeat(8));
    let long_typo = format!("lookup_{}s{}", "record_".repeat(7), "z".repeat(1 << 20));
    let mut set = ToolSet::new();
    set.register_dynamic(
        ToolDefinition::new(name.clone(), "Look up.", &json!({"type": "object"})),
        None,
    )
    .unwrap();
    let err = set.hydrate(&call(&long_typo, "{}")).unwrap_err();
    assert_eq!(err.details["suggestions"][0], name.as_str(), "{err:?}");
}

#[test]
fn oversized_and_deeply_nested_arguments_are_refused_before_parsing() {
    let set = set().with_limits(Limits {
        max_bytes: 64,
        max_depth: 3,
    });
    let big = format!(r#"{{"query":"{}"}}"#, "x".repeat(100));
    let err = set
        .hydrate(&call("search_notes", big.as_str()))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PAYLOAD_TOO_LARGE);
    let deep = r#"{"tags":[[[["x"]]]]}"#;
    let err = set.hydrate(&call("search_notes", deep)).unwrap_err();
    assert_eq!(err.code, ErrorCode::NESTING_TOO_DEEP);
    // the same limits hold for arguments that arrive as objects
    let err = set
        .hydrate(&call("search_notes", json!({"tags": [[[["x"]]]]})))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NESTING_TOO_DEEP);
    let err = set
        .hydrate(&call("search_notes", json!({"query": "x".repeat(100)})))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PAYLOAD_TOO_LARGE);
}

/// Anthropic, Ollama, Gemini and MCP deliver arguments as an object; the byte limit holds for
/// them too, measured as compact JSON, with the same structured error as for text.
#[test]
fn the_size_limit_holds_for_arguments_that_arrive_as_objects() {
    let limits = Limits::default();
    // a call just over 1 MiB once written as JSON
    let mut value: Value = serde_json::from_str(VALID).unwrap();
    let tags: Vec<Value> = (0..90_000).map(|i| json!(format!("tag{i:05}x"))).collect();
    value["tags"] = Value::Array(tags);
    let text = value.to_string();
    assert!(text.len() > limits.max_bytes, "{}", text.len());
    let as_text = set()
        .hydrate(&call("search_notes", text.as_str()))
        .unwrap_err();
    let as_object = set()
        .hydrate(&call("search_notes", value.clone()))
        .unwrap_err();
    for err in [&as_text, &as_object] {
        assert_eq!(err.code, ErrorCode::PAYLOAD_TOO_LARGE);
        assert!(!err.retryable);
        assert!(err.recover_action.is_some());
        assert_eq!(err.details["limit"], 1 << 20);
    }
    assert_eq!(as_text.details["bytes"], text.len());
    assert_eq!(as_object.details["bytes"], text.len());
    assert_eq!(as_text.message, as_object.message);

    // dynamic tools (the slow path) too, and just under the limit passes the limit check
    let mut dynamic = ToolSet::new();
    dynamic
        .register_dynamic(
            ToolDefinition::new("echo", "Echo.", &json!({"type": "object"})),
            None,
        )
        .unwrap();
    let err = dynamic.hydrate(&call("echo", value)).unwrap_err();
    assert_eq!(err.code, ErrorCode::PAYLOAD_TOO_LARGE);
    let filler = "x".repeat(limits.max_bytes - r#"{"a":""}"#.len());
    let fits = json!({ "a": filler });
    assert_eq!(fits.to_string().len(), limits.max_bytes);
    assert!(dynamic.hydrate(&call("echo", fits)).is_ok());
    let escaped = json!({ "a": format!("{}\n", &filler[1..]) });
    let err = dynamic.hydrate(&call("echo", escaped)).unwrap_err();
    assert_eq!(
        err.code,
        ErrorCode::PAYLOAD_TOO_LARGE,
        "an escape is two bytes"
    );
}

/// Free-form JSON: a `Value` field, which the schema leaves open.
#[tool_runtime::tool(read_only)]
fn annotate(
    /// The note.
    id: u32,
    /// Anything.
    data: Value,
) -> u32 {
    let _ = data;
    id
}

/// The fast path counts nesting as serde reads the text, in places no schema constrains too (a
/// free-form `Value`, keys the argument type does not know), with the limit exact at the edge.
#[test]
fn nesting_is_limited_inside_free_form_values_and_unknown_keys() {
    let set = ToolSet::new()
        .with::<annotate>()
        .unwrap()
        .with_limits(Limits {
            max_bytes: 1 << 20,
            max_depth: 3,
        });
    assert!(set.has_fast_path("annotate"));
    for fits in [
        r#"{"id": 1, "data": {"a": [1]}}"#,
        r#"{"id": 1, "data": 2, "extra": {"b": [true]}}"#,
    ] {
        let inst = set.hydrate(&call("annotate", fits)).unwrap();
        assert_eq!(inst.arguments()["id"], 1, "{fits}");
    }
    for deep in [
        r#"{"id": 1, "data": {"a": [[1]]}}"#,
        r#"{"id": 1, "data": 2, "extra": {"b": [{}]}}"#,
        r#"{"extra": [[[]]], "id": 1, "data": null}"#,
    ] {
        let err = set.hydrate(&call("annotate", deep)).unwrap_err();
        assert_eq!(err.code, ErrorCode::NESTING_TOO_DEEP, "{deep}");
    }
}

#[test]
fn default_limits_are_one_mebibyte_and_depth_64() {
    let limits = Limits::default();
    assert_eq!((limits.max_bytes, limits.max_depth), (1 << 20, 64));
    let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
    let err = set()
        .hydrate(&call("search_notes", deep.as_str()))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NESTING_TOO_DEEP);
}

#[test]
fn double_encoded_arguments_are_decoded_once_and_recorded() {
    let encoded = serde_json::to_string(VALID).unwrap();
    let inst = set()
        .hydrate(&call("search_notes", encoded.as_str()))
        .unwrap();
    assert_eq!(inst.repairs(), &[Repair::DoubleEncoded]);
    assert_eq!(inst.args::<SearchArgs>().unwrap().limit, 10);
    // as a JSON string value (what an SDK hands over after one decode)
    let inst = set()
        .hydrate(&call("search_notes", Value::String(VALID.into())))
        .unwrap();
    assert_eq!(inst.repairs(), &[Repair::DoubleEncoded]);
    // never twice: a triple-encoded payload stays a string, which the schema refuses
    let triple = serde_json::to_string(&encoded).unwrap();
    let err = set()
        .hydrate(&call("search_notes", triple.as_str()))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
}

#[test]
fn an_object_argument_sent_as_a_json_string_is_refused_with_a_hint() {
    let text =
        r#"{"query":"q","limit":1,"sort":"newest","filter":"{\"min_score\":0.5}","tags":[]}"#;
    let err = set().hydrate(&call("search_notes", text)).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    let v = err
        .violations
        .iter()
        .find(|v| v.pointer == "/filter")
        .unwrap();
    assert!(
        v.message.contains("JSON encoded as a string"),
        "{}",
        v.message
    );
}

#[test]
fn trailing_commas_and_code_fences_are_repaired_and_recorded() {
    let text = "```json\n{\"query\":\"q\",\"limit\":1,\"sort\":\"newest\",\"filter\":{\"min_score\":0.5,},\"tags\":[\"a\",],}\n```";
    let inst = set().hydrate(&call("search_notes", text)).unwrap();
    assert_eq!(inst.repairs(), &[Repair::CodeFence, Repair::TrailingCommas]);
    // a repair never turns invalid arguments into valid ones
    let text = "{\"query\":\"\",\"limit\":1,\"sort\":\"newest\",\"filter\":{\"min_score\":0.5},\"tags\":[],}";
    let err = set().hydrate(&call("search_notes", text)).unwrap_err();
    assert_eq!(err.violations[0].pointer, "/query");
}

#[test]
fn an_empty_string_is_an_empty_object_for_a_tool_without_parameters() {
    let set = set();
    let inst = set.hydrate(&call("list_notebooks", "")).unwrap();
    assert_eq!(inst.repairs(), &[Repair::EmptyAsObject]);
    assert_eq!(inst.arguments(), &json!({}));
    assert!(
        set.hydrate(&call("list_notebooks", "{}"))
            .unwrap()
            .repairs()
            .is_empty()
    );
    // but not for a tool that needs arguments
    let err = set.hydrate(&call("search_notes", "  ")).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
}

#[tokio::test]
async fn a_hydrated_instance_runs_its_tool() {
    let inst = set().hydrate(&call("search_notes", VALID)).unwrap();
    let out = inst
        .run(tool_runtime::CallContext::new("call_1"))
        .await
        .unwrap();
    assert_eq!(out, json!({"query": "rust ownership", "count": 10}));
}

#[test]
fn a_verbatim_schema_takes_the_validator_path_and_still_hydrates() {
    struct Verbatim;
    impl Tool for Verbatim {
        type Args = SearchArgs;
        type Output = u32;
        fn definition() -> &'static ToolDefinition {
            static DEF: std::sync::LazyLock<ToolDefinition> = std::sync::LazyLock::new(|| {
                let mut d = common::derived_definition::<SearchArgs>("verbatim", "V.");
                d.schema_origin = SchemaOrigin::Verbatim;
                d
            });
            &DEF
        }
        async fn call(
            a: SearchArgs,
            _: &tool_runtime::CallContext,
        ) -> Result<u32, tool_runtime::ToolError> {
            Ok(a.limit)
        }
    }
    let set = ToolSet::new().with::<Verbatim>().unwrap();
    assert!(!set.has_fast_path("verbatim"));
    assert!(set.hydrate(&call("verbatim", VALID)).is_ok());
    assert_eq!(
        set.hydrate(&call("verbatim", INVALID))
            .unwrap_err()
            .violations
            .len(),
        3
    );
}

/// A derived schema is compiled from its text without a `Value`, where a repeated key would be
/// seen twice; a `Value` (and so the validator) keeps the last. Such text never comes out of
/// schemars, but a hand-built definition can hold it: the plan refuses it and the validator's
/// reading holds.
#[test]
fn a_derived_schema_repeating_a_key_is_checked_as_the_validator_reads_it() {
    #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    struct N {
        n: Value,
    }
    struct Repeated;
    impl Tool for Repeated {
        type Args = N;
        type Output = Value;
        fn definition() -> &'static ToolDefinition {
            static DEF: std::sync::LazyLock<ToolDefinition> = std::sync::LazyLock::new(|| {
                let mut d = common::derived_definition::<N>("repeated", "R.");
                d.parameters = serde_json::value::RawValue::from_string(
                    r#"{"type":"object","properties":{"n":{"type":"integer"},"n":{"type":"string"}},"required":["n"]}"#.into(),
                )
                .unwrap();
                d
            });
            &DEF
        }
        async fn call(
            a: N,
            _: &tool_runtime::CallContext,
        ) -> Result<Value, tool_runtime::ToolError> {
            Ok(a.n)
        }
    }
    let set = ToolSet::new().with::<Repeated>().unwrap();
    assert!(!set.has_fast_path("repeated"));
    assert!(set.hydrate(&call("repeated", r#"{"n": "x"}"#)).is_ok());
    let err = set.hydrate(&call("repeated", r#"{"n": 1}"#)).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(err.violations[0].pointer, "/n");
}

/// `allow_no_schema` exists only in code (a `Tool` impl, or `#[tool]`): such a tool's calls are
/// not validated, and its mode still constrains them. (A definition registered at run time
/// cannot claim this; see `dynamic.rs`.)
#[test]
fn no_schema_tools_follow_their_mode() {
    macro_rules! free_tool {
        ($ty:ident, $name:literal, $safety:expr) => {
            struct $ty;
            impl Tool for $ty {
                type Args = Value;
                type Output = Value;
                fn definition() -> &'static ToolDefinition {
                    static DEF: std::sync::LazyLock<ToolDefinition> =
                        std::sync::LazyLock::new(|| {
                            tool_runtime::definition::DefinitionBuilder::new($name, "Free.")
                                .no_schema(tool_runtime::definition::NoSchemaMode::ReadOnly)
                                .safety($safety)
                                .build()
                        });
                    &DEF
                }
                async fn call(
                    a: Value,
                    _: &tool_runtime::CallContext,
                ) -> Result<Value, tool_runtime::ToolError> {
                    Ok(a)
                }
            }
        };
    }
    free_tool!(Writer, "free", tool_runtime::definition::Safety::Create);
    free_tool!(
        Reader,
        "free_reader",
        tool_runtime::definition::Safety::ReadOnly
    );
    let set = ToolSet::new()
        .with::<Writer>()
        .unwrap()
        .with::<Reader>()
        .unwrap();
    let err = set.hydrate(&call("free", "{}")).unwrap_err();
    assert_eq!(err.code, ErrorCode::SCHEMA_REQUIRED);
    let inst = set.hydrate(&call("free_reader", r#"{"any": 1}"#)).unwrap();
    assert!(!inst.validated());
    assert_eq!(inst.arguments(), &json!({"any": 1}));
}

#[test]
fn a_generated_reader_matches_escaped_keys_and_refuses_one_sent_twice() {
    let set = ToolSet::new().with::<common::SearchNotesTool>().unwrap();
    let plain = set.hydrate_fast_only("search_notes", VALID).unwrap();
    // `\u0071uery` is `query`: serde hands the decoded key over, and the reader matches it
    let escaped = VALID.replacen(r#""query""#, r#""\u0071uery""#, 1);
    let read = set
        .hydrate_fast_only("search_notes", escaped.as_str())
        .unwrap();
    assert_eq!(
        read.downcast_ref::<common::SearchNotesTool>(),
        plain.downcast_ref::<common::SearchNotesTool>()
    );
    // the same key once plain and once escaped is a repeated key: the fast path refuses it
    let twice = VALID.replacen('{', r#"{"\u0071uery":"other","#, 1);
    assert!(
        set.hydrate_fast_only("search_notes", twice.as_str())
            .is_none()
    );
}

/// Integers are integers on both paths: a literal whose value is an integer is read as that
/// integer (`10.0`, `1e1`, `-0`), whether the tool is typed or dynamic and whether the arguments
/// came as text or as an object; a literal that is not an integer but would read as one
/// (`1e-999`, a decimal of ten thousand digits) is refused with a pointer to it.
#[test]
fn integers_are_read_exactly_or_refused_with_a_pointer() {
    let typed = set();
    let mut dynamic = ToolSet::new();
    dynamic
        .register_dynamic(
            ToolDefinition::new(
                "count",
                "Counts.",
                &json!({"type": "object", "properties": {"n": {"type": "integer"},
                        "x": {"type": "number"}}}),
            ),
            None,
        )
        .unwrap();
    let with_limit = |lit: &str| VALID.replace("\"limit\":10", &format!("\"limit\":{lit}"));
    for (lit, n) in [("10.0", 10), ("1e1", 10), ("1.5e1", 15), ("100e-1", 10)] {
        let i = typed
            .hydrate(&call("search_notes", with_limit(lit)))
            .unwrap_or_else(|e| panic!("{lit}: {e:?}"));
        assert_eq!(i.args::<SearchArgs>().unwrap().limit, n, "{lit}");
        let d = dynamic
            .hydrate(&call("count", format!(r#"{{"n": {lit}, "x": 2.5}}"#)))
            .unwrap();
        assert_eq!(d.arguments(), &json!({"n": n, "x": 2.5}), "{lit}");
        assert!(
            d.arguments()["n"].is_u64(),
            "an integer, not a float: {lit}"
        );
    }
    let d = dynamic.hydrate(&call("count", r#"{"n": -0}"#)).unwrap();
    assert!(d.arguments()["n"].is_u64());
    // arguments that arrive as an object are converted the same way
    let d = dynamic
        .hydrate(&call("count", json!({"n": 1e2, "x": 1.0})))
        .unwrap();
    assert_eq!(d.arguments(), &json!({"n": 100, "x": 1}));
    assert!(d.arguments()["n"].is_u64());

    let tiny = format!("0.{}1", "0".repeat(10_000));
    for lit in ["1e-999", tiny.as_str(), "1.00000000000000000001"] {
        for (set, name, text, pointer) in [
            (&typed, "search_notes", with_limit(lit), "/limit"),
            (&dynamic, "count", format!(r#"{{"n": {lit}}}"#), "/n"),
        ] {
            let e = set.hydrate(&call(name, text)).unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS, "{lit:.30}");
            assert_eq!(e.violations[0].pointer, pointer, "{lit:.30}");
            assert!(e.message.contains("not an integer"), "{}", e.message);
            assert!(e.message.len() < 400, "the literal is not echoed whole");
        }
    }
    // a fraction stays a fraction
    let e = typed
        .hydrate(&call("search_notes", with_limit("2.5")))
        .unwrap_err();
    assert_eq!(e.violations[0].pointer, "/limit");
}
