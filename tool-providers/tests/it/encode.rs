//! Declarations, every tool-choice form, results, and the declaration cache.

use crate::common;

use common::representative_definitions;
use serde_json::{Value, json};
use tool_providers::codec::openai_chat::{OpenAiChat, StrictPolicy};
use tool_providers::codec::{
    Codec, CodecError, DeclarationCache, Provider, ToolChoice, ToolConfig, ToolOutcome, ToolResult,
};
use tool_runtime::{ErrorCode, ToolCall, ToolError, definition::ToolDefinition};

fn defs() -> Vec<ToolDefinition> {
    representative_definitions()
}

fn refs(defs: &[ToolDefinition]) -> Vec<&ToolDefinition> {
    defs.iter().collect()
}

pub(crate) fn fields(provider: Provider, config: ToolConfig) -> Result<Value, CodecError> {
    let d = defs();
    let mut v = provider.codec().encode_tools(&refs(&d), &config)?;
    v.as_object_mut().unwrap().remove("tools");
    Ok(v)
}

pub(crate) fn names(provider: Provider, config: ToolConfig) -> Vec<String> {
    let d = defs();
    let v = provider.codec().encode_tools(&refs(&d), &config).unwrap();
    let list = match provider {
        Provider::Gemini => v["tools"][0]["functionDeclarations"].clone(),
        _ => v["tools"].clone(),
    };
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn named(n: &str) -> ToolChoice {
    ToolChoice::Named(n.into())
}

fn allowed(required: bool) -> ToolChoice {
    ToolChoice::Allowed {
        tools: vec!["search_notes".into(), "get_time".into()],
        required,
    }
}

#[test]
fn openai_chat_every_choice_form() {
    let p = Provider::OpenAiChat;
    let f = |c| fields(p, ToolConfig::new(c)).unwrap()["tool_choice"].clone();
    assert_eq!(f(ToolChoice::Auto), json!("auto"));
    assert_eq!(f(ToolChoice::None), json!("none"));
    assert_eq!(f(ToolChoice::Required), json!("required"));
    assert_eq!(
        f(named("get_time")),
        json!({"type": "function", "function": {"name": "get_time"}})
    );
    assert_eq!(
        f(allowed(true)),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "search_notes"}},
            {"type": "function", "function": {"name": "get_time"}}]}})
    );
    assert_eq!(
        names(p, ToolConfig::new(allowed(false))).len(),
        5,
        "allowed_tools keeps the list (prompt cache)"
    );
    let par = fields(p, ToolConfig::default().parallel(false)).unwrap();
    assert_eq!(par["parallel_tool_calls"], false);
    assert!(
        fields(p, ToolConfig::default())
            .unwrap()
            .get("parallel_tool_calls")
            .is_none()
    );
}

#[test]
fn openai_responses_every_choice_form() {
    let p = Provider::OpenAiResponses;
    let f = |c| fields(p, ToolConfig::new(c)).unwrap()["tool_choice"].clone();
    assert_eq!(f(ToolChoice::Required), json!("required"));
    assert_eq!(
        f(named("get_time")),
        json!({"type": "function", "name": "get_time"})
    );
    assert_eq!(
        f(allowed(false)),
        json!({"type": "allowed_tools", "mode": "auto", "tools": [
            {"type": "function", "name": "search_notes"}, {"type": "function", "name": "get_time"}]})
    );
    assert_eq!(
        fields(p, ToolConfig::new(ToolChoice::None).parallel(true)).unwrap()["parallel_tool_calls"],
        true
    );
}

#[test]
fn anthropic_every_choice_form() {
    let p = Provider::Anthropic;
    let f = |c: ToolConfig| fields(p, c).unwrap()["tool_choice"].clone();
    assert_eq!(
        f(ToolConfig::new(ToolChoice::Auto)),
        json!({"type": "auto"})
    );
    assert_eq!(
        f(ToolConfig::new(ToolChoice::None)),
        json!({"type": "none"})
    );
    assert_eq!(
        f(ToolConfig::new(ToolChoice::Required)),
        json!({"type": "any"})
    );
    assert_eq!(
        f(ToolConfig::new(named("get_time")).parallel(false)),
        json!({"type": "tool", "name": "get_time", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        f(ToolConfig::new(ToolChoice::None).parallel(false)),
        json!({"type": "none"})
    );
    assert_eq!(
        names(p, ToolConfig::new(allowed(true))),
        ["search_notes", "get_time"]
    );
    assert_eq!(f(ToolConfig::new(allowed(true))), json!({"type": "any"}));
}

#[test]
fn gemini_every_choice_form() {
    let p = Provider::Gemini;
    let f =
        |c| fields(p, ToolConfig::new(c)).unwrap()["toolConfig"]["functionCallingConfig"].clone();
    assert_eq!(f(ToolChoice::Auto), json!({"mode": "AUTO"}));
    assert_eq!(f(ToolChoice::None), json!({"mode": "NONE"}));
    assert_eq!(f(ToolChoice::Required), json!({"mode": "ANY"}));
    assert_eq!(
        f(named("get_time")),
        json!({"mode": "ANY", "allowedFunctionNames": ["get_time"]})
    );
    assert_eq!(
        f(allowed(true)),
        json!({"mode": "ANY", "allowedFunctionNames": ["search_notes", "get_time"]})
    );
    assert_eq!(
        names(p, ToolConfig::new(allowed(false))),
        ["search_notes", "get_time"]
    );
    assert!(matches!(
        fields(p, ToolConfig::default().parallel(false)),
        Err(CodecError::Unsupported { .. })
    ));
    // VALIDATED: text or calls, calls held to the schema; optionally limited to some tools,
    // which stay declared (allowedFunctionNames applies in this mode)
    assert_eq!(
        f(ToolChoice::Validated { tools: None }),
        json!({"mode": "VALIDATED"})
    );
    let validated_subset = ToolChoice::Validated {
        tools: Some(vec!["get_time".into()]),
    };
    assert_eq!(
        f(validated_subset.clone()),
        json!({"mode": "VALIDATED", "allowedFunctionNames": ["get_time"]})
    );
    assert_eq!(names(p, ToolConfig::new(validated_subset)).len(), 5);
    let unknown = ToolChoice::Validated {
        tools: Some(vec!["nope".into()]),
    };
    assert_eq!(
        fields(p, ToolConfig::new(unknown)).unwrap_err(),
        CodecError::UnknownChoice("nope".into())
    );
}

#[test]
fn only_gemini_has_a_validated_mode() {
    for p in Provider::ALL {
        if p == Provider::Gemini {
            continue;
        }
        let err = fields(p, ToolConfig::new(ToolChoice::Validated { tools: None })).unwrap_err();
        assert!(
            matches!(&err, CodecError::Unsupported { provider, .. } if *provider == p),
            "{p}: {err}"
        );
    }
}

#[test]
fn ollama_and_mcp_refuse_what_they_cannot_enforce() {
    for p in [Provider::Ollama, Provider::Mcp] {
        assert!(
            fields(p, ToolConfig::default())
                .unwrap()
                .as_object()
                .unwrap()
                .is_empty()
        );
        for c in [ToolChoice::Required, named("get_time"), allowed(true)] {
            let err = fields(p, ToolConfig::new(c.clone())).unwrap_err();
            assert!(matches!(err, CodecError::Unsupported { .. }), "{p} {c:?}");
        }
        assert_eq!(
            names(p, ToolConfig::new(allowed(false))),
            ["search_notes", "get_time"]
        );
    }
    assert!(names(Provider::Ollama, ToolConfig::new(ToolChoice::None)).is_empty());
}

#[test]
fn a_choice_naming_an_undeclared_tool_is_refused() {
    for p in Provider::ALL {
        let err = fields(p, ToolConfig::new(named("nope"))).unwrap_err();
        assert!(
            matches!(&err, CodecError::UnknownChoice(n) if n == "nope")
                || matches!(err, CodecError::Unsupported { .. }),
            "{p}"
        );
    }
}

#[test]
fn strict_declarations_and_refusals() {
    let d = defs();
    let chat = Provider::OpenAiChat.codec();
    let search = chat.declare(&d[0]).unwrap();
    assert_eq!(search["function"]["strict"], true);
    assert_eq!(
        search["function"]["parameters"]["required"],
        json!(["query", "limit", "tags"])
    );
    let fetch = chat.declare(&d[3]).unwrap();
    assert_eq!(
        fetch["function"]["strict"], false,
        "not declared strict: sent as is"
    );
    assert_eq!(
        fetch["function"]["parameters"],
        serde_json::from_str::<Value>(d[3].parameters.get()).unwrap()
    );

    let mut open = d[3].clone();
    open.strict = Some(true);
    let err = chat.declare(&open).unwrap_err();
    assert!(
        matches!(&err, CodecError::Schema { tool, pointer, .. } if tool == "fetch_url" && pointer == "/properties/headers/additionalProperties"),
        "{err}"
    );
    // Prefer: strict where possible, the open map stays non-strict
    let prefer = OpenAiChat::with_strict(StrictPolicy::Prefer);
    assert_eq!(prefer.declare(&d[3]).unwrap()["function"]["strict"], false);
    assert_eq!(prefer.declare(&d[2]).unwrap()["function"]["strict"], true);
    assert_eq!(
        prefer.declare(&open).unwrap_err(),
        err,
        "declared strict: never downgraded"
    );
    // the canonical schema is untouched by any view
    assert_eq!(d[0].parameters.get(), defs()[0].parameters.get());
}

#[test]
fn the_cache_gives_the_same_json_builds_once_and_rebuilds_on_change() {
    let d = defs();
    let cache = DeclarationCache::new();
    for p in Provider::ALL {
        let codec = p.codec();
        let fresh = codec
            .encode_tools(&refs(&d), &ToolConfig::default())
            .unwrap();
        let cached = cache
            .encode_tools(codec.as_ref(), &refs(&d), &ToolConfig::default())
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(cached.get()).unwrap(),
            fresh,
            "{p}"
        );
        let text = cache
            .encode_tools_text(codec.as_ref(), &refs(&d), &ToolConfig::default())
            .unwrap();
        assert_eq!(text, cached.get());
    }
    assert_eq!(cache.len(), 5 * 6);
    let chat = Provider::OpenAiChat.codec();
    let first = cache.declaration(chat.as_ref(), &d[1]).unwrap();
    let again = cache.declaration(chat.as_ref(), &d[1]).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "served from the cache"
    );
    let mut changed = d[1].clone();
    changed.description = "Something else".into();
    let rebuilt = cache.declaration(chat.as_ref(), &changed).unwrap();
    assert!(rebuilt.contains("Something else"));
    assert_eq!(cache.len(), 30, "replaced, not added");
    // another strict policy is another view
    let prefer = OpenAiChat::with_strict(StrictPolicy::Prefer);
    cache.declaration(&prefer, &d[1]).unwrap();
    assert_eq!(cache.len(), 31);
}

fn results() -> Vec<ToolResult> {
    let call = |id: &str, name: &str| ToolCall::new(id, name, json!({}));
    vec![
        ToolResult::new(
            &call("c1", "search_notes"),
            ToolOutcome::Success(json!({"hits": 2})),
        ),
        ToolResult::new(
            &call("c2", "delete_file"),
            ToolOutcome::Error(
                ToolError::new(ErrorCode::NOT_FOUND, "no such file")
                    .recover("list the directory first"),
            ),
        ),
        ToolResult::new(
            &call("c3", "delete_file"),
            ToolOutcome::Denied {
                reason: Some("keep it".into()),
            },
        ),
    ]
}

#[test]
fn results_show_code_and_recover_action_and_denials_are_not_errors() {
    let r = results();
    let chat = Provider::OpenAiChat.codec().encode_results(&r);
    assert_eq!(
        chat[0],
        json!({"role": "tool", "tool_call_id": "c1", "content": "{\"hits\":2}"})
    );
    let err: Value = serde_json::from_str(chat[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(err["error"]["code"], "NOT_FOUND");
    assert_eq!(err["error"]["recover_action"], "list the directory first");

    let anthropic = Provider::Anthropic.codec().encode_results(&r);
    assert_eq!(
        anthropic.len(),
        1,
        "one user message with every tool_result"
    );
    let blocks = anthropic[0]["content"].as_array().unwrap();
    assert_eq!(blocks[1]["is_error"], true);
    assert!(
        blocks[2].get("is_error").is_none(),
        "a denial is not an error"
    );
    assert!(blocks[2]["content"].as_str().unwrap().contains("denied"));

    let mcp = Provider::Mcp.codec().encode_results(&r);
    assert_eq!(mcp[0]["structuredContent"], json!({"hits": 2}));
    assert_eq!(mcp[1]["isError"], true);
    assert_eq!(mcp[2]["isError"], false);
    assert!(mcp[2].get("structuredContent").is_none());

    let gemini = Provider::Gemini.codec().encode_results(&r);
    let parts = gemini[0]["parts"].as_array().unwrap();
    assert_eq!(
        parts[0]["functionResponse"]["response"],
        json!({"output": {"hits": 2}})
    );
    assert_eq!(
        parts[1]["functionResponse"]["response"]["error"]["code"],
        "NOT_FOUND"
    );
    assert_eq!(
        parts[2]["functionResponse"]["response"]["output"]["status"],
        "denied"
    );

    let ollama = Provider::Ollama.codec().encode_results(&r);
    assert_eq!(ollama[0]["tool_name"], "search_notes");
    let responses = Provider::OpenAiResponses.codec().encode_results(&r);
    assert_eq!(responses[2]["type"], "function_call_output");
    assert!(
        responses[2]["output"]
            .as_str()
            .unwrap()
            .contains("\"status\":\"denied\"")
    );
}

#[test]
fn decoded_responses_echo_back_in_each_format() {
    for p in Provider::ALL {
        let codec = p.codec();
        let calls = vec![ToolCall::new("id1", "search_notes", r#"{"query":"x"}"#)];
        let echo = codec.encode_assistant("Looking.", &calls);
        let text = serde_json::to_string(&echo).unwrap();
        assert!(text.contains("search_notes"), "{p}: {text}");
        assert!(text.contains("query"), "{p}: {text}");
    }
}
