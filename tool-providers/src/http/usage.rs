//! Token usage as each provider reports it, in one shape.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::provider::Provider;

/// Tokens spent by one request (or, summed, by a whole run).
///
/// `input_tokens` is every prompt token, whichever way the provider counts: Anthropic reports
/// tokens read from and written to its prompt cache apart from `input_tokens`, and they are added
/// in here, so that the field means the same for every provider. The two cache counts say how
/// many of them were read from the cache and written to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (tool declarations and results included, cached ones included).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache, when it says (OpenAI `cached_tokens`,
    /// Anthropic `cache_read_input_tokens`, Gemini `cachedContentTokenCount`).
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache by this request (Anthropic
    /// `cache_creation_input_tokens`, billed above the normal input price).
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// The usage in a provider's response body, or in one stream event.
    ///
    /// Streams report cumulative counts (Gemini on every chunk, Anthropic's input in
    /// `message_start` and output in `message_delta`), so stream events are combined with
    /// [`Usage::merge_max`], and whole requests with `+`.
    pub fn from_body(provider: Provider, body: &Value) -> Option<Usage> {
        let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        match provider {
            Provider::Mcp => None,
            Provider::OpenAiChat => {
                let u = body.get("usage").filter(|u| u.is_object())?;
                Some(Usage {
                    input_tokens: n(u.get("prompt_tokens")),
                    output_tokens: n(u.get("completion_tokens")),
                    cached_input_tokens: n(u.pointer("/prompt_tokens_details/cached_tokens")),
                    cache_creation_input_tokens: 0,
                })
            }
            Provider::OpenAiResponses => {
                // Non-streaming: the response object; streaming: `response.completed` carries it.
                let u = body
                    .get("usage")
                    .or_else(|| body.pointer("/response/usage"))
                    .filter(|u| u.is_object())?;
                Some(Usage {
                    input_tokens: n(u.get("input_tokens")),
                    output_tokens: n(u.get("output_tokens")),
                    cached_input_tokens: n(u.pointer("/input_tokens_details/cached_tokens")),
                    cache_creation_input_tokens: 0,
                })
            }
            Provider::Anthropic => {
                let u = body
                    .get("usage")
                    .or_else(|| body.pointer("/message/usage"))
                    .filter(|u| u.is_object())?;
                // Anthropic's `input_tokens` leaves out the cached part: read and written
                // tokens are added to make it the whole prompt.
                let read = n(u.get("cache_read_input_tokens"));
                let written = n(u.get("cache_creation_input_tokens"));
                Some(Usage {
                    input_tokens: n(u.get("input_tokens")) + read + written,
                    output_tokens: n(u.get("output_tokens")),
                    cached_input_tokens: read,
                    cache_creation_input_tokens: written,
                })
            }
            Provider::Ollama => {
                if body.get("prompt_eval_count").is_none() && body.get("eval_count").is_none() {
                    return None;
                }
                Some(Usage {
                    input_tokens: n(body.get("prompt_eval_count")),
                    output_tokens: n(body.get("eval_count")),
                    cached_input_tokens: 0,
                    cache_creation_input_tokens: 0,
                })
            }
            Provider::Gemini => {
                let u = body.get("usageMetadata").filter(|u| u.is_object())?;
                Some(Usage {
                    input_tokens: n(u.get("promptTokenCount")),
                    output_tokens: n(u.get("candidatesTokenCount"))
                        + n(u.get("thoughtsTokenCount")),
                    cached_input_tokens: n(u.get("cachedContentTokenCount")),
                    cache_creation_input_tokens: 0,
                })
            }
        }
    }

    /// Field-wise maximum: combines the cumulative counts of one stream's events.
    pub fn merge_max(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.max(other.input_tokens);
        self.output_tokens = self.output_tokens.max(other.output_tokens);
        self.cached_input_tokens = self.cached_input_tokens.max(other.cached_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .max(other.cache_creation_input_tokens);
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cached_input_tokens += rhs.cached_input_tokens;
        self.cache_creation_input_tokens += rhs.cache_creation_input_tokens;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_every_providers_usage_shape() {
        let u = Usage::from_body(
            Provider::OpenAiChat,
            &json!({"usage":{"prompt_tokens":53,"completion_tokens":17,"total_tokens":70,
                "prompt_tokens_details":{"cached_tokens":5}}}),
        )
        .unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cached_input_tokens),
            (53, 17, 5)
        );
        let u = Usage::from_body(
            Provider::OpenAiResponses,
            &json!({"type":"response.completed","response":{"usage":{"input_tokens":9,"output_tokens":3}}}),
        )
        .unwrap();
        assert_eq!(u.total(), 12);
        let u = Usage::from_body(
            Provider::Anthropic,
            &json!({"type":"message_start","message":{"usage":{"input_tokens":472,"output_tokens":2}}}),
        )
        .unwrap();
        assert_eq!(u.input_tokens, 472);
        let u = Usage::from_body(
            Provider::Anthropic,
            &json!({"usage":{"input_tokens":12,"output_tokens":30,
                "cache_creation_input_tokens":2000,"cache_read_input_tokens":500}}),
        )
        .unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.cached_input_tokens,
                u.cache_creation_input_tokens,
                u.output_tokens
            ),
            (2512, 500, 2000, 30),
            "cache reads and writes are part of the prompt"
        );
        let u = Usage::from_body(
            Provider::Ollama,
            &json!({"done":true,"prompt_eval_count":26,"eval_count":8}),
        )
        .unwrap();
        assert_eq!(u.total(), 34);
        let u = Usage::from_body(
            Provider::Gemini,
            &json!({"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":6,"thoughtsTokenCount":4}}),
        )
        .unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (40, 10));
        assert_eq!(
            Usage::from_body(Provider::OpenAiChat, &json!({"usage":null})),
            None
        );
        assert_eq!(
            Usage::from_body(Provider::Ollama, &json!({"done":false})),
            None
        );
    }

    #[test]
    fn stream_counts_merge_by_maximum_and_requests_add_up() {
        let mut s = Usage {
            input_tokens: 472,
            output_tokens: 2,
            cache_creation_input_tokens: 300,
            ..Usage::default()
        };
        s.merge_max(Usage {
            output_tokens: 89,
            ..Usage::default()
        });
        assert_eq!(s.cache_creation_input_tokens, 300);
        assert_eq!((s.input_tokens, s.output_tokens), (472, 89));
        let mut total = Usage::default();
        total += s;
        total += s;
        assert_eq!(total.total(), 2 * 561);
    }
}
