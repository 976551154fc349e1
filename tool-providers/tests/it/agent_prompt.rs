//! The prompt-based fallback (models without native tool calling) driven through the agent loop
//! over real HTTP: tools described in the system prompt, calls parsed from the text, results sent
//! back as a user message; and the switch to it when a server refuses native tools.

#![allow(clippy::result_large_err)] // tool bodies return `ToolError` by design

use crate::mock;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_providers::agent::{
    Agent, AgentConfig, AgentError, AgentEvent, ChatModel, RunStatus, ToolMode, TranscriptEntry,
};
use tool_providers::http::{ClientConfig, HttpClient, HttpErrorKind, Provider, RetryPolicy};
use tool_runtime::executor::{Executor, Status};
use tool_runtime::{ToolSet, tool};

use mock::{Mock, Reply, serve};

/// Adds two integers.
#[tool(read_only)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn ollama_text(t: &str) -> Reply {
    Reply::Json(
        json!({"model":"scripted","message":{"role":"assistant","content":t},
        "done":true,"done_reason":"stop","prompt_eval_count":20,"eval_count":5}),
    )
}

fn agent(server: &Mock, p: Provider, mode: ToolMode, config: AgentConfig) -> Agent {
    let base = match p {
        Provider::OpenAiChat => format!("{}/v1", server.url),
        _ => server.url.clone(),
    };
    let cfg = ClientConfig::new(p, "scripted")
        .with_base_url(base)
        .with_retry(RetryPolicy::none());
    let mut ts = ToolSet::new();
    ts.register::<add>().unwrap();
    Agent::new(
        ChatModel::new(HttpClient::new(cfg).unwrap()).tool_mode(mode),
        Executor::builder(ts).build().unwrap(),
        config,
    )
}

fn system_of(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_prompt_mode_runs_a_tool_round_end_to_end() {
    let server = serve(vec![
        Reply::Json(json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
            "content":"Let me add.\n<tool_call>{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}</tool_call>"}}]})),
        Reply::Json(json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
            "content":"The sum is 5."}}]})),
    ])
    .await;
    let a = agent(
        &server,
        Provider::OpenAiChat,
        ToolMode::Prompt,
        AgentConfig {
            system: Some("You are terse.".into()),
            ..Default::default()
        },
    );
    let report = a.run("add 2 and 3").await.unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    assert_eq!(report.answer.as_deref(), Some("The sum is 5."));
    assert_eq!(report.audit.len(), 1);
    assert_eq!(report.audit[0].status, Status::Success);
    let TranscriptEntry::Assistant { text, calls, .. } = &report.transcript[1] else {
        panic!("{:?}", report.transcript[1])
    };
    assert_eq!(text, "Let me add.");
    assert_eq!(calls[0].name, "add");

    let seen = server.bodies();
    // No native declarations: the tools are in the system prompt, after the agent's own.
    assert!(seen[0].get("tools").is_none());
    assert!(seen[0].get("tool_choice").is_none());
    let system = system_of(&seen[0]);
    assert!(system.starts_with("You are terse."), "{system}");
    assert!(system.contains("add"), "{system}");
    assert!(system.contains("<tool_call>"), "{system}");
    // The call is echoed as text, and its result comes back as a user message.
    let messages = seen[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .contains(r#"<tool_call>{"name":"add","arguments":{"a":2,"b":3}}</tool_call>"#)
    );
    assert!(messages[2].get("tool_calls").is_none());
    assert_eq!(messages[3]["role"], "user");
    let results = messages[3]["content"].as_str().unwrap();
    let line: Value = serde_json::from_str(results.lines().last().unwrap()).unwrap();
    assert_eq!(line["tool"], "add");
    assert_eq!(line["result"], 5);
}

#[tokio::test]
async fn an_unreadable_call_block_goes_back_as_an_error_in_prompt_mode() {
    let server = serve(vec![
        Reply::Json(
            json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
            "content":"<tool_call>{\"name\":\"add\",\"arguments\":{\"a\":2,</tool_call>"}}]}),
        ),
        Reply::Json(
            json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
            "content":"I could not call it."}}]}),
        ),
    ])
    .await;
    let a = agent(
        &server,
        Provider::OpenAiChat,
        ToolMode::Prompt,
        AgentConfig::default(),
    );
    let report = a.run("add 2 and 3").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("I could not call it."));
    let back = server.bodies()[1]["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(back.contains("INVALID_JSON"), "{back}");
}

#[tokio::test]
async fn a_server_refusing_native_tools_switches_the_run_to_the_prompt_fallback() {
    let refused = json!({"error":"registry.ollama.ai/library/gemma:2b does not support tools"});
    let server = serve(vec![
        Reply::Status(400, refused),
        ollama_text("<tool_call>{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}</tool_call>"),
        ollama_text("5"),
    ])
    .await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let a = agent(
        &server,
        Provider::Ollama,
        ToolMode::Native,
        AgentConfig {
            prompt_fallback: true,
            ..Default::default()
        },
    )
    .on_event(Arc::new(move |e: &AgentEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    let report = a.run("add 2 and 3").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("5"));
    assert_eq!(report.audit[0].status, Status::Success);
    assert_eq!(
        report.iterations, 2,
        "the refused request is not a model turn"
    );

    let seen = server.bodies();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0]["tools"][0]["function"]["name"], "add");
    // The same request again, with the tools in the prompt instead.
    assert!(seen[1].get("tools").is_none());
    assert!(system_of(&seen[1]).contains("<tool_call>"));
    assert!(
        seen[2].get("tools").is_none(),
        "the run stays in prompt mode"
    );
    assert_eq!(seen[2]["messages"][3]["role"], "user");
    let switched: Vec<AgentEvent> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolModeChanged { .. }))
        .cloned()
        .collect();
    assert_eq!(switched.len(), 1);
    let AgentEvent::ToolModeChanged { mode, reason } = &switched[0] else {
        unreachable!()
    };
    assert_eq!(*mode, ToolMode::Prompt);
    assert!(reason.contains("does not support tools"), "{reason}");
}

#[tokio::test]
async fn without_the_option_a_refusal_of_native_tools_fails_the_run() {
    let server = serve(vec![Reply::Status(
        400,
        json!({"error":"registry.ollama.ai/library/gemma:2b does not support tools"}),
    )])
    .await;
    let a = agent(
        &server,
        Provider::Ollama,
        ToolMode::Native,
        AgentConfig::default(),
    );
    let err = a.run("add 2 and 3").await.unwrap_err();
    let AgentError::Http(e) = err.cause() else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind, HttpErrorKind::Status(400));
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn other_client_errors_do_not_switch_to_the_fallback() {
    let server = serve(vec![Reply::Status(
        401,
        json!({"error":"invalid API key for tools endpoint"}),
    )])
    .await;
    let a = agent(
        &server,
        Provider::Ollama,
        ToolMode::Native,
        AgentConfig {
            prompt_fallback: true,
            ..Default::default()
        },
    );
    let err = a.run("add 2 and 3").await.unwrap_err();
    assert!(matches!(err.cause(), AgentError::Http(e) if e.status() == Some(401)));
    assert_eq!(server.count(), 1);
}

#[test]
fn the_tool_mode_is_a_setting() {
    assert_eq!("prompt".parse::<ToolMode>().unwrap(), ToolMode::Prompt);
    assert_eq!(" Native ".parse::<ToolMode>().unwrap(), ToolMode::Native);
    assert!("xml".parse::<ToolMode>().unwrap_err().contains("native"));
    assert_eq!(ToolMode::Prompt.to_string(), "prompt");
    assert_eq!(
        serde_json::to_value(ToolMode::Prompt).unwrap(),
        json!("prompt")
    );
}
