//! Semantic scoring: cosine similarity between an embedding of the query and cached embeddings of
//! the tools.

#[cfg(feature = "sqlite")]
mod cache;
#[cfg(feature = "minilm")]
pub mod minilm;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::catalog::Catalog;
use super::deadline::Deadline;
use super::index::ToolId;
use super::scorer::{ScoreRequest, Scored, Scorer, out_of_time};
use super::text::name_words;
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};

#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use cache::{CachedEmbedder, EmbeddingCache};

/// Turns texts into fixed-size vectors whose cosine similarity reflects meaning.
pub trait Embedder: Send + Sync {
    /// Identifies the model; part of the cache key, recorded in the provenance.
    fn model(&self) -> &str;

    /// One vector per text, in order, all of the same length.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>>;
}

/// The text of a tool that gets embedded: its name as words, description, tags, and the names
/// of its top-level parameters as words ("Takes radius, unit"). Parameter names say what a tool
/// works on when its description is terse: on the BFCL sets they raise the embedding scorer's
/// recall@5 by about 1 point and the hybrid's by 1.
pub fn tool_text(def: &ToolDefinition) -> String {
    let mut text = name_words(&def.name);
    text.push_str(": ");
    text.push_str(&def.description);
    if !def.tags.is_empty() {
        text.push_str(" (");
        text.push_str(&def.tags.join(", "));
        text.push(')');
    }
    let schema = def.try_parameters_value().unwrap_or_default();
    if let Some(properties) = schema.get("properties").and_then(|p| p.as_object())
        && !properties.is_empty()
    {
        let names: Vec<String> = properties.keys().map(|k| name_words(k)).collect();
        text.push_str(". Takes ");
        text.push_str(&names.join(", "));
    }
    text
}

fn fingerprint(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A tool's embedding, the definition it was computed for and the fingerprint of its text.
struct Cached {
    definition: Arc<ToolDefinition>,
    fingerprint: u64,
    vector: Arc<[f32]>,
}

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
        // A tool whose cached vector was computed for this very definition is answered
        // without building its text; only the others are compared by text, so a query over a
        // warm catalog costs no text building or schema parsing per tool.
        let mut vectors: Vec<Option<Arc<[f32]>>> = vec![None; ids.len()];
        let mut stale: Vec<(usize, String, u64)> = Vec::new();
        {
            let cache = self.cache.read().expect("embedding cache poisoned");
            for (i, &id) in ids.iter().enumerate() {
                let def = catalog.definition(id);
                let entry = cache.get(def.name.as_ref());
                if let Some(e) = entry.filter(|e| Arc::ptr_eq(&e.definition, def)) {
                    vectors[i] = Some(e.vector.clone());
                    continue;
                }
                let text = tool_text(def);
                let fp = fingerprint(&text);
                match entry.filter(|e| e.fingerprint == fp) {
                    Some(e) => vectors[i] = Some(e.vector.clone()),
                    None => stale.push((i, text, fp)),
                }
            }
        }
        for chunk in stale.chunks(self.batch.max(1)) {
            if deadline.is_some_and(|d| d.expired()) {
                return Err(out_of_time());
            }
            let batch: Vec<String> = chunk.iter().map(|(_, text, _)| text.clone()).collect();
            let embedded = self.embedder.embed(&batch).await?;
            if embedded.len() != batch.len() {
                return Err(ToolError::new(
                    ErrorCode::INTERNAL,
                    format!(
                        "embedder {:?} returned {} vectors for {} texts",
                        self.embedder.model(),
                        embedded.len(),
                        batch.len()
                    ),
                ));
            }
            let mut cache = self.cache.write().expect("embedding cache poisoned");
            for ((i, _, fp), v) in chunk.iter().zip(embedded) {
                let definition = catalog.definition(ids[*i]).clone();
                let vector: Arc<[f32]> = normalized(v).into();
                vectors[*i] = Some(vector.clone());
                cache.insert(
                    definition.name.to_string(),
                    Cached {
                        definition,
                        fingerprint: *fp,
                        vector,
                    },
                );
            }
        }
        Ok(vectors.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Cosine similarities (clamped to 0..=1) of every pool tool, unsorted and untruncated.
    pub(crate) async fn similarities(
        &self,
        request: &ScoreRequest<'_>,
    ) -> Result<Vec<(ToolId, f32)>, ToolError> {
        let catalog = request.pool.catalog();
        let ids: Vec<ToolId> = request.pool.iter().map(|(id, _)| id).collect();
        let parts = query_parts(request.query);
        let queries: Vec<Vec<f32>> = self
            .embedder
            .embed(&parts)
            .await?
            .into_iter()
            .map(normalized)
            .collect();
        if queries.len() != parts.len() {
            return Err(ToolError::new(
                ErrorCode::INTERNAL,
                "the embedder returned no vector for the query",
            ));
        }
        let tools = self.ensure(catalog, &ids, request.deadline).await?;
        if tools.iter().any(|v| v.len() != queries[0].len()) {
            return Err(ToolError::new(
                ErrorCode::INTERNAL,
                "the embedder returned vectors of different lengths",
            ));
        }
        let cosine = |q: &[f32], v: &[f32]| -> f32 {
            v.iter()
                .zip(q)
                .map(|(a, b)| a * b)
                .sum::<f32>()
                .clamp(0.0, 1.0)
        };
        let mut best: Vec<f32> = tools.iter().map(|v| cosine(&queries[0], v)).collect();
        // Each part is put on the whole query's scale (its best match counts as much as the
        // whole query's best), so a part the catalog matches weakly still brings its tool up
        // beside the tools of the other parts.
        let whole = best.iter().copied().fold(0.0f32, f32::max);
        for part in &queries[1..] {
            let sims: Vec<f32> = tools.iter().map(|v| cosine(part, v)).collect();
            let top = sims.iter().copied().fold(0.0f32, f32::max);
            if top <= 0.0 {
                continue;
            }
            for (b, s) in best.iter_mut().zip(sims) {
                *b = b.max(s * whole / top);
            }
        }
        let out: Vec<(ToolId, f32)> = ids.into_iter().zip(best).collect();
        Ok(out)
    }
}

/// The texts a query is embedded as: the whole query, then each of its sentences when it has
/// several. A request that asks for two things ("Find the area of a circle. Also convert 5 miles
/// to kilometres.") embeds as a blend that matches neither tool well; each sentence matches its
/// own tool, and a tool's similarity is its best match. Sentences under three words are too
/// short to mean anything on their own, and at most [`MAX_QUERY_PARTS`] texts are embedded.
fn query_parts(query: &str) -> Vec<String> {
    let mut parts = vec![query.to_owned()];
    let mut start = 0;
    let mut chars = query.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends_sentence = c == '\n'
            || (matches!(c, '.' | '?' | '!' | ';')
                && chars.peek().is_none_or(|(_, n)| n.is_whitespace()));
        if ends_sentence || chars.peek().is_none() {
            let end = if ends_sentence { i } else { query.len() };
            let sentence = query[start..end].trim();
            if sentence.split_whitespace().count() >= 3 && parts.len() < MAX_QUERY_PARTS {
                parts.push(sentence.to_owned());
            }
            start = i + c.len_utf8();
        }
    }
    if parts.len() == 2 {
        // one sentence: the whole query again
        parts.pop();
    }
    parts
}

/// The most texts one query is embedded as (the whole and up to seven sentences).
const MAX_QUERY_PARTS: usize = 8;

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

#[cfg(test)]
mod tests {
    use super::query_parts;

    #[test]
    fn a_query_of_several_sentences_is_embedded_whole_and_by_sentence() {
        let q = "Find the area of a circle with radius 5. Also convert 5 miles to km!";
        assert_eq!(
            query_parts(q),
            [
                q,
                "Find the area of a circle with radius 5",
                "Also convert 5 miles to km"
            ]
        );
        // one sentence, decimals, short fragments and multi-byte text stay whole
        for q in [
            "What is the weather in Boston?",
            "Scale by 2.5 and round. Ok.",
            "Capacitance of 100µF and 50mH.",
            "",
        ] {
            assert_eq!(query_parts(q), [q], "{q:?}");
        }
        let many = "one two three. ".repeat(20);
        assert_eq!(query_parts(&many).len(), 8);
    }
}
