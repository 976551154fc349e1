//! A person's answer to a parked call, whichever way it was asked for (an `elicitation/create`
//! request while the call waits, or an `InputRequiredResult` the client answers with a retry):
//! the answer decides the pending operation through the executor, so it is decided once, by
//! whichever process receives it, and an answer that never comes leaves the operation to a
//! person on the approvals page.

use tool_runtime::executor::{Answer, ConfirmationRoute, Execution};
use tool_runtime::store::PendingState;
use tool_runtime::{CallContext, ErrorCode, ToolError};

use super::{McpServer, rounds};

/// What an answer came to.
pub(crate) enum Decided {
    /// The operation is decided: it ran (or failed to), or it was denied.
    Done(Box<Result<Execution, ToolError>>),
    /// The person's edited arguments were not valid and they may edit again: ask once more,
    /// with this problem.
    AskAgain(String),
    /// No decision: the operation waits for a person.
    Waits,
}

impl McpServer {
    /// Decides `op` by `answer`, the `edits`-th answer to it that came with refused arguments;
    /// the run reports to `waiting`, the call that waits for the result.
    pub(crate) async fn decide(
        &self,
        op: &str,
        answer: Answer,
        edits: u8,
        route: &ConfirmationRoute,
        waiting: &CallContext,
    ) -> Decided {
        let executor = &self.executor;
        match answer {
            Answer::Yes => Decided::Done(Box::new(
                executor.approve_for(op, None, route, waiting).await,
            )),
            Answer::Edit { arguments } => {
                let approved = executor
                    .approve_for(op, Some(arguments.clone()), route, waiting)
                    .await;
                match approved {
                    Err(error) if self.still_pending(op) => {
                        if edits + 1 < rounds::MAX_EDITS {
                            return Decided::AskAgain(format!(
                                "{} (your edit: {arguments})",
                                error.message
                            ));
                        }
                        let reason = format!(
                            "the user's edited arguments were not valid: {}",
                            error.message
                        );
                        Decided::Done(Box::new(self.deny(op, reason, route.clone()).await))
                    }
                    other => Decided::Done(Box::new(other)),
                }
            }
            Answer::No { reason } => {
                let reason = reason.unwrap_or_else(|| "the user declined this call".to_owned());
                Decided::Done(Box::new(self.deny(op, reason, route.clone()).await))
            }
            Answer::Timeout | Answer::Defer => Decided::Waits,
        }
    }

    pub(crate) fn still_pending(&self, op: &str) -> bool {
        matches!(
            self.executor.pending_operation(op),
            Ok(Some(op)) if op.state == PendingState::Pending
        )
    }

    /// Denies on the blocking pool: the store is called on the calling thread.
    pub(crate) async fn deny(
        &self,
        op: &str,
        reason: String,
        route: ConfirmationRoute,
    ) -> Result<Execution, ToolError> {
        let (executor, op) = (self.executor.clone(), op.to_owned());
        tokio::task::spawn_blocking(move || executor.deny_via(&op, Some(reason), &route))
            .await
            .unwrap_or_else(|e| {
                Err(ToolError::new(
                    ErrorCode::INTERNAL,
                    format!("denying the operation failed: {e}"),
                ))
            })
    }
}
