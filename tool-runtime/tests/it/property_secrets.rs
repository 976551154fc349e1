//! A property over generated argument trees: a secret value, put under a secret-looking key at
//! any depth, never appears in an audit record (sink or store), a log line at any level, an error
//! message, or the bytes of the SQLite store's files once the call is decided: whether the call
//! ran and failed with the arguments in its message, succeeded with them in its result, or was
//! parked for approval and denied.

use crate::executor_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tool_runtime::executor::{ActivityQuery, Deferred, Executor, MemoryAuditSink, Outcome};
use tool_runtime::store::SqliteStore;
use tool_runtime::{
    CallContext, ToolCall, ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
    toolset::DynHandler,
};

const SECRET_KEYS: &[&str] = &[
    "password",
    "apiKey",
    "client_secret",
    "AUTH-TOKEN",
    "privateKey",
    "db_password",
    "session_id",
    "x-api-key",
];
const PLAIN_KEYS: &[&str] = &["title", "config", "items", "owner", "meta", "notes"];

/// An argument tree and the secret values in it.
fn tree() -> impl Strategy<Value = (Value, Vec<String>)> {
    let leaf = (
        prop::sample::select(SECRET_KEYS),
        "[A-Za-z0-9]{10,24}",
        prop::collection::vec(prop::sample::select(PLAIN_KEYS), 0..4),
        "[a-z ]{0,12}",
    );
    prop::collection::vec(leaf, 1..5).prop_map(|leaves| {
        let mut root = Map::new();
        let mut secrets = Vec::new();
        for (i, (key, value, path, plain)) in leaves.into_iter().enumerate() {
            let secret = format!("Zq{value}{i}");
            let mut node = &mut root;
            for (depth, p) in path.iter().enumerate() {
                let k = format!("{p}{depth}");
                node = node
                    .entry(k)
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .expect("objects only on the path");
            }
            node.insert(key.to_owned(), Value::String(secret.clone()));
            node.insert(format!("plain{i}"), Value::String(plain));
            secrets.push(secret);
        }
        (Value::Object(root), secrets)
    })
}

/// A log writer shared by the subscriber and the test.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn toolset() -> ToolSet {
    let mut set = ToolSet::new();
    let schema = json!({"type": "object"});
    let mut fails = ToolDefinition::new("configure", "Applies a configuration.", &schema);
    fails.safety = Safety::Create;
    // a tool that puts its whole input into its error message
    let failing: DynHandler = Arc::new(|args: Value, _| {
        Box::pin(async move { Err(ToolError::execution(format!("could not apply {args}"))) })
    });
    set.register_dynamic(fails, Some(failing)).unwrap();
    let mut echo = ToolDefinition::new("inspect", "Shows a configuration.", &schema);
    echo.safety = Safety::ReadOnly;
    let echoing: DynHandler =
        Arc::new(|args: Value, _| Box::pin(async move { Ok(json!({"seen": args})) }));
    set.register_dynamic(echo, Some(echoing)).unwrap();
    let mut parked = ToolDefinition::new("rotate", "Rotates credentials.", &schema);
    parked.safety = Safety::Modify;
    let never: DynHandler = Arc::new(|_, _| Box::pin(async move { Ok(json!("rotated")) }));
    set.register_dynamic(parked, Some(never)).unwrap();
    set
}

fn check(arguments: Value, secrets: Vec<String>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .with_ansi(false)
        .finish();
    let sink = Arc::new(MemoryAuditSink::new());
    let mut seen_errors = Vec::new();
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut cfg = executor_support::quick();
            cfg.auto_confirm_create = true;
            let exec = Executor::builder(toolset())
                .config(cfg)
                .store(Arc::new(SqliteStore::open(&path).unwrap()))
                .confirmation(Deferred)
                .audit_sink(sink.clone())
                .build()
                .unwrap();
            for (i, tool) in ["configure", "inspect", "rotate"].into_iter().enumerate() {
                let call = ToolCall::new(format!("c{i}"), tool, arguments.clone());
                let r = exec.call(&call, CallContext::new(format!("c{i}"))).await;
                match &r.outcome {
                    Outcome::Error { error } => seen_errors.push(error.to_json().to_string()),
                    Outcome::Pending { operation_id, .. } => {
                        let denied = exec.deny(operation_id, None).unwrap();
                        seen_errors.push(denied.outcome.to_json().to_string());
                    }
                    Outcome::Success { .. } => {}
                    Outcome::Denied { .. } => {}
                }
            }
            let stored = exec.activity(&ActivityQuery::default()).unwrap();
            seen_errors.push(serde_json::to_string(&stored).unwrap());
        });
    });
    let audit = serde_json::to_string(&sink.records()).unwrap();
    let log_text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        files.push((entry.file_name(), std::fs::read(entry.path()).unwrap()));
    }
    for secret in &secrets {
        prop_assert!(!audit.contains(secret), "audit sink: {secret} in {audit}");
        prop_assert!(!log_text.contains(secret), "logs: {secret} in {log_text}");
        for e in &seen_errors {
            prop_assert!(!e.contains(secret), "answers: {secret} in {e}");
        }
        for (name, bytes) in &files {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            prop_assert!(!found, "store file {name:?} keeps {secret}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn no_secret_survives_in_audit_logs_answers_or_store_files((arguments, secrets) in tree()) {
        check(arguments, secrets)?;
    }
}
