//! Dynamic tools and registration: canonical definitions given as JSON at run time, with or
//! without a body, validated the same way as typed tools, with clear registration errors.

mod common;

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::{
    CallContext, DynHandler, ErrorCode, RegistrationError, Safety, SchemaOrigin, ToolCall,
    ToolDefinition, ToolSet,
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

#[test]
fn no_schema_tools_follow_their_mode() {
    let mut set = ToolSet::new();
    let mut d = def("free", json!({}));
    d.schema_origin = SchemaOrigin::None(tool_runtime::NoSchemaMode::ReadOnly);
    set.register_dynamic(d.clone(), None).unwrap();
    let err = set.hydrate(&ToolCall::new("c", "free", "{}")).unwrap_err();
    assert_eq!(err.code, ErrorCode::SCHEMA_REQUIRED);
    d.name = "free_reader".into();
    d.safety = Safety::ReadOnly;
    set.register_dynamic(d, None).unwrap();
    let inst = set
        .hydrate(&ToolCall::new("c", "free_reader", r#"{"any": 1}"#))
        .unwrap();
    assert!(!inst.validated());
}
