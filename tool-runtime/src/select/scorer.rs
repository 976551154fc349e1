//! The pluggable scorer interface.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::catalog::Pool;
use super::deadline::Deadline;
use super::index::ToolId;
use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};

/// What a scorer is asked: rank the tools of `pool` for `query`.
#[derive(Debug, Clone, Copy)]
pub struct ScoreRequest<'a> {
    /// The user's input, as text.
    pub query: &'a str,
    /// The tools that may be returned (the catalog minus what the options exclude).
    pub pool: &'a Pool<'a>,
    /// How many results will be used. A scorer may return only its best `limit` (saving work on
    /// large catalogs) or more; it must never return tools outside `pool`.
    pub limit: usize,
    /// When the pick's time budget runs out, if it has one. Scorers that do much work on the
    /// calling thread check it between tools or chunks ([`ScoreRequest::check_deadline`]) and stop
    /// early: a timer can only interrupt a scorer that is waiting, not one that is computing.
    pub deadline: Option<Deadline>,
}

impl ScoreRequest<'_> {
    /// Whether the time budget is spent.
    pub fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| d.expired())
    }

    /// `Err` with code `TIMEOUT` once the time budget is spent; scorers return it to stop early,
    /// and `pick` then falls back to registration order.
    // ToolError is the error every layer hands back to a model; its size is the project's choice.
    #[allow(clippy::result_large_err)]
    pub fn check_deadline(&self) -> Result<(), ToolError> {
        if self.expired() {
            Err(out_of_time())
        } else {
            Ok(())
        }
    }
}

/// The error a scorer stops with when the time budget is spent.
pub(crate) fn out_of_time() -> ToolError {
    ToolError::new(
        ErrorCode::TIMEOUT,
        "the selection's time budget ran out while scoring",
    )
}

/// One tool's score from a scorer.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The tool.
    pub tool: ToolId,
    /// Relevance in 0..=1 (values outside are clamped by `pick`).
    pub score: f64,
    /// Why, for people reading the result.
    pub reason: Option<String>,
    /// Scorer-specific data kept in the provenance when debugging.
    pub details: Option<Value>,
}

impl Scored {
    /// A score without reason or details.
    pub fn new(tool: ToolId, score: f64) -> Self {
        Scored {
            tool,
            score,
            reason: None,
            details: None,
        }
    }
}

/// Ranks tools for a query. Tools a scorer leaves out score 0.
///
/// Implementations must not run tools or cause side effects: selection is pure. Scorers that need
/// per-tool preparation (an index, embeddings) do it once and cache it, not per query.
pub trait Scorer: Send + Sync {
    /// Short name recorded in the provenance (`bm25`, `embedding`, ...).
    fn name(&self) -> &str;

    /// Scores the pool's tools for the request's query.
    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>>;
}

impl<S: Scorer + ?Sized> Scorer for Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>> {
        (**self).score(request)
    }
}

/// A per-tool scorer function (`(input, tool) -> {score, reason, details}`) as a
/// [`Scorer`]: called once per tool of the pool, sequentially. The time budget is checked before
/// each call, so a function that computes without ever waiting (a synchronous closure returning a
/// ready future) is stopped after at most one call past the deadline.
pub struct FnScorer<F> {
    name: String,
    f: F,
}

/// One tool's verdict from a per-tool scorer function.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolScore {
    /// Relevance in 0..=1.
    pub score: f64,
    /// Why.
    pub reason: Option<String>,
    /// Extra data for the provenance.
    pub details: Option<Value>,
}

impl<F, Fut> FnScorer<F>
where
    F: Fn(String, Arc<ToolDefinition>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolScore, ToolError>> + Send,
{
    /// Wraps `f`, recorded in the provenance as `name`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnScorer {
            name: name.into(),
            f,
        }
    }
}

impl<F, Fut> Scorer for FnScorer<F>
where
    F: Fn(String, Arc<ToolDefinition>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolScore, ToolError>> + Send,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn score<'a>(
        &'a self,
        request: ScoreRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Scored>, ToolError>> {
        async move {
            let mut out = Vec::with_capacity(request.pool.len());
            for (id, def) in request.pool.iter() {
                request.check_deadline()?;
                let s = (self.f)(request.query.to_owned(), def.clone()).await?;
                out.push(Scored {
                    tool: id,
                    score: s.score,
                    reason: s.reason,
                    details: s.details,
                });
            }
            Ok(out)
        }
        .boxed()
    }
}
