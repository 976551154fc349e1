//! Events for a UI as a run goes: text deltas, calls starting and finishing, confirmations asked,
//! the final answer.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tool_runtime::executor::{
    Answer, ConfirmationHandler, ConfirmationRequest, ConfirmationRoute, Preview, Status,
};
use tool_runtime::host::Host;
use tool_runtime::progress::{Progress, ProgressSink};

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The model produced text (a stream delta, or the whole text when not streaming).
    TextDelta {
        /// The new text.
        text: String,
    },
    /// The answer being streamed broke off and the same request is being sent again: the text
    /// deltas since the last request are void and the new answer follows.
    AnswerRestarted {
        /// What broke.
        reason: String,
    },
    /// Pre-selection chose the tools declared on the next model request.
    ToolsSelected {
        /// What the pick looked for.
        query: String,
        /// The tools declared, picked ones first.
        tools: Vec<String>,
    },
    /// A call was decoded and is about to be hydrated and run.
    CallStarted {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The arguments as the model sent them.
        arguments: Value,
    },
    /// One LLM-assisted repair of a call's invalid arguments was made (see `AgentConfig::repair`).
    ArgumentsRepaired {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Whether the repaired arguments validated.
        fixed: bool,
        /// The repaired arguments, when the model answered with an object.
        arguments: Option<Value>,
    },
    /// The run switched how tools are described to the model (a server refused native tools).
    ToolModeChanged {
        /// The new mode.
        mode: super::ToolMode,
        /// Why.
        reason: String,
    },
    /// A running call reported how far it is
    /// ([`CallContext::report_progress`](tool_runtime::CallContext::report_progress)).
    CallProgress {
        /// The call id.
        call_id: String,
        /// How far the call is.
        progress: f64,
        /// How far it goes in all, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What the call is doing, in the tool's words.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A person is being asked to confirm a call (emitted by [`ConfirmWithEvents`]).
    ConfirmationRequested {
        /// What they are shown.
        preview: Preview,
    },
    /// A call ended.
    CallFinished {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// How it ended.
        status: Status,
        /// The outcome as the model sees it.
        result: Value,
    },
    /// The run is suspended until these pending operations are decided.
    Suspended {
        /// The operation ids.
        operations: Vec<String>,
    },
    /// The model's final answer.
    FinalAnswer {
        /// The answer.
        text: String,
    },
}

/// Where events go. Called on the run's task; keep it quick (send to a channel, print).
pub type EventSink = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

tokio::task_local! {
    /// The sink of the run on this task, set by `Agent::run_observed` and `resume_observed`.
    pub(crate) static RUN_EVENTS: EventSink;
}

/// A confirmation handler that reports each request as an [`AgentEvent::ConfirmationRequested`]
/// before asking the wrapped handler. Install it in the executor the agent uses.
pub struct ConfirmWithEvents<H> {
    inner: H,
    sink: EventSink,
}

impl<H> ConfirmWithEvents<H> {
    /// Wraps `inner`.
    pub fn new(inner: H, sink: EventSink) -> Self {
        ConfirmWithEvents { inner, sink }
    }
}

impl<H: ConfirmationHandler> ConfirmationHandler for ConfirmWithEvents<H> {
    fn confirm<'a>(&'a self, request: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        (self.sink)(&AgentEvent::ConfirmationRequested {
            preview: request.preview.clone(),
        });
        self.inner.confirm(request)
    }

    fn route(&self) -> ConfirmationRoute {
        self.inner.route()
    }

    fn host(&self) -> Option<Host> {
        self.inner.host()
    }
}

/// Where the progress of a turn's calls goes: the run's sinks, as
/// [`AgentEvent::CallProgress`]. Held by the calls' context, so it reaches a tool body that runs
/// on a task of its own, where the run's task-local sink is not seen.
pub(crate) struct ProgressEvents {
    pub(crate) sinks: Vec<EventSink>,
}

impl ProgressSink for ProgressEvents {
    fn report(&self, progress: Progress) {
        self.report_call("", progress);
    }

    fn report_call(&self, call_id: &str, progress: Progress) {
        let event = AgentEvent::CallProgress {
            call_id: call_id.to_owned(),
            progress: progress.progress,
            total: progress.total,
            message: progress.message,
        };
        for sink in &self.sinks {
            sink(&event);
        }
    }
}
