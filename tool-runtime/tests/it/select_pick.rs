//! Pre-selection behaviour on small catalogs: ranking, safety filter, thresholds, determinism,
//! incremental index updates, the time-budget fallback, and purity.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::select_embedding::Bow;

use serde_json::{Value, json};
use tool_runtime::select::{
    Catalog, EmbeddingScorer, FnScorer, KeywordOverlapScorer, PickOptions, Scorer, ToolScore, pick,
    pick_from,
};
use tool_runtime::{
    ErrorCode, ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
    toolset::DynHandler,
};

pub(crate) fn def(name: &str, description: &str, params: Value, safety: Safety) -> ToolDefinition {
    let mut d = ToolDefinition::new(name.to_owned(), description.to_owned(), &params);
    d.safety = safety;
    d
}

pub(crate) fn read_only(name: &str, description: &str) -> ToolDefinition {
    def(
        name,
        description,
        json!({"type": "object"}),
        Safety::ReadOnly,
    )
}

pub(crate) fn sample() -> Vec<ToolDefinition> {
    let mut notes = def(
        "searchNotes",
        "Full-text search over the user's notes.",
        json!({"type": "object", "properties": {"query": {"type": "string", "description": "words to look for"}}}),
        Safety::ReadOnly,
    );
    notes.tags = vec!["notes".into(), "knowledge".into()];
    vec![
        def(
            "get_weather",
            "Current weather conditions for a city.",
            json!({"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}),
            Safety::ReadOnly,
        ),
        read_only("math.factorial", "Calculate the factorial of a number."),
        notes,
        read_only(
            "convert_currency",
            "Convert an amount of money between currencies.",
        ),
        def(
            "delete_note",
            "Delete a note permanently.",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
            Safety::Modify,
        ),
        read_only("get_stock_price", "Latest trading price of a stock ticker."),
    ]
}

pub(crate) fn catalog() -> Catalog {
    Catalog::from_definitions(sample()).unwrap()
}

pub(crate) fn names(c: &[tool_runtime::select::Candidate]) -> Vec<&str> {
    c.iter().map(|c| c.name()).collect()
}

#[tokio::test]
async fn clear_queries_put_the_right_tool_first() {
    let cat = catalog();
    let opts = PickOptions::new();
    let cases = [
        ("What's the weather like in Berlin?", "get_weather"),
        ("compute the factorial of 12", "math.factorial"),
        ("search my notes about rust", "searchNotes"),
        (
            "how many euros is 30 dollars? convert it",
            "convert_currency",
        ),
        ("latest price of the AAPL stock", "get_stock_price"),
        // Stemming: "cities" meets "city" in the parameter, "calculating" meets "Calculate".
        ("weather in these cities", "get_weather"),
        ("calculating factorials", "math.factorial"),
    ];
    for (query, expected) in cases {
        let picked = cat.pick(query, &opts).await.unwrap();
        assert_eq!(
            picked.first().map(|c| c.name()),
            Some(expected),
            "query {query:?}: {picked:#?}"
        );
        let top = &picked[0];
        assert!(top.score > 0.0 && top.score <= 1.0, "{}", top.score);
        assert!(top.reason.starts_with("matched"), "{}", top.reason);
        assert_eq!(top.provenance.scorer, "bm25");
        assert_eq!(top.provenance.rank, 1);
        assert!(picked.len() <= 3);
        assert!(picked.windows(2).all(|w| w[0].score >= w[1].score));
    }
}

#[tokio::test]
async fn reasons_name_the_matched_words_and_fields() {
    let picked = catalog()
        .pick("weather for my city", &PickOptions::new())
        .await
        .unwrap();
    assert_eq!(picked[0].name(), "get_weather");
    assert!(
        picked[0].reason.contains("\"weather\" (name, description)"),
        "{}",
        picked[0].reason
    );
    assert!(
        picked[0]
            .reason
            .contains("\"city\" (description, parameter names"),
        "{}",
        picked[0].reason
    );
}

#[tokio::test]
async fn tools_that_are_not_read_only_are_excluded_unless_allowed() {
    let cat = catalog();
    let picked = cat
        .pick("delete this note", &PickOptions::new())
        .await
        .unwrap();
    assert!(!names(&picked).contains(&"delete_note"), "{picked:#?}");

    let allowed = cat
        .pick("delete this note", &PickOptions::new().allow_unsafe(true))
        .await
        .unwrap();
    assert_eq!(allowed[0].name(), "delete_note");

    // An undeclared category counts as unsafe too.
    let mut unspecified =
        ToolDefinition::new("erase_disk", "Erase the disk", &json!({"type": "object"}));
    unspecified.safety = Safety::Unspecified;
    let cat = Catalog::from_definitions([unspecified]).unwrap();
    assert!(
        cat.pick("erase the disk", &PickOptions::new())
            .await
            .unwrap()
            .is_empty()
    );

    // Debug provenance lists what was excluded and why the pool is smaller.
    let debug = catalog()
        .pick("delete this note", &PickOptions::new().debug(true))
        .await
        .unwrap();
    assert!(!debug.is_empty());
    assert_eq!(debug[0].provenance.excluded_unsafe, ["delete_note"]);
    assert_eq!(debug[0].provenance.pool_size, 5);
    assert!(debug[0].provenance.details.is_some());
    assert!(debug[0].provenance.elapsed.is_some());
}

#[tokio::test]
async fn min_score_and_max_candidates_bound_the_result() {
    let cat = catalog();
    let all = cat
        .pick(
            "get the weather price",
            &PickOptions::new().max_candidates(10).min_score(0.0),
        )
        .await
        .unwrap();
    assert!(all.len() >= 2, "{all:#?}");
    let cut = all[0].score;
    let strict = cat
        .pick(
            "get the weather price",
            &PickOptions::new().max_candidates(10).min_score(cut),
        )
        .await
        .unwrap();
    assert!(strict.iter().all(|c| c.score >= cut));
    assert!(strict.len() < all.len());
    let one = cat
        .pick(
            "get the weather price",
            &PickOptions::new().max_candidates(1),
        )
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert!(
        cat.pick("weather", &PickOptions::new().max_candidates(0))
            .await
            .unwrap()
            .is_empty()
    );
    // Nothing relevant: an empty result, not an error.
    assert!(
        cat.pick("zzz qqq", &PickOptions::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(cat.pick("", &PickOptions::new()).await.unwrap().is_empty());
    // Only stop words: nothing to match.
    assert!(
        cat.pick("what is the", &PickOptions::new())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn ranking_is_deterministic_and_ties_follow_registration_order() {
    let tools = (0..20).map(|i| read_only(&format!("tool_{i:02}"), "Look up a record"));
    let cat = Catalog::from_definitions(tools).unwrap();
    let opts = PickOptions::new().max_candidates(5);
    let first = cat.pick("look up the record", &opts).await.unwrap();
    assert_eq!(
        names(&first),
        ["tool_00", "tool_01", "tool_02", "tool_03", "tool_04"]
    );
    for _ in 0..5 {
        let again = cat.pick("look up the record", &opts).await.unwrap();
        assert_eq!(names(&again), names(&first));
        assert_eq!(
            again.iter().map(|c| c.score).collect::<Vec<_>>(),
            first.iter().map(|c| c.score).collect::<Vec<_>>()
        );
    }
}

#[tokio::test]
async fn adding_and_removing_tools_updates_the_index() {
    let mut cat = catalog();
    let opts = PickOptions::new();
    assert!(
        cat.pick("translate this sentence", &opts)
            .await
            .unwrap()
            .is_empty()
    );

    cat.insert(read_only(
        "translate_text",
        "Translate a sentence into another language",
    ))
    .unwrap();
    let picked = cat.pick("translate this sentence", &opts).await.unwrap();
    assert_eq!(names(&picked), ["translate_text"]);

    assert!(cat.remove("get_weather"));
    assert!(!cat.remove("get_weather"));
    let weather = cat.pick("weather in Paris", &opts).await.unwrap();
    assert!(!names(&weather).contains(&"get_weather"), "{weather:#?}");

    // The freed slot is reused without mixing the old tool's postings into the new one.
    cat.insert(read_only(
        "book_flight_search",
        "Search flights between two airports",
    ))
    .unwrap();
    assert!(
        cat.pick("weather in Paris", &opts)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        cat.pick("flights to Rome", &opts).await.unwrap()[0].name(),
        "book_flight_search"
    );

    // The incremental index scores exactly as a catalog built from scratch with the same tools,
    // also for queries holding words that only a removed tool had ("weather", "city", "conditions"
    // were get_weather's alone): such words must not weigh in the normalisation any more.
    let rebuilt = Catalog::from_definitions(cat.iter().map(|(_, d)| (**d).clone())).unwrap();
    assert_eq!(cat.vocabulary_size(), rebuilt.vocabulary_size());
    let all = PickOptions::new().max_candidates(10).min_score(0.0);
    for q in [
        "search notes",
        "price of a stock",
        "factorial",
        "flights",
        "translate",
        "weather stock price",
        "current weather conditions for my city: search flights",
        "city notes",
    ] {
        let a = cat.pick(q, &all).await.unwrap();
        let b = rebuilt.pick(q, &all).await.unwrap();
        assert!(!b.is_empty(), "{q}: the query should match something");
        assert_eq!(names(&a), names(&b), "{q}");
        let scores =
            |c: &[tool_runtime::select::Candidate]| c.iter().map(|c| c.score).collect::<Vec<_>>();
        assert_eq!(scores(&a), scores(&b), "{q}");
        // So a threshold keeps the same candidates in both.
        let cut = PickOptions::new().max_candidates(10).min_score(b[0].score);
        assert_eq!(
            names(&cat.pick(q, &cut).await.unwrap()),
            names(&rebuilt.pick(q, &cut).await.unwrap()),
            "{q}"
        );
    }

    // Duplicate names are refused.
    let err = cat
        .insert(read_only("math.factorial", "again"))
        .unwrap_err();
    assert!(err.to_string().contains("math.factorial"));
}

#[tokio::test]
async fn churning_tools_leaves_no_trace_in_the_index() {
    let mut cat = catalog();
    let vocabulary = cat.vocabulary_size();
    let query = "stock price of a quarkonium widget";
    let opts = PickOptions::new().max_candidates(10).min_score(0.0);
    let before = cat.pick(query, &opts).await.unwrap();
    for round in 0..50 {
        let name = format!("quarkonium_widget_{round}");
        cat.insert(read_only(
            &name,
            &format!("Quarkonium widget number {round} zz{round}"),
        ))
        .unwrap();
        assert!(cat.vocabulary_size() > vocabulary);
        assert!(cat.remove(&name));
    }
    // Every word the churned tools brought left with them.
    assert_eq!(cat.vocabulary_size(), vocabulary);
    let after = cat.pick(query, &opts).await.unwrap();
    assert_eq!(names(&after), names(&before));
    assert_eq!(
        after.iter().map(|c| c.score).collect::<Vec<_>>(),
        before.iter().map(|c| c.score).collect::<Vec<_>>()
    );
    // A word shared with a remaining tool stays: removing one of two holders keeps it.
    cat.insert(read_only("stock_news", "News about a stock"))
        .unwrap();
    assert!(cat.remove("stock_news"));
    assert!(!cat.pick("stock", &opts).await.unwrap().is_empty());
}

#[tokio::test]
async fn sync_follows_a_changing_toolset() {
    let mut set = ToolSet::new();
    set.register_dynamic(read_only("get_weather", "Current weather for a city"), None)
        .unwrap();
    let mut cat = Catalog::from_toolset(&set);
    set.register_dynamic(read_only("get_time", "Current time in a timezone"), None)
        .unwrap();
    set.remove("get_weather");
    cat.sync(&set);
    assert_eq!(cat.len(), 1);
    assert_eq!(
        cat.pick("what time is it in Tokyo", &PickOptions::new())
            .await
            .unwrap()[0]
            .name(),
        "get_time"
    );
    assert!(
        cat.pick("weather", &PickOptions::new())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_built_once_serves_repeated_and_concurrent_picks() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<Catalog>();

    let mut set = ToolSet::new();
    for mut d in sample() {
        // A ToolSet refuses dotted names (a Catalog does not).
        d.name = d.name.replace('.', "_").into();
        set.register_dynamic(d, None).unwrap();
    }
    let catalog = Arc::new(Catalog::from_toolset(&set));
    let queries = [
        "weather in Oslo",
        "factorial of 7",
        "search my notes",
        "convert dollars to euros currency",
        "AAPL stock price",
    ];
    // From several tasks at once (the future is Send), with the default and a custom scorer.
    let tasks: Vec<_> = queries
        .iter()
        .map(|q| {
            let catalog = catalog.clone();
            let q = q.to_string();
            tokio::spawn(async move {
                let bm25 = catalog.pick(&q, &PickOptions::new()).await.unwrap();
                let keyword = catalog
                    .pick(
                        &q,
                        &PickOptions::new().scorer(Arc::new(KeywordOverlapScorer)),
                    )
                    .await
                    .unwrap();
                (bm25, keyword)
            })
        })
        .collect();
    for (q, task) in queries.iter().zip(tasks) {
        let (shared, _) = task.await.unwrap();
        // The same answer as the one-shot pick that indexes the tool set afresh.
        let fresh = pick(&set, q, &PickOptions::new()).await.unwrap();
        assert_eq!(names(&shared), names(&fresh), "{q}");
        assert_eq!(shared[0].score, fresh[0].score, "{q}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_scorer_falls_back_to_registration_order_after_the_budget() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let slow = FnScorer::new("slow", move |_query: String, _tool: Arc<ToolDefinition>| {
        let seen = seen.clone();
        async move {
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(ToolScore {
                score: 1.0,
                ..Default::default()
            })
        }
    });
    let opts = PickOptions::new()
        .scorer(Arc::new(slow))
        .time_budget(Duration::from_millis(1500))
        .max_candidates(2);
    let started = tokio::time::Instant::now();
    let picked = catalog().pick("weather", &opts).await.unwrap();
    // Paused time: the budget elapsed virtually, after the second tool's sleep had started.
    assert_eq!(started.elapsed(), Duration::from_millis(1500));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Registration order among the allowed tools (delete_note is excluded).
    assert_eq!(names(&picked), ["get_weather", "math.factorial"]);
    for c in &picked {
        assert_eq!(c.score, 0.0);
        assert_eq!(c.provenance.scorer, "slow");
        assert!(
            c.provenance
                .fallback
                .as_deref()
                .unwrap()
                .contains("time budget"),
            "{c:?}"
        );
    }

    // Within the budget the scorer's own ranking is used.
    let quick = FnScorer::new("quick", |_q: String, t: Arc<ToolDefinition>| async move {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok(ToolScore {
            score: if t.name == "get_stock_price" {
                0.9
            } else {
                0.1
            },
            reason: Some("by name".into()),
            details: None,
        })
    });
    let picked = catalog()
        .pick(
            "anything",
            &PickOptions::new()
                .scorer(Arc::new(quick))
                .time_budget(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    assert_eq!(picked[0].name(), "get_stock_price");
    assert_eq!(picked[0].reason, "by name");
    assert!(picked[0].provenance.fallback.is_none());
}

/// A per-tool scorer that computes without ever yielding: each call blocks the thread for
/// `per_tool`, like a CPU-bound function would, and counts its calls.
fn blocking_scorer(per_tool: Duration, calls: Arc<AtomicUsize>) -> Arc<dyn Scorer> {
    Arc::new(FnScorer::new(
        "blocking",
        move |_q: String, _t: Arc<ToolDefinition>| {
            calls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(per_tool);
            futures::future::ready(Ok(ToolScore {
                score: 1.0,
                ..Default::default()
            }))
        },
    ))
}

fn assert_fell_back(picked: &[tool_runtime::select::Candidate], expected: &[&str]) {
    assert_eq!(names(picked), expected, "{picked:#?}");
    for c in picked {
        assert_eq!(c.score, 0.0);
        assert!(
            c.provenance
                .fallback
                .as_deref()
                .is_some_and(|f| f.contains("time budget")),
            "{c:?}"
        );
    }
}

/// The pool of `catalog()` has five read-only tools; a blocking scorer that needs 20 ms per tool
/// and a budget of 30 ms: the budget is spent after at most two calls (each call sleeps *at
/// least* 20 ms), so the third check stops it, whatever the machine's speed.
async fn blocking_scorer_is_stopped(label: &str) {
    let calls = Arc::new(AtomicUsize::new(0));
    let opts = PickOptions::new()
        .scorer(blocking_scorer(Duration::from_millis(20), calls.clone()))
        .time_budget(Duration::from_millis(30))
        .max_candidates(2);
    let picked = catalog().pick("weather", &opts).await.unwrap();
    let calls = calls.load(Ordering::SeqCst);
    assert!((1..=2).contains(&calls), "{label}: {calls} calls");
    assert_fell_back(&picked, &["get_weather", "math.factorial"]);
}

#[test]
fn a_cpu_bound_scorer_is_stopped_by_the_budget_without_a_tokio_runtime() {
    // No runtime at all: must neither panic nor run every tool.
    futures::executor::block_on(blocking_scorer_is_stopped("no runtime"));
}

#[tokio::test]
async fn a_cpu_bound_scorer_is_stopped_by_the_budget_inside_a_runtime() {
    // On the current-thread runtime the blocked thread cannot run Tokio's timer: only the
    // scorer's own deadline checks can stop it.
    blocking_scorer_is_stopped("current-thread runtime").await;
}

#[test]
fn a_scorer_finishing_after_the_budget_counts_as_timed_out() {
    // One tool in the pool: the only deadline check passes, then the call takes 30 ms against a
    // budget of 5 ms. Its (late) ranking is not used.
    let cat = Catalog::from_definitions([read_only("get_weather", "Current weather")]).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let opts = PickOptions::new()
        .scorer(blocking_scorer(Duration::from_millis(30), calls.clone()))
        .time_budget(Duration::from_millis(5));
    let picked = futures::executor::block_on(cat.pick("weather", &opts)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_fell_back(&picked, &["get_weather"]);
}

#[test]
fn the_lexical_scorers_honour_the_budget_with_or_without_a_runtime() {
    let cat = catalog();
    let scorers: [Option<Arc<dyn Scorer>>; 2] = [None, Some(Arc::new(KeywordOverlapScorer))];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    for scorer in scorers {
        let with = |opts: PickOptions| match &scorer {
            Some(s) => opts.scorer(s.clone()),
            None => opts,
        };
        let unbounded =
            futures::executor::block_on(cat.pick("weather city", &with(PickOptions::new())))
                .unwrap();
        assert_eq!(unbounded[0].name(), "get_weather");
        // A spent budget falls back before any work, in both worlds.
        let spent = with(PickOptions::new().time_budget(Duration::ZERO));
        let picked = futures::executor::block_on(cat.pick("weather city", &spent)).unwrap();
        assert_fell_back(&picked, &["get_weather", "math.factorial", "searchNotes"]);
        let picked = runtime.block_on(cat.pick("weather city", &spent)).unwrap();
        assert_fell_back(&picked, &["get_weather", "math.factorial", "searchNotes"]);
        // An ample budget changes nothing, and needs no runtime.
        let ample = with(PickOptions::new().time_budget(Duration::from_secs(3600)));
        let picked = futures::executor::block_on(cat.pick("weather city", &ample)).unwrap();
        assert_eq!(names(&picked), names(&unbounded));
        assert_eq!(picked[0].score, unbounded[0].score);
        assert!(picked.iter().all(|c| c.provenance.fallback.is_none()));
        // Even an absurd budget (beyond what an Instant can hold).
        let huge = with(PickOptions::new().time_budget(Duration::MAX));
        let picked = futures::executor::block_on(cat.pick("weather city", &huge)).unwrap();
        assert_eq!(names(&picked), names(&unbounded));
    }
}

#[tokio::test]
async fn a_failing_scorer_is_an_error_not_an_empty_pick() {
    let failing = FnScorer::new(
        "failing",
        |_q: String, _t: Arc<ToolDefinition>| async move {
            Err::<ToolScore, _>(ToolError::new(
                ErrorCode::EXECUTION_FAILED,
                "model unavailable",
            ))
        },
    );
    let failing = Arc::new(failing);
    let err = catalog()
        .pick("weather", &PickOptions::new().scorer(failing.clone()))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
    // Failing within the budget is still a failure, not a fallback.
    let err = catalog()
        .pick(
            "weather",
            &PickOptions::new()
                .scorer(failing)
                .time_budget(Duration::from_secs(3600)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
}

#[tokio::test]
async fn picking_never_runs_a_tool() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let handler: DynHandler = Arc::new(move |_args, _cx| {
        counter.fetch_add(1, Ordering::SeqCst);
        panic!("selection must never run a tool");
    });
    let mut set = ToolSet::new();
    set.register_dynamic(
        read_only("get_weather", "Current weather for a city"),
        Some(handler),
    )
    .unwrap();
    let picked = pick(&set, "weather in Oslo", &PickOptions::new().debug(true))
        .await
        .unwrap();
    assert_eq!(names(&picked), ["get_weather"]);
    for scorer in [
        Arc::new(KeywordOverlapScorer) as Arc<dyn Scorer>,
        Arc::new(EmbeddingScorer::new(Arc::new(Bow))),
    ] {
        pick(&set, "weather in Oslo", &PickOptions::new().scorer(scorer))
            .await
            .unwrap();
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(set.len(), 1);
}

#[tokio::test]
async fn the_seed_keyword_scorer_is_available_as_a_baseline() {
    let picked = catalog()
        .pick(
            "weather city",
            &PickOptions::new().scorer(Arc::new(KeywordOverlapScorer)),
        )
        .await
        .unwrap();
    assert_eq!(picked[0].name(), "get_weather");
    assert_eq!(picked[0].reason, "matched keywords in get_weather");
    assert_eq!(picked[0].provenance.scorer, "keyword");
}

#[tokio::test]
async fn one_off_pick_over_definitions_rejects_duplicate_names() {
    let mut defs = sample();
    defs.push(read_only("get_weather", "again"));
    let err = pick_from(&defs, "weather", &PickOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert!(err.message.contains("get_weather"));
}
