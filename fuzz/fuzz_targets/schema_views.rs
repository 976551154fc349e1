//! Arbitrary JSON as a canonical schema, turned into every provider view: OpenAI strict, `$ref`
//! inlining, Gemini's `parameters` subset, and each codec's declaration.
//!
//! Properties: no view panics, whatever the schema; for a valid schema, each view that succeeds
//! is itself a valid JSON Schema where it claims to be one (strict, inlined), the strict view and
//! the inlining are idempotent, an inlined schema has no reference left, a Gemini view has no `$ref`
//! and only upper-case type names (valid schemas only: the views copy what they do not
//! understand), and every declaration serializes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_providers::codec::gemini::Gemini;
use tool_providers::codec::openai_chat::OpenAiChat;
use tool_providers::codec::openai_responses::OpenAiResponses;
use tool_providers::codec::{Codec, Provider};
use tool_runtime::definition::ToolDefinition;
use tool_runtime::definition::MAX_SCHEMA_DEPTH;
use tool_runtime::validate::Validator;
use tool_wire::{GeminiSchemaField, StrictPolicy, gemini, inline, strict};

fuzz_target!(|data: &[u8]| {
    let Some(text) = tool_fuzz::text(data) else {
        return;
    };
    let Ok(schema) = serde_json::from_str::<Value>(text) else {
        return;
    };
    // registration refuses deeper schemas before any view sees them
    if tool_fuzz::depth(text) > MAX_SCHEMA_DEPTH {
        return;
    }
    let valid = Validator::check(&schema).is_ok();

    if let Ok(view) = strict::strict_view(&schema) {
        assert_eq!(view["additionalProperties"], Value::Bool(false), "{text}");
        if valid {
            assert!(
                Validator::check(&view).is_ok(),
                "strict view of {text}: {view}"
            );
            assert_eq!(
                strict::strict_view(&view).as_ref(),
                Ok(&view),
                "the strict view is not idempotent on {text}"
            );
        }
    }

    if let Ok(inlined) = inline::inline_refs(&schema) {
        if valid {
            assert!(!string_refs(&inlined), "{text}: {inlined}");
            assert!(
                Validator::check(&inlined).is_ok(),
                "inlined {text}: {inlined}"
            );
            assert_eq!(
                inline::inline_refs(&inlined).as_ref(),
                Ok(&inlined),
                "inlining is not idempotent on {text}"
            );
        }
    }

    if let Ok(Some(view)) = gemini::parameters_view(&schema)
        && valid
    {
        gemini_shape(&view, text);
    }

    let def = ToolDefinition::new("fuzzed", "A fuzzed tool.", &schema);
    let codecs: [Box<dyn Codec>; 9] = [
        Provider::OpenAiChat.codec(),
        Box::new(OpenAiChat::with_strict(StrictPolicy::Prefer)),
        Provider::OpenAiResponses.codec(),
        Box::new(OpenAiResponses::with_strict(StrictPolicy::Prefer)),
        Provider::Anthropic.codec(),
        Provider::Ollama.codec(),
        Provider::Gemini.codec(),
        Box::new(Gemini {
            schema_field: GeminiSchemaField::Parameters,
        }),
        Provider::Mcp.codec(),
    ];
    for codec in &codecs {
        if let Ok(declaration) = codec.declare(&def) {
            serde_json::to_string(&declaration).expect("a declaration serializes");
        }
    }
});

/// Whether a reference is left: a `$ref` holding a string, outside the keywords whose values are
/// data. (`has_refs` also counts a `$ref` key holding something else, say inside an unknown
/// keyword, which the meta-schema lets through and which no validator follows.)
fn string_refs(v: &Value) -> bool {
    match v {
        Value::Object(map) => map.iter().any(|(k, v)| match k.as_str() {
            "$ref" => v.is_string(),
            "enum" | "const" | "default" | "examples" | "required" => false,
            _ => string_refs(v),
        }),
        Value::Array(items) => items.iter().any(string_refs),
        _ => false,
    }
}

/// Gemini's schema is a protobuf message: type names are its upper-case enum, and references
/// must all have been inlined. Keys of `properties` are names and `enum`, `default` and
/// `example` hold data, so neither is read as keywords.
fn gemini_shape(view: &Value, text: &str) {
    let Value::Object(map) = view else {
        if let Value::Array(items) = view {
            items.iter().for_each(|v| gemini_shape(v, text));
        }
        return;
    };
    assert!(!map.contains_key("$ref"), "gemini view of {text}: {view}");
    if let Some(t) = map.get("type").and_then(Value::as_str) {
        assert_eq!(t, t.to_uppercase(), "gemini view of {text}");
    }
    for (key, value) in map {
        match key.as_str() {
            "enum" | "default" | "example" | "required" | "propertyOrdering" | "description"
            | "title" => {}
            "properties" => {
                if let Value::Object(props) = value {
                    props.values().for_each(|v| gemini_shape(v, text));
                }
            }
            _ => gemini_shape(value, text),
        }
    }
}
