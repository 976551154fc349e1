//! The record: one audit record per call (none lost under load), redaction, metadata-only mode,
//! the activity feed, and the OpenTelemetry GenAI tracing span.

use crate::executor_support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use executor_support::*;
use serde_json::json;
use tool_runtime::executor::{
    ActivityQuery, AuditMode, Decision, Executor, ExecutorConfig, MemoryAuditSink, REDACTED, Status,
};
use tool_runtime::store::SqliteStore;
use tool_runtime::{CallContext, ToolCall, ToolSet, definition::Safety, tool::Initiator};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_calls_lose_no_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = ToolSet::new();
    let c = Counter::default();
    add(
        &mut set,
        def("lookup", Safety::ReadOnly),
        &c,
        |args, _| async move {
            sleep_ms(1).await;
            Ok(args)
        },
    );
    let sink = Arc::new(MemoryAuditSink::new());
    let exec = Executor::builder(set)
        .config(quick())
        .store(Arc::new(
            SqliteStore::open(dir.path().join("a.db")).unwrap(),
        ))
        .audit_sink(sink.clone())
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let exec = exec.clone();
            tokio::spawn(async move {
                let cx = CallContext {
                    correlation_id: "load".into(),
                    ..CallContext::new("")
                };
                exec.call(
                    &ToolCall::new(format!("c{i}"), "lookup", json!({"n": i})),
                    cx,
                )
                .await
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().outcome.is_success());
    }
    assert_eq!(c.get(), 1000);
    let records = sink.records();
    assert_eq!(records.len(), 1000);
    let ids: HashSet<_> = records.iter().map(|r| r.call_id.clone()).collect();
    assert_eq!(ids.len(), 1000, "one record per call, none duplicated");
    let stored = exec
        .activity(&ActivityQuery {
            correlation_id: Some("load".into()),
            limit: Some(5000),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(stored.len(), 1000, "the store kept every record too");
}

#[tokio::test]
async fn records_carry_ids_decision_timing_and_redacted_arguments() {
    let mut set = ToolSet::new();
    let mut d = def("login", Safety::ReadOnly);
    d.sensitive = vec!["text".into()];
    add(&mut set, d, &Counter::default(), |_, _| async {
        Ok(json!("x".repeat(1000)))
    });
    let (exec, sink) = executor(set, quick(), &Person::default());
    let cx = CallContext {
        correlation_id: "req-9".into(),
        session: Some("s".into()),
        initiator: Initiator::User,
        ..CallContext::new("")
    };
    let args =
        json!({"text": "my diary", "password": "hunter2", "nested": {"api_key": "k", "n": 1}});
    exec.call(&ToolCall::new("call-1", "login", args), cx).await;
    let r = &sink.records()[0];
    assert_eq!(r.call_id, "call-1");
    assert_eq!(r.correlation_id, "req-9");
    assert_eq!(r.session.as_deref(), Some("s"));
    assert_eq!(r.tool, "login");
    assert_eq!(r.category, Safety::ReadOnly);
    assert_eq!(r.initiator, Initiator::User);
    assert_eq!(r.decision, Decision::Allowed);
    assert_eq!(r.status, Status::Success);
    assert_eq!(r.attempts, 1);
    assert!(r.duration_us > 0);
    assert!(r.timestamp_ms > 1_700_000_000_000);
    let summary = r.result_summary.as_deref().unwrap();
    assert_eq!(summary.chars().count(), 200);
    let a = r.arguments.as_ref().unwrap();
    assert_eq!(a["text"], REDACTED, "marked sensitive by the tool");
    assert_eq!(a["password"], REDACTED);
    assert_eq!(a["nested"]["api_key"], REDACTED);
    assert_eq!(a["nested"]["n"], 1);
    let text = serde_json::to_string(r).unwrap();
    assert!(!text.contains("hunter2") && !text.contains("my diary"));
}

#[tokio::test]
async fn metadata_only_mode_keeps_no_content() {
    let mut set = ToolSet::new();
    echo(
        &mut set,
        def("search", Safety::ReadOnly),
        &Counter::default(),
    );
    let cfg = ExecutorConfig {
        audit_mode: AuditMode::MetadataOnly,
        ..quick()
    };
    let (exec, sink) = executor(set, cfg, &Person::default());
    exec.call(
        &ToolCall::new("1", "search", json!({"text": "private words"})),
        CallContext::new(""),
    )
    .await;
    let r = &sink.records()[0];
    assert!(r.arguments.is_none());
    assert!(r.result_summary.is_none());
    assert!(!serde_json::to_string(r).unwrap().contains("private"));
    assert_eq!(r.status, Status::Success);
}

#[tokio::test]
async fn the_activity_feed_filters_by_tool_and_initiator() {
    let mut set = ToolSet::new();
    echo(&mut set, def("a", Safety::ReadOnly), &Counter::default());
    echo(&mut set, def("b", Safety::ReadOnly), &Counter::default());
    let (exec, _) = executor(set, quick(), &Person::default());
    for (i, (tool, who)) in [
        ("a", Initiator::Model),
        ("b", Initiator::User),
        ("a", Initiator::User),
    ]
    .into_iter()
    .enumerate()
    {
        let cx = CallContext {
            initiator: who,
            ..CallContext::new("")
        };
        exec.call(&ToolCall::new(format!("c{i}"), tool, json!({"n": i})), cx)
            .await;
    }
    let feed = |q: ActivityQuery| -> Vec<String> {
        exec.activity(&q)
            .unwrap()
            .into_iter()
            .map(|r| r.call_id.to_string())
            .collect()
    };
    assert_eq!(feed(ActivityQuery::default()), ["c2", "c1", "c0"]);
    assert_eq!(
        feed(ActivityQuery {
            tool: Some("a".into()),
            ..Default::default()
        }),
        ["c2", "c0"]
    );
    assert_eq!(
        feed(ActivityQuery {
            initiator: Some(Initiator::User),
            limit: Some(1),
            ..Default::default()
        }),
        ["c2"]
    );
}

/// A span's name and its recorded fields.
type SpanRecord = (String, HashMap<String, String>);

/// Captures spans and their fields.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<HashMap<u64, SpanRecord>>>);

struct Visit<'a>(&'a mut HashMap<String, String>);
impl tracing::field::Visit for Visit<'_> {
    fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().to_owned(), format!("{v:?}"));
    }
    fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
        self.0.insert(f.name().to_owned(), v.to_owned());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = HashMap::new();
        attrs.record(&mut Visit(&mut fields));
        self.0
            .lock()
            .unwrap()
            .insert(id.into_u64(), (attrs.metadata().name().to_owned(), fields));
    }
    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some((_, fields)) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Visit(fields));
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_call_is_an_execute_tool_span_with_gen_ai_attributes() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = Spans::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let mut set = ToolSet::new();
    echo(
        &mut set,
        def("search_notes", Safety::ReadOnly),
        &Counter::default(),
    );
    add(
        &mut set,
        def("broken", Safety::ReadOnly),
        &Counter::default(),
        |_, _| async { Err::<serde_json::Value, _>(tool_runtime::ToolError::execution("down")) },
    );
    let (exec, _) = executor(set, quick(), &Person::default());
    exec.call(
        &ToolCall::new("call_42", "search_notes", "{}"),
        CallContext::new(""),
    )
    .await;
    exec.call(
        &ToolCall::new("call_43", "broken", "{}"),
        CallContext::new(""),
    )
    .await;
    let spans = spans.0.lock().unwrap();
    let mut found: Vec<&HashMap<String, String>> = spans
        .values()
        .filter(|(name, _)| name == "execute_tool")
        .map(|(_, f)| f)
        .collect();
    found.sort_by_key(|f| f["gen_ai.tool.call.id"].clone());
    assert_eq!(found.len(), 2);
    let ok = found[0];
    assert_eq!(ok["otel.name"], "execute_tool search_notes");
    assert_eq!(ok["gen_ai.operation.name"], "execute_tool");
    assert_eq!(ok["gen_ai.tool.name"], "search_notes");
    assert_eq!(ok["gen_ai.tool.call.id"], "call_42");
    assert_eq!(ok["tool.status"], "success");
    assert_eq!(ok["tool.decision"], "allowed");
    assert!(!ok.contains_key("error.type"));
    assert_eq!(found[1]["error.type"], "EXECUTION_FAILED");
}

/// A login tool whose `password` must be a short string and whose `pin` the tool marks
/// sensitive; `body` decides what it answers.
fn login_tool<F, Fut>(body: F) -> ToolSet
where
    F: Fn(serde_json::Value, CallContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<serde_json::Value, tool_runtime::ToolError>>
        + Send
        + 'static,
{
    let mut d = tool_runtime::definition::ToolDefinition::new(
        "login",
        "Log in to the archive.",
        &json!({
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "password": {"type": "string", "maxLength": 8},
                "pin": {"type": "string", "pattern": "^[0-9]{4}$"},
                "settings": {"type": "array"}
            },
            "required": ["user"]
        }),
    );
    d.safety = Safety::ReadOnly;
    d.sensitive = vec!["pin".into()];
    let mut set = ToolSet::new();
    add(&mut set, d, &Counter::default(), body);
    set
}

/// Every stored form of the record: the sink's and the store's, as JSON text.
fn trail_text(exec: &Executor, sink: &MemoryAuditSink) -> String {
    let stored = exec.activity(&ActivityQuery::default()).unwrap();
    assert_eq!(stored.len(), sink.len(), "the store has the sink's records");
    format!(
        "{}\n{}",
        serde_json::to_string(&sink.records()).unwrap(),
        serde_json::to_string(&stored).unwrap()
    )
}

#[tokio::test]
async fn invalid_secret_values_quoted_by_validation_do_not_reach_the_audit_trail() {
    let set = login_tool(|_, _| async { Ok(json!({"ok": true})) });
    let (exec, sink) = executor(set, quick(), &Person::default());
    let cases = [
        // wrong type: jsonschema quotes the number
        json!({"user": "bob", "password": 987_654_321}),
        // too long: jsonschema quotes the string
        json!({"user": "bob", "password": "correct-horse-battery"}),
        // a field the tool marks sensitive, failing its pattern
        json!({"user": "bob", "pin": "12a45"}),
        // a non-sensitive field whose (invalid) value holds a secret: the quoted instance
        json!({"user": "bob", "settings": {"api_key": "sk-live-abcdef"}}),
    ];
    for (i, args) in cases.into_iter().enumerate() {
        let r = exec
            .call(
                &ToolCall::new(format!("c{i}"), "login", args),
                CallContext::new(""),
            )
            .await;
        let err = r.outcome.error().expect("refused");
        assert_eq!(err.code.as_str(), "INVALID_ARGUMENTS");
        // the model, who sent the value, is still told exactly what was wrong
        assert!(!err.violations.is_empty());
    }
    let records = sink.records();
    assert_eq!(records.len(), 4);
    for r in &records {
        let summary = r.result_summary.as_deref().unwrap();
        assert!(summary.starts_with("INVALID_ARGUMENTS:"), "{summary}");
    }
    assert!(
        records[0]
            .result_summary
            .as_deref()
            .unwrap()
            .contains("/password")
    );
    assert!(
        records[3]
            .result_summary
            .as_deref()
            .unwrap()
            .contains(REDACTED)
    );
    let text = trail_text(&exec, &sink);
    for secret in [
        "987654321",
        "correct-horse-battery",
        "12a45",
        "sk-live-abcdef",
    ] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the audit trail:\n{text}"
        );
    }
}

#[tokio::test]
async fn a_tool_echoing_a_secret_does_not_leak_it_through_the_result_summary() {
    let set = login_tool(|args, _| async move {
        let pw = args["password"].as_str().unwrap_or_default().to_owned();
        let pin = args["pin"].as_str().unwrap_or_default().to_owned();
        Ok(json!({
            // under the same key: redacted by key
            "password": pw,
            "nested": {"session_token": "tok-000111222"},
            // echoed in free text: found by value
            "message": format!("logged in with {pw}; pin {pin} accepted"),
            "user": args["user"],
        }))
    });
    let (exec, sink) = executor(set, quick(), &Person::default());
    let r = exec
        .call(
            &ToolCall::new(
                "c1",
                "login",
                json!({"user": "bob", "password": "p\"quoted", "pin": "4321"}),
            ),
            CallContext::new(""),
        )
        .await;
    // the model gets the tool's answer unchanged: redaction is for the audit trail
    assert_eq!(r.value().unwrap()["password"], "p\"quoted");
    let summary = sink.records()[0].result_summary.clone().unwrap();
    assert!(summary.contains("\"user\":\"bob\""), "{summary}");
    assert!(summary.contains("logged in with [REDACTED]"), "{summary}");
    let text = trail_text(&exec, &sink);
    // the pin as a value or echoed in text; its digits alone may turn up in a timestamp
    for secret in ["quoted", "pin 4321", "\"4321", "4321\"", "tok-000111222"] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the audit trail:\n{text}"
        );
    }
}

#[tokio::test]
async fn a_tool_error_echoing_a_secret_does_not_leak_it() {
    let set = login_tool(|args, _| async move {
        Err::<serde_json::Value, _>(
            tool_runtime::ToolError::execution(format!(
                "the archive refused the password {} for {}",
                args["password"].as_str().unwrap_or_default(),
                args["user"].as_str().unwrap_or_default()
            ))
            .with_detail("tried", args["password"].clone()),
        )
    });
    let (exec, sink) = executor(set, quick(), &Person::default());
    let r = exec
        .call(
            &ToolCall::new(
                "c1",
                "login",
                json!({"user": "bob", "password": "s3cr3tpw"}),
            ),
            CallContext::new(""),
        )
        .await;
    assert_eq!(r.outcome.error().unwrap().code.as_str(), "EXECUTION_FAILED");
    let summary = sink.records()[0].result_summary.clone().unwrap();
    assert_eq!(
        summary,
        "EXECUTION_FAILED: the archive refused the password [REDACTED] for bob"
    );
    assert!(!trail_text(&exec, &sink).contains("s3cr3tpw"));
}

/// Captures the messages of events under one target.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() == "tool_runtime::confirmation" {
            let mut fields = HashMap::new();
            event.record(&mut Visit(&mut fields));
            let mut line = fields.remove("message").unwrap_or_default();
            let mut rest: Vec<_> = fields.into_iter().collect();
            rest.sort();
            for (k, v) in rest {
                line.push_str(&format!(" {k}={v}"));
            }
            self.0.lock().unwrap().push(line);
        }
    }
}

/// One confirmed modification under `cfg`, with the confirmation events and the audit records
/// (sink and store) it left.
async fn one_confirmed_call(cfg: ExecutorConfig) -> (Vec<String>, usize, usize) {
    use tracing_subscriber::layer::SubscriberExt;
    let events = Events::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(events.clone()));
    let ran = Counter::default();
    let mut set = ToolSet::new();
    echo(&mut set, def("edit_note", Safety::Modify), &ran);
    let person = Person::answering([tool_runtime::executor::Answer::Yes]);
    let store = Arc::new(tool_runtime::store::MemoryStore::new());
    let sink = Arc::new(MemoryAuditSink::new());
    let exec = Executor::builder(set)
        .config(cfg)
        .store(store)
        .confirmation(person.clone())
        .audit_sink(sink.clone())
        .build()
        .unwrap();
    let r = exec
        .call(
            &ToolCall::new("c1", "edit_note", json!({"text": "new words"})),
            CallContext::new(""),
        )
        .await;
    // whatever is logged, the call itself is asked about and runs
    assert!(r.outcome.is_success(), "{:?}", r.outcome);
    assert_eq!((person.asked().len(), ran.get()), (1, 1));
    let stored = exec.activity(&ActivityQuery::default()).unwrap().len();
    let events = events.0.lock().unwrap().clone();
    (events, sink.records().len(), stored)
}

#[tokio::test(flavor = "current_thread")]
async fn confirmations_are_logged_unless_log_confirmations_is_off() {
    let (events, _, _) = one_confirmed_call(quick()).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].starts_with("confirmation asked") && events[0].contains("tool=edit_note"));
    assert!(events[1].starts_with("confirmation answered") && events[1].contains("answer=yes"));
    // the arguments never reach the log
    assert!(!events.iter().any(|e| e.contains("new words")));

    let (events, sink, stored) = one_confirmed_call(ExecutorConfig {
        log_confirmations: false,
        ..quick()
    })
    .await;
    assert!(events.is_empty(), "{events:?}");
    // the audit trail is another switch
    assert_eq!((sink, stored), (1, 1));
}

#[tokio::test(flavor = "current_thread")]
async fn log_tool_calls_off_writes_no_audit_record_anywhere() {
    let (_, sink, stored) = one_confirmed_call(quick()).await;
    assert_eq!((sink, stored), (1, 1));
    let (events, sink, stored) = one_confirmed_call(ExecutorConfig {
        log_tool_calls: false,
        ..quick()
    })
    .await;
    assert_eq!((sink, stored), (0, 0), "no record in the sink or the store");
    assert_eq!(
        events.len(),
        2,
        "confirmations are still logged: {events:?}"
    );
}
