//! Streaming: accumulators that turn a provider's stream events into complete calls as soon as each
//! is complete, and the parsing of a recorded stream (SSE `data:` lines or NDJSON).

use serde_json::Value;
use tool_runtime::ToolCall;

use super::{Codec, CodecError, Decoded, Provider, StopReason};

/// Takes one provider's stream events in order and yields each tool call the moment the stream
/// shows it is complete (OpenAI Chat: the next index starts or a finish reason arrives; Responses:
/// `function_call_arguments.done`; Anthropic: `content_block_stop`; Ollama and Gemini: the chunk
/// that carries the call, or Gemini's closing `functionCall:{}` for streamed arguments).
pub trait StreamAccumulator: Send {
    /// Feeds one event (one SSE `data:` payload or one NDJSON line, parsed). Returns the calls this
    /// event completed, in order.
    fn push(&mut self, event: &Value) -> Result<Vec<ToolCall>, CodecError>;

    /// Ends the stream. Calls still open are closed (a stream cut short still yields what it
    /// has; hydration will reject truncated arguments), and a stream that ended before its
    /// stop event has the stop [`StopReason::Unknown`], which the agent treats as an answer
    /// that broke off: it runs none of its calls and asks again. The result lists every call of the
    /// response, including those already yielded by [`StreamAccumulator::push`], which always come
    /// first and in the same order.
    fn finish(self: Box<Self>) -> Result<Decoded, CodecError>;
}

/// The text, calls and stop reason gathered so far; shared by the accumulators.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    pub(crate) text: String,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) stop: Option<StopReason>,
    /// The assistant turn to echo, for providers whose stream carries data the canonical calls
    /// cannot hold (Gemini thought signatures).
    pub(crate) assistant: Option<serde_json::Value>,
}

impl Gathered {
    pub(crate) fn into_decoded(self) -> Decoded {
        Decoded {
            text: self.text,
            calls: self.calls,
            stop: self.stop.unwrap_or(StopReason::Unknown),
            assistant: self.assistant,
        }
    }
}

/// A recorded response: one JSON body, or the events of a stream.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamCapture {
    /// A full response body.
    Body(Value),
    /// Stream events in order (SSE `data:` payloads without `[DONE]`, or NDJSON lines).
    Events(Vec<Value>),
}

impl StreamCapture {
    /// Detects the format: one JSON document is a body; lines starting with `data:` are SSE
    /// (`event:`, `id:` and comment lines are skipped, multi-line data joined); otherwise every
    /// non-empty line must be one JSON document (NDJSON).
    ///
    /// Every event is kept: to decode a large capture, [`StreamCapture::decode_text`] takes
    /// memory in proportion to the text instead.
    pub fn parse(provider: Provider, text: &str) -> Result<StreamCapture, CodecError> {
        let mut events = Vec::new();
        match each_event(provider, text, |v| {
            events.push(v);
            Ok(())
        })? {
            Some(body) => Ok(StreamCapture::Body(body)),
            None => Ok(StreamCapture::Events(events)),
        }
    }

    /// Parses and decodes a capture in one pass: each event goes to the accumulator as soon
    /// as it is read and is dropped after, so memory stays in proportion to the text and what
    /// the response gathers, never to the parsed events (a JSON value of a small delta is many
    /// times its text). Returns the decoded response and whether the capture was a stream.
    pub fn decode_text(
        provider: Provider,
        text: &str,
        codec: &dyn Codec,
    ) -> Result<(Decoded, bool), CodecError> {
        let mut acc = codec.accumulator();
        match each_event(provider, text, |v| acc.push(&v).map(drop))? {
            Some(body) => Ok((codec.decode_response(&body)?, false)),
            None => Ok((acc.finish()?, true)),
        }
    }

    /// Decodes the capture with `codec`: a body with `decode_response`, events through a fresh
    /// accumulator.
    pub fn decode(&self, codec: &dyn Codec) -> Result<Decoded, CodecError> {
        match self {
            StreamCapture::Body(v) => codec.decode_response(v),
            StreamCapture::Events(events) => {
                let mut acc = codec.accumulator();
                for e in events {
                    acc.push(e)?;
                }
                acc.finish()
            }
        }
    }
}

/// Reads a capture: `Some(body)` when it is one JSON document, else each event handed to
/// `event` in order and `None`.
fn each_event(
    provider: Provider,
    text: &str,
    mut event: impl FnMut(Value) -> Result<(), CodecError>,
) -> Result<Option<Value>, CodecError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(CodecError::malformed(provider, "", "the input is empty"));
    }
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return Ok(Some(v));
    }
    let is_sse = trimmed
        .lines()
        .any(|l| l.starts_with("data:") || l.starts_with("event:"));
    if is_sse {
        let mut data: Vec<&str> = Vec::new();
        let mut line_no = 0;
        let mut flush = |data: &mut Vec<&str>, line_no: usize| {
            if data.is_empty() {
                return Ok(());
            }
            let payload = data.join("\n");
            data.clear();
            if payload.trim() == "[DONE]" {
                return Ok(());
            }
            let v = serde_json::from_str(&payload).map_err(|e| {
                CodecError::malformed(
                    provider,
                    format!("line {line_no}"),
                    format!("SSE data is not JSON: {e}"),
                )
            })?;
            event(v)
        };
        for (i, line) in text.lines().enumerate() {
            line_no = i + 1;
            if line.trim().is_empty() {
                flush(&mut data, line_no)?;
            } else if let Some(rest) = line.strip_prefix("data:") {
                data.push(rest.strip_prefix(' ').unwrap_or(rest));
            }
        }
        flush(&mut data, line_no)?;
    } else {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v = serde_json::from_str(line).map_err(|e| {
                CodecError::malformed(
                    provider,
                    format!("line {}", i + 1),
                    format!("neither one JSON document nor NDJSON: {e}"),
                )
            })?;
            event(v)?;
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detects_body_sse_and_ndjson() {
        let p = Provider::OpenAiChat;
        assert_eq!(
            StreamCapture::parse(p, " {\"a\": 1}\n").unwrap(),
            StreamCapture::Body(json!({"a": 1}))
        );
        let sse = "event: x\ndata: {\"a\":1}\n\ndata: {\"b\":\ndata: 2}\n\ndata: [DONE]\n";
        assert_eq!(
            StreamCapture::parse(p, sse).unwrap(),
            StreamCapture::Events(vec![json!({"a": 1}), json!({"b": 2})])
        );
        let nd = "{\"a\":1}\n\n{\"b\":2}\n";
        assert_eq!(
            StreamCapture::parse(p, nd).unwrap(),
            StreamCapture::Events(vec![json!({"a": 1}), json!({"b": 2})])
        );
        let err = StreamCapture::parse(p, "{\"a\":1}\nnot json\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(StreamCapture::parse(p, "  ").is_err());
    }
}
