//! The keyword-overlap scorer, kept as the baseline the benchmarks compare against: per query and
//! per tool, join name, description and tags, split both texts into lowercase words, and score
//! the share of the input's distinct words that occur in the tool's text. No index, no stemming,
//! no stop words; O(catalog) string work per query.

use std::collections::HashSet;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::scorer::{ScoreRequest, Scored, Scorer};
use crate::error::ToolError;

/// How many tools `score_now` scores between two looks at the clock (cheap next to one tool's
/// string work, but there is no need to read it for every tool).
const CHECK_EVERY: usize = 16;

/// The keyword-overlap scorer (baseline).
#[derive(Debug, Clone, Copy, Default)]
pub struct KeywordOverlapScorer;

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl KeywordOverlapScorer {
    /// The overlap of `input` with `tool_text`, in 0..=1.
    pub fn overlap(input: &str, tool_text: &str) -> f64 {
        let input = words(input);
        if input.is_empty() {
            return 0.0;
        }
        let tool = words(tool_text);
        let hits = input.iter().filter(|w| tool.contains(*w)).count();
        hits as f64 / input.len() as f64
    }

    /// Scores synchronously; what [`Scorer::score`] does. Checks the time budget every 16
    /// tools (this scorer costs O(catalog) per query) and fails with `TIMEOUT`
    /// once it is spent.
    #[allow(clippy::result_large_err)]
    pub fn score_now(&self, request: &ScoreRequest<'_>) -> Result<Vec<Scored>, ToolError> {
        let mut out = Vec::new();
        for (i, (id, def)) in request.pool.iter().enumerate() {
            if i % CHECK_EVERY == 0 {
                request.check_deadline()?;
            }
            let mut text = String::new();
            text.push_str(&def.name);
            text.push(' ');
            text.push_str(&def.description);
            for tag in &def.tags {
                text.push(' ');
                text.push_str(tag);
            }
            let score = Self::overlap(request.query, &text);
            if score > 0.0 {
                out.push(Scored {
                    tool: id,
                    score,
                    reason: Some(format!("matched keywords in {}", def.name)),
                    details: None,
                });
            }
        }
        Ok(out)
    }
}

impl Scorer for KeywordOverlapScorer {
    fn name(&self) -> &str {
        "keyword"
    }

    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>> {
        futures::future::ready(self.score_now(&request)).boxed()
    }
}
