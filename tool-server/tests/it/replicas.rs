//! Two server processes on one Redis behave as one: an operation parked through one is approved
//! through either, 50 approvals at once from both run it exactly once (49 answered 409), the feed
//! is shared, a first-time approval given through one holds on the other, and a rate limit of N
//! calls a minute admits N across both replicas, not 2N.
//!
//! The replicas are this test binary started again with `TOOL_SERVER_REPLICA` set (see
//! [`replica`]): real processes, real sockets, one Redis (`TOOL_RUNTIME_TEST_REDIS_URL`; skipped
//! without it, except under CI).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig, Window};
use tool_runtime::store::RedisStore;
use tool_runtime::{State, ToolError, tool};
use tool_server::{ServerOptions, Tokens};

const AGENT: &str = "replica-agent-token-0001";
const APPROVER: &str = "replica-approver-token-0001";
const REDIS: &str = "TOOL_RUNTIME_TEST_REDIS_URL";

/// Where a replica's tools leave a trace every process can count: one line per run.
#[derive(Clone)]
struct RunLog(PathBuf);

impl RunLog {
    fn append(&self, line: &str) -> Result<(), ToolError> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.0)
            .map_err(|e| ToolError::execution(e.to_string()))?;
        writeln!(f, "{line}").map_err(|e| ToolError::execution(e.to_string()))
    }
}

/// Ships an order: a person approves it first.
#[tool(modify, intent = "Ship order {order}")]
fn ship_order(
    /// The order.
    order: String,
    State(log): State<RunLog>,
) -> Result<String, ToolError> {
    log.append(&format!("ship {order} by {}", std::process::id()))?;
    Ok(format!("shipped {order}"))
}

/// Looks a product up (rate limited: 5 a minute over every replica).
#[tool(read_only)]
fn lookup_product(
    /// The product.
    sku: String,
    State(log): State<RunLog>,
) -> Result<String, ToolError> {
    log.append(&format!("lookup {sku}"))?;
    Ok(format!("product {sku}"))
}

/// Reads exchange rates from an outside service (first use in a session passes the gate).
#[tool(external)]
fn fetch_rate(
    /// The currency.
    currency: String,
    State(log): State<RunLog>,
) -> Result<String, ToolError> {
    log.append(&format!("rate {currency}"))?;
    Ok(format!("1 EUR = 1.1 {currency}"))
}

/// What size a person wants.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Size {
    /// Small, medium or large.
    size: String,
    /// How many.
    count: u32,
}

/// Asks the person which size, reporting progress first.
#[tool(read_only)]
async fn choose_size(
    /// Tells calls apart.
    label: String,
    cx: &tool_runtime::CallContext,
) -> Result<String, ToolError> {
    cx.report_progress(tool_runtime::progress::Progress::new(1.0).of(2.0));
    Ok(match cx.ask::<Size>("Which size?").await? {
        tool_runtime::host::Reply::Accepted(s) => format!("{label}: {} x {}", s.count, s.size),
        other => format!("{label}: {}", other.action()),
    })
}

/// The replica process: serves the app on Redis until killed. A no-op as a test of its own.
#[test]
fn replica() {
    let Ok(prefix) = std::env::var("TOOL_SERVER_REPLICA") else {
        return;
    };
    let url = std::env::var(REDIS).unwrap();
    let log = RunLog(std::env::var("TOOL_SERVER_RUN_LOG").unwrap().into());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let set = tool_runtime::toolset![ship_order, lookup_product, fetch_rate, choose_size]
            .unwrap()
            .with_state(log);
        let mut cfg = ExecutorConfig::default();
        cfg.cache.enabled = false;
        cfg.auto_confirm_external = true;
        cfg.rate_limits
            .tools
            .insert("lookup_product".into(), Window::per_minute(5));
        let executor = Executor::builder(set)
            .config(cfg)
            .store(Arc::new(RedisStore::with_prefix(&url, &prefix).unwrap()))
            .confirmation(Deferred)
            .build()
            .unwrap();
        let options = ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap());
        let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &options)
            .await
            .unwrap();
        println!("LISTENING http://{}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        axum::serve(listener, tool_server::router(executor, options))
            .await
            .unwrap();
    });
}

struct Replica {
    child: Child,
    base: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(prefix: &str, log: &std::path::Path) -> Replica {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "replicas::replica",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TOOL_SERVER_REPLICA", prefix)
        .env("TOOL_SERVER_RUN_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("the replica starts").unwrap();
        // libtest prints `test replica ... ` before the test's own output, on the same line
        if let Some((_, base)) = line.split_once("LISTENING ") {
            break base.trim().to_owned();
        }
    };
    // keep reading so that the child never blocks on a full pipe
    std::thread::spawn(move || for _ in lines {});
    Replica { child, base }
}

/// Two replicas on a fresh Redis prefix, and the run log they share.
fn pair(test: &str) -> Option<(Replica, Replica, tempfile::TempDir)> {
    test_support::redis_url()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("tool-server-test:{}:{nanos}:{test}:", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    Some((spawn(&prefix, &log), spawn(&prefix, &log), dir))
}

fn runs(dir: &tempfile::TempDir, prefix: &str) -> Vec<String> {
    std::fs::read_to_string(dir.path().join("runs.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_approvals_from_two_replicas_run_the_operation_exactly_once() {
    let Some((a, b, dir)) = pair("approve") else {
        return;
    };
    let http = reqwest::Client::new();
    let res = http
        .post(format!("{}/api/v1/tools/ship_order/call", a.base))
        .bearer_auth(AGENT)
        .json(&json!({"arguments": {"order": "A-17"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    let op = res.json::<Value>().await.unwrap()["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // the other replica lists it
    let listed: Value = http
        .get(format!("{}/api/v1/pending", b.base))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["pending"][0]["id"], op.as_str(), "{listed}");

    let approvals = (0..50).map(|i| {
        let url = format!(
            "{}/api/v1/pending/{op}/approve",
            if i % 2 == 0 { &a.base } else { &b.base }
        );
        let http = http.clone();
        tokio::spawn(async move {
            http.post(url)
                .bearer_auth(APPROVER)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    });
    let mut statuses: Vec<u16> = Vec::new();
    for h in futures::future::join_all(approvals).await {
        statuses.push(h.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        49,
        "{statuses:?}"
    );
    assert_eq!(runs(&dir, "ship A-17").len(), 1, "run exactly once");

    // both feeds show the one run, with who started it
    for base in [&a.base, &b.base] {
        let feed: Value = http
            .get(format!("{base}/api/v1/activity?tool=ship_order"))
            .bearer_auth(APPROVER)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let statuses: Vec<&str> = feed["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["success", "pending"], "{feed}");
        assert_eq!(feed["records"][0]["initiator"], "model");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rate_limit_admits_n_calls_across_both_replicas_not_2n() {
    let Some((a, b, dir)) = pair("rate") else {
        return;
    };
    let http = reqwest::Client::new();
    let mut codes = Vec::new();
    for i in 0..12 {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let res = http
            .post(format!("{base}/api/v1/tools/lookup_product/call"))
            .bearer_auth(AGENT)
            .json(&json!({"arguments": {"sku": format!("p{i}")}}))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        if status == 429 {
            assert!(res.headers().contains_key("retry-after"));
        }
        codes.push(status);
    }
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 5, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 429).count(), 7, "{codes:?}");
    assert_eq!(runs(&dir, "lookup").len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_first_time_approval_on_one_replica_holds_on_the_other() {
    let Some((a, b, dir)) = pair("gate") else {
        return;
    };
    let http = reqwest::Client::new();
    let call = |base: &str, session: &str| {
        http.post(format!("{base}/api/v1/tools/fetch_rate/call"))
            .bearer_auth(AGENT)
            .json(&json!({"arguments": {"currency": "USD"}, "session": session}))
            .send()
    };
    let res = call(&a.base, "s1").await.unwrap();
    assert_eq!(
        res.status(),
        202,
        "the first use in a session passes the gate"
    );
    let pending: Value = res.json().await.unwrap();
    assert!(pending["preview"]["first_use"].is_object(), "{pending}");
    let op = pending["operation_id"].as_str().unwrap();
    let res = http
        .post(format!("{}/api/v1/pending/{op}/approve", b.base))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // the same session on the other replica: the gate is passed, the call runs at once
    assert_eq!(call(&b.base, "s1").await.unwrap().status(), 200);
    assert_eq!(call(&a.base, "s1").await.unwrap().status(), 200);
    // remembered across sessions too (`persist_first_time_approvals`, the default), on both
    assert_eq!(call(&b.base, "s2").await.unwrap().status(), 200);
    assert_eq!(runs(&dir, "rate USD").len(), 4);
}

/// The approvals page behind a load balancer: a session opened on one replica is accepted by
/// the other (both are configured with the same approver token, which signs it), and a session
/// never opens with the agent's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_session_opened_on_one_replica_holds_on_the_other() {
    let Some((a, b, _dir)) = pair("session") else {
        return;
    };
    let http = reqwest::Client::new();
    let res = http
        .post(format!("{}/api/v1/session", a.base))
        .json(&json!({"token": APPROVER}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let session: Value = res.json().await.unwrap();
    let token = session["token"].as_str().unwrap();
    assert_ne!(token, APPROVER);
    for base in [&a.base, &b.base] {
        let res = http
            .get(format!("{base}/api/v1/pending"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{base}");
    }
    let res = http
        .post(format!("{}/api/v1/session", b.base))
        .json(&json!({"token": AGENT}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
}

/// `GET path` on `base` with the approver's token, as JSON.
async fn approver_get(http: &reqwest::Client, base: &str, path: &str) -> Value {
    let res = http
        .get(format!("{base}{path}"))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_question_asked_on_one_replica_is_shown_and_answered_on_the_other() {
    let Some((a, b, _dir)) = pair("questions") else {
        return;
    };
    let http = reqwest::Client::new();
    let call = {
        let (http, url) = (
            http.clone(),
            format!("{}/api/v1/tools/choose_size/call", a.base),
        );
        tokio::spawn(async move {
            let res = http
                .post(url)
                .bearer_auth(AGENT)
                .json(&json!({"arguments": {"label": "cups"}}))
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        })
    };

    // the other replica's page shows the question and the running call
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let (question, running) = loop {
        let questions = approver_get(&http, &b.base, "/api/v1/questions").await;
        let running = approver_get(&http, &b.base, "/api/v1/running").await;
        if let (Some(q), Some(r)) = (
            questions["questions"].get(0).cloned(),
            running["running"].get(0).cloned(),
        ) {
            break (q, r);
        }
        assert!(tokio::time::Instant::now() < deadline, "never shown on b");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(question["message"], "Which size?");
    assert_eq!(question["tool"], "choose_size");
    assert_eq!(running["call_id"], question["call_id"]);
    assert_eq!(
        (&running["progress"], &running["total"]),
        (&json!(1.0), &json!(2.0))
    );
    let answer = format!(
        "{}/api/v1/questions/{}/answer",
        b.base,
        question["id"].as_str().unwrap()
    );

    // checked on the replica that takes the answer: a misfit is refused there
    let post =
        |body: Value, token: &'static str| http.post(&answer).bearer_auth(token).json(&body).send();
    let res = post(
        json!({"action": "accept", "content": {"size": "m"}}),
        APPROVER,
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 422);
    let res = post(
        json!({"action": "accept", "content": {"size": "m", "count": 2}}),
        AGENT,
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 403);
    assert!(!call.is_finished());
    let res = post(
        json!({"action": "accept", "content": {"size": "m", "count": 2}}),
        APPROVER,
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 200);

    let (status, exec) = call.await.unwrap();
    assert_eq!(status, 200, "{exec}");
    assert_eq!(exec["value"], "cups: 2 x m", "{exec}");
    // and both pages let it go
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let questions = approver_get(&http, &b.base, "/api/v1/questions").await;
        let running = approver_get(&http, &b.base, "/api/v1/running").await;
        if questions["questions"] == json!([]) && running["running"] == json!([]) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{questions} {running}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
