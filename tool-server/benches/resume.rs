//! Resume latency after an approval: the time from `POST /api/v1/pending/{id}/approve` of a
//! chat run's waiting call to the model's next request (the run going on with the call's
//! result), over loopback, with the SQLite store the server uses by default.
//!
//! - `resume/approved_here`: the approval goes to the server whose task waits for the run; the
//!   approval route wakes it.
//! - `resume/approved_on_another_replica`: the approval goes to a second server on the same
//!   store (as a replica in another process would); the waiting run finds it at its next look
//!   at the store, one poll interval (300 ms) apart.
//!
//! Each sample starts a run that suspends on a delete (the model, scripted on 127.0.0.1, asks
//! for it), then times the approval's request and the wait for the model's next request, and
//! lets the run answer before the next sample. Includes running the tool, which the approval
//! does before it answers.
//!
//! Each variant: a warm-up of `WARM_UP` samples, then `SAMPLES` samples; printed: min, median,
//! mean, p90 and max, and the ratios of the medians to the poll interval and to each other.
//!
//! cargo bench -p tool-server --bench resume

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State as AxState};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tool_providers::agent::{Agent, AgentConfig, ChatModel};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig};
use tool_runtime::store::{SqliteStore, Store};
use tool_runtime::{ToolError, tool};
use tool_server::{ServerOptions, Tokens};

/// Samples per variant before any measurement.
const WARM_UP: usize = 5;
/// Samples per variant.
const SAMPLES: usize = 60;
/// The waiting run's poll interval (the server's `POLL`).
const POLL: Duration = Duration::from_millis(300);

const AGENT: &str = "agent-token-for-the-bench-0001";
const APPROVER: &str = "approver-token-for-the-bench-0001";

/// Deletes a note (nothing is kept: the bench measures what is around the call).
#[tool(modify, intent = "Delete the note {id}")]
pub fn delete_note(
    /// The note to delete.
    id: String,
) -> Result<Value, ToolError> {
    Ok(json!({ "deleted": id }))
}

/// The scripted model: asks for the delete, then answers once the conversation holds its
/// result; every request's arrival time goes to the bench.
async fn model(
    AxState(seen): AxState<mpsc::UnboundedSender<Instant>>,
    req: Request,
) -> axum::Json<Value> {
    let at = Instant::now();
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 22)
        .await
        .unwrap();
    let _ = seen.send(at);
    let request: Value = serde_json::from_slice(&bytes).unwrap();
    let has_result = request["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    let message = if has_result {
        json!({"role": "assistant", "content": "Deleted."})
    } else {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "delete_note", "arguments": "{\"id\":\"n1\"}"}}]})
    };
    let finish = if has_result { "stop" } else { "tool_calls" };
    axum::Json(
        json!({"choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
    )
}

/// A server on 127.0.0.1 over `store`, with the agent when `model` is given; its base URL.
async fn serve(store: Arc<dyn Store>, model: Option<&str>) -> String {
    let executor = Executor::builder(tool_runtime::toolset![delete_note].unwrap())
        .config(ExecutorConfig::default())
        .store(store)
        .confirmation(Deferred)
        .build()
        .unwrap();
    let mut opts = ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap());
    if let Some(base) = model {
        let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
            .with_base_url(base)
            .with_retry(RetryPolicy::none());
        let model = ChatModel::new(HttpClient::new(cfg).unwrap());
        opts = opts.chat(Agent::new(model, executor.clone(), AgentConfig::default()));
    }
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tool_server::router(executor, opts);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

struct Bench {
    http: reqwest::Client,
    /// The server with the agent.
    here: String,
    /// Another server on the same store, without an agent.
    replica: String,
    requests: mpsc::UnboundedReceiver<Instant>,
}

impl Bench {
    /// One sample: a run suspended, approved through `approver`; the time from the approval's
    /// request to the model's next request.
    async fn sample(&mut self, approver: &str) -> Duration {
        let res = self
            .http
            .post(format!("{}/api/v1/chat", self.here))
            .bearer_auth(AGENT)
            .json(&json!({"messages": [{"role": "user", "content": "delete note n1"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 202);
        let body: Value = res.json().await.unwrap();
        let op = body["pending"][0]["operation_id"].as_str().unwrap();
        let run_id = body["run_id"].as_str().unwrap();
        while self.requests.try_recv().is_ok() {}
        let start = Instant::now();
        let res = self
            .http
            .post(format!("{approver}/api/v1/pending/{op}/approve"))
            .bearer_auth(APPROVER)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let next = self.requests.recv().await.unwrap();
        let took = next.duration_since(start);
        // the run answers before the next sample starts
        loop {
            let run: Value = self
                .http
                .get(format!("{}/api/v1/chat/{run_id}", self.here))
                .bearer_auth(AGENT)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if run["status"] == "answered" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        took
    }
}

/// min, median, mean, p90, max of `samples`, in ms.
fn stats(samples: &mut [Duration]) -> [f64; 5] {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let n = samples.len();
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / n as f64;
    [
        ms(samples[0]),
        ms(samples[n / 2]),
        mean,
        ms(samples[n * 9 / 10]),
        ms(samples[n - 1]),
    ]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut bench = runtime.block_on(async {
        let (tx, requests) = mpsc::unbounded_channel();
        let app = Router::new().fallback(model).with_state(tx);
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let model_url = format!("http://{}/v1", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(dir.path().join("store.sqlite")).unwrap());
        Bench {
            http: reqwest::Client::new(),
            here: serve(store.clone(), Some(&model_url)).await,
            replica: serve(store, None).await,
            requests,
        }
    });
    let mut medians = Vec::new();
    println!("resume latency after an approval, ms (min / median / mean / p90 / max of {SAMPLES})");
    for (name, here) in [
        ("approved here (woken)", true),
        ("approved on another replica (poll)", false),
    ] {
        let approver = if here {
            bench.here.clone()
        } else {
            bench.replica.clone()
        };
        for _ in 0..WARM_UP {
            runtime.block_on(bench.sample(&approver));
        }
        let mut samples: Vec<Duration> = (0..SAMPLES)
            .map(|_| runtime.block_on(bench.sample(&approver)))
            .collect();
        let [min, median, mean, p90, max] = stats(&mut samples);
        println!(
            "{name:<36} {min:8.2} {median:8.2} {mean:8.2} {p90:8.2} {max:8.2}   median / poll interval: {:.3}x",
            median / (POLL.as_secs_f64() * 1e3)
        );
        medians.push(median);
    }
    println!(
        "approved here / approved on another replica (medians): {:.3}x",
        medians[0] / medians[1]
    );
}
