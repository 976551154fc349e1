//! `@modelcontextprotocol/server-everything` (npm), the reference server that exercises the
//! protocol's features, imported into a tool set and run by the executor over stdio: its tools
//! listed, structured content checked against the tool's output schema, a long-running tool given
//! up at the executor's timeout and cancelled at the server, its annotations deciding only when
//! trusted, and bad arguments refused before anything is sent. What the client writes to the
//! server is recorded (the server's standard input, copied to a file on its way), so the tests
//! can say what reached the server and what did not.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::definition::Safety;
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig, Outcome};
use tool_runtime::store::SqliteStore;
use tool_runtime::{CallContext, ErrorCode, ToolCall, ToolSet};

/// The tools the server registers for every client, whatever the client's capabilities.
const ALWAYS_LISTED: [&str; 12] = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
];

/// The everything server over stdio, with every message the client sends it copied to `wire`;
/// `None` where the reference servers are missing (outside CI).
fn everything(wire: &Path) -> Option<ServerConfig> {
    let modules = test_support::mcp_servers()?;
    let script = format!("{modules}/@modelcontextprotocol/server-everything/dist/index.js");
    let installed = Path::new(&script).is_file();
    if !test_support::prerequisite(
        installed,
        "@modelcontextprotocol/server-everything",
        "npm install it into TOOLS_MCP_SERVERS, as .ci/run does",
    ) {
        return None;
    }
    Some(ServerConfig::stdio(
        "sh",
        [
            "-c".to_owned(),
            r#"tee -a "$0" | exec node "$1" stdio"#.to_owned(),
            wire.display().to_string(),
            script,
        ],
    ))
}

/// The JSON-RPC messages the client has sent so far.
fn sent(wire: &Path) -> Vec<Value> {
    std::fs::read_to_string(wire)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The `tools/call` requests that reached the server.
fn calls_sent(wire: &Path) -> Vec<Value> {
    sent(wire)
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .collect()
}

fn executor(set: ToolSet, dir: &Path, timeout_ms: u64) -> Executor {
    let store = SqliteStore::open(dir.join("state.sqlite3")).unwrap();
    let config = ExecutorConfig {
        default_timeout_ms: timeout_ms,
        ..ExecutorConfig::default()
    };
    Executor::builder(set)
        .config(config)
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

async fn call(exec: &Executor, id: &str, tool: &str, args: Value) -> Outcome {
    let call = ToolCall::new(id, tool, args);
    exec.call(&call, CallContext::new(id)).await.outcome
}

struct Fixture {
    client: McpClient,
    set: ToolSet,
    wire: PathBuf,
    dir: tempfile::TempDir,
}

async fn connect(trust: bool) -> Option<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let wire = dir.path().join("sent.jsonl");
    let mut config = everything(&wire)?;
    if trust {
        config = config.trusting_annotations();
    }
    config.prefix = Some("ev".into());
    let client = McpClient::connect("everything", config).await.unwrap();
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert!(imported.refused.is_empty(), "{imported:?}");
    Some(Fixture {
        client,
        set,
        wire,
        dir,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_everything_servers_tools_run_as_their_schemas_and_annotations_say() {
    let Some(Fixture {
        client,
        set,
        wire,
        dir,
    }) = connect(true).await
    else {
        return;
    };
    let listed: Vec<&str> = client.tools().iter().map(|t| t.name.as_ref()).collect();
    for name in ALWAYS_LISTED {
        assert!(listed.contains(&name), "{name} not listed: {listed:?}");
        assert!(set.get(&format!("ev__{name}")).is_some(), "{name}");
    }
    let safety = |name: &str| set.get(&format!("ev__{name}")).unwrap().safety;
    assert_eq!(safety("get-sum"), Safety::ReadOnly);
    assert_eq!(safety("get-structured-content"), Safety::ReadOnly);
    // marked neither read-only nor destructive: it changes something, so a person is asked
    assert_ne!(safety("toggle-simulated-logging"), Safety::ReadOnly);
    assert_ne!(safety("toggle-simulated-logging"), Safety::Unspecified);
    let declared = set.get("ev__get-structured-content").unwrap();
    assert!(declared.output_schema.is_some(), "{declared:?}");
    let exec = executor(set, dir.path(), 30_000);

    let sum = call(&exec, "s1", "ev__get-sum", json!({"a": 2, "b": 40})).await;
    let Outcome::Success { value, .. } = &sum else {
        panic!("{sum:?}")
    };
    assert!(value.to_string().contains("is 42"), "{value}");

    // the structured content is the value, checked against the declared output schema
    let weather = call(
        &exec,
        "s2",
        "ev__get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    let Outcome::Success { value, .. } = &weather else {
        panic!("{weather:?}")
    };
    assert_eq!(
        value,
        &json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82})
    );

    // a tool that changes something waits for a person; nothing reaches the server meanwhile
    let before = calls_sent(&wire).len();
    let toggle = call(&exec, "t1", "ev__toggle-simulated-logging", json!({})).await;
    assert!(matches!(toggle, Outcome::Pending { .. }), "{toggle:?}");
    assert_eq!(calls_sent(&wire).len(), before, "sent before approval");

    // arguments outside the server's schema are refused here and never sent
    for (id, tool, args) in [
        (
            "b1",
            "ev__get-structured-content",
            json!({"location": "Paris"}),
        ),
        ("b2", "ev__get-sum", json!({"a": "two", "b": 40})),
        ("b3", "ev__get-sum", json!({"a": 2})),
    ] {
        let bad = call(&exec, id, tool, args).await;
        let error = bad.error().unwrap_or_else(|| panic!("{id}: {bad:?}"));
        assert_eq!(error.code, ErrorCode::INVALID_ARGUMENTS, "{id}: {error:?}");
    }
    let wire_text = std::fs::read_to_string(&wire).unwrap();
    assert!(!wire_text.contains("Paris") && !wire_text.contains("two"));
    assert_eq!(calls_sent(&wire).len(), before, "a bad call was sent");
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_running_call_past_its_timeout_is_cancelled_at_the_server() {
    let Some(Fixture {
        client,
        set,
        wire,
        dir,
    }) = connect(true).await
    else {
        return;
    };
    let exec = executor(set, dir.path(), 1_500);
    let slow = call(
        &exec,
        "l1",
        "ev__trigger-long-running-operation",
        json!({"duration": 60, "steps": 60}),
    )
    .await;
    let error = slow.error().unwrap_or_else(|| panic!("{slow:?}"));
    assert_eq!(error.code, ErrorCode::TIMEOUT, "{error:?}");

    // the server is told, by request id, that the call was given up (each attempt, if retried)
    let started: Vec<Value> = calls_sent(&wire)
        .into_iter()
        .filter(|m| m["params"]["name"] == "trigger-long-running-operation")
        .map(|m| m["id"].clone())
        .collect();
    assert!(!started.is_empty());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let cancelled: Vec<Value> = sent(&wire)
            .into_iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .map(|m| m["params"]["requestId"].clone())
            .collect();
        if started.iter().all(|id| cancelled.contains(id)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "started {started:?}, cancelled {cancelled:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // the connection outlives the cancelled call
    let short = call(
        &exec,
        "l2",
        "ev__trigger-long-running-operation",
        json!({"duration": 0.2, "steps": 2}),
    )
    .await;
    let Outcome::Success { value, .. } = &short else {
        panic!("{short:?}")
    };
    assert!(value.to_string().contains("completed"), "{value}");
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_everything_server_has_every_call_confirmed() {
    let Some(Fixture {
        client,
        set,
        wire,
        dir,
    }) = connect(false).await
    else {
        return;
    };
    assert!(set.definitions().all(|d| d.safety == Safety::Unspecified));
    let exec = executor(set, dir.path(), 30_000);
    let sum = call(&exec, "u1", "ev__get-sum", json!({"a": 1, "b": 2})).await;
    let Outcome::Pending {
        operation_id,
        preview,
    } = sum
    else {
        panic!("an untrusted read ran without a person: {sum:?}")
    };
    // the first-time gate names the server, how it is started, and what would leave
    let gate = preview.first_use.expect("a first-time gate");
    assert!(
        gate.service
            .starts_with("MCP server everything, started on this machine as `sh -c"),
        "{gate:?}"
    );
    assert!(gate.service.contains("server-everything"), "{gate:?}");
    assert_eq!(gate.data_leaving, ["a", "b"], "{gate:?}");
    assert!(calls_sent(&wire).is_empty(), "sent before approval");
    let ran = exec.approve(&operation_id).await.unwrap();
    assert!(
        ran.value().is_some_and(|v| v.to_string().contains("is 3")),
        "{:?}",
        ran.outcome
    );
    assert_eq!(calls_sent(&wire).len(), 1);
    client.close();
}

/// Answers every question with `reply`, and keeps the forms it was shown.
struct Person {
    reply: tool_runtime::host::Reply<Value>,
    shown: std::sync::Mutex<Vec<tool_runtime::host::Form>>,
}

impl tool_runtime::host::CallHost for Person {
    fn ask<'a>(
        &'a self,
        form: &'a tool_runtime::host::Form,
    ) -> futures::future::BoxFuture<
        'a,
        Result<tool_runtime::host::Reply<Value>, tool_runtime::ToolError>,
    > {
        self.shown.lock().unwrap().push(form.clone());
        Box::pin(std::future::ready(Ok(self.reply.clone())))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_progress_and_questions_reach_whoever_runs_the_call() {
    use tool_runtime::host::{Host, Reply};
    use tool_runtime::progress::{Progress, Reporter};

    let Some(Fixture {
        client, set, dir, ..
    }) = connect(true).await
    else {
        return;
    };
    // listed only to clients that declare elicitation
    assert!(set.get("ev__trigger-elicitation-request").is_some());
    let store = SqliteStore::open(dir.path().join("state.sqlite3")).unwrap();
    let exec = Executor::builder(set)
        .store(Arc::new(store))
        .confirmation(tool_runtime::executor::ApproveAll)
        .build()
        .unwrap();
    let run = |id: &'static str, tool: &'static str, args: Value, cx: CallContext| {
        let exec = exec.clone();
        async move { exec.call(&ToolCall::new(id, tool, args), cx).await.outcome }
    };

    // the server's progress notifications reach the call's progress sink, in order (the client
    // handles each notification on a task of its own, so the last one can lose the race with
    // the result, and is then dropped rather than reported after it)
    let reports = Arc::new(std::sync::Mutex::new(Vec::<Progress>::new()));
    let sink = reports.clone();
    let cx = CallContext {
        progress: Some(Reporter::new(move |p: Progress| {
            sink.lock().unwrap().push(p)
        })),
        ..CallContext::new("p1")
    };
    let args = json!({"duration": 0.3, "steps": 3});
    let outcome = run("p1", "ev__trigger-long-running-operation", args, cx).await;
    assert!(matches!(outcome, Outcome::Success { .. }), "{outcome:?}");
    let got: Vec<(f64, Option<f64>)> = (reports.lock().unwrap().iter())
        .map(|p| (p.progress, p.total))
        .collect();
    let all = [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))];
    assert!(got.len() >= 2 && got == all[..got.len()], "{got:?}");

    // the server's question goes to the person behind the call, and their answer back to it
    let person = Arc::new(Person {
        reply: Reply::Accepted(json!({"name": "Ada Lovelace"})),
        shown: Default::default(),
    });
    let cx = CallContext {
        host: Some(Host::shared(person.clone())),
        ..CallContext::new("q1")
    };
    let outcome = run("q1", "ev__trigger-elicitation-request", json!({}), cx).await;
    let Outcome::Success { value, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert!(value.to_string().contains("Name: Ada Lovelace"), "{value}");
    let shown = person.shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1);
    assert!(shown[0].message.contains("everything"), "{:?}", shown[0]);
    assert_eq!(
        shown[0].schema["required"],
        json!(["name"]),
        "{:?}",
        shown[0]
    );

    // a person who declines: the server is told so
    let person = Arc::new(Person {
        reply: Reply::Declined,
        shown: Default::default(),
    });
    let cx = CallContext {
        host: Some(Host::shared(person)),
        ..CallContext::new("q2")
    };
    let outcome = run("q2", "ev__trigger-elicitation-request", json!({}), cx).await;
    let Outcome::Success { value, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert!(value.to_string().contains("declined"), "{value}");

    // nobody to ask: declined, never answered by anything else
    let outcome = run(
        "q3",
        "ev__trigger-elicitation-request",
        json!({}),
        CallContext::new("q3"),
    )
    .await;
    let Outcome::Success { value, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert!(value.to_string().contains("declined"), "{value}");
    client.close();
}
