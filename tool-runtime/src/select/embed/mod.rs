//! Semantic scoring: cosine similarity between an embedding of the query and cached embeddings of
//! the tools.

mod cache;
#[cfg(feature = "minilm")]
pub mod minilm;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::bm25::name_words;
use super::catalog::{Catalog, ToolId};
use super::scorer::{Deadline, ScoreRequest, Scored, Scorer, out_of_time};
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};

pub use cache::{CachedEmbedder, EmbeddingCache};

/// Turns texts into fixed-size vectors whose cosine similarity reflects meaning.
pub trait Embedder: Send + Sync {
    /// Identifies the model; part of the cache key, recorded in the provenance.
    fn model(&self) -> &str;

    /// One vector per text, in order, all of the same length.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>>;
}

/// The text of a tool that gets embedded: its name as words, description and tags.
pub fn tool_text(def: &ToolDefinition) -> String {
    let mut text = name_words(&def.name);
    text.push_str(": ");
    text.push_str(&def.description);
    if !def.tags.is_empty() {
        text.push_str(" (");
        text.push_str(&def.tags.join(", "));
        text.push(')');
    }
    text
}

fn fingerprint(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A tool's embedding with the fingerprint of the text it was computed from.
type Cached = (u64, Arc<[f32]>);

/// Scores tools by cosine similarity of embeddings (clamped at 0). Each tool's embedding is
/// computed once, in batches, and cached under its name and a fingerprint of its text, so an
/// edited description is re-embedded and an unchanged catalog never is.
pub struct EmbeddingScorer {
    embedder: Arc<dyn Embedder>,
    batch: usize,
    cache: RwLock<HashMap<String, Cached>>,
}

impl std::fmt::Debug for EmbeddingScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingScorer")
            .field("model", &self.embedder.model())
            .field("cached", &self.cache.read().map(|c| c.len()).unwrap_or(0))
            .finish()
    }
}

impl EmbeddingScorer {
    /// A scorer over `embedder`, embedding tools 32 at a time.
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        EmbeddingScorer {
            embedder,
            batch: 32,
            cache: RwLock::new(HashMap::new()),
        }
    }

    /// The model's identifier.
    pub fn model(&self) -> &str {
        self.embedder.model()
    }

    /// Embeds every tool of `catalog` that is not cached yet (call once after building the
    /// catalog so the first query does not pay for it).
    pub async fn warm(&self, catalog: &Catalog) -> Result<(), ToolError> {
        let ids: Vec<ToolId> = catalog.ids();
        self.ensure(catalog, &ids, None).await.map(|_| ())
    }

    /// Number of cached tool embeddings.
    pub fn cached(&self) -> usize {
        self.cache.read().map(|c| c.len()).unwrap_or(0)
    }

    /// The embeddings of `ids`, computing the missing ones in batches. Each batch is cached as
    /// soon as it is computed, and the deadline is checked before each one, so a query that runs
    /// out of time still leaves the batches it finished for the next query.
    async fn ensure(
        &self,
        catalog: &Catalog,
        ids: &[ToolId],
        deadline: Option<Deadline>,
    ) -> Result<Vec<Arc<[f32]>>, ToolError> {
        let texts: Vec<(ToolId, String, u64)> = ids
            .iter()
            .map(|&id| {
                let text = tool_text(catalog.definition(id));
                let fp = fingerprint(&text);
                (id, text, fp)
            })
            .collect();
        let missing: Vec<usize> = {
            let cache = self.cache.read().expect("embedding cache poisoned");
            texts
                .iter()
                .enumerate()
                .filter(|(_, (id, _, fp))| {
                    cache
                        .get(catalog.definition(*id).name.as_ref())
                        .is_none_or(|(f, _)| f != fp)
                })
                .map(|(i, _)| i)
                .collect()
        };
        for chunk in missing.chunks(self.batch.max(1)) {
            if deadline.is_some_and(|d| d.expired()) {
                return Err(out_of_time());
            }
            let batch: Vec<String> = chunk.iter().map(|&i| texts[i].1.clone()).collect();
            let vectors = self.embedder.embed(&batch).await?;
            if vectors.len() != batch.len() {
                return Err(ToolError::new(
                    ErrorCode::INTERNAL,
                    format!(
                        "embedder {:?} returned {} vectors for {} texts",
                        self.embedder.model(),
                        vectors.len(),
                        batch.len()
                    ),
                ));
            }
            let mut cache = self.cache.write().expect("embedding cache poisoned");
            for (&i, v) in chunk.iter().zip(vectors) {
                let (id, _, fp) = &texts[i];
                cache.insert(
                    catalog.definition(*id).name.to_string(),
                    (*fp, normalized(v).into()),
                );
            }
        }
        let cache = self.cache.read().expect("embedding cache poisoned");
        Ok(texts
            .iter()
            .map(|(id, _, _)| cache[catalog.definition(*id).name.as_ref()].1.clone())
            .collect())
    }

    /// Cosine similarities (clamped to 0..=1) of every pool tool, unsorted and untruncated.
    pub(crate) async fn similarities(
        &self,
        request: &ScoreRequest<'_>,
    ) -> Result<Vec<(ToolId, f32)>, ToolError> {
        let catalog = request.pool.catalog();
        let ids: Vec<ToolId> = request.pool.iter().map(|(id, _)| id).collect();
        let query = self
            .embedder
            .embed(std::slice::from_ref(&request.query.to_owned()))
            .await?
            .pop()
            .ok_or_else(|| {
                ToolError::new(ErrorCode::INTERNAL, "the embedder returned no vector")
            })?;
        let query = normalized(query);
        let tools = self.ensure(catalog, &ids, request.deadline).await?;
        let mut out = Vec::with_capacity(ids.len());
        for (id, v) in ids.into_iter().zip(tools) {
            if v.len() != query.len() {
                return Err(ToolError::new(
                    ErrorCode::INTERNAL,
                    "the embedder returned vectors of different lengths",
                ));
            }
            let cos: f32 = v.iter().zip(&query).map(|(a, b)| a * b).sum();
            out.push((id, cos.clamp(0.0, 1.0)));
        }
        Ok(out)
    }
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

impl Scorer for EmbeddingScorer {
    fn name(&self) -> &str {
        "embedding"
    }

    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>> {
        async move {
            let sims = self.similarities(&request).await?;
            Ok(sims
                .into_iter()
                .filter(|(_, s)| *s > 0.0)
                .map(|(id, s)| Scored {
                    tool: id,
                    score: f64::from(s),
                    reason: Some(format!("semantic similarity {s:.2}")),
                    details: Some(json!({ "cosine": s, "model": self.embedder.model() })),
                })
                .collect())
        }
        .boxed()
    }
}
