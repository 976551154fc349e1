//! The research assistant's tools without a model, through the executor: searches, the
//! confirmation with its previews, undo, annotations, and `fetch_doi` behind the first-time gate
//! against a real HTTP server on 127.0.0.1.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::display::change_lines;
use tool_runtime::executor::{
    Answer, ConfirmationHandler, ConfirmationRequest, Decider, Executor, ExecutorConfig,
    FnConfirmer, Outcome, TerminalConfirmer,
};
use tool_runtime::{CallContext, ErrorCode, ToolCall, hydrate::Arguments};

use examples::input::SharedInput;
use examples::research::{self, Db, DoiService, Services};

/// Answers confirmations from a script, in order (Yes once it runs out), and records what it
/// was asked.
#[derive(Clone, Default)]
pub(crate) struct Person {
    asked: Arc<Mutex<Vec<ConfirmationRequest>>>,
    answers: Arc<Mutex<VecDeque<Answer>>>,
}

impl Person {
    pub(crate) fn answering(answers: impl IntoIterator<Item = Answer>) -> Self {
        let p = Person::default();
        p.answers.lock().unwrap().extend(answers);
        p
    }

    pub(crate) fn asked(&self) -> Vec<ConfirmationRequest> {
        self.asked.lock().unwrap().clone()
    }

    pub(crate) fn handler(&self) -> Arc<dyn ConfirmationHandler> {
        let me = self.clone();
        Arc::new(FnConfirmer(move |req: ConfirmationRequest| {
            me.asked.lock().unwrap().push(req);
            let answer = me
                .answers
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(Answer::Yes);
            async move { answer }.boxed()
        }))
    }
}

struct Fixture {
    db: Db,
    exec: Executor,
    person: Person,
    _dir: tempfile::TempDir,
}

fn fixture(person: Person, doi_url: &str, config: ExecutorConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("research.sqlite")).unwrap();
    let doi = DoiService {
        base_url: doi_url.into(),
        http: reqwest::Client::new(),
    };
    let exec = research::executor(
        research::toolset(db.clone(), Services::with_doi(doi)),
        db.clone(),
        &dir.path().join("store.sqlite"),
        person.handler(),
        config,
    )
    .unwrap();
    Fixture {
        db,
        exec,
        person,
        _dir: dir,
    }
}

/// An address nothing listens on (the discard port is closed on test machines).
pub(crate) const NOWHERE: &str = "http://127.0.0.1:9";

pub(crate) fn cx(session: &str) -> CallContext {
    CallContext {
        session: Some(session.into()),
        ..CallContext::default()
    }
}

async fn call(f: &Fixture, id: &str, tool: &str, args: Value) -> Outcome {
    f.exec
        .call(&ToolCall::new(id, tool, Arguments::Json(args)), cx("s1"))
        .await
        .outcome
}

pub(crate) fn value(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Success { value, .. } => value,
        other => panic!("expected success: {other:?}"),
    }
}

pub(crate) fn error(outcome: Outcome) -> tool_runtime::ToolError {
    match outcome {
        Outcome::Error { error } => *error,
        other => panic!("expected an error: {other:?}"),
    }
}

#[tokio::test]
async fn searches_are_read_only_and_run_without_asking() {
    let f = fixture(Person::default(), NOWHERE, ExecutorConfig::default());
    let hits = value(
        call(
            &f,
            "s1",
            "search_bibliography",
            json!({"query": "toolformer"}),
        )
        .await,
    );
    assert_eq!(hits.as_array().unwrap().len(), 1);
    assert_eq!(hits[0]["key"], "schick2023");
    assert_eq!(hits[0]["doi"], "10.48550/arXiv.2302.04761");
    let by_year = value(call(&f, "s2", "search_bibliography", json!({"query": "2023"})).await);
    assert_eq!(by_year.as_array().unwrap().len(), 3);
    let none = value(call(&f, "s3", "search_bibliography", json!({"query": "quantum"})).await);
    assert_eq!(none, json!([]));
    let notes = value(call(&f, "s4", "search_notes", json!({"query": "ReAct"})).await);
    assert_eq!(notes[0]["title"], "Tool use survey");
    let all = value(call(&f, "s5", "search_notes", json!({"query": ""})).await);
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert!(f.person.asked().is_empty(), "read-only tools never ask");
}

#[tokio::test]
async fn creating_asks_and_a_denial_creates_nothing() {
    let f = fixture(
        Person::answering([Answer::No {
            reason: Some("not now".into()),
        }]),
        NOWHERE,
        ExecutorConfig::default(),
    );
    let denied = call(
        &f,
        "c1",
        "create_note",
        json!({"title": "Llamas", "body": "Llamas are camelids."}),
    )
    .await;
    match denied {
        Outcome::Denied { reason, by } => {
            assert_eq!(reason, "not now");
            assert_eq!(by, Decider::User);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.db.all_notes().unwrap().len(), 2);

    let created = value(
        call(
            &f,
            "c2",
            "create_note",
            json!({"title": "  Llamas ", "body": "Llamas are camelids."}),
        )
        .await,
    );
    assert_eq!(created["title"], "Llamas", "the title is trimmed");
    let asked = f.person.asked();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        asked[1].preview.intent,
        "Create a note titled \u{201c}  Llamas \u{201d}"
    );
    assert!(asked[1].preview.reversible);
    let note = f.db.note(created["id"].as_i64().unwrap()).unwrap();
    assert_eq!(note.body, "Llamas are camelids.");

    // An empty title is the tool's own refusal, with what to do instead; nothing is stored.
    let err = error(call(&f, "c3", "create_note", json!({"title": " ", "body": "x"})).await);
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert!(err.recover_action.unwrap().contains("title"));
    // A missing argument never reaches the person or the tool.
    let err = error(call(&f, "c4", "create_note", json!({"title": "x"})).await);
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(
        f.person.asked().len(),
        3,
        "the empty title was asked about, the invalid call not"
    );
    assert_eq!(f.db.all_notes().unwrap().len(), 3);
}

#[tokio::test]
async fn an_edit_shows_before_and_after_and_can_be_undone() {
    let f = fixture(Person::default(), NOWHERE, ExecutorConfig::default());
    let edited = value(
        call(
            &f,
            "e1",
            "edit_note",
            json!({"id": 2, "body": "Attention replaces recurrence.", "title": "Attention"}),
        )
        .await,
    );
    assert_eq!(
        edited["previous_body"],
        "Self-attention replaces recurrence; see vaswani2017."
    );
    let preview = &f.person.asked()[0].preview;
    assert_eq!(preview.intent, "Rewrite note 2");
    let change = preview.change.as_ref().expect("edits are previewed");
    assert_eq!(
        change_lines(change),
        [
            "~ title: “Transformers” → “Attention”",
            "~ text: “Self-attention replaces recurrence; see vaswani2017.” → \
             “Attention replaces recurrence.”",
        ]
    );
    assert_eq!(f.db.note(2).unwrap().title, "Attention");

    let undo = f.exec.undo("e1", CallContext::default()).await;
    assert!(undo.outcome.is_success(), "{:?}", undo.outcome);
    let back = f.db.note(2).unwrap();
    assert_eq!(
        back.body,
        "Self-attention replaces recurrence; see vaswani2017."
    );
    assert_eq!(back.title, "Transformers", "undo restores the title too");
    // A second undo of the same call does nothing.
    let again = f.exec.undo("e1", CallContext::default()).await;
    assert!(!again.outcome.is_success(), "{:?}", again.outcome);

    // Editing a note that does not exist: the preview says why, and the tool refuses.
    let err = error(call(&f, "e2", "edit_note", json!({"id": 99, "body": "x"})).await);
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    let preview = &f.person.asked()[1].preview;
    let lines = change_lines(preview.change.as_ref().unwrap());
    assert!(
        lines[0].starts_with("  The change cannot be shown: ") && lines[0].contains("99"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn create_and_delete_are_undone_by_their_inverse_calls() {
    let f = fixture(Person::default(), NOWHERE, ExecutorConfig::default());
    let created = value(
        call(
            &f,
            "c1",
            "create_note",
            json!({"title": "Alpacas", "body": "Also camelids."}),
        )
        .await,
    );
    let id = created["id"].as_i64().unwrap();
    let undo = f.exec.undo("c1", CallContext::default()).await;
    assert!(undo.outcome.is_success(), "{:?}", undo.outcome);
    assert_eq!(undo.tool, "delete_note");
    assert_eq!(f.db.note(id).unwrap_err().code, ErrorCode::NOT_FOUND);

    let deleted = value(call(&f, "d1", "delete_note", json!({"id": 1})).await);
    assert_eq!(deleted["title"], "Tool use survey");
    let preview = f.person.asked().last().unwrap().preview.clone();
    let lines = change_lines(&preview.change.unwrap());
    assert_eq!(
        lines[0], "- note 1: “Tool use survey”",
        "the person sees what would be deleted"
    );
    assert!(lines[1].starts_with("- its text: “"), "{lines:?}");
    assert!(f.db.note(1).is_err());
    let undo = f.exec.undo("d1", CallContext::default()).await;
    assert!(undo.outcome.is_success(), "{:?}", undo.outcome);
    assert_eq!(undo.tool, "restore_note");
    assert_eq!(f.db.note(1).unwrap().title, "Tool use survey");

    // Only the journaled calls can be undone.
    let unknown = f.exec.undo("never-made", CallContext::default()).await;
    assert!(!unknown.outcome.is_success());
}

#[tokio::test]
async fn merging_previews_the_notes_and_replaces_them() {
    let f = fixture(Person::default(), NOWHERE, ExecutorConfig::default());
    let merged = value(
        call(
            &f,
            "m1",
            "merge_notes",
            json!({"ids": [1, 2], "title": "Background"}),
        )
        .await,
    );
    let id = merged["id"].as_i64().unwrap();
    let body = f.db.note(id).unwrap().body;
    assert!(body.starts_with("## Tool use survey\n"), "{body}");
    assert!(body.contains("## Transformers\nSelf-attention"), "{body}");
    assert!(f.db.note(1).is_err() && f.db.note(2).is_err());
    let change = f.person.asked()[0].preview.change.clone().unwrap();
    assert_eq!(
        change_lines(&change),
        [
            "+ note: “Background”",
            "- note 1: “Tool use survey”",
            "- note 2: “Transformers”",
            "  The new note holds the text of the 2 notes it replaces.",
        ]
    );

    // One note, or the same note twice, is not a merge: refused before anything changes.
    for (i, ids) in [json!([id]), json!([id, id])].into_iter().enumerate() {
        let err = error(
            call(
                &f,
                &format!("m{}", i + 2),
                "merge_notes",
                json!({"ids": ids, "title": "x"}),
            )
            .await,
        );
        assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
        assert!(err.recover_action.unwrap().contains("edit_note"));
    }
    // A missing note: nothing is created or deleted.
    let err = error(
        call(
            &f,
            "m4",
            "merge_notes",
            json!({"ids": [id, 42], "title": "x"}),
        )
        .await,
    );
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    assert_eq!(f.db.all_notes().unwrap().len(), 1);
    assert_eq!(f.db.note(id).unwrap().title, "Background");
}

#[tokio::test]
async fn annotations_attach_to_existing_entries_only() {
    let f = fixture(Person::default(), NOWHERE, ExecutorConfig::default());
    let added = value(
        call(
            &f,
            "a1",
            "add_annotation",
            json!({"entry_id": 1, "text": "Read section 3."}),
        )
        .await,
    );
    assert_eq!(added["entry_id"], 1);
    assert_eq!(f.db.annotations(1).unwrap(), ["Read section 3."]);
    assert_eq!(
        f.person.asked()[0].preview.intent,
        "Annotate bibliography entry 1"
    );
    let err = error(
        call(
            &f,
            "a2",
            "add_annotation",
            json!({"entry_id": 77, "text": "x"}),
        )
        .await,
    );
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    assert!(err.recover_action.unwrap().contains("search_bibliography"));
}

/// A DOI service on 127.0.0.1 in the shape of Crossref's `/works/{doi}`: one known DOI, 404 for
/// any other; counts its requests.
async fn doi_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let hits: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = hits.clone();
    let app = axum::Router::new().route(
        "/works/{*doi}",
        get(move |Path(doi): Path<String>| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(doi.clone());
                if doi == "10.48550/arXiv.2210.03629" {
                    Ok(axum::Json(json!({"status": "ok", "message": {
                        "title": ["ReAct: Synergizing Reasoning and Acting in Language Models"],
                        "author": [{"given": "Shunyu", "family": "Yao"}],
                        "issued": {"date-parts": [[2022, 10, 6]]},
                        "publisher": "arXiv"
                    }})))
                } else {
                    Err(StatusCode::NOT_FOUND)
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/works", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hits)
}

#[tokio::test]
async fn fetch_doi_passes_the_first_time_gate_once_per_session() {
    let (url, hits) = doi_server().await;
    let config = ExecutorConfig {
        // Past its gate an external tool runs without asking, so the gate is what is tested.
        auto_confirm_external: true,
        persist_first_time_approvals: false,
        ..ExecutorConfig::default()
    };
    let f = fixture(
        Person::answering([Answer::No { reason: None }, Answer::Yes]),
        &url,
        config,
    );
    let doi = json!({"doi": "10.48550/arXiv.2210.03629"});
    let exec = &f.exec;
    let on = |id: &str, session: &str| {
        let call = ToolCall::new(id, "fetch_doi", Arguments::Json(doi.clone()));
        let cx = cx(session);
        async move { exec.call(&call, cx).await }
    };

    // First use: the person is told what leaves the machine, and says no. Nothing is sent.
    let denied = on("f1", "s1").await.outcome;
    assert!(matches!(denied, Outcome::Denied { .. }), "{denied:?}");
    assert!(hits.lock().unwrap().is_empty());
    let first = f.person.asked()[0]
        .preview
        .first_use
        .clone()
        .expect("the gate");
    assert_eq!(first.data_leaving, ["doi"]);
    assert!(first.message.contains("first time"), "{}", first.message);

    // Still closed, so asked again; a yes opens it and the lookup runs.
    let found = value(on("f2", "s1").await.outcome);
    assert_eq!(
        found["title"][0],
        "ReAct: Synergizing Reasoning and Acting in Language Models"
    );
    assert_eq!(found["author"][0]["family"], "Yao");
    assert_eq!(found["publisher"], "arXiv");
    assert_eq!(f.person.asked().len(), 2);

    // Open for the rest of the session: no more questions.
    value(on("f3", "s1").await.outcome);
    assert_eq!(f.person.asked().len(), 2);
    assert_eq!(hits.lock().unwrap().len(), 2);

    // Another session meets the gate again (approvals are not persisted here).
    value(on("f4", "s2").await.outcome);
    assert_eq!(f.person.asked().len(), 3);
    assert!(f.person.asked()[2].preview.first_use.is_some());

    // An unknown DOI is the service's 404, with what to do instead.
    let err = error(
        f.exec
            .call(
                &ToolCall::new(
                    "f5",
                    "fetch_doi",
                    Arguments::Json(json!({"doi": "10.1/nothing"})),
                ),
                cx("s1"),
            )
            .await
            .outcome,
    );
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    assert!(err.recover_action.unwrap().contains("typos"));
}

#[tokio::test]
async fn fetch_doi_offline_fails_with_a_recover_action() {
    let f = fixture(Person::default(), NOWHERE, ExecutorConfig::default());
    let err = error(
        call(
            &f,
            "f1",
            "fetch_doi",
            json!({"doi": "10.48550/arXiv.1706.03762"}),
        )
        .await,
    );
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
    assert!(err.message.contains("unreachable"), "{}", err.message);
    assert!(err.recover_action.unwrap().contains("local bibliography"));
}

/// The terminal confirmation reading from the input the interactive prompt shares: a typed
/// answer confirms, and after a confirmation that nobody answered, the next line still reaches
/// the prompt instead of being swallowed.
#[tokio::test]
async fn the_terminal_confirmation_and_the_prompt_share_one_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("research.sqlite")).unwrap();
    let doi = DoiService {
        base_url: NOWHERE.into(),
        http: reqwest::Client::new(),
    };
    let (input, typed) = SharedInput::channel();
    let screen = tempfile::NamedTempFile::new().unwrap();
    let terminal = TerminalConfirmer::new(input.reader(), screen.reopen().unwrap());
    let exec = research::executor(
        research::toolset(db.clone(), Services::with_doi(doi)),
        db.clone(),
        &dir.path().join("store.sqlite"),
        Arc::new(terminal),
        ExecutorConfig {
            confirmation_timeout_ms: 200,
            ..ExecutorConfig::default()
        },
    )
    .unwrap();
    let create = |id: &str, title: &str| {
        ToolCall::new(
            id,
            "create_note",
            Arguments::Json(json!({"title": title, "body": "b"})),
        )
    };

    typed.send(b"y\n".to_vec()).unwrap();
    let yes = exec
        .call(&create("t1", "Typed yes"), CallContext::default())
        .await;
    assert!(yes.outcome.is_success(), "{:?}", yes.outcome);

    // Nobody answers this one: it times out and is denied.
    let unanswered = exec
        .call(&create("t2", "Unanswered"), CallContext::default())
        .await;
    assert!(
        matches!(unanswered.outcome, Outcome::Denied { .. }),
        "{:?}",
        unanswered.outcome
    );
    // The next line is the user's next question, and the prompt gets it.
    typed.send(b"what did I write?\n".to_vec()).unwrap();
    assert_eq!(
        input.next_line().await.as_deref(),
        Some("what did I write?")
    );

    let titles: Vec<String> = db
        .all_notes()
        .unwrap()
        .into_iter()
        .map(|n| n.title)
        .collect();
    assert!(titles.contains(&"Typed yes".to_owned()));
    assert!(!titles.contains(&"Unanswered".to_owned()));
    let shown = std::fs::read_to_string(screen.path()).unwrap();
    assert!(
        shown.contains("Create a note titled \u{201c}Typed yes\u{201d}"),
        "{shown}"
    );
    assert!(shown.contains("Proceed? [Y/n/e]"), "{shown}");
}
