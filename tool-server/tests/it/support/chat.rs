//! What the chat tests share: starting a run that waits for a person, waiting for a run to
//! end, and reading server-sent events with a real HTTP client.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use super::{AGENT, Server};

/// `POST /api/v1/chat` with one user message, answered 202: the run's id and its first
/// pending operation's id.
pub async fn suspend(s: &Server, text: &str) -> (String, String) {
    let (status, body) = s
        .post(
            "/api/v1/chat",
            Some(AGENT),
            json!({"messages": [{"role": "user", "content": text}]}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "suspended", "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    let op = body["pending"][0]["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    (run_id, op)
}

/// Polls `GET /api/v1/chat/{id}` until the run is neither suspended nor running.
pub async fn finished(s: &Server, run_id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = s.get(&format!("/api/v1/chat/{run_id}"), Some(AGENT)).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "suspended" && body["status"] != "running" {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still {}: {body}",
            body["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One server-sent event: its id, its name and its data.
#[derive(Debug)]
pub struct Sse {
    pub id: Option<String>,
    pub name: String,
    pub data: Value,
}

/// The names of `events`, in order.
pub fn names(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

/// Reads the server-sent events of `res` until one named `until` or the stream's end, handing
/// each event to `seen` as it arrives (to act on it while the stream is open); the events read,
/// and whether the stream ended.
pub async fn read_events(
    res: reqwest::Response,
    until: &str,
    mut seen: impl AsyncFnMut(&Sse),
) -> (Vec<Sse>, bool) {
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = res.bytes_stream();
    let (mut text, mut out) = (String::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| panic!("no {until:?} within 20 s: {out:?}"));
        let Some(chunk) = chunk else {
            return (out, true);
        };
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let field = |k: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_owned()))
            };
            if let (Some(name), Some(data)) = (field("event:"), field("data:")) {
                let event = Sse {
                    id: field("id:"),
                    name,
                    data: serde_json::from_str(&data).unwrap(),
                };
                seen(&event).await;
                let done = event.name == until;
                out.push(event);
                if done {
                    return (out, false);
                }
            }
        }
    }
}
