//! The agent loop over real HTTP for every wire format, not only OpenAI Chat: OpenAI Responses,
//! Anthropic Messages, Ollama (streamed as NDJSON) and Gemini, each with one tool round and then
//! the final answer, against a scripted server speaking that format. Checked: the endpoint, the
//! declarations, the echo of the assistant turn, the results in the provider's shape, usage. And
//! a run whose HTTP retries run out keeps its partial report and can be resumed.

#![allow(clippy::result_large_err)] // tool bodies return `ToolError` by design

use crate::mock;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_providers::agent::{
    Agent, AgentConfig, AgentError, AgentEvent, ChatModel, RunStatus, TranscriptEntry,
};
use tool_providers::http::{ClientConfig, HttpClient, HttpErrorKind, Provider, RetryPolicy};
use tool_runtime::executor::{Executor, Status};
use tool_runtime::{ToolSet, tool};

use mock::{Mock, Reply, serve};

/// Current weather for a city.
#[tool(read_only)]
fn get_weather(city: String) -> Value {
    json!({"city": city, "temp_c": 15})
}

fn agent(p: Provider, server: &Mock, base_path: &str, stream: bool) -> Agent {
    let cfg = ClientConfig::new(p, "scripted")
        .with_base_url(format!("{}{base_path}", server.url))
        .with_api_key("k-test")
        .with_retry(RetryPolicy::none());
    let model = ChatModel::new(HttpClient::new(cfg).unwrap()).streaming(stream);
    let mut ts = ToolSet::new();
    ts.register::<get_weather>().unwrap();
    let executor = Executor::builder(ts).build().unwrap();
    Agent::new(
        model,
        executor,
        AgentConfig {
            system: Some("Answer briefly.".into()),
            ..Default::default()
        },
    )
}

fn tool_statuses(transcript: &[TranscriptEntry]) -> Vec<Status> {
    transcript
        .iter()
        .filter_map(|e| match e {
            TranscriptEntry::Tool { status, .. } => Some(*status),
            _ => None,
        })
        .collect()
}

const RESULT: &str = r#"{"city":"Paris","temp_c":15}"#;

#[tokio::test]
async fn openai_responses_one_tool_round_then_the_answer() {
    let server = serve(vec![
        Reply::Json(json!({"id":"resp_1","status":"completed","output":[
            {"type":"reasoning","id":"rs_1","summary":[]},
            {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather",
             "arguments":"{\"city\":\"Paris\"}","status":"completed"}],
            "usage":{"input_tokens":50,"output_tokens":10,"input_tokens_details":{"cached_tokens":20}}})),
        Reply::Json(json!({"id":"resp_2","status":"completed","output":[
            {"type":"message","id":"msg_1","role":"assistant",
             "content":[{"type":"output_text","text":"It is 15 °C in Paris."}]}],
            "usage":{"input_tokens":80,"output_tokens":12}})),
    ])
    .await;
    let a = agent(Provider::OpenAiResponses, &server, "/v1", false);
    let report = a.run("Weather in Paris?").await.unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    assert_eq!(report.answer.as_deref(), Some("It is 15 °C in Paris."));
    assert_eq!(tool_statuses(&report.transcript), [Status::Success]);
    assert_eq!(
        (
            report.usage.input_tokens,
            report.usage.output_tokens,
            report.usage.cached_input_tokens
        ),
        (130, 22, 20)
    );

    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.path == "/v1/responses"));
    assert_eq!(seen[0].headers["authorization"], "Bearer k-test");
    let first = &seen[0].body;
    assert_eq!(first["instructions"], "Answer briefly.");
    assert_eq!(first["model"], "scripted");
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["name"], "get_weather");
    assert_eq!(
        first["input"],
        json!([{"role":"user","content":"Weather in Paris?"}])
    );
    // The output items are echoed verbatim (reasoning included), then the call's output.
    let input = seen[1].body["input"].as_array().unwrap().clone();
    assert_eq!(input.len(), 4);
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[2]["call_id"], "call_1");
    assert_eq!(
        input[3],
        json!({"type":"function_call_output","call_id":"call_1","output":RESULT})
    );
}

#[tokio::test]
async fn anthropic_messages_one_tool_round_then_the_answer_with_cache_usage() {
    let server = serve(vec![
        Reply::Json(json!({"id":"msg_1","type":"message","role":"assistant","stop_reason":"tool_use",
            "content":[{"type":"text","text":"Checking."},
                       {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],
            "usage":{"input_tokens":40,"output_tokens":20,"cache_creation_input_tokens":100,
                     "cache_read_input_tokens":0}})),
        Reply::Json(json!({"id":"msg_2","type":"message","role":"assistant","stop_reason":"end_turn",
            "content":[{"type":"text","text":"15 °C."}],
            "usage":{"input_tokens":60,"output_tokens":5,"cache_read_input_tokens":100}})),
    ])
    .await;
    let a = agent(Provider::Anthropic, &server, "/v1", false);
    let report = a.run("Weather in Paris?").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("15 °C."));
    assert_eq!(tool_statuses(&report.transcript), [Status::Success]);
    // Cache writes and reads are part of the prompt, and counted apart too.
    assert_eq!(report.usage.input_tokens, 40 + 100 + 60 + 100);
    assert_eq!(report.usage.cache_creation_input_tokens, 100);
    assert_eq!(report.usage.cached_input_tokens, 100);
    assert_eq!(report.usage.output_tokens, 25);
    assert_eq!(report.call_costs[0].usage.cache_creation_input_tokens, 100);

    let seen = server.requests();
    assert!(seen.iter().all(|s| s.path == "/v1/messages"));
    assert_eq!(seen[0].headers["x-api-key"], "k-test");
    assert_eq!(seen[0].headers["anthropic-version"], "2023-06-01");
    let first = &seen[0].body;
    assert_eq!(first["system"], "Answer briefly.");
    assert!(first["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(first["tools"][0]["name"], "get_weather");
    assert!(first["tools"][0]["input_schema"].is_object());
    let messages = seen[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[1]["content"][1]["id"], "toolu_1");
    assert_eq!(messages[2]["role"], "user");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(result["content"], RESULT);
    assert!(result.get("is_error").is_none());
}

#[tokio::test]
async fn ollama_streamed_as_ndjson_one_tool_round_then_the_answer() {
    let server = serve(vec![
        Reply::ndjson(&[
            json!({"model":"scripted","message":{"role":"assistant","content":"",
                "tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":false}),
            json!({"model":"scripted","message":{"role":"assistant","content":""},"done":true,
                "done_reason":"stop","prompt_eval_count":30,"eval_count":7}),
        ]),
        Reply::ndjson(&[
            json!({"model":"scripted","message":{"role":"assistant","content":"15 "},"done":false}),
            json!({"model":"scripted","message":{"role":"assistant","content":"degrees."},"done":true,
                "done_reason":"stop","prompt_eval_count":45,"eval_count":4}),
        ]),
    ])
    .await;
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let sink = deltas.clone();
    let a = agent(Provider::Ollama, &server, "", true).on_event(Arc::new(move |e: &AgentEvent| {
        if let AgentEvent::TextDelta { text } = e {
            sink.lock().unwrap().push(text.clone());
        }
    }));
    let report = a.run("Weather in Paris?").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("15 degrees."));
    assert_eq!(*deltas.lock().unwrap(), ["15 ", "degrees."]);
    assert_eq!(tool_statuses(&report.transcript), [Status::Success]);
    assert_eq!(
        (report.usage.input_tokens, report.usage.output_tokens),
        (75, 11)
    );

    let seen = server.requests();
    assert!(seen.iter().all(|s| s.path == "/api/chat"));
    let first = &seen[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(first["tools"][0]["function"]["name"], "get_weather");
    let messages = seen[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        json!({"city":"Paris"})
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_name"], "get_weather");
    assert_eq!(messages[3]["content"], RESULT);
    // Ollama sent no call id, so none is invented on the way back.
    assert!(messages[3].get("tool_call_id").is_none());
}

#[tokio::test]
async fn gemini_one_tool_round_then_the_answer_keeping_the_thought_signature() {
    let server = serve(vec![
        Reply::Json(json!({"candidates":[{"content":{"role":"model","parts":[
            {"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"sig-abc"}]},
            "finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":33,"candidatesTokenCount":8}})),
        Reply::Json(json!({"candidates":[{"content":{"role":"model","parts":[{"text":"15 °C in Paris."}]},
            "finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":6}})),
    ])
    .await;
    let a = agent(Provider::Gemini, &server, "/v1beta", false);
    let report = a.run("Weather in Paris?").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("15 °C in Paris."));
    assert_eq!(tool_statuses(&report.transcript), [Status::Success]);
    assert_eq!(
        (report.usage.input_tokens, report.usage.output_tokens),
        (83, 14)
    );

    let seen = server.requests();
    assert!(
        seen.iter()
            .all(|s| s.path == "/v1beta/models/scripted:generateContent")
    );
    assert_eq!(seen[0].headers["x-goog-api-key"], "k-test");
    let first = &seen[0].body;
    assert!(first.get("model").is_none(), "the model is in the URL");
    assert_eq!(
        first["systemInstruction"],
        json!({"parts":[{"text":"Answer briefly."}]})
    );
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["name"],
        "get_weather"
    );
    let contents = seen[1].body["contents"].as_array().unwrap().clone();
    assert_eq!(contents.len(), 3);
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], "sig-abc");
    let response = &contents[2]["parts"][0]["functionResponse"];
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(response["name"], "get_weather");
    assert_eq!(
        response["response"]["output"],
        json!({"city":"Paris","temp_c":15})
    );
}

#[tokio::test]
async fn when_http_retries_run_out_the_error_keeps_the_partial_report_and_the_run_resumes() {
    let unavailable = json!({"error":{"message":"upstream overloaded","type":"server_error"}});
    let server = serve(vec![
        Reply::Json(
            json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",
            "content":null,"tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}],
            "usage":{"prompt_tokens":40,"completion_tokens":9}}),
        ),
        Reply::Status(503, unavailable.clone()),
        Reply::Status(503, unavailable),
        Reply::Json(json!({"choices":[{"index":0,"finish_reason":"stop",
            "message":{"role":"assistant","content":"15 °C in Paris."}}],
            "usage":{"prompt_tokens":70,"completion_tokens":6}})),
    ])
    .await;
    let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
        .with_base_url(format!("{}/v1", server.url))
        .with_retry(RetryPolicy {
            max_retries: 1,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(1),
        });
    let mut ts = ToolSet::new();
    ts.register::<get_weather>().unwrap();
    let a = Agent::new(
        ChatModel::new(HttpClient::new(cfg).unwrap()),
        Executor::builder(ts).build().unwrap(),
        AgentConfig::default(),
    );

    let err = a.run("Weather in Paris?").await.unwrap_err();
    let AgentError::Http(http) = err.cause() else {
        panic!("expected an HTTP failure, got {err:?}");
    };
    assert_eq!(http.kind, HttpErrorKind::Status(503));
    assert_eq!(http.attempts, 2, "one retry, then it gave up");
    assert!(err.to_string().contains("upstream overloaded"), "{err}");
    assert!(err.to_string().contains("after 1 model requests"), "{err}");

    // What happened so far is kept: the tool round, its audit record, the tokens.
    let partial = err.partial().expect("a partial report");
    assert_eq!(partial.state.iterations, 1);
    assert_eq!(tool_statuses(&partial.state.transcript), [Status::Success]);
    assert_eq!(partial.audit.len(), 1);
    assert_eq!(partial.audit[0].tool, "get_weather");
    assert_eq!(partial.state.usage.input_tokens, 40);
    assert_eq!(partial.state.conversation.len(), 3, "user, assistant, tool");

    // Resuming sends the failed request again, and the run finishes.
    let state = tool_providers::agent::RunState::from_json(&partial.state.to_json()).unwrap();
    let report = a.resume(state).await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("15 °C in Paris."));
    assert_eq!(report.iterations, 2);
    assert_eq!(report.usage.input_tokens, 110);
    assert_eq!(report.audit.len(), 1, "the tool did not run again");
    let seen = server.requests();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[3].body["messages"], seen[1].body["messages"]);
}
