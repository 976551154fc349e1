//! Hostile input, class by class: each is refused with a structured error (or read exactly as it
//! was validated), and none panics, hangs or grows without bound. The command-line side of the
//! same classes is `examples/tests/it/tools_hostile.rs`.

use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::{
    CallContext, ErrorCode, Executor, ToolCall, ToolError, ToolSet,
    definition::ToolDefinition,
    hydrate::{Arguments, Limits},
    tool,
    toolset::RegistrationError,
};

/// Adds to a running total.
#[tool(read_only)]
fn tally(
    /// The total so far.
    total: u64,
    /// What to add (negative to subtract).
    delta: i64,
    /// A label for the entry.
    #[arg(default, max_length = 100)]
    label: String,
) -> Value {
    json!({"total": total, "delta": delta, "label": label})
}

fn typed() -> ToolSet {
    ToolSet::new().with::<tally>().unwrap()
}

fn dynamic_with(schema: Value) -> ToolSet {
    let mut set = ToolSet::new();
    set.register_dynamic(
        ToolDefinition::new("tally", "Adds to a running total.", &schema),
        None,
    )
    .unwrap();
    set
}

/// The same parameters, registered at run time (the validator path).
fn dynamic(closed: bool) -> ToolSet {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "total": {"type": "integer", "minimum": 0},
            "delta": {"type": "integer"},
            "label": {"type": "string", "maxLength": 100}
        },
        "required": ["total", "delta"]
    });
    if closed {
        schema["additionalProperties"] = json!(false);
    }
    dynamic_with(schema)
}

fn refused(set: &ToolSet, text: &str) -> ToolError {
    match set.hydrate(&ToolCall::new("c", "tally", text)) {
        Ok(i) => panic!("accepted {:.80}: {}", text, i.arguments()),
        Err(e) => e,
    }
}

#[test]
fn bytes_that_are_not_utf8_are_invalid_json_with_the_offset_of_the_first_bad_byte() {
    let e = Arguments::from_utf8(b"{\"label\": \"ab\xff\xfe\"}".to_vec()).unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_JSON);
    assert_eq!(e.details["offset"], 13);
    assert!(e.message.contains("not valid UTF-8"), "{}", e.message);
    // a truncated multi-byte character is the same refusal
    let e = Arguments::from_utf8("{\"label\": \"é".as_bytes()[..12].to_vec()).unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_JSON);
    assert_eq!(
        Arguments::from_utf8(br#"{"total": 1}"#.to_vec()).unwrap(),
        Arguments::Text(r#"{"total": 1}"#.into())
    );
}

#[test]
fn an_endless_source_is_read_no_further_than_the_limit() {
    let limits = Limits {
        max_bytes: 4096,
        ..Limits::default()
    };
    let e = Arguments::read(std::io::repeat(b' '), &limits)
        .unwrap()
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PAYLOAD_TOO_LARGE);
    assert_eq!(e.details["limit"], 4096);
    let fits = Arguments::read(&br#"{"total": 1, "delta": 2}"#[..], &limits).unwrap();
    assert_eq!(
        typed()
            .hydrate(&ToolCall::new("c", "tally", fits.unwrap()))
            .unwrap()
            .arguments()["delta"],
        2
    );
}

#[test]
fn lone_surrogate_escapes_are_invalid_json_and_pairs_are_read() {
    for set in [typed(), dynamic(true)] {
        for text in [
            r#"{"total": 1, "delta": 0, "label": "\ud800"}"#,
            r#"{"total": 1, "delta": 0, "label": "\udc00 x"}"#,
            r#"{"total": 1, "delta": 0, "label": "\ud800\u0041"}"#,
            r#"{"total": 1, "delta": 0, "\ud800": "x"}"#,
        ] {
            let e = refused(&set, text);
            assert_eq!(e.code, ErrorCode::INVALID_JSON, "{text}: {}", e.message);
            assert!(e.details.get("column").is_some(), "{text}");
        }
        let ok = set
            .hydrate(&ToolCall::new(
                "c",
                "tally",
                r#"{"total": 1, "delta": 0, "label": "\ud83d\ude00"}"#,
            ))
            .unwrap();
        assert_eq!(ok.arguments()["label"], "😀");
    }
}

#[test]
fn numbers_beyond_the_integer_types_are_refused_without_echoing_them_whole() {
    let digits = "9".repeat(10_000);
    let cases = [
        (
            r#"{"total": 18446744073709551616, "delta": 0}"#.to_owned(),
            "/total",
        ),
        (
            r#"{"total": 1, "delta": -9223372036854775809}"#.to_owned(),
            "/delta",
        ),
        (format!(r#"{{"total": {digits}, "delta": 0}}"#), "/total"),
        (r#"{"total": 1e400, "delta": 0}"#.to_owned(), "/total"),
        (r#"{"total": -1, "delta": 0}"#.to_owned(), "/total"),
    ];
    for set in [typed(), dynamic(true)] {
        for (text, pointer) in &cases {
            let e = refused(&set, text);
            assert!(
                e.message.len() < 400,
                "the literal is not echoed whole: {:.100}",
                e.message
            );
            if e.code == ErrorCode::INVALID_JSON {
                // past f64: not JSON a parser can hold, said with a position
                assert!(e.details.get("column").is_some(), "{text:.60}");
            } else {
                // a number, but not one the parameter takes: said with a pointer
                assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS, "{}", e.message);
                assert_eq!(&e.violations[0].pointer, pointer, "{text:.60}");
            }
        }
        // the largest values each type holds are read exactly
        let max = set
            .hydrate(&ToolCall::new(
                "c",
                "tally",
                r#"{"total": 18446744073709551615, "delta": -9223372036854775808}"#,
            ))
            .unwrap();
        assert_eq!(max.arguments()["total"], u64::MAX);
        assert_eq!(max.arguments()["delta"], i64::MIN);
    }
}

/// A key sent twice (plainly, or once escaped) is read as the validator reads it: the last one.
/// The value that was checked is the value the tool receives, on every path and through the
/// executor, so a duplicate cannot smuggle an unchecked value past validation.
#[tokio::test]
async fn a_repeated_key_reaches_the_tool_as_the_value_that_was_validated() {
    for set in [typed(), dynamic(true)] {
        let e = refused(&set, r#"{"total": 5, "delta": 0, "total": -5}"#);
        assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
        assert_eq!(e.violations[0].pointer, "/total");
        let e = refused(&set, r#"{"total": 5, "delta": 0, "\u0074otal": -5}"#);
        assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
        let read = set
            .hydrate(&ToolCall::new(
                "c",
                "tally",
                r#"{"total": -5, "delta": 0, "\u0074otal": 5}"#,
            ))
            .unwrap();
        assert_eq!(read.arguments()["total"], 5);
    }
    let executor = Executor::builder(typed()).build().unwrap();
    let exec = executor
        .call(
            &ToolCall::new(
                "c1",
                "tally",
                r#"{"total": 99999, "delta": 1, "label": "a", "total": 7}"#,
            ),
            CallContext::new("c1"),
        )
        .await;
    assert_eq!(
        exec.value(),
        Some(&json!({"total": 7, "delta": 1, "label": "a"}))
    );
}

#[test]
fn a_million_keys_are_read_past_or_refused_in_a_message_of_bounded_size() {
    let text = format!(
        "{{\"total\": 1, \"delta\": 0, {}}}",
        (0..1_000_000)
            .map(|i| format!("\"k{i}\": 1"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let roomy = Limits {
        max_bytes: 64 << 20,
        ..Limits::default()
    };
    // a `#[tool]` function's parameters are an open object: unknown keys are read past
    let read = typed()
        .with_limits(roomy)
        .hydrate(&ToolCall::new("c", "tally", text.as_str()))
        .unwrap();
    assert_eq!(
        read.arguments(),
        &json!({"total": 1, "delta": 0, "label": ""})
    );
    let e = refused(&dynamic(true).with_limits(roomy), &text);
    assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
    let size = serde_json::to_string(&e.to_json()).unwrap().len();
    assert!(size < 64 << 10, "the error is {size} bytes");
    assert!(
        e.violations[0].message.contains("more characters"),
        "{:.200}",
        e.violations[0].message
    );
    // a million violations: the first fifty, and how many there were
    let wrong = format!(
        r#"{{"total": 1, "delta": 0, "label": [{}]}}"#,
        vec!["1"; 1_000_000].join(",")
    );
    let items = dynamic_with(json!({"type": "object", "properties": {
        "label": {"type": "array", "items": {"type": "string"}}}}))
    .with_limits(roomy);
    let e = refused(&items, &wrong);
    assert_eq!(e.violations.len(), 50);
    assert_eq!(e.details["violations_total"], 1_000_000);
    assert!(
        e.message.ends_with("and 999950 more violations"),
        "{:.100}",
        e.message
    );
    // within the default limit the same text is refused before it is parsed
    let e = refused(&typed(), &text);
    assert_eq!(e.code, ErrorCode::PAYLOAD_TOO_LARGE);
}

#[test]
fn arguments_encoded_three_times_are_refused_and_twice_are_repaired() {
    let object = r#"{"total": 1, "delta": 2}"#;
    let twice = serde_json::to_string(object).unwrap();
    let thrice = serde_json::to_string(&twice).unwrap();
    for set in [typed(), dynamic(true)] {
        let i = set
            .hydrate(&ToolCall::new("c", "tally", twice.as_str()))
            .unwrap();
        assert_eq!(i.arguments()["delta"], 2);
        let e = refused(&set, &thrice);
        assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
        assert!(e.message.contains("object"), "{}", e.message);
    }
}

#[test]
fn nesting_a_hundred_thousand_levels_deep_is_refused_before_parsing() {
    let deep = format!(
        r#"{{"total": 1, "delta": 0, "label": {}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    for set in [typed(), dynamic(false)] {
        assert_eq!(refused(&set, &deep).code, ErrorCode::NESTING_TOO_DEEP);
    }
}

fn catalog_error(tools: Value) -> RegistrationError {
    ToolSet::new()
        .register_catalog(&tools.to_string())
        .map(|_| ())
        .unwrap_err()
}

fn one_tool(parameters: Value) -> Value {
    json!([{"name": "t", "description": "d", "parameters": parameters}])
}

#[test]
fn catalogs_with_references_outside_the_document_or_in_circles_are_refused() {
    for reference in [
        "https://example.com/schema.json",
        "file:///etc/passwd",
        "urn:uuid:0",
    ] {
        let e = catalog_error(one_tool(
            json!({"type": "object", "properties": {"a": {"$ref": reference}}}),
        ));
        assert!(
            matches!(&e, RegistrationError::RemoteRef { reference: r, .. } if r == reference),
            "{e}"
        );
    }
    let cycle = one_tool(json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/x"}},
        "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}
    }));
    let e = catalog_error(cycle).to_string();
    assert!(e.contains("comes back to itself"), "{e}");
    let e = catalog_error(one_tool(
        json!({"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}),
    ))
    .to_string();
    assert!(e.contains("#/properties/a -> #/properties/a"), "{e}");
    let e = catalog_error(one_tool(
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
    ))
    .to_string();
    assert!(e.contains("/$defs/missing"), "{e}");
}

/// Valid JSON that cannot be read into numbers (found by the `register_catalog` fuzz target: a
/// catalog registered, then panicked when its schema was first read): refused at registration,
/// for a catalog and for a single dynamic definition.
#[test]
fn a_schema_with_a_number_beyond_f64_is_refused_at_registration() {
    for number in ["1111e1111", "-1e400"] {
        let catalog = format!(
            r#"[{{"type": "function", "name": "t", "description": "d",
                 "parameters": {{"type": {number}, "properties": {{"n": {{"type": "integer"}}}}}}}}]"#
        );
        let e = ToolSet::new()
            .register_catalog(&catalog)
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(&e, RegistrationError::InvalidSchema { name, .. } if name == "t"),
            "{e}"
        );
        assert!(e.to_string().contains("cannot be read"), "{e}");
    }
}

#[test]
fn names_with_control_characters_are_refused() {
    let e = catalog_error(json!([{"name": "t\u{7}\n", "description": "d",
                                   "parameters": {"type": "object"}}]));
    assert!(matches!(e, RegistrationError::InvalidName(_)), "{e}");
    let e = catalog_error(one_tool(json!({
        "type": "object",
        "properties": {"ok": {"type": "object", "properties": {"a\u{1b}[2Jb": {"type": "string"}}}}
    })));
    assert!(
        e.to_string().contains("control character"),
        "a nested property is found too: {e}"
    );
}

#[test]
fn a_catalog_of_a_hundred_thousand_tools_and_an_enum_of_a_million_values_register() {
    let many: Vec<Value> = (0..100_000)
        .map(|i| {
            json!({"name": format!("t{i}"), "description": "d",
                   "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}})
        })
        .collect();
    let mut set = ToolSet::new();
    set.register_catalog(&Value::Array(many).to_string())
        .unwrap();
    assert_eq!(set.len(), 100_000);
    let e = set.hydrate(&ToolCall::new("c", "t", "{}")).err().unwrap();
    assert_eq!(e.code, ErrorCode::UNKNOWN_TOOL);
    assert!(
        set.hydrate(&ToolCall::new("c", "t99999", r#"{"a": "x"}"#))
            .is_ok()
    );

    let values: Vec<String> = (0..1_000_000).map(|i| format!("v{i}")).collect();
    let mut set = ToolSet::new();
    set.register_catalog(
        &one_tool(json!({"type": "object", "properties": {"a": {"enum": values}}})).to_string(),
    )
    .unwrap();
    let e = refused_named(&set, "t", r#"{"a": "nope"}"#);
    assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
    assert!(e.message.len() < 400, "{:.200}", e.message);
    assert!(
        set.hydrate(&ToolCall::new("c", "t", r#"{"a": "v999999"}"#))
            .is_ok()
    );
}

fn refused_named(set: &ToolSet, name: &str, text: &str) -> ToolError {
    set.hydrate(&ToolCall::new("c", name, text)).err().unwrap()
}

/// The catalog pattern that backtracks catastrophically in a backtracking engine is evaluated
/// in bounded time: a call either matches, is refused, or is told the pattern gave up.
#[test]
fn a_catastrophic_pattern_is_answered_in_bounded_time() {
    let mut set = ToolSet::new();
    set.register_catalog(
        &one_tool(json!({"type": "object",
                          "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}))
        .to_string(),
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let text = format!(r#"{{"a": "{}!"}}"#, "a".repeat(10_000));
        let _ = tx.send(set.hydrate(&ToolCall::new("c", "t", text)).err());
    });
    // a hang guard, not a timing: the run takes milliseconds
    let e = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the pattern is evaluated in bounded time")
        .expect("refused");
    assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
}
