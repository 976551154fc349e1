//! MCP at `/mcp` as the official SDKs' clients speak it: the Python SDK's high-level `Client` in
//! its default mode (it probes `server/discover` and speaks 2026-07-28, without a session) and
//! over the `initialize` handshake, and the TypeScript SDK's client in both modes. Every outcome
//! of a call reaches each of them in the shape its revision defines: a run, a tool's error,
//! invalid arguments, a timeout, a call the client gave up, a rate limit, a call parked for the
//! approvals page, and a confirmation a host's person declined, edited or accepted (asked with
//! `InputRequiredResult` on 2026-07-28, with `elicitation/create` before it).
//!
//! The `requestState` of a confirmation asked in rounds is the server's, sealed: the agent's
//! token cannot answer with it, and a state altered, made up, or carried to other arguments is
//! refused; an answer decides the operation once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::executor::{ActivityQuery, Deferred, Executor, ExecutorConfig, Window};
use tool_runtime::store::SqliteStore;
use tool_runtime::{State, tool};
use tool_server::{ServerOptions, Tokens};

use test_support::mcp::{Mode, asked, calls, clients, error_code, text_of};

use crate::support::{AGENT, APPROVER, HOST, Notes, delete_note, read_note};

/// How many waits ran to their end.
#[derive(Clone, Default)]
struct Finished(Arc<AtomicUsize>);

/// Waits, then says so.
#[tool(read_only, intent = "Wait {ms} ms", timeout_ms = 1500)]
async fn wait(
    /// How long.
    ms: u64,
    State(finished): State<Finished>,
) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    finished.0.fetch_add(1, Ordering::SeqCst);
    format!("waited {ms} ms")
}

/// What archiving did: a result with an output schema.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Archived {
    /// The note archived.
    archived: String,
}

/// Archives a note (it leaves the list).
#[tool(modify, intent = "Archive the note {id}")]
fn archive_note(
    /// The note.
    id: String,
    State(notes): State<Notes>,
) -> Result<Archived, tool_runtime::ToolError> {
    match notes.0.lock().unwrap().remove(&id) {
        Some(_) => Ok(Archived { archived: id }),
        None => Err(tool_runtime::ToolError::new(
            tool_runtime::ErrorCode::NOT_FOUND,
            format!("no note {id:?}"),
        )),
    }
}

/// Answers pong, once a minute.
#[tool(read_only, intent = "Ping")]
fn ping() -> &'static str {
    "pong"
}

pub(crate) struct Served {
    pub(crate) base: String,
    pub(crate) notes: Notes,
    finished: Finished,
    pub(crate) executor: Executor,
    _dir: tempfile::TempDir,
}

pub(crate) async fn serve(options: impl FnOnce(ServerOptions) -> ServerOptions) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite");
    serve_on(store, APPROVER, dir, options).await
}

/// A server on the store at `store`, its approver's token `approver`.
async fn serve_on(
    store: std::path::PathBuf,
    approver: &str,
    dir: tempfile::TempDir,
    options: impl FnOnce(ServerOptions) -> ServerOptions,
) -> Served {
    let (notes, finished) = (Notes::default(), Finished::default());
    for (id, text) in [("n1", "buy milk"), ("n2", "call mum")] {
        notes.0.lock().unwrap().insert(id.into(), text.into());
    }
    let set = tool_runtime::toolset![read_note, delete_note, wait, ping, archive_note]
        .unwrap()
        .with_state(notes.clone())
        .with_state(finished.clone());
    let mut config = ExecutorConfig::default();
    config
        .rate_limits
        .tools
        .insert("ping".into(), Window::per_minute(1));
    config.cache.enabled = false;
    // a timeout is reported at once, not retried
    config.retry.max_attempts = 1;
    let executor = Executor::builder(set)
        .config(config)
        .store(Arc::new(SqliteStore::open(store).unwrap()))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let tokens = Tokens::new(AGENT, approver)
        .unwrap()
        .with_host(HOST)
        .unwrap();
    let opts = options(ServerOptions::new(tokens));
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = tool_server::router(executor.clone(), opts);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Served {
        base,
        notes,
        finished,
        executor,
        _dir: dir,
    }
}

fn http(base: &str, token: &str) -> Vec<String> {
    ["--http", &format!("{base}/mcp"), "--token", token]
        .map(str::to_owned)
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outcome_reaches_each_official_client_over_http() {
    for client in clients() {
        let (sdk, mode) = (client.sdk, client.mode);
        let s = serve(|o| o).await;
        let agent = http(&s.base, AGENT);
        let steps = [
            "list",
            r#"read_note={"id": "n1"}"#,
            r#"read_note={"id": "nope"}"#,
            r#"read_note={"id": 7}"#,
            r#"delete_note={"id": "n1"}"#,
            r#"wait={"ms": 5000}"#,
            r#"cancel:0.4:wait={"ms": 1200}"#,
            "ping={}",
            "ping={}",
            r#"read_note={"id": "n2"}"#,
        ];
        let c = client.clone();
        let lines = tokio::task::spawn_blocking(move || c.run(&agent, &[], "accept", &steps))
            .await
            .unwrap();
        client.assert_protocol(&lines);
        let tools = lines[1]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 5, "{sdk:?} {mode:?}");
        let steps = calls(&lines);
        let at = |i: usize| steps[i];
        let context = format!("{sdk:?} {mode:?}: {lines:?}");
        // ran
        assert_eq!(at(0)["result"]["isError"], false, "{context}");
        assert_eq!(text_of(at(0)), json!("buy milk"), "{context}");
        // the tool's own error, and arguments that do not fit the schema
        assert_eq!(error_code(at(1)), "NOT_FOUND", "{context}");
        assert_eq!(error_code(at(2)), "INVALID_ARGUMENTS", "{context}");
        // the agent's token is never asked, whatever its client answers: parked for a person
        assert_eq!(text_of(at(3))["status"], "pending", "{context}");
        assert!(lines.iter().all(|l| l.get("elicitation").is_none()));
        assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
        // past the tool's timeout
        assert_eq!(error_code(at(4)), "TIMEOUT", "{context}");
        // given up by the client: the client gets its answer back
        assert_eq!(at(5)["cancelled"], true, "{context}");
        // the rate limit: the second call in the minute is refused
        assert_eq!(text_of(at(6)), json!("pong"), "{context}");
        assert_eq!(error_code(at(7)), "RATE_LIMITED", "{context}");
        // and the client goes on after all of them
        assert_eq!(text_of(at(8)), json!("call mum"), "{context}");
        // neither the timed-out nor the abandoned wait ran to its end
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(s.finished.0.load(Ordering::SeqCst), 0, "{context}");
        assert_eq!(s.executor.pending().unwrap().len(), 1, "{context}");

        // a host's person decides, in rounds on 2026-07-28 and by elicitation before it
        let host = http(&s.base, HOST);
        let via = match mode {
            Mode::Auto => "via input_required",
            Mode::Legacy => "via elicitation",
        };
        for (answer, step) in [
            ("decline", r#"delete_note={"id": "n1"}"#),
            (r#"edit:{"id": "n2"}"#, r#"delete_note={"id": "n1"}"#),
            ("accept", r#"delete_note={"id": "n1"}"#),
        ] {
            let (c, host) = (client.clone(), host.clone());
            let lines = tokio::task::spawn_blocking(move || c.run(&host, &[], answer, &[step]))
                .await
                .unwrap();
            client.assert_protocol(&lines);
            let asked = asked(&lines);
            assert_eq!(asked.len(), 1, "{answer} {context}: {lines:?}");
            assert!(
                asked[0].contains("Delete the note \u{201c}n1\u{201d}"),
                "{}",
                asked[0]
            );
            let result = calls(&lines)[0];
            assert_eq!(result["result"]["isError"], false, "{answer}: {lines:?}");
            match answer {
                "decline" => {
                    assert!(text_of(result).to_string().contains("declined"), "{result}");
                    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
                }
                "accept" => {
                    assert_eq!(text_of(result)["deleted"], "n1", "{result}");
                    assert_eq!(s.notes.get("n1"), None);
                }
                _ => {
                    assert_eq!(text_of(result)["deleted"], "n2", "{result}");
                    assert_eq!(s.notes.get("n2"), None);
                }
            }
        }
        let feed = s
            .executor
            .activity(&ActivityQuery {
                tool: Some("delete_note".into()),
                ..Default::default()
            })
            .unwrap();
        let decided: Vec<String> = feed
            .iter()
            .filter(|r| r.decided_by == tool_runtime::executor::Decider::Host)
            .map(|r| {
                let via_ok = r.decided_via.as_deref().unwrap_or_default().ends_with(via);
                format!("{:?}/{via_ok}", r.decision)
            })
            .collect();
        assert_eq!(
            decided,
            ["Confirmed/true", "Edited/true", "Denied/true"],
            "newest first, {context}"
        );
        // the agent's operation still waits for the page
        assert_eq!(s.executor.pending().unwrap().len(), 1, "{context}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_with_an_output_schema_answers_every_outcome_in_it() {
    for client in clients() {
        let (sdk, mode) = (client.sdk, client.mode);
        let s = serve(|o| o).await;
        let c = client.clone();
        let agent = http(&s.base, AGENT);
        let lines = tokio::task::spawn_blocking(move || {
            c.run(
                &agent,
                &[],
                "accept",
                &[
                    "list",
                    r#"archive_note={"id": "n1"}"#,
                    r#"archive_note={"id": 7}"#,
                ],
            )
        })
        .await
        .unwrap();
        let context = format!("{sdk:?} {mode:?}: {lines:?}");
        let tools = lines[1]["tools"].as_array().unwrap();
        let archive = tools.iter().find(|t| t["name"] == "archive_note").unwrap();
        assert_eq!(archive["outputSchema"]["type"], "object", "{context}");
        let steps = calls(&lines);
        // parked for a person: not an error, and in the declared schema's "not run" form
        let pending = &steps[0]["result"];
        assert_eq!(pending["isError"], false, "{context}");
        assert_eq!(
            pending["structuredContent"]["status"], "pending",
            "{context}"
        );
        let op = &s.executor.pending().unwrap()[0].id;
        assert_eq!(
            pending["structuredContent"]["operation_id"], *op,
            "{context}"
        );
        assert_eq!(text_of(steps[0])["status"], "pending", "{context}");
        assert_eq!(error_code(steps[1]), "INVALID_ARGUMENTS", "{context}");

        let host = http(&s.base, HOST);
        for (answer, id) in [("decline", "n1"), ("accept", "n1"), ("accept", "gone")] {
            let (c, host) = (client.clone(), host.clone());
            let step = format!(r#"archive_note={{"id": "{id}"}}"#);
            let lines =
                tokio::task::spawn_blocking(move || c.run(&host, &[], answer, &[step.as_str()]))
                    .await
                    .unwrap();
            let step = calls(&lines)[0];
            assert!(
                step.get("raised").is_none(),
                "{answer} {context}: {lines:?}"
            );
            let result = &step["result"];
            match (answer, id) {
                ("decline", _) => {
                    // the person's choice, not the tool's failure
                    assert_eq!(result["isError"], false, "{lines:?}");
                    assert_eq!(result["structuredContent"]["status"], "denied", "{lines:?}");
                    assert_eq!(
                        result["structuredContent"]["decided_by"], "host",
                        "{lines:?}"
                    );
                    assert_eq!(text_of(step)["status"], "denied", "{lines:?}");
                    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
                }
                (_, "n1") => {
                    assert_eq!(result["isError"], false, "{lines:?}");
                    assert_eq!(result["structuredContent"], json!({"archived": "n1"}));
                    assert_eq!(s.notes.get("n1"), None);
                }
                _ => assert_eq!(error_code(step), "NOT_FOUND", "{lines:?}"),
            }
        }
    }
}

/// A 2026-07-28 request, as the SDKs send it: the revision's `_meta` (a client that can show
/// forms) and headers.
async fn post_modern(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    id: u64,
    method: &str,
    params: Value,
) -> (u16, Option<String>, Value) {
    let forms = json!({"elicitation": {"form": {}}});
    post_modern_as(http, base, token, id, method, params, forms).await
}

/// [`post_modern`] for a client declaring `capabilities` in the request.
async fn post_modern_as(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    id: u64,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> (u16, Option<String>, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let mut req = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    if let Some(name) = params["name"].as_str() {
        req = req.header("mcp-name", name);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let session = res
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = res.text().await.unwrap();
    // a JSON body, or the one `data:` event of an SSE stream
    let body = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
            .unwrap_or_else(|| panic!("no answer in {text:?}"))
    });
    (status, session, body)
}

#[tokio::test]
async fn the_request_state_is_the_servers_and_decides_its_operation_once() {
    let s = serve(|o| o).await;
    let http = reqwest::Client::new();
    let call = |args: Value| json!({"name": "delete_note", "arguments": args});
    let (status, session, first) = post_modern(
        &http,
        &s.base,
        HOST,
        1,
        "tools/call",
        call(json!({"id": "n1"})),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(session, None, "2026-07-28 opens no session");
    let asked = &first["result"];
    assert_eq!(asked["resultType"], "input_required", "{first}");
    let question = &asked["inputRequests"]["confirm"];
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be undone")
    );
    let state = asked["requestState"].as_str().unwrap().to_owned();
    assert_eq!(s.executor.pending().unwrap().len(), 1, "parked while asked");
    let accept = json!({"confirm": {"action": "accept", "content": {}}});
    let retry = |args: Value, state: &str| {
        let mut p = call(args);
        p["inputResponses"] = accept.clone();
        p["requestState"] = json!(state);
        p
    };

    // the agent's token holding the host's state: not looked at
    let (_, _, answer) = post_modern(
        &http,
        &s.base,
        AGENT,
        2,
        "tools/call",
        retry(json!({"id": "n1"}), &state),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // the state carried to other arguments, altered, or made up
    let mut altered = state.clone().into_bytes();
    let i = altered.len() / 2;
    altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for (args, state) in [
        (json!({"id": "n2"}), state.as_str()),
        (json!({"id": "n1"}), altered.as_str()),
        (json!({"id": "n1"}), "rs1.eyJvcCI6Im9wLTEifQ.AAAA"),
    ] {
        let (_, _, answer) =
            post_modern(&http, &s.base, HOST, 3, "tools/call", retry(args, state)).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("requestState"),
            "{answer}"
        );
    }
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    assert_eq!(s.notes.get("n2").as_deref(), Some("call mum"));

    // the host's answer, once
    let (_, _, done) = post_modern(
        &http,
        &s.base,
        HOST,
        4,
        "tools/call",
        retry(json!({"id": "n1"}), &state),
    )
    .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(s.notes.get("n1"), None);
    let (_, _, again) = post_modern(
        &http,
        &s.base,
        HOST,
        5,
        "tools/call",
        retry(json!({"id": "n1"}), &state),
    )
    .await;
    assert_eq!(again["result"]["isError"], true, "{again}");
    assert!(
        again["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ALREADY_RESOLVED"),
        "{again}"
    );
    let feed = s.executor.activity(&ActivityQuery::default()).unwrap();
    let record = &feed[0];
    assert_eq!(
        record.decided_by,
        tool_runtime::executor::Decider::Host,
        "{record:?}"
    );
    assert_eq!(
        record.decided_via.as_deref(),
        Some("MCP host \"raw\" via input_required")
    );
}

/// Each request of 2026-07-28 is read on its own: the capabilities in its `_meta` decide
/// whether its client is asked, and its standard headers must agree with its body.
#[tokio::test]
async fn each_request_is_read_with_its_own_metadata_and_headers() {
    let s = serve(|o| o).await;
    let http = reqwest::Client::new();
    let delete = json!({"name": "delete_note", "arguments": {"id": "n1"}});
    // the tool list with the revision's caching hints, for this client only
    let (_, _, listed) = post_modern(&http, &s.base, AGENT, 7, "tools/list", json!({})).await;
    assert_eq!(listed["result"]["ttlMs"], 60_000, "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    // a host whose client cannot show a form this time: parked, not asked
    let (_, _, parked) = post_modern_as(
        &http,
        &s.base,
        HOST,
        1,
        "tools/call",
        delete.clone(),
        json!({}),
    )
    .await;
    assert_eq!(parked["result"]["resultType"], "complete", "{parked}");
    let text: Value =
        serde_json::from_str(parked["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["status"], "pending", "{parked}");
    // the same host with a form-capable client: asked
    let (_, _, asked) = post_modern(&http, &s.base, HOST, 2, "tools/call", delete).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    // a tool name in the header that is not the body's
    let res = http
        .post(format!("{}/mcp", s.base))
        .bearer_auth(AGENT)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "delete_note")
        .json(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "read_note", "arguments": {"id": "n1"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap().to_lowercase();
    assert!(message.contains("mcp-name"), "{body}");
}

/// Requests of 2026-07-28 hold no session, so the bounds on sessions do not turn them away.
#[tokio::test]
async fn sessionless_requests_are_served_when_the_sessions_are_full() {
    let s = serve(|o| o.max_mcp_sessions(2)).await;
    let http = reqwest::Client::new();
    let init = |id: u64| {
        http.post(format!("{}/mcp", s.base))
            .bearer_auth(AGENT)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "legacy", "version": "1"}}}),
            )
            .send()
    };
    assert_eq!(init(1).await.unwrap().status(), 200);
    // the agent's one session of the two is taken
    assert_eq!(init(2).await.unwrap().status(), 429);
    for id in 3..6 {
        let (status, session, body) = post_modern(
            &http,
            &s.base,
            AGENT,
            id,
            "tools/call",
            json!({"name": "read_note", "arguments": {"id": "n1"}}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(session, None);
        assert_eq!(body["result"]["resultType"], "complete", "{body}");
        assert_eq!(body["result"]["isError"], false, "{body}");
    }
}

/// Replicas configured alike take each other's rounds: the question asked through one is
/// answered through the other, on the store they share. A server with another approver's token
/// has another key, and does not take the state.
#[tokio::test]
async fn an_answer_is_taken_by_any_replica_with_the_same_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("shared.sqlite");
    let a = serve_on(store.clone(), APPROVER, tempfile::tempdir().unwrap(), |o| o).await;
    let b = serve_on(store.clone(), APPROVER, tempfile::tempdir().unwrap(), |o| o).await;
    let other = serve_on(
        store,
        "another-approver-token-0001",
        tempfile::tempdir().unwrap(),
        |o| o,
    )
    .await;
    let http = reqwest::Client::new();
    let delete = json!({"name": "delete_note", "arguments": {"id": "n1"}});
    let (_, _, asked) = post_modern(&http, &a.base, HOST, 1, "tools/call", delete.clone()).await;
    let state = asked["result"]["requestState"].as_str().unwrap();
    let mut retry = delete;
    retry["inputResponses"] = json!({"confirm": {"action": "accept", "content": {}}});
    retry["requestState"] = json!(state);
    let (_, _, refused) =
        post_modern(&http, &other.base, HOST, 2, "tools/call", retry.clone()).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let (_, _, done) = post_modern(&http, &b.base, HOST, 3, "tools/call", retry).await;
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        b.notes.get("n1"),
        None,
        "run by the replica that took the answer"
    );
    assert_eq!(a.notes.get("n1").as_deref(), Some("buy milk"));
    assert!(
        a.executor.pending().unwrap().is_empty(),
        "decided in the shared store"
    );
}

/// The calls of one credential park at most `max_pending_per_credential` together, whichever
/// session or route they come by, so an agent choosing a new session per call fills its own
/// share and the person's calls still park; a decision makes room again.
#[tokio::test]
async fn one_credential_parks_no_more_than_its_share_whatever_its_sessions() {
    let s = crate::support::start_with_config(
        |c| {
            c.max_pending_per_credential = 2;
            c.max_pending = 10;
        },
        |o| o,
    )
    .await;
    let delete = |session: &str| json!({"arguments": {"id": "n1"}, "session": session});
    let mut parked = Vec::new();
    for session in ["s0", "s1"] {
        let (status, body) = s
            .post(
                "/api/v1/tools/delete_note/call",
                Some(AGENT),
                delete(session),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        parked.push(body["operation_id"].as_str().unwrap().to_owned());
    }
    let (status, body) = s
        .post("/api/v1/tools/delete_note/call", Some(AGENT), delete("s2"))
        .await;
    assert_eq!(status, 429, "{body}");
    crate::support::assert_error(&body, "TOO_MANY_PENDING");
    assert_eq!(
        body["error"]["details"]["which"], "max_pending_per_credential",
        "{body}"
    );

    // the same token over MCP, without a session, counts against the same share
    let call = json!({"name": "delete_note", "arguments": {"id": "n1"}});
    let (_, _, body) = post_modern(&s.http, &s.base, AGENT, 1, "tools/call", call).await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert!(body.to_string().contains("TOO_MANY_PENDING"), "{body}");

    // the person's own call is not crowded out
    let (status, body) = s
        .post(
            "/api/v1/tools/delete_note/call",
            Some(APPROVER),
            delete("s0"),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(s.executor.pending().unwrap().len(), 3);

    let deny = format!("/api/v1/pending/{}/deny", parked[0]);
    let (status, body) = s.post(&deny, Some(APPROVER), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = s
        .post("/api/v1/tools/delete_note/call", Some(AGENT), delete("s3"))
        .await;
    assert_eq!(status, 202, "{body}");
}
