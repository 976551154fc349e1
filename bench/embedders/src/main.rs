//! Embeds the same texts with every all-MiniLM-L6-v2 implementation at hand, in one process,
//! and prints each one's throughput, its ratio to tool-runtime's `MiniLm`, and how far its
//! vectors are from `MiniLm`'s. See README.md for the command and the optional ONNX rows.

mod before;
mod onnx;
mod texts;

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tool_runtime::select::minilm::{MiniLm, WordPiece};

/// Embeds one batch as a caller hands it over.
pub type Run = Box<dyn Fn(&[String]) -> Vec<Vec<f32>>>;

/// One row of the table.
pub struct Implementation {
    pub name: String,
    pub run: Run,
}

/// Longest input, in tokens, as tool-runtime truncates.
pub const MAX_TOKENS: usize = 256;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The model's tokenizer as tool-runtime implements it, so every implementation but fastembed
/// (which brings its own) sees the same token ids.
pub fn tokenizer(dir: &Path) -> WordPiece {
    let json = std::fs::read_to_string(dir.join("tokenizer.json")).expect("tokenizer.json");
    WordPiece::from_json(&json).expect("tokenizer.json parses")
}

fn tensors(dir: &Path) -> HashMap<String, Tensor> {
    candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)
        .expect("model.safetensors loads")
}

/// Groups of texts of similar length, at most 256 padded tokens each: the grouping tool-runtime
/// used at commit cc8fbe9, also applied to the alternatives that pad a batch to its longest text
/// so that their rows compare kernels, not padding.
pub fn groups(ids: &[Vec<u32>]) -> Vec<Vec<usize>> {
    const GROUP_TOKENS: usize = 256;
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i].len());
    let mut out = Vec::new();
    let mut rest = &order[..];
    while !rest.is_empty() {
        let mut take = 1;
        while take < rest.len() && (take + 1) * ids[rest[take]].len() <= GROUP_TOKENS {
            take += 1;
        }
        out.push(rest[..take].to_vec());
        rest = &rest[take..];
    }
    out
}

/// Runs `embed` on each group of `ids` and puts the vectors back in input order.
pub fn grouped(
    ids: &[Vec<u32>],
    mut embed: impl FnMut(&[Vec<u32>]) -> Vec<Vec<f32>>,
) -> Vec<Vec<f32>> {
    let mut out = vec![Vec::new(); ids.len()];
    for group in groups(ids) {
        let batch: Vec<Vec<u32>> = group.iter().map(|&i| ids[i].clone()).collect();
        for (&i, v) in group.iter().zip(embed(&batch)) {
            out[i] = v;
        }
    }
    out
}

/// Padded ids and mask, row-major `n × len`.
pub fn pad(ids: &[Vec<u32>]) -> (usize, Vec<u32>, Vec<f32>) {
    let len = ids.iter().map(Vec::len).max().unwrap_or(0);
    let mut flat = Vec::with_capacity(ids.len() * len);
    let mut mask = Vec::with_capacity(ids.len() * len);
    for seq in ids {
        flat.extend_from_slice(seq);
        flat.extend(std::iter::repeat_n(0u32, len - seq.len()));
        mask.extend(std::iter::repeat_n(1f32, seq.len()));
        mask.extend(std::iter::repeat_n(0f32, len - seq.len()));
    }
    (len, flat, mask)
}

/// Mean over the unmasked positions of `hidden` (`n × len × dim`, row-major), L2-normalised: the
/// model's sentence-transformers pooling.
pub fn mean_pool(hidden: &[f32], mask: &[f32], n: usize, len: usize) -> Vec<Vec<f32>> {
    let dim = hidden.len() / (n * len).max(1);
    (0..n)
        .map(|i| {
            let mut v = vec![0f32; dim];
            let mut count = 0f32;
            for t in 0..len {
                let m = mask[i * len + t];
                if m > 0.0 {
                    count += m;
                    let row = &hidden[(i * len + t) * dim..][..dim];
                    for (a, b) in v.iter_mut().zip(row) {
                        *a += b * m;
                    }
                }
            }
            let count = count.max(1.0);
            v.iter_mut().for_each(|x| *x /= count);
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}

fn tool_runtime(dir: &Path) -> Implementation {
    let model = MiniLm::load(dir).expect("the model loads");
    Implementation {
        name: "tool-runtime MiniLm".into(),
        run: Box::new(move |batch| model.embed_now(batch).expect("embeds")),
    }
}

fn config_json(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("config.json")).expect("config.json")
}

fn before_grouped(dir: &Path) -> Implementation {
    let tok = tokenizer(dir);
    let config: before::grouped::Config = serde_json::from_str(&config_json(dir)).unwrap();
    let bert = before::grouped::Bert::load(tensors(dir), &config).expect("the model loads");
    Implementation {
        name: "tool-runtime previous (cc8fbe9)".into(),
        run: Box::new(move |batch| {
            let ids: Vec<Vec<u32>> = batch.iter().map(|t| tok.encode(t, MAX_TOKENS)).collect();
            grouped(&ids, |g| bert.embed(g).expect("embeds"))
        }),
    }
}

fn transformers_embed(model: &BertModel, ids: &[Vec<u32>]) -> Vec<Vec<f32>> {
    let n = ids.len();
    let (len, flat, mask) = pad(ids);
    let input = Tensor::from_vec(flat, (n, len), &Device::Cpu).unwrap();
    let mask_t = Tensor::from_slice(&mask, (n, len), &Device::Cpu).unwrap();
    let types = input.zeros_like().unwrap();
    let hidden = model.forward(&input, &types, Some(&mask_t)).unwrap();
    let hidden: Vec<f32> = hidden.flatten_all().unwrap().to_vec1().unwrap();
    mean_pool(&hidden, &mask, n, len)
}

fn transformers(dir: &Path, grouping: bool) -> Implementation {
    let tok = tokenizer(dir);
    let config: Config = serde_json::from_str(&config_json(dir)).unwrap();
    let vb = VarBuilder::from_tensors(tensors(dir), DType::F32, &Device::Cpu);
    let model = BertModel::load(vb, &config).expect("the model loads");
    Implementation {
        name: format!(
            "candle-transformers BertModel{}",
            if grouping { ", grouped" } else { "" }
        ),
        run: Box::new(move |batch| {
            let ids: Vec<Vec<u32>> = batch.iter().map(|t| tok.encode(t, MAX_TOKENS)).collect();
            if grouping {
                grouped(&ids, |g| transformers_embed(&model, g))
            } else {
                transformers_embed(&model, &ids)
            }
        }),
    }
}

/// The largest cosine distance between `got` and `reference`, and the largest difference of one
/// component.
fn disagreement(reference: &[Vec<f32>], got: &[Vec<f32>]) -> (f32, f32) {
    let mut cos = 0f32;
    let mut abs = 0f32;
    for (a, b) in reference.iter().zip(got) {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
        cos = cos.max(1.0 - dot / (na * nb));
        for (x, y) in a.iter().zip(b) {
            abs = abs.max((x - y).abs());
        }
    }
    (cos, abs)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let Some(dir) = MiniLm::dir_from_env() else {
        eprintln!("set TOOLS_MINILM_DIR to the all-MiniLM-L6-v2 directory");
        std::process::exit(2);
    };
    let batch = env_usize("BATCH", 32);
    let rounds = env_usize("ROUNDS", 5).max(1);
    let generated = env_usize("TEXTS", 1_000);
    let only = std::env::var("ONLY").ok();

    let mut sets = vec![("generated", texts::generated(generated))];
    match texts::bfcl() {
        Ok(t) => sets.push(("bfcl", t)),
        Err(e) => println!("BFCL set skipped: {e}"),
    }

    let mut impls = vec![
        tool_runtime(&dir),
        before_grouped(&dir),
        transformers(&dir, false),
        transformers(&dir, true),
    ];
    match onnx::implementations(&dir) {
        Ok(more) => impls.extend(more),
        Err(why) => println!("ONNX Runtime rows skipped: {why}"),
    }
    if let Some(only) = &only {
        impls.retain(|i| {
            i.name == "tool-runtime MiniLm" || only.split(',').any(|o| i.name.contains(o))
        });
    }
    println!(
        "candle threads: {}; batches of {batch} as the callers send them; median of {rounds} rounds, \
         implementations interleaved",
        candle_core::utils::get_num_threads()
    );

    let tok = tokenizer(&dir);
    for (set, texts) in &sets {
        let lens: Vec<usize> = texts
            .iter()
            .map(|t| tok.encode(t, MAX_TOKENS).len())
            .collect();
        let words: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
        println!(
            "\n{set}: {} texts, {:.1} words and {:.1} tokens on average, longest {} tokens",
            texts.len(),
            words as f64 / texts.len() as f64,
            lens.iter().sum::<usize>() as f64 / texts.len() as f64,
            lens.iter().max().unwrap_or(&0)
        );
        // One warm-up pass each (first touch of the weights and buffers), which also gives the
        // vectors compared.
        let vectors: Vec<Vec<Vec<f32>>> = impls
            .iter()
            .map(|i| texts.chunks(batch).flat_map(|b| (i.run)(b)).collect())
            .collect();
        let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); impls.len()];
        for round in 0..rounds {
            // rotated, so that no implementation always runs right after the same one
            for k in 0..impls.len() {
                let i = (k + round) % impls.len();
                let start = Instant::now();
                for b in texts.chunks(batch) {
                    std::hint::black_box((impls[i].run)(b));
                }
                seconds[i].push(start.elapsed().as_secs_f64());
            }
        }
        let rates: Vec<f64> = seconds
            .into_iter()
            .map(|s| texts.len() as f64 / median(s))
            .collect();
        println!(
            "| {:<42} | {:>8} | {:>7} | {:>9} | {:>10} |",
            "implementation", "texts/s", "ratio", "max 1-cos", "max |diff|"
        );
        println!(
            "|{:-<44}|{:->10}|{:->9}|{:->11}|{:->12}|",
            "", "", "", "", ""
        );
        for (k, imp) in impls.iter().enumerate() {
            let (cos, abs) = disagreement(&vectors[0], &vectors[k]);
            println!(
                "| {:<42} | {:>8.1} | {:>6.2}x | {:>9.1e} | {:>10.1e} |",
                imp.name,
                rates[k],
                rates[k] / rates[0],
                cos,
                abs
            );
        }
    }
}
