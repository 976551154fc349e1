//! The struct form of `#[tool]`, verbatim schemas (inline and file, with an inlined `$ref`), and
//! `allow_no_schema`: definitions, hydration and running through a `ToolSet`.

use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::{
    CallContext, ErrorCode, Tool, ToolCall, ToolError, ToolSet,
    definition::{NoSchemaMode, Safety, SchemaOrigin},
    tool,
    tool::Run,
    toolset,
};

/// Deletes a note.
#[tool(modify, reversible, intent = "Delete note {id}")]
struct DeleteNote {
    /// The note's id
    id: u64,
    /// Retries before giving up
    #[arg(default = 3, min = 1, max = 5)]
    retries: u8,
    /// Why
    #[arg(min_length = 3)]
    reason: Option<String>,
}

impl Run for DeleteNote {
    type Output = String;
    type Error = ToolError;

    async fn run(self, cx: &CallContext) -> Result<String, ToolError> {
        Ok(format!(
            "deleted {} after {} ({:?}) in {}",
            self.id, self.retries, self.reason, cx.call_id
        ))
    }
}

/// Renames its fields for the model.
#[tool(read_only, name = "weather")]
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct GetWeather {
    city_name: String,
}

impl Run for GetWeather {
    type Output = String;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<String, ToolError> {
        Ok(self.city_name)
    }
}

/// Creates a note; the schema is a file whose `$ref` to a sibling file is inlined at build time.
#[tool(create, schema = "tests/schemas/note.json")]
fn create_note(title: String, body: String) -> String {
    format!("{title}: {body}")
}

/// Reads a note; the schema file has no `$ref`, so its bytes are kept exactly.
#[tool(read_only, schema = "tests/schemas/plain.json")]
fn read_note(id: u64) -> u64 {
    id
}

const INLINE: &str =
    r#"{"type":"object",  "properties":{"id":{"type":"integer","minimum":1}},"required":["id"]}"#;

/// Gets a note; the schema is inline, and its exact bytes are the canonical contract.
#[tool(
    read_only,
    parameters = r#"{"type":"object",  "properties":{"id":{"type":"integer","minimum":1}},"required":["id"]}"#,
    examples = [r#"{"id": 4}"#]
)]
fn get_note(id: u64) -> u64 {
    id * 2
}

/// Forwards anything to a person for approval.
#[tool(external, allow_no_schema, no_schema_mode = human_approval)]
struct Forward(Value);

impl Run for Forward {
    type Output = Value;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<Value, ToolError> {
        Ok(self.0)
    }
}

#[test]
fn struct_form_definition() {
    let def = DeleteNote::definition();
    assert_eq!(def.name, "delete_note");
    assert_eq!(def.description, "Deletes a note.");
    assert_eq!(def.safety, Safety::Modify);
    assert!(def.reversible);
    assert_eq!(def.schema_origin, SchemaOrigin::Derived);
    assert_eq!(
        def.parameters_value(),
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "format": "uint64", "minimum": 0, "description": "The note's id"},
                "retries": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 5,
                            "default": 3, "description": "Retries before giving up"},
                "reason": {"type": ["string", "null"], "minLength": 3, "description": "Why"}
            },
            "required": ["id"]
        })
    );
    assert_eq!(def.output_schema, Some(json!({"type": "string"})));
    let w = GetWeather::definition();
    assert_eq!(w.name, "weather");
    assert_eq!(w.parameters_value()["required"], json!(["cityName"]));
}

#[tokio::test]
async fn struct_form_hydrates_and_runs() {
    let set = toolset![DeleteNote, GetWeather].unwrap();
    let inst = set
        .hydrate(&ToolCall::new("c9", "delete_note", r#"{"id": 7}"#))
        .unwrap();
    assert_eq!(inst.args::<DeleteNote>().unwrap().retries, 3);
    let out = inst.run(CallContext::new("c9")).await.unwrap();
    assert_eq!(out, json!("deleted 7 after 3 (None) in c9"));

    let err = set
        .hydrate(&ToolCall::new(
            "c",
            "delete_note",
            r#"{"id": 7, "reason": "x"}"#,
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(err.violations[0].pointer, "/reason");

    let out = set
        .hydrate(&ToolCall::new("c", "weather", r#"{"cityName": "Oslo"}"#))
        .unwrap()
        .run(CallContext::new("c"))
        .await
        .unwrap();
    assert_eq!(out, json!("Oslo"));
}

#[test]
fn inline_verbatim_schema_is_kept_byte_for_byte() {
    let def = get_note::definition();
    assert_eq!(def.parameters.get(), INLINE);
    assert_eq!(def.schema_origin, SchemaOrigin::Verbatim);
    assert_eq!(<get_note as Tool>::SCHEMA_JSON, Some(INLINE));
    assert_eq!(def.examples, [json!({"id": 4})]);
    assert_eq!(get_note(2), 4);
}

#[test]
fn file_schema_without_refs_is_the_file_itself() {
    let def = read_note::definition();
    // The file's exact text; only the whitespace around the JSON value is not part of it.
    assert_eq!(
        def.parameters.get(),
        include_str!("../schemas/plain.json").trim_end()
    );
    assert_eq!(
        <read_note as Tool>::SCHEMA_JSON,
        Some(include_str!("../schemas/plain.json"))
    );
}

#[tokio::test]
async fn file_schema_refs_are_inlined_under_defs_and_validate() {
    let def = create_note::definition();
    let p = def.parameters_value();
    assert_eq!(p["properties"]["body"]["$ref"], "#/$defs/body");
    assert_eq!(p["$defs"]["body"]["minLength"], 1);
    assert!(p["$defs"]["body"].get("$schema").is_none());

    let set = toolset![create_note].unwrap();
    let err = set
        .hydrate(&ToolCall::new(
            "c",
            "create_note",
            r#"{"title": "t", "body": ""}"#,
        ))
        .unwrap_err();
    assert_eq!(err.violations[0].pointer, "/body");
    let out = set
        .hydrate(&ToolCall::new(
            "c",
            "create_note",
            r#"{"title": "t", "body": "b"}"#,
        ))
        .unwrap()
        .run(CallContext::new("c"))
        .await
        .unwrap();
    assert_eq!(out, json!("t: b"));
}

#[tokio::test]
async fn verbatim_schema_validates_before_the_body() {
    let set = ToolSet::new().with::<get_note>().unwrap();
    let err = set
        .hydrate(&ToolCall::new("c", "get_note", r#"{"id": 0}"#))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    let out = set
        .hydrate(&ToolCall::new("c", "get_note", r#"{"id": 5}"#))
        .unwrap()
        .run(CallContext::new("c"))
        .await
        .unwrap();
    assert_eq!(out, json!(10));
}

#[tokio::test]
async fn no_schema_tools_are_flagged_unvalidated() {
    let def = Forward::definition();
    assert_eq!(def.no_schema_mode(), Some(NoSchemaMode::HumanApproval));
    assert_eq!(
        def.schema_origin,
        SchemaOrigin::None(NoSchemaMode::HumanApproval)
    );
    let set = toolset![Forward].unwrap();
    let inst = set
        .hydrate(&ToolCall::new("c", "forward", r#"{"anything": [1, 2]}"#))
        .unwrap();
    assert!(!inst.validated());
    let out = inst.run(CallContext::new("c")).await.unwrap();
    assert_eq!(out, json!({"anything": [1, 2]}));
}

#[test]
fn duplicate_names_are_refused_at_registration_too() {
    let mut set = ToolSet::new();
    set.register::<get_note>().unwrap();
    let err = set.register::<get_note>().unwrap_err();
    assert_eq!(
        err,
        tool_runtime::toolset::RegistrationError::DuplicateName("get_note".into())
    );
}
