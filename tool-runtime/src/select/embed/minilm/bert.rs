//! The BERT encoder forward pass (inference only), as all-MiniLM-L6-v2 needs it: embeddings,
//! post-norm transformer layers with GELU, no pooler, then mean pooling and L2 normalisation.
//!
//! Tokens are packed, not padded: the texts of a batch are laid end to end as the rows of one
//! matrix, so every linear layer is one matrix product over exactly the batch's tokens, and only
//! attention, which mixes tokens, looks at where each text starts and ends. A batch padded to its
//! longest text spends most of its products on padding when lengths vary.
//!
//! The pass runs on plain `f32` buffers allocated once per call and reused by every layer: with a
//! tensor per operation, each of the ~20 operations of a layer allocated and zeroed a new buffer
//! of up to tens of megabytes, which the allocator mapped and unmapped each time, and the page
//! faults showed as a third of the run in system time. Matrix products go to `gemm` (the kernel
//! candle also uses, on rayon's threads), with the bias, and the residual where there is one,
//! already in the destination so that the product accumulates onto them in the same pass.
//! The weights are used where they lie in `model.safetensors` (mapped, not read: a process that
//! embeds one query would otherwise spend most of its time copying 90 MB), in the file's own
//! layouts: the matrix products of a short pass read a stored `out × in` weight through strides,
//! and those of a pass of [`TRANSPOSED_FROM_ROWS`] tokens or more a transposed copy made once.

use std::ops::{Deref, Range};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use super::math::{LANES, dot, erf, sum};

/// The bytes of `model.safetensors`: the mapped file, or any buffer holding the same bytes.
pub type Source = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A tensor's values: in place in the weights file when its bytes can be read as floats as they
/// are (little-endian and aligned, as safetensors lays them out), else copied out once.
enum Floats {
    InPlace { source: Source, bytes: Range<usize> },
    Owned(Vec<f32>),
}

impl Deref for Floats {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match self {
            // the cast was checked when the tensor was found, so it cannot fail here
            Floats::InPlace { source, bytes } => {
                bytemuck::cast_slice(&(**source).as_ref()[bytes.clone()])
            }
            Floats::Owned(values) => values,
        }
    }
}

/// Why the model cannot be loaded or run, said for the person who supplied its files.
pub type Result<T> = std::result::Result<T, String>;

/// The fields of `config.json` the forward pass reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
}

fn default_eps() -> f64 {
    1e-12
}

/// Tokens run through the layers at once. Large enough for the matrix products to reach full
/// speed on every core (their rows), small enough that a pass's buffers (about 15 KB a token)
/// stay in the last-level cache rather than being streamed from memory between operations.
const CHUNK_TOKENS: usize = 512;

/// Rows of a pass from which a layer's products read its transposed copy of the weight rather
/// than the weight in place. gemm reads an `in × out` row-major right-hand side as it lies, but
/// packs a stored `out × in` one (transposing it) in every product: for a query of a few tokens
/// that packing is most of the product, yet cheaper than transposing every weight at load; for a
/// batch the copy, made once per process, is worth 10-20% of every product.
const TRANSPOSED_FROM_ROWS: usize = 64;

/// A linear layer: the weight as stored (`out × in`, row-major) and, once a pass is large
/// enough to pay for it, its transpose.
struct Linear {
    weight: Floats,
    transposed: OnceLock<Vec<f32>>,
    bias: Floats,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    fn new(weight: Floats, bias: Floats, inputs: usize, outputs: usize) -> Self {
        Linear {
            weight,
            transposed: OnceLock::new(),
            bias,
            inputs,
            outputs,
        }
    }

    /// The weight as `in × out`, row-major, made on first use.
    fn transposed(&self) -> &[f32] {
        self.transposed.get_or_init(|| {
            let (inputs, outputs) = (self.inputs, self.outputs);
            let w: &[f32] = &self.weight;
            let mut t = vec![0f32; w.len()];
            // In tiles, so that the reads and the writes both stay within a few cache lines: a
            // plain loop writes a column of the result for each row it reads, a miss a value.
            const TILE: usize = 32;
            for o0 in (0..outputs).step_by(TILE) {
                for i0 in (0..inputs).step_by(TILE) {
                    for o in o0..(o0 + TILE).min(outputs) {
                        let row = &w[o * inputs..][..inputs];
                        for i in i0..(i0 + TILE).min(inputs) {
                            t[i * outputs + o] = row[i];
                        }
                    }
                }
            }
            t
        })
    }

    /// `out += x · Wᵀ` for `rows` rows of `x`, into the first `outputs` columns of rows of `out`
    /// that are `stride` floats apart, each already holding the bias (and residual).
    fn accumulate(&self, x: &[f32], rows: usize, out: &mut [f32], stride: usize, threads: usize) {
        if rows == 0 {
            return;
        }
        // the right-hand side `in × out` and its row and column strides
        let (rhs, rhs_rs, rhs_cs): (&[f32], usize, usize) = if rows >= TRANSPOSED_FROM_ROWS {
            (self.transposed(), self.outputs, 1)
        } else {
            (&self.weight, 1, self.inputs)
        };
        assert!(
            x.len() >= rows * self.inputs
                && stride >= self.outputs
                && out.len() >= (rows - 1) * stride + self.outputs
                && rhs.len() >= self.inputs * self.outputs
        );
        // a product of a few rows is over before a second thread would have its share
        let parallelism = if threads > 1 && rows >= TRANSPOSED_FROM_ROWS {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        };
        // SAFETY: the bounds were checked above; `out` does not overlap `x` or the weight (a
        // `&mut` borrow), and the strides describe the layouts of the three buffers.
        unsafe {
            gemm::gemm(
                rows,
                self.outputs,
                self.inputs,
                out.as_mut_ptr(),
                1,
                stride as isize,
                true,
                x.as_ptr(),
                1,
                self.inputs as isize,
                rhs.as_ptr(),
                rhs_cs as isize,
                rhs_rs as isize,
                1.0,
                1.0,
                false,
                false,
                false,
                parallelism,
            );
        }
    }

    /// `out = x · Wᵀ + b`.
    fn forward(&self, x: &[f32], rows: usize, out: &mut [f32], threads: usize) {
        let out = &mut out[..rows * self.outputs];
        let bias: &[f32] = &self.bias;
        out.par_chunks_mut(ROWS_PER_TASK * self.outputs)
            .for_each(|block| {
                for row in block.chunks_exact_mut(self.outputs) {
                    row.copy_from_slice(bias);
                }
            });
        self.accumulate(x, rows, out, self.outputs, threads);
    }

    /// `out = residual + x · Wᵀ + b`.
    fn forward_residual(
        &self,
        x: &[f32],
        residual: &[f32],
        rows: usize,
        out: &mut [f32],
        threads: usize,
    ) {
        let out = &mut out[..rows * self.outputs];
        let block = ROWS_PER_TASK * self.outputs;
        let bias: &[f32] = &self.bias;
        out.par_chunks_mut(block)
            .zip(residual[..rows * self.outputs].par_chunks(block))
            .for_each(|(out, residual)| {
                for ((o, r), b) in out.iter_mut().zip(residual).zip(bias.iter().cycle()) {
                    *o = r + b;
                }
            });
        self.accumulate(x, rows, out, self.outputs, threads);
    }
}

/// Query, key and value, written side by side into rows `[q | k | v]`: three products over the
/// same input, which stays in cache between them.
struct Qkv([Linear; 3]);

impl Qkv {
    fn forward(&self, x: &[f32], rows: usize, out: &mut [f32], threads: usize) {
        let h = self.0[0].outputs;
        let out = &mut out[..rows * 3 * h];
        let [q, k, v] = &self.0;
        let biases: [&[f32]; 3] = [&q.bias, &k.bias, &v.bias];
        out.par_chunks_mut(ROWS_PER_TASK * 3 * h).for_each(|block| {
            for row in block.chunks_exact_mut(3 * h) {
                for (part, bias) in row.chunks_exact_mut(h).zip(biases) {
                    part.copy_from_slice(bias);
                }
            }
        });
        for (i, part) in self.0.iter().enumerate() {
            part.accumulate(x, rows, &mut out[i * h..], 3 * h, threads);
        }
    }
}

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    /// Normalises each row of `x` in place.
    fn apply(&self, x: &mut [f32]) {
        let n = self.weight.len();
        x.par_chunks_mut(ROWS_PER_TASK * n)
            .for_each(|block| self.apply_rows(block));
    }

    fn apply_rows(&self, x: &mut [f32]) {
        let n = self.weight.len();
        for row in x.chunks_exact_mut(n) {
            let mean = sum(row) / n as f32;
            let mut var = [0f32; LANES];
            let mut chunks = row.chunks_exact(LANES);
            for c in &mut chunks {
                for (v, x) in var.iter_mut().zip(c) {
                    *v += (x - mean) * (x - mean);
                }
            }
            let tail: f32 = chunks
                .remainder()
                .iter()
                .map(|x| (x - mean) * (x - mean))
                .sum();
            let inv = 1.0 / ((var.iter().sum::<f32>() + tail) / n as f32 + self.eps).sqrt();
            for ((x, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *x = (*x - mean) * inv * w + b;
            }
        }
    }
}

/// Rows per task of the per-token steps run on the thread pool: enough work to outweigh handing
/// it to another thread.
const ROWS_PER_TASK: usize = 32;

/// GELU (the exact, erf form BERT uses), in place.
fn gelu(x: &mut [f32]) {
    x.par_chunks_mut(ROWS_PER_TASK * 1024).for_each(|block| {
        for v in block {
            *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
        }
    });
}

struct Layer {
    qkv: Qkv,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder with its weights.
pub struct Bert {
    word: Floats,
    position: Floats,
    /// Every token is of type 0 (one segment).
    token_type: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    hidden: usize,
    intermediate: usize,
    heads: usize,
    head_dim: usize,
    pub max_positions: usize,
}

struct Weights<'a> {
    source: &'a Source,
    tensors: SafeTensors<'a>,
}

impl Weights<'_> {
    fn find(&self, name: &str) -> Result<safetensors::tensor::TensorView<'_>> {
        // Some exports prefix every name with the architecture.
        self.tensors
            .tensor(name)
            .or_else(|_| self.tensors.tensor(&format!("bert.{name}")))
            .map_err(|_| format!("model.safetensors has no tensor {name}"))
    }

    /// The tensor's values, checked to have `shape` and to be stored as `f32`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Floats> {
        let t = self.find(name)?;
        if t.shape() != shape {
            return Err(format!(
                "model.safetensors: {name} is {:?}, config.json implies {shape:?}",
                t.shape()
            ));
        }
        if t.dtype() != Dtype::F32 {
            return Err(format!(
                "model.safetensors: {name} is stored as {:?}; this embedder reads f32 weights \
                 (all-MiniLM-L6-v2 as published)",
                t.dtype()
            ));
        }
        let data = t.data();
        if cfg!(target_endian = "little") && bytemuck::try_cast_slice::<u8, f32>(data).is_ok() {
            let file = (**self.source).as_ref();
            let start = data.as_ptr() as usize - file.as_ptr() as usize;
            return Ok(Floats::InPlace {
                source: Arc::clone(self.source),
                bytes: start..start + data.len(),
            });
        }
        Ok(Floats::Owned(
            data.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ))
    }

    fn linear(&self, prefix: &str, inputs: usize, outputs: usize) -> Result<Linear> {
        Ok(Linear::new(
            self.get(&format!("{prefix}.weight"), &[outputs, inputs])?,
            self.get(&format!("{prefix}.bias"), &[outputs])?,
            inputs,
            outputs,
        ))
    }

    fn qkv(&self, prefix: &str, hidden: usize) -> Result<Qkv> {
        let [q, k, v] = ["query", "key", "value"]
            .map(|p| self.linear(&format!("{prefix}.{p}"), hidden, hidden));
        Ok(Qkv([q?, k?, v?]))
    }

    fn norm(&self, prefix: &str, hidden: usize, eps: f64) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: self.get(&format!("{prefix}.weight"), &[hidden])?.to_vec(),
            bias: self.get(&format!("{prefix}.bias"), &[hidden])?.to_vec(),
            eps: eps as f32,
        })
    }
}

/// The buffers of one pass, sized for `CHUNK_TOKENS` (or the one longer text).
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    inner: Vec<f32>,
}

impl Bert {
    /// Loads the weights from the bytes of `model.safetensors` for `config`; the tensors are
    /// used in place, so the encoder keeps `source`.
    pub fn load(source: &Source, config: &Config) -> Result<Self> {
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(
                "config.json: hidden_size must be a multiple of num_attention_heads".into(),
            );
        }
        let tensors = SafeTensors::deserialize((**source).as_ref())
            .map_err(|e| format!("model.safetensors is not a safetensors file: {e}"))?;
        let w = Weights { source, tensors };
        let eps = config.layer_norm_eps;
        let hidden = config.hidden_size;
        let inter = config.intermediate_size;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let p = format!("encoder.layer.{i}");
                Ok(Layer {
                    qkv: w.qkv(&format!("{p}.attention.self"), hidden)?,
                    attention_out: w.linear(
                        &format!("{p}.attention.output.dense"),
                        hidden,
                        hidden,
                    )?,
                    attention_norm: w.norm(
                        &format!("{p}.attention.output.LayerNorm"),
                        hidden,
                        eps,
                    )?,
                    intermediate: w.linear(&format!("{p}.intermediate.dense"), hidden, inter)?,
                    output: w.linear(&format!("{p}.output.dense"), inter, hidden)?,
                    output_norm: w.norm(&format!("{p}.output.LayerNorm"), hidden, eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let table = |name: &str| -> Result<Floats> {
            let rows = w.find(name)?.shape().first().copied().unwrap_or(0);
            w.get(name, &[rows, hidden])
        };
        let token_type = table("embeddings.token_type_embeddings.weight")?;
        if token_type.len() < hidden {
            return Err("model.safetensors: no token type embedding".into());
        }
        let position = table("embeddings.position_embeddings.weight")?;
        Ok(Bert {
            word: table("embeddings.word_embeddings.weight")?,
            max_positions: config.max_position_embeddings.min(position.len() / hidden),
            position,
            token_type: token_type[..hidden].to_vec(),
            embedding_norm: w.norm("embeddings.LayerNorm", hidden, eps)?,
            layers,
            hidden,
            intermediate: inter,
            heads: config.num_attention_heads,
            head_dim: hidden / config.num_attention_heads,
        })
    }

    /// Mean-pooled, L2-normalised sentence embeddings of a batch of token id sequences, each at
    /// most `max_positions` long.
    pub fn embed(&self, batch: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let vocab = self.word.len() / self.hidden;
        for seq in batch {
            if seq.len() > self.max_positions {
                return Err(format!(
                    "{} tokens, more than the model's {} positions",
                    seq.len(),
                    self.max_positions
                ));
            }
            if let Some(id) = seq.iter().find(|&&id| id as usize >= vocab) {
                return Err(format!(
                    "token id {id} is outside the vocabulary of {vocab}"
                ));
            }
        }
        let longest = batch.iter().map(Vec::len).max().unwrap_or(0);
        let capacity = CHUNK_TOKENS.max(longest);
        let total: usize = batch.iter().map(Vec::len).sum();
        let rows = capacity.min(total);
        let mut scratch = Scratch {
            x: vec![0.0; rows * self.hidden],
            qkv: vec![0.0; rows * 3 * self.hidden],
            context: vec![0.0; rows * self.hidden],
            attended: vec![0.0; rows * self.hidden],
            inner: vec![0.0; rows * self.intermediate],
        };
        let threads = rayon::current_num_threads();
        let mut out = Vec::with_capacity(batch.len());
        let mut rest = batch;
        while !rest.is_empty() {
            // consecutive texts up to the token budget (at least one)
            let mut take = 0;
            let mut tokens = 0;
            while take < rest.len() && (take == 0 || tokens + rest[take].len() <= capacity) {
                tokens += rest[take].len();
                take += 1;
            }
            let (chunk, tail) = rest.split_at(take);
            self.pass(chunk, &mut scratch, threads, &mut out);
            rest = tail;
        }
        Ok(out)
    }

    /// Runs the texts of `chunk` (their tokens fit the scratch buffers) and appends their vectors.
    fn pass(&self, chunk: &[Vec<u32>], s: &mut Scratch, threads: usize, out: &mut Vec<Vec<f32>>) {
        let h = self.hidden;
        let rows: usize = chunk.iter().map(Vec::len).sum();
        let x = &mut s.x[..rows * h];
        let mut row = x.chunks_exact_mut(h);
        for seq in chunk {
            for (pos, &id) in seq.iter().enumerate() {
                let Some(dst) = row.next() else { break };
                let word = &self.word[id as usize * h..][..h];
                let position = &self.position[pos * h..][..h];
                for (((d, w), p), t) in dst.iter_mut().zip(word).zip(position).zip(&self.token_type)
                {
                    *d = w + p + t;
                }
            }
        }
        self.embedding_norm.apply(x);

        for layer in &self.layers {
            layer.qkv.forward(&s.x, rows, &mut s.qkv, threads);
            self.attention(chunk, &s.qkv, &mut s.context[..rows * h]);
            layer
                .attention_out
                .forward_residual(&s.context, &s.x, rows, &mut s.attended, threads);
            layer.attention_norm.apply(&mut s.attended[..rows * h]);
            layer
                .intermediate
                .forward(&s.attended, rows, &mut s.inner, threads);
            gelu(&mut s.inner[..rows * self.intermediate]);
            layer
                .output
                .forward_residual(&s.inner, &s.attended, rows, &mut s.x, threads);
            layer.output_norm.apply(&mut s.x[..rows * h]);
        }

        let mut start = 0;
        for seq in chunk {
            let mut mean = vec![0f32; h];
            for token in s.x[start * h..(start + seq.len()) * h].chunks_exact(h) {
                for (m, v) in mean.iter_mut().zip(token) {
                    *m += v;
                }
            }
            start += seq.len();
            // An empty sequence has no tokens to average: its vector stays zero.
            let count = seq.len().max(1) as f32;
            let norm = (dot(&mean, &mean).sqrt() / count).max(1e-12);
            for m in &mut mean {
                *m /= count * norm;
            }
            out.push(mean);
        }
    }

    /// Scaled dot-product attention of every text over its own tokens only, from the packed
    /// `[q | k | v]` rows into `context`, the texts in parallel. Each text and head is two small
    /// matrix products (read through strides, so nothing is gathered) around a softmax; they go
    /// to `gemm` too, whose kernels are chosen for the CPU at run time, where loops here would be
    /// compiled for the baseline x86-64 (4-wide vectors) and reduce each score horizontally.
    fn attention(&self, chunk: &[Vec<u32>], qkv: &[f32], context: &mut [f32]) {
        let h = self.hidden;
        let mut texts = Vec::with_capacity(chunk.len());
        let (mut start, mut rest) = (0, context);
        for seq in chunk {
            let (mine, tail) = rest.split_at_mut(seq.len() * h);
            texts.push((start, mine));
            start += seq.len();
            rest = tail;
        }
        texts
            .into_par_iter()
            .for_each_init(Vec::new, |scores, (start, context)| {
                self.attend(qkv, start, context, scores)
            });
    }

    /// The attention of the text whose rows start at `start` into its rows of `context`.
    fn attend(&self, qkv: &[f32], start: usize, context: &mut [f32], scores: &mut Vec<f32>) {
        let h = self.hidden;
        let d = self.head_dim;
        let len = context.len() / h;
        let rows = &qkv[start * 3 * h..(start + len) * 3 * h];
        let scale = 1.0 / (d as f32).sqrt();
        scores.resize(len * len, 0.0);
        for head in 0..self.heads {
            let query = rows[head * d..].as_ptr();
            let key = rows[h + head * d..].as_ptr();
            let value = rows[2 * h + head * d..].as_ptr();
            // SAFETY: `rows` holds the text's `len` rows of `3h` floats and `scores` `len × len`;
            // query, key and value are the head's `d` columns of those rows (`3h` apart), the
            // last one ending within the row, and the key is read transposed (rows one float
            // apart, columns `3h` apart).
            unsafe {
                gemm::gemm(
                    len,
                    len,
                    d,
                    scores.as_mut_ptr(),
                    1,
                    len as isize,
                    false,
                    query,
                    1,
                    3 * h as isize,
                    key,
                    3 * h as isize,
                    1,
                    0.0,
                    scale,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            for row in scores.chunks_exact_mut(len) {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut total = 0.0;
                for s in row.iter_mut() {
                    *s = (*s - max).exp();
                    total += *s;
                }
                let inv = 1.0 / total;
                row.iter_mut().for_each(|s| *s *= inv);
            }
            // SAFETY: as above; the destination is the head's `d` columns of the text's `len`
            // rows of `context`, `h` apart.
            unsafe {
                gemm::gemm(
                    len,
                    d,
                    len,
                    context[head * d..].as_mut_ptr(),
                    1,
                    h as isize,
                    false,
                    scores.as_ptr(),
                    1,
                    len as isize,
                    value,
                    1,
                    3 * h as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
        }
    }
}
