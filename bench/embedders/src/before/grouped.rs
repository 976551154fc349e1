//! tool-runtime's previous forward pass (commit cc8fbe9: a candle tensor per operation, texts
//! grouped by length and padded), unchanged but for this comment, so that the current pass is
//! measured against it in the same run.
#![allow(dead_code)]

use std::collections::HashMap;

use candle_core::{D, DType, Device, Result, Tensor};
use serde::Deserialize;

/// The fields of `config.json` the forward pass reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
}

fn default_eps() -> f64 {
    1e-12
}

struct Linear {
    /// As stored (out × in); multiplied through a transposed view, which the matrix product
    /// reads by strides, so loading copies nothing.
    weight: Tensor,
    bias: Tensor,
}

impl Linear {
    /// `x · Wᵀ + b` over the last dimension. The batch and sequence dimensions are folded into
    /// the rows of one matrix product: a batched product would broadcast the weight to every
    /// text, copying it each time.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let dims = x.dims().to_vec();
        let (inner, rows) = match dims.split_last() {
            Some((&inner, outer)) => (inner, outer.iter().product::<usize>()),
            None => return Err(candle_core::Error::Msg("a scalar has no features".into())),
        };
        let y = x
            .reshape((rows, inner))?
            .matmul(&self.weight.t()?)?
            .broadcast_add(&self.bias)?;
        let mut out = dims;
        if let Some(last) = out.last_mut() {
            *last = y.dim(1)?;
        }
        y.reshape(out)
    }
}

struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f64,
}

impl LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mean = x.mean_keepdim(D::Minus1)?;
        let centered = x.broadcast_sub(&mean)?;
        let var = centered.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = centered.broadcast_div(&(var + self.eps)?.sqrt()?)?;
        normed
            .broadcast_mul(&self.weight)?
            .broadcast_add(&self.bias)
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder with its weights.
pub struct Bert {
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_dim: usize,
    pub max_positions: usize,
}

struct Weights(HashMap<String, Tensor>);

impl Weights {
    fn get(&self, name: &str) -> Result<Tensor> {
        // Some exports prefix every name with the architecture.
        self.0
            .get(name)
            .or_else(|| self.0.get(&format!("bert.{name}")))
            .cloned()
            .ok_or_else(|| {
                candle_core::Error::Msg(format!("model.safetensors has no tensor {name}"))
            })?
            .to_dtype(DType::F32)
    }

    fn linear(&self, prefix: &str) -> Result<Linear> {
        Ok(Linear {
            weight: self.get(&format!("{prefix}.weight"))?,
            bias: self.get(&format!("{prefix}.bias"))?,
        })
    }

    fn norm(&self, prefix: &str, eps: f64) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: self.get(&format!("{prefix}.weight"))?,
            bias: self.get(&format!("{prefix}.bias"))?,
            eps,
        })
    }
}

impl Bert {
    /// Loads the weights of `model.safetensors` for `config`.
    pub fn load(tensors: HashMap<String, Tensor>, config: &Config) -> Result<Self> {
        let w = Weights(tensors);
        let eps = config.layer_norm_eps;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let p = format!("encoder.layer.{i}");
                Ok(Layer {
                    query: w.linear(&format!("{p}.attention.self.query"))?,
                    key: w.linear(&format!("{p}.attention.self.key"))?,
                    value: w.linear(&format!("{p}.attention.self.value"))?,
                    attention_out: w.linear(&format!("{p}.attention.output.dense"))?,
                    attention_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), eps)?,
                    intermediate: w.linear(&format!("{p}.intermediate.dense"))?,
                    output: w.linear(&format!("{p}.output.dense"))?,
                    output_norm: w.norm(&format!("{p}.output.LayerNorm"), eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(candle_core::Error::Msg(
                "config.json: hidden_size must be a multiple of num_attention_heads".into(),
            ));
        }
        Ok(Bert {
            word: w.get("embeddings.word_embeddings.weight")?,
            position: w.get("embeddings.position_embeddings.weight")?,
            token_type: w.get("embeddings.token_type_embeddings.weight")?,
            embedding_norm: w.norm("embeddings.LayerNorm", eps)?,
            layers,
            heads: config.num_attention_heads,
            head_dim: config.hidden_size / config.num_attention_heads,
            max_positions: config.max_position_embeddings,
        })
    }

    /// Mean-pooled, L2-normalised sentence embeddings of a batch of token id sequences.
    pub fn embed(&self, batch: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let device = Device::Cpu;
        let n = batch.len();
        let len = batch.iter().map(Vec::len).max().unwrap_or(0);
        if n == 0 || len == 0 {
            return Ok(vec![Vec::new(); n]);
        }
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for seq in batch {
            ids.extend(seq.iter().copied());
            ids.extend(std::iter::repeat_n(0u32, len - seq.len()));
            mask.extend(std::iter::repeat_n(1f32, seq.len()));
            mask.extend(std::iter::repeat_n(0f32, len - seq.len()));
        }
        let ids = Tensor::from_vec(ids, (n * len,), &device)?;
        let mask = Tensor::from_vec(mask, (n, len), &device)?;
        let hidden = self.word.shape().dims()[1];

        let words = self.word.index_select(&ids, 0)?.reshape((n, len, hidden))?;
        let positions = self.position.narrow(0, 0, len)?;
        let types = self.token_type.narrow(0, 0, 1)?;
        let mut x = words.broadcast_add(&positions)?.broadcast_add(&types)?;
        x = self.embedding_norm.forward(&x)?;

        // Padding gets a large negative bias so softmax gives it no attention.
        let bias = ((mask.clone() - 1.0)? * 10_000.0)?.reshape((n, 1, 1, len))?;
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        for layer in &self.layers {
            let split = |t: Tensor| -> Result<Tensor> {
                t.reshape((n, len, self.heads, self.head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = split(layer.query.forward(&x)?)?;
            let k = split(layer.key.forward(&x)?)?;
            let v = split(layer.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?.contiguous()?)? * scale)?.broadcast_add(&bias)?;
            let max = scores.max_keepdim(D::Minus1)?;
            let exp = scores.broadcast_sub(&max)?.exp()?;
            let probs = exp.broadcast_div(&exp.sum_keepdim(D::Minus1)?)?;
            let context = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((n, len, hidden))?;
            let attended = layer
                .attention_norm
                .forward(&(layer.attention_out.forward(&context)? + &x)?)?;
            let inner = layer.intermediate.forward(&attended)?.gelu_erf()?;
            x = layer
                .output_norm
                .forward(&(layer.output.forward(&inner)? + attended)?)?;
        }

        let m = mask.unsqueeze(2)?;
        let summed = x.broadcast_mul(&m)?.sum(1)?;
        let counts = m.sum(1)?.clamp(1.0, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}
