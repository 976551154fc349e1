//! One HTTP client for every provider: the provider decides the endpoint, the authentication
//! headers and the stream framing; the codecs decide the body.

use std::fmt;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::body::{Extra, RequestBody, write_object};
use super::error::{HttpError, HttpErrorKind};
use super::provider::{Provider, ProviderApi, ProviderHttp};
use super::retry::{RetryPolicy, retry_after};
use super::stream::EventStream;
use super::usage::Usage;

/// Anthropic's API version header value this client speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach one provider.
#[derive(Clone)]
pub struct ClientConfig {
    /// The wire format and its conventions.
    pub provider: Provider,
    /// Where the API lives, without a trailing slash (e.g. `http://127.0.0.1:8089/v1` for a
    /// local llama.cpp server speaking OpenAI's format).
    pub base_url: String,
    /// The API key; never printed (the `Debug` output redacts it).
    pub api_key: Option<String>,
    /// The model to ask.
    pub model: String,
    /// The longest a non-streaming request may take, and the longest a stream may stay silent.
    pub timeout: Duration,
    /// The longest connecting may take.
    pub connect_timeout: Duration,
    /// Retries for rate limits, server errors and connection failures.
    pub retry: RetryPolicy,
    /// `max_tokens` for Anthropic requests whose body does not set it (the API requires it).
    pub anthropic_max_tokens: u32,
    /// Extra headers sent with every request (an organisation id, a proxy's token).
    pub headers: Vec<(String, String)>,
    /// The largest non-streamed response body read, in bytes (default 32 MiB): a server that
    /// sends more is refused with a [`HttpErrorKind::TooLarge`] error instead of filling memory.
    pub max_response_bytes: usize,
    /// The largest single event a stream may carry, in bytes (default 8 MiB): the framing
    /// buffers one event at a time, and an event that never ends would otherwise grow without
    /// bound.
    pub max_event_bytes: usize,
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    /// A configuration with the provider's defaults and no key.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        ClientConfig {
            provider,
            base_url: provider.default_base_url().to_owned(),
            api_key: None,
            model: model.into(),
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            anthropic_max_tokens: 4096,
            headers: Vec::new(),
            max_response_bytes: 32 << 20,
            max_event_bytes: 8 << 20,
        }
    }

    /// The configuration the environment describes: the key from the provider's variable
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`/`GOOGLE_API_KEY`,
    /// `OLLAMA_API_KEY`), the base URL and model from `*_BASE_URL`/`OLLAMA_HOST` and `*_MODEL`.
    ///
    /// Fails when the provider needs a key and the base URL is the public API: a custom base URL
    /// (a local server) may need none.
    pub fn from_env(provider: Provider) -> Result<Self, HttpError> {
        Self::from_lookup(provider, |k| std::env::var(k).ok())
    }

    /// [`ClientConfig::from_env`] over any variable lookup (tests, configuration files).
    pub fn from_lookup(
        provider: Provider,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, HttpError> {
        let get = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        let model = get(provider.model_env()).unwrap_or_else(|| provider.default_model().into());
        let mut cfg = ClientConfig::new(provider, model);
        if let Some(base) = get(provider.base_url_env()) {
            cfg = cfg.with_base_url(base);
        }
        cfg.api_key = provider.key_env().iter().find_map(|k| get(k));
        if cfg.api_key.is_none()
            && provider.key_required()
            && cfg.base_url == provider.default_base_url()
        {
            return Err(HttpError::new(
                provider,
                HttpErrorKind::MissingKey,
                format!("no API key: {} is not set", provider.key_env().join(" / ")),
                format!(
                    "export {}=..., or point {} at a server that needs no key",
                    provider.key_env()[0],
                    provider.base_url_env()
                ),
            ));
        }
        Ok(cfg)
    }

    /// Sets the base URL; a trailing slash is removed. For Ollama, a bare `host:port` (what
    /// `OLLAMA_HOST` usually holds) gets `http://`.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        let mut url: String = base_url.into().trim().trim_end_matches('/').to_owned();
        if !url.contains("://") {
            url = format!("http://{url}");
        }
        self.base_url = url;
        self
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the request timeout (and the stream's idle timeout).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// A provider's answer to one non-streaming request.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The response body, for the provider's codec to decode.
    pub body: Value,
    /// The tokens the provider counted (zero when it reported none).
    pub usage: Usage,
    /// How many attempts it took (1 without retries).
    pub attempts: u32,
}

/// An HTTP client for one provider.
#[derive(Clone)]
pub struct HttpClient {
    config: ClientConfig,
    http: reqwest::Client,
    headers: HeaderMap,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("config", &self.config)
            .finish()
    }
}

impl HttpClient {
    /// A client for `config`.
    pub fn new(config: ClientConfig) -> Result<Self, HttpError> {
        let p = config.provider;
        let config_err = |msg: String| {
            HttpError::new(
                p,
                HttpErrorKind::Config,
                msg,
                "fix the client configuration",
            )
        };
        if !p.has_chat_api() {
            return Err(config_err(
                "MCP is a tool protocol, not a chat API; pick a model provider".into(),
            ));
        }
        reqwest::Url::parse(&config.base_url)
            .map_err(|e| config_err(format!("invalid base URL {:?}: {e}", config.base_url)))?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &config.api_key {
            let (name, value) = match p {
                Provider::Anthropic => ("x-api-key", key.clone()),
                Provider::Gemini => ("x-goog-api-key", key.clone()),
                _ => ("authorization", format!("Bearer {key}")),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                config_err("the API key contains characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), value);
        }
        if p == Provider::Anthropic {
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        for (k, v) in &config.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| config_err(format!("invalid header name {k:?}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| config_err(format!("invalid value for header {k:?}")))?;
            headers.insert(name, value);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            // For streams, a silence longer than the timeout ends the stream; the total time of
            // a non-streaming request is bounded per request in `send`.
            .read_timeout(config.timeout)
            .build()
            .map_err(|e| config_err(format!("could not build the HTTP client: {e}")))?;
        Ok(HttpClient {
            config,
            http,
            headers,
        })
    }

    /// The client for the provider the environment configures ([`ClientConfig::from_env`]).
    pub fn from_env(provider: Provider) -> Result<Self, HttpError> {
        Self::new(ClientConfig::from_env(provider)?)
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.config.provider
    }

    /// Sends a request body (as a codec built it) and returns the decoded JSON answer.
    ///
    /// The client fills in what is transport, not content: `model` (except for Gemini, where it
    /// is in the URL), `stream: false`, and Anthropic's required `max_tokens` when missing.
    pub async fn send(&self, body: &Value) -> Result<Reply, HttpError> {
        self.send_payload(self.payload_of_value(body, false)).await
    }

    /// [`HttpClient::send`] for a [`RequestBody`]: its pre-serialized fields (the cached tool
    /// declarations) are written as they are, never parsed or serialized again.
    pub async fn send_body(&self, body: &RequestBody) -> Result<Reply, HttpError> {
        self.send_payload(self.payload(body.raw_fields(), body.fields(), false))
            .await
    }

    async fn send_payload(&self, payload: Bytes) -> Result<Reply, HttpError> {
        let p = self.provider();
        let mut spent = 0u32;
        let (text, attempts) = loop {
            let (resp, attempts) = self.post_after(payload.clone(), false, spent).await?;
            match read_capped(resp, self.config.max_response_bytes).await {
                Ok(text) => break (text, attempts),
                Err(Unread::TooLarge(read)) => {
                    let mut err = HttpError::new(
                        p,
                        HttpErrorKind::TooLarge,
                        format!(
                            "the response is larger than the {} bytes this client reads (at least {read} bytes)",
                            self.config.max_response_bytes
                        ),
                        "raise ClientConfig::max_response_bytes if such answers are expected, or \
                         check that the base URL points at the provider's API",
                    );
                    err.attempts = attempts;
                    return Err(err);
                }
                Err(Unread::Transport(e)) => {
                    let mut err = HttpError::from_reqwest(p, &self.config.base_url, &e);
                    err.attempts = attempts;
                    // A body cut off is sent again like a failed send: the caller saw none of it.
                    if err.kind != HttpErrorKind::Disconnected
                        || attempts > self.config.retry.max_retries
                    {
                        return Err(err);
                    }
                    tracing::warn!(provider = %p, attempts, error = %err, "retrying the request");
                    spent = attempts;
                }
            }
        };
        let body: Value = serde_json::from_str(&text).map_err(|e| {
            HttpError::new(
                p,
                HttpErrorKind::Decode,
                format!(
                    "the response is not JSON ({e}): {}",
                    text.chars().take(200).collect::<String>()
                ),
                "check that the base URL points at a server speaking this provider's API",
            )
        })?;
        let usage = Usage::from_body(p, &body).unwrap_or_default();
        Ok(Reply {
            body,
            usage,
            attempts,
        })
    }

    /// Sends a request body with streaming on and returns its events as JSON values, in order:
    /// the `data` of each server-sent event (OpenAI, Anthropic, Gemini; `[DONE]` dropped), or each
    /// line of Ollama's NDJSON. An error event in the stream ends it with an [`HttpError`].
    ///
    /// Retries happen only before the first byte: a stream that broke off is not replayed, since
    /// the caller has already seen part of it.
    pub async fn stream(&self, body: &Value) -> Result<EventStream, HttpError> {
        self.stream_payload(self.payload_of_value(body, true)).await
    }

    /// [`HttpClient::stream`] for a [`RequestBody`] (see [`HttpClient::send_body`]).
    pub async fn stream_body(&self, body: &RequestBody) -> Result<EventStream, HttpError> {
        self.stream_payload(self.payload(body.raw_fields(), body.fields(), true))
            .await
    }

    async fn stream_payload(&self, payload: Bytes) -> Result<EventStream, HttpError> {
        let (resp, _) = self.post_with_retries(payload, true).await?;
        Ok(EventStream::new(
            self.provider(),
            self.config.base_url.clone(),
            resp.bytes_stream(),
            self.config.max_event_bytes,
        ))
    }

    fn payload_of_value(&self, body: &Value, stream: bool) -> Bytes {
        match body.as_object() {
            Some(fields) => self.payload("", fields, stream),
            None => Bytes::from(serde_json::to_vec(body).expect("a JSON value serializes")),
        }
    }

    /// The bytes to send: the body with the transport fields filled in. Written straight from the
    /// borrowed body, so neither the conversation nor the declarations are copied or re-encoded.
    fn payload(&self, raw: &str, fields: &Map<String, Value>, stream: bool) -> Bytes {
        let extras = self.transport_fields(fields, stream);
        let mut out = Vec::with_capacity(raw.len() + 1024);
        write_object(raw, fields, &extras, &mut out);
        Bytes::from(out)
    }

    /// What `payload` adds: `model` unless set (not for Gemini, where it is in the URL), `stream`
    /// (always for Ollama, which streams unless told not to), OpenAI's `stream_options` so a
    /// stream carries token counts, and Anthropic's required `max_tokens` unless set.
    fn transport_fields(&self, fields: &Map<String, Value>, stream: bool) -> Vec<Extra> {
        let p = self.provider();
        let mut extras = Vec::new();
        if p != Provider::Gemini {
            extras.push(Extra {
                key: "model",
                value: Value::String(self.config.model.clone()),
                replace: false,
            });
            if stream || p == Provider::Ollama || fields.contains_key("stream") {
                extras.push(Extra {
                    key: "stream",
                    value: Value::Bool(stream),
                    replace: true,
                });
            }
        }
        if stream && p == Provider::OpenAiChat {
            extras.push(Extra {
                key: "stream_options",
                value: serde_json::json!({"include_usage": true}),
                replace: false,
            });
        }
        if p == Provider::Anthropic {
            extras.push(Extra {
                key: "max_tokens",
                value: Value::from(self.config.anthropic_max_tokens),
                replace: false,
            });
        }
        extras
    }

    /// Sends until a success status, retrying what [`HttpError::is_retryable`] allows within the
    /// retry policy.
    async fn post_with_retries(
        &self,
        payload: Bytes,
        stream: bool,
    ) -> Result<(reqwest::Response, u32), HttpError> {
        self.post_after(payload, stream, 0).await
    }

    /// [`Self::post_with_retries`] counting the attempts already `spent` on this request (a body
    /// cut off earlier).
    async fn post_after(
        &self,
        payload: Bytes,
        stream: bool,
        spent: u32,
    ) -> Result<(reqwest::Response, u32), HttpError> {
        let p = self.provider();
        let url = p.endpoint(&self.config.base_url, &self.config.model, stream);
        let mut attempt = spent;
        loop {
            attempt += 1;
            let mut req = self
                .http
                .post(&url)
                .headers(self.headers.clone())
                .body(payload.clone());
            if !stream {
                req = req.timeout(self.config.timeout);
            }
            let (mut err, server_wait) = match req.send().await {
                Ok(resp) if resp.status().is_success() => return Ok((resp, attempt)),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let wait = retry_after(resp.headers(), SystemTime::now());
                    // an error page is read for its message, not kept whole
                    let text = read_capped(resp, ERROR_BODY_BYTES)
                        .await
                        .unwrap_or_default();
                    let mut err = HttpError::from_status(p, status, &text);
                    err.retry_after = wait;
                    (err, wait)
                }
                Err(e) => (HttpError::from_reqwest(p, &self.config.base_url, &e), None),
            };
            err.attempts = attempt;
            let retries_left = attempt <= self.config.retry.max_retries;
            if !err.is_retryable() || !retries_left {
                return Err(err);
            }
            let wait = match server_wait {
                Some(w) if w > self.config.retry.max_retry_after => {
                    err.hint = format!(
                        "the server asked to wait {} s, longer than the {} s this client waits; \
                         retry later",
                        w.as_secs(),
                        self.config.retry.max_retry_after.as_secs()
                    );
                    return Err(err);
                }
                Some(w) => w,
                // Most often a kept-alive connection the server closed as it was reused: a new
                // connection at once is the fix, and a server that is really gone fails fast
                // on the next attempt with a connect error.
                None if err.kind == HttpErrorKind::Disconnected && attempt == spent + 1 => {
                    Duration::ZERO
                }
                None => self.config.retry.backoff(attempt - 1),
            };
            tracing::warn!(
                provider = %p,
                attempt,
                wait_ms = wait.as_millis() as u64,
                error = %err,
                "retrying the request"
            );
            tokio::time::sleep(wait).await;
        }
    }
}

/// The most of an error response's body read for its message.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// Why a body was not read.
#[derive(Debug)]
enum Unread {
    /// More than the cap arrived (or was announced); how many bytes were seen.
    TooLarge(u64),
    /// The transport failed.
    Transport(reqwest::Error),
}

/// Reads a body of at most `cap` bytes as text (invalid UTF-8 replaced), chunk by chunk, so
/// that a larger one is refused when the cap is passed, not after it has all arrived.
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<String, Unread> {
    if let Some(announced) = resp.content_length().filter(|&n| n > cap as u64) {
        return Err(Unread::TooLarge(announced));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(Unread::Transport)? {
        if body.len() + chunk.len() > cap {
            return Err(Unread::TooLarge((body.len() + chunk.len()) as u64));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_env_requires_a_key_only_for_the_public_api() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let err = ClientConfig::from_lookup(Provider::Anthropic, env(&[])).unwrap_err();
        assert_eq!(err.kind, HttpErrorKind::MissingKey);
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"));
        let cfg = ClientConfig::from_lookup(
            Provider::OpenAiChat,
            env(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:8089/v1/"),
                ("OPENAI_MODEL", "smol"),
            ]),
        )
        .unwrap();
        assert_eq!(cfg.base_url, "http://127.0.0.1:8089/v1");
        assert_eq!(cfg.model, "smol");
        let cfg =
            ClientConfig::from_lookup(Provider::Gemini, env(&[("GOOGLE_API_KEY", "k")])).unwrap();
        assert_eq!(cfg.api_key.as_deref(), Some("k"));
        assert!(
            !format!("{cfg:?}").contains("\"k\""),
            "the key must not be printed"
        );
        let cfg =
            ClientConfig::from_lookup(Provider::Ollama, env(&[("OLLAMA_HOST", "10.0.0.2:11434")]))
                .unwrap();
        assert_eq!(cfg.base_url, "http://10.0.0.2:11434");
    }

    #[test]
    fn transport_fields_are_filled_in_without_overriding_the_codec() {
        let prepare = |c: &HttpClient, body: Value, stream: bool| -> Value {
            serde_json::from_slice(&c.payload_of_value(&body, stream)).unwrap()
        };
        let c = HttpClient::new(ClientConfig::new(Provider::Anthropic, "claude")).unwrap();
        let b = prepare(
            &c,
            serde_json::json!({"messages": [], "max_tokens": 10}),
            true,
        );
        assert_eq!(b["model"], "claude");
        assert_eq!(b["max_tokens"], 10);
        assert_eq!(b["stream"], true);
        let o = HttpClient::new(ClientConfig::new(Provider::Ollama, "qwen3")).unwrap();
        assert_eq!(prepare(&o, serde_json::json!({}), false)["stream"], false);
        let g = HttpClient::new(ClientConfig::new(Provider::Gemini, "g")).unwrap();
        assert!(
            prepare(&g, serde_json::json!({}), true)
                .get("model")
                .is_none()
        );
        let oa = HttpClient::new(ClientConfig::new(Provider::OpenAiChat, "m")).unwrap();
        assert_eq!(
            prepare(&oa, serde_json::json!({}), true)["stream_options"]["include_usage"],
            true
        );
        assert!(
            prepare(&oa, serde_json::json!({}), false)
                .get("stream")
                .is_none()
        );
    }
}
