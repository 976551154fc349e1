//! `pick`: rank a catalog's tools for a query and return the best few, never running anything.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::bm25::Bm25Scorer;
use super::catalog::{Catalog, Pool};
use super::deadline::Deadline;
use super::index::ToolId;
use super::scorer::{ScoreRequest, Scored, Scorer};
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::toolset::ToolSet;

/// How to pick. The defaults: three candidates, a minimum score of 0.05, only
/// read-only tools, the BM25 scorer, no time budget, no debug provenance.
#[derive(Clone)]
pub struct PickOptions {
    max_candidates: usize,
    min_score: f64,
    allow_unsafe: bool,
    scorer: Option<Arc<dyn Scorer>>,
    time_budget: Option<Duration>,
    debug: bool,
}

impl Default for PickOptions {
    fn default() -> Self {
        PickOptions {
            max_candidates: 3,
            min_score: 0.05,
            allow_unsafe: false,
            scorer: None,
            time_budget: None,
            debug: false,
        }
    }
}

impl std::fmt::Debug for PickOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PickOptions")
            .field("max_candidates", &self.max_candidates)
            .field("min_score", &self.min_score)
            .field("allow_unsafe", &self.allow_unsafe)
            .field("scorer", &self.scorer.as_ref().map(|s| s.name().to_owned()))
            .field("time_budget", &self.time_budget)
            .field("debug", &self.debug)
            .finish()
    }
}

impl PickOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many candidates to return at most (default 3).
    pub fn max_candidates(mut self, n: usize) -> Self {
        self.max_candidates = n;
        self
    }

    /// Candidates scoring below this are left out (default 0.05). Clamped to 0..=1.
    pub fn min_score(mut self, score: f64) -> Self {
        self.min_score = if score.is_nan() {
            0.0
        } else {
            score.clamp(0.0, 1.0)
        };
        self
    }

    /// Whether tools that are not read-only may be returned (default false: only
    /// [`Safety::ReadOnly`](crate::definition::Safety::ReadOnly) tools are candidates, so an undeclared
    /// category is excluded too).
    pub fn allow_unsafe(mut self, allow: bool) -> Self {
        self.allow_unsafe = allow;
        self
    }

    /// Replaces the default BM25 scorer.
    pub fn scorer(mut self, scorer: Arc<dyn Scorer>) -> Self {
        self.scorer = Some(scorer);
        self
    }

    /// Bounds the time spent scoring. When it runs out, the first `max_candidates` tools in
    /// registration order are returned with score 0 and the fallback recorded in their
    /// provenance; a scorer that finishes late counts as having run out, so a pick
    /// either meets its budget with the scorer's ranking or falls back.
    ///
    /// Scorers that compute on the calling thread (BM25, keyword overlap, synchronous
    /// [`FnScorer`](super::FnScorer) functions, the embedding scorer between batches) check the
    /// deadline as they go and stop early, so the budget holds for CPU-bound scoring too and
    /// works with any executor. Inside a Tokio runtime, a scorer that is *waiting* (on a model
    /// server, say) is also interrupted by Tokio's timer, which needs the runtime's time driver
    /// (`#[tokio::main]` and `#[tokio::test]` enable it); outside one, such a scorer is only
    /// stopped at its next check.
    pub fn time_budget(mut self, budget: Duration) -> Self {
        self.time_budget = Some(budget);
        self
    }

    /// Adds scorer details, timing and the excluded tools to every candidate's provenance.
    pub fn debug(mut self, debug: bool) -> Self {
        self.debug = debug;
        self
    }
}

/// One selected tool.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// Its definition.
    #[serde(serialize_with = "serialize_name", rename = "name")]
    pub tool: Arc<ToolDefinition>,
    /// Relevance in 0..=1.
    pub score: f64,
    /// Why it was selected, for people.
    pub reason: String,
    /// How it was selected, for audit.
    pub provenance: Provenance,
}

fn serialize_name<S: serde::Serializer>(
    tool: &Arc<ToolDefinition>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(&tool.name)
}

impl Candidate {
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }
}

/// How a candidate was selected.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Provenance {
    /// The scorer that ranked it (`bm25`, `embedding`, `hybrid`, a custom scorer's name).
    pub scorer: String,
    /// 1-based rank among the candidates.
    pub rank: usize,
    /// Set when the scorer did not finish in the time budget and registration order was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Number of tools scored (the catalog minus excluded tools).
    pub pool_size: usize,
    /// Debug only: the scorer's own details for this tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Debug only: tools left out for safety (not read-only and `allow_unsafe` not set).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded_unsafe: Vec<String>,
    /// Debug only: time spent scoring.
    #[serde(skip_serializing_if = "Option::is_none", with = "micros")]
    pub elapsed: Option<Duration>,
}

mod micros {
    use serde::Serializer;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(d.as_micros() as u64),
            None => s.serialize_none(),
        }
    }
}

impl Catalog {
    /// Ranks this catalog's tools for `query` and returns the best candidates, best first, ties
    /// in registration order. Pure: no tool is run and nothing is changed, so one catalog serves
    /// any number of queries, concurrently (`&self`; the future is `Send`). Fails only when the
    /// scorer fails.
    pub async fn pick(
        &self,
        query: &str,
        options: &PickOptions,
    ) -> Result<Vec<Candidate>, ToolError> {
        let pool = Pool::new(self, |def| {
            options.allow_unsafe || def.safety.is_read_only()
        });
        if options.max_candidates == 0 || pool.is_empty() {
            return Ok(Vec::new());
        }
        let default_scorer;
        let scorer: &dyn Scorer = match &options.scorer {
            Some(s) => s.as_ref(),
            None => {
                default_scorer = Bm25Scorer;
                &default_scorer
            }
        };
        let deadline = options.time_budget.map(Deadline::after);
        let request = ScoreRequest {
            query,
            pool: &pool,
            limit: options.max_candidates,
            deadline,
        };
        let started = Instant::now();
        let scored = match deadline {
            None => Some(scorer.score(request).await?),
            Some(deadline) => {
                let scoring = scorer.score(request);
                // Tokio's timer interrupts a scorer that waits; one that computes stops itself at
                // its next deadline check. Without a runtime there is no timer to ask (and asking
                // would panic), so the checks are all there is.
                let finished = if tokio::runtime::Handle::try_current().is_ok() {
                    tokio::time::timeout_at(deadline.instant(), scoring)
                        .await
                        .ok()
                } else {
                    Some(scoring.await)
                };
                match finished {
                    // Finished in time: its result (an error is the scorer's own failure).
                    Some(result) if !deadline.expired() => Some(result?),
                    // Timed out, stopped at a deadline check, or finished late: fall back.
                    _ => None,
                }
            }
        };
        let elapsed = started.elapsed();

        let excluded_unsafe = if options.debug && !options.allow_unsafe {
            self.iter()
                .filter(|(id, _)| !pool.contains(*id))
                .map(|(_, d)| d.name.to_string())
                .collect()
        } else {
            Vec::new()
        };
        let provenance =
            |rank: usize, details: Option<Value>, fallback: Option<String>| Provenance {
                scorer: scorer.name().to_owned(),
                rank,
                fallback,
                pool_size: pool.len(),
                details: details.filter(|_| options.debug),
                excluded_unsafe: excluded_unsafe.clone(),
                elapsed: options.debug.then_some(elapsed),
            };

        let Some(scored) = scored else {
            let budget = options.time_budget.unwrap_or_default();
            let why = format!(
                "scoring exceeded the time budget of {budget:?}; first tools in registration order"
            );
            return Ok(self
                .iter()
                .filter(|(id, _)| pool.contains(*id))
                .take(options.max_candidates)
                .enumerate()
                .map(|(i, (_, def))| Candidate {
                    tool: def.clone(),
                    score: 0.0,
                    reason: why.clone(),
                    provenance: provenance(i + 1, None, Some(why.clone())),
                })
                .collect());
        };

        let mut kept: Vec<Scored> = Vec::with_capacity(scored.len().min(64));
        let mut seen = std::collections::HashSet::new();
        for mut s in scored {
            if !pool.contains(s.tool) {
                return Err(ToolError::new(
                    ErrorCode::INTERNAL,
                    format!(
                        "scorer {:?} returned a tool outside the pool it was given",
                        scorer.name()
                    ),
                ));
            }
            s.score = if s.score.is_nan() {
                0.0
            } else {
                s.score.clamp(0.0, 1.0)
            };
            if s.score > 0.0 && s.score >= options.min_score && seen.insert(s.tool) {
                kept.push(s);
            }
        }
        kept.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.seq(a.tool).cmp(&self.seq(b.tool)))
        });
        kept.truncate(options.max_candidates);
        Ok(kept
            .into_iter()
            .enumerate()
            .map(|(i, s)| Candidate {
                tool: self.definition(s.tool).clone(),
                score: s.score,
                reason: s
                    .reason
                    .unwrap_or_else(|| format!("scored {:.2} by {}", s.score, scorer.name())),
                provenance: provenance(i + 1, s.details, None),
            })
            .collect())
    }

    /// The handle of every tool, for scorers that want them in registration order.
    pub fn ids(&self) -> Vec<ToolId> {
        self.iter().map(|(id, _)| id).collect()
    }
}

/// One-shot selection over a [`ToolSet`]: indexes all its tools, picks, and drops the index.
///
/// Convenient for a single question; each call pays the whole index build (about 20 µs per
/// tool, against microseconds for the query itself). To pick repeatedly, as an agent loop does,
/// build a [`Catalog`] once with [`Catalog::from_toolset`], call [`Catalog::pick`] per request
/// and [`Catalog::sync`] when the tool set changes (see the [module docs](super)).
pub async fn pick(
    toolset: &ToolSet,
    query: &str,
    options: &PickOptions,
) -> Result<Vec<Candidate>, ToolError> {
    Catalog::from_toolset(toolset).pick(query, options).await
}

/// One-shot selection over any definitions (duplicate names are an error); like [`pick`], it
/// builds the index on every call, so keep a [`Catalog`] for repeated queries.
pub async fn pick_from(
    definitions: &[ToolDefinition],
    query: &str,
    options: &PickOptions,
) -> Result<Vec<Candidate>, ToolError> {
    let catalog = Catalog::from_definitions(definitions.iter().cloned()).map_err(|e| {
        ToolError::new(ErrorCode::INVALID_ARGUMENTS, e.to_string())
            .recover("give every tool a unique name")
    })?;
    catalog.pick(query, options).await
}
