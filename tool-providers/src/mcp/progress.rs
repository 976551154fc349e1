//! A tool's progress reports to the MCP client that asked for them: a `tools/call` whose `_meta`
//! carries a `progressToken` gets each report as `notifications/progress` with that token, in
//! the order the tool made them, all before the call's result.

use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;
use tool_runtime::progress::{Progress, Reporter};

/// How long the result of a call waits for its last reports to reach the transport.
const DRAIN: Duration = Duration::from_secs(1);

/// The reports of one call on their way to the client.
pub(crate) struct Forward {
    reporter: Reporter,
    task: tokio::task::JoinHandle<()>,
}

impl Forward {
    /// Forwards to `peer` with `token`: the reports queue here and one task sends them in order,
    /// so that a tool never waits on the client.
    pub(crate) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Progress>();
        let task = tokio::spawn(async move {
            while let Some(report) = rx.recv().await {
                let mut param = ProgressNotificationParam::new(token.clone(), report.progress);
                param.total = report.total;
                param.message = report.message;
                if peer.notify_progress(param).await.is_err() {
                    // the client is gone: nobody is left to tell
                    break;
                }
            }
        });
        let reporter = Reporter::new(move |report: Progress| {
            let _ = tx.send(report);
        });
        Forward { reporter, task }
    }

    /// The sink for the call's context.
    pub(crate) fn reporter(&self) -> Reporter {
        self.reporter.clone()
    }

    /// Waits (a bounded time) until the reports made so far are sent, so that they precede the
    /// result. The queue closes when the last clone of the reporter goes, with the call's context.
    pub(crate) async fn finish(self) {
        let Forward { reporter, task } = self;
        drop(reporter);
        let _ = tokio::time::timeout(DRAIN, task).await;
    }
}
