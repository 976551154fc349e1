//! Shared fixtures of the executor tests: dynamic tools with counters, and a scripted person.
#![allow(dead_code)]

pub mod faults;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_runtime::executor::{
    Answer, AuditRecord, ConfirmationHandler, ConfirmationRequest, Decider, Decision, Executor,
    ExecutorConfig, MemoryAuditSink, Status,
};
use tool_runtime::store::MemoryStore;
use tool_runtime::{
    CallContext, ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
    tool::Initiator,
};

/// Counts calls.
#[derive(Clone, Default)]
pub struct Counter(pub Arc<AtomicUsize>);

impl Counter {
    pub fn hit(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A definition with an object schema of string/any properties (extra properties allowed).
pub fn def(name: &str, safety: Safety) -> ToolDefinition {
    let mut d = ToolDefinition::new(
        name.to_owned(),
        format!("The {name} tool. It does {name} things."),
        &json!({"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}}),
    );
    d.safety = safety;
    d
}

/// Registers a tool whose body is `body`, counting calls in `counter`.
pub fn add<F, Fut>(set: &mut ToolSet, def: ToolDefinition, counter: &Counter, body: F)
where
    F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    let counter = counter.clone();
    let body = Arc::new(body);
    set.register_dynamic(
        def,
        Some(Arc::new(move |args, cx| -> BoxFuture<'static, _> {
            counter.hit();
            let body = body.clone();
            Box::pin(async move { body(args, cx).await })
        })),
    )
    .unwrap();
}

/// A tool that echoes its arguments.
pub fn echo(set: &mut ToolSet, def: ToolDefinition, counter: &Counter) {
    add(set, def, counter, |args, _| async move {
        Ok(json!({"echo": args}))
    });
}

/// A person who answers from a script and remembers what they were asked.
#[derive(Clone, Default)]
pub struct Person {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    pub asked: Arc<Mutex<Vec<ConfirmationRequest>>>,
}

impl Person {
    pub fn answering(answers: impl IntoIterator<Item = Answer>) -> Self {
        Person {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            asked: Default::default(),
        }
    }
    pub fn asked(&self) -> Vec<ConfirmationRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl ConfirmationHandler for Person {
    fn confirm<'a>(&'a self, request: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        self.asked.lock().unwrap().push(request.clone());
        let next = self.answers.lock().unwrap().pop_front();
        Box::pin(async move {
            match next {
                Some(a) => a,
                // nobody is there: never answers (the executor's timeout decides)
                None => futures::future::pending().await,
            }
        })
    }
}

/// An executor over `set` with an in-memory store, the person, and a memory audit sink.
pub fn executor(
    set: ToolSet,
    cfg: ExecutorConfig,
    person: &Person,
) -> (Executor, Arc<MemoryAuditSink>) {
    let sink = Arc::new(MemoryAuditSink::new());
    let exec = Executor::builder(set)
        .config(cfg)
        .store(Arc::new(MemoryStore::new()))
        .confirmation(person.clone())
        .audit_sink(sink.clone())
        .build()
        .unwrap();
    (exec, sink)
}

/// A configuration with fast retries and a short confirmation timeout.
pub fn quick() -> ExecutorConfig {
    let mut c = ExecutorConfig {
        confirmation_timeout_ms: 200,
        ..Default::default()
    };
    c.retry.base_delay_ms = 1;
    c.retry.max_delay_ms = 5;
    c.store.path = None;
    c
}

pub fn sleep_ms(ms: u64) -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(ms))
}

/// The audit record of a read-only call `id`, as the executor would write one.
pub fn read_only_record(id: &str) -> AuditRecord {
    AuditRecord {
        timestamp_ms: 1,
        correlation_id: "corr".into(),
        call_id: id.to_owned().into(),
        session: None,
        tool: "look".into(),
        category: Safety::ReadOnly,
        initiator: Initiator::Model,
        decision: Decision::Allowed,
        decided_by: Decider::Policy,
        decided_via: None,
        duration_us: 1,
        status: Status::Success,
        cancelled_by: None,
        error_code: None,
        result_summary: None,
        arguments: None,
        repairs: Vec::new(),
        attempts: 1,
        cached: false,
        validated: true,
        no_schema_mode: None,
        operation_id: None,
        undo_id: None,
        seq: None,
    }
}

/// A record of a call that changed something: written into the table, with the count of changes.
pub fn change_record(id: &str) -> AuditRecord {
    AuditRecord {
        category: Safety::Modify,
        ..read_only_record(id)
    }
}
