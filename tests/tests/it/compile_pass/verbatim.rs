use tool_runtime::{CallContext, Tool, ToolCall, definition::SchemaOrigin, tool, toolset};

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

/// A priority the schema spells as strings; its Rust type is the author's own enum.
#[derive(serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    High,
}

fn parse_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}

/// Types agree where the macro can tell (floats take integers, `Option` takes null, sequences
/// and maps by their items), and types it cannot see into are left to the schema: an enum of the
/// author's, `serde_json::Value`, a field read by `deserialize_with`.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{
        "ratio":{"type":"integer"},
        "labels":{"type":"array","items":{"type":"string","enum":["a","b"]}},
        "weights":{"type":"object","additionalProperties":{"type":"number"}},
        "priority":{"type":"string","enum":["low","high"]},
        "extra":{"type":["object","array"]},
        "count":{"type":"string"},
        "when":{"anyOf":[{"type":"string"},{"type":"null"}]}
    },"required":["ratio","labels","weights","priority","extra","count","when"]}"#
)]
fn triage(
    ratio: f64,
    labels: Vec<String>,
    weights: std::collections::BTreeMap<String, f32>,
    priority: Priority,
    extra: serde_json::Value,
    #[serde(deserialize_with = "parse_count")] count: u32,
    when: Option<Box<str>>,
) -> usize {
    let _ = (ratio, weights, extra, when);
    labels.len() + count as usize + matches!(priority, Priority::High) as usize
}

#[tokio::test]
async fn runs() {
    assert_eq!(
        <create_note as Tool>::definition().schema_origin,
        SchemaOrigin::Verbatim
    );
    // a verbatim schema has no generated reader: the guard reads its calls on the fast path
    assert!(<create_note as Tool>::__READER.is_none());
    assert!(<create_note as Tool>::__GUARD.is_some());
    assert!(
        <get_note as Tool>::SCHEMA_JSON
            .unwrap()
            .starts_with(r#"{"type":"object""#)
    );
    // the field read by `deserialize_with` takes the schema's string, and the enum its values
    let set = toolset![triage].unwrap();
    let call = ToolCall::new(
        "c",
        "triage",
        r#"{"ratio": 1, "labels": ["a"], "weights": {}, "priority": "high", "extra": [],
            "count": "40", "when": null}"#,
    );
    let out = set.hydrate(&call).unwrap().run(CallContext::new("c")).await;
    assert_eq!(out.unwrap(), serde_json::json!(42));
}
