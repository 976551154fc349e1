//! Standard input and output as the server's byte streams.
//!
//! A host that starts a server gives it pipes. Those are read and written by the runtime's
//! reactor, like a socket: tokio's `stdin` and `stdout` make each read and each write on a
//! thread of the blocking pool instead, two more thread switches for every message each way.
//! Anything else (a file, a terminal, a socket the pipe API refuses) is served through tokio's.

use tokio::io::{AsyncRead, AsyncWrite};

/// The server's input.
pub(super) type Input = Box<dyn AsyncRead + Unpin + Send>;
/// The server's output.
pub(super) type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// Standard input and output, each through the reactor when it is a pipe.
#[cfg(unix)]
pub(super) fn streams() -> (Input, Output) {
    use tokio::net::unix::pipe;

    let input: Input =
        match pipe_end(&std::io::stdin()).and_then(|f| pipe::Receiver::from_file(f).ok()) {
            Some(r) => Box::new(r),
            None => Box::new(tokio::io::stdin()),
        };
    let output: Output =
        match pipe_end(&std::io::stdout()).and_then(|f| pipe::Sender::from_file(f).ok()) {
            Some(w) => Box::new(w),
            None => Box::new(tokio::io::stdout()),
        };
    (input, output)
}

/// A file of its own for a standard stream that is not a terminal (the pipe API checks that it
/// is a pipe, and makes it non-blocking).
#[cfg(unix)]
fn pipe_end(stream: &(impl std::os::fd::AsFd + std::io::IsTerminal)) -> Option<std::fs::File> {
    if stream.is_terminal() {
        return None;
    }
    stream
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::fs::File::from)
}

/// Standard input and output through tokio's.
#[cfg(not(unix))]
pub(super) fn streams() -> (Input, Output) {
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}
