//! Embeddings kept across processes: vectors by model and text in a SQLite file (the default)
//! or in Redis (beside the store, when several processes or machines share it), and an
//! [`Embedder`] that answers from them and asks the model only for what it has not seen.
//!
//! Embedding a catalog is the slow part of semantic selection, and a command-line run starts
//! with an empty memory. The cache is keyed by the model's identifier and the exact text, so a
//! changed description is a new text and is embedded again, and nothing else is. Loading the
//! model is deferred to the first text the cache does not hold: a repeated query over a known
//! catalog needs no model.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};

use super::Embedder;
use crate::error::{ErrorCode, ToolError};
#[cfg(feature = "redis")]
use crate::store::redis_store::RedisLink;

fn cache_error(e: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::INTERNAL, format!("embedding cache: {e}"))
}

/// Vectors by model and text, shared by every process that opens the same file or server.
pub struct EmbeddingCache {
    backend: Backend,
}

enum Backend {
    Sqlite(Mutex<Connection>),
    /// One hash per model (`{prefix}embeddings:{model}`), a field per text.
    #[cfg(feature = "redis")]
    Redis {
        link: RedisLink,
        prefix: String,
    },
}

impl std::fmt::Debug for EmbeddingCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = match &self.backend {
            Backend::Sqlite(_) => "sqlite",
            #[cfg(feature = "redis")]
            Backend::Redis { .. } => "redis",
        };
        f.debug_struct("EmbeddingCache")
            .field("backend", &backend)
            .finish_non_exhaustive()
    }
}

impl EmbeddingCache {
    /// Opens (creating if needed) the SQLite cache at `path`, with its parent directory.
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

    /// The cache in the Redis server at `url` (`redis://host:port/db`), under the key prefix
    /// `prefix` (the store's, `tools:` by default). Connects now, so a wrong address is
    /// reported here rather than as a slow run.
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn redis(url: &str, prefix: &str) -> Result<Self, ToolError> {
        let link = RedisLink::new(url).map_err(cache_error)?;
        link.connect().map_err(|e| {
            cache_error(format!(
                "cannot connect to {}: {e}",
                crate::store::without_password(url)
            ))
        })?;
        Ok(EmbeddingCache {
            backend: Backend::Redis {
                link,
                prefix: prefix.to_owned(),
            },
        })
    }

    /// Opens the cache a location names: a `redis://` (or `rediss://`, `redis+unix://`) URL,
    /// with the key prefix `tools:`, or else a SQLite file path.
    pub fn at(location: &str) -> Result<Self, ToolError> {
        if crate::store::is_redis_url(location) {
            #[cfg(feature = "redis")]
            return Self::redis(location, crate::executor::DEFAULT_REDIS_PREFIX);
            #[cfg(not(feature = "redis"))]
            return Err(cache_error(format!(
                "{} names a Redis server, and this build of tool-runtime has no Redis: enable \
                 its `redis` feature",
                crate::store::without_password(location)
            )));
        }
        Self::open(location)
    }

    fn init(conn: Connection) -> Result<Self, ToolError> {
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(cache_error)?;
        // A cache may lose its last writes in a power cut (they are embedded again), so a
        // commit does not wait for the disk: a new query is kept without an fsync per pick.
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS embeddings (
                 model TEXT NOT NULL,
                 text TEXT NOT NULL,
                 vector BLOB NOT NULL,
                 PRIMARY KEY (model, text)
             );",
        )
        .map_err(cache_error)?;
        Ok(EmbeddingCache {
            backend: Backend::Sqlite(Mutex::new(conn)),
        })
    }

    #[cfg(feature = "redis")]
    fn redis_key(prefix: &str, model: &str) -> String {
        format!("{prefix}embeddings:{model}")
    }

    /// The cached vector of each text, in order (`None` where there is none).
    pub fn get(&self, model: &str, texts: &[String]) -> Result<Vec<Option<Vec<f32>>>, ToolError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Sqlite(conn) => {
                let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
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
            #[cfg(feature = "redis")]
            Backend::Redis { link, prefix } => {
                let key = Self::redis_key(prefix, model);
                let blobs: Vec<Option<Vec<u8>>> = link
                    .with(|c| redis::cmd("HMGET").arg(&key).arg(texts).query(c))
                    .map_err(cache_error)?;
                Ok(blobs
                    .into_iter()
                    .map(|b| b.and_then(|b| from_bytes(&b)))
                    .collect())
            }
        }
    }

    /// Keeps `vectors` for `texts` (same order), all or none.
    pub fn put(
        &self,
        model: &str,
        texts: &[String],
        vectors: &[Vec<f32>],
    ) -> Result<(), ToolError> {
        if texts.is_empty() {
            return Ok(());
        }
        match &self.backend {
            Backend::Sqlite(conn) => {
                let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                let tx = conn.transaction().map_err(cache_error)?;
                {
                    let mut stmt = tx
                        .prepare_cached(
                            "INSERT OR REPLACE INTO embeddings (model, text, vector) \
                             VALUES (?1, ?2, ?3)",
                        )
                        .map_err(cache_error)?;
                    for (text, vector) in texts.iter().zip(vectors) {
                        stmt.execute(params![model, text, to_bytes(vector)])
                            .map_err(cache_error)?;
                    }
                }
                tx.commit().map_err(cache_error)
            }
            #[cfg(feature = "redis")]
            Backend::Redis { link, prefix } => {
                let key = Self::redis_key(prefix, model);
                let mut cmd = redis::cmd("HSET");
                cmd.arg(&key);
                for (text, vector) in texts.iter().zip(vectors) {
                    cmd.arg(text).arg(to_bytes(vector));
                }
                link.with(|c| cmd.query::<()>(c)).map_err(cache_error)
            }
        }
    }

    /// How many vectors the cache holds for `model`.
    pub fn len(&self, model: &str) -> Result<usize, ToolError> {
        match &self.backend {
            Backend::Sqlite(conn) => conn
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .query_row(
                    "SELECT COUNT(*) FROM embeddings WHERE model = ?1",
                    [model],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n as usize)
                .map_err(cache_error),
            #[cfg(feature = "redis")]
            Backend::Redis { link, prefix } => link
                .with(|c| {
                    redis::cmd("HLEN")
                        .arg(Self::redis_key(prefix, model))
                        .query(c)
                })
                .map_err(cache_error),
        }
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
