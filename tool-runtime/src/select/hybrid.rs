//! Lexical and semantic scores combined.

use std::collections::HashMap;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::bm25::Bm25Scorer;
use super::catalog::ToolId;
use super::embed::EmbeddingScorer;
use super::scorer::{ScoreRequest, Scored, Scorer};
use crate::error::ToolError;

/// `lexical_weight × BM25 + semantic_weight × cosine` (seed 004's hybrid, 0.4 / 0.6 by default).
/// Weights are normalised to sum to 1 so the result stays in 0..=1.
#[derive(Debug, Clone)]
pub struct HybridScorer {
    semantic: Arc<EmbeddingScorer>,
    lexical_weight: f64,
    semantic_weight: f64,
}

impl HybridScorer {
    /// BM25 and `semantic` with the default weights 0.4 / 0.6.
    pub fn new(semantic: Arc<EmbeddingScorer>) -> Self {
        HybridScorer {
            semantic,
            lexical_weight: 0.4,
            semantic_weight: 0.6,
        }
    }

    /// Sets the weights (negative values count as 0; if both are 0 the default applies).
    pub fn weights(mut self, lexical: f64, semantic: f64) -> Self {
        let (l, s) = (lexical.max(0.0), semantic.max(0.0));
        if l + s > 0.0 {
            self.lexical_weight = l / (l + s);
            self.semantic_weight = s / (l + s);
        }
        self
    }
}

impl Scorer for HybridScorer {
    fn name(&self) -> &str {
        "hybrid"
    }

    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>> {
        async move {
            let lexical: HashMap<ToolId, f64> = Bm25Scorer
                .raw_scores(&request)?
                .into_iter()
                .map(|(id, s)| (id, f64::from(s)))
                .collect();
            let semantic = self.semantic.similarities(&request).await?;
            Ok(semantic
                .into_iter()
                .map(|(id, cos)| {
                    let lex = lexical.get(&id).copied().unwrap_or(0.0);
                    let cos = f64::from(cos);
                    let score = self.lexical_weight * lex + self.semantic_weight * cos;
                    Scored {
                        tool: id,
                        score,
                        reason: Some(format!("keyword {lex:.2}, semantic {cos:.2}")),
                        details: Some(json!({
                            "bm25": lex,
                            "cosine": cos,
                            "weights": [self.lexical_weight, self.semantic_weight],
                            "model": self.semantic.model(),
                        })),
                    }
                })
                .filter(|s| s.score > 0.0)
                .collect())
        }
        .boxed()
    }
}
