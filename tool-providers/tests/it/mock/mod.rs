//! A scripted model server on 127.0.0.1 (axum): it answers each request with the next scripted
//! reply, whatever the path, and keeps what it saw (path, headers, the exact bytes, the JSON).
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with a JSON body.
    Json(Value),
    /// A status with a JSON body (an error).
    Status(u16, Value),
    /// 200 with a stream: the content type and the body's chunks.
    Stream(&'static str, Vec<String>),
}

impl Reply {
    /// A server-sent-event stream of these events (`data: {...}` each), ending with `[DONE]`
    /// when `done`.
    pub fn sse(events: &[Value], done: bool) -> Reply {
        let mut chunks: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        if done {
            chunks.push("data: [DONE]\n\n".into());
        }
        Reply::Stream("text/event-stream", chunks)
    }

    /// An NDJSON stream (Ollama) of these lines.
    pub fn ndjson(lines: &[Value]) -> Reply {
        Reply::Stream(
            "application/x-ndjson",
            lines.iter().map(|l| format!("{l}\n")).collect(),
        )
    }
}

/// What the server saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Path and query.
    pub path: String,
    /// The headers.
    pub headers: HeaderMap,
    /// The body's bytes, exactly as received.
    pub raw: Vec<u8>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: Value,
}

#[derive(Clone, Default)]
struct Script {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A running scripted server.
#[derive(Clone)]
pub struct Mock {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    script: Script,
}

impl Mock {
    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.script.seen.lock().unwrap().clone()
    }

    /// The JSON bodies of every request so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|s| s.body).collect()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.script.seen.lock().unwrap().len()
    }

    /// Replies not used yet.
    pub fn left(&self) -> usize {
        self.script.replies.lock().unwrap().len()
    }
}

async fn answer(State(script): State<Script>, req: Request) -> Response {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let headers = req.headers().clone();
    let raw = axum::body::to_bytes(req.into_body(), 1 << 24)
        .await
        .unwrap()
        .to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    script.seen.lock().unwrap().push(Seen {
        path,
        headers,
        raw,
        body,
    });
    let next = script.replies.lock().unwrap().pop_front();
    let (status, content_type, chunks) = match next {
        Some(Reply::Json(v)) => (200, "application/json", vec![v.to_string()]),
        Some(Reply::Status(s, v)) => (s, "application/json", vec![v.to_string()]),
        Some(Reply::Stream(ct, chunks)) => (200, ct, chunks),
        // An unexpected extra request fails loudly, with a status no client retries.
        None => (
            418,
            "text/plain",
            vec!["the script has no reply left".to_owned()],
        ),
    };
    let stream = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from(c))),
    );
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from_stream(stream))
        .unwrap()
}

/// Starts a server answering with `replies`, in order.
pub async fn serve(replies: Vec<Reply>) -> Mock {
    let script = Script::default();
    script.replies.lock().unwrap().extend(replies);
    let app = Router::new().fallback(answer).with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Mock {
        url: format!("http://{addr}"),
        script,
    }
}
