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

    /// The call `call_id` of `tool` starts running its tool (its confirmation, if any, is
    /// behind it): a sink that lists the calls running now (an approvals page) adds it here.
    /// The executor calls this once per call, and [`ProgressSink::call_ended`] once after it,
    /// however the call ends (a result, an error, a panic, a timeout, a dropped future).
    /// Nothing by default.
    fn call_started(&self, call_id: &str, tool: &str) {
        let _ = (call_id, tool);
    }

    /// The call `call_id` stopped running. Nothing by default.
    fn call_ended(&self, call_id: &str) {
        let _ = call_id;
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

    /// Tells the sink that `call_id` of `tool` runs until the returned guard is dropped
    /// ([`ProgressSink::call_started`], then [`ProgressSink::call_ended`]).
    pub fn running(&self, call_id: &str, tool: &str) -> RunningCall {
        self.0.call_started(call_id, tool);
        RunningCall {
            sink: self.0.clone(),
            call_id: call_id.to_owned(),
        }
    }

    /// Reports that go to this sink and to `other`, in that order: for a caller that shows a
    /// call's progress in two places (a run's events and an approvals page, say).
    pub fn also(self, other: Reporter) -> Reporter {
        Reporter::new(Both(self, other))
    }
}

/// A call running, as [`Reporter::running`] told its sink: the sink hears of its end when this
/// is dropped.
#[must_use = "the call is running until this is dropped"]
pub struct RunningCall {
    sink: Arc<dyn ProgressSink>,
    call_id: String,
}

impl Drop for RunningCall {
    fn drop(&mut self) {
        self.sink.call_ended(&self.call_id);
    }
}

impl fmt::Debug for RunningCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningCall")
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

/// Two sinks, each told everything.
struct Both(Reporter, Reporter);

impl ProgressSink for Both {
    fn report(&self, progress: Progress) {
        self.0.0.report(progress.clone());
        self.1.0.report(progress);
    }

    fn report_call(&self, call_id: &str, progress: Progress) {
        self.0.0.report_call(call_id, progress.clone());
        self.1.0.report_call(call_id, progress);
    }

    fn call_started(&self, call_id: &str, tool: &str) {
        self.0.0.call_started(call_id, tool);
        self.1.0.call_started(call_id, tool);
    }

    fn call_ended(&self, call_id: &str) {
        self.0.0.call_ended(call_id);
        self.1.0.call_ended(call_id);
    }
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reporter")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Writes down everything it is told.
    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl ProgressSink for Arc<Log> {
        fn report(&self, progress: Progress) {
            self.0
                .lock()
                .unwrap()
                .push(format!("report {}", progress.progress));
        }

        fn report_call(&self, call_id: &str, progress: Progress) {
            let line = format!("{call_id} at {}", progress.progress);
            self.0.lock().unwrap().push(line);
        }

        fn call_started(&self, call_id: &str, tool: &str) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{call_id} runs {tool}"));
        }

        fn call_ended(&self, call_id: &str) {
            self.0.lock().unwrap().push(format!("{call_id} ended"));
        }
    }

    #[test]
    fn a_running_call_ends_when_its_guard_goes_and_both_sinks_hear_everything() {
        let (a, b) = (Arc::new(Log::default()), Arc::new(Log::default()));
        let both = Reporter::new(a.clone()).also(Reporter::new(b.clone()));
        let running = both.running("c1", "sync");
        both.report_for("c1", Progress::new(1.0));
        both.report(Progress::new(2.0));
        assert_eq!(a.0.lock().unwrap().len(), 3);
        drop(running);
        let expected = ["c1 runs sync", "c1 at 1", "report 2", "c1 ended"];
        assert_eq!(*a.0.lock().unwrap(), expected);
        assert_eq!(*b.0.lock().unwrap(), expected);
    }
}
