//! The HTTP clients against a real HTTP server on 127.0.0.1 (axum) with scripted answers:
//! retries honouring Retry-After, error messages, SSE and NDJSON streams, usage, headers.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use tool_providers::http::{ClientConfig, HttpClient, HttpErrorKind, Provider, RetryPolicy, Usage};

/// One scripted answer.
#[derive(Clone)]
struct Scripted {
    status: u16,
    headers: Vec<(&'static str, String)>,
    /// Body chunks, sent with a short pause between them so the client sees them separately.
    chunks: Vec<String>,
    /// A pause before answering at all.
    delay: Duration,
}

impl Scripted {
    fn json(status: u16, body: Value) -> Self {
        Scripted {
            status,
            headers: vec![("content-type", "application/json".into())],
            chunks: vec![body.to_string()],
            delay: Duration::ZERO,
        }
    }

    fn stream(content_type: &'static str, chunks: &[&str]) -> Self {
        Scripted {
            status: 200,
            headers: vec![("content-type", content_type.into())],
            chunks: chunks.iter().map(|c| c.to_string()).collect(),
            delay: Duration::ZERO,
        }
    }

    fn header(mut self, k: &'static str, v: &str) -> Self {
        self.headers.push((k, v.into()));
        self
    }
}

/// What the server saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: HeaderMap,
    body: Value,
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Scripted>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn answer(State(script): State<Script>, req: Request) -> Response {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let headers = req.headers().clone();
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    script.seen.lock().unwrap().push(Seen {
        path,
        headers,
        body,
    });
    let next = script.answers.lock().unwrap().pop_front();
    let Some(next) = next else {
        return Response::builder()
            .status(599)
            .body(Body::from("script exhausted"))
            .unwrap();
    };
    tokio::time::sleep(next.delay).await;
    let chunks = next.chunks.clone();
    let body = Body::from_stream(futures::stream::iter(chunks).then(|c| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok::<_, std::io::Error>(c)
    }));
    let mut resp = Response::builder().status(next.status);
    for (k, v) in &next.headers {
        resp = resp.header(*k, v);
    }
    resp.body(body).unwrap()
}

/// Starts a server answering every path with the script, in order.
async fn serve(answers: Vec<Scripted>) -> (String, Script) {
    let script = Script::default();
    script.answers.lock().unwrap().extend(answers);
    let app = Router::new().fallback(answer).with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), script)
}

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        max_retry_after: Duration::from_secs(5),
    }
}

fn client(provider: Provider, base: &str) -> HttpClient {
    HttpClient::new(
        ClientConfig::new(provider, "test-model")
            .with_base_url(base)
            .with_api_key("sk-test")
            .with_retry(fast_retry())
            .with_timeout(Duration::from_secs(5)),
    )
    .unwrap()
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_the_answer_and_its_usage_come_back() {
    let ok = json!({"choices":[{"message":{"role":"assistant","content":"hi"}}],
                    "usage":{"prompt_tokens":12,"completion_tokens":3}});
    let (base, script) = serve(vec![
        Scripted::json(
            429,
            json!({"error":{"message":"slow down","type":"rate_limit"}}),
        )
        .header("retry-after", "1"),
        Scripted::json(200, ok.clone()),
    ])
    .await;
    let c = client(Provider::OpenAiChat, &format!("{base}/v1"));
    let started = Instant::now();
    let reply = c
        .send(&json!({"messages":[{"role":"user","content":"hi"}]}))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(reply.body, ok);
    assert_eq!(reply.attempts, 2);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 3,
            ..Usage::default()
        }
    );
    assert!(
        waited >= Duration::from_millis(950),
        "Retry-After: 1 was not honoured ({waited:?})"
    );
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-test");
    assert_eq!(
        seen[0].body["model"], "test-model",
        "the client fills in the model"
    );
}

#[tokio::test]
async fn server_errors_are_retried_up_to_the_budget_and_the_error_says_what_happened() {
    let err = json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
    let (base, script) = serve(vec![
        Scripted::json(529, err.clone()),
        Scripted::json(500, err.clone()),
        Scripted::json(503, err.clone()),
        Scripted::json(529, err.clone()),
        Scripted::json(200, json!({})),
    ])
    .await;
    let c = client(Provider::Anthropic, &format!("{base}/v1"));
    let e = c.send(&json!({"messages":[]})).await.unwrap_err();
    assert_eq!(e.kind, HttpErrorKind::Status(529));
    assert_eq!(e.attempts, 4, "1 attempt + 3 retries");
    let msg = e.to_string();
    assert!(
        msg.starts_with("anthropic: HTTP 529: overloaded_error: Overloaded"),
        "{msg}"
    );
    assert!(
        msg.contains("after 4 attempts") && msg.contains("retry later"),
        "{msg}"
    );
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].headers["x-api-key"], "sk-test");
    assert_eq!(seen[0].headers["anthropic-version"], "2023-06-01");
    assert!(
        seen[0].body["max_tokens"].as_u64().unwrap() > 0,
        "Anthropic requires max_tokens"
    );
}

#[tokio::test]
async fn client_errors_are_not_retried_and_name_the_remedy() {
    let (base, script) = serve(vec![Scripted::json(
        401,
        json!({"error":{"code":401,"message":"API key not valid","status":"UNAUTHENTICATED"}}),
    )])
    .await;
    let c = client(Provider::Gemini, &format!("{base}/v1beta"));
    let e = c.send(&json!({"contents":[]})).await.unwrap_err();
    assert_eq!(e.status(), Some(401));
    assert_eq!(e.attempts, 1);
    assert!(e.to_string().contains("UNAUTHENTICATED: API key not valid"));
    assert!(e.hint.contains("GEMINI_API_KEY"), "{}", e.hint);
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/v1beta/models/test-model:generateContent");
    assert_eq!(seen[0].headers["x-goog-api-key"], "sk-test");
}

#[tokio::test]
async fn a_retry_after_longer_than_the_limit_fails_at_once_saying_how_long() {
    let (base, script) = serve(vec![
        Scripted::json(429, json!({"error":{"message":"quota"}})).header("retry-after", "3600"),
    ])
    .await;
    let c = client(Provider::OpenAiResponses, &format!("{base}/v1"));
    let started = Instant::now();
    let e = c.send(&json!({"input":"hi"})).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(e.retry_after, Some(Duration::from_secs(3600)));
    assert!(e.hint.contains("3600 s"), "{}", e.hint);
    assert_eq!(script.seen.lock().unwrap()[0].path, "/v1/responses");
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error_naming_the_base_url_variable() {
    // Bind then drop a listener: the port is closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = HttpClient::new(
        ClientConfig::new(Provider::OpenAiChat, "m")
            .with_base_url(format!("http://127.0.0.1:{port}/v1"))
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let e = c.send(&json!({})).await.unwrap_err();
    assert_eq!(e.kind, HttpErrorKind::Connect);
    assert!(e.to_string().contains("OPENAI_BASE_URL"), "{e}");
}

#[tokio::test]
async fn a_slow_server_times_out_with_a_retryable_error() {
    let mut slow = Scripted::json(200, json!({}));
    slow.delay = Duration::from_secs(3);
    let (base, _) = serve(vec![slow]).await;
    let c = HttpClient::new(
        ClientConfig::new(Provider::Ollama, "m")
            .with_base_url(&base)
            .with_retry(RetryPolicy::none())
            .with_timeout(Duration::from_millis(300)),
    )
    .unwrap();
    let e = c.send(&json!({})).await.unwrap_err();
    assert_eq!(e.kind, HttpErrorKind::Timeout);
    assert!(e.is_retryable());
}

#[tokio::test]
async fn openai_sse_stream_yields_events_in_order_with_usage_and_without_done() {
    let (base, script) = serve(vec![Scripted::stream(
        "text/event-stream",
        &[
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\":",
            "1}\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":53,\"completion_tokens\":17}}\n\n",
            "data: [DONE]\n\n",
        ],
    )])
    .await;
    let c = client(Provider::OpenAiChat, &format!("{base}/v1"));
    let mut s = c.stream(&json!({"messages":[]})).await.unwrap();
    let mut events = Vec::new();
    while let Some(e) = s.next().await {
        events.push(e.unwrap());
    }
    assert_eq!(events.len(), 4);
    assert_eq!(
        events[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
        "{\"a\":1}"
    );
    assert_eq!(
        s.usage(),
        Usage {
            input_tokens: 53,
            output_tokens: 17,
            ..Usage::default()
        }
    );
    let seen = script.seen.lock().unwrap()[0].clone();
    assert_eq!(seen.body["stream"], true);
    assert_eq!(seen.body["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn anthropic_stream_usage_combines_message_start_and_message_delta() {
    let (base, _) = serve(vec![Scripted::stream(
        "text/event-stream",
        &[
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":472,\"output_tokens\":2}}}\n\n",
            "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":89}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ],
    )])
    .await;
    let c = client(Provider::Anthropic, &base);
    let s = c.stream(&json!({"messages":[]})).await.unwrap();
    let (events, usage) = drain(s).await;
    assert_eq!(events.len(), 4);
    assert_eq!((usage.input_tokens, usage.output_tokens), (472, 89));
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_the_stream_with_the_providers_message() {
    let (base, _) = serve(vec![Scripted::stream(
        "text/event-stream",
        &[
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ],
    )])
    .await;
    let c = client(Provider::Anthropic, &base);
    let mut s = c.stream(&json!({})).await.unwrap();
    assert!(s.next().await.unwrap().is_ok());
    let e = s.next().await.unwrap().unwrap_err();
    assert_eq!(e.kind, HttpErrorKind::Stream);
    assert!(
        e.to_string().contains("overloaded_error: Overloaded"),
        "{e}"
    );
    assert!(s.next().await.is_none(), "nothing after an error");
}

#[tokio::test]
async fn ollama_ndjson_stream_yields_each_line_and_the_final_counts() {
    let (base, script) = serve(vec![Scripted::stream(
        "application/x-ndjson",
        &[
            "{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},\"done\":false}\n{\"mess",
            "age\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"prompt_eval_count\":26,\"eval_count\":8}",
        ],
    )])
    .await;
    let c = client(Provider::Ollama, &base);
    let s = c.stream(&json!({"messages":[]})).await.unwrap();
    let (events, usage) = drain(s).await;
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[0]["message"]["tool_calls"][0]["function"]["arguments"]["a"],
        1
    );
    assert_eq!(usage.total(), 34);
    let seen = script.seen.lock().unwrap()[0].clone();
    assert_eq!(seen.path, "/api/chat");
    assert_eq!(seen.body["stream"], true);
}

#[tokio::test]
async fn gemini_streams_over_sse_from_the_stream_endpoint() {
    let (base, script) = serve(vec![Scripted::stream(
        "text/event-stream",
        &[
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]}}],\"usageMetadata\":{\"promptTokenCount\":40,\"candidatesTokenCount\":6}}\r\n\r\n",
        ],
    )])
    .await;
    let c = client(Provider::Gemini, &base);
    let (events, usage) = drain(c.stream(&json!({"contents":[]})).await.unwrap()).await;
    assert_eq!(events.len(), 1);
    assert_eq!(usage.total(), 46);
    assert_eq!(
        script.seen.lock().unwrap()[0].path,
        "/models/test-model:streamGenerateContent?alt=sse"
    );
}

#[tokio::test]
async fn a_stream_start_is_retried_after_a_503() {
    let (base, _) = serve(vec![
        Scripted::json(503, json!({"error":"loading model"})),
        Scripted::stream(
            "application/x-ndjson",
            &["{\"done\":true,\"eval_count\":1}\n"],
        ),
    ])
    .await;
    let c = client(Provider::Ollama, &base);
    let (events, _) = drain(c.stream(&json!({})).await.unwrap()).await;
    assert_eq!(events.len(), 1);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_decode_error() {
    let (base, _) = serve(vec![Scripted {
        status: 200,
        headers: vec![("content-type", "text/html".into())],
        chunks: vec!["<html>captive portal</html>".into()],
        delay: Duration::ZERO,
    }])
    .await;
    let e = client(Provider::OpenAiChat, &base)
        .send(&json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, HttpErrorKind::Decode);
    assert!(e.to_string().contains("captive portal"));
}

async fn drain(mut s: tool_providers::http::EventStream) -> (Vec<Value>, Usage) {
    let mut events = Vec::new();
    while let Some(e) = s.next().await {
        events.push(e.unwrap());
    }
    (events, s.usage())
}

#[tokio::test]
async fn anthropic_cache_reads_and_writes_are_counted_in_the_usage() {
    let (base, _) = serve(vec![
        Scripted::json(
            200,
            json!({"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],
                "stop_reason":"end_turn","usage":{"input_tokens":21,"output_tokens":5,
                "cache_creation_input_tokens":1800,"cache_read_input_tokens":0}}),
        ),
        Scripted::stream(
            "text/event-stream",
            &[
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":1800,\"output_tokens\":1}}}\n\n",
                "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":40}}\n\n",
                "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
            ],
        ),
    ])
    .await;
    let c = client(Provider::Anthropic, &base);
    // First request: the prompt is written to the cache.
    let reply = c.send(&json!({"messages":[]})).await.unwrap();
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 1821,
            output_tokens: 5,
            cached_input_tokens: 0,
            cache_creation_input_tokens: 1800,
        }
    );
    // Second, streamed: read from the cache.
    let (_, usage) = drain(c.stream(&json!({"messages":[]})).await.unwrap()).await;
    assert_eq!(
        usage,
        Usage {
            input_tokens: 1809,
            output_tokens: 40,
            cached_input_tokens: 1800,
            cache_creation_input_tokens: 0,
        }
    );
}

fn bounded_client(provider: Provider, base: &str, response: usize, event: usize) -> HttpClient {
    let mut config = ClientConfig::new(provider, "test-model")
        .with_base_url(base)
        .with_api_key("sk-test")
        .with_retry(fast_retry())
        .with_timeout(Duration::from_secs(5));
    config.max_response_bytes = response;
    config.max_event_bytes = event;
    HttpClient::new(config).unwrap()
}

/// A response past `max_response_bytes` is refused as it arrives, with an error that names the
/// bound and the setting; one within it is read as usual.
#[tokio::test]
async fn a_response_past_the_size_bound_is_refused_with_a_clear_error() {
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(4000));
    let chunks: Vec<String> = big
        .as_bytes()
        .chunks(1000)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let answer = Scripted {
        status: 200,
        headers: vec![("content-type", "application/json".into())],
        chunks,
        delay: Duration::ZERO,
    };
    let (base, _) = serve(vec![answer.clone(), answer]).await;
    let e = bounded_client(Provider::OpenAiChat, &base, 2048, 1 << 20)
        .send(&json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.kind, HttpErrorKind::TooLarge);
    assert!(!e.is_retryable());
    assert!(
        e.to_string().contains("2048 bytes") && e.to_string().contains("max_response_bytes"),
        "{e}"
    );
    let ok = bounded_client(Provider::OpenAiChat, &base, 8192, 1 << 20)
        .send(&json!({}))
        .await
        .unwrap();
    assert_eq!(ok.body["pad"].as_str().unwrap().len(), 4000);
}

/// A stream event that grows past `max_event_bytes` without ending ends the stream with an
/// error; the events before it were delivered.
#[tokio::test]
async fn a_stream_event_past_the_size_bound_ends_the_stream_with_an_error() {
    let endless = format!("data: {{\"pad\":\"{}", "y".repeat(3000));
    let (base, _) = serve(vec![Scripted::stream(
        "text/event-stream",
        &[
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
            &endless,
            &"y".repeat(3000),
        ],
    )])
    .await;
    let c = bounded_client(Provider::OpenAiChat, &base, 1 << 20, 4096);
    let mut s = c.stream(&json!({})).await.unwrap();
    assert!(s.next().await.unwrap().is_ok());
    let e = s.next().await.unwrap().unwrap_err();
    assert_eq!(e.kind, HttpErrorKind::TooLarge);
    assert!(e.to_string().contains("max_event_bytes"), "{e}");
    assert!(s.next().await.is_none(), "nothing after an error");
}
