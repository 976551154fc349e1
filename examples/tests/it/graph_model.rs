//! Summaries through the agent's model when one is configured: the node's text goes to the
//! model (as a plain chat request, no tools), the model's words come back as the summary, cut
//! to the requested length; a model that fails leaves an extractive summary that says why.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::routing::post;
use serde_json::{Value, json};
use tool_runtime::executor::ExecutorConfig;

use examples::graph::{self, GraphDb, SearchService, Services, Similarity, Summarizer};
use examples::setup;

use crate::graph_tools::{run, value};

/// An OpenAI-compatible stand-in answering every chat request with `text`; records the bodies.
async fn model(text: &'static str) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(body);
                Json(
                    json!({"id": "c1", "object": "chat.completion", "created": 0,
                    "model": "stand-in",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}}),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

fn services(summarizer: Summarizer) -> Services {
    Services {
        similarity: Similarity::words(),
        summarizer,
        search: SearchService::none(),
    }
}

#[tokio::test]
async fn summaries_come_from_the_model_when_one_is_configured() {
    let (url, seen) =
        model("Caffeine is thought to raise productivity by holding off fatigue.").await;
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let exec = graph::executor_with(
        db,
        services(Summarizer::model(setup::local(&url).model)),
        &dir.path().join("store.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap();

    let v = value(&run(&exec, "s1", "summarize_node", json!({"node_id": "hyp-1"})).await);
    assert_eq!(v["method"], "model");
    assert_eq!(
        v["summary"],
        "Caffeine is thought to raise productivity by holding off fatigue."
    );
    {
        let seen = seen.lock().unwrap();
        let body = &seen[0];
        let asked = body["messages"].to_string();
        assert!(
            asked.contains("Caffeine increases productivity by delaying fatigue."),
            "{asked}"
        );
        assert!(body.get("tools").is_none(), "{body}");
        assert!(body["max_tokens"].as_u64().unwrap() > 0);
    }
    // The model's words are cut to max_length too.
    let v = value(
        &run(
            &exec,
            "s2",
            "summarize_node",
            json!({"node_id": "hyp-1", "max_length": 30}),
        )
        .await,
    );
    assert!(v["summary"].as_str().unwrap().chars().count() <= 30, "{v}");

    // The relationship and the context are summarised by the model too.
    let v = value(&run(&exec, "s3", "summarize_relationship", json!({"edge_id": 1})).await);
    assert_eq!(v["method"], "model");
    let v = value(
        &run(
            &exec,
            "s4",
            "summarize_node_with_context",
            json!({"node_id": "hyp-1"}),
        )
        .await,
    );
    assert_eq!(
        v["synthesis"],
        "Caffeine is thought to raise productivity by holding off fatigue."
    );
}

#[tokio::test]
async fn a_failing_model_leaves_an_extractive_summary_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let exec = graph::executor_with(
        db,
        // Nothing listens on port 9.
        services(Summarizer::model(setup::local("http://127.0.0.1:9").model)),
        &dir.path().join("store.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap();
    let v = value(&run(&exec, "s1", "summarize_node", json!({"node_id": "obs-3"})).await);
    assert!(
        v["method"]
            .as_str()
            .unwrap()
            .starts_with("extractive (the model failed"),
        "{v}"
    );
    assert_eq!(
        v["summary"],
        "Sleep quality drops when caffeine is consumed after 4 pm."
    );
}
