//! Incremental stream framing: server-sent events (OpenAI, Anthropic, Gemini) and
//! newline-delimited JSON (Ollama). Bytes go in as they arrive, whole events come out; a frame
//! split across network chunks (even inside a UTF-8 character) is reassembled.

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any (Anthropic names every event; OpenAI sends none).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Splits a byte stream into lines, keeping an incomplete last line for the next chunk.
#[derive(Debug, Default)]
struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    fn push(&mut self, chunk: &[u8], mut on_line: impl FnMut(&str)) {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            on_line(&String::from_utf8_lossy(line));
            start = end + 1;
        }
        self.buf.drain(..start);
    }

    /// Bytes of a line not ended yet.
    fn pending(&self) -> usize {
        self.buf.len()
    }

    fn finish(&mut self, on_line: impl FnMut(&str)) {
        if !self.buf.is_empty() {
            self.push(b"\n", on_line);
        }
    }
}

/// The server-sent-events decoder (WHATWG framing: `data:`/`event:` fields, blank line ends an
/// event, `:` comments ignored).
#[derive(Debug, Default)]
pub struct SseDecoder {
    lines: Lines,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let (event, data) = (&mut self.event, &mut self.data);
        self.lines
            .push(chunk, |line| Self::line(line, event, data, &mut out));
        out
    }

    /// Bytes held for an event not complete yet: its data lines so far and a line not ended.
    pub fn buffered(&self) -> usize {
        self.lines.pending() + self.data.iter().map(String::len).sum::<usize>()
    }

    /// Ends the stream; returns an event left without its closing blank line.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let (event, data) = (&mut self.event, &mut self.data);
        self.lines
            .finish(|line| Self::line(line, event, data, &mut out));
        Self::line("", event, data, &mut out);
        out
    }

    fn line(
        line: &str,
        event: &mut Option<String>,
        data: &mut Vec<String>,
        out: &mut Vec<SseEvent>,
    ) {
        if line.is_empty() {
            if !data.is_empty() {
                out.push(SseEvent {
                    event: event.take(),
                    data: std::mem::take(data).join("\n"),
                });
            }
            *event = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => data.push(value.to_owned()),
            "event" => *event = Some(value.to_owned()),
            _ => {} // id, retry: not used by any provider's API
        }
    }
}

/// The newline-delimited JSON decoder: one JSON document per non-empty line.
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    lines: Lines,
}

impl NdjsonDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the complete lines they end (blank lines skipped).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        self.lines.push(chunk, |l| {
            if !l.trim().is_empty() {
                out.push(l.to_owned())
            }
        });
        out
    }

    /// Bytes held for a line not ended yet.
    pub fn buffered(&self) -> usize {
        self.lines.pending()
    }

    /// Ends the stream; returns a last line that had no newline.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        self.lines.finish(|l| {
            if !l.trim().is_empty() {
                out.push(l.to_owned())
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_survive_any_chunking() {
        let wire = "event: message_start\ndata: {\"a\":1}\n\n: keep-alive\r\ndata: {\"b\":\r\ndata: \"é\"}\r\n\r\ndata: [DONE]\n\n";
        let expected = vec![
            SseEvent {
                event: Some("message_start".into()),
                data: "{\"a\":1}".into(),
            },
            SseEvent {
                event: None,
                data: "{\"b\":\n\"é\"}".into(),
            },
            SseEvent {
                event: None,
                data: "[DONE]".into(),
            },
        ];
        let bytes = wire.as_bytes();
        for size in 1..bytes.len() {
            let mut d = SseDecoder::new();
            let mut got = Vec::new();
            for chunk in bytes.chunks(size) {
                got.extend(d.push(chunk));
            }
            got.extend(d.finish());
            assert_eq!(got, expected, "chunk size {size}");
        }
    }

    #[test]
    fn sse_flushes_an_unterminated_last_event() {
        let mut d = SseDecoder::new();
        assert!(d.push(b"data: {\"x\":1}").is_empty());
        assert_eq!(
            d.finish(),
            vec![SseEvent {
                event: None,
                data: "{\"x\":1}".into()
            }]
        );
    }

    #[test]
    fn ndjson_lines_survive_any_chunking_and_a_missing_final_newline() {
        let wire = "{\"a\":1}\n\n{\"b\":\"ü\"}\r\n{\"c\":3}";
        let bytes = wire.as_bytes();
        for size in 1..bytes.len() {
            let mut d = NdjsonDecoder::new();
            let mut got = Vec::new();
            for chunk in bytes.chunks(size) {
                got.extend(d.push(chunk));
            }
            got.extend(d.finish());
            assert_eq!(
                got,
                vec!["{\"a\":1}", "{\"b\":\"ü\"}", "{\"c\":3}"],
                "chunk size {size}"
            );
        }
    }
}
