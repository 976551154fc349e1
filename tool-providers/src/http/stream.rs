//! A response read as a stream of events: SSE or NDJSON framing by provider, a provider's error
//! event turned into an error, and the usage the events reported so far.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::error::{HttpError, HttpErrorKind, message_in};
use super::framing::{NdjsonDecoder, SseDecoder};
use super::provider::{Provider, ProviderApi};
use super::usage::Usage;

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

enum Framing {
    Sse(SseDecoder),
    Ndjson(NdjsonDecoder),
}

/// The events of one streamed response, as JSON values, with the token usage they reported.
pub struct EventStream {
    provider: Provider,
    base_url: String,
    bytes: Option<ByteStream>,
    framing: Framing,
    ready: std::collections::VecDeque<Result<Value, HttpError>>,
    usage: Usage,
    done: bool,
    max_event_bytes: usize,
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("provider", &self.provider)
            .field("usage", &self.usage)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl EventStream {
    pub(super) fn new(
        provider: Provider,
        base_url: String,
        bytes: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
        max_event_bytes: usize,
    ) -> Self {
        EventStream {
            provider,
            base_url,
            bytes: Some(Box::pin(bytes)),
            framing: if provider.streams_ndjson() {
                Framing::Ndjson(NdjsonDecoder::new())
            } else {
                Framing::Sse(SseDecoder::new())
            },
            ready: Default::default(),
            usage: Usage::default(),
            done: false,
            max_event_bytes,
        }
    }

    /// The usage reported by the events read so far (complete once the stream has ended).
    pub fn usage(&self) -> Usage {
        self.usage
    }

    fn frames(&mut self, chunk: Option<&[u8]>) {
        let payloads: Vec<String> = match (&mut self.framing, chunk) {
            (Framing::Sse(d), Some(c)) => d.push(c).into_iter().map(|e| e.data).collect(),
            (Framing::Sse(d), None) => d.finish().into_iter().map(|e| e.data).collect(),
            (Framing::Ndjson(d), Some(c)) => d.push(c),
            (Framing::Ndjson(d), None) => d.finish(),
        };
        let buffered = match &self.framing {
            Framing::Sse(d) => d.buffered(),
            Framing::Ndjson(d) => d.buffered(),
        };
        for data in payloads {
            if data.trim() == "[DONE]" {
                continue;
            }
            let item = match serde_json::from_str::<Value>(&data) {
                Ok(v) => {
                    if let Some(msg) = stream_error(&v) {
                        Err(HttpError::new(
                            self.provider,
                            HttpErrorKind::Stream,
                            format!("the stream reported an error: {msg}"),
                            "retry the request; if it persists, see the provider's status page",
                        ))
                    } else {
                        if let Some(u) = Usage::from_body(self.provider, &v) {
                            self.usage.merge_max(u);
                        }
                        Ok(v)
                    }
                }
                Err(e) => Err(HttpError::new(
                    self.provider,
                    HttpErrorKind::Decode,
                    format!(
                        "a stream event is not JSON ({e}): {}",
                        data.chars().take(200).collect::<String>()
                    ),
                    "check that the base URL points at a server speaking this provider's API",
                )),
            };
            self.ready.push_back(item);
        }
        if buffered > self.max_event_bytes {
            // the error ends the stream, and with it the buffer
            self.ready.push_back(Err(HttpError::new(
                self.provider,
                HttpErrorKind::TooLarge,
                format!(
                    "a stream event grew past the {} bytes this client holds for one event",
                    self.max_event_bytes
                ),
                "raise ClientConfig::max_event_bytes if such events are expected, or check \
                 that the base URL points at the provider's API",
            )));
        }
    }
}

/// An error carried inside a stream: Anthropic's `{"type":"error"}` event, an OpenAI/Gemini
/// `{"error":{..}}` object, Ollama's `{"error":"..."}` line.
fn stream_error(v: &Value) -> Option<String> {
    if v.get("type").and_then(Value::as_str) == Some("error")
        || v.get("type").and_then(Value::as_str) == Some("response.failed")
    {
        return message_in(v)
            .or_else(|| message_in(v.get("response")?))
            .or_else(|| Some(v.to_string()));
    }
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return message_in(v);
    }
    None
}

impl Stream for EventStream {
    type Item = Result<Value, HttpError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                if item.is_err() {
                    // An error ends the stream: nothing after it can be trusted.
                    self.ready.clear();
                    self.bytes = None;
                    self.done = true;
                }
                return Poll::Ready(Some(item));
            }
            if self.done {
                return Poll::Ready(None);
            }
            let Some(bytes) = self.bytes.as_mut() else {
                self.done = true;
                continue;
            };
            match bytes.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => self.frames(Some(&chunk)),
                Poll::Ready(Some(Err(e))) => {
                    let mut err = HttpError::from_reqwest(self.provider, &self.base_url, &e);
                    match err.kind {
                        HttpErrorKind::Timeout => {
                            err.message = "the stream stayed silent longer than the timeout".into();
                        }
                        HttpErrorKind::Disconnected => {}
                        _ => err.kind = HttpErrorKind::Stream,
                    }
                    self.ready.push_back(Err(err));
                }
                Poll::Ready(None) => {
                    self.frames(None);
                    self.bytes = None;
                    self.done = true;
                    if let Some(item) = self.ready.pop_front() {
                        self.done = self.ready.is_empty();
                        return Poll::Ready(Some(item));
                    }
                }
            }
        }
    }
}
