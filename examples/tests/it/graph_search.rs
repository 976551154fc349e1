//! `search_web_for_evidence` against a local stand-in of the search service (a Tavily-style
//! `POST /search` on 127.0.0.1): the first-time gate asks once and says what the service is and
//! what leaves; the results become Source nodes linked to the node; the tool's rate limit
//! refuses the extra call with a structured error; a failing or missing service is a structured
//! error (retryable when it may pass later); the undo removes what the search added.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::http::StatusCode;
use axum::routing::post;
use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::executor::{
    Answer, ConfirmationRequest, Executor, ExecutorConfig, FnConfirmer, Outcome, Window,
};
use tool_runtime::{CallContext, ErrorCode};

use examples::graph::{self, GraphDb, SearchService, Services, Similarity, Summarizer};

use crate::graph_tools::call;

/// The stand-in service: records each request body; answers `status` with four results (one
/// supporting, one contradicting, one barely relevant, the first again) when it is 200.
async fn stand_in(status: StatusCode) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/search",
        post(move |Json(body): Json<Value>| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(body);
                if status != StatusCode::OK {
                    return Err(status);
                }
                Ok(Json(json!({"query": "q", "results": [
                    {"url": "https://example.org/caffeine-fatigue", "title": "Caffeine and fatigue",
                     "content": "Caffeine delays fatigue and increases productivity in shift workers.",
                     "score": 0.91},
                    {"url": "https://example.org/null-result", "title": "A null result",
                     "content": "The trial found no effect of caffeine on productivity.",
                     "score": 0.72},
                    {"url": "https://example.org/coffee-houses", "title": "Coffee houses",
                     "content": "A history of coffee houses in Vienna.", "score": 0.12},
                    {"url": "https://example.org/caffeine-fatigue", "title": "Caffeine and fatigue",
                     "content": "The same page, listed twice.", "score": 0.9}
                ]})))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// An executor answering every confirmation yes and recording the requests; external tools run
/// without asking once their gate is passed; the search limited to two calls a minute.
fn executor(
    db: &GraphDb,
    search: SearchService,
    dir: &tempfile::TempDir,
) -> (Executor, Arc<Mutex<Vec<ConfirmationRequest>>>) {
    let asked: Arc<Mutex<Vec<ConfirmationRequest>>> = Arc::default();
    let log = asked.clone();
    let services = Services {
        similarity: Similarity::words(),
        summarizer: Summarizer::extractive(),
        search,
    };
    let mut config = ExecutorConfig {
        auto_confirm_external: true,
        ..Default::default()
    };
    config
        .rate_limits
        .tools
        .insert("search_web_for_evidence".into(), Window::per_minute(2));
    let builder = Executor::builder(graph::toolset(db.clone(), services.clone()))
        .config(graph::with_search_limit(config))
        .confirmation(FnConfirmer(move |r: ConfirmationRequest| {
            log.lock().unwrap().push(r);
            async { Answer::Yes }.boxed()
        }));
    let store = examples::open_store(&dir.path().join("store.sqlite")).unwrap();
    let exec = graph::configure(builder, db.clone(), services, store)
        .build()
        .unwrap();
    (exec, asked)
}

fn cx(id: &str) -> CallContext {
    let mut cx = CallContext::new(id);
    cx.session = Some("s1".into());
    cx
}

#[tokio::test]
async fn the_search_records_sources_behind_a_gate_and_a_rate_limit() {
    let (url, seen) = stand_in(StatusCode::OK).await;
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let (exec, asked) = executor(&db, SearchService::new(&url), &dir);

    let first = exec
        .call(
            &call("w1", "search_web_for_evidence", json!({"node_id": "hyp-1"})),
            cx("w1"),
        )
        .await;
    assert!(first.outcome.is_success(), "{:?}", first.outcome);
    let v = first.value().unwrap().clone();

    // The gate asked once, saying what the service is and what leaves the machine.
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        let gate = asked[0]
            .preview
            .first_use
            .as_ref()
            .expect("a first-time gate");
        assert!(
            gate.service.contains("TOOLS_SEARCH_URL"),
            "{}",
            gate.service
        );
        assert!(
            gate.service.contains("nothing else leaves"),
            "{}",
            gate.service
        );
        assert!(
            gate.data_leaving.contains(&"node_id".to_owned()),
            "{gate:?}"
        );
    }
    // The node's text went to the service.
    assert_eq!(
        seen.lock().unwrap()[0]["query"],
        "evidence for Caffeine increases productivity by delaying fatigue."
    );

    // Four results, three URLs: three Source nodes and three links.
    assert_eq!(
        (&v["sources_created"], &v["links_created"]),
        (&json!(3), &json!(3)),
        "{v}"
    );
    let results = v["results"].as_array().unwrap();
    let kinds: Vec<&str> = results
        .iter()
        .map(|r| r["evidence_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["supporting", "contradicting", "neutral", "supporting"]
    );
    assert_eq!(results[3]["source"], results[0]["source"]);
    // Each result is a Source node with its URL, linked to the hypothesis by what it says.
    let mut links = Vec::new();
    for r in &results[..3] {
        let id = r["source"].as_str().unwrap();
        let src = db.node(id).unwrap();
        assert_eq!(src.kind, "Source");
        assert_eq!(src.url.as_deref(), r["url"].as_str());
        assert!(src.provenance[0].contains("search_web_for_evidence for hyp-1"));
        let e = db
            .edges_of(id)
            .unwrap()
            .into_iter()
            .find(|e| e.to_id == "hyp-1")
            .expect("linked to hyp-1");
        links.push(e.rel_type);
    }
    assert_eq!(links, ["SUPPORTS", "CONTRADICTS", "RELATES_TO"]);

    // Past the gate the next call runs at once; the same URLs are reused, not duplicated.
    let second = exec
        .call(
            &call(
                "w2",
                "search_web_for_evidence",
                json!({"node_id": "hyp-1", "evidence_type": "supporting"}),
            ),
            cx("w2"),
        )
        .await;
    let v2 = second.value().unwrap();
    assert_eq!(asked.lock().unwrap().len(), 1, "asked again");
    assert_eq!(
        (&v2["sources_created"], &v2["links_created"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(v2["results"].as_array().unwrap().len(), 2);

    // The third call in the minute is refused by the rate limit, without reaching the service.
    let third = exec
        .call(
            &call("w3", "search_web_for_evidence", json!({"node_id": "obs-1"})),
            cx("w3"),
        )
        .await;
    let err = third.outcome.error().expect("refused");
    assert_eq!(err.code, ErrorCode::RATE_LIMITED);
    assert!(err.retryable);
    assert_eq!(seen.lock().unwrap().len(), 2);

    // Undoing the first search removes its sources and links.
    let undone = exec.undo(first.undo_id().unwrap(), cx("u1")).await;
    assert!(undone.outcome.is_success(), "{:?}", undone.outcome);
    assert_eq!(db.nodes().unwrap().len(), 6);
    assert_eq!(db.edges().unwrap().len(), 5);
}

#[tokio::test]
async fn a_failing_or_missing_service_is_a_structured_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let search = |id: &str| call(id, "search_web_for_evidence", json!({"node_id": "hyp-1"}));

    let (url, seen) = stand_in(StatusCode::INTERNAL_SERVER_ERROR).await;
    let (exec, _) = executor(&db, SearchService::new(&url), &dir);
    let r = exec.call(&search("f1"), cx("f1")).await;
    let err = r.outcome.error().expect("failed");
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
    assert!(err.retryable && err.message.contains("500"), "{err:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "an external call is not retried"
    );

    // Nothing listens on port 9: unreachable, retryable.
    let (exec, _) = executor(&db, SearchService::new("http://127.0.0.1:9"), &dir);
    let r = exec.call(&search("f2"), cx("f2")).await;
    let err = r.outcome.error().expect("failed");
    assert!(
        err.retryable && err.message.contains("unreachable"),
        "{err:?}"
    );

    // No service configured: a clear refusal naming the setting, not retryable.
    let (exec, _) = executor(&db, SearchService::none(), &dir);
    let r = exec.call(&search("f3"), cx("f3")).await;
    let err = r.outcome.error().expect("failed");
    assert_eq!(err.code.as_str(), "NOT_CONFIGURED");
    assert!(!err.retryable);
    assert!(
        err.recover_action
            .as_deref()
            .unwrap()
            .contains("TOOLS_SEARCH_URL")
    );

    // No source was recorded by any of them.
    assert_eq!(db.nodes().unwrap().len(), 6);
    assert!(matches!(r.outcome, Outcome::Error { .. }));
}
