//! Lexical and semantic scores combined.

use std::collections::HashMap;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::bm25::Bm25Scorer;
use super::embed::EmbeddingScorer;
use super::index::ToolId;
use super::scorer::{ScoreRequest, Scored, Scorer};
use crate::error::ToolError;

/// How a [`HybridScorer`] combines BM25 and cosine similarity into one score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// `lexical × BM25 + semantic × cosine`, the weights normalised to sum to 1 (both scores
    /// are already in 0..=1). The default is equal weights: on the BFCL sets they rank best of
    /// every weighting and neither scorer is favoured by a constant fitted to the data.
    Weighted {
        /// Weight of the BM25 score.
        lexical: f64,
        /// Weight of the cosine similarity.
        semantic: f64,
    },
    /// Reciprocal rank fusion: `1/(k + rank)` summed over both rankings (a tool a scorer gives
    /// 0 adds nothing from it), divided by its maximum `2/(k + 1)` so the score stays in 0..=1.
    /// Ignores how far apart scores are, only their order.
    ReciprocalRank {
        /// The rank offset; larger values flatten the difference between top ranks (60 is
        /// the value of the paper that introduced it).
        k: f64,
    },
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Weighted {
            lexical: 0.5,
            semantic: 0.5,
        }
    }
}

impl Fusion {
    /// Weighted fusion with `lexical` and `semantic` normalised to sum to 1 (negative values
    /// count as 0; if both are 0, equal weights).
    pub fn weighted(lexical: f64, semantic: f64) -> Self {
        let (l, s) = (lexical.max(0.0), semantic.max(0.0));
        if l + s > 0.0 {
            Fusion::Weighted {
                lexical: l / (l + s),
                semantic: s / (l + s),
            }
        } else {
            Fusion::default()
        }
    }

    /// Reciprocal rank fusion with offset `k` (values below 1 count as 1).
    pub fn reciprocal_rank(k: f64) -> Self {
        Fusion::ReciprocalRank {
            k: if k >= 1.0 { k } else { 1.0 },
        }
    }

    /// The fused score of every tool in `semantic` (which covers the whole pool), given the
    /// lexical scores of the tools BM25 matched.
    fn fuse(&self, lexical: &HashMap<ToolId, f64>, semantic: &[(ToolId, f64)]) -> Vec<f64> {
        match *self {
            Fusion::Weighted {
                lexical: wl,
                semantic: ws,
            } => semantic
                .iter()
                .map(|(id, cos)| wl * lexical.get(id).copied().unwrap_or(0.0) + ws * cos)
                .collect(),
            Fusion::ReciprocalRank { k } => {
                let lexical_rank = ranks(lexical.iter().map(|(id, s)| (*id, *s)));
                let semantic_rank = ranks(semantic.iter().copied());
                let term = |rank: Option<&usize>| rank.map_or(0.0, |&r| 1.0 / (k + r as f64));
                let top = 2.0 / (k + 1.0);
                semantic
                    .iter()
                    .map(|(id, _)| (term(lexical_rank.get(id)) + term(semantic_rank.get(id))) / top)
                    .collect()
            }
        }
    }
}

/// 1-based ranks of the tools with a positive score, best first (ties in tool order).
fn ranks(scores: impl Iterator<Item = (ToolId, f64)>) -> HashMap<ToolId, usize> {
    let mut scored: Vec<(ToolId, f64)> = scores.filter(|(_, s)| *s > 0.0).collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.index().cmp(&b.0.index())));
    scored
        .into_iter()
        .enumerate()
        .map(|(i, (id, _))| (id, i + 1))
        .collect()
}

/// BM25 and cosine similarity combined by a [`Fusion`] rule (equal weights by default).
#[derive(Debug, Clone)]
pub struct HybridScorer {
    semantic: Arc<EmbeddingScorer>,
    fusion: Fusion,
}

impl HybridScorer {
    /// BM25 and `semantic` with the default fusion (equal weights).
    pub fn new(semantic: Arc<EmbeddingScorer>) -> Self {
        HybridScorer {
            semantic,
            fusion: Fusion::default(),
        }
    }

    /// Weighted fusion with these weights (see [`Fusion::weighted`]).
    pub fn weights(self, lexical: f64, semantic: f64) -> Self {
        self.fusion(Fusion::weighted(lexical, semantic))
    }

    /// Sets the fusion rule.
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
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
            let semantic: Vec<(ToolId, f64)> = self
                .semantic
                .similarities(&request)
                .await?
                .into_iter()
                .map(|(id, cos)| (id, f64::from(cos)))
                .collect();
            let fused = self.fusion.fuse(&lexical, &semantic);
            let model = self.semantic.model();
            Ok(semantic
                .into_iter()
                .zip(fused)
                .filter(|(_, score)| *score > 0.0)
                .map(|((id, cos), score)| {
                    let lex = lexical.get(&id).copied().unwrap_or(0.0);
                    let details = match self.fusion {
                        Fusion::Weighted { lexical, semantic } => json!({
                            "bm25": lex, "cosine": cos, "model": model,
                            "weights": [lexical, semantic],
                        }),
                        Fusion::ReciprocalRank { k } => json!({
                            "bm25": lex, "cosine": cos, "model": model,
                            "reciprocal_rank_k": k,
                        }),
                    };
                    Scored {
                        tool: id,
                        score,
                        reason: Some(format!("keyword {lex:.2}, semantic {cos:.2}")),
                        details: Some(details),
                    }
                })
                .collect())
        }
        .boxed()
    }
}
