//! The conversation of an interactive session, carried from one question to the next.
//!
//! An [`Agent::run`] starts from nothing, and a finished run's report carries its transcript but
//! not the conversation in the provider's format (only a suspended run's state does). This
//! rebuilds that conversation from the transcripts with the model's own encoders, so a follow-up
//! question ("now edit that note") sees the earlier calls and results.
//!
//! Rebuilt assistant turns are encoded from their text and calls: provider-only data that a
//! verbatim echo would keep (Anthropic thinking blocks, Gemini thought signatures, Responses
//! reasoning items) is not carried over.
//!
//! [`Agent::run`]: tool_providers::agent::Agent::run

use std::collections::VecDeque;

use serde_json::Value;
use tool_providers::agent::{ChatModel, TranscriptEntry};
use tool_providers::codec::{Decoded, StopReason, ToolOutcome, ToolResult};
use tool_runtime::executor::Status;
use tool_runtime::{ErrorCode, ToolError};

/// The last few exchanges of a session.
#[derive(Debug, Clone)]
pub struct History {
    turns: VecDeque<Vec<TranscriptEntry>>,
    keep: usize,
}

impl History {
    /// Keeps at most `keep` past exchanges (a small local model has a small context).
    pub fn new(keep: usize) -> Self {
        History {
            turns: VecDeque::new(),
            keep,
        }
    }

    /// Records one finished exchange (its transcript, the user's message first).
    pub fn push(&mut self, transcript: Vec<TranscriptEntry>) {
        if self.keep == 0 {
            return;
        }
        self.turns.push_back(transcript);
        while self.turns.len() > self.keep {
            self.turns.pop_front();
        }
    }

    /// How many exchanges are kept.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// The kept exchanges as `model`'s conversation, oldest first.
    pub fn conversation(&self, model: &ChatModel) -> Vec<Value> {
        self.turns
            .iter()
            .flat_map(|t| conversation(model, t))
            .collect()
    }
}

/// `transcript` as `model`'s conversation entries: user messages, assistant turns with their
/// calls, and each turn's results grouped (Anthropic expects a turn's results in one message).
/// Results without a matching call in the turn before (a fallback's unreadable call blocks) are
/// left out: providers reject a result that answers no call.
pub fn conversation(model: &ChatModel, transcript: &[TranscriptEntry]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut open_calls: Vec<String> = Vec::new();
    let mut results: Vec<ToolResult> = Vec::new();
    let flush = |out: &mut Vec<Value>, results: &mut Vec<ToolResult>| {
        if !results.is_empty() {
            out.extend(model.result_entries(results));
            results.clear();
        }
    };
    for entry in transcript {
        match entry {
            TranscriptEntry::User { text } => {
                flush(&mut out, &mut results);
                open_calls.clear();
                out.push(model.user_message(text));
            }
            TranscriptEntry::Assistant { text, calls, .. } => {
                flush(&mut out, &mut results);
                let decoded = Decoded {
                    text: text.clone(),
                    calls: calls.clone(),
                    stop: if calls.is_empty() {
                        StopReason::EndTurn
                    } else {
                        StopReason::ToolCalls
                    },
                    assistant: None,
                };
                if !text.trim().is_empty() || !calls.is_empty() {
                    out.extend(model.assistant_entries(&decoded));
                }
                open_calls = calls.iter().map(|c| c.id.to_string()).collect();
            }
            TranscriptEntry::Tool {
                call_id,
                tool,
                status,
                result,
            } => {
                if !open_calls.contains(call_id) {
                    continue;
                }
                results.push(ToolResult {
                    call_id: call_id.into(),
                    name: tool.clone(),
                    outcome: outcome_of(*status, result),
                });
            }
        }
    }
    flush(&mut out, &mut results);
    out
}

/// The outcome a transcript's result was made from (the inverse of [`ToolOutcome::to_value`]).
fn outcome_of(status: Status, result: &Value) -> ToolOutcome {
    match status {
        Status::Error => ToolOutcome::Error(
            serde_json::from_value::<ToolError>(result["error"].clone()).unwrap_or_else(|_| {
                ToolError::new(ErrorCode::INTERNAL, result["error"].to_string())
            }),
        ),
        Status::Denied => ToolOutcome::Denied {
            reason: result["reason"].as_str().map(str::to_owned),
        },
        Status::Cancelled => ToolOutcome::Error(ToolError::new(
            ErrorCode::INTERNAL,
            "the call was cancelled before it finished",
        )),
        Status::Success | Status::Pending => ToolOutcome::Success(result.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tool_providers::http::Usage;
    use tool_providers::http::{ClientConfig, HttpClient, Provider};
    use tool_runtime::ToolCall;

    fn model(provider: Provider) -> ChatModel {
        let cfg = ClientConfig::new(provider, "m").with_base_url("http://127.0.0.1:9");
        ChatModel::new(HttpClient::new(cfg).unwrap())
    }

    fn exchange() -> Vec<TranscriptEntry> {
        vec![
            TranscriptEntry::User {
                text: "note about llamas".into(),
            },
            TranscriptEntry::Assistant {
                text: String::new(),
                calls: vec![
                    ToolCall::new("c1", "create_note", json!({"title": "Llamas", "body": "b"})),
                    ToolCall::new("c2", "create_note", json!({"title": ""})),
                ],
                usage: Usage::default(),
            },
            TranscriptEntry::Tool {
                call_id: "c1".into(),
                tool: "create_note".into(),
                status: Status::Success,
                result: json!({"id": 7}),
            },
            TranscriptEntry::Tool {
                call_id: "c2".into(),
                tool: "create_note".into(),
                status: Status::Error,
                result: json!({"error": {"code": "INVALID_ARGUMENTS", "message": "the title is empty",
                                          "retryable": false}}),
            },
            // A fallback's unreadable block answers no call: it must not be replayed.
            TranscriptEntry::Tool {
                call_id: "unreadable-0".into(),
                tool: "unreadable_call".into(),
                status: Status::Error,
                result: json!({"error": {"code": "INVALID_JSON", "message": "x", "retryable": false}}),
            },
            TranscriptEntry::Assistant {
                text: "Note 7 is created.".into(),
                calls: vec![],
                usage: Usage::default(),
            },
        ]
    }

    #[test]
    fn openai_chat_replays_calls_results_and_the_answer() {
        let conv = conversation(&model(Provider::OpenAiChat), &exchange());
        let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);
        assert_eq!(conv[1]["tool_calls"][1]["id"], "c2");
        assert_eq!(conv[2]["tool_call_id"], "c1");
        assert_eq!(conv[3]["tool_call_id"], "c2");
        assert!(
            conv[3]["content"]
                .as_str()
                .unwrap()
                .contains("INVALID_ARGUMENTS")
        );
        assert_eq!(conv[4]["content"], "Note 7 is created.");
    }

    #[test]
    fn anthropic_gets_one_turn_of_results_with_the_error_flag() {
        let conv = conversation(&model(Provider::Anthropic), &exchange());
        let roles: Vec<&str> = conv.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
        let results = conv[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[1]["tool_use_id"], "c2");
        assert_eq!(results[1]["is_error"], true);
    }

    #[test]
    fn history_keeps_only_the_last_exchanges() {
        let mut h = History::new(2);
        for q in ["one", "two", "three"] {
            h.push(vec![TranscriptEntry::User { text: q.into() }]);
        }
        assert_eq!(h.len(), 2);
        let conv = h.conversation(&model(Provider::OpenAiChat));
        let texts: Vec<&str> = conv
            .iter()
            .map(|m| m["content"].as_str().unwrap())
            .collect();
        assert_eq!(texts, ["two", "three"]);
        let mut none = History::new(0);
        none.push(exchange());
        assert!(none.is_empty());
    }
}
