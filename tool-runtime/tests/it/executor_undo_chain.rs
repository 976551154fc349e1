//! Undo through the journal, and chains whose steps refer to earlier outputs.

use crate::executor_support;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use executor_support::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::executor::{ActivityQuery, AuditRecord};
use tool_runtime::executor::{Answer, ChainStep, ExecutorConfig, Outcome, Reversible, Undo};
use tool_runtime::store::{
    GateScope, InverseCall, JournalEntry, PendingOperation, PendingState, Resolve, Scrubbed,
    StoreError, UnreadableOperation,
};
use tool_runtime::{
    CallContext, ErrorCode, State, Tool, ToolCall, ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
};

/// The notes of the research assistant, shared with the tools as state.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<HashMap<String, String>>>);

#[derive(Deserialize, Serialize, JsonSchema)]
struct CreateNoteArgs {
    title: String,
}

struct CreateNote;

impl Tool for CreateNote {
    type Args = CreateNoteArgs;
    type Output = Value;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> = LazyLock::new(|| {
            let mut d = ToolDefinition::new(
                "create_note",
                "Create a research note.",
                &tool_runtime::schema::derive::<CreateNoteArgs>(),
            );
            d.safety = Safety::Create;
            d.reversible = true;
            d.intent = Some("Create a note titled {title}".into());
            d
        });
        &DEF
    }

    async fn call(args: CreateNoteArgs, cx: &CallContext) -> Result<Value, ToolError> {
        let State(notes) =
            <State<Notes> as tool_runtime::tool::FromCallContext>::from_call_context(cx)?;
        let mut map = notes.0.lock().unwrap();
        let id = format!("note-{}", map.len() + 1);
        map.insert(id.clone(), args.title.clone());
        Ok(json!({"id": id, "title": args.title}))
    }

    fn required_state() -> Vec<tool_runtime::tool::StateRequirement> {
        vec![tool_runtime::tool::StateRequirement::of::<Notes>()]
    }
}

impl Reversible for CreateNote {
    fn inverse(_: &CreateNoteArgs, output: &Value) -> Option<InverseCall> {
        Some(InverseCall {
            tool: "delete_note".into(),
            arguments: json!({"id": output["id"]}),
        })
    }
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct DeleteNoteArgs {
    id: String,
}

struct DeleteNote;

impl Tool for DeleteNote {
    type Args = DeleteNoteArgs;
    type Output = Value;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> = LazyLock::new(|| {
            let mut d = ToolDefinition::new(
                "delete_note",
                "Delete a note.",
                &tool_runtime::schema::derive::<DeleteNoteArgs>(),
            );
            d.safety = Safety::Modify;
            d
        });
        &DEF
    }

    async fn call(args: DeleteNoteArgs, cx: &CallContext) -> Result<Value, ToolError> {
        let State(notes) =
            <State<Notes> as tool_runtime::tool::FromCallContext>::from_call_context(cx)?;
        match notes.0.lock().unwrap().remove(&args.id) {
            Some(_) => Ok(json!({"deleted": args.id})),
            None => Err(ToolError::new(ErrorCode::NOT_FOUND, "no such note")),
        }
    }
}

fn setup(person: &Person) -> (tool_runtime::executor::Executor, Notes) {
    setup_with(person, Arc::new(tool_runtime::store::MemoryStore::new()))
}

fn setup_with(
    person: &Person,
    store: Arc<dyn tool_runtime::store::Store>,
) -> (tool_runtime::executor::Executor, Notes) {
    let notes = Notes::default();
    let mut set = ToolSet::new().with_state(notes.clone());
    set.register::<CreateNote>().unwrap();
    set.register::<DeleteNote>().unwrap();
    let mut tag = def("tag_note", Safety::Create);
    tag.parameters = serde_json::value::RawValue::from_string(
        json!({"type": "object", "properties": {"note_id": {"type": "string"}, "tag": {"type": "string"}},
               "required": ["note_id", "tag"]})
        .to_string(),
    )
    .unwrap();
    echo(&mut set, tag, &Counter::default());
    let cfg = ExecutorConfig {
        auto_confirm_create: true,
        ..quick()
    };
    let exec = tool_runtime::executor::Executor::builder(set)
        .config(cfg)
        .store(store)
        .confirmation(person.clone())
        .reversible::<CreateNote>()
        .build()
        .unwrap();
    (exec, notes)
}

#[tokio::test]
async fn a_reversible_call_is_journaled_and_undone_once() {
    let person = Person::default();
    let (exec, notes) = setup(&person);
    let r = exec
        .call(
            &ToolCall::new("c1", "create_note", json!({"title": "Gadamer"})),
            CallContext::new(""),
        )
        .await;
    assert_eq!(r.value().unwrap()["id"], "note-1");
    assert_eq!(notes.0.lock().unwrap().len(), 1);

    let undo = exec.undo("c1", CallContext::new("")).await;
    assert_eq!(undo.call_id, "c1:undo");
    assert_eq!(undo.tool, "delete_note");
    assert_eq!(undo.value(), Some(&json!({"deleted": "note-1"})));
    assert!(notes.0.lock().unwrap().is_empty());
    assert!(
        person.asked().is_empty(),
        "the person asked for the undo: no confirmation"
    );

    let again = exec.undo("c1", CallContext::new("")).await;
    assert_eq!(
        again.outcome.error().unwrap().code.as_str(),
        "ALREADY_UNDONE"
    );
    let unknown = exec.undo("c-unknown", CallContext::new("")).await;
    assert_eq!(unknown.outcome.error().unwrap().code, ErrorCode::NOT_FOUND);
}

/// Providers reuse call ids across turns: two calls with the same id keep two undos, each
/// reverting its own effect, and the shared call id alone is refused as ambiguous.
#[tokio::test]
async fn calls_sharing_a_call_id_keep_one_undo_each() {
    let (exec, notes) = setup(&Person::default());
    let mut undo_ids = Vec::new();
    for title in ["Gadamer", "Ricoeur"] {
        let r = exec
            .call(
                &ToolCall::new("c1", "create_note", json!({"title": title})),
                CallContext::new(""),
            )
            .await;
        assert!(r.outcome.is_success(), "{:?}", r.outcome);
        undo_ids.push(r.undo_id().expect("journaled").to_owned());
    }
    assert_ne!(undo_ids[0], undo_ids[1]);
    assert_eq!(notes.0.lock().unwrap().len(), 2);

    let ambiguous = exec.undo("c1", CallContext::new("")).await;
    let error = ambiguous.outcome.error().expect("refused");
    assert_eq!(error.code.as_str(), "AMBIGUOUS");
    assert!(
        undo_ids
            .iter()
            .all(|id| error.message.contains(id.as_str())),
        "{}",
        error.message
    );
    assert_eq!(notes.0.lock().unwrap().len(), 2, "nothing undone");

    // each undo id reverts its own call
    let first = exec.undo(&undo_ids[0], CallContext::new("")).await;
    assert_eq!(first.value(), Some(&json!({"deleted": "note-1"})));
    assert_eq!(first.call_id, "c1:undo");
    // with one left, the call id names it
    let second = exec.undo("c1", CallContext::new("")).await;
    assert_eq!(second.value(), Some(&json!({"deleted": "note-2"})));
    assert!(notes.0.lock().unwrap().is_empty());
    let again = exec.undo(&undo_ids[1], CallContext::new("")).await;
    assert_eq!(
        again.outcome.error().unwrap().code.as_str(),
        "ALREADY_UNDONE"
    );

    // the audit trail names the undo id of each call it journaled
    let feed = exec.activity(&Default::default()).unwrap();
    let mut audited: Vec<&str> = feed.iter().filter_map(|r| r.undo_id.as_deref()).collect();
    audited.sort();
    let mut expected: Vec<&str> = undo_ids.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(audited, expected);
}

#[tokio::test]
async fn a_failed_undo_can_be_tried_again() {
    let (exec, notes) = setup(&Person::default());
    exec.call(
        &ToolCall::new("c1", "create_note", json!({"title": "x"})),
        CallContext::new(""),
    )
    .await;
    notes.0.lock().unwrap().clear(); // someone else removed it: the inverse fails
    let r = exec.undo("c1", CallContext::new("")).await;
    assert_eq!(r.outcome.error().unwrap().code, ErrorCode::NOT_FOUND);
    notes.0.lock().unwrap().insert("note-1".into(), "x".into());
    assert!(
        exec.undo("c1", CallContext::new(""))
            .await
            .outcome
            .is_success()
    );
}

#[tokio::test]
async fn a_chain_passes_earlier_outputs_by_pointer_and_validates_each_step() {
    let (exec, _) = setup(&Person::default());
    let steps: Vec<ChainStep> = serde_json::from_value(json!([
        {"id": "note", "tool": "create_note", "arguments": {"title": "Ricoeur"}},
        {"id": "tag", "tool": "tag_note", "arguments": {"note_id": {"$ref": "note#/id"}, "tag": "hermeneutics"}}
    ]))
    .unwrap();
    let r = exec.chain(&steps, CallContext::new("turn-1")).await;
    assert!(r.completed, "{r:?}");
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.steps[1].call_id, "turn-1.tag");
    assert_eq!(
        r.steps[1].value().unwrap(),
        &json!({"echo": {"note_id": "note-1", "tag": "hermeneutics"}})
    );

    // a reference to nothing stops the chain before the step runs
    let steps: Vec<ChainStep> = serde_json::from_value(json!([
        {"id": "a", "tool": "create_note", "arguments": {"title": "x"}},
        {"id": "b", "tool": "tag_note", "arguments": {"note_id": {"$ref": "a#/title"}, "tag": {"$ref": "a#/missing"}}}
    ]))
    .unwrap();
    let r = exec.chain(&steps, CallContext::new("turn-2")).await;
    assert!(!r.completed);
    assert_eq!(r.steps.len(), 1);
    let err = r.error.expect("unresolved reference");
    assert_eq!(err.violations[0].pointer, "/tag");

    // a reference to an object where the schema wants a string fails that step's validation
    let steps: Vec<ChainStep> = serde_json::from_value(json!([
        {"id": "a", "tool": "create_note", "arguments": {"title": "x"}},
        {"id": "b", "tool": "tag_note", "arguments": {"note_id": {"$ref": "a"}, "tag": "t"}}
    ]))
    .unwrap();
    let r = exec.chain(&steps, CallContext::new("turn-4")).await;
    assert!(!r.completed);
    let err = r.steps[1].outcome.error().expect("invalid step");
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(err.violations[0].pointer, "/note_id");

    // references to later steps are refused before anything runs
    let steps: Vec<ChainStep> = serde_json::from_value(json!([
        {"id": "a", "tool": "tag_note", "arguments": {"note_id": {"$ref": "b#/id"}, "tag": "t"}},
        {"id": "b", "tool": "create_note", "arguments": {"title": "x"}}
    ]))
    .unwrap();
    let r = exec.chain(&steps, CallContext::new("turn-3")).await;
    assert!(r.steps.is_empty());
    assert_eq!(r.error.unwrap().code, ErrorCode::INVALID_ARGUMENTS);
}

/// A chain longer than the limit is refused whole, before any step runs or is recorded; one at
/// the limit runs every step.
#[tokio::test]
async fn a_chain_longer_than_the_limit_runs_nothing() {
    use tool_runtime::executor::MAX_CHAIN_STEPS;
    let (exec, _) = setup(&Person::default());
    let steps = |n: usize| -> Vec<ChainStep> {
        (0..n)
            .map(|i| ChainStep {
                id: format!("s{i}"),
                tool: "create_note".into(),
                arguments: json!({"title": format!("note {i}")}),
            })
            .collect()
    };
    for n in [MAX_CHAIN_STEPS + 1, 20_000] {
        let r = exec.chain(&steps(n), CallContext::new("long")).await;
        assert!(!r.completed);
        assert!(r.steps.is_empty(), "nothing ran");
        let err = r.error.expect("refused");
        assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
        assert_eq!(err.details["limit"], MAX_CHAIN_STEPS);
        assert!(err.message.contains(&n.to_string()), "{}", err.message);
    }
    let r = exec
        .chain(&steps(MAX_CHAIN_STEPS), CallContext::new("full"))
        .await;
    assert!(r.completed, "{r:?}");
    assert_eq!(r.steps.len(), MAX_CHAIN_STEPS);
}

#[tokio::test]
async fn a_chain_stops_at_a_denied_step() {
    let person = Person::answering([Answer::No {
        reason: Some("not that one".into()),
    }]);
    let (exec, notes) = setup(&person);
    let steps: Vec<ChainStep> = serde_json::from_value(json!([
        {"id": "a", "tool": "create_note", "arguments": {"title": "x"}},
        {"id": "b", "tool": "delete_note", "arguments": {"id": {"$ref": "a#/id"}}},
        {"id": "c", "tool": "create_note", "arguments": {"title": "y"}}
    ]))
    .unwrap();
    let r = exec.chain(&steps, CallContext::new("t")).await;
    assert!(!r.completed);
    assert_eq!(r.steps.len(), 2);
    assert!(matches!(r.steps[1].outcome, Outcome::Denied { .. }));
    assert_eq!(person.asked()[0].preview.arguments, json!({"id": "note-1"}));
    assert_eq!(notes.0.lock().unwrap().len(), 1);
}

#[test]
fn a_tool_declared_reversible_without_an_undo_is_refused_at_build() {
    let mut set = ToolSet::new().with_state(Notes::default());
    set.register::<CreateNote>().unwrap();
    set.register::<DeleteNote>().unwrap();
    let err = tool_runtime::executor::Executor::builder(set)
        .config(quick())
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, tool_runtime::executor::BuildError::NoUndo { tool } if tool == "create_note"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("create_note") && text.contains("undo_with"),
        "{text}"
    );
}

#[tokio::test]
async fn the_confirmation_promises_an_undo_exactly_when_one_is_registered() {
    // create_note is reversible with a planner; delete_note is not; tag_note is not flagged
    // reversible but gets a planner, so it can be undone and says so
    let notes = Notes::default();
    let mut set = ToolSet::new().with_state(notes.clone());
    set.register::<CreateNote>().unwrap();
    set.register::<DeleteNote>().unwrap();
    echo(
        &mut set,
        def("tag_note", Safety::Create),
        &Counter::default(),
    );
    let person = Person::answering([Answer::Yes, Answer::Yes, Answer::Yes]);
    let exec = tool_runtime::executor::Executor::builder(set)
        .config(quick())
        .store(Arc::new(tool_runtime::store::MemoryStore::new()))
        .confirmation(person.clone())
        .reversible::<CreateNote>()
        .undo_with("tag_note", |_, _| {
            Some(InverseCall {
                tool: "tag_note".into(),
                arguments: json!({"text": "untag"}),
            })
        })
        .build()
        .unwrap();
    for (id, tool, args) in [
        ("c1", "create_note", json!({"title": "t"})),
        ("c2", "delete_note", json!({"id": "note-1"})),
        ("c3", "tag_note", json!({"text": "x"})),
    ] {
        let r = exec
            .call(&ToolCall::new(id, tool, args), CallContext::new(""))
            .await;
        assert!(r.outcome.is_success(), "{tool}: {:?}", r.outcome);
    }
    let promised: Vec<(String, bool)> = person
        .asked()
        .iter()
        .map(|r| (r.preview.tool.clone(), r.preview.reversible))
        .collect();
    assert_eq!(
        promised,
        [
            ("create_note".to_owned(), true),
            ("delete_note".to_owned(), false),
            ("tag_note".to_owned(), true),
        ]
    );
    // and the promises hold: the two that said so can be undone, the other cannot
    assert!(
        exec.undo("c3", CallContext::new(""))
            .await
            .outcome
            .is_success()
    );
    let r = exec.undo("c2", CallContext::new("")).await;
    assert_eq!(r.outcome.error().unwrap().code, ErrorCode::NOT_FOUND);
}

/// A store whose journal refuses every write (as a full disk would) and which is otherwise a
/// memory store.
struct NoJournal(tool_runtime::store::MemoryStore);

impl tool_runtime::store::Store for NoJournal {
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        self.0.put_pending(op)
    }
    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        self.0.get_pending(id)
    }
    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.0.list_pending()
    }
    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        self.0.resolve_pending(id, to)
    }
    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        self.0.complete_pending(id, outcome)
    }
    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.0.list_approved()
    }
    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        self.0.settle_approved(id, outcome)
    }
    fn scrub_decided(&self, id: &str, with: &Scrubbed) -> Result<bool, StoreError> {
        self.0.scrub_decided(id, with)
    }
    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        self.0.list_unreadable()
    }
    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError> {
        self.0.close_unreadable(id)
    }
    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        self.0.approve_gate(scope, tool)
    }
    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        self.0.is_gate_approved(scope, tool)
    }
    fn put_journal(&self, _: &JournalEntry) -> Result<(), StoreError> {
        Err(StoreError::new("database or disk is full"))
    }
    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        self.0.get_journal(id)
    }
    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.0.journal_of_call(call_id)
    }
    fn claim_undo(&self, call_id: &str) -> Result<bool, StoreError> {
        self.0.claim_undo(call_id)
    }
    fn release_undo(&self, call_id: &str) -> Result<(), StoreError> {
        self.0.release_undo(call_id)
    }
    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.0.append_audit(record)
    }
    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.0.query_audit(query)
    }
}

/// The journal write fails after a reversible call succeeded: the call's result stands, and the
/// execution says it cannot be undone instead of leaving the promise of the confirmation box.
#[tokio::test]
async fn a_call_whose_undo_cannot_be_journaled_says_it_cannot_be_undone() {
    let (exec, notes) = setup_with(
        &Person::default(),
        Arc::new(NoJournal(tool_runtime::store::MemoryStore::new())),
    );
    let r = exec
        .call(
            &ToolCall::new("c1", "create_note", json!({"title": "Gadamer"})),
            CallContext::new(""),
        )
        .await;
    assert!(r.outcome.is_success(), "{:?}", r.outcome);
    assert_eq!(notes.0.lock().unwrap().len(), 1);
    let Some(Undo::Unavailable { reason: why }) = r.undo.as_deref() else {
        panic!("the lost undo is reported: {:?}", r.undo)
    };
    assert!(why.contains("c1") && why.contains("disk is full"), "{why}");
    let undo = exec.undo("c1", CallContext::new("")).await;
    assert_eq!(undo.outcome.error().unwrap().code, ErrorCode::NOT_FOUND);

    // with a working journal, nothing is reported
    let (exec, _) = setup(&Person::default());
    let r = exec
        .call(
            &ToolCall::new("c2", "create_note", json!({"title": "Ricoeur"})),
            CallContext::new(""),
        )
        .await;
    assert!(
        matches!(r.undo.as_deref(), Some(Undo::Journaled { .. })),
        "{:?}",
        r.undo
    );
}
