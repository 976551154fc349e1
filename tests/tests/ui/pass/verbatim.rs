use tool_runtime::{SchemaOrigin, Tool, tool};

/// Creates a note from a file schema whose `$ref` to a sibling file is inlined.
#[tool(create, schema = "tests/schemas/note.json")]
fn create_note(title: String, body: String) -> String {
    format!("{title}: {body}")
}

/// Looks a note up by id; the schema is written inline.
#[tool(
    read_only,
    strict,
    parameters = r#"{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":["string","null"]}},"required":["id","tag"],"additionalProperties":false}"#,
    examples = [r#"{"id": 1, "tag": null}"#]
)]
fn get_note(id: u64, tag: Option<String>) -> u64 {
    id + tag.map_or(0, |t| t.len() as u64)
}

fn main() {
    assert_eq!(
        <create_note as Tool>::definition().schema_origin,
        SchemaOrigin::Verbatim
    );
    assert!(
        <get_note as Tool>::SCHEMA_JSON
            .unwrap()
            .starts_with(r#"{"type":"object""#)
    );
}
