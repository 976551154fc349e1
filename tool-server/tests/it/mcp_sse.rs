//! MCP's resumable streams and SSE polling at `/mcp`, as a client sees them over raw HTTP: the
//! events answering a `tools/call` carry ids, the first one a priming event (an id, empty data,
//! a `retry`); a server with a hold (`ServerOptions::mcp_poll_after`) ends the stream of a call
//! that outlasts it, and the client gets the answer with `GET` and `Last-Event-ID`, polling
//! again while the call runs. A client whose connection dropped gets the answer the same way,
//! even when it came while nobody listened. An id the server cannot resume from is refused with
//! a JSON-RPC error, not with an empty stream.
//!
//! The tool waits for the test to let it finish, so that what happens before and after its
//! answer does not depend on timing.

use crate::support::{AGENT, APPROVER};

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tool_runtime::executor::{Deferred, Executor};
use tool_runtime::store::MemoryStore;
use tool_runtime::{State, tool};
use tool_server::{ServerOptions, Tokens};

/// Lets the calls of [`wait_for_test`] finish, one per permit.
#[derive(Clone)]
struct Gate(Arc<Semaphore>);

/// Waits until the test lets it finish.
#[tool(read_only)]
async fn wait_for_test(
    /// Which call this is (read-only results are cached per arguments).
    n: u32,
    State(gate): State<Gate>,
) -> String {
    gate.0.acquire().await.unwrap().forget();
    format!("finished {n}")
}

const PROTOCOL: &str = "2025-11-25";

struct Server {
    mcp: String,
    gate: Gate,
    http: reqwest::Client,
}

async fn start(options: impl FnOnce(ServerOptions) -> ServerOptions) -> Server {
    let gate = Gate(Arc::new(Semaphore::new(0)));
    let set = tool_runtime::toolset![wait_for_test]
        .unwrap()
        .with_state(gate.clone());
    let executor = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let opts = options(ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap()));
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let app = tool_server::router(executor, opts);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Server {
        mcp: format!("http://{addr}/mcp"),
        gate,
        http: reqwest::Client::new(),
    }
}

/// One server-sent event.
#[derive(Debug)]
struct Event {
    id: Option<String>,
    retry: Option<u64>,
    data: String,
}

impl Event {
    fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

fn events(text: &str) -> Vec<Event> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .filter_map(|block| {
            let mut event = Event {
                id: None,
                retry: None,
                data: String::new(),
            };
            let mut any = false;
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => event.id = Some(value.to_owned()),
                    "retry" => event.retry = Some(value.parse().unwrap()),
                    "data" => event.data.push_str(value),
                    _ => continue,
                }
                any = true;
            }
            any.then_some(event)
        })
        .collect()
}

/// The answer to request `id` among `events`.
fn answer(events: &[Event], id: u64) -> Option<Value> {
    events
        .iter()
        .filter_map(Event::json)
        .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
}

impl Server {
    fn post(&self, session: Option<&str>, body: Value) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.mcp)
            .bearer_auth(AGENT)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", PROTOCOL);
        }
        req
    }

    /// A new session, initialized.
    async fn session(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let res = self.post(None, init).send().await.unwrap();
        assert_eq!(res.status(), 200);
        let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        res.text().await.unwrap();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let res = self.post(Some(&session), initialized).send().await.unwrap();
        assert_eq!(res.status(), 202);
        session
    }

    fn call(&self, session: &str, id: u64, n: u32) -> reqwest::RequestBuilder {
        self.post(
            Some(session),
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "wait_for_test", "arguments": {"n": n}}}),
        )
    }

    /// Polls as a client does until a resumed stream carries an answer (each one is ended
    /// after the hold without it): the last status and body.
    async fn poll(&self, session: &str, last: &str) -> (u16, String) {
        for _ in 0..100 {
            let (status, body) = self.resume(session, last).await;
            if status != 200 || events(&body).iter().any(|e| e.json().is_some()) {
                return (status, body);
            }
        }
        panic!("no answer after 100 polls");
    }

    /// `GET` with `Last-Event-ID: last`: the status and the whole body.
    async fn resume(&self, session: &str, last: &str) -> (u16, String) {
        let res = self
            .http
            .get(&self.mcp)
            .bearer_auth(AGENT)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", PROTOCOL)
            .header("last-event-id", last)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), read_all(res).await)
    }
}

/// The whole body of `res`: a stream the server should end, within a bound in case it does not.
async fn read_all(res: reqwest::Response) -> String {
    tokio::time::timeout(Duration::from_secs(60), res.text())
        .await
        .expect("the server ends the stream")
        .unwrap()
}

/// The first event is the priming one: an id, no data, a `retry` for the client's reconnection.
fn assert_priming(events: &[Event]) -> String {
    let first = events.first().expect("a priming event");
    assert!(first.data.is_empty(), "{events:?}");
    assert!(first.retry.is_some_and(|ms| ms > 0), "{events:?}");
    first.id.clone().expect("the priming event has an id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_outlasts_the_hold_is_answered_to_the_polling_client() {
    let s = start(|o| o.mcp_poll_after(Duration::from_millis(300))).await;
    let session = s.session().await;

    // the server ends the stream while the tool waits: a priming event and no answer
    let res = s.call(&session, 1, 1).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let kind = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let first = events(&read_all(res).await);
    let last = assert_priming(&first);
    assert!(answer(&first, 1).is_none(), "{first:?}");

    // polling while the tool still waits: the resumed stream is ended again, without an answer
    let (status, body) = s.resume(&session, &last).await;
    assert_eq!(status, 200, "{body}");
    assert!(answer(&events(&body), 1).is_none(), "{body}");

    // once the tool has finished, the next poll gets the answer, which ends the stream
    s.gate.0.add_permits(1);
    let (status, body) = s.poll(&session, &last).await;
    assert_eq!(status, 200, "{body}");
    let got = events(&body);
    let result = answer(&got, 1).unwrap_or_else(|| panic!("no answer in {body:?}"));
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "finished 1");
    assert!(got.iter().all(|e| e.id.is_some()), "{got:?}");

    // the answer's own id resumes to nothing more
    let answered = got.last().unwrap().id.clone().unwrap();
    let (status, body) = s.resume(&session, &answered).await;
    assert_eq!((status, events(&body).len()), (200, 0), "{body}");

    // a second call, answered while its client is away: the answer waits for the poll
    let res = s.call(&session, 2, 2).send().await.unwrap();
    let first = events(&read_all(res).await);
    let last = assert_priming(&first);
    s.gate.0.add_permits(1);
    let (status, body) = s.poll(&session, &last).await;
    assert_eq!(status, 200, "{body}");
    let result = answer(&events(&body), 2).unwrap_or_else(|| panic!("no answer in {body:?}"));
    assert_eq!(result["result"]["content"][0]["text"], "finished 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_hold_the_stream_waits_and_a_dropped_client_resumes() {
    let s = start(|o| o).await;
    let session = s.session().await;

    // the stream stays open until the answer
    let res = s.call(&session, 1, 1).send().await.unwrap();
    s.gate.0.add_permits(1);
    let got = events(&read_all(res).await);
    assert_priming(&got);
    let result = answer(&got, 1).unwrap_or_else(|| panic!("no answer in {got:?}"));
    assert_eq!(result["result"]["content"][0]["text"], "finished 1");

    // a client that leaves after the priming event gets the answer on its return
    let mut res = s.call(&session, 2, 2).send().await.unwrap();
    let mut head = String::new();
    while !head.contains("\n\n") {
        let chunk = res.chunk().await.unwrap().expect("the priming event");
        head.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(res);
    let last = assert_priming(&events(&head));
    s.gate.0.add_permits(1);
    let (status, body) = s.resume(&session, &last).await;
    assert_eq!(status, 200, "{body}");
    let result = answer(&events(&body), 2).unwrap_or_else(|| panic!("no answer in {body:?}"));
    assert_eq!(result["result"]["content"][0]["text"], "finished 2");
}

/// The error a `GET` with an id the server cannot resume from gets.
fn assert_refused(status: u16, body: &str, says: &str) {
    assert_eq!(status, 400, "{body}");
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_id_the_server_cannot_resume_from_is_refused_with_a_reason() {
    let s = start(|o| o.mcp_poll_after(Duration::from_millis(200))).await;
    let session = s.session().await;
    let res = s.call(&session, 1, 1).send().await.unwrap();
    let last = assert_priming(&events(&read_all(res).await));

    let (status, body) = s.resume(&session, "not-an-id").await;
    assert_refused(status, &body, "is not an event id this server sent");
    // a stream this session never had, and an event its stream has not sent
    let request = last.split_once('/').unwrap().1;
    let (status, body) = s.resume(&session, "0/1000").await;
    assert_refused(status, &body, "has no stream with the event `0/1000`");
    let (status, body) = s.resume(&session, &format!("9/{request}")).await;
    assert_refused(status, &body, "send the request again");

    // another session cannot read this one's stream
    let other = s.session().await;
    let (status, body) = s.resume(&other, &last).await;
    assert_refused(status, &body, "has no stream with the event");

    // once the session is deleted, its streams are gone with it
    let res = s
        .http
        .delete(&s.mcp)
        .bearer_auth(AGENT)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    s.gate.0.add_permits(1);
    let (status, body) = s.resume(&session, &last).await;
    assert!(
        !events(&body).iter().any(|e| e.json().is_some()),
        "a deleted session's stream was replayed: {body}"
    );
    assert!(status == 400 || status == 404, "{status} {body}");
}
