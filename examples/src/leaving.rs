//! A person who leaves at a confirmation: the input ends (Ctrl-D, a closed pipe) or Ctrl-C is
//! pressed while a call waits for their answer. The call is then not denied on their behalf: it
//! is parked as a pending operation ([`Answer::Defer`]), so that the run, kept in the store,
//! waits for a decision made from any terminal and goes on with `--resume`. The agent says which
//! run and how to continue it ([`Leaving::left`] tells it to).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::future::BoxFuture;
use tokio::sync::watch;
use tool_runtime::executor::{Answer, ConfirmationHandler, ConfirmationRequest, ConfirmationRoute};

use crate::input::SharedInput;

/// Whether the person left, shared by the confirmation handler and the agent's loop.
#[derive(Debug, Clone)]
pub struct Leaving {
    input: SharedInput,
    interrupted: watch::Sender<bool>,
    asking: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
}

impl Leaving {
    /// Watches `input` for its end and, from now on, Ctrl-C: pressed while a confirmation is
    /// asked, it parks the call; pressed at any other time, it ends the process (code 130) as
    /// it would without this. Needs a tokio runtime.
    pub fn watch(input: SharedInput) -> Self {
        let (interrupted, _) = watch::channel(false);
        let leaving = Leaving {
            input,
            interrupted,
            asking: Arc::default(),
            closed: Arc::default(),
        };
        let on_signal = leaving.clone();
        tokio::spawn(async move {
            loop {
                if tokio::signal::ctrl_c().await.is_err() {
                    return;
                }
                if on_signal.asking.load(Ordering::Acquire) == 0 {
                    std::process::exit(130);
                }
                on_signal.interrupted.send_replace(true);
            }
        });
        leaving
    }

    /// Whether the person left at a confirmation: its call was parked instead of answered.
    pub fn left(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether they left with Ctrl-C (rather than by ending the input).
    pub fn interrupted(&self) -> bool {
        *self.interrupted.borrow()
    }

    /// `inner` (the terminal's confirmation), except that a person who leaves while it asks, or
    /// who left before, parks the call instead of denying it.
    pub fn confirmer(&self, inner: Arc<dyn ConfirmationHandler>) -> Arc<dyn ConfirmationHandler> {
        Arc::new(DeferOnLeaving {
            inner,
            leaving: self.clone(),
        })
    }
}

struct DeferOnLeaving {
    inner: Arc<dyn ConfirmationHandler>,
    leaving: Leaving,
}

impl ConfirmationHandler for DeferOnLeaving {
    fn confirm<'a>(&'a self, request: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let leaving = &self.leaving;
            if leaving.left() || leaving.input.ended() || leaving.interrupted() {
                leaving.closed.store(true, Ordering::Release);
                return Answer::Defer;
            }
            let mut interrupted = leaving.interrupted.subscribe();
            leaving.asking.fetch_add(1, Ordering::AcqRel);
            let answer = tokio::select! {
                answer = self.inner.confirm(request) => Some(answer),
                _ = interrupted.wait_for(|i| *i) => None,
            };
            leaving.asking.fetch_sub(1, Ordering::AcqRel);
            // At the end of the input the terminal answers no with its own reason; a person who
            // typed `n` and then closed the input at the reason's prompt gave no reason, and
            // keeps their denial.
            let closed = match &answer {
                None => true,
                Some(Answer::No { reason: Some(_) }) => leaving.input.ended(),
                Some(_) => false,
            };
            if closed {
                leaving.closed.store(true, Ordering::Release);
                eprintln!("(left at the confirmation: the call waits as a pending operation)");
                return Answer::Defer;
            }
            answer.unwrap_or(Answer::Defer)
        })
    }

    fn host(&self) -> Option<tool_runtime::host::Host> {
        self.inner.host()
    }

    fn route(&self) -> ConfirmationRoute {
        self.inner.route()
    }
}
