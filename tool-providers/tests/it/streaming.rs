//! Accumulators yield each call the moment the stream shows it complete, not at the end.

use crate::common;

use serde_json::{Value, json};
use tool_providers::codec::{Provider, StopReason, StreamCapture, ids};

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
        tool_runtime::hydrate::Arguments::Json(json!({})),
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
        tool_runtime::hydrate::Arguments::Json(json!({"location": "San Francisco"}))
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

fn chat_chunk(tool_calls: Value) -> Value {
    json!({"choices": [{"index": 0, "delta": {"tool_calls": tool_calls}, "finish_reason": null}]})
}

fn chat_finish() -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
}

#[test]
fn openai_chat_deltas_without_index_are_placed_by_id_and_order() {
    // an OpenAI-compatible server that leaves `index` out: the id starts a call, deltas
    // without one continue the latest call, a new id starts the next
    let evs = vec![
        chat_chunk(json!([{"id": "c0", "type": "function",
            "function": {"name": "get_weather", "arguments": ""}}])),
        chat_chunk(json!([{"function": {"arguments": "{\"city\":"}}])),
        chat_chunk(json!([{"function": {"arguments": "\"Oslo\"}"}}])),
        chat_chunk(json!([{"id": "c1", "type": "function",
            "function": {"name": "get_time", "arguments": "{}"}}])),
        chat_chunk(json!([{"id": "c1", "function": {"arguments": ""}}])),
        chat_finish(),
    ];
    let (per_event, d) = yields(Provider::OpenAiChat, &evs);
    assert_eq!(
        per_event,
        vec![
            vec![],
            vec![],
            vec![],
            vec!["get_weather".to_owned()],
            vec![],
            vec!["get_time".to_owned()]
        ]
    );
    assert_eq!(
        (d.calls[0].id.as_str(), d.calls[1].id.as_str()),
        ("c0", "c1")
    );
    let set = common::fixture_toolset();
    let weather = tool_providers::codec::hydrate_call(&set, &d.calls[0]).unwrap();
    assert_eq!(weather.arguments()["city"], "Oslo");
    tool_providers::codec::hydrate_call(&set, &d.calls[1]).unwrap();

    // several whole calls in one delta, without index or id: their positions
    let (_, d) = yields(
        Provider::OpenAiChat,
        &[
            chat_chunk(json!([
                {"function": {"name": "get_time", "arguments": "{}"}},
                {"function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}
            ])),
            chat_finish(),
        ],
    );
    let names: Vec<&str> = d.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["get_time", "get_weather"]);
    assert!(d.calls.iter().all(|c| ids::is_generated(&c.id)));
    assert_ne!(d.calls[0].id, d.calls[1].id);
}

#[test]
fn openai_chat_a_name_resent_in_every_delta_is_kept_once() {
    let evs = vec![
        chat_chunk(json!([{"index": 0, "id": "c0", "type": "function",
            "function": {"name": "get_weather", "arguments": ""}}])),
        chat_chunk(
            json!([{"index": 0, "function": {"name": "get_weather", "arguments": "{\"city\":"}}]),
        ),
        chat_chunk(
            json!([{"index": 0, "function": {"name": "get_weather", "arguments": "\"Oslo\"}"}}]),
        ),
        chat_finish(),
    ];
    let (_, d) = yields(Provider::OpenAiChat, &evs);
    assert_eq!(d.calls[0].name, "get_weather");
    tool_providers::codec::hydrate_call(&common::fixture_toolset(), &d.calls[0]).unwrap();
    // a name streamed in pieces is still joined
    let (_, d) = yields(
        Provider::OpenAiChat,
        &[
            chat_chunk(
                json!([{"index": 0, "id": "c0", "function": {"name": "get_", "arguments": ""}}]),
            ),
            chat_chunk(json!([{"index": 0, "function": {"name": "weather", "arguments": "{}"}}])),
            chat_finish(),
        ],
    );
    assert_eq!(d.calls[0].name, "get_weather");
}

#[test]
fn responses_call_without_call_id_gets_a_stable_id_never_the_item_id() {
    let item = json!({"type": "function_call", "id": "fc_1", "name": "get_weather",
        "arguments": "", "status": "in_progress"});
    let evs = vec![
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0,
            "item_id": "fc_1", "delta": "{\"city\":\"Oslo\"}"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 0,
            "item_id": "fc_1", "arguments": "{\"city\":\"Oslo\"}"}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ];
    let (per_event, streamed) = yields(Provider::OpenAiResponses, &evs);
    assert_eq!(per_event[2], vec!["get_weather".to_owned()]);
    let id = streamed.calls[0].id.clone();
    assert!(ids::is_generated(&id), "{id}");

    let codec = Provider::OpenAiResponses.codec();
    let body = json!({"status": "completed", "output": [{"type": "function_call", "id": "fc_1",
        "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}", "status": "completed"}]});
    let decoded = codec.decode_response(&body).unwrap();
    assert_eq!(decoded.calls[0].id, id, "body and stream agree");
    // the echoed item and the result answer the same call_id
    let echo = decoded.assistant.unwrap();
    assert_eq!(echo[0]["call_id"], json!(id));
    assert_eq!(echo[0]["id"], "fc_1", "the item keeps its own id");
    let results = codec.encode_results(&[tool_providers::codec::ToolResult::new(
        &decoded.calls[0],
        tool_providers::codec::ToolOutcome::Success(json!({"temp_c": 3})),
    )]);
    assert_eq!(results[0]["call_id"], json!(id));
    // a call_id that is there is used as it is
    let mut with_id = body.clone();
    with_id["output"][0]["call_id"] = json!("call_7");
    let decoded = codec.decode_response(&with_id).unwrap();
    assert_eq!(decoded.calls[0].id, "call_7");
    assert_eq!(decoded.assistant.unwrap()[0]["call_id"], "call_7");
}
