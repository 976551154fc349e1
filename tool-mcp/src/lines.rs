//! Newline-delimited JSON-RPC over a byte stream, the framing of MCP's stdio transport: the
//! reading, writing and decoding that the server's door and the client's child-process
//! transport share.

use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio_util::codec::Decoder;

/// One line as read.
pub(crate) enum Line {
    /// A complete line (without its newline).
    Whole,
    /// A line longer than the bound; its bytes were skipped up to its newline. How many bytes.
    TooLong(usize),
    /// The input ended.
    End,
}

/// Reads up to the end of the next line, keeping at most `max` of its bytes in `buf`: a longer
/// line is consumed to its end without being kept. `seen` counts the line's bytes so far.
///
/// Safe to cancel: rmcp polls its transport's `receive` beside other work and drops it when
/// that is ready first, so everything read stays in `buf` and `seen`, and the next call goes
/// on with the same line. The caller clears `buf` once it has used the line.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    seen: &mut usize,
    max: usize,
) -> std::io::Result<Line> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match std::mem::take(seen) {
                0 => Line::End,
                n if n > max => Line::TooLong(n),
                _ => Line::Whole,
            });
        }
        let (chunk, newline) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        *seen += chunk.len();
        if *seen <= max {
            buf.extend_from_slice(chunk);
        } else {
            buf.clear();
        }
        let used = chunk.len() + usize::from(newline);
        reader.consume(used);
        if newline {
            return Ok(match std::mem::take(seen) {
                n if n > max => Line::TooLong(n),
                _ => Line::Whole,
            });
        }
    }
}

/// The lines of a byte stream, at most `max` bytes of each kept.
///
/// Safe to cancel: rmcp polls its transport's `receive` beside other work and drops it when
/// that is ready first, so a line read in part stays here and the next read goes on with it.
pub(crate) struct Lines<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// How many bytes of the line were read (more than `line` holds once past `max`).
    seen: usize,
    max: usize,
    /// Whether `line` holds a line already handed out, to drop when the next is read.
    handed_out: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        Lines {
            reader: BufReader::new(reader),
            line: Vec::new(),
            seen: 0,
            max,
            handed_out: false,
        }
    }

    /// The bound on a line's length.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Reads the next line; a whole one's text is then [`Lines::text`].
    pub(crate) async fn next(&mut self) -> std::io::Result<Line> {
        if std::mem::take(&mut self.handed_out) {
            self.line.clear();
        }
        let line = read_line(&mut self.reader, &mut self.line, &mut self.seen, self.max).await?;
        self.handed_out = true;
        Ok(line)
    }

    /// The line last read whole, without its newline or a carriage return before it.
    pub(crate) fn text(&self) -> &[u8] {
        self.line.strip_suffix(b"\r").unwrap_or(&self.line)
    }
}

/// One message as a line.
pub(crate) fn encode(message: &impl Serialize) -> std::io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    Ok(line)
}

/// Writes `line` whole under the writer's lock, so that no other line lands inside it; an
/// error once the writer is closed (`None`).
pub(crate) async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<Option<W>>,
    line: &[u8],
) -> std::io::Result<()> {
    let mut writer = writer.lock().await;
    let Some(writer) = writer.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the stream is closed",
        ));
    };
    writer.write_all(line).await?;
    writer.flush().await
}

/// The message on one line (without its newline) as rmcp's own transport decodes it: `None`
/// for a notification rmcp ignores.
pub(crate) fn decode<T: DeserializeOwned>(
    codec: &mut JsonRpcMessageCodec<T>,
    text: &[u8],
) -> Result<Option<T>, JsonRpcMessageCodecError> {
    let mut framed = bytes::BytesMut::with_capacity(text.len() + 1);
    framed.extend_from_slice(text);
    framed.extend_from_slice(b"\n");
    codec.decode(&mut framed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    #[tokio::test]
    async fn a_line_past_the_bound_is_skipped_to_its_end_and_the_next_is_read() {
        let input = format!("{}\nsecond\n", "x".repeat(100));
        let mut reader = BufReader::with_capacity(16, input.as_bytes());
        let (mut buf, mut seen) = (Vec::new(), 0);
        assert!(matches!(
            read_line(&mut reader, &mut buf, &mut seen, 50)
                .await
                .unwrap(),
            Line::TooLong(100)
        ));
        assert!(buf.is_empty(), "nothing of it kept");
        assert!(matches!(
            read_line(&mut reader, &mut buf, &mut seen, 50)
                .await
                .unwrap(),
            Line::Whole
        ));
        assert_eq!(buf, b"second");
        buf.clear();
        assert!(matches!(
            read_line(&mut reader, &mut buf, &mut seen, 50)
                .await
                .unwrap(),
            Line::End
        ));
    }
}
