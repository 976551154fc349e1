//! The LLM-classifier scorer over real HTTP: a `ChatModel` is the `RelevanceClassifier` of
//! `LlmScorer`, and `Catalog::pick` ranks by what a scripted model server answers.

use crate::mock;

use std::sync::Arc;

use serde_json::{Value, json};
use tool_providers::agent::ChatModel;
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::select::{Catalog, LlmScorer, PickOptions, RelevanceClassifier};
use tool_runtime::{
    ErrorCode,
    definition::{Safety, ToolDefinition},
};

use mock::{Reply, serve};

fn catalog() -> Catalog {
    let tools = [
        ("get_weather", "Current weather for a city"),
        ("book_table", "Reserve a table at a restaurant"),
        ("convert_units", "Convert between units of measure"),
    ];
    Catalog::from_definitions(tools.iter().map(|(name, description)| {
        let mut d = ToolDefinition::new(
            *name,
            *description,
            &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        );
        d.safety = Safety::ReadOnly;
        d
    }))
    .unwrap()
}

fn judge(p: Provider, url: &str) -> ChatModel {
    let cfg = ClientConfig::new(p, "judge-1")
        .with_base_url(url)
        .with_retry(RetryPolicy::none());
    ChatModel::new(HttpClient::new(cfg).unwrap())
}

fn chat_text(text: &str) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":text}}],
        "usage":{"prompt_tokens":80,"completion_tokens":9}})
}

fn options(model: ChatModel) -> PickOptions {
    PickOptions::new()
        .max_candidates(2)
        .scorer(Arc::new(LlmScorer::new(Arc::new(model)).shortlist(3)))
}

#[tokio::test]
async fn the_model_over_openai_chat_ranks_the_shortlist() {
    // The shortlist is BM25's order topped up in registration order: "table" matches
    // book_table only, then get_weather and convert_units follow.
    let server = serve(vec![Reply::Json(chat_text(
        "[Ratings] Here they are: [0.97, 0.05, 0.4]",
    ))])
    .await;
    let picked = catalog()
        .pick(
            "book a table for two",
            &options(judge(Provider::OpenAiChat, &server.url)),
        )
        .await
        .unwrap();
    let names: Vec<&str> = picked.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["book_table", "convert_units"]);
    assert!((picked[0].score - 0.97).abs() < 1e-9);
    assert!(picked[0].reason.contains("judge-1"), "{}", picked[0].reason);
    assert_eq!(picked[0].provenance.scorer, "llm");

    // One plain request: the classification prompt, no tools declared.
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/chat/completions");
    let body = &seen[0].body;
    assert!(body.get("tools").is_none());
    assert_eq!(body["model"], "judge-1");
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("Request: book a table for two"));
    assert!(prompt.contains("1. book_table: Reserve a table at a restaurant"));
    assert!(prompt.contains("3. convert_units"));
}

#[tokio::test]
async fn the_model_over_anthropic_messages_ranks_the_shortlist() {
    let server = serve(vec![Reply::Json(json!({
        "type":"message","role":"assistant","stop_reason":"end_turn",
        "content":[{"type":"text","text":"[0.1, 0.9, 0.0]"}],
        "usage":{"input_tokens":70,"output_tokens":8}}))])
    .await;
    let m = judge(Provider::Anthropic, &server.url);
    assert_eq!(RelevanceClassifier::model(&m), "judge-1");
    let picked = catalog()
        .pick("what's the weather in Oslo", &options(m))
        .await
        .unwrap();
    // BM25 shortlists get_weather first, then the rest in registration order.
    assert_eq!(picked[0].name(), "book_table");
    assert_eq!(picked.len(), 2);
    assert_eq!(picked[1].name(), "get_weather");
    let body = &server.requests()[0].body;
    assert!(body["system"].as_str().unwrap().contains("JSON array"));
    assert!(body.get("tools").is_none());
}

#[tokio::test]
async fn an_answer_without_the_array_fails_the_pick_with_a_retryable_invalid_json() {
    let server = serve(vec![Reply::Json(chat_text(
        "I think the booking tool is best.",
    ))])
    .await;
    let err = catalog()
        .pick(
            "book a table",
            &options(judge(Provider::OpenAiChat, &server.url)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_JSON);
    assert!(err.retryable);
}

#[tokio::test]
async fn a_provider_error_fails_the_pick_naming_the_model_and_the_status() {
    let server = serve(vec![Reply::Status(
        401,
        json!({"error":{"message":"invalid x-api-key","type":"authentication_error"}}),
    )])
    .await;
    let err = catalog()
        .pick(
            "book a table",
            &options(judge(Provider::Anthropic, &server.url)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
    assert!(!err.retryable, "a 401 is not worth retrying");
    assert!(err.message.contains("judge-1"), "{}", err.message);
    assert!(err.message.contains("HTTP 401"), "{}", err.message);
    assert!(err.message.contains("invalid x-api-key"), "{}", err.message);
}
