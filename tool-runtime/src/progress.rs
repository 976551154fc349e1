//! Progress a tool reports while it runs, for whoever waits on the call.
//!
//! A tool reports through [`CallContext::report_progress`](crate::CallContext::report_progress);
//! what runs the call decides where the reports go by setting the context's
//! [`progress`](crate::CallContext::progress) sink: an MCP server sends them to a client that
//! asked for progress (a `progressToken`) as `notifications/progress`. Without a sink a report
//! goes nowhere, so a tool reports whether or not anyone listens.

use std::fmt;
use std::sync::Arc;

/// One report: how far the call is, out of how much when that is known, and what it is doing.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the call is; it should grow with every report, even when the total is unknown.
    pub progress: f64,
    /// How far it goes in all, when known.
    pub total: Option<f64>,
    /// What the call is doing, for a person.
    pub message: Option<String>,
}

impl Progress {
    /// `progress` done, total unknown, no message.
    pub fn new(progress: f64) -> Self {
        Progress {
            progress,
            total: None,
            message: None,
        }
    }

    /// Out of `total`.
    pub fn of(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// With a message for a person.
    pub fn message(mut self, text: impl Into<String>) -> Self {
        self.message = Some(text.into());
        self
    }
}

/// Where the reports of one call go. Called on the tool's task, in the order the tool reports:
/// it must not block (queue the report and send it elsewhere).
pub trait ProgressSink: Send + Sync {
    /// Takes one report.
    fn report(&self, progress: Progress);

    /// Takes one report of the call `call_id`: a sink shared by several calls (an agent's turn)
    /// tells them apart by it. [`ProgressSink::report`] by default.
    fn report_call(&self, call_id: &str, progress: Progress) {
        let _ = call_id;
        self.report(progress);
    }
}

impl<F: Fn(Progress) + Send + Sync> ProgressSink for F {
    fn report(&self, progress: Progress) {
        self(progress)
    }
}

/// A call context's progress sink: cheap to clone, shared by the context's clones.
#[derive(Clone)]
pub struct Reporter(Arc<dyn ProgressSink>);

impl Reporter {
    /// Reports go to `sink`.
    pub fn new(sink: impl ProgressSink + 'static) -> Self {
        Reporter(Arc::new(sink))
    }

    /// Sends one report to the sink.
    pub fn report(&self, progress: Progress) {
        self.0.report(progress);
    }

    /// Sends one report of the call `call_id` to the sink ([`ProgressSink::report_call`]).
    pub fn report_for(&self, call_id: &str, progress: Progress) {
        self.0.report_call(call_id, progress);
    }
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reporter")
    }
}
