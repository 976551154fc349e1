//! What a run leaves behind: the answer, the transcript, the audit records, token usage and the
//! cost of each tool call; and the state of a suspended run.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_runtime::executor::{AuditRecord, Status};
use tool_runtime::{ToolCall, ToolError};

use super::model::ToolMode;
use crate::codec::ToolOutcome;
use crate::http::Usage;

/// Prices per million tokens, to turn usage into money (cost tracking).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Price of one million input tokens, in the currency of your bill.
    pub input_per_million: f64,
    /// Price of one million output tokens.
    pub output_per_million: f64,
}

impl Pricing {
    /// The price of `usage`.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_million
            + usage.output_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

/// The tokens (and money) attributed to one tool call: the request that produced the call,
/// shared evenly among the calls it produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallCost {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its share of the tokens.
    pub usage: Usage,
    /// Its share of the price, when pricing was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// One entry of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum TranscriptEntry {
    /// The user's message.
    User {
        /// Its text.
        text: String,
    },
    /// A model answer.
    Assistant {
        /// Its text (may be empty when it only called tools).
        text: String,
        /// The calls it made.
        calls: Vec<ToolCall>,
        /// The tokens this request spent.
        usage: Usage,
    },
    /// A call's result as sent back to the model.
    Tool {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// How it ended.
        status: Status,
        /// What the model was sent.
        result: Value,
    },
}

/// One LLM-assisted repair of a call's invalid arguments (see `AgentConfig::repair`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairRecord {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments as the model sent them.
    pub sent: Value,
    /// Why they were refused.
    pub error: ToolError,
    /// The arguments the repair request answered with, when it answered with an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repaired: Option<Value>,
    /// Whether the repaired arguments validated (and the call ran with them).
    pub fixed: bool,
    /// Why the repair did not help: the repaired arguments' own error, an answer without an
    /// object, or the repair request's failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair_error: Option<ToolError>,
    /// The tokens the repair request spent (also counted in the run's usage).
    pub usage: Usage,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// The model answered.
    Answered,
    /// `max_iterations` model requests were made without a final answer.
    MaxIterations,
    /// Pending operations wait for a person; resume with [`super::Agent::resume`].
    Suspended {
        /// Everything needed to continue, serializable (store it anywhere).
        state: Box<RunState>,
    },
}

/// The final report of a run (or of its part up to a suspension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// How it ended.
    pub status: RunStatus,
    /// The final answer, when there is one.
    pub answer: Option<String>,
    /// Every message, call and result, in order.
    pub transcript: Vec<TranscriptEntry>,
    /// The executor's audit records of this run (its correlation id), oldest first.
    pub audit: Vec<AuditRecord>,
    /// Tokens over every model request of the run.
    pub usage: Usage,
    /// The price of `usage`, when pricing was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Tokens and price per tool call.
    pub call_costs: Vec<CallCost>,
    /// LLM-assisted repairs of invalid arguments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<RepairRecord>,
    /// Model requests made (repair requests not included).
    pub iterations: u32,
    /// The correlation id tying the run's audit records together.
    pub correlation_id: String,
}

impl RunReport {
    /// The suspended state, if the run is waiting for approvals.
    pub fn suspended(&self) -> Option<&RunState> {
        match &self.status {
            RunStatus::Suspended { state } => Some(state),
            _ => None,
        }
    }
}

/// A call waiting in the executor's store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call as the model made it.
    pub call: ToolCall,
    /// The pending operation's id (approve or deny it by this id).
    pub operation_id: String,
    /// Its position among the turn's calls, so results go back in the calls' order.
    pub index: usize,
}

/// A result already known for a call of the suspended turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoneCall {
    /// The call.
    pub call: ToolCall,
    /// Its position among the turn's calls.
    pub index: usize,
    /// How it ended.
    pub outcome: SavedOutcome,
}

/// A call's model-facing outcome, in a serializable form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SavedOutcome {
    /// It ran.
    Success {
        /// Its result.
        value: Value,
    },
    /// It failed.
    Error {
        /// Why.
        error: ToolError,
    },
    /// A person declined it.
    Denied {
        /// Their reason.
        reason: Option<String>,
    },
}

impl From<ToolOutcome> for SavedOutcome {
    fn from(o: ToolOutcome) -> Self {
        match o {
            ToolOutcome::Success(value) => SavedOutcome::Success { value },
            ToolOutcome::Error(error) => SavedOutcome::Error { error },
            ToolOutcome::Denied { reason } => SavedOutcome::Denied { reason },
        }
    }
}

impl From<SavedOutcome> for ToolOutcome {
    fn from(o: SavedOutcome) -> Self {
        match o {
            SavedOutcome::Success { value } => ToolOutcome::Success(value),
            SavedOutcome::Error { error } => ToolOutcome::Error(error),
            SavedOutcome::Denied { reason } => ToolOutcome::Denied { reason },
        }
    }
}

/// What a run did before it failed, carried by [`super::AgentError::Interrupted`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialRun {
    /// The transcript, usage, costs, repairs and conversation up to the failure. After a
    /// transport or decoding failure, [`super::Agent::resume`] with it sends the failed request
    /// again; after `RetriesExhausted` the conversation ends before the turn with the invalid
    /// calls, so resuming asks the model again from there.
    pub state: RunState,
    /// The executor's audit records of the run so far, oldest first.
    pub audit: Vec<AuditRecord>,
    /// The price of the usage so far, when pricing was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// Everything a suspended run needs to continue, in this process or another one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The provider the conversation is encoded for (`openai`, `anthropic`, ...); resuming with
    /// another provider is refused.
    pub provider: String,
    /// The conversation so far, in the provider's format, ending with the assistant turn whose
    /// calls are pending.
    pub conversation: Vec<Value>,
    /// The user's request, for pre-selection.
    pub query: String,
    /// The calls waiting for approval.
    pub pending: Vec<PendingCall>,
    /// The other calls of the same turn, already finished.
    pub done: Vec<DoneCall>,
    /// Model requests made so far.
    pub iterations: u32,
    /// Invalid-argument failures per tool so far.
    pub failures: Vec<(String, u32)>,
    /// The report so far.
    pub transcript: Vec<TranscriptEntry>,
    /// Tokens so far.
    pub usage: Usage,
    /// Costs so far.
    pub call_costs: Vec<CallCost>,
    /// Repairs so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<RepairRecord>,
    /// How tools are described to the model from here on (the run may have switched to the
    /// prompt-based fallback).
    #[serde(default)]
    pub tool_mode: ToolMode,
    /// The run's correlation id.
    pub correlation_id: String,
    /// The session the run's calls run in when the run was given its own
    /// ([`Agent::run_in_session`](super::Agent::run_in_session)); otherwise the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl RunState {
    /// The pending operation ids.
    pub fn operation_ids(&self) -> Vec<String> {
        self.pending
            .iter()
            .map(|p| p.operation_id.clone())
            .collect()
    }

    /// The state as JSON, to store it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("RunState always serializes")
    }

    /// A state stored with [`RunState::to_json`].
    pub fn from_json(s: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(s)
    }
}
