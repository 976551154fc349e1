//! Accumulators yield each call the moment the stream shows it complete, not at the end.

mod common;

use serde_json::{Value, json};
use tool_providers::codec::{Provider, StopReason, StreamCapture};

/// Feeds the events one by one; returns, per event, the names of the calls it completed.
fn yields(
    provider: Provider,
    events: &[Value],
) -> (Vec<Vec<String>>, tool_providers::codec::Decoded) {
    let mut acc = provider.codec().accumulator();
    let per_event = events
        .iter()
        .map(|e| acc.push(e).unwrap().into_iter().map(|c| c.name).collect())
        .collect();
    (per_event, acc.finish().unwrap())
}

fn events(provider: Provider, file: &str) -> Vec<Value> {
    match StreamCapture::parse(provider, &common::fixture(file)).unwrap() {
        StreamCapture::Events(e) => e,
        StreamCapture::Body(b) => vec![b],
    }
}

#[test]
fn openai_chat_parallel_calls_complete_when_the_next_index_starts() {
    let chunk = |tc: Value| json!({"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": null}]});
    let evs = vec![
        json!({"choices": [{"index": 0, "delta": {"content": "Both: "}, "finish_reason": null}]}),
        chunk(
            json!({"index": 0, "id": "c0", "type": "function", "function": {"name": "a", "arguments": ""}}),
        ),
        chunk(json!({"index": 0, "function": {"arguments": "{\"x\":"}})),
        chunk(json!({"index": 0, "function": {"arguments": "1}"}})),
        chunk(
            json!({"index": 1, "id": "c1", "type": "function", "function": {"name": "b", "arguments": "{}"}}),
        ),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let (per_event, d) = yields(Provider::OpenAiChat, &evs);
    assert_eq!(
        per_event,
        vec![
            vec![],
            vec![],
            vec![],
            vec![],
            vec!["a".to_owned()],
            vec!["b".to_owned()]
        ]
    );
    assert_eq!(d.text, "Both: ");
    assert_eq!(d.calls.len(), 2);
    assert_eq!(d.calls[0].id, "c0");
    assert_eq!(d.stop, StopReason::ToolCalls);
}

#[test]
fn openai_chat_recorded_stream_yields_at_finish_reason() {
    let evs = events(Provider::OpenAiChat, "openai_chat_stream.sse");
    let (per_event, _) = yields(Provider::OpenAiChat, &evs);
    let at = per_event.iter().position(|v| !v.is_empty()).unwrap();
    assert_eq!(evs[at]["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn responses_yields_at_arguments_done_and_not_again_at_item_done() {
    let evs = events(Provider::OpenAiResponses, "openai_responses_stream.ndjson");
    let (per_event, d) = yields(Provider::OpenAiResponses, &evs);
    let at: Vec<usize> = (0..per_event.len())
        .filter(|&i| !per_event[i].is_empty())
        .collect();
    assert_eq!(at.len(), 1, "yielded exactly once");
    assert_eq!(evs[at[0]]["type"], "response.function_call_arguments.done");
    assert_eq!(d.calls.len(), 1);
}

#[test]
fn anthropic_yields_each_block_at_its_stop() {
    let evs = vec![
        json!({"type": "message_start", "message": {"content": []}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Checking."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "a", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"x\": 1}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "t2", "name": "noargs", "input": {}}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
    ];
    let (per_event, d) = yields(Provider::Anthropic, &evs);
    assert_eq!(per_event[6], vec!["a".to_owned()]);
    assert_eq!(per_event[8], vec!["noargs".to_owned()]);
    assert_eq!(per_event.iter().filter(|v| !v.is_empty()).count(), 2);
    assert_eq!(d.text, "Checking.");
    assert_eq!(
        d.calls[1].arguments,
        tool_runtime::Arguments::Json(json!({})),
        "no fragments: no arguments"
    );
    assert_eq!(d.stop, StopReason::ToolCalls);
}

#[test]
fn ollama_and_gemini_yield_in_the_chunk_that_carries_the_call() {
    let (per_event, _) = yields(
        Provider::Ollama,
        &events(Provider::Ollama, "ollama_stream.ndjson"),
    );
    assert_eq!(per_event[0], vec!["get_weather".to_owned()]);
    let (per_event, _) = yields(
        Provider::Gemini,
        &events(Provider::Gemini, "gemini_stream.ndjson"),
    );
    assert_eq!(per_event[0], vec!["weather".to_owned()]);
    let evs = events(Provider::Gemini, "gemini_partial_args.ndjson");
    let (per_event, d) = yields(Provider::Gemini, &evs);
    assert_eq!(
        per_event,
        vec![vec![], vec![], vec![], vec!["getWeather".to_owned()]]
    );
    assert_eq!(
        d.calls[0].arguments,
        tool_runtime::Arguments::Json(json!({"location": "San Francisco"}))
    );
}

#[test]
fn a_stream_cut_short_still_returns_open_calls_for_hydration_to_judge() {
    let evs = vec![json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c0", "function": {"name": "get_weather", "arguments": "{\"city\": \"Pa"}}]}}]})];
    let (per_event, d) = yields(Provider::OpenAiChat, &evs);
    assert!(per_event[0].is_empty());
    assert_eq!(d.stop, StopReason::Unknown);
    let err = common::fixture_toolset().hydrate(&d.calls[0]).unwrap_err();
    assert_eq!(err.code.as_str(), "INVALID_JSON");
}

#[test]
fn stream_errors_are_reported() {
    let mut acc = Provider::Anthropic.codec().accumulator();
    let err = acc
        .push(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
        .unwrap_err();
    assert!(err.to_string().contains("Overloaded"));
    let mut acc = Provider::OpenAiResponses.codec().accumulator();
    let err = acc
        .push(&json!({"type": "response.function_call_arguments.delta", "item_id": "nope", "delta": "{"}))
        .unwrap_err();
    assert!(err.to_string().contains("nope"));
}

#[test]
fn gemini_streams_keep_thought_signatures_for_the_echo() {
    let evs = events(Provider::Gemini, "gemini_stream.ndjson");
    let (_, d) = yields(Provider::Gemini, &evs);
    assert_eq!(
        d.assistant,
        Some(
            json!({"role": "model", "parts": [{"functionCall": {"name": "weather",
            "args": {"location": "San Francisco"}}, "thoughtSignature": "EqUCCqIC…"}]})
        )
    );
}
