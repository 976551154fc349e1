//! Asking the host's model from inside a tool ([`CallContext::sample`](crate::CallContext::sample)):
//! over MCP, `sampling/createMessage` to a client that declared the sampling capability. The
//! client shows the request and the completion to its person as the specification asks (it may
//! change or refuse either); the tool gets what the client sends back.

use serde::{Deserialize, Serialize};

/// Who says a message of a sampling conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (the prompt).
    User,
    /// The model.
    Assistant,
}

/// One text message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleMessage {
    /// Who says it.
    pub role: Role,
    /// What it says.
    pub text: String,
}

/// What a tool asks the host's model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRequest {
    /// The conversation so far, ending with the prompt.
    pub messages: Vec<SampleMessage>,
    /// A system prompt, which the client may ignore.
    pub system: Option<String>,
    /// The most tokens the completion may have.
    pub max_tokens: u32,
    /// Sampling temperature, when the tool cares.
    pub temperature: Option<f64>,
}

impl SampleRequest {
    /// One user message, at most 1000 tokens in reply.
    pub fn new(prompt: impl Into<String>) -> Self {
        SampleRequest {
            messages: vec![SampleMessage {
                role: Role::User,
                text: prompt.into(),
            }],
            system: None,
            max_tokens: 1000,
            temperature: None,
        }
    }

    /// At most `tokens` tokens in reply.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = tokens;
        self
    }

    /// With a system prompt.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }
}

/// The host model's completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampled {
    /// Its text (empty when the model answered with something else, such as an image).
    pub text: String,
    /// The model that wrote it, as the client names it.
    pub model: String,
    /// Why it stopped, as the client says it (`endTurn`, `maxTokens`...).
    pub stop_reason: Option<String>,
}
