//! The research assistant's external tools (`gnorm_annotate`, `citation_graph`,
//! `search_catalogue`) through the executor, against stand-ins of the services started on
//! 127.0.0.1 in the shapes of their APIs (GNORM's annotation endpoint, Semantic Scholar's Graph
//! API, Open Library's search): what leaves the machine, the first-time gate and its "learn
//! more", the results with their execution time and confidences, and every way a service can
//! fail.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::executor::{Answer, ExecutorConfig, Outcome, RetryConfig, TerminalConfirmer};
use tool_runtime::{ErrorCode, ToolCall, hydrate::Arguments};

use examples::input::SharedInput;
use examples::research::{self, Db, DoiService, Services, display};

use super::research::{NOWHERE, Person, cx, error, value};
use super::research_stand_ins::{Mode, REACT, stand_ins};

struct Fixture {
    exec: tool_runtime::executor::Executor,
    person: Person,
    _dir: tempfile::TempDir,
}

fn services(base: &str, http: reqwest::Client) -> Services {
    Services::with_doi(DoiService {
        base_url: NOWHERE.into(),
        http: http.clone(),
    })
    .gnorm(Some(format!("{base}/gnorm")))
    .citations(Some(format!("{base}/s2/graph/v1")))
    .catalogue(Some(format!("{base}/ol")))
    .http(http)
}

/// Past its gate an external tool runs without asking here, so what is asked is the gate.
fn gated() -> ExecutorConfig {
    ExecutorConfig {
        auto_confirm_external: true,
        persist_first_time_approvals: false,
        ..ExecutorConfig::default()
    }
}

fn fixture(person: Person, services: Services, config: ExecutorConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("research.sqlite")).unwrap();
    let exec = research::executor(
        research::toolset(db.clone(), services),
        db,
        &dir.path().join("store.sqlite"),
        person.handler(),
        config,
    )
    .unwrap();
    Fixture {
        exec,
        person,
        _dir: dir,
    }
}

async fn call(f: &Fixture, id: &str, tool: &str, args: Value) -> Outcome {
    f.exec
        .call(&ToolCall::new(id, tool, Arguments::Json(args)), cx("s1"))
        .await
        .outcome
}

const PASSAGE: &str = "Augustine of Hippo developed his doctrine of divine illumination in \
response to skeptical challenges.";

#[tokio::test]
async fn gnorm_gets_the_passage_and_nothing_else_and_its_annotations_come_back() {
    let (base, stand) = stand_ins().await;
    let f = fixture(
        Person::default(),
        services(&base, reqwest::Client::new()),
        gated(),
    );
    let found = value(call(&f, "g1", "gnorm_annotate", json!({"text": PASSAGE})).await);

    // What left the machine: the passage, as the only field; none of the user's notes.
    let seen = stand.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/gnorm/annotate");
    assert_eq!(seen[0].body, Some(json!({"text": PASSAGE})));
    let sent = seen[0].body.as_ref().unwrap().to_string();
    assert!(!sent.contains("Self-attention") && !sent.contains("Tool use survey"));

    assert_eq!(found["service"], "GNORM");
    assert_eq!(found["count"], 2);
    let a = &found["annotations"][0];
    assert_eq!(a["entity_text"], "Augustine of Hippo");
    assert_eq!(a["entity_type"], "Person");
    assert_eq!(
        (a["start"].as_u64(), a["end"].as_u64()),
        (Some(0), Some(18))
    );
    assert_eq!(a["normalized_id"], "wikidata:Q8018");
    assert_eq!(a["confidence"], 0.94);
    assert_eq!(a["epistemic_indicator"], "factual");
    let b = &found["annotations"][1];
    let (start, end) = (
        b["start"].as_u64().unwrap() as usize,
        b["end"].as_u64().unwrap() as usize,
    );
    let span: String = PASSAGE.chars().skip(start).take(end - start).collect();
    assert_eq!(
        span, "divine illumination",
        "offsets are the passage's characters"
    );
    assert!(found["execution_ms"].is_u64(), "{found}");

    // Asked for one type, GNORM is told so, and only that type comes back.
    let only = value(
        call(
            &f,
            "g2",
            "gnorm_annotate",
            json!({"text": PASSAGE, "entity_types": ["Concept"]}),
        )
        .await,
    );
    assert_eq!(
        stand.seen()[1].body,
        Some(json!({"text": PASSAGE, "entity_types": ["Concept"]}))
    );
    assert_eq!(only["count"], 1);
    assert_eq!(only["annotations"][0]["entity_type"], "Concept");

    // The gate told the person exactly that: the passage leaves.
    let asked = f.person.asked();
    assert_eq!(asked.len(), 1, "asked at the gate only");
    let gate = asked[0]
        .preview
        .first_use
        .clone()
        .expect("the first-time gate");
    // (the entity types, left unset by that call, do not leave with it and are not named)
    assert_eq!(gate.data_leaving, ["text"]);
    assert!(gate.service.contains("GNORM"), "{}", gate.service);
}

#[tokio::test]
async fn the_citation_graph_gets_the_paper_id_and_returns_both_sides() {
    let (base, stand) = stand_ins().await;
    let f = fixture(
        Person::default(),
        services(&base, reqwest::Client::new()),
        gated(),
    );
    let both = value(call(&f, "c1", "citation_graph", json!({"paper_id": REACT})).await);
    let mut paths: Vec<String> = stand.seen().iter().map(|s| s.path.clone()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            format!("/s2/graph/v1/paper/{REACT}/citations"),
            format!("/s2/graph/v1/paper/{REACT}/references"),
        ]
    );
    for seen in stand.seen() {
        assert_eq!(seen.query["limit"], "10", "the default limit");
        assert_eq!(
            seen.query["fields"],
            "paperId,title,year,authors,externalIds"
        );
        assert_eq!(seen.query.len(), 2, "{:?}", seen.query);
        assert!(seen.body.is_none());
    }
    assert_eq!(both["paper_id"], REACT);
    assert_eq!(both["citing"][0]["title"], "Toolformer");
    assert_eq!(both["citing"][0]["authors"], json!(["Timo Schick"]));
    assert_eq!(both["citing"][1]["doi"], "10.1/c2");
    assert_eq!(both["cited"][0]["title"], "Chain-of-Thought Prompting");
    assert_eq!(both["cited"][0]["year"], 2022);
    assert!(both["execution_ms"].is_u64());

    // One side, one request, with the limit asked for.
    stand.clear();
    let citing = value(
        call(
            &f,
            "c2",
            "citation_graph",
            json!({"paper_id": REACT, "direction": "citing", "limit": 1}),
        )
        .await,
    );
    let seen = stand.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].path.ends_with("/citations"));
    assert_eq!(seen[0].query["limit"], "1");
    assert_eq!(citing["citing"].as_array().unwrap().len(), 1);
    assert!(citing.get("cited").is_none());

    // An unknown paper is the service's 404, with how to write an id.
    let err = error(
        call(
            &f,
            "c3",
            "citation_graph",
            json!({"paper_id": "DOI:10.1/none"}),
        )
        .await,
    );
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    assert!(err.recover_action.unwrap().contains("ARXIV:"));

    // An id that would leave its path segment never reaches the service.
    stand.clear();
    let err = error(
        call(
            &f,
            "c4",
            "citation_graph",
            json!({"paper_id": "x?fields=abstract"}),
        )
        .await,
    );
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert!(stand.seen().is_empty());
}

#[tokio::test]
async fn the_catalogue_gets_the_query_and_returns_records() {
    let (base, stand) = stand_ins().await;
    let f = fixture(
        Person::default(),
        services(&base, reqwest::Client::new()),
        gated(),
    );
    let found = value(
        call(
            &f,
            "k1",
            "search_catalogue",
            json!({"query": "augustine", "limit": 1}),
        )
        .await,
    );
    let seen = stand.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/ol/search.json");
    assert_eq!(seen[0].query["q"], "augustine");
    assert_eq!(seen[0].query["limit"], "1");
    assert_eq!(
        seen[0].query.len(),
        3,
        "q, limit and fields: {:?}",
        seen[0].query
    );
    assert_eq!(found["total"], 2, "the catalogue's count, not the page's");
    let records = found["records"].as_array().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["title"], "Confessions");
    assert_eq!(records[0]["authors"], json!(["Augustine of Hippo"]));
    assert_eq!(records[0]["id"], "/works/OL1W");
    assert_eq!(records[0]["isbn"], "9780000000001");
    assert!(found["execution_ms"].is_u64());
    let gate = f.person.asked()[0].preview.first_use.clone().unwrap();
    let mut leaving = gate.data_leaving.clone();
    leaving.sort();
    assert_eq!(leaving, ["limit", "query"]);
}

#[tokio::test]
async fn each_gate_asks_once_per_session_and_a_no_sends_nothing() {
    let (base, stand) = stand_ins().await;
    let f = fixture(
        Person::answering([Answer::No { reason: None }]),
        services(&base, reqwest::Client::new()),
        gated(),
    );
    let calls = [
        ("gnorm_annotate", json!({"text": PASSAGE})),
        (
            "citation_graph",
            json!({"paper_id": REACT, "direction": "cited"}),
        ),
        ("search_catalogue", json!({"query": "gadamer"})),
    ];
    // The first gate is refused: nothing is sent.
    let denied = call(&f, "d1", calls[0].0, calls[0].1.clone()).await;
    assert!(matches!(denied, Outcome::Denied { .. }), "{denied:?}");
    assert!(stand.seen().is_empty());
    for (i, (tool, args)) in calls.iter().enumerate() {
        let before = f.person.asked().len();
        value(call(&f, &format!("a{i}"), tool, args.clone()).await);
        assert_eq!(
            f.person.asked().len(),
            before + 1,
            "{tool} asks at its gate"
        );
        let gate = f.person.asked().last().unwrap().preview.first_use.clone();
        assert!(
            gate.is_some_and(|g| g.message.contains("first time")),
            "{tool}"
        );
        value(call(&f, &format!("b{i}"), tool, args.clone()).await);
        assert_eq!(
            f.person.asked().len(),
            before + 1,
            "{tool} does not ask again"
        );
    }
    // Another session meets every gate again.
    let other = f
        .exec
        .call(
            &ToolCall::new(
                "o1",
                "search_catalogue",
                Arguments::Json(calls[2].1.clone()),
            ),
            cx("s2"),
        )
        .await;
    assert!(other.outcome.is_success());
    assert!(f.person.asked().last().unwrap().preview.first_use.is_some());
}

/// "Learn more" at the gate, in the terminal: what the service is and the values that leave.
#[tokio::test]
async fn learn_more_names_the_service_and_the_values_that_leave() {
    let (base, stand) = stand_ins().await;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("research.sqlite")).unwrap();
    let (input, typed) = SharedInput::channel();
    let screen = tempfile::NamedTempFile::new().unwrap();
    let exec = research::executor(
        research::toolset(db.clone(), services(&base, reqwest::Client::new())),
        db,
        &dir.path().join("store.sqlite"),
        Arc::new(TerminalConfirmer::new(
            input.reader(),
            screen.reopen().unwrap(),
        )),
        gated(),
    )
    .unwrap();
    let cases = [
        (
            "gnorm_annotate",
            json!({"text": PASSAGE}),
            "GNORM",
            vec![format!("text: {PASSAGE}")],
        ),
        (
            "citation_graph",
            json!({"paper_id": REACT}),
            "Semantic Scholar",
            vec![format!("paper_id: {REACT}"), "limit: 10".into()],
        ),
        (
            "search_catalogue",
            json!({"query": "gadamer truth"}),
            "Open Library",
            vec!["query: gadamer truth".into()],
        ),
    ];
    let mut shown_before = 0;
    for (i, (tool, args, service, leaving)) in cases.into_iter().enumerate() {
        typed.send(b"?\n".to_vec()).unwrap();
        typed.send(b"y\n".to_vec()).unwrap();
        let ran = exec
            .call(
                &ToolCall::new(format!("l{i}"), tool, Arguments::Json(args)),
                cx("s1"),
            )
            .await;
        assert!(ran.outcome.is_success(), "{tool}: {:?}", ran.outcome);
        let shown = std::fs::read_to_string(screen.path()).unwrap();
        let shown = &shown[shown_before..];
        shown_before += shown.len();
        assert!(shown.contains("[?] Learn more"), "{shown}");
        let about = shown
            .split(&format!("About {tool}:"))
            .nth(1)
            .unwrap_or_else(|| panic!("no learn-more text for {tool}: {shown}"));
        assert!(about.contains(service), "{tool}: {about}");
        assert!(about.contains("What leaves the system"), "{about}");
        for value in leaving {
            assert!(
                about.contains(&value),
                "{tool} should list {value:?}: {about}"
            );
        }
    }
    assert_eq!(
        stand.seen().len(),
        4,
        "one annotation, two graph sides, one search"
    );
}

#[tokio::test]
async fn a_failing_service_is_a_retryable_error_after_the_executors_retries() {
    let (base, stand) = stand_ins().await;
    let f = fixture(
        Person::default(),
        services(&base, reqwest::Client::new()),
        ExecutorConfig {
            retry: RetryConfig {
                base_delay_ms: 1,
                max_delay_ms: 5,
                ..RetryConfig::default()
            },
            ..gated()
        },
    );
    stand.set(Mode::Failing);
    for (i, (tool, args)) in [
        ("gnorm_annotate", json!({"text": PASSAGE})),
        (
            "citation_graph",
            json!({"paper_id": REACT, "direction": "citing"}),
        ),
        ("search_catalogue", json!({"query": "gadamer"})),
    ]
    .into_iter()
    .enumerate()
    {
        stand.clear();
        let err = error(call(&f, &format!("f{i}"), tool, args).await);
        assert_eq!(err.code, ErrorCode::EXECUTION_FAILED, "{tool}");
        assert!(err.retryable, "{tool}: a failing service may recover");
        assert!(err.message.contains("HTTP 503"), "{}", err.message);
        assert_eq!(err.details["http_status"], 503);
        assert_eq!(
            stand.seen().len(),
            3,
            "{tool}: the executor tried three times"
        );
    }
}

#[tokio::test]
async fn a_slow_service_times_out_as_a_retryable_error() {
    let (base, stand) = stand_ins().await;
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let f = fixture(
        Person::default(),
        services(&base, quick),
        ExecutorConfig {
            retry: RetryConfig {
                max_attempts: 1,
                ..RetryConfig::default()
            },
            ..gated()
        },
    );
    stand.set(Mode::Slow);
    let err = error(call(&f, "t1", "gnorm_annotate", json!({"text": PASSAGE})).await);
    assert_eq!(err.code, ErrorCode::TIMEOUT);
    assert!(err.retryable);
    assert!(err.message.contains("GNORM"), "{}", err.message);
    let err = error(call(&f, "t2", "search_catalogue", json!({"query": "x"})).await);
    assert_eq!(err.code, ErrorCode::TIMEOUT);
    assert_eq!(stand.seen().len(), 2);
}

#[tokio::test]
async fn a_malformed_answer_is_a_structured_error_that_is_not_retried() {
    let (base, stand) = stand_ins().await;
    let f = fixture(
        Person::default(),
        services(&base, reqwest::Client::new()),
        gated(),
    );
    let calls = [
        ("gnorm_annotate", json!({"text": PASSAGE})),
        (
            "citation_graph",
            json!({"paper_id": REACT, "direction": "citing"}),
        ),
        ("search_catalogue", json!({"query": "augustine"})),
    ];
    let mut n = 0;
    for mode in [Mode::NotJson, Mode::WrongShape, Mode::Impossible] {
        stand.set(mode);
        for (tool, args) in &calls {
            stand.clear();
            n += 1;
            let err = error(call(&f, &format!("m{n}"), tool, args.clone()).await);
            assert_eq!(err.code, ErrorCode::EXECUTION_FAILED, "{tool} {mode:?}");
            assert!(
                !err.retryable,
                "{tool} {mode:?}: asking again gets the same answer"
            );
            assert!(
                err.message.contains("cannot read"),
                "{tool} {mode:?}: {}",
                err.message
            );
            assert!(err.recover_action.is_some());
            assert_eq!(stand.seen().len(), 1, "{tool} {mode:?}: not retried");
        }
    }
    // The impossible GNORM answer is refused for its offsets, before its confidence is read.
    stand.set(Mode::Impossible);
    let err = error(call(&f, "m-last", "gnorm_annotate", json!({"text": PASSAGE})).await);
    assert!(err.message.contains("5000..5005"), "{}", err.message);
}

#[tokio::test]
async fn an_unconfigured_or_unreachable_service_says_so() {
    let f = fixture(
        Person::default(),
        Services::with_doi(DoiService {
            base_url: NOWHERE.into(),
            http: reqwest::Client::new(),
        }),
        gated(),
    );
    let err = error(call(&f, "u1", "gnorm_annotate", json!({"text": PASSAGE})).await);
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
    assert!(err.message.contains("TOOLS_GNORM_URL"), "{}", err.message);
    assert!(!err.retryable);

    let f = fixture(
        Person::default(),
        services(NOWHERE, reqwest::Client::new()),
        ExecutorConfig {
            retry: RetryConfig {
                max_attempts: 1,
                ..RetryConfig::default()
            },
            ..gated()
        },
    );
    let err = error(call(&f, "u2", "search_catalogue", json!({"query": "x"})).await);
    assert!(err.message.contains("unreachable"), "{}", err.message);
    assert!(err.retryable);
}

#[tokio::test]
async fn external_calls_are_rate_limited_per_minute() {
    let (base, stand) = stand_ins().await;
    let f = fixture(
        Person::default(),
        services(&base, reqwest::Client::new()),
        gated(),
    );
    // The default: ten external calls a minute, whichever external tools make them.
    for i in 0..10 {
        let tool = if i % 2 == 0 {
            "search_catalogue"
        } else {
            "gnorm_annotate"
        };
        let args = if i % 2 == 0 {
            json!({"query": format!("augustine {i}")})
        } else {
            json!({"text": PASSAGE})
        };
        value(call(&f, &format!("r{i}"), tool, args).await);
    }
    let err = error(call(&f, "r10", "search_catalogue", json!({"query": "gadamer"})).await);
    assert_eq!(err.code, ErrorCode::RATE_LIMITED);
    assert!(err.retryable);
    assert_eq!(
        stand.seen().len(),
        10,
        "the refused call never reached the service"
    );
}

#[test]
fn results_are_shown_with_their_confidence_and_execution_time() {
    let result = json!({
        "service": "GNORM", "count": 2, "execution_ms": 234,
        "annotations": [
            {"entity_text": "Augustine of Hippo", "entity_type": "Person", "start": 0, "end": 18,
             "normalized_id": "wikidata:Q8018", "confidence": 0.94, "epistemic_indicator": "factual"},
            {"entity_text": "divine illumination", "entity_type": "Concept", "start": 45,
             "end": 64, "confidence": 0.68, "epistemic_indicator": "interpretive"},
        ],
    });
    let shown = display::render("gnorm_annotate", &result).unwrap();
    assert!(shown.contains("2 entities"), "{shown}");
    assert!(
        shown.contains(
            "[FACTUAL] \"Augustine of Hippo\" - Person (94% confidence) -> wikidata:Q8018"
        ),
        "{shown}"
    );
    let low = shown.split("divine illumination").nth(1).unwrap();
    assert!(low.contains("(68% confidence)"), "{shown}");
    assert!(low.contains("verify this identification"), "{shown}");
    let high = shown.split("divine illumination").next().unwrap();
    assert!(
        !high.contains("verify"),
        "only low confidences are flagged: {shown}"
    );
    assert!(shown.ends_with("Execution time: 234 ms\n"), "{shown}");

    let graph = json!({"paper_id": REACT, "execution_ms": 5,
        "citing": [{"title": "Toolformer", "year": 2023, "authors": ["Timo Schick"]}], "cited": []});
    let shown = display::render("citation_graph", &graph).unwrap();
    assert!(shown.contains("1 citing it, 0 cited by it"), "{shown}");
    assert!(shown.contains("(2023) Toolformer - Timo Schick"), "{shown}");
    assert!(shown.contains("Execution time: 5 ms"), "{shown}");

    let found = json!({"query": "augustine", "total": 2, "execution_ms": 7,
        "records": [{"id": "/works/OL1W", "title": "Confessions", "authors": ["Augustine"], "year": 397}]});
    let shown = display::render("search_catalogue", &found).unwrap();
    assert!(shown.contains("1 of 2 records"), "{shown}");
    assert!(shown.contains("Execution time: 7 ms"), "{shown}");

    // A title from a service cannot draw on the terminal.
    let hostile = json!({"query": "x", "total": 1, "execution_ms": 1,
        "records": [{"id": "k", "title": "\u{1b}[2Jgone", "authors": []}]});
    let shown = display::render("search_catalogue", &hostile).unwrap();
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    // Results without a service time are left to the event line.
    assert!(display::render("search_notes", &json!([{"id": 1}])).is_none());
}
