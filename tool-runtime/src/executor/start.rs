//! The start mark of a call whose context asks for it
//! ([`CallContext::record_start`](crate::tool::CallContext::record_start)): written and awaited
//! before the body runs, so that a mark missing after a crash means the body never ran.

use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::store::CallStart;
use crate::tool::CallContext;

use super::Executor;
use super::audit::now_ms;

impl Executor {
    /// Marks the call started in the store. A store that cannot take the mark refuses the call:
    /// run unmarked, a crash would leave it looking as if it had never run.
    pub(super) async fn mark_started(
        &self,
        def: &ToolDefinition,
        cx: &CallContext,
    ) -> Result<(), ToolError> {
        let run_id = cx.correlation_id.to_string();
        let start = CallStart {
            call_id: cx.call_id.to_string(),
            tool: def.name.to_string(),
            started_ms: now_ms(),
        };
        self.with_store("mark_started", move |store| {
            store.mark_started(&run_id, &start)
        })
        .await
        .map_err(|e| {
            let mut error = ToolError::from(e);
            error.message = format!(
                "{} was not run: the store could not record that it started, which a resumed run \
                 needs to know ({})",
                def.name, error.message
            );
            error
        })
    }
}
