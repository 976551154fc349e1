//! Errors from talking to a provider: which provider, which status, and what to do.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::provider::{Provider, ProviderApi, ProviderHttp};

/// What went wrong at the transport level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpErrorKind {
    /// No API key was found in the environment.
    MissingKey,
    /// The request never reached the server (DNS, refused connection, TLS).
    Connect,
    /// The server did not answer (or stopped streaming) within the timeout.
    Timeout,
    /// The server answered with a non-success status.
    Status(u16),
    /// The body was not the JSON the provider promised.
    Decode,
    /// The stream carried an error event, or the request failed in another way the transport
    /// could not name.
    Stream,
    /// The connection closed before the whole answer arrived: a stale keep-alive connection
    /// the server had already dropped, a server or proxy that closed it mid-answer, a reset.
    /// Sending the request again on a new connection usually works; the client does so itself
    /// when nothing of the answer had arrived yet.
    Disconnected,
    /// The client was misconfigured (bad base URL, bad header value).
    Config,
    /// The response (or one stream event) was larger than the client's configured bound.
    TooLarge,
}

/// A failed request to a provider. The message always names the provider, the status when there
/// was one, what the provider said, and what to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct HttpError {
    /// The provider the request went to.
    pub provider: Provider,
    /// What kind of failure.
    pub kind: HttpErrorKind,
    /// What happened, including the provider's own message when it sent one.
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// How many attempts were made (retries included).
    pub attempts: u32,
    /// The server's requested wait, when it sent one.
    pub retry_after: Option<Duration>,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.provider)?;
        if let HttpErrorKind::Status(s) = self.kind {
            write!(f, "HTTP {s}: ")?;
        }
        write!(f, "{}", self.message)?;
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        write!(f, "; {}", self.hint)
    }
}

impl HttpError {
    pub(crate) fn new(
        provider: Provider,
        kind: HttpErrorKind,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        HttpError {
            provider,
            kind,
            message: message.into(),
            hint: hint.into(),
            attempts: 1,
            retry_after: None,
        }
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            HttpErrorKind::Status(s) => Some(s),
            _ => None,
        }
    }

    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            HttpErrorKind::Connect | HttpErrorKind::Timeout | HttpErrorKind::Disconnected => true,
            HttpErrorKind::Status(s) => is_retryable_status(s),
            _ => false,
        }
    }

    pub(crate) fn from_status(provider: Provider, status: u16, body: &str) -> Self {
        let message = provider_message(body).unwrap_or_else(|| {
            let trimmed = body.trim();
            if trimmed.is_empty() {
                "the response had no body".to_owned()
            } else {
                trimmed.chars().take(300).collect()
            }
        });
        HttpError::new(
            provider,
            HttpErrorKind::Status(status),
            message,
            provider.hint(status),
        )
    }

    pub(crate) fn from_reqwest(provider: Provider, base_url: &str, err: &reqwest::Error) -> Self {
        if err.is_timeout() {
            HttpError::new(
                provider,
                HttpErrorKind::Timeout,
                format!("no answer from {base_url} within the timeout"),
                "raise the request timeout, or check that the server is not overloaded",
            )
        } else if err.is_connect() {
            HttpError::new(
                provider,
                HttpErrorKind::Connect,
                format!("could not connect to {base_url}: {}", root_cause(err)),
                format!(
                    "check that the server is running and that {} points at it",
                    provider.base_url_env()
                ),
            )
        } else if is_disconnect(err) {
            HttpError::new(
                provider,
                HttpErrorKind::Disconnected,
                format!(
                    "the connection to {base_url} closed before the answer was complete: {}",
                    root_cause(err)
                ),
                "retry; if it persists, check the server's log (a crash, or a proxy that drops \
                 connections)",
            )
        } else if err.is_decode() {
            HttpError::new(
                provider,
                HttpErrorKind::Decode,
                format!("the response body could not be read: {}", root_cause(err)),
                "check that the base URL points at a server speaking this provider's API",
            )
        } else {
            HttpError::new(
                provider,
                HttpErrorKind::Stream,
                format!("the request failed: {}", root_cause(err)),
                "retry; if it persists, check the network and the base URL",
            )
        }
    }
}

/// Whether a transport error is the connection going away under the request: hyper's "closed
/// before message completed" (the server dropped a kept-alive connection as it was reused, or
/// mid-body) and "connection closed", or a reset, abort, broken pipe or early EOF from the socket.
fn is_disconnect(err: &reqwest::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_closed() || h.is_canceled())
        {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        cur = e.source();
    }
    false
}

/// 408, 409 (OpenAI's lock timeout), 429, and 5xx (Anthropic's 529 "overloaded" included).
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = err;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// The human message inside a provider's error body: OpenAI and Gemini `{"error":{"message"}}`,
/// Anthropic `{"type":"error","error":{"type","message"}}`, Ollama `{"error":"..."}`.
pub(crate) fn provider_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    message_in(&v)
}

pub(crate) fn message_in(v: &Value) -> Option<String> {
    let v = if let Some(arr) = v.as_array() {
        arr.first()?
    } else {
        v
    };
    let err = v.get("error")?;
    if let Some(s) = err.as_str() {
        return Some(s.to_owned());
    }
    let msg = err.get("message")?.as_str()?;
    match err
        .get("type")
        .or_else(|| err.get("status"))
        .and_then(Value::as_str)
    {
        Some(t) => Some(format!("{t}: {msg}")),
        None => Some(msg.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_provider_status_cause_and_remedy() {
        let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        let e = HttpError::from_status(Provider::Anthropic, 401, body);
        let s = e.to_string();
        assert!(s.starts_with("anthropic: HTTP 401: authentication_error: invalid x-api-key"));
        assert!(s.contains("ANTHROPIC_API_KEY"), "{s}");
        assert!(!e.is_retryable());
    }

    #[test]
    fn every_provider_error_shape_is_read() {
        assert_eq!(
            provider_message(r#"{"error":{"message":"m","type":"invalid_request_error"}}"#),
            Some("invalid_request_error: m".into())
        );
        assert_eq!(
            provider_message(r#"{"error":"model not found"}"#),
            Some("model not found".into())
        );
        assert_eq!(
            provider_message(
                r#"[{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}]"#
            ),
            Some("RESOURCE_EXHAUSTED: quota".into())
        );
        assert_eq!(provider_message("<html>bad gateway</html>"), None);
        let e = HttpError::from_status(Provider::Gemini, 502, "<html>bad gateway</html>");
        assert!(e.to_string().contains("bad gateway"));
        assert!(e.is_retryable());
    }
}
