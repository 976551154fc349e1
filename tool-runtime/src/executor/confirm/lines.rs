//! Lines of a blocking input (standard input), read by a thread of their own and handed to
//! whoever asks next.
//!
//! A blocking read cannot be cancelled. If a task waited on it (as `tokio::io::stdin` does, on
//! the runtime's blocking pool), a prompt that timed out would leave the read running: the
//! runtime's shutdown would wait for it, so the process would not exit until Enter was pressed,
//! and the line finally typed would go to the abandoned read instead of the next prompt. Here
//! prompts wait on a channel, which they can stop waiting on without losing anything: a line
//! read for a prompt that gave up stays queued for the next reader, and the thread, which is not
//! part of any runtime, does not keep the process alive.
//!
//! The thread reads only when someone is waiting for a line, so that an application reading
//! standard input itself between confirmations (a REPL) still gets its lines. The exception is a
//! read left in flight by a prompt that timed out; an application that reads standard input
//! should therefore read it through [`read_stdin_line`] too, the same reader.

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, mpsc as std_mpsc};

use tokio::sync::{Mutex, mpsc};

/// A blocking line source served by its own thread.
pub(crate) struct LineFeed {
    /// Asks the thread for one more line.
    want: std_mpsc::Sender<()>,
    /// Lines read, in order; closed at end of input.
    lines: Mutex<mpsc::UnboundedReceiver<String>>,
    /// Whether the thread is reading (or about to read) a line nobody has taken yet. Guarded by
    /// a mutex that the thread also holds while it queues a line, so that a reader never asks
    /// for a second line while the first is being delivered.
    in_flight: Arc<StdMutex<bool>>,
    /// Set when a prompt reading from this feed gave up: lines queued before the next prompt is
    /// shown answered a question nobody is asking any more.
    abandoned: AtomicBool,
}

impl LineFeed {
    /// Starts the thread; `open` makes the reader on it (standard input's lock is not `Send`).
    pub(crate) fn spawn<R: BufRead>(
        name: &str,
        open: impl FnOnce() -> R + Send + 'static,
    ) -> LineFeed {
        let (want, wanted) = std_mpsc::channel::<()>();
        let (tx, rx) = mpsc::unbounded_channel();
        let in_flight = Arc::new(StdMutex::new(false));
        let flag = in_flight.clone();
        let spawned = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let mut reader = open();
                for () in wanted {
                    let mut line = String::new();
                    let read = loop {
                        match reader.read_line(&mut line) {
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            other => break other,
                        }
                    };
                    let mut in_flight = flag.lock().unwrap_or_else(|p| p.into_inner());
                    *in_flight = false;
                    match read {
                        // end of input (or an unreadable input): dropping `tx` closes the channel
                        Ok(0) | Err(_) => return,
                        Ok(_) => {
                            if tx.send(line).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            // without the thread the channel is closed: prompts see closed input, a denial
            tracing::error!(error = %e, "cannot start the thread reading {name}");
        }
        LineFeed {
            want,
            lines: Mutex::new(rx),
            in_flight,
            abandoned: AtomicBool::new(false),
        }
    }

    /// The next line (with its line ending), or `None` at end of input. Cancel-safe: a caller
    /// that stops waiting loses nothing, and the line goes to the next caller.
    pub(crate) async fn next_line(&self) -> Option<String> {
        let mut lines = self.lines.lock().await;
        {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            match lines.try_recv() {
                Ok(line) => return Some(line),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => {}
            }
            if !*in_flight {
                *in_flight = true;
                if self.want.send(()).is_err() {
                    // the thread ended (end of input): the channel is closed or about to be
                    *in_flight = false;
                }
            }
        }
        lines.recv().await
    }

    /// Notes that a prompt gave up waiting.
    pub(crate) fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
    }

    /// Before a new question is shown: after a prompt gave up, drops the lines that were typed
    /// for it (they are queued already, so they came before this question). Returns how many.
    pub(crate) async fn discard_abandoned(&self) -> usize {
        if !self.abandoned.swap(false, Ordering::SeqCst) {
            return 0;
        }
        let mut lines = self.lines.lock().await;
        let mut dropped = 0;
        while lines.try_recv().is_ok() {
            dropped += 1;
        }
        dropped
    }
}

/// The feed of standard input, shared by the whole process; its thread starts on first use.
pub(crate) fn stdin() -> &'static LineFeed {
    static STDIN: OnceLock<LineFeed> = OnceLock::new();
    STDIN.get_or_init(|| LineFeed::spawn("tool-runtime-stdin", || std::io::stdin().lock()))
}

/// Reads one line of standard input (without its line ending; `None` at end of input) through
/// the reader the terminal confirmation uses ([`super::TerminalConfirmer::stdio`]).
///
/// An application that reads its own input from standard input and also confirms in the terminal
/// should read through this function: a line typed after a confirmation timed out then reaches
/// whoever asks next, instead of being consumed by the abandoned read.
pub async fn read_stdin_line() -> Option<String> {
    stdin()
        .next_line()
        .await
        .map(|l| l.trim_end_matches(['\r', '\n']).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Duration;

    /// A blocking reader fed chunk by chunk from the test, like a person typing.
    struct Typed(std_mpsc::Receiver<Vec<u8>>, Vec<u8>);

    impl Read for Typed {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1.is_empty() {
                match self.0.recv() {
                    Ok(chunk) => self.1 = chunk,
                    Err(_) => return Ok(0),
                }
            }
            let n = buf.len().min(self.1.len());
            buf[..n].copy_from_slice(&self.1[..n]);
            self.1.drain(..n);
            Ok(n)
        }
    }

    fn typed() -> (std_mpsc::Sender<Vec<u8>>, LineFeed) {
        let (keys, rx) = std_mpsc::channel();
        let feed = LineFeed::spawn("test-lines", move || {
            std::io::BufReader::new(Typed(rx, Vec::new()))
        });
        (keys, feed)
    }

    #[tokio::test]
    async fn a_reader_that_gives_up_loses_no_line_and_the_next_reader_gets_it() {
        let (keys, feed) = typed();
        let gave_up = tokio::time::timeout(Duration::from_millis(20), feed.next_line()).await;
        assert!(gave_up.is_err(), "nothing was typed yet");
        keys.send(b"first\n".to_vec()).unwrap();
        assert_eq!(feed.next_line().await.as_deref(), Some("first\n"));
        keys.send(b"second\nthird\n".to_vec()).unwrap();
        assert_eq!(feed.next_line().await.as_deref(), Some("second\n"));
        assert_eq!(feed.next_line().await.as_deref(), Some("third\n"));
        drop(keys);
        assert_eq!(feed.next_line().await, None, "end of input");
        assert_eq!(feed.next_line().await, None, "and it stays ended");
    }

    #[tokio::test]
    async fn lines_typed_for_an_abandoned_prompt_are_dropped_before_the_next_question() {
        let (keys, feed) = typed();
        let gave_up = tokio::time::timeout(Duration::from_millis(20), feed.next_line()).await;
        assert!(gave_up.is_err());
        feed.abandon();
        // the late answer arrives while no question is shown
        keys.send(b"y\n".to_vec()).unwrap();
        while feed.lines.lock().await.is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(feed.discard_abandoned().await, 1);
        // nothing is dropped twice, and the next answer is the next question's
        assert_eq!(feed.discard_abandoned().await, 0);
        keys.send(b"n\n".to_vec()).unwrap();
        assert_eq!(feed.next_line().await.as_deref(), Some("n\n"));
    }

    #[tokio::test]
    async fn the_thread_reads_only_while_someone_waits() {
        let (keys, feed) = typed();
        keys.send(b"one\ntwo\n".to_vec()).unwrap();
        assert_eq!(feed.next_line().await.as_deref(), Some("one\n"));
        // the thread was asked for one line: the second stays with the reader's buffer
        // until asked for, so an application reading the input itself would still get it
        assert!(feed.lines.lock().await.is_empty());
        assert!(!*feed.in_flight.lock().unwrap());
        assert_eq!(feed.next_line().await.as_deref(), Some("two\n"));
    }
}
