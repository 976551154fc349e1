//! Dynamic tools and registration: canonical definitions given as JSON at run time, with or
//! without a body, validated the same way as typed tools, with clear registration errors.

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::{
    CallContext, ErrorCode, ToolCall, ToolSet,
    definition::{Safety, SchemaOrigin, ToolDefinition},
    toolset::{DynHandler, RegistrationError},
};

fn def(name: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition::new(name.to_owned(), "A tool.", &parameters)
}

const CATALOG: &str = r#"[
  {"type": "function", "name": "get_weather", "description": "Weather for a city.",
   "parameters": {"type": "object", "properties": {
       "city": {"type": "string", "minLength": 1},
       "unit": {"type": "string", "enum": ["c", "f"]}},
     "required": ["city"], "additionalProperties": false},
   "strict": true, "safety": "external", "idempotent": true},
  {"type": "function", "name": "delete_note", "description": "Delete a note.",
   "parameters": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}},
     "required": ["id"]},
   "safety": "modify", "reversible": true}
]"#;

#[test]
fn a_catalog_registers_declared_tools_with_their_safety_fields() {
    let mut set = ToolSet::new();
    set.register_catalog(CATALOG).unwrap();
    assert_eq!(set.len(), 2);
    let weather = set.get("get_weather").unwrap();
    assert_eq!(weather.safety, Safety::External);
    assert_eq!(weather.strict, Some(true));
    assert!(weather.idempotent);
    assert_eq!(weather.schema_origin, SchemaOrigin::Dynamic);
    assert_eq!(set.get("delete_note").unwrap().safety, Safety::Modify);
    assert!(!set.is_runnable("get_weather"));

    let inst = set
        .hydrate(&ToolCall::new("c1", "get_weather", r#"{"city": "Oslo"}"#))
        .unwrap();
    assert_eq!(inst.arguments(), &json!({"city": "Oslo"}));
    assert!(!inst.is_runnable());
    let err = set
        .hydrate(&ToolCall::new(
            "c1",
            "get_weather",
            r#"{"city": "", "unit": "k", "x": 1}"#,
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(err.violations.len(), 3, "{:?}", err.violations);
}

#[tokio::test]
async fn a_declared_only_tool_refuses_to_run_and_one_with_a_body_runs() {
    let mut set = ToolSet::new();
    set.register_catalog(CATALOG).unwrap();
    let inst = set
        .hydrate(&ToolCall::new("c1", "delete_note", json!({"id": 3})))
        .unwrap();
    let err = inst.run(CallContext::new("c1")).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NOT_ALLOWED);

    let handler: DynHandler =
        Arc::new(|args: Value, _cx| async move { Ok(json!({"echo": args})) }.boxed());
    set.register_dynamic(
        def(
            "echo",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        ),
        Some(handler),
    )
    .unwrap();
    assert!(set.is_runnable("echo"));
    let out = set
        .hydrate(&ToolCall::new("c2", "echo", r#"{"x": 2}"#))
        .unwrap()
        .run(CallContext::new("c2"))
        .await
        .unwrap();
    assert_eq!(out, json!({"echo": {"x": 2}}));
}

#[test]
fn bad_definitions_are_refused_with_clear_errors() {
    let mut set = ToolSet::new();
    let obj = json!({"type": "object"});
    assert_eq!(
        set.register_dynamic(def("has space", obj.clone()), None)
            .unwrap_err(),
        RegistrationError::InvalidName("has space".into())
    );
    set.register_dynamic(def("once", obj.clone()), None)
        .unwrap();
    assert_eq!(
        set.register_dynamic(def("once", obj.clone()), None)
            .unwrap_err(),
        RegistrationError::DuplicateName("once".into())
    );
    assert_eq!(
        set.register_dynamic(def("arr", json!({"type": "array"})), None)
            .unwrap_err(),
        RegistrationError::NotAnObject("arr".into())
    );
    assert_eq!(
        set.register_dynamic(def("num", json!(5)), None)
            .unwrap_err(),
        RegistrationError::NotAnObject("num".into())
    );
    let err = set
        .register_dynamic(
            def(
                "remote",
                json!({"type": "object", "properties": {
                "a": {"$ref": "https://example.com/a.json"}}}),
            ),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(&err, RegistrationError::RemoteRef { reference, .. } if reference == "https://example.com/a.json"),
        "{err:?}"
    );
    // invalid against the meta-schema, even where the fast path could have coped
    for bad in [
        json!({"type": "object", "properties": {"a": {"type": "strng"}}}),
        json!({"type": "object", "properties": {"a": {"minLength": -1}}}),
        json!({"type": "object", "required": "a"}),
        json!({"type": "object", "properties": {"a": {"pattern": "("}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}),
    ] {
        let err = set
            .register_dynamic(def("bad", bad.clone()), None)
            .unwrap_err();
        assert!(
            matches!(err, RegistrationError::InvalidSchema { .. }),
            "{bad}: {err:?}"
        );
        assert!(err.to_string().contains("\"bad\""), "{err}");
    }
    let mut wrong_kind = def("kind", obj);
    wrong_kind.kind = "retrieval".into();
    assert!(matches!(
        set.register_dynamic(wrong_kind, None).unwrap_err(),
        RegistrationError::InvalidDefinition { .. }
    ));
    assert_eq!(set.len(), 1, "nothing refused was registered");
}

#[test]
fn a_catalog_is_registered_all_or_nothing() {
    let mut set = ToolSet::new();
    let err = set.register_catalog("{\"not\": \"an array\"}").unwrap_err();
    assert!(matches!(err, RegistrationError::Catalog(_)), "{err:?}");
    let err = set
        .register_catalog(
            r#"[{"name": "ok", "parameters": {"type": "object"}}, {"name": "no_params"}]"#,
        )
        .unwrap_err();
    assert!(err.to_string().contains("definition 1"), "{err}");
    let err = set
        .register_catalog(
            r#"[{"name": "a", "parameters": {"type": "object"}},
                              {"name": "a", "parameters": {"type": "object"}}]"#,
        )
        .unwrap_err();
    assert_eq!(err, RegistrationError::DuplicateName("a".into()));
    let err = set
        .register_catalog(
            r#"[{"name": "fine", "parameters": {"type": "object"}},
                              {"name": "broken", "parameters": {"type": "string"}}]"#,
        )
        .unwrap_err();
    assert_eq!(err, RegistrationError::NotAnObject("broken".into()));
    assert!(set.is_empty(), "a refused catalog registers nothing");
}

#[test]
fn a_large_catalog_is_checked_over_every_core_and_reports_its_first_refusal_in_order() {
    // enough definitions that registration spreads them over threads (16 or more per thread)
    let catalog = |broken: &[usize]| {
        let defs: Vec<Value> = (0..200)
            .map(|i| {
                let ty = if broken.contains(&i) {
                    "string"
                } else {
                    "object"
                };
                json!({"name": format!("t{i}"), "parameters": {
                    "type": ty, "properties": {"n": {"type": "integer", "maximum": i}}}})
            })
            .collect();
        Value::Array(defs).to_string()
    };
    let mut set = ToolSet::new();
    for _ in 0..5 {
        let err = set.register_catalog(&catalog(&[170, 41, 120])).unwrap_err();
        assert_eq!(err, RegistrationError::NotAnObject("t41".into()));
        assert!(set.is_empty(), "a refused catalog registers nothing");
    }
    set.register_catalog(&catalog(&[])).unwrap();
    // every tool, in the catalog's order, each with its own check
    let names: Vec<String> = set.definitions().map(|d| d.name.to_string()).collect();
    assert_eq!(names, (0..200).map(|i| format!("t{i}")).collect::<Vec<_>>());
    for i in [0, 57, 199] {
        let call = |n: usize| ToolCall::new("c", format!("t{i}"), format!(r#"{{"n": {n}}}"#));
        assert!(set.hydrate(&call(i)).is_ok());
        assert!(
            set.hydrate(&call(i + 1)).is_err(),
            "t{i} keeps its own maximum"
        );
    }
}

#[test]
fn schemas_the_fast_path_cannot_express_still_validate_through_jsonschema() {
    let mut set = ToolSet::new();
    set.register_dynamic(
        def(
            "either",
            json!({"type": "object", "properties": {
            "v": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 5}]},
            "tags": {"type": "array", "uniqueItems": true}}}),
        ),
        None,
    )
    .unwrap();
    let ok = |args: &str| set.hydrate(&ToolCall::new("c", "either", args)).is_ok();
    assert!(ok(r#"{"v": "ab", "tags": [1, 2]}"#));
    assert!(ok(r#"{"v": 7}"#));
    assert!(!ok(r#"{"v": "abc"}"#));
    assert!(!ok(r#"{"v": 4}"#));
    assert!(!ok(r#"{"tags": [1, 1]}"#));
}

/// A definition's `schema_origin` comes with its JSON, so it must not decide how calls are
/// checked: `none` would skip validation, `derived` the meta-schema check.
#[test]
fn a_claimed_schema_origin_cannot_switch_validation_off() {
    // `none`, in a catalog or through register_dynamic, is refused: only #[tool] can opt out
    for origin in [
        r#"{"kind": "none", "mode": "full"}"#,
        r#"{"kind": "none", "mode": "read_only"}"#,
    ] {
        let catalog = format!(
            r#"[{{"type": "function", "name": "free", "description": "d",
                 "parameters": {{"type": "object"}}, "schema_origin": {origin}}}]"#
        );
        let mut set = ToolSet::new();
        let err = set.register_catalog(&catalog).unwrap_err();
        assert!(
            matches!(&err, RegistrationError::InvalidDefinition { name, reason }
                if name == "free" && reason.contains("cannot opt out of its schema")),
            "{err:?}"
        );
        assert!(set.is_empty());
    }
    let mut d = def("free", json!({"type": "object"}));
    d.schema_origin = SchemaOrigin::None(tool_runtime::definition::NoSchemaMode::Full);
    assert!(matches!(
        ToolSet::new().register_dynamic(d, None).unwrap_err(),
        RegistrationError::InvalidDefinition { .. }
    ));

    // `derived` and `verbatim` are recorded as dynamic, and the calls are validated
    let schema = r#"{"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}},
                     "required": ["n"], "additionalProperties": false}"#;
    for origin in [r#"{"kind": "derived"}"#, r#"{"kind": "verbatim"}"#] {
        let catalog = format!(
            r#"[{{"type": "function", "name": "count", "description": "d",
                 "parameters": {schema}, "schema_origin": {origin}}}]"#
        );
        let mut set = ToolSet::new();
        set.register_catalog(&catalog).unwrap();
        assert_eq!(
            set.get("count").unwrap().schema_origin,
            SchemaOrigin::Dynamic
        );
        assert!(!set.has_fast_path("count"));
        assert!(
            set.hydrate(&ToolCall::new("c", "count", r#"{"n": 2}"#))
                .is_ok()
        );
        for bad in [
            r#"{"n": 4}"#,
            r#"{}"#,
            r#"{"n": 1, "x": 0}"#,
            r#"{"n": "1"}"#,
        ] {
            let err = set.hydrate(&ToolCall::new("c", "count", bad)).unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS, "{bad}");
            assert!(!err.violations.is_empty(), "{bad}");
        }
    }

    // and the meta-schema check still runs. A number as `description` breaks the meta-schema
    // but no check of a call, so only that check can refuse it
    let bad_schema =
        r#"{"type": "object", "properties": {"n": {"type": "integer", "description": 5}}}"#;
    for origin in [r#"{"kind": "derived"}"#, r#"{"kind": "verbatim"}"#] {
        let catalog = format!(
            r#"[{{"type": "function", "name": "count", "description": "d",
                 "parameters": {bad_schema}, "schema_origin": {origin}}}]"#
        );
        let err = ToolSet::new().register_catalog(&catalog).unwrap_err();
        assert!(
            matches!(&err, RegistrationError::InvalidSchema { name, .. } if name == "count"),
            "{origin}: {err:?}"
        );
        let mut d: ToolDefinition =
            serde_json::from_str(&catalog[catalog.find('{').unwrap()..catalog.rfind(']').unwrap()])
                .unwrap();
        assert_ne!(d.schema_origin, SchemaOrigin::Dynamic);
        d.name = "direct".into();
        assert!(matches!(
            ToolSet::new().register_dynamic(d, None).unwrap_err(),
            RegistrationError::InvalidSchema { .. }
        ));
    }
}

/// The text of a catalog of one tool whose `parameters` nest `levels` deep, the depth hidden in an
/// unknown `x-` keyword that no validator reads.
fn deep_catalog(levels: usize) -> String {
    let inner = levels - 1;
    format!(
        r#"[{{"type": "function", "name": "deep", "description": "A deep schema.",
             "parameters": {{"type": "object", "x-deep": {}{}}}}}]"#,
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

#[test]
fn schemas_nested_past_the_limit_are_refused_at_registration_whatever_the_keyword() {
    use tool_runtime::definition::MAX_SCHEMA_DEPTH;
    // past serde_json's recursion limit, just under it, and one past the limit
    for levels in [125, 200, 10_000, 121, MAX_SCHEMA_DEPTH + 1] {
        let mut set = ToolSet::new();
        let err = set.register_catalog(&deep_catalog(levels)).unwrap_err();
        assert!(
            matches!(&err, RegistrationError::SchemaTooDeep { name, error }
                if name == "deep" && error.depth == levels),
            "{levels}: {err:?}"
        );
        assert!(
            err.to_string().contains("$defs"),
            "says how to fix it: {err}"
        );
        assert!(set.is_empty());

        // one definition at a time, too
        let defs: Vec<ToolDefinition> = serde_json::from_str(&deep_catalog(levels)).unwrap();
        let def = defs.into_iter().next().unwrap();
        assert!(def.try_parameters_value().is_err());
        let err = set.register_dynamic(def, None).unwrap_err();
        assert!(
            matches!(err, RegistrationError::SchemaTooDeep { .. }),
            "{err:?}"
        );
    }
    // at the limit, registered and readable
    let mut set = ToolSet::new();
    set.register_catalog(&deep_catalog(MAX_SCHEMA_DEPTH))
        .unwrap();
    assert!(set.get("deep").unwrap().try_parameters_value().is_ok());
}

/// A schema the validator cannot compile is refused at registration, also when a plan checks
/// its calls and the validator would only be compiled at the first refusal: the meta-schema does
/// not check that `$schema` is a URI, jsonschema does.
#[test]
fn a_schema_the_validator_cannot_compile_is_refused_at_registration() {
    let schema = json!({"type": "object", "$schema": "^(not a URI$"});
    let err = ToolSet::new()
        .register_dynamic(def("bad_uri", schema.clone()), None)
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(err, RegistrationError::InvalidSchema { .. }),
        "{err:?}"
    );
    let catalog = json!([{"type": "function", "name": "bad_uri", "description": "x",
                          "parameters": schema}]);
    assert!(
        ToolSet::new()
            .register_catalog(&catalog.to_string())
            .is_err()
    );
    // a draft's own URI is fine
    let mut set = ToolSet::new();
    set.register_dynamic(
        def(
            "good_uri",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                   "properties": {"n": {"type": "integer"}}}),
        ),
        None,
    )
    .unwrap();
    let err = set
        .hydrate(&ToolCall::new("c", "good_uri", r#"{"n": "x"}"#))
        .unwrap_err();
    assert_eq!(err.violations[0].pointer, "/n");
}
