//! HTTP facts about each provider: its default address, where its key lives in the environment,
//! its endpoints and how it authenticates.

pub use crate::codec::Provider;

/// HTTP facts about a provider: where its API lives, where its key and model are configured, how
/// it streams. Implemented for the codecs' [`Provider`], so one `--provider` value selects both the
/// codec and the client. MCP is not a chat API: a client for it is refused with a clear error.
pub trait ProviderApi: Copy {
    /// The public API's address, used when no base URL is configured.
    fn default_base_url(self) -> &'static str;
    /// The environment variables holding the API key, first match wins.
    fn key_env(self) -> &'static [&'static str];
    /// The environment variable that overrides the base URL.
    fn base_url_env(self) -> &'static str;
    /// The environment variable naming the model.
    fn model_env(self) -> &'static str;
    /// A sensible model when none is configured.
    fn default_model(self) -> &'static str;
    /// Whether the public API refuses requests without a key. Ollama runs locally and needs none.
    fn key_required(self) -> bool;
    /// Whether the stream is newline-delimited JSON rather than server-sent events.
    fn streams_ndjson(self) -> bool;
    /// Whether there is a chat API to send requests to (every provider but MCP).
    fn has_chat_api(self) -> bool;
}

impl ProviderApi for Provider {
    fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com/v1",
            Provider::Ollama => "http://127.0.0.1:11434",
            Provider::Gemini => "https://generativelanguage.googleapis.com/v1beta",
            Provider::Mcp => "",
        }
    }

    fn key_env(self) -> &'static [&'static str] {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => &["OPENAI_API_KEY"],
            Provider::Anthropic => &["ANTHROPIC_API_KEY"],
            Provider::Ollama => &["OLLAMA_API_KEY"],
            Provider::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Provider::Mcp => &[],
        }
    }

    fn base_url_env(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "OPENAI_BASE_URL",
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
            Provider::Ollama => "OLLAMA_HOST",
            Provider::Gemini => "GEMINI_BASE_URL",
            Provider::Mcp => "MCP_BASE_URL",
        }
    }

    fn model_env(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "OPENAI_MODEL",
            Provider::Anthropic => "ANTHROPIC_MODEL",
            Provider::Ollama => "OLLAMA_MODEL",
            Provider::Gemini => "GEMINI_MODEL",
            Provider::Mcp => "MCP_MODEL",
        }
    }

    fn default_model(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "gpt-4.1-mini",
            Provider::Anthropic => "claude-sonnet-4-5",
            Provider::Ollama => "qwen3",
            Provider::Gemini => "gemini-2.5-flash",
            Provider::Mcp => "",
        }
    }

    fn key_required(self) -> bool {
        !matches!(self, Provider::Ollama | Provider::Mcp)
    }

    fn streams_ndjson(self) -> bool {
        matches!(self, Provider::Ollama)
    }

    fn has_chat_api(self) -> bool {
        !matches!(self, Provider::Mcp)
    }
}

/// Endpoints and remedies, used by the client only.
pub(crate) trait ProviderHttp: ProviderApi {
    fn endpoint(self, base: &str, model: &str, stream: bool) -> String;
    fn hint(self, status: u16) -> String;
}

impl ProviderHttp for Provider {
    /// The URL of one request, relative to `base` (no trailing slash).
    fn endpoint(self, base: &str, model: &str, stream: bool) -> String {
        match self {
            Provider::OpenAiChat => format!("{base}/chat/completions"),
            Provider::OpenAiResponses => format!("{base}/responses"),
            Provider::Anthropic => format!("{base}/messages"),
            Provider::Ollama => format!("{base}/api/chat"),
            Provider::Gemini if stream => {
                format!("{base}/models/{model}:streamGenerateContent?alt=sse")
            }
            Provider::Gemini => format!("{base}/models/{model}:generateContent"),
            Provider::Mcp => base.to_owned(),
        }
    }

    /// What to tell a person whose request failed with `status`.
    fn hint(self, status: u16) -> String {
        let keys = self.key_env().join(" or ");
        match status {
            401 | 403 => format!("check that {keys} holds a valid key for {}", self.as_str()),
            404 => format!(
                "check the base URL ({}) and the model name ({})",
                self.base_url_env(),
                self.model_env()
            ),
            400 | 422 => "the provider rejected the request body; the message above says which \
                          field"
                .to_owned(),
            408 | 429 => "the provider is rate limiting; wait and retry, or lower the request rate"
                .to_owned(),
            529 => "the provider is overloaded; retry later".to_owned(),
            s if s >= 500 => "the provider had an internal error; retry later".to_owned(),
            _ => "see the provider's message above".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_puts_the_model_in_the_path_and_streams_over_sse() {
        let base = "https://g.example/v1beta";
        assert_eq!(
            Provider::Gemini.endpoint(base, "m1", false),
            "https://g.example/v1beta/models/m1:generateContent"
        );
        assert!(
            Provider::Gemini
                .endpoint(base, "m1", true)
                .ends_with("?alt=sse")
        );
        assert_eq!(
            Provider::OpenAiChat.endpoint("http://127.0.0.1:8080/v1", "x", true),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
    }
}
