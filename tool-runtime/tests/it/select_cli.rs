//! `tools pick`: the command's flags, text and JSON output, and its refusals.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_runtime::cli::{CliCommand, Exit, Output};
use tool_runtime::select::cli::{LOCAL_EMBEDDER, PickCommand};
use tool_runtime::select::{CachedEmbedder, Embedder, EmbeddingCache};
use tool_runtime::{
    ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
};

fn toolset() -> ToolSet {
    let mut set = ToolSet::new();
    for (name, description, safety) in [
        (
            "get_weather",
            "Current weather conditions for a city",
            Safety::ReadOnly,
        ),
        ("get_time", "Current time in a timezone", Safety::ReadOnly),
        (
            "delete_city",
            "Delete a city from the saved list",
            Safety::Modify,
        ),
    ] {
        let mut d = ToolDefinition::new(name, description, &json!({"type": "object"}));
        d.safety = safety;
        set.register_dynamic(d, None).unwrap();
    }
    set
}

async fn run(args: &[&str], json: bool) -> (Exit, String, String) {
    run_with(PickCommand::new(), args, json).await
}

async fn run_with(cmd: PickCommand, args: &[&str], json: bool) -> (Exit, String, String) {
    let matches = cmd
        .command()
        .try_get_matches_from(std::iter::once("pick").chain(args.iter().copied()))
        .unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = {
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json,
        };
        cmd.run(&toolset(), &matches, &mut output).await
    };
    (
        exit,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[tokio::test]
async fn prints_ranked_candidates_with_scores_and_reasons() {
    let (exit, out, _) = run(&["weather in the city"], false).await;
    assert_eq!(exit, Exit::Success);
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("1. get_weather  0."), "{out}");
    assert!(first.contains("matched \"weather\""), "{out}");
    assert!(!out.contains("delete_city"), "{out}");
}

#[tokio::test]
async fn json_output_carries_score_reason_and_provenance() {
    let (exit, out, _) = run(&["city", "--top", "5", "--allow-unsafe", "--debug"], true).await;
    assert_eq!(exit, Exit::Success);
    let v: Value = serde_json::from_str(&out).unwrap();
    let list = v.as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"delete_city") && names.contains(&"get_weather"),
        "{names:?}"
    );
    assert!(list[0]["score"].as_f64().unwrap() > 0.0);
    assert!(list[0]["reason"].as_str().unwrap().contains("city"));
    assert_eq!(list[0]["provenance"]["scorer"], "bm25");
    assert_eq!(list[0]["provenance"]["rank"], 1);
    assert!(list[0]["provenance"]["details"]["bm25"].is_number());
}

#[tokio::test]
async fn keyword_scorer_and_empty_results() {
    let (exit, out, _) = run(&["time zone now", "--scorer", "keyword"], false).await;
    assert_eq!(exit, Exit::Success);
    assert!(out.starts_with("1. get_time"), "{out}");
    let (exit, out, _) = run(&["delete the city", "--min-score", "0.99"], false).await;
    assert_eq!(exit, Exit::Success);
    assert!(out.contains("no tool scored at least 0.99"), "{out}");
    assert!(out.contains("--allow-unsafe"), "{out}");
}

#[tokio::test]
async fn semantic_scorers_without_a_model_are_a_usage_error() {
    let (exit, out, err) = run(&["weather", "--scorer", "embedding"], false).await;
    assert_eq!(exit, Exit::Usage);
    assert!(out.is_empty());
    assert!(err.contains("TOOLS_MINILM_DIR"), "{err}");
}

/// Embeds a text as counts of a few words, so the semantic path runs without a model.
struct Words;

impl Embedder for Words {
    fn model(&self) -> &str {
        "words-test"
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>> {
        let vocab = ["weather", "rain", "time", "clock", "city"];
        let out = texts
            .iter()
            .map(|t| {
                let t = t.to_lowercase();
                let mut v: Vec<f32> = vocab.iter().map(|w| t.matches(w).count() as f32).collect();
                // "rain" means weather here; "clock" means time.
                v[0] += v[1];
                v[2] += v[3];
                v.push(0.01);
                v
            })
            .collect();
        futures::future::ready(Ok(out)).boxed()
    }
}

#[tokio::test]
async fn semantic_scorers_run_with_an_embedder() {
    let cmd = PickCommand::new().with_embedder(Arc::new(Words));
    for scorer in ["embedding", "hybrid"] {
        let (exit, out, err) = run_with(cmd.clone(), &["rain", "--scorer", scorer], true).await;
        assert_eq!(exit, Exit::Success, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v[0]["name"], "get_weather", "{scorer}: {v:#}");
        assert_eq!(v[0]["provenance"]["scorer"], scorer);
    }
    assert!(format!("{cmd:?}").contains("words-test"));
}

#[test]
fn the_build_says_whether_it_has_the_local_model() {
    // What `from_env` offers follows the `minilm` feature; without it, the refusal names it.
    assert_eq!(LOCAL_EMBEDDER, cfg!(feature = "minilm"));
    if !LOCAL_EMBEDDER {
        let cmd = PickCommand::from_env();
        let (exit, _, err) =
            futures::executor::block_on(run_with(cmd, &["x", "--scorer", "hybrid"], false));
        assert_eq!(exit, Exit::Usage);
        assert!(err.contains("`minilm` feature"), "{err}");
    }
}

#[test]
fn bad_flags_are_rejected_by_the_parser() {
    let cmd = PickCommand::new().command();
    assert!(cmd.clone().try_get_matches_from(["pick"]).is_err());
    assert!(
        cmd.clone()
            .try_get_matches_from(["pick", "q", "--scorer", "magic"])
            .is_err()
    );
    assert!(
        cmd.try_get_matches_from(["pick", "q", "--top", "-1"])
            .is_err()
    );
}

/// [`Words`], counting the texts it is asked to embed.
#[derive(Clone, Default)]
struct Counting(Arc<std::sync::atomic::AtomicUsize>);

impl Counting {
    fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Embedder for Counting {
    fn model(&self) -> &str {
        Words.model()
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>> {
        self.0
            .fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
        Words.embed(texts)
    }
}

/// With `--embedding-cache`, a second run (a new process, here a new command) embeds nothing it
/// has seen and ranks the same; without the flag nothing is kept.
#[tokio::test]
async fn embeddings_are_kept_on_disk_and_a_second_run_embeds_nothing_it_has_seen() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("embeddings.sqlite3");
    let args = [
        "rain",
        "--scorer",
        "hybrid",
        "--embedding-cache",
        cache.to_str().unwrap(),
    ];
    let first = Counting::default();
    let (exit, out_first, err) = run_with(
        PickCommand::new().with_embedder(Arc::new(first.clone())),
        &args,
        true,
    )
    .await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert_eq!(first.count(), 3, "the two read-only tools and the query");
    assert!(err.contains("embedded 3 text(s) with words-test"), "{err}");

    let second = Counting::default();
    let (exit, out_second, err) = run_with(
        PickCommand::new().with_embedder(Arc::new(second.clone())),
        &args,
        true,
    )
    .await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert_eq!(second.count(), 0, "everything came from the cache");
    assert!(err.contains("embedded 0 text(s)"), "{err}");
    assert_eq!(out_first, out_second, "the same ranking");

    // a new query is the only new text
    let third = Counting::default();
    let mut other = args;
    other[0] = "what time is it";
    let (_, out, _) = run_with(
        PickCommand::new().with_embedder(Arc::new(third.clone())),
        &other,
        true,
    )
    .await;
    assert_eq!(third.count(), 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["name"], "get_time");

    // without the flag, a given embedder is asked every time
    let plain = Counting::default();
    let (_, _, err) = run_with(
        PickCommand::new().with_embedder(Arc::new(plain.clone())),
        &["rain", "--scorer", "hybrid"],
        true,
    )
    .await;
    assert_eq!(plain.count(), 3);
    assert!(!err.contains("embedded"), "{err}");
}

/// A changed text is embedded again and nothing else is; vectors come back bit for bit; another
/// model's vectors are never answered. `open` opens the same cache each time it is called.
async fn the_cache_is_keyed_by_model_and_exact_text(open: impl Fn() -> EmbeddingCache) {
    let texts: Vec<String> = ["rain in the city", "clock time"]
        .map(String::from)
        .to_vec();
    let counting = Counting::default();
    let cached = CachedEmbedder::new(Arc::new(counting.clone()), open());
    let first = cached.embed(&texts).await.unwrap();
    assert_eq!(first, Words.embed(&texts).await.unwrap());
    let mut edited = texts.clone();
    edited[1] = "clock time, edited".into();
    let again = CachedEmbedder::new(Arc::new(counting.clone()), open());
    let second = again.embed(&edited).await.unwrap();
    assert_eq!(counting.count(), 3, "two texts, then only the edited one");
    assert_eq!(second[0], first[0]);
    assert_eq!(again.embedded(), 1);

    // a lazily loaded model is not loaded when the cache answers everything
    let lazy = CachedEmbedder::lazy("words-test", open(), || {
        panic!("the model must not be loaded")
    });
    assert_eq!(lazy.embed(&texts).await.unwrap(), first);
    // another model's vectors are not this one's
    let other_model = Counting::default();
    let other = CachedEmbedder::lazy("other-model", open(), {
        let other_model = other_model.clone();
        move || Ok(Arc::new(other_model.clone()) as Arc<dyn Embedder>)
    });
    other.embed(&texts).await.unwrap();
    assert_eq!(other_model.count(), 2);
    assert_eq!(open().len("words-test").unwrap(), 3);
    assert_eq!(
        open().get("words-test", &[]).unwrap(),
        Vec::<Option<Vec<f32>>>::new()
    );
}

#[tokio::test]
async fn a_sqlite_cache_is_keyed_by_model_and_exact_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.sqlite3");
    the_cache_is_keyed_by_model_and_exact_text(|| EmbeddingCache::open(&path).unwrap()).await;
}

/// The test Redis server, or `None` (saying why) outside CI when none is configured.
fn redis_url() -> Option<String> {
    test_support::redis_url()
}

/// A key prefix no other run uses.
fn fresh_prefix() -> String {
    format!("test-embeddings-{}:", uuid_like())
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

#[tokio::test]
async fn a_redis_cache_is_keyed_by_model_and_exact_text() {
    let Some(url) = redis_url() else { return };
    let prefix = fresh_prefix();
    the_cache_is_keyed_by_model_and_exact_text(|| EmbeddingCache::redis(&url, &prefix).unwrap())
        .await;
}

/// `--embedding-cache redis://...`: a second process shares what the first embedded.
#[tokio::test]
async fn pick_keeps_embeddings_in_redis_when_given_its_url() {
    let Some(url) = redis_url() else { return };
    // a database of its own, so the default prefix cannot meet another run's vectors
    let url = format!("{}/9", url.trim_end_matches('/'));
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("FLUSHDB").query::<()>(&mut conn).unwrap();
    let args = ["rain", "--scorer", "hybrid", "--embedding-cache", &url];
    let run_once = || async {
        let counting = Counting::default();
        let (exit, out, err) = run_with(
            PickCommand::new().with_embedder(Arc::new(counting.clone())),
            &args,
            true,
        )
        .await;
        assert_eq!(exit, Exit::Success, "{err}");
        assert!(err.contains("redis://"), "{err}");
        (counting.count(), out)
    };
    let (first, out_first) = run_once().await;
    let (second, out_second) = run_once().await;
    assert_eq!(first, 3, "the two read-only tools and the query");
    assert_eq!(second, 0, "everything came from Redis");
    assert_eq!(out_first, out_second);
}

#[test]
fn an_unreachable_redis_cache_is_a_clear_error_and_a_password_is_never_shown() {
    let e = EmbeddingCache::redis("redis://:hunter2@127.0.0.1:1/", "tools:").unwrap_err();
    assert!(
        e.message
            .contains("cannot connect to redis://***@127.0.0.1:1/"),
        "{}",
        e.message
    );
    let (exit, _, err) = futures::executor::block_on(run_with(
        PickCommand::new().with_embedder(Arc::new(Words)),
        &[
            "rain",
            "--scorer",
            "hybrid",
            "--embedding-cache",
            "redis://:hunter2@127.0.0.1:1/",
        ],
        false,
    ));
    assert_eq!(exit, Exit::Usage, "{err}");
    assert!(err.contains("embedding cache"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    let shown = tool_runtime::select::cli::CacheLocation::parse("redis://:hunter2@10.0.0.1:6379/2");
    assert_eq!(
        shown.to_string(),
        "redis://***@10.0.0.1:6379/2 (keys tools:embeddings:*)"
    );
}

/// `--queries`: one JSON line per query, in order, with plain and JSON-object lines, a refused
/// line reported in place and the exit code 1 at the end.
#[tokio::test]
async fn queries_from_a_file_get_one_json_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("queries.txt");
    std::fs::write(
        &file,
        "weather in the city\n\n{\"id\": \"q-time\", \"query\": \"what time is it\"}\n\
         {\"id\": 7}\n{not json\nrain\n",
    )
    .unwrap();
    let (exit, out, err) = run(&["--queries", file.to_str().unwrap()], false).await;
    assert_eq!(exit, Exit::Refused, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["query"], "weather in the city");
    assert_eq!(lines[0]["candidates"][0]["name"], "get_weather");
    assert_eq!(lines[1]["id"], "q-time");
    assert_eq!(lines[1]["candidates"][0]["name"], "get_time");
    assert_eq!(lines[2]["id"], 7);
    assert_eq!(lines[2]["error"]["code"], "INVALID_ARGUMENTS");
    assert!(
        lines[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"query\"")
    );
    assert_eq!(lines[3]["id"], 5);
    assert!(
        lines[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 5")
    );
    assert_eq!(lines[4]["id"], 6);
    assert_eq!(
        lines[4]["candidates"].as_array().unwrap().len(),
        0,
        "no read-only tool mentions rain"
    );

    // every line answered is the answer of the single-query command
    let (_, single, _) = run(&["what time is it"], true).await;
    let single: Value = serde_json::from_str(&single).unwrap();
    assert_eq!(lines[1]["candidates"], single);

    // all well: exit 0
    std::fs::write(&file, "weather\ntime\n").unwrap();
    let (exit, out, _) = run(&["--queries", file.to_str().unwrap()], false).await;
    assert_eq!(exit, Exit::Success);
    assert_eq!(out.lines().count(), 2);
}

#[tokio::test]
async fn queries_and_a_query_are_exclusive_and_a_missing_file_is_a_usage_error() {
    let cmd = PickCommand::new().command();
    assert!(
        cmd.clone()
            .try_get_matches_from(["pick", "q", "--queries", "f"])
            .is_err()
    );
    assert!(cmd.try_get_matches_from(["pick", "--queries", "f"]).is_ok());
    let (exit, out, err) = run(&["--queries", "/nonexistent/queries.txt"], false).await;
    assert_eq!(exit, Exit::Usage);
    assert!(out.is_empty());
    assert!(err.contains("cannot read --queries"), "{err}");
}

/// One process, many queries: the catalog is embedded once, then only each query.
#[tokio::test]
async fn a_batch_embeds_the_catalog_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("queries.txt");
    std::fs::write(&file, "rain\nwhat time is it\nclock\n").unwrap();
    let counting = Counting::default();
    let (exit, out, err) = run_with(
        PickCommand::new().with_embedder(Arc::new(counting.clone())),
        &["--queries", file.to_str().unwrap(), "--scorer", "embedding"],
        false,
    )
    .await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert_eq!(out.lines().count(), 3);
    assert_eq!(
        counting.count(),
        2 + 3,
        "two read-only tools once, three queries"
    );
}
