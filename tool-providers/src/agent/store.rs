//! The agent's reads of the executor's store (audit records, pending operations). The store may be
//! a file or a server, so they run on tokio's blocking pool, never on the worker driving the run.

use tool_runtime::executor::{ActivityQuery, AuditRecord, Executor};

use super::report::{RunReport, RunStatus};
use super::{Agent, Progress};

impl Agent {
    /// Runs a synchronous executor query on the blocking pool. `None` when the runtime is
    /// shutting down and the query was cancelled; a panic in it is the caller's.
    pub(super) async fn off_runtime<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Executor) -> T + Send + 'static,
    ) -> Option<T> {
        let executor = self.executor.clone();
        match tokio::task::spawn_blocking(move || query(&executor)).await {
            Ok(value) => Some(value),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => None,
        }
    }

    /// The executor's audit records of a run, oldest first.
    pub(super) async fn audit_of(&self, correlation_id: &str) -> Vec<AuditRecord> {
        let query = ActivityQuery {
            correlation_id: Some(correlation_id.to_owned()),
            limit: Some(10_000),
            ..Default::default()
        };
        let mut audit = self
            .off_runtime(move |executor| executor.activity(&query))
            .await
            .and_then(Result::ok)
            .unwrap_or_default();
        audit.reverse();
        audit
    }

    pub(super) async fn report(
        &self,
        p: &Progress,
        status: RunStatus,
        answer: Option<String>,
    ) -> RunReport {
        RunReport {
            status,
            answer,
            transcript: p.transcript.clone(),
            audit: self.audit_of(&p.correlation_id).await,
            usage: p.usage,
            cost: self.config.pricing.map(|pr| pr.cost(&p.usage)),
            call_costs: p.call_costs.clone(),
            repairs: p.repairs.clone(),
            iterations: p.iterations,
            correlation_id: p.correlation_id.to_string(),
        }
    }
}
