//! One reader of standard input, shared by an interactive prompt and the terminal confirmation.
//!
//! A REPL that reads `std::io::stdin()` while [`TerminalConfirmer::stdio`] holds its own buffered
//! `tokio::io::stdin()` has two readers on one stream: a confirmation that times out leaves its
//! blocking read in flight, and the user's next question is then swallowed and taken as the answer
//! to the next confirmation. Here a single thread reads the lines and hands each, whole, to
//! whoever asks next: the prompt ([`SharedInput::next_line`]) or a confirmation (through
//! [`SharedInput::reader`], an [`AsyncBufRead`] for [`TerminalConfirmer::new`]). A line is taken
//! off the queue only by a read that completes, so a confirmation that gives up loses nothing.
//!
//! [`TerminalConfirmer::stdio`]: tool_runtime::executor::TerminalConfirmer::stdio
//! [`TerminalConfirmer::new`]: tool_runtime::executor::TerminalConfirmer::new

use std::io::BufRead;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// The lines of one input, in order, for several consumers taking turns.
#[derive(Clone)]
pub struct SharedInput {
    lines: Arc<Mutex<mpsc::UnboundedReceiver<Vec<u8>>>>,
    /// Set once a reader was told the input has ended.
    ended: Arc<AtomicBool>,
}

impl std::fmt::Debug for SharedInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInput").finish_non_exhaustive()
    }
}

impl SharedInput {
    /// Standard input, read line by line on a dedicated thread (a blocking read never holds up
    /// the runtime, and the thread ends with the input).
    pub fn stdin() -> Self {
        let (input, tx) = Self::channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut lock = stdin.lock();
            loop {
                let mut line = Vec::new();
                match lock.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        input
    }

    /// An input fed by hand: each sent item is one line (its `\n` included or not); dropping
    /// every sender ends the input.
    pub fn channel() -> (Self, mpsc::UnboundedSender<Vec<u8>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            SharedInput {
                lines: Arc::new(Mutex::new(rx)),
                ended: Arc::default(),
            },
            tx,
        )
    }

    /// The next line without its line ending, or `None` at the end of the input.
    pub async fn next_line(&self) -> Option<String> {
        let line = std::future::poll_fn(|cx| self.poll_line(cx)).await?;
        let text = String::from_utf8_lossy(&line);
        Some(text.trim_end_matches(['\r', '\n']).to_owned())
    }

    /// A buffered reader over the same lines (for [`TerminalConfirmer::new`]).
    ///
    /// [`TerminalConfirmer::new`]: tool_runtime::executor::TerminalConfirmer::new
    pub fn reader(&self) -> SharedReader {
        SharedReader {
            input: self.clone(),
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Whether a reader (the prompt or a confirmation) met the end of the input: every line
    /// was taken and nothing more will come.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn poll_line(&self, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        let mut rx = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let line = rx.poll_recv(cx);
        if let Poll::Ready(None) = line {
            self.ended.store(true, Ordering::Release);
        }
        line
    }
}

/// A reader of a [`SharedInput`]'s lines. It takes one whole line off the queue only when asked
/// for bytes and it has none buffered.
pub struct SharedReader {
    input: SharedInput,
    buf: Vec<u8>,
    pos: usize,
}

impl std::fmt::Debug for SharedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedReader")
            .field("buffered", &(self.buf.len() - self.pos))
            .finish()
    }
}

impl AsyncBufRead for SharedReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.pos >= this.buf.len() {
            match this.input.poll_line(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(line)) => {
                    this.buf = line;
                    this.pos = 0;
                }
                // The end of the input: an empty buffer.
                Poll::Ready(None) => {
                    this.buf.clear();
                    this.pos = 0;
                }
            }
        }
        Poll::Ready(Ok(&this.buf[this.pos..]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.buf.len());
    }
}

impl AsyncRead for SharedReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let available = match self.as_mut().poll_fill_buf(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Ready(Ok(bytes)) => {
                let n = bytes.len().min(out.remaining());
                out.put_slice(&bytes[..n]);
                n
            }
        };
        self.consume(available);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;

    #[tokio::test]
    async fn the_prompt_and_a_reader_take_turns_on_one_input() {
        let (input, tx) = SharedInput::channel();
        tx.send(b"first question\n".to_vec()).unwrap();
        tx.send(b"y\r\n".to_vec()).unwrap();
        tx.send(b"second question\n".to_vec()).unwrap();
        drop(tx);
        assert_eq!(input.next_line().await.as_deref(), Some("first question"));
        let mut reader = input.reader();
        let mut answer = String::new();
        reader.read_line(&mut answer).await.unwrap();
        assert_eq!(answer, "y\r\n");
        assert_eq!(input.next_line().await.as_deref(), Some("second question"));
        assert!(!input.ended(), "every line was read, the end not yet");
        assert_eq!(input.next_line().await, None);
        assert!(input.ended());
        let mut rest = String::new();
        assert_eq!(
            reader.read_line(&mut rest).await.unwrap(),
            0,
            "end of input"
        );
    }

    #[tokio::test]
    async fn a_read_that_gives_up_leaves_the_next_line_for_the_prompt() {
        let (input, tx) = SharedInput::channel();
        let mut reader = input.reader();
        let mut answer = String::new();
        // Nothing typed yet: the confirmation's read is abandoned (as on its timeout).
        let gave_up = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            reader.read_line(&mut answer),
        )
        .await;
        assert!(gave_up.is_err(), "no line was available");
        tx.send(b"next question\n".to_vec()).unwrap();
        assert_eq!(input.next_line().await.as_deref(), Some("next question"));
        assert!(answer.is_empty());
    }
}
