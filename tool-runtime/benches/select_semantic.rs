//! Semantic pre-selection with the local all-MiniLM-L6-v2: hybrid picks against BM25 in the same
//! run, on catalogs of 100, 1,000 and 10,000 tools synthesised from the BFCL pool.
//!
//! - `warm`: the tools' vectors are in memory (a long-lived process); each pick embeds only its
//!   query (every query is made unique, so no cache answers it).
//! - `from_disk`: a new scorer over an embedding cache file that holds every tool (a new
//!   `tools pick` process): the pick reads the catalog's vectors back and embeds the query.
//! - `cold`: nothing cached anywhere; the pick embeds the whole catalog.
//! - `bm25`: the default scorer on the same catalog and queries, the baseline of each ratio.
//!
//! `TOOLS_MINILM_DIR=<model dir> cargo bench -p tool-runtime --features minilm --bench
//! select_semantic` (BFCL data from `$BFCL_DIR`: see `test-support/src/bfcl.rs`). `SELECT_COLD_MAX=N` bounds
//! the catalog sizes measured cold (default 1,000: a cold 10,000 embeds 10,000 texts per sample).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use tool_runtime::definition::ToolDefinition;
use tool_runtime::select::minilm::MiniLm;
use tool_runtime::select::{
    CachedEmbedder, Catalog, Embedder, EmbeddingCache, EmbeddingScorer, HybridScorer, PickOptions,
};

use test_support::bfcl;

const SIZES: [usize; 3] = [100, 1_000, 10_000];

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

fn hybrid(embedder: Arc<dyn Embedder>) -> (Arc<EmbeddingScorer>, PickOptions) {
    let semantic = Arc::new(EmbeddingScorer::new(embedder));
    let options = PickOptions::new()
        .allow_unsafe(true)
        .scorer(Arc::new(HybridScorer::new(semantic.clone())));
    (semantic, options)
}

fn main() {
    let Some(dir) = MiniLm::dir_from_env() else {
        println!("skipped: set TOOLS_MINILM_DIR to the all-MiniLM-L6-v2 directory");
        return;
    };
    let model: Arc<dyn Embedder> = Arc::new(MiniLm::load(&dir).expect("the model loads"));
    let data = bfcl::data_dir(env!("CARGO_MANIFEST_DIR"));
    let (pool, questions) = bfcl::load(&data).unwrap_or_else(|e| panic!("{e}"));
    let queries: Vec<String> = questions
        .iter()
        .step_by(12)
        .map(|q| q.text.clone())
        .collect();
    let cold_max: usize = std::env::var("SELECT_COLD_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let scratch = tempfile::tempdir().expect("a temporary directory");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("select/semantic");
    for &n in &SIZES {
        let defs: Vec<ToolDefinition> = bfcl::synthesize(&pool, n);
        let catalog = Catalog::from_definitions(defs).unwrap();
        // Every pick gets a text no cache has seen, so each one embeds its query.
        let mut i = 0;
        let mut next = || {
            i += 1;
            format!("{} (request {i})", queries[i % queries.len()])
        };

        let bm25 = PickOptions::new().allow_unsafe(true);
        group
            .sample_size(30)
            .measurement_time(Duration::from_secs(5));
        group.bench_function(BenchmarkId::new("bm25", n), |b| {
            b.iter(|| black_box(block_on(catalog.pick(&next(), &bm25)).unwrap()))
        });

        // The catalog embedded once, into memory and into a cache file for `from_disk`.
        let file = scratch.path().join(format!("embeddings-{n}.sqlite3"));
        let filler = CachedEmbedder::new(model.clone(), EmbeddingCache::open(&file).unwrap());
        let (warm, warm_options) = hybrid(Arc::new(filler));
        block_on(warm.warm(&catalog)).unwrap();
        group.bench_function(BenchmarkId::new("hybrid_warm", n), |b| {
            b.iter(|| black_box(block_on(catalog.pick(&next(), &warm_options)).unwrap()))
        });

        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(10));
        group.bench_function(BenchmarkId::new("hybrid_from_disk", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let query = next();
                    let started = Instant::now();
                    let cache = EmbeddingCache::open(&file).unwrap();
                    let (_, options) = hybrid(Arc::new(CachedEmbedder::new(model.clone(), cache)));
                    black_box(block_on(catalog.pick(&query, &options)).unwrap());
                    total += started.elapsed();
                }
                total
            })
        });

        if n <= cold_max {
            group.bench_function(BenchmarkId::new("hybrid_cold", n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let query = next();
                        let started = Instant::now();
                        let (_, options) = hybrid(model.clone());
                        black_box(block_on(catalog.pick(&query, &options)).unwrap());
                        total += started.elapsed();
                    }
                    total
                })
            });
        }
    }
    group.finish();
    c.final_summary();
}
