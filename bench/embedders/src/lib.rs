//! Every all-MiniLM-L6-v2 implementation at hand behind one signature, the texts they embed, and
//! how far their vectors are from tool-runtime's `MiniLm`. `benches/throughput.rs` measures them;
//! see README.md for the command and the optional ONNX rows.

pub mod onnx;
pub mod texts;

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tool_runtime::select::minilm::{MiniLm, WordPiece};

/// Embeds one batch as a caller hands it over.
pub type Run = Box<dyn Fn(&[String]) -> Vec<Vec<f32>>>;

/// One implementation, named as the tables and criterion show it.
pub struct Implementation {
    pub name: String,
    pub run: Run,
}

/// Longest input, in tokens, as tool-runtime truncates.
pub const MAX_TOKENS: usize = 256;

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

/// Groups of texts of similar length, at most 256 padded tokens each: applied to the alternatives
/// that pad a batch to its longest text, so that their `grouped` rows compare kernels, not
/// padding.
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

/// Name of the reference row: tool-runtime's `MiniLm`.
pub const REFERENCE: &str = "tool-runtime MiniLm";

fn tool_runtime(dir: &Path) -> Implementation {
    let model = MiniLm::load(dir).expect("the model loads");
    Implementation {
        name: REFERENCE.into(),
        run: Box::new(move |batch| model.embed_now(batch).expect("embeds")),
    }
}

fn config_json(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("config.json")).expect("config.json")
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

/// `MiniLm` first, then candle-transformers' BERT padded and grouped, then the ONNX Runtime rows
/// when their variables are set; the second value says why those are missing otherwise.
pub fn implementations(dir: &Path) -> (Vec<Implementation>, Option<String>) {
    let mut out = vec![
        tool_runtime(dir),
        transformers(dir, false),
        transformers(dir, true),
    ];
    let skipped = match onnx::implementations(dir) {
        Ok(more) => {
            out.extend(more);
            None
        }
        Err(why) => Some(why),
    };
    (out, skipped)
}

/// The largest cosine distance between `got` and `reference`, and the largest difference of one
/// component.
pub fn disagreement(reference: &[Vec<f32>], got: &[Vec<f32>]) -> (f32, f32) {
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
