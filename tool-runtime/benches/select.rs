//! Pre-selection performance: query latency of the default BM25 scorer against the
//! keyword-overlap scorer on catalogs of 100, 1,000 and 10,000 tools synthesised from the BFCL
//! pool; index build time against merely collecting the definitions; and the memory the index
//! takes per tool (printed before the timings).
//!
//! `BFCL_DIR=<BFCL folder> cargo bench -p tool-runtime --bench select` (see `test-support/src/bfcl.rs`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use tool_runtime::definition::ToolDefinition;
use tool_runtime::select::{Catalog, KeywordOverlapScorer, PickOptions};

use test_support::bfcl;

/// Counts live heap bytes so the index's memory per tool is measured, not estimated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SIZES: [usize; 3] = [100, 1_000, 10_000];

fn data() -> (Vec<ToolDefinition>, Vec<String>) {
    let dir = bfcl::data_dir(env!("CARGO_MANIFEST_DIR"));
    let (tools, questions) = bfcl::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    // Every 12th question: a fixed, varied sample across the three files.
    let queries = questions
        .iter()
        .step_by(12)
        .map(|q| q.text.clone())
        .collect();
    (tools, queries)
}

fn report_memory(pool: &[ToolDefinition]) {
    println!("index memory (live heap bytes, counted by the allocator):");
    for &n in &SIZES {
        let defs = bfcl::synthesize(pool, n);
        let arcs: Vec<Arc<ToolDefinition>> = defs.into_iter().map(Arc::new).collect();
        let before = LIVE.load(Ordering::Relaxed);
        let mut catalog = Catalog::new();
        for def in &arcs {
            catalog.insert_shared(def.clone()).unwrap();
        }
        let after = LIVE.load(Ordering::Relaxed);
        println!(
            "  {n:>6} tools: {:>8} bytes per tool for the catalog and its index (definitions shared, not counted)",
            (after - before) / n
        );
        drop(catalog);
    }
}

fn latency(c: &mut Criterion, pool: &[ToolDefinition], queries: &[String]) {
    let mut group = c.benchmark_group("select/latency");
    for &n in &SIZES {
        let catalog = Catalog::from_definitions(bfcl::synthesize(pool, n)).unwrap();
        let bm25 = PickOptions::new().allow_unsafe(true);
        let keyword = PickOptions::new()
            .allow_unsafe(true)
            .scorer(Arc::new(KeywordOverlapScorer));
        let mut i = 0;
        group.bench_function(BenchmarkId::new("bm25", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let picked = futures::executor::block_on(catalog.pick(&queries[i], &bm25));
                black_box(picked.unwrap())
            })
        });
        if n >= 10_000 {
            group
                .sample_size(10)
                .measurement_time(Duration::from_secs(10));
        }
        group.bench_function(BenchmarkId::new("keyword_seed", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let picked = futures::executor::block_on(catalog.pick(&queries[i], &keyword));
                black_box(picked.unwrap())
            })
        });
        group
            .sample_size(100)
            .measurement_time(Duration::from_secs(5));
    }
    group.finish();
}

fn build(c: &mut Criterion, pool: &[ToolDefinition]) {
    let mut group = c.benchmark_group("select/build");
    group.sample_size(10);
    for &n in &[1_000, 10_000] {
        let defs = bfcl::synthesize(pool, n);
        group.bench_function(BenchmarkId::new("index", n), |b| {
            b.iter(|| black_box(Catalog::from_definitions(defs.iter().cloned()).unwrap()))
        });
        group.bench_function(BenchmarkId::new("clone_only", n), |b| {
            b.iter(|| black_box(defs.to_vec()))
        });
    }
    group.finish();
}

fn main() {
    let (pool, queries) = data();
    report_memory(&pool);
    let mut c = Criterion::default().configure_from_args();
    latency(&mut c, &pool, &queries);
    build(&mut c, &pool);
    c.final_summary();
}
