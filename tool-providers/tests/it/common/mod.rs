//! Tool sets shared by the codec tests.
#![allow(dead_code)]

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{
    CallContext, Tool, ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
};

/// Typed arguments of the hand-written `get_weather` tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeatherArgs {
    pub city: String,
    #[serde(default)]
    pub unit: Option<Unit>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    C,
    F,
}

/// `get_weather` written by hand against the `Tool` trait (typed arguments).
pub struct GetWeather;

impl Tool for GetWeather {
    type Args = WeatherArgs;
    type Output = Value;

    fn definition() -> &'static ToolDefinition {
        static DEF: OnceLock<ToolDefinition> = OnceLock::new();
        DEF.get_or_init(|| {
            let mut def = ToolDefinition::new(
                "get_weather",
                "Current weather for a city",
                &json!({
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "minLength": 1},
                        "unit": {"type": "string", "enum": ["c", "f"]}
                    },
                    "required": ["city"]
                }),
            );
            def.safety = Safety::External;
            def.strict = Some(true);
            def
        })
    }

    async fn call(args: WeatherArgs, _cx: &CallContext) -> Result<Value, ToolError> {
        Ok(json!({"city": args.city, "temp_c": 15}))
    }
}

fn dynamic(name: &str, description: &str, schema: Value) -> ToolDefinition {
    ToolDefinition::new(name.to_owned(), description.to_owned(), &schema)
}

/// The tools named in the wire README's response examples.
pub fn fixture_toolset() -> ToolSet {
    let mut set = ToolSet::new();
    set.register::<GetWeather>().unwrap();
    let defs = [
        dynamic(
            "calculator",
            "Arithmetic",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
                "op": {"type": "string", "enum": ["add", "multiply"]}}, "required": ["a", "b", "op"],
                "additionalProperties": false}),
        ),
        dynamic(
            "test-tool",
            "A test tool",
            json!({"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}),
        ),
        dynamic(
            "json",
            "Structured answer",
            json!({"type": "object", "properties": {"elements": {"type": "array", "items": {
                "type": "object", "properties": {"location": {"type": "string"},
                "temperature": {"type": "number"}, "condition": {"type": "string"}},
                "required": ["location", "temperature", "condition"]}}}, "required": ["elements"]}),
        ),
        dynamic(
            "get_temperature",
            "Get the current temperature for a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        dynamic(
            "weather",
            "Current weather",
            json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
        ),
        dynamic(
            "getWeather",
            "Current weather",
            json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
        ),
        dynamic(
            "delete_file",
            "Delete a file in the workspace",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
                "additionalProperties": false}),
        ),
        dynamic(
            "get_time",
            "The current time",
            json!({"type": "object", "properties": {}}),
        ),
    ];
    for d in defs {
        set.register_dynamic(d, None).unwrap();
    }
    set
}

/// A representative tool set for the snapshots: nested objects, enums, optional fields, arrays,
/// `$defs`/`$ref`, a verbatim schema, every safety category, an output schema, no parameters.
pub fn representative_definitions() -> Vec<ToolDefinition> {
    let mut search = dynamic(
        "search_notes",
        "Search your notes by text",
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Words to look for"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["query"]}),
    );
    search.safety = Safety::ReadOnly;
    search.strict = Some(true);

    let mut event = dynamic(
        "create_event",
        "Add an event to the calendar",
        json!({"type": "object", "properties": {
            "title": {"type": "string"},
            "when": {"type": "object", "properties": {
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": ["string", "null"], "format": "date-time"}},
                "required": ["start"]},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            "attendees": {"type": "array", "items": {"$ref": "#/$defs/Attendee"}}},
            "required": ["title", "when"],
            "$defs": {"Attendee": {"type": "object", "properties": {
                "email": {"type": "string", "format": "email"},
                "optional": {"type": "boolean"}}, "required": ["email"]}}}),
    );
    event.safety = Safety::Create;
    event.strict = Some(true);

    let mut delete = dynamic(
        "delete_file",
        "Delete a file in the workspace",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
            "additionalProperties": false}),
    );
    delete.safety = Safety::Modify;
    delete.idempotent = true;
    delete.output_schema = Some(json!({"type": "object",
        "properties": {"deleted": {"type": "boolean"}}, "required": ["deleted"]}));

    // a verbatim schema, kept byte-for-byte (odd spacing, an open map of headers)
    let verbatim = r#"{"type": "object",
  "properties": {"url": {"type": "string", "format": "uri"},
                 "method": {"enum": ["GET", "HEAD"], "default": "GET"},
                 "headers": {"type": "object", "additionalProperties": {"type": "string"}}},
  "required": ["url"]}"#;
    let mut fetch: ToolDefinition = serde_json::from_value(json!({
        "name": "fetch_url", "description": "Fetch a web page",
        "parameters": serde_json::from_str::<Value>(verbatim).unwrap(),
        "safety": "external", "schema_origin": {"kind": "verbatim"}
    }))
    .unwrap();
    fetch.parameters = serde_json::value::RawValue::from_string(verbatim.to_owned()).unwrap();

    let time = dynamic(
        "get_time",
        "The current time",
        json!({"type": "object", "properties": {}}),
    );
    vec![search, event, delete, fetch, time]
}

/// The representative definitions registered (without bodies).
pub fn representative_toolset() -> ToolSet {
    let mut set = ToolSet::new();
    for d in representative_definitions() {
        set.register_dynamic(d, None).unwrap();
    }
    set
}

/// Reads a fixture file.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
