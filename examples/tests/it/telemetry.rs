//! Spans exported over OTLP to a real receiver (`TOOLS_OTLP_URL`, writing what it receives to
//! `TOOLS_OTLP_SPANS` as JSON lines; `scripts/otlp-receiver.sh`): an agent run in this process,
//! and the `research` binary run as a user runs it with `OTEL_EXPORTER_OTLP_ENDPOINT` set. Each
//! run's trace is found in the receiver's output by its own random ids, then checked for its
//! spans, their GenAI attributes, their parentage, one trace id, and the absence of the secret
//! values the tools were called with.

#![allow(clippy::result_large_err)] // tool bodies return `ToolError` by design

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State as AxState;
use axum::routing::post;
use serde_json::{Value, json};
use tool_providers::agent::{Agent, AgentConfig, ChatModel, RunStatus};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_providers::telemetry::Otlp;
use tool_runtime::executor::Executor;
use tool_runtime::{ErrorCode, ToolError, ToolSet, tool};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Signs in to the billing service.
#[tool(read_only)]
fn sign_in(user: String, api_key: String) -> String {
    // the key is used, never returned
    format!(
        "signed in as {user} with a key of {} characters",
        api_key.len()
    )
}

/// Checks the vault password.
#[tool(read_only)]
fn check_password(password: String) -> Result<String, ToolError> {
    // a careless tool that quotes its input in its error
    Err(ToolError::new(
        ErrorCode::EXECUTION_FAILED,
        format!("the password {password} is wrong"),
    ))
}

/// Looks up an order; says so in the program's log.
#[tool(read_only)]
async fn lookup_order(order: u64) -> String {
    tracing::info!(order, "looking the order up");
    format!("order {order} shipped")
}

/// Rotates a token; fails loudly on a malformed one.
#[tool(read_only)]
fn rotate_token(token: String) -> String {
    assert!(token.starts_with("tok-"), "malformed token {token}");
    "rotated".into()
}

/// One span as the receiver printed it (OTLP's JSON mapping: hex ids, typed attribute values).
#[derive(Debug, Clone)]
struct Span {
    raw: Value,
}

impl Span {
    fn str(&self, key: &str) -> &str {
        self.raw[key].as_str().unwrap_or_default()
    }
    fn trace(&self) -> &str {
        self.str("traceId")
    }
    fn id(&self) -> &str {
        self.str("spanId")
    }
    fn parent(&self) -> &str {
        self.str("parentSpanId")
    }
    fn name(&self) -> &str {
        self.str("name")
    }
    fn start(&self) -> u128 {
        self.str("startTimeUnixNano").parse().unwrap_or_default()
    }
    /// An attribute's value: strings as strings, integers (a string in OTLP JSON) as numbers.
    fn attr(&self, key: &str) -> Value {
        let Some(kv) = self.raw["attributes"]
            .as_array()
            .and_then(|a| a.iter().find(|kv| kv["key"] == key))
        else {
            return Value::Null;
        };
        let v = &kv["value"];
        if let Some(i) = v["intValue"].as_str() {
            return json!(i.parse::<i64>().unwrap());
        }
        for k in ["stringValue", "boolValue", "doubleValue", "intValue"] {
            if !v[k].is_null() {
                return v[k].clone();
            }
        }
        Value::Null
    }
}

/// Every span the receiver has written so far.
fn received(file: &Path) -> Vec<Span> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("spanId").is_some())
        .map(|raw| Span { raw })
        .collect()
}

/// The spans of the trace holding the `execute_tool` span of `call_id`, once `count` of them
/// have arrived. The receiver writes each span after answering the export, so this waits for
/// its output (30 s at most, then fails with what did arrive).
fn trace_of(file: &Path, call_id: &str, count: usize) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = received(file);
        let trace = all
            .iter()
            .find(|s| s.attr("gen_ai.tool.call.id") == call_id)
            .map(|s| s.trace().to_owned());
        let spans: Vec<Span> = match &trace {
            Some(t) => all.into_iter().filter(|s| s.trace() == t).collect(),
            None => Vec::new(),
        };
        if spans.len() >= count {
            return spans;
        }
        assert!(
            Instant::now() < deadline,
            "the receiver did not get the {count} spans of the trace of {call_id}: {spans:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn named<'a>(spans: &'a [Span], operation: &str) -> Vec<&'a Span> {
    let mut found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.attr("gen_ai.operation.name") == operation)
        .collect();
    found.sort_by_key(|s| s.start());
    found
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{:016x}", fastrand_u64())
}

fn fastrand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish()
}

/// An OpenAI-compatible model server on 127.0.0.1, on its own thread, answering with `replies`
/// in order.
fn model_server(replies: Vec<Value>) -> String {
    let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
    let router = axum::Router::new()
        .route(
            "/v1/chat/completions",
            post(
                |AxState(r): AxState<Arc<Mutex<VecDeque<Value>>>>| async move {
                    let next = r.lock().unwrap().pop_front();
                    axum::Json(next.unwrap_or_else(|| json!({"error": "script exhausted"})))
                },
            ),
        )
        .with_state(replies);
    crate::support::serve(router)
}

fn completion(message: Value, finish: &str, usage: (u64, u64)) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
           "model": "scripted-2025-01",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1}})
}

fn calls(calls: &[(&str, &str, Value)], usage: (u64, u64)) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
        "tool_calls",
        usage,
    )
}

fn answer(text: &str, usage: (u64, u64)) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop", usage)
}

/// No attribute, event or status of any span holds `secret`.
fn assert_secret_absent(spans: &[Span], secret: &str) {
    for s in spans {
        let text = s.raw.to_string();
        assert!(
            !text.contains(secret),
            "the span {} carries the secret {secret:?}: {text}",
            s.name()
        );
    }
}

#[tokio::test]
async fn an_agent_run_is_one_trace_of_chat_and_tool_spans_without_the_secrets() {
    let Some((endpoint, file)) = test_support::otlp_receiver() else {
        return;
    };
    let api_key = format!("sk-otel-{:016x}{:016x}", fastrand_u64(), fastrand_u64());
    let password = format!("hunter2-{:016x}", fastrand_u64());
    let (sign_id, check_id) = (unique("call-sign"), unique("call-check"));
    let session = unique("session");
    let base = model_server(vec![
        calls(
            &[
                (
                    &sign_id,
                    "sign_in",
                    json!({"user": "ada", "api_key": api_key}),
                ),
                (&check_id, "check_password", json!({"password": password})),
            ],
            (111, 11),
        ),
        answer("Signed in; the password was wrong.", (222, 22)),
    ]);
    let mut tools = ToolSet::new();
    tools.register::<sign_in>().unwrap();
    tools.register::<check_password>().unwrap();
    let executor = Executor::builder(tools).build().unwrap();
    let client = HttpClient::new(
        ClientConfig::new(Provider::OpenAiChat, "scripted")
            .with_base_url(format!("{base}/v1"))
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let config = AgentConfig {
        session: Some(session.clone()),
        ..Default::default()
    };
    let agent = Agent::new(ChatModel::new(client), executor, config);

    let (layer, telemetry) = Otlp::new(&endpoint, "telemetry-test")
        .layer()
        .expect("the exporter");
    let subscriber = tracing_subscriber::registry().with(layer).set_default();
    let report = agent
        .run("Sign in as ada, then check the vault password.")
        .await
        .unwrap();
    drop(subscriber);
    // the guard sends the batch (the run is shorter than the batch's delay)
    drop(telemetry);
    assert_eq!(report.status, RunStatus::Answered);

    let spans = trace_of(&file, &sign_id, 5);
    assert_eq!(spans.len(), 5, "{spans:#?}");

    // the run: the root of the trace, with its totals
    let runs = named(&spans, "invoke_agent");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert_eq!(run.name(), "invoke_agent openai");
    assert_eq!(run.parent(), "", "the run is the trace's root");
    assert_eq!(run.attr("gen_ai.provider.name"), "openai");
    assert_eq!(run.attr("gen_ai.request.model"), "scripted");
    assert_eq!(run.attr("gen_ai.conversation.id"), session.as_str());
    assert_eq!(run.attr("correlation_id"), report.correlation_id.as_str());
    assert_eq!(run.attr("gen_ai.usage.input_tokens"), 333);
    assert_eq!(run.attr("gen_ai.usage.output_tokens"), 33);
    assert_eq!(run.attr("agent.status"), "answered");

    // one chat span per model request, children of the run, with what each request spent
    let chats = named(&spans, "chat");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for (chat, (input, output)) in chats.iter().zip([(111, 11), (222, 22)]) {
        assert_eq!(chat.name(), "chat scripted");
        assert_eq!(chat.parent(), run.id());
        assert_eq!(chat.raw["kind"], 3, "a client span: {chat:?}");
        assert_eq!(chat.attr("gen_ai.provider.name"), "openai");
        assert_eq!(chat.attr("gen_ai.request.model"), "scripted");
        assert_eq!(chat.attr("gen_ai.response.model"), "scripted-2025-01");
        assert_eq!(chat.attr("gen_ai.usage.input_tokens"), input);
        assert_eq!(chat.attr("gen_ai.usage.output_tokens"), output);
        assert_eq!(chat.attr("server.address"), "127.0.0.1");
    }

    // one execute_tool span per call, children of the run
    let tools = named(&spans, "execute_tool");
    assert_eq!(tools.len(), 2, "{spans:#?}");
    let by_call = |id: &str| {
        *tools
            .iter()
            .find(|s| s.attr("gen_ai.tool.call.id") == id)
            .unwrap()
    };
    let (sign, check) = (by_call(&sign_id), by_call(&check_id));
    for (span, tool) in [(sign, "sign_in"), (check, "check_password")] {
        assert_eq!(span.name(), format!("execute_tool {tool}"));
        assert_eq!(span.parent(), run.id(), "{span:?}");
        assert_eq!(span.attr("gen_ai.tool.name"), tool);
        assert_eq!(span.attr("gen_ai.conversation.id"), session.as_str());
    }
    assert_eq!(sign.attr("tool.status"), "success");
    assert_eq!(check.attr("tool.status"), "error");
    assert_eq!(check.attr("error.type"), "EXECUTION_FAILED");
    // the calls ran between the two requests
    assert!(chats[0].start() < sign.start() && sign.start() < chats[1].start());

    // one trace: the chats and tools found by their parent are the ones found by trace id
    assert!(spans.iter().all(|s| s.trace() == run.trace()));
    assert!(
        spans
            .iter()
            .all(|s| s.id() == run.id() || s.parent() == run.id())
    );

    // what the tools were called with never leaves in a span, nor what the failing tool quoted
    assert_secret_absent(&spans, &api_key);
    assert_secret_absent(&spans, &password);
}

#[tokio::test]
async fn what_a_tool_logs_while_it_runs_is_an_event_of_its_execute_tool_span() {
    let Some((endpoint, file)) = test_support::otlp_receiver() else {
        return;
    };
    let call_id = unique("call-lookup");
    let base = model_server(vec![
        calls(&[(&call_id, "lookup_order", json!({"order": 7}))], (5, 1)),
        answer("Order 7 shipped.", (6, 1)),
    ]);
    let mut tools = ToolSet::new();
    tools.register::<lookup_order>().unwrap();
    let client = HttpClient::new(
        ClientConfig::new(Provider::OpenAiChat, "scripted")
            .with_base_url(format!("{base}/v1"))
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let agent = Agent::new(
        ChatModel::new(client),
        Executor::builder(tools).build().unwrap(),
        AgentConfig::default(),
    );
    let (layer, telemetry) = Otlp::new(&endpoint, "telemetry-test").layer().unwrap();
    let subscriber = tracing_subscriber::registry().with(layer).set_default();
    let report = agent.run("Where is order 7?").await.unwrap();
    drop(subscriber);
    drop(telemetry);
    assert_eq!(report.status, RunStatus::Answered);

    // the tool body runs on a task of its own: the event still belongs to the call's span
    let spans = trace_of(&file, &call_id, 4);
    let tool = named(&spans, "execute_tool");
    let events: Vec<&str> = tool[0].raw["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(
        events.contains(&"looking the order up"),
        "the tool's own event is not in its span: {events:?}"
    );
}

#[tokio::test]
async fn a_tool_that_panics_quoting_its_secret_argument_leaves_it_out_of_the_trace() {
    let Some((endpoint, file)) = test_support::otlp_receiver() else {
        return;
    };
    let call_id = unique("call-rotate");
    let secret = format!("sk-otel-{:016x}{:016x}", fastrand_u64(), fastrand_u64());
    let base = model_server(vec![
        calls(
            &[(&call_id, "rotate_token", json!({"token": secret}))],
            (5, 1),
        ),
        answer("The token could not be rotated.", (6, 1)),
    ]);
    let mut tools = ToolSet::new();
    tools.register::<rotate_token>().unwrap();
    let client = HttpClient::new(
        ClientConfig::new(Provider::OpenAiChat, "scripted")
            .with_base_url(format!("{base}/v1"))
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let agent = Agent::new(
        ChatModel::new(client),
        Executor::builder(tools).build().unwrap(),
        AgentConfig::default(),
    );
    let (layer, telemetry) = Otlp::new(&endpoint, "telemetry-test").layer().unwrap();
    let subscriber = tracing_subscriber::registry().with(layer).set_default();
    let report = agent.run("Rotate my token.").await.unwrap();
    drop(subscriber);
    drop(telemetry);
    assert_eq!(report.status, RunStatus::Answered);

    let spans = trace_of(&file, &call_id, 4);
    let tool = named(&spans, "execute_tool");
    assert_eq!(tool[0].attr("error.type"), "TOOL_PANICKED");
    assert_secret_absent(&spans, &secret);
}

/// The `research` binary with `args`, its model at `model`, in a home of its own, with `env`.
fn research(home: &Path, model: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = crate::support::isolated(env!("CARGO_BIN_EXE_research"));
    cmd.args(args)
        .env("TOOLS_LLAMA_URL", model)
        .env("TOOLS_RESEARCH_DB", home.join("research.sqlite"))
        .env("TOOLS_DOI_URL", "http://127.0.0.1:9")
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("the research binary starts");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_research_binary_exports_its_run_only_when_the_endpoint_is_set() {
    let Some((endpoint, file)) = test_support::otlp_receiver() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let create = json!({"title": "Llamas", "body": "Llamas are camelids."});
    let script = |call_id: &str| {
        vec![
            calls(&[(call_id, "create_note", create.clone())], (200, 20)),
            answer("I created the note Llamas.", (210, 21)),
        ]
    };
    let question = ["--yes", "Create a note titled Llamas"];

    // without the variable nothing is exported
    let silent_id = unique("call-silent");
    let (ok, stderr) = research(
        home.path(),
        &model_server(script(&silent_id)),
        &question,
        &[],
    );
    assert!(ok, "{stderr}");

    // with it, the whole run arrives, although the binary ends with `process::exit`
    let call_id = unique("call-note");
    let (ok, stderr) = research(
        home.path(),
        &model_server(script(&call_id)),
        &question,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    assert!(ok, "{stderr}");
    let spans = trace_of(&file, &call_id, 4);
    assert_eq!(spans.len(), 4, "{spans:#?}");
    let run = named(&spans, "invoke_agent");
    assert_eq!(run.len(), 1, "{spans:#?}");
    let run = run[0];
    assert_eq!(run.parent(), "");
    assert_eq!(run.attr("gen_ai.conversation.id"), "research-cli");
    assert_eq!(run.attr("agent.status"), "answered");
    let chats = named(&spans, "chat");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    assert_eq!(chats[0].attr("gen_ai.usage.input_tokens"), 200);
    assert_eq!(chats[1].attr("gen_ai.usage.output_tokens"), 21);
    let tool = named(&spans, "execute_tool");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    assert_eq!(tool[0].name(), "execute_tool create_note");
    assert_eq!(tool[0].attr("tool.decision"), "confirmed");
    for s in chats.iter().chain(&tool) {
        assert_eq!(s.parent(), run.id(), "{s:?}");
    }

    // the first run's spans would have come before the second's: none did
    assert!(
        received(&file)
            .iter()
            .all(|s| s.attr("gen_ai.tool.call.id") != silent_id.as_str()),
        "a run without OTEL_EXPORTER_OTLP_ENDPOINT exported spans"
    );
}
