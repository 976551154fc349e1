//! End to end: the research assistant against a real llama.cpp server running SmolLM2-135M
//! (real HTTP, a real model's tool call, hydrated, confirmed by the test, executed, SQLite checked).
//!
//! Needs `TOOLS_LLAMA_URL` (e.g. `http://127.0.0.1:8089`, set by `.ci/run` after
//! `scripts/llama-server.sh start`). Without it the test prints why and passes vacuously, except
//! when `CI` is set: then it fails.

use std::sync::{Arc, Mutex};

use crate::support;
use examples::research::{self, Db, DoiService, Services};
use test_support::llama_url;

use examples::setup;
use futures::FutureExt;
use tool_providers::agent::{Agent, AgentConfig, TranscriptEntry};
use tool_providers::codec::ToolChoice;
use tool_runtime::executor::{
    Answer, ConfirmationRequest, Decider, ExecutorConfig, FnConfirmer, Status,
};
use tool_runtime::select::PickOptions;

#[tokio::test]
async fn the_model_creates_a_note_after_the_user_confirms_it() {
    let Some(url) = llama_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("research.sqlite")).unwrap();
    let before = db.all_notes().unwrap().len();
    let doi = DoiService {
        base_url: "http://127.0.0.1:9".into(),
        http: reqwest_client(),
    };

    let asked: Arc<Mutex<Vec<ConfirmationRequest>>> = Arc::default();
    let seen = asked.clone();
    let confirmer = FnConfirmer(move |req: ConfirmationRequest| {
        seen.lock().unwrap().push(req);
        async { Answer::Yes }.boxed()
    });
    let executor = research::executor(
        research::toolset(db.clone(), Services::with_doi(doi)),
        db.clone(),
        &dir.path().join("store.sqlite"),
        Arc::new(confirmer),
        ExecutorConfig::default(),
    )
    .unwrap();
    let config = AgentConfig {
        system: Some(research::SYSTEM.into()),
        first_choice: Some(ToolChoice::Required),
        // Every request must call a tool, and a few requests are allowed: a 135M model sampling
        // at llama.cpp's default temperature makes an invalid call about one time in three (a
        // string never closed before the server's token cap, a missing argument). Each refusal
        // goes back to it with the position or pointer, and it tries again.
        choice: ToolChoice::Required,
        retry_budget: 3,
        selection: Some(PickOptions::new().max_candidates(1).allow_unsafe(true)),
        max_iterations: 4,
        ..Default::default()
    };
    let agent = Agent::new(setup::local(&url).model, executor, config);
    let report = support::run_until_a_valid_call(
        &agent,
        "Create a note titled Llamas saying that llamas are camelids.",
        &asked,
        || db.all_notes().unwrap().len() == before,
    )
    .await;

    let ran = support::confirmed_calls(&report, "create_note", &asked.lock().unwrap());
    let refused = report
        .audit
        .iter()
        .filter(|r| r.tool == "create_note" && r.status != Status::Success);
    for refused in refused {
        // what policy refuses here: unparsable JSON or arguments that do not fit the schema
        let code = refused.error_code.as_deref().unwrap_or_default();
        assert!(
            code == "INVALID_JSON" || code == "INVALID_ARGUMENTS",
            "{refused:#?}"
        );
    }

    // The database has exactly the notes that ran, as the model asked for them.
    let after = db.all_notes().unwrap();
    assert_eq!(after.len(), before + ran.len(), "{after:#?}");
    for (row, rec) in after[before..].iter().zip(&ran) {
        let args = rec.arguments.as_ref().expect("arguments are audited");
        assert_eq!(
            args["title"].as_str().unwrap().trim(),
            row.title,
            "{after:#?}"
        );
        assert_eq!(args["body"], row.body.as_str(), "{after:#?}");
    }
    assert!(
        report.usage.input_tokens > 0,
        "usage was read from the server's answer"
    );
}

#[tokio::test]
async fn a_search_runs_without_confirmation() {
    let Some(url) = llama_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("research.sqlite")).unwrap();
    let doi = DoiService {
        base_url: "http://127.0.0.1:9".into(),
        http: reqwest_client(),
    };
    let asked: Arc<Mutex<Vec<ConfirmationRequest>>> = Arc::default();
    let seen = asked.clone();
    let confirmer = FnConfirmer(move |req: ConfirmationRequest| {
        seen.lock().unwrap().push(req);
        async {
            Answer::No {
                reason: Some("not expected".into()),
            }
        }
        .boxed()
    });
    let executor = research::executor(
        research::toolset(db.clone(), Services::with_doi(doi)),
        db.clone(),
        &dir.path().join("store.sqlite"),
        Arc::new(confirmer),
        ExecutorConfig::default(),
    )
    .unwrap();
    let config = AgentConfig {
        first_choice: Some(ToolChoice::Required),
        choice: ToolChoice::Required,
        retry_budget: 3,
        selection: Some(PickOptions::new().max_candidates(1)),
        max_iterations: 4,
        ..Default::default()
    };
    let agent = Agent::new(setup::local(&url).model.streaming(true), executor, config);
    let report = agent
        .run("Search the bibliography for Toolformer")
        .await
        .expect("the local server answered");
    let searches: Vec<_> = report
        .audit
        .iter()
        .filter(|r| r.tool == "search_bibliography")
        .collect();
    assert!(
        searches.iter().any(|r| r.status == Status::Success),
        "a valid search_bibliography call: {:#?}",
        report.transcript
    );
    for rec in &searches {
        // Read-only, or refused as malformed: decided by policy, never by a person.
        assert_eq!(rec.decided_by, Decider::Policy, "{rec:#?}");
        if rec.status != Status::Success {
            assert_eq!(rec.attempts, 0, "{rec:#?}");
        }
    }
    assert!(asked.lock().unwrap().is_empty(), "nobody was asked");
    // The results that went back to the model are the database's entries for the model's query.
    for entry in &report.transcript {
        if let TranscriptEntry::Tool {
            tool,
            status: Status::Success,
            result,
            call_id,
        } = entry
        {
            let call = report
                .audit
                .iter()
                .find(|r| &r.call_id == call_id)
                .expect("audited");
            let query = call.arguments.as_ref().unwrap()["query"]
                .as_str()
                .unwrap()
                .to_owned();
            let expected =
                serde_json::to_value(db.search_bibliography(&query, 10).unwrap()).unwrap();
            assert_eq!(tool, "search_bibliography");
            assert_eq!(result, &expected, "query {query:?}");
        }
    }
    assert_eq!(db.all_notes().unwrap().len(), 2, "a search changes nothing");
}

fn reqwest_client() -> reqwest::Client {
    reqwest::Client::new()
}
