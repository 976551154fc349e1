//! Embeddings kept across processes: a SQLite file of vectors by model and text, and an
//! [`Embedder`] that answers from it and asks the model only for what it has not seen.
//!
//! Embedding a catalog is the slow part of semantic selection (a thousand tools take a minute
//! on two cores with the local MiniLM), and a command-line run starts with an empty memory. The
//! cache is keyed by the model's identifier and the exact text, so a changed description is a
//! new text and is embedded again, and nothing else is. Loading the model is deferred to the
//! first text the cache does not hold: a repeated query over a known catalog needs no model.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};

use super::Embedder;
use crate::error::{ErrorCode, ToolError};

fn cache_error(e: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::INTERNAL, format!("embedding cache: {e}"))
}

/// Vectors by model and text, in a SQLite file shared by every process that opens it.
pub struct EmbeddingCache {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for EmbeddingCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingCache").finish_non_exhaustive()
    }
}

impl EmbeddingCache {
    /// Opens (creating if needed) the cache at `path`, with its parent directory.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ToolError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(cache_error)?;
        }
        Self::init(Connection::open(path).map_err(cache_error)?)
    }

    /// A cache in memory (tests; the same code paths as a file).
    pub fn open_in_memory() -> Result<Self, ToolError> {
        Self::init(Connection::open_in_memory().map_err(cache_error)?)
    }

    fn init(conn: Connection) -> Result<Self, ToolError> {
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(cache_error)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE IF NOT EXISTS embeddings (
                 model TEXT NOT NULL,
                 text TEXT NOT NULL,
                 vector BLOB NOT NULL,
                 PRIMARY KEY (model, text)
             );",
        )
        .map_err(cache_error)?;
        Ok(EmbeddingCache {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached vector of each text, in order (`None` where there is none).
    pub fn get(&self, model: &str, texts: &[String]) -> Result<Vec<Option<Vec<f32>>>, ToolError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT vector FROM embeddings WHERE model = ?1 AND text = ?2")
            .map_err(cache_error)?;
        texts
            .iter()
            .map(|text| {
                let blob: Option<Vec<u8>> = stmt
                    .query_row(params![model, text], |r| r.get(0))
                    .optional()
                    .map_err(cache_error)?;
                Ok(blob.and_then(|b| from_bytes(&b)))
            })
            .collect()
    }

    /// Keeps `vectors` for `texts` (same order), in one transaction.
    pub fn put(
        &self,
        model: &str,
        texts: &[String],
        vectors: &[Vec<f32>],
    ) -> Result<(), ToolError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(cache_error)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO embeddings (model, text, vector) VALUES (?1, ?2, ?3)",
                )
                .map_err(cache_error)?;
            for (text, vector) in texts.iter().zip(vectors) {
                stmt.execute(params![model, text, to_bytes(vector)])
                    .map_err(cache_error)?;
            }
        }
        tx.commit().map_err(cache_error)
    }

    /// How many vectors the cache holds for `model`.
    pub fn len(&self, model: &str) -> Result<usize, ToolError> {
        self.conn()
            .query_row(
                "SELECT COUNT(*) FROM embeddings WHERE model = ?1",
                [model],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
            .map_err(cache_error)
    }
}

/// Little-endian `f32`s: the vector exactly as computed.
fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(bytes: &[u8]) -> Option<Vec<f32>> {
    bytes.len().is_multiple_of(4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

type Loader = Box<dyn Fn() -> Result<Arc<dyn Embedder>, ToolError> + Send + Sync>;

/// An [`Embedder`] in front of an [`EmbeddingCache`]: texts the cache holds for this model are
/// answered from it, the others are embedded by the model (loaded on the first of them) and
/// kept. A cache that fails to read or write costs the saving, never the answer: the model is
/// asked, and the failure is logged.
pub struct CachedEmbedder {
    model: String,
    cache: EmbeddingCache,
    loader: Loader,
    inner: OnceLock<Arc<dyn Embedder>>,
    embedded: AtomicUsize,
}

impl std::fmt::Debug for CachedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedEmbedder")
            .field("model", &self.model)
            .field("loaded", &self.inner.get().is_some())
            .field("embedded", &self.embedded())
            .finish()
    }
}

impl CachedEmbedder {
    /// Caches `inner`'s vectors under its model identifier.
    pub fn new(inner: Arc<dyn Embedder>, cache: EmbeddingCache) -> Self {
        let model = inner.model().to_owned();
        CachedEmbedder::lazy(model, cache, move || Ok(inner.clone()))
    }

    /// Caches the vectors of a model that `load` loads when a text is not in the cache.
    /// `model` identifies it in the cache: it must change when the weights do.
    pub fn lazy(
        model: impl Into<String>,
        cache: EmbeddingCache,
        load: impl Fn() -> Result<Arc<dyn Embedder>, ToolError> + Send + Sync + 'static,
    ) -> Self {
        CachedEmbedder {
            model: model.into(),
            cache,
            loader: Box::new(load),
            inner: OnceLock::new(),
            embedded: AtomicUsize::new(0),
        }
    }

    /// How many texts the model embedded through this embedder (the cache's misses).
    pub fn embedded(&self) -> usize {
        self.embedded.load(Ordering::Relaxed)
    }

    fn model_embedder(&self) -> Result<&Arc<dyn Embedder>, ToolError> {
        if let Some(inner) = self.inner.get() {
            return Ok(inner);
        }
        let loaded = (self.loader)()?;
        Ok(self.inner.get_or_init(|| loaded))
    }
}

impl Embedder for CachedEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>> {
        async move {
            let mut found = self.cache.get(&self.model, texts).unwrap_or_else(|e| {
                tracing::warn!(error = %e.message, "embedding cache unreadable; embedding again");
                vec![None; texts.len()]
            });
            let missing: Vec<usize> = (0..texts.len()).filter(|&i| found[i].is_none()).collect();
            if !missing.is_empty() {
                let batch: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
                let vectors = self.model_embedder()?.embed(&batch).await?;
                if vectors.len() != batch.len() {
                    return Err(ToolError::new(
                        ErrorCode::INTERNAL,
                        format!(
                            "embedder {:?} returned {} vectors for {} texts",
                            self.model,
                            vectors.len(),
                            batch.len()
                        ),
                    ));
                }
                self.embedded.fetch_add(batch.len(), Ordering::Relaxed);
                if let Err(e) = self.cache.put(&self.model, &batch, &vectors) {
                    tracing::warn!(error = %e.message, "embedding cache not written");
                }
                for (i, v) in missing.into_iter().zip(vectors) {
                    found[i] = Some(v);
                }
            }
            Ok(found.into_iter().map(Option::unwrap_or_default).collect())
        }
        .boxed()
    }
}
