//! A small notes app served on 127.0.0.1: a read-only tool, a create tool, and a delete and an
//! edit that a person must approve, over a SQLite store in a temporary directory.
#![allow(dead_code)]

pub mod chat;

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State as AxState};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tool_providers::agent::{Agent, AgentConfig, ChatModel};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{Change, Deferred, Executor, ExecutorConfig, Previewer};
use tool_runtime::store::SqliteStore;
use tool_runtime::{ErrorCode, State, ToolError, tool};
use tool_server::{ServerOptions, Tokens};

pub const AGENT: &str = "agent-token-for-tests-0001";
pub const APPROVER: &str = "approver-token-for-tests-0001";
/// The token of MCP hosts that show confirmations to a person.
pub const HOST: &str = "host-token-for-tests-00001";

/// The notes, shared by the tools and the test.
#[derive(Clone, Default)]
pub struct Notes(pub Arc<Mutex<BTreeMap<String, String>>>);

impl Notes {
    pub fn get(&self, id: &str) -> Option<String> {
        self.0.lock().unwrap().get(id).cloned()
    }
}

/// Reads one note.
#[tool(read_only, intent = "Read the note {id}")]
pub fn read_note(
    /// The note's id.
    id: String,
    State(notes): State<Notes>,
) -> Result<String, ToolError> {
    notes
        .get(&id)
        .ok_or_else(|| ToolError::new(ErrorCode::NOT_FOUND, format!("no note {id:?}")))
}

/// Adds a note.
#[tool(create, intent = "Add the note {id}")]
pub fn add_note(
    /// The new note's id.
    id: String,
    /// Its text, 1 to 200 characters.
    #[arg(min_length = 1, max_length = 200)]
    text: String,
    State(notes): State<Notes>,
) -> Result<Value, ToolError> {
    notes.0.lock().unwrap().insert(id.clone(), text);
    Ok(json!({ "added": id }))
}

/// Deletes a note for good.
#[tool(modify, intent = "Delete the note {id}")]
pub fn delete_note(
    /// The note to delete.
    id: String,
    State(notes): State<Notes>,
) -> Result<Value, ToolError> {
    match notes.0.lock().unwrap().remove(&id) {
        Some(_) => Ok(json!({ "deleted": id })),
        None => Err(ToolError::new(
            ErrorCode::NOT_FOUND,
            format!("no note {id:?}"),
        )),
    }
}

/// Rewrites a note's text.
#[tool(modify, intent = "Rewrite the note {id}")]
pub fn edit_note(
    /// The note to rewrite.
    id: String,
    /// Its new text.
    text: String,
    /// Why, for the record.
    reason: Option<String>,
    State(notes): State<Notes>,
) -> Result<Value, ToolError> {
    let _ = reason;
    match notes.0.lock().unwrap().get_mut(&id) {
        Some(old) => {
            *old = text;
            Ok(json!({ "edited": id }))
        }
        None => Err(ToolError::new(
            ErrorCode::NOT_FOUND,
            format!("no note {id:?}"),
        )),
    }
}

/// A running server and what the test needs to talk to it.
pub struct Server {
    pub base: String,
    pub addr: SocketAddr,
    pub notes: Notes,
    pub executor: Executor,
    pub http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// A server whose `/api/v1/chat` talks to the OpenAI-compatible server at `base`.
pub async fn start_with_model(base: &str) -> Server {
    start_full(Some(base), |_| {}, |o| o).await
}

pub async fn start() -> Server {
    start_with(|o| o).await
}

pub async fn start_with(options: impl FnOnce(ServerOptions) -> ServerOptions) -> Server {
    start_with_config(|_| {}, options).await
}

pub async fn start_with_config(
    config: impl FnOnce(&mut ExecutorConfig),
    options: impl FnOnce(ServerOptions) -> ServerOptions,
) -> Server {
    start_full(None, config, options).await
}

pub async fn start_full(
    model: Option<&str>,
    config: impl FnOnce(&mut ExecutorConfig),
    options: impl FnOnce(ServerOptions) -> ServerOptions,
) -> Server {
    let notes = Notes::default();
    notes
        .0
        .lock()
        .unwrap()
        .insert("n1".into(), "buy milk".into());
    let set = tool_runtime::toolset![read_note, add_note, delete_note, edit_note]
        .unwrap()
        .with_state(notes.clone());
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("store.sqlite")).unwrap();
    // the change a delete makes, as the confirmation shows it
    let seen = notes.clone();
    let preview: Previewer = Arc::new(move |args: Value, _cx| {
        let id = args["id"].as_str().unwrap_or_default().to_owned();
        let text = seen.get(&id);
        Box::pin(async move { Ok(Change::new().removed(format!("note {id}"), text)) })
    });
    let seen = notes.clone();
    let mut cfg = ExecutorConfig {
        auto_confirm_create: true,
        ..ExecutorConfig::default()
    };
    config(&mut cfg);
    let executor = Executor::builder(set)
        .preview_with("delete_note", preview)
        .preview::<edit_note>(move |args, _cx| {
            let old = seen.get(&args.id);
            Box::pin(async move { Ok(Change::new().replaced("text", old, args.text)) })
        })
        .config(cfg)
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let mut opts = options(ServerOptions::new(
        Tokens::new(AGENT, APPROVER)
            .unwrap()
            .with_host(HOST)
            .unwrap(),
    ));
    if let Some(base) = model {
        opts = opts.chat(agent(base, executor.clone()));
    }
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tool_server::router(executor.clone(), opts);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Server {
        base: format!("http://{addr}"),
        addr,
        notes,
        executor,
        http: reqwest::Client::new(),
        _dir: dir,
    }
}

/// An agent over `executor` talking to the scripted OpenAI-compatible server at `base`.
pub fn agent(base: &str, executor: Executor) -> Agent {
    let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
        .with_base_url(base)
        .with_retry(RetryPolicy::none());
    let model = ChatModel::new(HttpClient::new(cfg).unwrap());
    Agent::new(model, executor, AgentConfig::default())
}

impl Server {
    /// `method path` with `token` and a JSON body; the status and the JSON answer.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, json)
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, token, Some(body))
            .await
    }

    /// Parks a delete of `id` as a pending operation and returns its id.
    /// Parks an edit of note `id` to `text`; returns the operation id.
    pub async fn park_edit(&self, id: &str, text: &str) -> String {
        let (status, body) = self
            .post(
                "/api/v1/tools/edit_note/call",
                Some(AGENT),
                json!({ "arguments": { "id": id, "text": text } }),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        body["operation_id"].as_str().unwrap().to_owned()
    }

    pub async fn park_delete(&self, id: &str) -> String {
        let (status, body) = self
            .post(
                "/api/v1/tools/delete_note/call",
                Some(AGENT),
                json!({ "arguments": { "id": id } }),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        body["operation_id"].as_str().unwrap().to_owned()
    }
}

/// The error body's shape, the same on every route.
pub fn assert_error(body: &Value, code: &str) {
    let e = &body["error"];
    assert_eq!(e["code"], code, "{body}");
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(e["retryable"].is_boolean(), "{body}");
}

/// A scripted OpenAI-compatible model on 127.0.0.1: answers in order, keeps every request.
#[derive(Clone, Default)]
pub struct Script {
    pub answers: Arc<Mutex<VecDeque<Value>>>,
    pub requests: Arc<Mutex<Vec<Value>>>,
}

async fn model(AxState(s): AxState<Script>, req: Request) -> axum::response::Response {
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 22)
        .await
        .unwrap();
    s.requests
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&bytes).unwrap());
    let next = s.answers.lock().unwrap().pop_front();
    // past the script, or where it says so, the model fails
    let status = match &next {
        None => Some(500),
        Some(answer) => answer["__status"].as_u64().map(|n| n as u16),
    };
    match status {
        Some(code) => {
            let status = axum::http::StatusCode::from_u16(code).unwrap();
            let body =
                json!({"error": {"message": "the scripted model fails", "type": "server_error"}});
            (status, axum::Json(body)).into_response()
        }
        None => axum::Json(next.unwrap_or_default()).into_response(),
    }
}

/// A scripted answer that is an HTTP error with `status`.
pub fn fail(status: u16) -> Value {
    json!({ "__status": status })
}

pub async fn scripted(answers: Vec<Value>) -> (String, Script) {
    let s = Script::default();
    s.answers.lock().unwrap().extend(answers);
    let app = Router::new().fallback(model).with_state(s.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (format!("http://{addr}/v1"), s)
}

pub fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
        "tool_calls":[{"id":id,"type":"function","function":{"name":name,"arguments":args.to_string()}}]}}],
        "usage":{"prompt_tokens":10,"completion_tokens":5}})
}

pub fn answer(text: &str) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":text}}],
        "usage":{"prompt_tokens":10,"completion_tokens":5}})
}
