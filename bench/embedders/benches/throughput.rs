//! Criterion throughput of every all-MiniLM-L6-v2 implementation at hand on the same texts, in
//! one process: a group per set of texts, a function per implementation, one iteration embedding
//! the whole set in batches of [`BATCH`], so criterion reports texts a second.
//!
//! Before measuring, one pass of each implementation over each set gives the vectors compared
//! with `MiniLm`'s; the run stops there, with the table, when an implementation is further than
//! [`MAX_COSINE_DISTANCE`] from it, since a faster row that computes something else says nothing.
//! After the groups, a summary gives each implementation's median texts a second over the
//! measured samples and its ratio to `MiniLm`.

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use embedders::{
    Implementation, MAX_TOKENS, REFERENCE, disagreement, implementations, texts, tokenizer,
};
use tool_runtime::select::minilm::MiniLm;

/// Texts per call, as `EmbeddingScorer` sends them.
const BATCH: usize = 32;
/// Size of the generated set.
const GENERATED: usize = 1_000;
/// Criterion's smallest sample count: each sample is one pass over a whole set (seconds), so the
/// run stays in minutes.
const SAMPLES: usize = 10;
/// Float rounding between implementations of the same model stays well below this (about 1e-7);
/// anything above is another computation.
const MAX_COSINE_DISTANCE: f32 = 1e-5;

fn embed_all(imp: &Implementation, texts: &[String]) -> Vec<Vec<f32>> {
    texts.chunks(BATCH).flat_map(|b| (imp.run)(b)).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Prints the agreement table of one set and returns the rows too far from `MiniLm`.
fn agreement(set: &str, texts: &[String], impls: &[Implementation]) -> Vec<String> {
    println!(
        "| {:<42} | {:>10} | {:>9} | {:>10} |",
        "implementation", "first pass", "max 1-cos", "max |diff|"
    );
    println!("|{:-<44}|{:->12}|{:->11}|{:->12}|", "", "", "", "");
    let mut reference: Option<Vec<Vec<f32>>> = None;
    let mut far = Vec::new();
    for imp in impls {
        let start = Instant::now();
        let vectors = embed_all(imp, texts);
        let took = start.elapsed();
        let reference = reference.get_or_insert_with(|| vectors.clone());
        let (cos, abs) = disagreement(reference, &vectors);
        println!(
            "| {:<42} | {:>9.1}s | {:>9.1e} | {:>10.1e} |",
            imp.name,
            took.as_secs_f64(),
            cos,
            abs
        );
        if cos.is_nan() || cos > MAX_COSINE_DISTANCE {
            far.push(format!("{set}: {} (1-cos {cos:.1e})", imp.name));
        }
    }
    far
}

fn main() {
    let Some(dir) = MiniLm::dir_from_env() else {
        eprintln!("set TOOLS_MINILM_DIR to the all-MiniLM-L6-v2 directory (see README.md)");
        std::process::exit(2);
    };
    let mut sets = vec![("generated", texts::generated(GENERATED))];
    match texts::bfcl() {
        Ok(t) => sets.push(("bfcl", t)),
        Err(e) => println!("bfcl set skipped: {e}"),
    }
    let (impls, skipped) = implementations(&dir);
    assert_eq!(impls[0].name, REFERENCE, "MiniLm comes first");
    if let Some(why) = skipped {
        println!("ONNX Runtime rows skipped: {why}");
    }
    println!(
        "candle threads: {}; batches of {BATCH}; one iteration embeds the whole set",
        candle_core::utils::get_num_threads()
    );

    let tok = tokenizer(&dir);
    let mut far = Vec::new();
    for (set, texts) in &sets {
        let lens: Vec<usize> = texts
            .iter()
            .map(|t| tok.encode(t, MAX_TOKENS).len())
            .collect();
        let words: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
        println!(
            "\n{set}: {} texts, {:.1} words and {:.1} tokens on average, longest {} tokens; \
             agreement with {REFERENCE}:",
            texts.len(),
            words as f64 / texts.len() as f64,
            lens.iter().sum::<usize>() as f64 / texts.len() as f64,
            lens.iter().max().unwrap_or(&0)
        );
        far.extend(agreement(set, texts, &impls));
    }
    assert!(
        far.is_empty(),
        "further than {MAX_COSINE_DISTANCE:e} cosine distance from {REFERENCE}, so computing \
         something else: {far:?}"
    );
    println!();

    let mut c = Criterion::default()
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    // seconds of each routine call, per set and implementation; warm-up calls come first
    let mut seconds: Vec<Vec<Vec<f64>>> = Vec::new();
    for (set, texts) in &sets {
        let mut group = c.benchmark_group(*set);
        group
            .throughput(Throughput::Elements(texts.len() as u64))
            .sampling_mode(SamplingMode::Flat);
        let mut per_set = Vec::new();
        for imp in &impls {
            let calls = RefCell::new(Vec::new());
            group.bench_function(&imp.name, |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        for batch in texts.chunks(BATCH) {
                            black_box((imp.run)(black_box(batch)));
                        }
                    }
                    let took = start.elapsed();
                    calls.borrow_mut().push(took.as_secs_f64() / iters as f64);
                    took
                })
            });
            per_set.push(calls.into_inner());
        }
        group.finish();
        seconds.push(per_set);
    }

    for ((set, texts), per_set) in sets.iter().zip(&seconds) {
        // a function left out by a filter on the command line has no samples
        let rates: Vec<Option<f64>> = per_set
            .iter()
            .map(|calls| {
                (calls.len() >= SAMPLES)
                    .then(|| texts.len() as f64 / median(calls[calls.len() - SAMPLES..].to_vec()))
            })
            .collect();
        println!("\n{set}: median texts/s over the {SAMPLES} measured samples");
        println!(
            "| {:<42} | {:>8} | {:>11} |",
            "implementation", "texts/s", "vs MiniLm"
        );
        println!("|{:-<44}|{:->10}|{:->13}|", "", "", "");
        for (imp, rate) in impls.iter().zip(&rates) {
            match (rate, rates[0]) {
                (Some(r), Some(base)) => {
                    println!("| {:<42} | {:>8.1} | {:>10.2}x |", imp.name, r, r / base)
                }
                (Some(r), None) => println!("| {:<42} | {:>8.1} | {:>11} |", imp.name, r, "-"),
                (None, _) => {}
            }
        }
    }
    c.final_summary();
}
