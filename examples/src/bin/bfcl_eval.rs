//! Tool pre-selection measured on the Berkeley Function Calling Leaderboard.
//!
//! Pools every distinct function of BFCL's simple_python, multiple and parallel_multiple files into
//! one catalog, asks each scorer about every question, and compares the ranking with the
//! question's ground-truth function(s). The keyword-overlap scorer is measured in the same
//! run as the baseline. The metrics, for a question whose answer calls the set G of functions:
//!
//! - **hit@1**: the top candidate is in G.
//! - **recall@k**: |G ∩ top k| / |G|. For the 609 questions with one function it equals hit@k;
//!   for a question needing three, recall@1 is at most 1/3.
//! - **all@5**: every function of G is in the top 5, what a pick of five must achieve for the
//!   model to be able to answer at all.
//! - **MRR**: 1 / rank of the first function of G within the top 100 (0 beyond).
//!
//! Each averaged over questions.
//!
//! BFCL offers 209 function names with differing definitions in different questions (a reworded
//! description, a `float` where another question has `integer`). A catalog holds one definition
//! per name, so the pool keeps the first in file order, as the selection benchmark does; the
//! program reports how many differ and how, and measures the same scorers once more on a catalog
//! of *every* distinct definition, to show how much that choice matters.
//!
//! ```text
//! cargo run --release -p examples --bin bfcl_eval
//! TOOLS_MINILM_DIR=/path/to/model cargo run --release -p examples --features minilm --bin bfcl_eval
//! ```
//! `BFCL_DIR` names the folder holding the three BFCL files; without it, a default location
//! beside the checkout is read.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tool_runtime::definition::{Safety, ToolDefinition};
use tool_runtime::select::{Bm25Scorer, Catalog, KeywordOverlapScorer, PickOptions, Scorer};

// The loader is shared with the selection benchmark; see its module docs for why it is not a
// library API.
use test_support::bfcl;

/// How deep each ranking goes for the MRR.
const DEPTH: usize = 100;

/// Separates a name from a variant number in the all-definitions catalog (`name#2`); BFCL names
/// never contain it.
const VARIANT_MARK: char = '#';

/// The question sets, in file order, as they prefix BFCL ids (`multiple_12`).
const SETS: [&str; 3] = ["simple_python", "multiple", "parallel_multiple"];

/// Sums of the per-question metrics.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    questions: usize,
    hit1: f64,
    recall1: f64,
    recall5: f64,
    all5: f64,
    rr: f64,
}

impl Tally {
    /// Scores one question: `ranked` are distinct function names, best first.
    fn add(&mut self, ranked: &[&str], expected: &[String]) {
        let found_within = |k: usize| {
            expected
                .iter()
                .filter(|e| ranked.iter().take(k).any(|r| r == e))
                .count()
        };
        let total = expected.len().max(1) as f64;
        self.questions += 1;
        if ranked
            .first()
            .is_some_and(|top| expected.iter().any(|e| e == top))
        {
            self.hit1 += 1.0;
        }
        self.recall1 += found_within(1) as f64 / total;
        let in5 = found_within(5);
        self.recall5 += in5 as f64 / total;
        if in5 == expected.len() {
            self.all5 += 1.0;
        }
        if let Some(pos) = ranked.iter().position(|r| expected.iter().any(|e| e == r)) {
            self.rr += 1.0 / (pos + 1) as f64;
        }
    }

    fn mean(&self, sum: f64) -> f64 {
        sum / self.questions.max(1) as f64
    }
}

struct Row {
    scorer: String,
    catalog: &'static str,
    all: Tally,
    by_set: [Tally; SETS.len()],
    median: Duration,
    prepare: Duration,
}

/// The question set of a BFCL id (`parallel_multiple_3` → 2).
fn set_of(id: &str) -> Option<usize> {
    let prefix = id.rsplit_once('_').map_or(id, |(p, _)| p);
    SETS.iter().position(|s| *s == prefix)
}

/// A function's name in the all-definitions catalog, back to BFCL's (`name#2` → `name`).
fn canonical(name: &str) -> &str {
    name.split_once(VARIANT_MARK).map_or(name, |(n, _)| n)
}

async fn evaluate(
    catalog: &Catalog,
    label: &'static str,
    questions: &[bfcl::Question],
    scorer: Arc<dyn Scorer>,
    prepare: Duration,
) -> Result<Row, String> {
    let options = PickOptions::new()
        .max_candidates(DEPTH)
        .min_score(0.0)
        .allow_unsafe(true)
        .scorer(scorer.clone());
    let mut all = Tally::default();
    let mut by_set = [Tally::default(); SETS.len()];
    let mut times = Vec::with_capacity(questions.len());
    for q in questions {
        let started = Instant::now();
        let picked = catalog
            .pick(&q.text, &options)
            .await
            .map_err(|e| format!("{}: {}", scorer.name(), e.message))?;
        times.push(started.elapsed());
        // A function ranks where its best definition ranks.
        let mut ranked: Vec<&str> = Vec::with_capacity(picked.len());
        for c in &picked {
            let name = canonical(c.name());
            if !ranked.contains(&name) {
                ranked.push(name);
            }
        }
        all.add(&ranked, &q.expected);
        if let Some(set) = set_of(&q.id) {
            by_set[set].add(&ranked, &q.expected);
        }
    }
    times.sort();
    Ok(Row {
        scorer: scorer.name().to_owned(),
        catalog: label,
        all,
        by_set,
        median: times.get(times.len() / 2).copied().unwrap_or_default(),
        prepare,
    })
}

#[tokio::main]
async fn main() {
    examples::setup::init_logging();
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let dir = bfcl::data_dir(env!("CARGO_MANIFEST_DIR"));
    let (tools, questions) = bfcl::load(&dir)?;
    let variants = Variants::read(&dir)?;
    let started = Instant::now();
    let catalog = Catalog::from_definitions(tools).map_err(|e| e.to_string())?;
    let index_build = started.elapsed();
    let started = Instant::now();
    let every = Catalog::from_definitions(variants.catalog()).map_err(|e| e.to_string())?;
    let every_build = started.elapsed();

    let multi = questions.iter().filter(|q| q.expected.len() > 1).count();
    println!(
        "BFCL pool: {} distinct function names from {}; {} questions, {} of them needing 2 to {} \
         functions ({} ground-truth functions in all).",
        catalog.len(),
        dir.display(),
        questions.len(),
        multi,
        questions
            .iter()
            .map(|q| q.expected.len())
            .max()
            .unwrap_or(0),
        questions.iter().map(|q| q.expected.len()).sum::<usize>()
    );
    variants.report();

    let mut rows = Vec::new();
    for (label, cat, build) in [
        ("first", &catalog, index_build),
        ("all variants", &every, every_build),
    ] {
        rows.push(
            evaluate(
                cat,
                label,
                &questions,
                Arc::new(KeywordOverlapScorer),
                Duration::ZERO,
            )
            .await?,
        );
        rows.push(evaluate(cat, label, &questions, Arc::new(Bm25Scorer), build).await?);
    }
    rows.extend(semantic_rows(&[("first", &catalog), ("all variants", &every)], &questions).await?);
    // Group by catalog, keyword first within each.
    rows.sort_by_key(|r| (r.catalog != "first", r.scorer != "keyword"));

    println!();
    println!(
        "| scorer | definitions | hit@1 | recall@1 | recall@5 | all@5 | MRR | MRR vs keyword | \
         median per query | preparation |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in &rows {
        let baseline = rows
            .iter()
            .find(|r| r.catalog == row.catalog && r.scorer == "keyword")
            .map_or(f64::EPSILON, |r| r.all.mean(r.all.rr));
        let t = &row.all;
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2}x | {:.3} ms | {:.1} ms |",
            row.scorer,
            row.catalog,
            t.mean(t.hit1),
            t.mean(t.recall1),
            t.mean(t.recall5),
            t.mean(t.all5),
            t.mean(t.rr),
            t.mean(t.rr) / baseline.max(f64::EPSILON),
            row.median.as_secs_f64() * 1e3,
            row.prepare.as_secs_f64() * 1e3,
        );
    }

    println!();
    println!("By question set (first-definition catalog): recall@1 / recall@5 / MRR");
    println!();
    let header: Vec<String> = SETS
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{s} ({})", rows[0].by_set[i].questions))
        .collect();
    println!("| scorer | {} |", header.join(" | "));
    println!("|---|{}", "---|".repeat(SETS.len()));
    for row in rows.iter().filter(|r| r.catalog == "first") {
        let cells: Vec<String> = row
            .by_set
            .iter()
            .map(|t| {
                format!(
                    "{:.3} / {:.3} / {:.3}",
                    t.mean(t.recall1),
                    t.mean(t.recall5),
                    t.mean(t.rr)
                )
            })
            .collect();
        println!("| {} | {} |", row.scorer, cells.join(" | "));
    }
    println!();
    println!(
        "hit@1: the top candidate is a ground-truth function. recall@k: share of a question's \
         ground-truth functions in the top k (recall@1 is at most 1/n for a question needing n). \
         all@5: all of them in the top 5. MRR: 1/rank of the first ground-truth function (top \
         {DEPTH}). All averaged over questions. Preparation: index build (bm25), or embedding the \
         catalog (embedding, hybrid; reading it back when the embedding cache holds it); keyword \
         needs none. \"all variants\": every distinct \
         definition indexed, a function ranking where its best definition ranks."
    );
    Ok(())
}

/// The functions BFCL offers under one name with differing definitions.
struct Variants {
    /// Every distinct definition in file order, grouped by name (first seen first).
    by_name: Vec<(String, Vec<Value>)>,
    offerings: usize,
}

impl Variants {
    fn read(dir: &Path) -> Result<Self, String> {
        let mut by_name: Vec<(String, Vec<Value>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut offerings = 0;
        for file in bfcl::FILES {
            for case in read_lines(&dir.join(file))? {
                for f in case["function"].as_array().into_iter().flatten() {
                    let name = f["name"]
                        .as_str()
                        .ok_or(format!("{file}: a function without a name"))?;
                    offerings += 1;
                    let slot = *index.entry(name.to_owned()).or_insert_with(|| {
                        by_name.push((name.to_owned(), Vec::new()));
                        by_name.len() - 1
                    });
                    let defs = &mut by_name[slot].1;
                    // Value equality ignores key order, so only real differences count.
                    if !defs.contains(f) {
                        defs.push(f.clone());
                    }
                }
            }
        }
        Ok(Variants { by_name, offerings })
    }

    fn report(&self) {
        let varied: Vec<&(String, Vec<Value>)> =
            self.by_name.iter().filter(|(_, d)| d.len() > 1).collect();
        let distinct: usize = self.by_name.iter().map(|(_, d)| d.len()).sum();
        let (mut description, mut parameters, mut both) = (0, 0, 0);
        for (_, defs) in &varied {
            let first = &defs[0];
            let desc = defs[1..]
                .iter()
                .any(|d| d["description"] != first["description"]);
            let params = defs[1..]
                .iter()
                .any(|d| d["parameters"] != first["parameters"]);
            match (desc, params) {
                (true, true) => both += 1,
                (true, false) => description += 1,
                (false, _) => parameters += 1,
            }
        }
        let most = varied.iter().max_by_key(|(_, d)| d.len());
        println!(
            "Definitions: {} of the {} names are offered with differing definitions ({} offerings \
             in all, {} distinct definitions); against the first, later ones differ in the \
             description only for {}, in the parameters only for {}, in both for {}{}.",
            varied.len(),
            self.by_name.len(),
            self.offerings,
            distinct,
            description,
            parameters,
            both,
            most.map_or(String::new(), |(n, d)| format!(
                " (most: {n}, {} definitions)",
                d.len()
            )),
        );
        println!(
            "Kept: each name's first definition in file order ({}), because a catalog holds one \
             definition per name, the first is deterministic, and it is the pool the selection \
             benchmark uses. The \"all variants\" rows index all {} definitions instead.",
            SETS.join(", "),
            distinct
        );
    }

    /// Every distinct definition as a read-only tool, later variants renamed `name#2`, `name#3`.
    fn catalog(&self) -> Vec<ToolDefinition> {
        let mut out = Vec::new();
        for (name, defs) in &self.by_name {
            for (i, f) in defs.iter().enumerate() {
                let mut def = definition(f);
                if i > 0 {
                    def.name = format!("{name}{VARIANT_MARK}{}", i + 1).into();
                }
                out.push(def);
            }
        }
        out
    }
}

/// One BFCL function as a read-only tool definition with a JSON Schema (the loader's conversion).
fn definition(f: &Value) -> ToolDefinition {
    let mut def = ToolDefinition::new(
        f["name"].as_str().unwrap_or_default().to_owned(),
        f["description"].as_str().unwrap_or_default().to_owned(),
        &bfcl::to_json_schema(&f["parameters"]),
    );
    def.safety = Safety::ReadOnly;
    def
}

fn read_lines(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (set BFCL_DIR to the folder holding the BFCL files)",
            path.display()
        )
    })?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

#[cfg(feature = "minilm")]
async fn semantic_rows(
    catalogs: &[(&'static str, &Catalog)],
    questions: &[bfcl::Question],
) -> Result<Vec<Row>, String> {
    use tool_runtime::select::cli::default_embedding_cache;
    use tool_runtime::select::minilm::MiniLm;
    use tool_runtime::select::{CachedEmbedder, Embedder, EmbeddingScorer, HybridScorer};

    let Some(dir) = MiniLm::dir_from_env() else {
        println!("embedding and hybrid rows skipped: TOOLS_MINILM_DIR is not set");
        return Ok(Vec::new());
    };
    // Through the embedding cache `tools pick` uses, so a second run embeds nothing; the
    // preparation column then times reading the vectors back.
    let embedder: Arc<dyn Embedder> = match default_embedding_cache() {
        Some(at) => {
            let cache = at.open().map_err(|e| e.message)?;
            let id = MiniLm::cache_id(&dir).map_err(|e| e.message)?;
            println!("Embedding cache: {at}");
            Arc::new(CachedEmbedder::lazy(id, cache, move || {
                MiniLm::load(&dir).map(|m| Arc::new(m) as Arc<dyn Embedder>)
            }))
        }
        None => Arc::new(MiniLm::load(&dir).map_err(|e| e.message)?),
    };
    // One scorer for both catalogs: its cache is keyed by name and text, so the definitions the
    // two share are embedded once.
    let semantic = Arc::new(EmbeddingScorer::new(embedder));
    semantic.warm(catalogs[0].1).await.map_err(|e| e.message)?;
    fusion_rules(catalogs[0].1, questions, &semantic).await?;
    let mut rows = Vec::new();
    for &(label, catalog) in catalogs {
        let started = Instant::now();
        semantic.warm(catalog).await.map_err(|e| e.message)?;
        let warm = started.elapsed();
        rows.push(evaluate(catalog, label, questions, semantic.clone(), warm).await?);
        rows.push(
            evaluate(
                catalog,
                label,
                questions,
                Arc::new(HybridScorer::new(semantic.clone())),
                warm,
            )
            .await?,
        );
    }
    Ok(rows)
}

/// The hybrid scorer under each fusion rule on the first-definition catalog: recall@5 per
/// question set and overall, with BM25 and the embedding scorer alone as the rows to beat.
#[cfg(feature = "minilm")]
async fn fusion_rules(
    catalog: &Catalog,
    questions: &[bfcl::Question],
    semantic: &Arc<tool_runtime::select::EmbeddingScorer>,
) -> Result<(), String> {
    use tool_runtime::select::{Fusion, HybridScorer};
    let mut rules: Vec<(String, Arc<dyn Scorer>)> = vec![
        ("bm25 alone".into(), Arc::new(Bm25Scorer)),
        ("embedding alone".into(), semantic.clone()),
    ];
    for tenths in 1..10 {
        let lexical = f64::from(tenths) / 10.0;
        let hybrid = HybridScorer::new(semantic.clone()).weights(lexical, 1.0 - lexical);
        rules.push((
            format!("weighted {lexical:.1} bm25 + {:.1} cosine", 1.0 - lexical),
            Arc::new(hybrid),
        ));
    }
    for k in [1.0, 10.0, 60.0] {
        let hybrid = HybridScorer::new(semantic.clone()).fusion(Fusion::reciprocal_rank(k));
        rules.push((format!("reciprocal rank, k = {k}"), Arc::new(hybrid)));
    }
    println!();
    println!("Fusion rules (first-definition catalog): recall@5 by question set, then overall");
    println!();
    println!(
        "| rule | {} | all recall@1 | all recall@5 | all MRR |",
        SETS.join(" recall@5 | ") + " recall@5"
    );
    println!("|---|---|---|---|---|---|---|");
    for (label, scorer) in rules {
        let row = evaluate(catalog, "first", questions, scorer, Duration::ZERO).await?;
        let sets: Vec<String> = row
            .by_set
            .iter()
            .map(|t| format!("{:.3}", t.mean(t.recall5)))
            .collect();
        let t = &row.all;
        println!(
            "| {label} | {} | {:.3} | {:.3} | {:.3} |",
            sets.join(" | "),
            t.mean(t.recall1),
            t.mean(t.recall5),
            t.mean(t.rr)
        );
    }
    Ok(())
}

#[cfg(not(feature = "minilm"))]
async fn semantic_rows(
    _: &[(&'static str, &Catalog)],
    _: &[bfcl::Question],
) -> Result<Vec<Row>, String> {
    println!(
        "embedding and hybrid rows skipped: build with --features minilm and set TOOLS_MINILM_DIR"
    );
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use serde_json::json;
    use tool_runtime::validate::Validator;

    use super::*;

    #[test]
    fn the_bfcl_dialect_becomes_json_schema() {
        let dialect = json!({
            "type": "dict",
            "properties": {
                "point": {"type": "tuple", "items": {"type": "float"}, "description": "x, y"},
                "scale": {"type": "float", "optional": true, "default": 1.0},
                "payload": {"type": "any", "description": "anything at all"},
                "options": {
                    "type": "dict",
                    "properties": {"depth": {"type": "integer"}},
                    "additionalProperties": {"type": "float"}
                },
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
            },
            "required": ["point"]
        });
        let schema = bfcl::to_json_schema(&dialect);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "point": {"type": "array", "items": {"type": "number"}, "description": "x, y"},
                    "scale": {"type": "number", "default": 1.0},
                    "payload": {"description": "anything at all"},
                    "options": {
                        "type": "object",
                        "properties": {"depth": {"type": "integer"}},
                        "additionalProperties": {"type": "number"}
                    },
                    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
                },
                "required": ["point"]
            })
        );
        // The dialect itself is not JSON Schema; the conversion is.
        assert!(Validator::check(&dialect).is_err());
        Validator::check(&schema).unwrap();
        let v = Validator::compile(&schema).unwrap();
        for ok in [
            json!({"point": [1, 2.5]}),
            json!({"point": [], "scale": 3, "payload": {"x": null}}),
            json!({"point": [0], "payload": [1, "two"], "options": {"depth": 2, "w": 0.5}}),
        ] {
            assert!(v.is_valid(&ok), "{ok}");
        }
        for bad in [
            json!({}),
            json!({"point": "1,2"}),
            json!({"point": [1, "a"]}),
            json!({"point": [], "scale": "big"}),
            json!({"point": [], "options": {"depth": 1.5}}),
            json!({"point": [], "options": {"w": "heavy"}}),
            json!({"point": [], "tags": ["c"]}),
        ] {
            assert!(!v.is_valid(&bad), "{bad}");
        }
        // Non-object schemas pass through untouched.
        assert_eq!(bfcl::to_json_schema(&json!(true)), json!(true));
    }

    #[test]
    fn the_metrics_separate_hits_from_recall() {
        let expected = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let mut t = Tally::default();
        t.add(&["a", "x", "b", "y", "z", "c"], &expected);
        assert_eq!(t.hit1, 1.0);
        assert!((t.recall1 - 1.0 / 3.0).abs() < 1e-12);
        assert!((t.recall5 - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(t.all5, 0.0);
        assert_eq!(t.rr, 1.0);
        let mut t = Tally::default();
        t.add(&["x", "y", "a"], &expected[..1]);
        assert_eq!((t.hit1, t.recall1, t.recall5, t.all5), (0.0, 0.0, 1.0, 1.0));
        assert!((t.rr - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(set_of("parallel_multiple_12"), Some(2));
        assert_eq!(set_of("multiple_0"), Some(1));
        assert_eq!(canonical("math.factorial#3"), "math.factorial");
    }

    /// The acceptable values of a BFCL ground-truth argument are a list, with "" meaning "may be
    /// left out", and nested objects list theirs per field: the first acceptable value, unwrapped.
    fn first_acceptable(values: &Value) -> Option<Value> {
        let first = values.as_array()?.iter().find(|v| v.as_str() != Some(""))?;
        Some(unwrap_acceptable(first))
    }

    fn unwrap_acceptable(value: &Value) -> Value {
        match value {
            Value::Object(map) if !map.is_empty() && map.values().all(Value::is_array) => {
                Value::Object(
                    map.iter()
                        .filter_map(|(k, v)| first_acceptable(v).map(|v| (k.clone(), v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(unwrap_acceptable).collect()),
            other => other.clone(),
        }
    }

    #[test]
    fn every_bfcl_function_converts_and_its_answers_fit() {
        let dir = bfcl::data_dir(env!("CARGO_MANIFEST_DIR"));
        if !dir.join(bfcl::FILES[0]).exists() {
            let _ = writeln!(
                std::io::stderr(),
                "skipped: no BFCL data in {} (set BFCL_DIR)",
                dir.display()
            );
            return;
        }
        let (tools, questions) = bfcl::load(&dir).unwrap();
        let names: std::collections::HashSet<&str> =
            tools.iter().map(|t| t.name.as_ref()).collect();
        for q in &questions {
            assert!(!q.expected.is_empty(), "{}", q.id);
            for e in &q.expected {
                assert!(
                    names.contains(e.as_str()),
                    "{}: {e} is not in the pool",
                    q.id
                );
            }
        }
        // Each question's ground-truth calls against the definitions offered in that question.
        let mut checked = 0;
        let mut misfits = Vec::new();
        for file in bfcl::FILES {
            let cases = read_lines(&dir.join(file)).unwrap();
            let answers = read_lines(&dir.join("possible_answer").join(file)).unwrap();
            for (case, answer) in cases.iter().zip(&answers) {
                let offered: HashMap<&str, &Value> = case["function"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| (f["name"].as_str().unwrap(), f))
                    .collect();
                for call in answer["ground_truth"].as_array().unwrap() {
                    for (name, args) in call.as_object().unwrap() {
                        let schema = definition(offered[name.as_str()]).parameters_value();
                        Validator::check(&schema)
                            .unwrap_or_else(|e| panic!("{}: {name}: {e}", case["id"]));
                        let validator = Validator::compile(&schema).unwrap();
                        let instance: serde_json::Map<String, Value> = args
                            .as_object()
                            .unwrap()
                            .iter()
                            .filter_map(|(k, v)| first_acceptable(v).map(|v| (k.clone(), v)))
                            .collect();
                        checked += 1;
                        if !validator.is_valid(&Value::Object(instance)) {
                            misfits.push(format!("{} {name}", case["id"].as_str().unwrap()));
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
        // BFCL's own slips, not the conversion's: a boolean where the schema says string, an
        // expression where it says array, a word where it says integer.
        assert_eq!(
            misfits,
            [
                "simple_python_307 game_result.get_winner",
                "parallel_multiple_21 linear_regression_fit",
                "parallel_multiple_94 sort_list",
            ]
        );
    }
}
