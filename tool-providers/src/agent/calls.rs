//! One turn's calls: hydrated against the canonical schemas (and repaired once when configured),
//! run as one batch through the executor, and turned into what the model is sent back.

use serde_json::Value;
use tool_runtime::executor::{Outcome, Status};
use tool_runtime::{CallContext, ToolCall, ToolError, tool::Initiator};

use super::events::{AgentEvent, EventSink, ProgressEvents, RUN_EVENTS};
use super::report::{CallCost, PendingCall, TranscriptEntry};
use super::{Agent, AgentError, Progress, TOO_MANY_CALLS, repair};
use crate::codec::schema::strict::strip_optional_nulls;
use crate::codec::{ToolOutcome, ToolResult, hydrate_call};
use crate::http::Usage;
use tool_runtime::progress::Reporter;

impl Agent {
    /// Hydrates and runs one turn's calls: invalid ones are repaired once when configured, else
    /// they become errors for the model (within the retry budget); the turn runs as one batch
    /// through the executor, concurrently up to its `max_concurrency`, results in the calls'
    /// order.
    #[allow(clippy::type_complexity)]
    pub(super) async fn run_calls(
        &self,
        p: &mut Progress,
        calls: &[ToolCall],
    ) -> Result<(Vec<(usize, ToolCall, ToolOutcome)>, Vec<PendingCall>), AgentError> {
        let cx = CallContext {
            correlation_id: p.correlation_id.clone(),
            session: self.session_of(p),
            initiator: Initiator::Model,
            // a resumed run tells a call that never ran from one whose outcome was lost by this
            record_start: self.checkpoints.is_some(),
            progress: self.calls_progress(),
            host: self.host.clone(),
            ..CallContext::default()
        };
        let toolset = self.executor.toolset();
        // past the limit a call costs only its refusal: nothing is hydrated, run or audited
        let (calls, refused) = calls.split_at(calls.len().min(self.config.max_calls_per_turn));
        let mut batch: Vec<ToolCall> = Vec::with_capacity(calls.len());
        for call in calls {
            self.emit(AgentEvent::CallStarted {
                call_id: call.id.to_string(),
                tool: call.name.clone(),
                arguments: arguments_value(call),
            });
            let err = match hydrate_call(&toolset, call) {
                Ok(_) => {
                    batch.push(executable(&toolset, call));
                    continue;
                }
                Err(err) => err,
            };
            if self.config.repair
                && repair::repairable(&err)
                && let Some(fixed) = self.repair(p, call, &err).await
            {
                batch.push(executable(&toolset, &fixed));
                continue;
            }
            let failures = p.failures.entry(call.name.clone()).or_insert(0);
            *failures += 1;
            let budget = self
                .config
                .tool_retry_budget
                .get(&call.name)
                .copied()
                .unwrap_or(self.config.retry_budget);
            if *failures > budget {
                return Err(AgentError::RetriesExhausted {
                    tool: call.name.clone(),
                    failures: *failures,
                    budget,
                    last: err,
                });
            }
            // It goes through the executor as it is, so the refusal is audited like any call
            // and its error comes back in its place.
            batch.push(call.clone());
        }
        let execs = self.executor.run_batch(&batch, &cx).await;
        let mut results = Vec::new();
        let mut pending = Vec::new();
        for (i, exec) in execs.into_iter().enumerate() {
            match &exec.outcome {
                Outcome::Pending { operation_id, .. } => pending.push(PendingCall {
                    call: calls[i].clone(),
                    operation_id: operation_id.clone(),
                    index: i,
                }),
                other => {
                    let outcome = to_tool_outcome(other).expect("not pending");
                    results.push((i, calls[i].clone(), outcome));
                }
            }
        }
        if !refused.is_empty() {
            let limit = self.config.max_calls_per_turn;
            tracing::warn!(
                limit,
                refused = refused.len(),
                "a model response held more calls than the per-turn limit; the rest were refused"
            );
            let error = ToolError::new(
                TOO_MANY_CALLS,
                format!(
                    "this response held {} tool calls; at most {limit} run per turn, and this \
                     one was not run",
                    calls.len() + refused.len()
                ),
            )
            .retryable(true)
            .recover(format!(
                "send at most {limit} calls per turn; repeat the ones that were not run in the next turn"
            ))
            .with_detail("limit", limit);
            for (j, call) in refused.iter().enumerate() {
                results.push((
                    calls.len() + j,
                    call.clone(),
                    ToolOutcome::Error(error.clone()),
                ));
            }
        }
        Ok((results, pending))
    }

    /// Where the calls' progress goes: the run's events when anyone listens to this run, and
    /// the agent's own reporter ([`Agent::with_progress`]).
    fn calls_progress(&self) -> Option<Reporter> {
        let sinks: Vec<EventSink> = self
            .events
            .iter()
            .cloned()
            .chain(RUN_EVENTS.try_with(Clone::clone).ok())
            .collect();
        let events = (!sinks.is_empty()).then(|| Reporter::new(ProgressEvents { sinks }));
        match (events, &self.progress) {
            (Some(events), Some(own)) => Some(events.also(own.clone())),
            (events, own) => events.or_else(|| own.clone()),
        }
    }

    pub(super) fn finish_call(
        &self,
        p: &mut Progress,
        call: &ToolCall,
        outcome: ToolOutcome,
    ) -> ToolResult {
        let status = match &outcome {
            ToolOutcome::Success(_) => Status::Success,
            ToolOutcome::Error(_) => Status::Error,
            ToolOutcome::Denied { .. } => Status::Denied,
        };
        let result = outcome.to_value();
        self.emit(AgentEvent::CallFinished {
            call_id: call.id.to_string(),
            tool: call.name.clone(),
            status,
            result: result.clone(),
        });
        p.transcript.push(TranscriptEntry::Tool {
            call_id: call.id.to_string(),
            tool: call.name.clone(),
            status,
            result,
        });
        ToolResult::new(call, outcome)
    }

    pub(super) fn attribute_costs(&self, p: &mut Progress, calls: &[ToolCall], usage: Usage) {
        if calls.is_empty() {
            return;
        }
        let n = calls.len() as u64;
        for (i, call) in calls.iter().enumerate() {
            // Even shares; the first calls take the remainder so the shares add up exactly.
            let share = |total: u64| total / n + u64::from((i as u64) < total % n);
            let u = Usage {
                input_tokens: share(usage.input_tokens),
                output_tokens: share(usage.output_tokens),
                cached_input_tokens: share(usage.cached_input_tokens),
                cache_creation_input_tokens: share(usage.cache_creation_input_tokens),
            };
            p.call_costs.push(CallCost {
                call_id: call.id.to_string(),
                tool: call.name.clone(),
                usage: u,
                cost: self.config.pricing.map(|pr| pr.cost(&u)),
            });
        }
    }
}

/// The model-facing outcome of an executor outcome; `None` for a pending one.
pub(super) fn to_tool_outcome(outcome: &Outcome) -> Option<ToolOutcome> {
    Some(match outcome {
        Outcome::Success { value, .. } => ToolOutcome::Success(value.clone()),
        Outcome::Error { error } => ToolOutcome::Error((**error).clone()),
        Outcome::Denied { reason, .. } => ToolOutcome::Denied {
            reason: Some(reason.clone()),
        },
        Outcome::Pending { .. } => return None,
    })
}

/// The call the executor's batch hydrates again to the instance `hydrate_call` gave: the call
/// itself, unless it carries strict-mode `null`s for optional properties, which `hydrate_call`
/// strips and the executor's own hydration would not; then the call with them stripped, exactly
/// as `hydrate_call` does it.
fn executable(toolset: &tool_runtime::ToolSet, call: &ToolCall) -> ToolCall {
    let has_null = match &call.arguments {
        tool_runtime::hydrate::Arguments::Text(t) => t.contains("null"),
        tool_runtime::hydrate::Arguments::Json(v) => contains_null(v),
    };
    if !has_null {
        return call.clone();
    }
    let Some(def) = toolset.get(&call.name) else {
        return call.clone();
    };
    let Ok((value, repairs)) =
        tool_runtime::hydrate::parse_arguments(&call.arguments, toolset.limits())
    else {
        return call.clone();
    };
    if !repairs.is_empty() {
        return call.clone();
    }
    let cleaned = strip_optional_nulls(&def.parameters_value(), value.clone());
    if cleaned == value {
        call.clone()
    } else {
        ToolCall::new(call.id.clone(), call.name.clone(), cleaned)
    }
}

fn contains_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(contains_null),
        Value::Object(m) => m.values().any(contains_null),
        _ => false,
    }
}

pub(super) fn arguments_value(call: &ToolCall) -> Value {
    match &call.arguments {
        tool_runtime::hydrate::Arguments::Json(v) => v.clone(),
        tool_runtime::hydrate::Arguments::Text(t) => {
            serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone()))
        }
    }
}
