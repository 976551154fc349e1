//! The default scorer: BM25F over the catalog's inverted index ([`super::index`]).

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::index::ToolId;
use super::scorer::{ScoreRequest, Scored, Scorer, out_of_time};
use crate::error::ToolError;

/// The default scorer: BM25F over the catalog's inverted index. Deterministic; the index is built
/// when tools enter the catalog, so a query costs only the postings of its own words.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bm25Scorer;

impl Bm25Scorer {
    /// Every matching pool tool's score, unsorted, without reasons (for combining scorers).
    #[allow(clippy::result_large_err)]
    pub(crate) fn raw_scores(
        &self,
        request: &ScoreRequest<'_>,
    ) -> Result<Vec<(ToolId, f32)>, ToolError> {
        let index = request.pool.catalog().index();
        let q = index.analyze_query(request.query);
        let hits = index
            .search(&q, request.pool.mask(), request.deadline)
            .ok_or_else(out_of_time)?;
        Ok(hits
            .into_iter()
            .map(|(slot, s)| (ToolId::from_slot(slot), s))
            .collect())
    }

    /// Scores without going through a future; what [`Scorer::score`] does. Fails with `TIMEOUT`
    /// when the request's time budget runs out (checked between query terms).
    #[allow(clippy::result_large_err)]
    pub fn score_now(&self, request: &ScoreRequest<'_>) -> Result<Vec<Scored>, ToolError> {
        let catalog = request.pool.catalog();
        let index = catalog.index();
        let q = index.analyze_query(request.query);
        let mut hits = index
            .search(&q, request.pool.mask(), request.deadline)
            .ok_or_else(out_of_time)?;
        // Deterministic order: score, then registration order.
        let key =
            |&(slot, s): &(u32, f32)| (std::cmp::Reverse(ordered(s)), catalog.seq_of_slot(slot));
        if hits.len() > request.limit {
            hits.select_nth_unstable_by_key(request.limit, key);
            hits.truncate(request.limit);
        }
        hits.sort_unstable_by_key(key);
        Ok(hits
            .into_iter()
            .map(|(slot, score)| {
                let id = ToolId::from_slot(slot);
                Scored {
                    tool: id,
                    score: f64::from(score),
                    reason: Some(index.explain(&q, id)),
                    details: Some(json!({ "bm25": score, "query_terms": q.known.len() })),
                }
            })
            .collect())
    }
}

/// Total order on non-NaN scores for sorting.
pub(crate) fn ordered(s: f32) -> u32 {
    // Scores are in 0..=1, so the bit pattern of a non-negative float orders like its value.
    s.max(0.0).to_bits()
}

impl Scorer for Bm25Scorer {
    fn name(&self) -> &str {
        "bm25"
    }

    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>> {
        futures::future::ready(self.score_now(&request)).boxed()
    }
}
