//! Tool pre-selection measured on the Berkeley Function Calling Leaderboard.
//!
//! Pools every distinct function of BFCL's simple_python, multiple and parallel_multiple files into
//! one catalog, asks each scorer for every question, and reports how often the ground-truth
//! function(s) come first (recall@1), in the top five (recall@5), and the mean reciprocal rank of
//! the first correct function (MRR, ranks beyond 100 count as 0). The seed's keyword-overlap
//! scorer is measured in the same run as the baseline.
//!
//! ```text
//! cargo run --release -p examples --bin bfcl_eval
//! TOOLS_MINILM_DIR=/path/to/model cargo run --release -p examples --features minilm --bin bfcl_eval
//! ```
//! `BFCL_DIR` overrides where the data is read from (default: `../shared/bfcl` beside the repo).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_runtime::select::{Bm25Scorer, Catalog, KeywordOverlapScorer, PickOptions, Scorer};

// The loader is shared with the selection benchmark; see its module docs for why it is not a
// library API.
#[path = "../../../tool-runtime/benches/support/bfcl.rs"]
mod bfcl;

/// How deep each ranking goes for the MRR.
const DEPTH: usize = 100;

struct Row {
    scorer: String,
    recall1: f64,
    recall5: f64,
    mrr: f64,
    median: Duration,
    prepare: Duration,
}

async fn evaluate(
    catalog: &Catalog,
    questions: &[bfcl::Question],
    scorer: Arc<dyn Scorer>,
    prepare: Duration,
) -> Result<Row, String> {
    let options = PickOptions::new()
        .max_candidates(DEPTH)
        .min_score(0.0)
        .allow_unsafe(true)
        .scorer(scorer.clone());
    let (mut r1, mut r5, mut rr) = (0.0, 0.0, 0.0);
    let mut times = Vec::with_capacity(questions.len());
    for q in questions {
        let started = Instant::now();
        let picked = catalog
            .pick(&q.text, &options)
            .await
            .map_err(|e| format!("{}: {}", scorer.name(), e.message))?;
        times.push(started.elapsed());
        let ranked: Vec<&str> = picked.iter().map(|c| c.name()).collect();
        let found_within = |k: usize| {
            q.expected
                .iter()
                .filter(|e| ranked.iter().take(k).any(|r| r == e))
                .count() as f64
                / q.expected.len().max(1) as f64
        };
        if ranked
            .first()
            .is_some_and(|top| q.expected.iter().any(|e| e == top))
        {
            r1 += 1.0;
        }
        r5 += found_within(5);
        if let Some(pos) = ranked
            .iter()
            .position(|r| q.expected.iter().any(|e| e == r))
        {
            rr += 1.0 / (pos + 1) as f64;
        }
    }
    times.sort();
    let n = questions.len().max(1) as f64;
    Ok(Row {
        scorer: scorer.name().to_owned(),
        recall1: r1 / n,
        recall5: r5 / n,
        mrr: rr / n,
        median: times.get(times.len() / 2).copied().unwrap_or_default(),
        prepare,
    })
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let dir = bfcl::data_dir(env!("CARGO_MANIFEST_DIR"));
    let (tools, questions) = bfcl::load(&dir)?;
    let started = Instant::now();
    let catalog = Catalog::from_definitions(tools).map_err(|e| e.to_string())?;
    let index_build = started.elapsed();
    println!(
        "BFCL pool: {} distinct functions from {}, {} questions ({} ground-truth functions)",
        catalog.len(),
        dir.display(),
        questions.len(),
        questions.iter().map(|q| q.expected.len()).sum::<usize>()
    );

    let mut rows = vec![
        evaluate(
            &catalog,
            &questions,
            Arc::new(KeywordOverlapScorer),
            Duration::ZERO,
        )
        .await?,
        evaluate(&catalog, &questions, Arc::new(Bm25Scorer), index_build).await?,
    ];
    rows.extend(semantic_rows(&catalog, &questions).await?);

    let baseline = &rows[0];
    println!();
    println!(
        "| scorer | recall@1 | recall@5 | MRR | MRR vs keyword | median per query | preparation |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in &rows {
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.2}x | {:.3} ms | {:.1} ms |",
            row.scorer,
            row.recall1,
            row.recall5,
            row.mrr,
            row.mrr / baseline.mrr.max(f64::EPSILON),
            row.median.as_secs_f64() * 1e3,
            row.prepare.as_secs_f64() * 1e3,
        );
    }
    println!();
    println!(
        "recall@k: share of a question's ground-truth functions in the top k (for recall@1, the top \
         candidate being one of them), averaged over questions. MRR: 1/rank of the first correct \
         function. Preparation: index build (bm25) or embedding the catalog (embedding); keyword \
         needs none."
    );
    Ok(())
}

#[cfg(feature = "minilm")]
async fn semantic_rows(
    catalog: &Catalog,
    questions: &[bfcl::Question],
) -> Result<Vec<Row>, String> {
    use tool_runtime::select::minilm::MiniLm;
    use tool_runtime::select::{EmbeddingScorer, HybridScorer};

    let Some(model) = MiniLm::from_env() else {
        println!("embedding and hybrid rows skipped: TOOLS_MINILM_DIR is not set");
        return Ok(Vec::new());
    };
    let model = model.map_err(|e| e.message)?;
    let semantic = Arc::new(EmbeddingScorer::new(Arc::new(model)));
    let started = Instant::now();
    semantic.warm(catalog).await.map_err(|e| e.message)?;
    let warm = started.elapsed();
    Ok(vec![
        evaluate(catalog, questions, semantic.clone(), warm).await?,
        evaluate(
            catalog,
            questions,
            Arc::new(HybridScorer::new(semantic)),
            warm,
        )
        .await?,
    ])
}

#[cfg(not(feature = "minilm"))]
async fn semantic_rows(_: &Catalog, _: &[bfcl::Question]) -> Result<Vec<Row>, String> {
    println!(
        "embedding and hybrid rows skipped: build with --features minilm and set TOOLS_MINILM_DIR"
    );
    Ok(Vec::new())
}
