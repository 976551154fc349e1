//! Connections that go away under a request, against a raw TCP server on 127.0.0.1 that closes
//! them on purpose: a kept-alive connection the server drops as it is reused (what llama.cpp's
//! server does after every streamed answer), a body cut off, a stream cut off mid-answer. Raw
//! sockets, because an HTTP server library will not misbehave this way on request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_providers::agent::{Agent, AgentConfig, AgentError, AgentEvent, ChatModel, RunStatus};
use tool_providers::http::{ClientConfig, HttpClient, HttpErrorKind, Provider, RetryPolicy};
use tool_runtime::ToolSet;
use tool_runtime::executor::Executor;

/// What the server does with one request.
#[derive(Clone)]
enum Step {
    /// Writes these bytes (a whole response) and keeps the connection for the next request.
    Answer(String),
    /// Writes these bytes (a response cut short) and closes the connection.
    CutOff(String),
    /// Reads the request and closes the connection without a byte: a kept-alive connection
    /// dropped just as the client reused it.
    Drop,
}

#[derive(Clone, Default)]
struct Script {
    steps: Arc<Mutex<VecDeque<Step>>>,
    /// Requests seen, as (connection number, JSON body).
    seen: Arc<Mutex<Vec<(usize, Value)>>>,
}

/// Reads one HTTP/1.1 request with a Content-Length body; None when the client closed.
async fn read_request(sock: &mut TcpStream) -> Option<Value> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null))
}

async fn serve(steps: Vec<Step>) -> (String, Script) {
    let script = Script::default();
    script.steps.lock().unwrap().extend(steps);
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let s = script.clone();
    tokio::spawn(async move {
        let mut conn = 0usize;
        loop {
            let (mut sock, _) = l.accept().await.unwrap();
            conn += 1;
            let s = s.clone();
            tokio::spawn(async move {
                while let Some(body) = read_request(&mut sock).await {
                    s.seen.lock().unwrap().push((conn, body));
                    let step = s.steps.lock().unwrap().pop_front();
                    match step {
                        Some(Step::Answer(bytes)) => {
                            sock.write_all(bytes.as_bytes()).await.unwrap();
                        }
                        Some(Step::CutOff(bytes)) => {
                            sock.write_all(bytes.as_bytes()).await.unwrap();
                            return;
                        }
                        Some(Step::Drop) | None => return,
                    }
                }
            });
        }
    });
    (format!("http://{addr}/v1"), script)
}

fn json_response(body: &Value) -> String {
    let body = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// An SSE answer over chunked encoding, one chunk per event; `complete` adds `[DONE]` and the
/// terminating chunk.
fn sse_response(events: &[Value], complete: bool) -> String {
    let mut out =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_owned();
    for e in events {
        out.push_str(&chunk(&format!("data: {e}\n\n")));
    }
    if complete {
        out.push_str(&chunk("data: [DONE]\n\n"));
        out.push_str("0\r\n\r\n");
    }
    out
}

fn text_event(text: &str) -> Value {
    json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
}

fn stop_event() -> Value {
    json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":7,"completion_tokens":2}})
}

fn answer(text: &str) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":text}}]})
}

fn client(base: &str, max_retries: u32) -> HttpClient {
    HttpClient::new(
        ClientConfig::new(Provider::OpenAiChat, "m")
            .with_base_url(base)
            .with_retry(RetryPolicy {
                max_retries,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_millis(20),
                max_retry_after: Duration::from_secs(1),
            })
            .with_timeout(Duration::from_secs(5)),
    )
    .unwrap()
}

#[tokio::test]
async fn a_kept_alive_connection_dropped_as_it_is_reused_is_sent_again_on_a_new_one() {
    let (base, script) = serve(vec![
        Step::Answer(json_response(&answer("one"))),
        Step::Drop,
        Step::Answer(json_response(&answer("two"))),
    ])
    .await;
    let c = client(&base, 2);
    let first = c.send(&json!({"messages": []})).await.unwrap();
    assert_eq!(first.attempts, 1);
    let second = c.send(&json!({"messages": [1]})).await.unwrap();
    assert_eq!(second.body["choices"][0]["message"]["content"], "two");
    assert_eq!(second.attempts, 2, "one resend");
    let seen = script.seen.lock().unwrap().clone();
    let conns: Vec<usize> = seen.iter().map(|(c, _)| *c).collect();
    assert_eq!(conns, [1, 1, 2], "the resend went out on a new connection");
    assert_eq!(seen[1].1, seen[2].1, "the same request was sent again");
}

#[tokio::test]
async fn a_body_cut_off_is_sent_again_because_the_caller_saw_none_of_it() {
    let full = answer("whole").to_string();
    let cut = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
        full.len(),
        &full[..10]
    );
    let (base, script) = serve(vec![
        Step::CutOff(cut),
        Step::Answer(json_response(&answer("whole"))),
    ])
    .await;
    let reply = client(&base, 1).send(&json!({})).await.unwrap();
    assert_eq!(reply.body["choices"][0]["message"]["content"], "whole");
    assert_eq!(reply.attempts, 2);
    assert_eq!(script.seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_server_that_keeps_dropping_fails_after_the_budget_with_a_retryable_disconnect() {
    let (base, script) = serve(vec![Step::Drop, Step::Drop, Step::Drop, Step::Drop]).await;
    let err = client(&base, 2).send(&json!({})).await.unwrap_err();
    assert_eq!(err.kind, HttpErrorKind::Disconnected, "{err}");
    assert!(err.is_retryable());
    assert_eq!(err.attempts, 3, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("closed before the answer was complete") && text.contains("after 3 attempts"),
        "{text}"
    );
    assert_eq!(
        script.seen.lock().unwrap().len(),
        3,
        "no more than the budget"
    );
}

fn agent(base: &str, max_retries: u32, events: Arc<Mutex<Vec<AgentEvent>>>) -> Agent {
    let model = ChatModel::new(client(base, max_retries)).streaming(true);
    let executor = Executor::builder(ToolSet::new()).build().unwrap();
    Agent::new(model, executor, AgentConfig::default()).on_event(Arc::new(move |e: &AgentEvent| {
        events.lock().unwrap().push(e.clone())
    }))
}

#[tokio::test]
async fn a_stream_cut_off_mid_answer_is_asked_again_and_the_ui_is_told_to_drop_the_text() {
    let (base, script) = serve(vec![
        Step::CutOff(sse_response(&[text_event("Hel")], false)),
        Step::Answer(sse_response(
            &[text_event("Hello"), text_event(" there"), stop_event()],
            true,
        )),
    ])
    .await;
    let events = Arc::default();
    let report = agent(&base, 1, Arc::clone(&events))
        .run("hi")
        .await
        .unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    assert_eq!(report.answer.as_deref(), Some("Hello there"));
    assert_eq!(
        report.usage.input_tokens, 7,
        "usage of the answer that completed"
    );
    let events = events.lock().unwrap().clone();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            AgentEvent::TextDelta { .. } => "text",
            AgentEvent::AnswerRestarted { .. } => "restarted",
            AgentEvent::FinalAnswer { .. } => "final",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["text", "restarted", "text", "text", "final"]);
    let AgentEvent::AnswerRestarted { reason } = &events[1] else {
        unreachable!()
    };
    assert!(
        reason.contains("closed before the answer was complete"),
        "{reason}"
    );
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].1, seen[1].1, "the same request was asked again");
}

#[tokio::test]
async fn a_stream_that_always_breaks_ends_the_run_after_the_clients_retry_count() {
    let cut = Step::CutOff(sse_response(&[text_event("Hel")], false));
    let (base, script) = serve(vec![cut.clone(), cut.clone(), cut.clone(), cut]).await;
    let events = Arc::default();
    let err = agent(&base, 2, Arc::clone(&events))
        .run("hi")
        .await
        .unwrap_err();
    let AgentError::Http(e) = err.cause() else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind, HttpErrorKind::Disconnected);
    assert_eq!(
        script.seen.lock().unwrap().len(),
        3,
        "first answer plus two restarts"
    );
    let restarts = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::AnswerRestarted { .. }))
        .count();
    assert_eq!(restarts, 2);
}

/// A stream the server closes properly but without the model's stop event may be cut short:
/// none of its calls run, and the turn is asked again like an answer that broke off.
#[tokio::test]
async fn a_stream_closed_without_its_stop_event_is_asked_again_and_its_calls_not_run() {
    let call = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",
        "type":"function","function":{"name":"delete_everything","arguments":"{}"}}]},
        "finish_reason":null}]});
    let (base, script) = serve(vec![
        Step::Answer(sse_response(&[call], true)),
        Step::Answer(sse_response(&[text_event("Done"), stop_event()], true)),
    ])
    .await;
    let events = Arc::default();
    let report = agent(&base, 1, Arc::clone(&events))
        .run("hi")
        .await
        .unwrap();
    assert_eq!(report.answer.as_deref(), Some("Done"));
    let events = events.lock().unwrap().clone();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::CallStarted { .. })),
        "no call of the unfinished answer ran: {events:?}"
    );
    let reason = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::AnswerRestarted { reason } => Some(reason.clone()),
            _ => None,
        })
        .expect("asked again");
    assert!(reason.contains("before the model's stop event"), "{reason}");
    assert_eq!(script.seen.lock().unwrap().len(), 2);
}
