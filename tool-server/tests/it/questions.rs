//! A tool's questions and progress over the HTTP API: a call the server runs has the approvals
//! page as its host, so a question the tool asks waits in `GET /api/v1/questions` until the
//! approver answers it (accepted content checked against the form, decline, cancel), or the
//! tool's timeout takes it down; the agent's token can neither see nor answer it. A running
//! call shows in `GET /api/v1/running` and on the `live` stream with its last progress, and
//! leaves both when it ends. The page's tests use the server started here.

use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::executor::Deferred;
use tool_runtime::host::Reply;
use tool_runtime::progress::Progress;
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, Executor, ToolError, tool};
use tool_server::{ServerOptions, Tokens};

use crate::support::{AGENT, APPROVER, assert_error};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Size {
    Small,
    Medium,
    Large,
}

fn medium() -> Size {
    Size::Medium
}

fn one() -> u32 {
    1
}

/// A coffee order.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct Order {
    /// Who it is for.
    name: String,
    /// How big.
    #[serde(default = "medium")]
    size: Size,
    /// How many cups.
    #[serde(default = "one")]
    cups: u32,
    /// With sugar.
    #[serde(default)]
    sugar: bool,
}

/// Asks the person what to order, waiting `wait_ms` at most; `label` only tells calls apart.
#[tool(read_only)]
pub(crate) async fn order(
    cx: &CallContext,
    label: String,
    wait_ms: Option<u64>,
) -> Result<String, ToolError> {
    let _ = label;
    let wait = Duration::from_millis(wait_ms.unwrap_or(60_000));
    Ok(
        match cx.ask_within::<Order>("What would you like?", wait).await? {
            Reply::Accepted(o) => format!(
                "{} cups of {:?} for {} (sugar: {})",
                o.cups, o.size, o.name, o.sugar
            ),
            other => other.action().to_owned(),
        },
    )
}

/// Whether to go on.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct GoOn {
    /// Copy the rest.
    go_on: bool,
}

/// Reports how far it is, then asks whether to go on: it runs until the person answers.
#[tool(read_only)]
pub(crate) async fn sync_files(cx: &CallContext, label: String) -> Result<String, ToolError> {
    let _ = label;
    cx.report_progress(Progress::new(3.0).of(10.0).message("copying <b>photos</b>"));
    Ok(match cx.ask::<GoOn>("Copied 3 of 10: go on?").await? {
        Reply::Accepted(GoOn { go_on: true }) => "synced 10 of 10".to_owned(),
        Reply::Accepted(_) => "stopped at 3 of 10".to_owned(),
        other => other.action().to_owned(),
    })
}

/// Ships an order once a person approved it, asking them what goes in the box.
#[tool(modify, intent = "Ship the order {label}")]
pub(crate) async fn ship_order(cx: &CallContext, label: String) -> Result<String, ToolError> {
    Ok(match cx.ask::<Order>("What goes in the box?").await? {
        Reply::Accepted(o) => format!("shipped {label}: {} cups for {}", o.cups, o.name),
        other => other.action().to_owned(),
    })
}

/// A server of the three tools, with the approvals page.
pub(crate) struct Asking {
    pub(crate) base: String,
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) http: reqwest::Client,
}

pub(crate) async fn start(options: impl FnOnce(&ServerOptions)) -> Asking {
    start_full(None, options).await
}

/// [`start`], with a chat agent talking to the OpenAI-compatible server at `model` when given.
pub(crate) async fn start_full(
    model: Option<&str>,
    options: impl FnOnce(&ServerOptions),
) -> Asking {
    let set = tool_runtime::toolset![order, sync_files, ship_order].unwrap();
    let executor = Executor::builder(set)
        .store(std::sync::Arc::new(MemoryStore::new()))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let mut opts = ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap());
    options(&opts);
    if let Some(base) = model {
        opts = opts.chat(crate::support::agent(base, executor.clone()));
    }
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tool_server::router(executor, opts);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Asking {
        base: format!("http://{addr}"),
        addr,
        http: reqwest::Client::new(),
    }
}

impl Asking {
    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn get(&self, path: &str, token: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, token, None).await
    }

    pub(crate) async fn post(&self, path: &str, token: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, token, Some(body))
            .await
    }

    /// Calls `tool` with the agent's token on a task of its own: it answers once the tool ends.
    pub(crate) fn call(&self, tool: &str, args: Value) -> tokio::task::JoinHandle<(u16, Value)> {
        let (http, url) = (
            self.http.clone(),
            format!("{}/api/v1/tools/{tool}/call", self.base),
        );
        tokio::spawn(async move {
            let res = http
                .post(url)
                .bearer_auth(AGENT)
                .json(&json!({ "arguments": args }))
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json().await.unwrap())
        })
    }

    /// Waits for the open question of the call to `tool` whose arguments are being run.
    pub(crate) async fn question(&self, tool: &str) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let (status, body) = self.get("/api/v1/questions", APPROVER).await;
            assert_eq!(status, 200, "{body}");
            if let Some(q) = body["questions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|q| q["tool"] == tool)
            {
                return q.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "{tool} never asked");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn questions(&self) -> Vec<Value> {
        let (_, body) = self.get("/api/v1/questions", APPROVER).await;
        body["questions"].as_array().unwrap().clone()
    }
}

pub(crate) fn answer_path(q: &Value) -> String {
    format!("/api/v1/questions/{}/answer", q["id"].as_str().unwrap())
}

#[tokio::test]
async fn a_tools_question_is_answered_by_the_approver_and_the_answer_reaches_the_tool() {
    let s = start(|_| {}).await;
    let call = s.call("order", json!({"label": "first"}));
    let q = s.question("order").await;
    assert_eq!(q["message"], "What would you like?");
    assert!(q["call_id"].as_str().unwrap().starts_with("http-"));
    let schema = &q["schema"];
    assert_eq!(
        schema["properties"]["size"]["enum"],
        json!(["small", "medium", "large"])
    );
    assert_eq!(schema["properties"]["size"]["default"], "medium");
    assert_eq!(schema["properties"]["cups"]["default"], 1);
    assert_eq!(schema["required"], json!(["name"]));
    let asked = q["asked_at"].as_u64().unwrap();
    let expires = q["expires_at"].as_u64().unwrap();
    assert!((59_000..=61_000).contains(&(expires - asked)), "{q}");

    // the model's credential sees no question and answers none
    let (status, body) = s.get("/api/v1/questions", AGENT).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = s
        .post(
            &answer_path(&q),
            AGENT,
            json!({"action": "accept", "content": {"name": "Mallory"}}),
        )
        .await;
    assert_eq!(status, 403, "{body}");

    // an answer that does not fit the form is refused field by field, and the question stays
    let (status, body) = s
        .post(
            &answer_path(&q),
            APPROVER,
            json!({"action": "accept", "content": {"size": "huge", "cups": -1, "tip": 5}}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_error(&body, "INVALID_ANSWER");
    let mut pointers: Vec<&str> = body["error"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pointer"].as_str().unwrap())
        .collect();
    pointers.sort();
    assert_eq!(pointers, ["", "/cups", "/size", "/tip"], "{body}");
    assert_eq!(s.questions().await.len(), 1);
    assert!(!call.is_finished());

    let (status, body) = s
        .post(
            &answer_path(&q),
            APPROVER,
            json!({"action": "accept", "content": {"name": "Ada", "size": "large", "cups": 2}}),
        )
        .await;
    assert_eq!((status, &body["action"]), (200, &json!("accept")), "{body}");
    let (status, exec) = call.await.unwrap();
    assert_eq!(status, 200, "{exec}");
    assert_eq!(exec["status"], "success");
    assert_eq!(exec["value"], "2 cups of Large for Ada (sugar: false)");
    assert!(s.questions().await.is_empty());

    // answered once: the id is gone
    let (status, body) = s
        .post(&answer_path(&q), APPROVER, json!({"action": "decline"}))
        .await;
    assert_eq!(status, 404, "{body}");
    assert_error(&body, "NOT_FOUND");
    let (status, _) = s
        .post(
            "/api/v1/questions/q-nothing/answer",
            APPROVER,
            json!({"action": "cancel"}),
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_declined_cancelled_or_unanswered_question_leaves_the_tool_its_reply() {
    let s = start(|_| {}).await;
    for action in ["decline", "cancel"] {
        let call = s.call("order", json!({"label": action}));
        let q = s.question("order").await;
        let (status, body) = s
            .post(&answer_path(&q), APPROVER, json!({"action": action}))
            .await;
        assert_eq!(status, 200, "{body}");
        let (_, exec) = call.await.unwrap();
        let want = if action == "decline" {
            "declined"
        } else {
            "cancelled"
        };
        assert_eq!(exec["value"], want, "{exec}");
    }

    // an action the API does not know is refused before anything is answered
    let call = s.call("order", json!({"label": "timeout", "wait_ms": 1500}));
    let q = s.question("order").await;
    let (status, _) = s
        .post(&answer_path(&q), APPROVER, json!({"action": "approve"}))
        .await;
    assert_eq!(status, 422);
    // nobody answers: the tool gets its timeout, and the question is taken down
    let (_, exec) = call.await.unwrap();
    assert_eq!(exec["value"], "timed_out", "{exec}");
    assert!(s.questions().await.is_empty());
    let (status, _) = s
        .post(
            &answer_path(&q),
            APPROVER,
            json!({"action": "accept", "content": {"name": "x"}}),
        )
        .await;
    assert_eq!(status, 404);
}

/// The next `live` event's data on an open stream.
async fn next_live<B: AsRef<[u8]>>(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<B>> + Unpin),
    buffer: &mut String,
) -> Value {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if !block.contains("event: live") {
                continue;
            }
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            return serde_json::from_str(&data).unwrap();
        }
        let chunk = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("a live event within 20 s")
            .expect("the stream stays open")
            .unwrap();
        buffer.push_str(&String::from_utf8_lossy(chunk.as_ref()));
    }
}

#[tokio::test]
async fn a_running_call_shows_its_progress_until_it_ends() {
    let s = start(|_| {}).await;
    let res = s
        .http
        .get(format!("{}/api/v1/live", s.base))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut stream = res.bytes_stream();
    let mut buffer = String::new();
    let first = next_live(&mut stream, &mut buffer).await;
    assert_eq!(first, json!({"questions": [], "running": []}));
    let (status, _) = s.get("/api/v1/live", AGENT).await;
    assert_eq!(status, 403);
    let (status, _) = s.get("/api/v1/running", AGENT).await;
    assert_eq!(status, 403);

    let call = s.call("sync_files", json!({"label": "progress"}));
    let q = s.question("sync_files").await;
    let (_, body) = s.get("/api/v1/running", APPROVER).await;
    let running = body["running"].as_array().unwrap();
    assert_eq!(running.len(), 1, "{body}");
    assert_eq!(running[0]["tool"], "sync_files");
    assert_eq!(running[0]["call_id"], q["call_id"]);
    assert_eq!(
        (
            &running[0]["progress"],
            &running[0]["total"],
            &running[0]["message"]
        ),
        (&json!(3.0), &json!(10.0), &json!("copying <b>photos</b>"))
    );
    // the stream shows the same, without being asked again
    let view = loop {
        let view = next_live(&mut stream, &mut buffer).await;
        if view["questions"].as_array().unwrap().len() == 1
            && view["running"][0]["progress"] == json!(3.0)
        {
            break view;
        }
    };
    assert_eq!(view["questions"][0]["id"], q["id"]);

    s.post(
        &answer_path(&q),
        APPROVER,
        json!({"action": "accept", "content": {"go_on": true}}),
    )
    .await;
    let (_, exec) = call.await.unwrap();
    assert_eq!(exec["value"], "synced 10 of 10");
    let (_, body) = s.get("/api/v1/running", APPROVER).await;
    assert_eq!(body["running"], json!([]));
    loop {
        let view = next_live(&mut stream, &mut buffer).await;
        if view == json!({"questions": [], "running": []}) {
            break;
        }
    }
}

#[tokio::test]
async fn the_question_routes_are_in_the_openapi_document() {
    let doc = serde_json::to_value(tool_server::openapi()).unwrap();
    for path in [
        "/api/v1/questions",
        "/api/v1/questions/{id}/answer",
        "/api/v1/running",
        "/api/v1/live",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is not documented");
    }
    let answer = &doc["paths"]["/api/v1/questions/{id}/answer"]["post"];
    for status in ["200", "403", "404", "422"] {
        assert!(answer["responses"][status].is_object(), "no {status}");
    }
}
