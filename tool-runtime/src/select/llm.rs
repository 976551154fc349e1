//! Relevance judged by a language model, over a small trait the provider clients implement.
//!
//! Asking a model about every tool of a large catalog is slow and costly, so the
//! scorer first shortlists with BM25 and asks the model about the shortlist only, in one request.

use std::fmt::Write as _;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::bm25::Bm25Scorer;
use super::index::ToolId;
use super::scorer::{ScoreRequest, Scored, Scorer};
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};

/// A model that rates how relevant each tool is to a request.
///
/// A provider client implements it by sending [`classification_prompt`] and reading the reply
/// with [`parse_relevance`].
pub trait RelevanceClassifier: Send + Sync {
    /// The model's name, recorded in the provenance.
    fn model(&self) -> &str;

    /// One relevance in 0..=1 per tool, in order.
    fn classify<'a>(
        &'a self,
        query: &'a str,
        tools: &'a [&'a ToolDefinition],
    ) -> BoxFuture<'a, Result<Vec<f64>, ToolError>>;
}

/// The prompt asking a model to rate `tools` for `query`: numbered tools, and the instruction to
/// answer with a JSON array of numbers in the same order.
pub fn classification_prompt(query: &str, tools: &[&ToolDefinition]) -> String {
    let mut p = String::from(
        "Rate how relevant each tool is to the user's request, from 0 (irrelevant) to 1 (exactly \
         what is needed).\nAnswer with only a JSON array of numbers, one per tool, in order.\n\n",
    );
    let _ = writeln!(p, "Request: {query}\n\nTools:");
    for (i, t) in tools.iter().enumerate() {
        let _ = writeln!(p, "{}. {}: {}", i + 1, t.name, t.description);
    }
    p
}

/// Reads a model's answer to [`classification_prompt`]: the first JSON array of `expected`
/// numbers in the text, each clamped to 0..=1.
// ToolError is the error every layer hands back to a model; its size is the project's choice.
#[allow(clippy::result_large_err)]
pub fn parse_relevance(answer: &str, expected: usize) -> Result<Vec<f64>, ToolError> {
    let bad = |why: String| {
        ToolError::new(ErrorCode::INVALID_JSON, why)
            .retryable(true)
            .recover("answer with only a JSON array of numbers between 0 and 1, one per tool")
    };
    let start = answer
        .find('[')
        .ok_or_else(|| bad("the answer holds no JSON array".into()))?;
    let end = answer[start..]
        .find(']')
        .ok_or_else(|| bad("the answer's JSON array is not closed".into()))?;
    let values: Vec<f64> = serde_json::from_str(&answer[start..start + end + 1])
        .map_err(|e| bad(format!("the answer's array is not a list of numbers: {e}")))?;
    if values.len() != expected {
        return Err(bad(format!(
            "the answer rates {} tools, {expected} were asked about",
            values.len()
        )));
    }
    Ok(values
        .into_iter()
        .map(|v| if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) })
        .collect())
}

/// Scores a BM25 shortlist (topped up in registration order when few tools match lexically) with
/// a [`RelevanceClassifier`]; tools outside the shortlist score 0.
pub struct LlmScorer {
    classifier: Arc<dyn RelevanceClassifier>,
    shortlist: usize,
}

impl std::fmt::Debug for LlmScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmScorer")
            .field("model", &self.classifier.model())
            .field("shortlist", &self.shortlist)
            .finish()
    }
}

impl LlmScorer {
    /// A scorer asking `classifier` about a shortlist of 20 tools.
    pub fn new(classifier: Arc<dyn RelevanceClassifier>) -> Self {
        LlmScorer {
            classifier,
            shortlist: 20,
        }
    }

    /// How many tools the model is asked about (at least 1).
    pub fn shortlist(mut self, n: usize) -> Self {
        self.shortlist = n.max(1);
        self
    }
}

impl Scorer for LlmScorer {
    fn name(&self) -> &str {
        "llm"
    }

    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>> {
        async move {
            let catalog = request.pool.catalog();
            let lexical = Bm25Scorer.score_now(&ScoreRequest {
                limit: self.shortlist,
                ..request
            })?;
            // Asking the model is the slow part; do not start it once the budget is spent.
            request.check_deadline()?;
            let mut ids: Vec<ToolId> = lexical.iter().map(|s| s.tool).collect();
            if ids.len() < self.shortlist {
                for (id, _) in catalog.iter() {
                    if ids.len() >= self.shortlist {
                        break;
                    }
                    if request.pool.contains(id) && !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
            let defs: Vec<&ToolDefinition> =
                ids.iter().map(|&id| &**catalog.definition(id)).collect();
            let scores = self.classifier.classify(request.query, &defs).await?;
            if scores.len() != ids.len() {
                return Err(ToolError::new(
                    ErrorCode::INTERNAL,
                    format!(
                        "classifier {:?} rated {} tools, {} were asked about",
                        self.classifier.model(),
                        scores.len(),
                        ids.len()
                    ),
                ));
            }
            Ok(ids
                .into_iter()
                .zip(scores)
                .map(|(id, score)| Scored {
                    tool: id,
                    score,
                    reason: Some(format!("rated {score:.2} by {}", self.classifier.model())),
                    details: Some(
                        json!({ "model": self.classifier.model(), "shortlist": defs.len() }),
                    ),
                })
                .collect())
        }
        .boxed()
    }
}
