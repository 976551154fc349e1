//! A scripted OpenAI-compatible model server on 127.0.0.1, standing in for the local llama.cpp
//! server (`TOOLS_LLAMA_URL`): it answers with its replies in order and records what it was
//! sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};

use super::serve;

/// The replies still to give, and the request bodies received.
#[derive(Default)]
pub struct Script {
    replies: Mutex<VecDeque<Value>>,
    seen: Mutex<Vec<Value>>,
}

/// A model server that answers `/v1/chat/completions` with its replies in order and records the
/// request bodies; past the script it answers 400 (not retried), which fails the run visibly.
pub struct Peer {
    pub url: String,
    script: Arc<Script>,
}

impl Peer {
    pub fn start(replies: Vec<Value>) -> Peer {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
        });
        let router = axum::Router::new()
            .route(
                "/v1/chat/completions",
                post(
                    |State(s): State<Arc<Script>>, axum::Json(body): axum::Json<Value>| async move {
                        s.seen.lock().unwrap().push(body);
                        let next = s.replies.lock().unwrap().pop_front();
                        next.map(axum::Json).ok_or((
                            StatusCode::BAD_REQUEST,
                            axum::Json(
                                json!({"error": {"message": "the script has no more replies"}}),
                            ),
                        ))
                    },
                ),
            )
            .with_state(script.clone());
        Peer {
            url: serve(router),
            script,
        }
    }

    pub fn requests(&self) -> Vec<Value> {
        self.script.seen.lock().unwrap().clone()
    }

    pub fn unused(&self) -> usize {
        self.script.replies.lock().unwrap().len()
    }
}

pub fn completion(message: Value, finish: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220}})
}

pub fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}]}),
        "tool_calls",
    )
}

pub fn answer(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}
