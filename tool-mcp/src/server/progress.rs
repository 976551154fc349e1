//! What a tool tells the MCP client while it runs, in the order it told it, all before the
//! call's result: its progress reports (`notifications/progress`, when the `tools/call`'s `_meta`
//! carries a `progressToken`) and its log entries (`notifications/message`, at or above the
//! level the client set, see [`super::host`]).

// `notifications/message` is deprecated by rmcp for the 2026-07-28 revision; clients of the
// earlier ones take it.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;
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
    notes: mpsc::UnboundedSender<Note>,
    reporter: Option<Reporter>,
    task: tokio::task::JoinHandle<()>,
}

impl Forward {
    /// Forwards to `peer`, progress reports with `token` when the client sent one: the
    /// notifications queue here and one task sends them in order, so that a tool never waits on
    /// the client.
    pub(crate) fn start(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Note>();
        let progress_token = token.clone();
        let task = tokio::spawn(async move {
            while let Some(note) = rx.recv().await {
                let sent = match note {
                    Note::Progress(report) => {
                        let Some(token) = progress_token.clone() else {
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
        });
        let reporter = token.map(|_| {
            let tx = tx.clone();
            Reporter::new(move |report: Progress| {
                let _ = tx.send(Note::Progress(report));
            })
        });
        Forward {
            notes: tx,
            reporter,
            task,
        }
    }

    /// The progress sink for the call's context, when the client asked for progress.
    pub(crate) fn reporter(&self) -> Option<Reporter> {
        self.reporter.clone()
    }

    /// Where the call's other notifications queue.
    pub(crate) fn notes(&self) -> mpsc::UnboundedSender<Note> {
        self.notes.clone()
    }

    /// Waits (a bounded time) until the notifications queued so far are sent, so that they
    /// precede the result. The queue closes when the last sender goes, with the call's context.
    pub(crate) async fn finish(self) {
        let Forward {
            notes,
            reporter,
            task,
        } = self;
        drop((notes, reporter));
        let _ = tokio::time::timeout(DRAIN, task).await;
    }
}
