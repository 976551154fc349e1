//! Responses that do not say what the decoder would like them to: each is refused, decoded with a
//! recorded repair, or given a status that says so, never taken at face value in silence.

use crate::common;

use common::fixture_toolset;
use serde_json::{Value, json};
use tool_providers::codec::{Provider, StopReason, StreamCapture, hydrate_call};
use tool_runtime::hydrate::Repair;

fn decode(provider: Provider, body: Value) -> Result<tool_providers::codec::Decoded, String> {
    provider
        .codec()
        .decode_response(&body)
        .map_err(|e| e.to_string())
}

/// Object formats carry arguments as objects: a string there is decoded once more and the
/// repair is recorded on the instance.
#[test]
fn string_arguments_in_object_formats_are_a_recorded_repair() {
    let text = r#"{"city": "Paris"}"#;
    let bodies = [
        (
            Provider::Anthropic,
            json!({"type": "message", "role": "assistant", "stop_reason": "tool_use",
                   "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": text}]}),
        ),
        (
            Provider::Gemini,
            json!({"candidates": [{"finishReason": "STOP", "content": {"role": "model",
                   "parts": [{"functionCall": {"name": "get_weather", "args": text}}]}}]}),
        ),
        (
            Provider::Ollama,
            json!({"done": true, "message": {"role": "assistant", "content": "",
                   "tool_calls": [{"function": {"name": "get_weather", "arguments": text}}]}}),
        ),
    ];
    for (provider, body) in bodies {
        let d = decode(provider, body).unwrap();
        let instance = hydrate_call(&fixture_toolset(), &d.calls[0])
            .unwrap_or_else(|e| panic!("{provider:?}: {e:?}"));
        assert_eq!(
            instance.repairs(),
            [Repair::DoubleEncoded],
            "{provider:?}: the string is a repair, not the format"
        );
        assert_eq!(instance.arguments()["city"], "Paris");
    }
    // OpenAI's arguments are text by the format: no repair
    let d = decode(
        Provider::OpenAiChat,
        json!({"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant",
               "tool_calls": [{"id": "c1", "type": "function",
                               "function": {"name": "get_weather", "arguments": text}}]}}]}),
    )
    .unwrap();
    let instance = hydrate_call(&fixture_toolset(), &d.calls[0]).unwrap();
    assert!(instance.repairs().is_empty());
}

#[test]
fn openai_chat_refuses_several_choices_and_calls_that_are_not_functions() {
    let call = json!({"id": "c1", "type": "function",
                      "function": {"name": "get_weather", "arguments": "{}"}});
    let choice = json!({"finish_reason": "tool_calls",
                        "message": {"role": "assistant", "tool_calls": [call]}});
    let e = decode(Provider::OpenAiChat, json!({"choices": [choice, choice]})).unwrap_err();
    assert!(e.contains("2 choices"), "{e}");

    let custom = json!({"choices": [{"finish_reason": "tool_calls", "message": {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "get_weather", "input": "x"},
                        "function": {"name": "get_weather", "arguments": "{}"}}]}}]});
    let e = decode(Provider::OpenAiChat, custom).unwrap_err();
    assert!(
        e.contains("/choices/0/message/tool_calls/0/type") && e.contains("custom"),
        "{e}"
    );
    assert!(decode(Provider::OpenAiChat, json!({"choices": [choice]})).is_ok());
}

#[test]
fn an_incomplete_responses_function_call_is_not_run() {
    let body = |status: &str| {
        json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
               "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1",
                           "name": "get_weather", "arguments": "{\"city\": \"Pa", "status": status}]})
    };
    let e = decode(Provider::OpenAiResponses, body("incomplete")).unwrap_err();
    assert!(
        e.contains("/output/0/status") && e.contains("incomplete"),
        "{e}"
    );
    let e = decode(Provider::OpenAiResponses, body("in_progress")).unwrap_err();
    assert!(e.contains("in_progress"), "{e}");
    assert!(decode(Provider::OpenAiResponses, body("completed")).is_ok());
}

/// A stream that ends before its stop event decodes with an unknown stop, whatever calls it
/// held: the agent then asks again instead of running them.
#[test]
fn a_stream_without_its_stop_event_has_an_unknown_stop() {
    let cut = [
        (
            Provider::Ollama,
            "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}}]},\"done\":false}\n",
        ),
        (
            Provider::Gemini,
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}]}}]}\n\n",
        ),
        (
            Provider::OpenAiChat,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]}}]}\n\n",
        ),
    ];
    for (provider, capture) in cut {
        let (d, streamed) =
            StreamCapture::decode_text(provider, capture, provider.codec().as_ref()).unwrap();
        assert!(streamed);
        assert_eq!(d.calls.len(), 1, "{provider:?}: what it held is kept");
        assert_eq!(d.stop, StopReason::Unknown, "{provider:?}");
    }
    // the same Ollama stream with its closing line is whole
    let whole = format!(
        "{}{}",
        cut[0].1, "{\"done\":true,\"done_reason\":\"stop\"}\n"
    );
    let (d, _) =
        StreamCapture::decode_text(Provider::Ollama, &whole, Provider::Ollama.codec().as_ref())
            .unwrap();
    assert_eq!(d.stop, StopReason::ToolCalls);
}

/// The strict-mode `null`s of optional properties are stripped from clean arguments only:
/// arguments that parse only once repaired keep their recorded repair, and are never accepted as
/// if the model had sent clean JSON.
#[test]
fn stripping_strict_nulls_never_hides_a_repair() {
    let set = fixture_toolset();
    let call = |args: &str| tool_runtime::ToolCall::new("c1", "get_weather", args);
    let clean = hydrate_call(&set, &call(r#"{"city": "Paris", "unit": null}"#)).unwrap();
    assert!(clean.repairs().is_empty());
    assert_eq!(clean.arguments()["city"], "Paris");
    for args in [
        r#"{"city": "Paris", "unit": null,}"#,
        "```json\n{\"city\": \"Paris\", \"unit\": null}\n```",
    ] {
        match hydrate_call(&set, &call(args)) {
            Ok(instance) => assert!(!instance.repairs().is_empty(), "{args}"),
            Err(err) => assert_eq!(
                err.code,
                tool_runtime::ErrorCode::INVALID_ARGUMENTS,
                "{args}"
            ),
        }
    }
}
