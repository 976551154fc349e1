//! The wire README's response examples, decoded and hydrated (tests/fixtures/README.md).

use crate::common;

use common::{WeatherArgs, fixture, fixture_toolset};
use serde_json::json;
use tool_providers::codec::{Provider, StopReason, StreamCapture, hydrate_call, ids};
use tool_runtime::hydrate::{Arguments, Repair};

fn decode(provider: Provider, file: &str) -> tool_providers::codec::Decoded {
    StreamCapture::parse(provider, &fixture(file))
        .unwrap()
        .decode(provider.codec().as_ref())
        .unwrap()
}

#[test]
fn openai_chat_response_hydrates_into_typed_arguments() {
    let d = decode(Provider::OpenAiChat, "openai_chat_response.json");
    assert_eq!(d.stop, StopReason::ToolCalls);
    assert_eq!(d.calls.len(), 1);
    assert_eq!(d.calls[0].id, "call_abc");
    assert_eq!(
        d.calls[0].arguments,
        Arguments::Text(r#"{"city":"Paris","unit":null}"#.into())
    );
    let instance = hydrate_call(&fixture_toolset(), &d.calls[0]).unwrap();
    assert_eq!(
        instance.args::<WeatherArgs>(),
        Some(&WeatherArgs {
            city: "Paris".into(),
            unit: None
        }),
        "the strict-mode null for the optional unit means absent"
    );
}

#[test]
fn strict_nulls_for_optional_properties_are_absent_not_invalid() {
    // a dynamic tool: the canonical schema alone decides
    let set = fixture_toolset();
    let call = tool_runtime::ToolCall::new("x", "calculator", r#"{"a": 1, "b": 2, "op": "add"}"#);
    hydrate_call(&set, &call).unwrap();
    let mut set = tool_runtime::ToolSet::new();
    set.register_dynamic(
        tool_runtime::definition::ToolDefinition::new(
            "search",
            "s",
            &json!({"type": "object", "properties": {"q": {"type": "string"},
                "limit": {"type": "integer"}}, "required": ["q"]}),
        ),
        None,
    )
    .unwrap();
    let call = tool_runtime::ToolCall::new("x", "search", r#"{"q": "rust", "limit": null}"#);
    assert!(
        set.hydrate(&call).is_err(),
        "the canonical schema refuses null"
    );
    let i = hydrate_call(&set, &call).unwrap();
    assert_eq!(i.arguments(), &json!({"q": "rust"}));
    // a null for a required property is still an error the model must fix
    let call = tool_runtime::ToolCall::new("x", "search", r#"{"q": null}"#);
    assert_eq!(
        hydrate_call(&set, &call).unwrap_err().violations[0].pointer,
        "/q"
    );
}

#[test]
fn openai_chat_stream_accumulates_fragments() {
    let d = decode(Provider::OpenAiChat, "openai_chat_stream.sse");
    assert_eq!(d.stop, StopReason::ToolCalls);
    assert_eq!(d.calls.len(), 1);
    assert_eq!(d.calls[0].id, "call_O17U…");
    assert_eq!(d.calls[0].name, "test-tool");
    let i = hydrate_call(&fixture_toolset(), &d.calls[0]).unwrap();
    assert_eq!(i.arguments(), &json!({"value": "Sparkle Day"}));
}

#[test]
fn openai_responses_body_and_stream_agree() {
    let body = decode(Provider::OpenAiResponses, "openai_responses_response.json");
    let stream = decode(Provider::OpenAiResponses, "openai_responses_stream.ndjson");
    assert_eq!(body.calls, stream.calls);
    assert_eq!(body.calls[0].id, "call_AB6A…", "call_id, not the item id");
    let i = hydrate_call(&fixture_toolset(), &body.calls[0]).unwrap();
    assert_eq!(i.arguments(), &json!({"a": 12, "b": 7, "op": "add"}));
}

#[test]
fn anthropic_parallel_calls_after_text() {
    let d = decode(Provider::Anthropic, "anthropic_response.json");
    assert_eq!(d.text, "Checking both.");
    assert_eq!(d.stop, StopReason::ToolCalls);
    let set = fixture_toolset();
    let cities: Vec<String> = d
        .calls
        .iter()
        .map(|c| {
            hydrate_call(&set, c)
                .unwrap()
                .args::<WeatherArgs>()
                .unwrap()
                .city
                .clone()
        })
        .collect();
    assert_eq!(cities, ["Paris", "Oslo"]);
    assert_eq!(d.calls[1].id, "toolu_01B");
}

#[test]
fn anthropic_stream_concatenates_input_json_deltas() {
    let d = decode(Provider::Anthropic, "anthropic_stream.ndjson");
    assert_eq!(d.stop, StopReason::ToolCalls);
    let i = hydrate_call(&fixture_toolset(), &d.calls[0]).unwrap();
    assert_eq!(i.arguments()["elements"][0]["temperature"], 58);
}

#[test]
fn ollama_response_and_stream_without_ids() {
    let d = decode(Provider::Ollama, "ollama_response.json");
    assert_eq!(d.calls[0].id, "call_k3v9x0ab");
    assert_eq!(
        d.stop,
        StopReason::ToolCalls,
        "detected by the array, not done_reason"
    );
    hydrate_call(&fixture_toolset(), &d.calls[0]).unwrap();

    let s = decode(Provider::Ollama, "ollama_stream.ndjson");
    assert_eq!(s.calls.len(), 1);
    assert!(ids::is_generated(&s.calls[0].id), "old servers send no id");
    let again = decode(Provider::Ollama, "ollama_stream.ndjson");
    assert_eq!(s.calls[0].id, again.calls[0].id, "generated ids are stable");
    let i = hydrate_call(&fixture_toolset(), &s.calls[0]).unwrap();
    assert_eq!(i.args::<WeatherArgs>().unwrap().city, "Tokyo");
}

#[test]
fn gemini_whole_and_partial_argument_streams() {
    let d = decode(Provider::Gemini, "gemini_stream.ndjson");
    assert_eq!(d.calls.len(), 1);
    assert!(ids::is_generated(&d.calls[0].id));
    assert_eq!(d.stop, StopReason::ToolCalls);
    hydrate_call(&fixture_toolset(), &d.calls[0]).unwrap();

    let p = decode(Provider::Gemini, "gemini_partial_args.ndjson");
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.calls[0].name, "getWeather");
    let i = hydrate_call(&fixture_toolset(), &p.calls[0]).unwrap();
    assert_eq!(i.arguments(), &json!({"location": "San Francisco"}));
}

#[test]
fn mcp_tools_call_request() {
    let d = decode(Provider::Mcp, "mcp_tools_call.json");
    assert_eq!(d.calls[0].id, "2", "the JSON-RPC id");
    let i = hydrate_call(&fixture_toolset(), &d.calls[0]).unwrap();
    assert_eq!(i.arguments(), &json!({"path": "/tmp/x"}));
}

#[test]
fn quirks_empty_string_object_arguments_and_invalid_calls() {
    let set = fixture_toolset();
    let codec = Provider::OpenAiChat.codec();
    let body = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
    "role": "assistant", "content": "Let me look.",
    "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_time", "arguments": ""}},
        {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}},
        {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": 3}"}},
        {"id": "d", "type": "function", "function": {"name": "get_wether", "arguments": "{}"}},
        {"id": "e", "type": "function", "function": {"name": "calculator", "arguments": "{\"a\": 1,"}}
    ]}}]});
    let d = codec.decode_response(&body).unwrap();
    assert_eq!(d.text, "Let me look.");
    let results = d.hydrate(&set);
    let time = results[0].as_ref().unwrap();
    assert_eq!(time.arguments(), &json!({}));
    assert_eq!(time.repairs(), &[Repair::EmptyAsObject]);
    assert_eq!(
        results[1]
            .as_ref()
            .unwrap()
            .args::<WeatherArgs>()
            .unwrap()
            .city,
        "Rome"
    );
    let wrong_type = results[2].as_ref().unwrap_err();
    assert_eq!(wrong_type.code.as_str(), "INVALID_ARGUMENTS");
    assert_eq!(wrong_type.violations[0].pointer, "/city");
    let unknown = results[3].as_ref().unwrap_err();
    assert_eq!(unknown.code.as_str(), "UNKNOWN_TOOL");
    assert!(
        unknown
            .recover_action
            .as_deref()
            .unwrap()
            .contains("get_weather")
    );
    assert_eq!(
        results[4].as_ref().unwrap_err().code.as_str(),
        "INVALID_JSON"
    );
}

#[test]
fn malformed_bodies_are_structured_errors_with_a_pointer() {
    for (provider, body, pointer) in [
        (Provider::OpenAiChat, json!({"choices": []}), "/choices"),
        (
            Provider::OpenAiChat,
            json!({"choices": [{"message": {"tool_calls": [{"id": "x", "function": {}}]}}]}),
            "/choices/0/message/tool_calls/0/function/name",
        ),
        (Provider::OpenAiResponses, json!({"id": "r"}), "/output"),
        (Provider::Anthropic, json!({"type": "message"}), "/content"),
        (Provider::Ollama, json!({"done": true}), "/message"),
        (
            Provider::Gemini,
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}),
            "/candidates/0/content/parts/0/functionCall/name",
        ),
        (Provider::Mcp, json!({"method": "tools/list"}), "/method"),
    ] {
        let err = provider.codec().decode_response(&body).unwrap_err();
        let tool_err = tool_runtime::ToolError::from(err.clone());
        assert_eq!(tool_err.code.as_str(), "MALFORMED_RESPONSE", "{provider}");
        assert_eq!(tool_err.details["pointer"], pointer, "{provider}: {err}");
    }
}

#[test]
fn missing_ids_are_generated_stably_per_position() {
    let body = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "weather", "args": {"location": "A"}}},
        {"functionCall": {"name": "weather", "args": {"location": "A"}}},
        {"functionCall": {"id": "given", "name": "weather", "args": {"location": "B"}}}
    ]}, "finishReason": "STOP"}]});
    let codec = Provider::Gemini.codec();
    let a = codec.decode_response(&body).unwrap();
    let b = codec.decode_response(&body).unwrap();
    assert_eq!(a.calls, b.calls);
    assert_ne!(
        a.calls[0].id, a.calls[1].id,
        "same call at another position"
    );
    assert_eq!(a.calls[2].id, "given");
    assert_eq!(a.stop, StopReason::ToolCalls);
}

/// `create_event` with an optional nested struct whose fields have defaults, as schemars derives
/// `when: Option<When>`: the struct sits behind a `$ref` inside an `anyOf` with `null`.
mod event {
    use std::sync::OnceLock;

    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};
    use tool_runtime::{CallContext, Tool, ToolError, definition::ToolDefinition};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct When {
        pub start: String,
        #[serde(default)]
        pub end: String,
        #[serde(default)]
        pub all_day: bool,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct EventArgs {
        pub title: String,
        #[serde(default)]
        pub when: Option<When>,
    }

    pub struct CreateEvent;

    impl Tool for CreateEvent {
        type Args = EventArgs;
        type Output = Value;

        fn definition() -> &'static ToolDefinition {
            static DEF: OnceLock<ToolDefinition> = OnceLock::new();
            DEF.get_or_init(|| {
                ToolDefinition::new(
                    "create_event",
                    "Add an event",
                    &json!({
                        "type": "object",
                        "properties": {
                            "title": {"type": "string"},
                            "when": {"anyOf": [{"$ref": "#/$defs/When"}, {"type": "null"}]}
                        },
                        "required": ["title"],
                        "$defs": {"When": {"type": "object", "properties": {
                            "start": {"type": "string"},
                            "end": {"type": "string", "default": ""},
                            "all_day": {"type": "boolean", "default": false}},
                            "required": ["start"]}}
                    }),
                )
            })
        }

        async fn call(args: EventArgs, _cx: &CallContext) -> Result<Value, ToolError> {
            Ok(json!({"title": args.title}))
        }
    }
}

#[test]
fn strict_nulls_inside_an_optional_nested_struct_hydrate() {
    use event::{CreateEvent, EventArgs, When};
    use tool_providers::codec::openai_chat::{OpenAiChat, StrictPolicy};
    use tool_providers::codec::{Codec, Provider};
    use tool_runtime::Tool;

    // what a strict model is told: every field of `When` required, the defaulted ones nullable
    let decl = OpenAiChat::with_strict(StrictPolicy::Prefer)
        .declare(CreateEvent::definition())
        .unwrap();
    let when = &decl["function"]["parameters"]["$defs"]["When"];
    assert_eq!(decl["function"]["strict"], true);
    assert_eq!(when["required"], json!(["start", "end", "all_day"]));
    assert_eq!(
        when["properties"]["end"],
        json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
    );

    // and what it then sends
    let body = json!({"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant",
        "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "create_event",
            "arguments": "{\"title\":\"Standup\",\"when\":{\"start\":\"09:00\",\"end\":null,\"all_day\":null}}"}}]}}]});
    let decoded = Provider::OpenAiChat.codec().decode_response(&body).unwrap();
    let mut set = tool_runtime::ToolSet::new();
    set.register::<CreateEvent>().unwrap();
    assert!(
        set.hydrate(&decoded.calls[0]).is_err(),
        "the canonical schema refuses the nulls"
    );
    let hydrated = decoded.hydrate(&set);
    let instance = hydrated[0].as_ref().unwrap();
    assert_eq!(
        instance.args::<EventArgs>(),
        Some(&EventArgs {
            title: "Standup".into(),
            when: Some(When {
                start: "09:00".into(),
                end: String::new(),
                all_day: false
            })
        }),
        "the nulls mean absent: the defaults apply"
    );
}
