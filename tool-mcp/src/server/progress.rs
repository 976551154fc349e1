//! What a tool tells the MCP client while it runs, in the order it told it, all before the
//! call's result: its progress reports (`notifications/progress`, when the `tools/call`'s `_meta`
//! carries a `progressToken`) and its log entries (`notifications/message`, at or above the
//! level the client set, see [`super::host`]).

// `notifications/message` is deprecated by rmcp for the 2026-07-28 revision; clients of the
// earlier ones take it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tool_runtime::progress::{Progress, Reporter};

/// How long the result of a call waits for its last notifications to reach the transport.
const DRAIN: Duration = Duration::from_secs(1);

/// One notification on its way.
pub(crate) enum Note {
    Progress(Progress),
    Log(LoggingMessageNotificationParam),
}

/// The notifications of one call on their way to the client.
pub(crate) struct Forward {
    notes: Notes,
    reporter: Option<Reporter>,
}

/// Where the notifications of one call queue, in the order they were sent. The task that sends
/// them to the client starts with the first: most calls send none, and pay for no task.
#[derive(Clone)]
pub(crate) struct Notes(Arc<Mutex<Queue>>);

enum Queue {
    /// Nothing sent yet: what the sending task needs once something is.
    Idle {
        peer: Peer<RoleServer>,
        token: Option<ProgressToken>,
        runtime: Handle,
    },
    /// The sending task runs; it ends when the queue closes, with the last [`Notes`].
    Sending {
        queue: mpsc::UnboundedSender<Note>,
        task: Option<JoinHandle<()>>,
    },
    /// Nothing can be sent: no runtime to send from, or the client is gone.
    Closed,
}

impl Notes {
    /// Queues `note` (dropped when the client is gone).
    pub(crate) fn send(&self, note: Note) {
        let mut queue = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *queue = match std::mem::replace(&mut *queue, Queue::Closed) {
            Queue::Idle {
                peer,
                token,
                runtime,
            } => {
                let (tx, rx) = mpsc::unbounded_channel();
                Queue::Sending {
                    queue: tx,
                    task: Some(runtime.spawn(send_all(rx, peer, token))),
                }
            }
            started => started,
        };
        if let Queue::Sending { queue, .. } = &*queue {
            let _ = queue.send(note);
        }
    }

    /// The sending task, when something was sent, for the result to wait on.
    fn task(&self) -> Option<JoinHandle<()>> {
        match &mut *self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Queue::Sending { task, .. } => task.take(),
            Queue::Idle { .. } | Queue::Closed => None,
        }
    }
}

/// Sends the notifications of `queue` in order until it closes or the client is gone.
async fn send_all(
    mut queue: mpsc::UnboundedReceiver<Note>,
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
) {
    while let Some(note) = queue.recv().await {
        let sent = match note {
            Note::Progress(report) => {
                let Some(token) = token.clone() else {
                    continue;
                };
                let mut param = ProgressNotificationParam::new(token, report.progress);
                param.total = report.total;
                param.message = report.message;
                peer.notify_progress(param).await
            }
            Note::Log(param) => peer.notify_logging_message(param).await,
        };
        if sent.is_err() {
            // the client is gone: nobody is left to tell
            break;
        }
    }
}

impl Forward {
    /// Forwards to `peer`, progress reports with `token` when the client sent one: the
    /// notifications queue here and one task sends them in order, so that a tool never waits on
    /// the client.
    pub(crate) fn start(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        let queue = match Handle::try_current() {
            Ok(runtime) => Queue::Idle {
                peer,
                token: token.clone(),
                runtime,
            },
            Err(_) => Queue::Closed,
        };
        let notes = Notes(Arc::new(Mutex::new(queue)));
        let reporter = token.map(|_| {
            let notes = notes.clone();
            Reporter::new(move |report: Progress| notes.send(Note::Progress(report)))
        });
        Forward { notes, reporter }
    }

    /// The progress sink for the call's context, when the client asked for progress.
    pub(crate) fn reporter(&self) -> Option<Reporter> {
        self.reporter.clone()
    }

    /// Where the call's other notifications queue.
    pub(crate) fn notes(&self) -> Notes {
        self.notes.clone()
    }

    /// Waits (a bounded time) until the notifications queued so far are sent, so that they
    /// precede the result. The queue closes when the last [`Notes`] goes, with the call's
    /// context.
    pub(crate) async fn finish(self) {
        let Forward { notes, reporter } = self;
        let task = notes.task();
        drop((notes, reporter));
        if let Some(task) = task {
            let _ = tokio::time::timeout(DRAIN, task).await;
        }
    }
}
