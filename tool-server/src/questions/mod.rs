//! What the calls this server runs are doing right now, for the approvals page: the questions
//! their tools put to the person ([`CallContext::ask`](tool_runtime::CallContext::ask)) and the
//! calls still running, each with the last progress it reported.
//!
//! Both live in the memory of the process running the call: a question waits on the call's
//! task there. When the store is shared by several replicas (Redis), each replica posts its
//! questions and running calls on the store's boards and reads the others' ([`share`]), so the
//! page of any replica shows them all; an answer given on another replica is checked there
//! against the form and handed to the replica running the call through the store. The server
//! is the host of the calls it runs ([`Live::host`]): a question is put on the page and
//! answered by the person holding the approver's token, never through the model's arguments,
//! and it is taken down when the tool stops waiting (its timeout, the call's end).

mod shared;

pub(crate) use shared::{hand_over, share};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tool_runtime::error::Violation;
use tool_runtime::host::{CallHost, Form, Host, Reply};
use tool_runtime::progress::{Progress, ProgressSink, Reporter};
use tool_runtime::validate::Validator;
use tool_runtime::{ErrorCode, ToolError};

/// The page's side of the calls this server runs: the registry, and the host and progress sink
/// every call gets, made once and shared (a call clones two `Arc`s). The calls of the server's
/// chat agent and of approved operations get them too.
#[derive(Clone)]
pub(crate) struct PageSide {
    /// The open questions and running calls.
    pub(crate) live: Arc<Live>,
    /// The host of every call: questions go on the page.
    pub(crate) host: Host,
    /// The progress sink of every call.
    pub(crate) progress: Reporter,
}

impl std::fmt::Debug for PageSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageSide")
    }
}

impl PageSide {
    pub(crate) fn new() -> Self {
        let live = Live::new();
        PageSide {
            host: live.host(),
            progress: live.reporter(),
            live,
        }
    }
}

/// The most questions open at once: each holds a waiting call, so a flood of them is refused
/// rather than kept.
const MAX_OPEN: usize = 1_000;

/// The open questions and the running calls of this process, shared by the routes, the host
/// and the progress sink.
pub(crate) struct Live {
    inner: Mutex<Inner>,
    /// What the other replicas on the store show, as last read.
    remote: Mutex<shared::Remote>,
    /// Bumped on every change, so a stream of the page sends a fresh view.
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct Inner {
    questions: HashMap<String, Open>,
    running: HashMap<String, Running>,
}

/// One question waiting for the person.
struct Open {
    view: QuestionView,
    validator: Validator,
    reply: oneshot::Sender<Reply<Value>>,
}

/// A question as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct QuestionView {
    /// The question's id, for answering it.
    pub(crate) id: String,
    /// The tool that asks.
    pub(crate) tool: String,
    /// The call that asks.
    pub(crate) call_id: String,
    /// What the tool asks, in its words (it may quote what a model wrote).
    pub(crate) message: String,
    /// The form: a flat JSON Schema object with defaults and enums.
    pub(crate) schema: Value,
    /// When it was asked, ms since the epoch.
    pub(crate) asked_at: u64,
    /// When the tool stops waiting, ms since the epoch.
    pub(crate) expires_at: u64,
}

/// A call that has not ended, as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Running {
    /// The call.
    pub(crate) call_id: String,
    /// Its tool.
    pub(crate) tool: String,
    /// When it started, ms since the epoch.
    pub(crate) started_at: u64,
    /// How far it is, once it has reported.
    pub(crate) progress: Option<f64>,
    /// Out of how much, when the tool said.
    pub(crate) total: Option<f64>,
    /// What it is doing, in the tool's words.
    pub(crate) message: Option<String>,
}

/// Everything the page shows live, as one snapshot.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Snapshot {
    /// Open questions, oldest first.
    pub(crate) questions: Vec<QuestionView>,
    /// Running calls, oldest first.
    pub(crate) running: Vec<Running>,
}

/// How a person answers a question.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "action", content = "content", rename_all = "lowercase")]
pub(crate) enum Answer {
    /// The form's content.
    Accept(Value),
    /// They refuse to answer.
    Decline,
    /// They dismiss it without choosing.
    Cancel,
}

impl Live {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Live {
            inner: Mutex::new(Inner::default()),
            remote: Mutex::new(shared::Remote::default()),
            changed: watch::channel(0).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // the maps stay consistent whatever panicked while holding them: each change is one insert
        // or one remove
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the streams watching for changes. With none watching nothing is sent: a stream that
    /// subscribes later reads the maps after subscribing, so it sees every change made before.
    fn touch(&self) {
        if self.changed.receiver_count() > 0 {
            self.changed.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// A receiver that wakes on every change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The host of the calls this server runs: questions go on the page.
    pub(crate) fn host(self: &Arc<Self>) -> Host {
        Host::shared(Arc::new(PageHost(self.clone())) as Arc<dyn CallHost>)
    }

    /// Where the progress of the calls this server runs goes: the running call's entry.
    pub(crate) fn reporter(self: &Arc<Self>) -> Reporter {
        Reporter::new(ProgressEntries(self.clone()))
    }

    /// Lists `call_id` of `tool` as running, until [`Live::end`].
    fn start(&self, call_id: &str, tool: &str) {
        self.lock().running.insert(
            call_id.to_owned(),
            Running {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                started_at: now_ms(),
                progress: None,
                total: None,
                message: None,
            },
        );
        self.touch();
    }

    /// Takes `call_id` off the running list.
    fn end(&self, call_id: &str) {
        let removed = self.lock().running.remove(call_id).is_some();
        if removed {
            self.touch();
        }
    }

    fn progress(&self, call_id: &str, progress: Progress) {
        {
            let mut inner = self.lock();
            let Some(entry) = inner.running.get_mut(call_id) else {
                return;
            };
            entry.progress = Some(progress.progress);
            entry.total = progress.total;
            entry.message = progress.message;
        }
        self.touch();
    }

    /// This process's own open questions and running calls, in no set order.
    fn local(&self) -> Snapshot {
        let inner = self.lock();
        Snapshot {
            questions: inner.questions.values().map(|q| q.view.clone()).collect(),
            running: inner.running.values().cloned().collect(),
        }
    }

    /// The open questions and the running calls, this replica's and the others', oldest first.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let Snapshot {
            mut questions,
            mut running,
        } = self.local();
        {
            let remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
            let asked: std::collections::HashSet<String> =
                questions.iter().map(|q| q.id.clone()).collect();
            let runs: std::collections::HashSet<String> =
                running.iter().map(|r| r.call_id.clone()).collect();
            questions.extend(
                (remote.questions.iter())
                    .filter(|q| !asked.contains(&q.id))
                    .cloned(),
            );
            running.extend(
                (remote.running.iter())
                    .filter(|r| !runs.contains(&r.call_id))
                    .cloned(),
            );
        }
        questions.sort_by(|a, b| (a.asked_at, &a.id).cmp(&(b.asked_at, &b.id)));
        running.sort_by(|a, b| (a.started_at, &a.call_id).cmp(&(b.started_at, &b.call_id)));
        Snapshot { questions, running }
    }

    /// Answers the question `id`. A content that does not fit the form is refused with each
    /// violation, and the question stays open. A question another replica asked is answered
    /// there: the answer, checked here, is returned to be handed over through the store.
    pub(crate) fn answer(&self, id: &str, answer: Answer) -> Result<Answered, ToolError> {
        let mut inner = self.lock();
        let Some(open) = inner.questions.get(id) else {
            drop(inner);
            return self.answer_elsewhere(id, answer);
        };
        if open.view.expires_at <= now_ms() {
            return Err(unknown(id));
        }
        let reply = match answer {
            Answer::Accept(content) => {
                let violations = check(&open.validator, &open.view.schema, &content);
                if !violations.is_empty() {
                    return Err(invalid_answer(violations));
                }
                Reply::Accepted(content)
            }
            Answer::Decline => Reply::Declined,
            Answer::Cancel => Reply::Cancelled,
        };
        let open = inner.questions.remove(id).expect("looked up above");
        drop(inner);
        self.touch();
        // the tool may have stopped waiting a moment ago: the answer then goes nowhere
        let _ = open.reply.send(reply);
        Ok(Answered::Here)
    }

    /// Checks an answer to a question another replica asked, as that replica would.
    fn answer_elsewhere(&self, id: &str, answer: Answer) -> Result<Answered, ToolError> {
        let view = {
            let remote = self.remote.lock().unwrap_or_else(|e| e.into_inner());
            (remote.questions.iter().find(|q| q.id == id).cloned()).ok_or_else(|| unknown(id))?
        };
        let now = now_ms();
        if view.expires_at <= now {
            return Err(unknown(id));
        }
        if let Answer::Accept(content) = &answer {
            let validator = Validator::compile(&view.schema).map_err(|_| unknown(id))?;
            let violations = check(&validator, &view.schema, content);
            if !violations.is_empty() {
                return Err(invalid_answer(violations));
            }
        }
        Ok(Answered::Elsewhere {
            answer,
            until: Duration::from_millis(view.expires_at - now),
        })
    }

    fn open(
        self: &Arc<Self>,
        call_id: &str,
        form: &Form,
    ) -> Result<(QuestionGuard, oneshot::Receiver<Reply<Value>>), ToolError> {
        let validator = Validator::compile(&form.schema).map_err(|e| {
            ToolError::new(
                ErrorCode::INVALID_FORM,
                format!("the question's form is not a schema: {e}"),
            )
        })?;
        let (tx, rx) = oneshot::channel();
        let id = format!("q-{:032x}", fastrand::u128(..));
        let asked_at = now_ms();
        let timeout = u64::try_from(form.timeout.min(Duration::from_secs(86_400)).as_millis())
            .unwrap_or(u64::MAX);
        {
            let mut inner = self.lock();
            if inner.questions.len() >= MAX_OPEN {
                return Err(ToolError::new(
                    ErrorCode::of("TOO_MANY_QUESTIONS"),
                    format!("{MAX_OPEN} questions already wait for the person"),
                )
                .retryable(true)
                .recover("ask again once the person has answered some"));
            }
            let tool = inner
                .running
                .get(call_id)
                .map_or_else(|| "(unknown tool)".to_owned(), |r| r.tool.clone());
            inner.questions.insert(
                id.clone(),
                Open {
                    view: QuestionView {
                        id: id.clone(),
                        tool,
                        call_id: call_id.to_owned(),
                        message: form.message.clone(),
                        schema: form.schema.clone(),
                        asked_at,
                        expires_at: asked_at.saturating_add(timeout),
                    },
                    validator,
                    reply: tx,
                },
            );
        }
        self.touch();
        Ok((
            QuestionGuard {
                live: self.clone(),
                id,
            },
            rx,
        ))
    }
}

/// The violations of `content` against the form: its schema's, and any field the form does not
/// have (a form is closed: an extra field is a mistake, not data).
fn check(validator: &Validator, schema: &Value, content: &Value) -> Vec<Violation> {
    let Some(fields) = content.as_object() else {
        return vec![Violation::new("", "the content must be a JSON object")];
    };
    let mut violations = validator.violations(content);
    let known = schema.get("properties").and_then(Value::as_object);
    for name in fields.keys() {
        if !known.is_some_and(|k| k.contains_key(name)) {
            violations.push(Violation::new(
                format!("/{}", name.replace('~', "~0").replace('/', "~1")),
                format!("the form has no field `{name}`"),
            ));
        }
    }
    violations
}

/// Where an answer went.
#[derive(Debug)]
pub(crate) enum Answered {
    /// To the tool, which runs in this process.
    Here,
    /// Nowhere yet: the question is another replica's, and `answer` is handed to it through
    /// the store, kept there `until` the tool stops waiting.
    Elsewhere { answer: Answer, until: Duration },
}

fn invalid_answer(violations: Vec<Violation>) -> ToolError {
    ToolError::new(
        ErrorCode::INVALID_ANSWER,
        "the answer does not fit the question's form",
    )
    .with_violations(violations)
    .recover("fix the fields named in `violations` and answer again")
}

fn unknown(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::NOT_FOUND,
        format!("there is no open question {id}: it was answered, or the tool stopped waiting"),
    )
    .recover("list the open questions with GET /api/v1/questions")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Takes a question down when its tool stops waiting.
struct QuestionGuard {
    live: Arc<Live>,
    id: String,
}

impl Drop for QuestionGuard {
    fn drop(&mut self) {
        let removed = self.live.lock().questions.remove(&self.id).is_some();
        if removed {
            self.live.touch();
        }
    }
}

/// The server as the host of its calls: a question goes on the page until it is answered or
/// the tool stops waiting.
struct PageHost(Arc<Live>);

impl CallHost for PageHost {
    fn ask<'a>(&'a self, form: &'a Form) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
        self.ask_for("", form)
    }

    fn ask_for<'a>(
        &'a self,
        call_id: &'a str,
        form: &'a Form,
    ) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
        Box::pin(async move {
            let (_guard, reply) = self.0.open(call_id, form)?;
            // the sender goes only with the question: answered, or taken down by the guard
            Ok(reply.await.unwrap_or(Reply::Cancelled))
        })
    }
}

/// The running list, kept by the executor telling the sink when each call starts and ends,
/// with the last progress each reported.
struct ProgressEntries(Arc<Live>);

impl ProgressSink for ProgressEntries {
    fn report(&self, progress: Progress) {
        let _ = progress;
    }

    fn report_call(&self, call_id: &str, progress: Progress) {
        self.0.progress(call_id, progress);
    }

    fn call_started(&self, call_id: &str, tool: &str) {
        self.0.start(call_id, tool);
    }

    fn call_ended(&self, call_id: &str) {
        self.0.end(call_id);
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use serde_json::json;

    use super::*;

    fn form() -> Form {
        Form {
            message: "Which size?".into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "size": {"type": "string", "enum": ["s", "m", "l"]},
                    "count": {"type": "integer", "minimum": 1, "default": 1}
                },
                "required": ["size"]
            }),
            timeout: Duration::from_secs(60),
        }
    }

    /// A change made while nobody watches wakes nobody and is in the view a later watcher reads
    /// after subscribing; a change made while someone watches wakes them.
    #[test]
    fn a_watcher_sees_changes_made_before_it_subscribed_and_is_woken_by_later_ones() {
        let live = Live::new();
        let first = live.reporter().running("c1", "order");
        let mut changes = live.subscribe();
        assert_eq!(live.snapshot().running.len(), 1);
        assert!(!changes.has_changed().expect("the sender lives"));
        let second = live.reporter().running("c2", "order");
        assert!(changes.has_changed().expect("the sender lives"));
        changes.borrow_and_update();
        drop(first);
        assert!(changes.has_changed().expect("the sender lives"));
        assert_eq!(live.snapshot().running.len(), 1);
        drop(changes);
        drop(second);
        assert!(live.snapshot().running.is_empty());
    }

    #[tokio::test]
    async fn a_question_waits_for_a_fitting_answer_and_goes_when_answered() {
        let live = Live::new();
        let _run = live.reporter().running("c1", "order");
        let host = live.host();
        let form = form();
        let mut asking = host.get().ask_for("c1", &form);
        assert!((&mut asking).now_or_never().is_none());
        let open = live.snapshot().questions;
        assert_eq!(open.len(), 1);
        assert_eq!(
            (open[0].tool.as_str(), open[0].call_id.as_str()),
            ("order", "c1")
        );

        let err = live
            .answer(
                &open[0].id,
                Answer::Accept(json!({"size": "xl", "extra": 1})),
            )
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_ANSWER);
        let pointers: Vec<&str> = err.violations.iter().map(|v| v.pointer.as_str()).collect();
        assert!(
            pointers.contains(&"/size") && pointers.contains(&"/extra"),
            "{pointers:?}"
        );
        assert_eq!(
            live.snapshot().questions.len(),
            1,
            "a wrong answer keeps it open"
        );

        live.answer(&open[0].id, Answer::Accept(json!({"size": "m"})))
            .unwrap();
        assert_eq!(asking.await.unwrap(), Reply::Accepted(json!({"size": "m"})));
        assert!(live.snapshot().questions.is_empty());
        let err = live.answer(&open[0].id, Answer::Decline).unwrap_err();
        assert_eq!(err.code, ErrorCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_dropped_question_is_taken_down_and_a_running_call_keeps_its_last_progress() {
        let live = Live::new();
        let run = live.reporter().running("c2", "sync");
        let form = form();
        {
            let host = live.host();
            let mut asking = host.get().ask_for("c2", &form);
            assert!((&mut asking).now_or_never().is_none());
            assert_eq!(live.snapshot().questions.len(), 1);
        }
        assert!(live.snapshot().questions.is_empty());

        let reporter = live.reporter();
        reporter.report_for("c2", Progress::new(3.0).of(10.0).message("copying"));
        reporter.report_for("elsewhere", Progress::new(1.0));
        let running = live.snapshot().running;
        assert_eq!(running.len(), 1);
        assert_eq!(
            (
                running[0].progress,
                running[0].total,
                running[0].message.as_deref()
            ),
            (Some(3.0), Some(10.0), Some("copying"))
        );
        drop(run);
        assert!(live.snapshot().running.is_empty());
    }
}
