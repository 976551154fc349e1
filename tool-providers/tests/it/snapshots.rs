//! What each provider is sent for a representative tool set (nested objects, enums, optional
//! fields, arrays, `$defs`, a verbatim schema with an open map, every safety category, an output
//! schema, a tool without parameters), and how results go back. Review changes with
//! `cargo insta review`.

use crate::common;

use serde_json::json;
use tool_providers::codec::gemini::{Gemini, GeminiSchemaField};
use tool_providers::codec::{Codec, Provider, ToolChoice, ToolConfig, ToolOutcome, ToolResult};
use tool_runtime::{ErrorCode, ToolCall, ToolError};

fn encode(codec: &dyn Codec) -> serde_json::Value {
    let defs = common::representative_definitions();
    let refs: Vec<_> = defs.iter().collect();
    codec.encode_tools(&refs, &ToolConfig::default()).unwrap()
}

#[test]
fn tool_declarations() {
    for p in Provider::ALL {
        insta::assert_json_snapshot!(format!("tools_{}", p.as_str()), encode(p.codec().as_ref()));
    }
    // the subset cannot express fetch_url's open map of headers (see gemini_subset_refuses_open_maps)
    let subset = Gemini {
        schema_field: GeminiSchemaField::Parameters,
    };
    let defs: Vec<_> = common::representative_definitions()
        .into_iter()
        .filter(|d| d.name != "fetch_url")
        .collect();
    let refs: Vec<_> = defs.iter().collect();
    insta::assert_json_snapshot!(
        "tools_gemini_parameters_subset",
        subset.encode_tools(&refs, &ToolConfig::default()).unwrap()
    );
}

/// Every tool-choice form of Gemini's `toolConfig`, `VALIDATED` included, with the tools each
/// form declares.
#[test]
fn gemini_tool_config_forms() {
    let defs = common::representative_definitions();
    let refs: Vec<_> = defs.iter().collect();
    let codec = Provider::Gemini.codec();
    let forms = [
        ("auto", ToolChoice::Auto),
        ("none", ToolChoice::None),
        ("required", ToolChoice::Required),
        ("named", ToolChoice::Named("get_time".into())),
        (
            "allowed_auto",
            ToolChoice::Allowed {
                tools: vec!["search_notes".into(), "get_time".into()],
                required: false,
            },
        ),
        (
            "allowed_required",
            ToolChoice::Allowed {
                tools: vec!["search_notes".into(), "get_time".into()],
                required: true,
            },
        ),
        ("validated", ToolChoice::Validated { tools: None }),
        (
            "validated_subset",
            ToolChoice::Validated {
                tools: Some(vec!["search_notes".into()]),
            },
        ),
    ];
    let mut out = serde_json::Map::new();
    for (label, choice) in forms {
        let body = codec.encode_tools(&refs, &ToolConfig::new(choice)).unwrap();
        let declared: Vec<_> = body["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].clone())
            .collect();
        out.insert(
            label.into(),
            json!({"toolConfig": body["toolConfig"], "declared": declared}),
        );
    }
    insta::assert_json_snapshot!("gemini_tool_config", out);
}

#[test]
fn gemini_subset_refuses_open_maps() {
    let subset = Gemini {
        schema_field: GeminiSchemaField::Parameters,
    };
    let defs = common::representative_definitions();
    let err = subset.declare(&defs[3]).unwrap_err();
    assert!(err.to_string().contains("/properties/headers"), "{err}");
}

#[test]
fn results_and_echo() {
    let calls = [
        ToolCall::new("call_1", "search_notes", r#"{"query":"rust"}"#),
        ToolCall::new("call_2", "delete_file", json!({"path": "/tmp/x"})),
        ToolCall::new("call_3", "delete_file", json!({"path": "/etc/hosts"})),
    ];
    let results = [
        ToolResult::new(&calls[0], ToolOutcome::Success(json!({"hits": ["a.md"]}))),
        ToolResult::new(
            &calls[1],
            ToolOutcome::Error(
                ToolError::new(ErrorCode::NOT_FOUND, "no file at /tmp/x")
                    .recover("list the directory, then call again with an existing path"),
            ),
        ),
        ToolResult::new(&calls[2], ToolOutcome::Denied { reason: None }),
    ];
    for p in Provider::ALL {
        let codec = p.codec();
        insta::assert_json_snapshot!(
            format!("turn_{}", p.as_str()),
            json!({
                "assistant": codec.encode_assistant("Working on it.", &calls),
                "results": codec.encode_results(&results),
            })
        );
    }
}
