//! Undo: a reversible tool declares how its effect is reverted, as a call of another tool planned
//! from the original arguments and result. The executor journals that call in the store when the
//! original succeeds, and [`crate::executor::Executor::undo`] runs it once.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;

use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::{Arguments, ToolCall};
use crate::id::SharedId;
use crate::records::{Decider, Decision, Execution, Outcome, Undo};
use crate::store::{InverseCall, JournalEntry, new_undo_id};
use crate::tool::{CallContext, Tool};

use super::audit::now_ms;
use super::record::{Trail, span};
use super::{Executor, policy};

impl InverseCall {
    /// A call of the tool `T` with `arguments`: the inverse named by its type, so a renamed or
    /// removed tool is a compile error. The arguments are checked against `T`'s schema when the
    /// undo runs, like any call's; arguments that do not serialize (a map with non-string keys)
    /// become `null`, which that check refuses.
    pub fn to<T: Tool>(arguments: impl Serialize) -> InverseCall {
        InverseCall {
            tool: T::NAME.to_owned(),
            arguments: serde_json::to_value(arguments).unwrap_or(Value::Null),
        }
    }
}

/// Plans the inverse of a successful call from its arguments and its result.
pub type UndoPlanner = Arc<dyn Fn(&Value, &Value) -> Option<InverseCall> + Send + Sync>;

/// A typed tool that knows how to revert itself. Register it with
/// [`crate::executor::ExecutorBuilder::reversible`].
///
/// ```ignore
/// impl Reversible for CreateNote {
///     fn inverse(_args: &CreateNoteArgs, output: &Value) -> Option<InverseCall> {
///         Some(InverseCall::to::<DeleteNote>(json!({"id": output["id"]})))
///     }
/// }
/// ```
pub trait Reversible: Tool {
    /// The call that reverts this one, or `None` when this particular call cannot be reverted.
    fn inverse(args: &Self::Args, output: &Value) -> Option<InverseCall>;
}

pub(crate) fn planner_of<T: Reversible>() -> UndoPlanner {
    Arc::new(|args: &Value, output: &Value| {
        let args: T::Args = serde_json::from_value(args.clone()).ok()?;
        T::inverse(&args, output)
    })
}

impl Executor {
    /// Reverts a reversible call from its journal entry, once. The inverse call runs without a
    /// confirmation (a person asked for the undo) but under the allow and deny lists, with the
    /// timeout and audit of any call; its call id is `<call_id>:undo`.
    ///
    /// `id` is the call's [`Execution::undo_id`], or its provider call id when that names one
    /// call: providers reuse call ids, so when several journaled calls share it and more than one
    /// can still be undone, the undo is refused as `AMBIGUOUS`, listing their undo ids.
    pub async fn undo(&self, id: &str, cx: CallContext) -> Execution {
        let started = Instant::now();
        let fail = |call_id: &str, tool: &str, error: ToolError| {
            Execution::new(
                SharedId::from(format!("{call_id}:undo")),
                tool.to_owned(),
                Outcome::error_from(error),
            )
        };
        let entry = match self.journal_entry(id).await {
            Ok(e) => e,
            Err(error) => return fail(id, "", error),
        };
        let undo_id = SharedId::from(format!("{}:undo", entry.call_id));
        let cx = self.context(&undo_id, cx);
        let fail = |tool: &str, error: ToolError| fail(&entry.call_id, tool, error);
        let inverse = entry.inverse.clone();
        let span = span(&inverse.tool, &cx);
        async {
            let mut trail = Trail::new(started);
            trail.decision = Decision::Undo;
            trail.by = Decider::User;
            let tools = self.toolset();
            let category = tools
                .get(&inverse.tool)
                .map(|d| d.safety)
                .unwrap_or_default();
            if let Some(def) = tools.get(&inverse.tool) {
                trail.note_arguments(self.keeps_arguments(), &inverse.arguments, def);
            }
            if let Some(err) = policy::refusal(&inverse.tool, &self.inner.config) {
                let mut exec = fail(&inverse.tool, err);
                self.record(&cx, &inverse.tool, category, &mut exec, trail)
                    .await;
                return exec;
            }
            let journal_id = entry.id.clone();
            let claimed = self
                .with_store("claim_undo", move |store| store.claim_undo(&journal_id))
                .await;
            match claimed {
                Ok(true) => {}
                Ok(false) => {
                    let mut exec = fail(
                        &inverse.tool,
                        ToolError::new(
                            ErrorCode::of("ALREADY_UNDONE"),
                            format!("call {:?} was already undone", entry.call_id),
                        ),
                    );
                    self.record(&cx, &inverse.tool, category, &mut exec, trail)
                        .await;
                    return exec;
                }
                Err(e) => return fail(&inverse.tool, e.into()),
            }
            let call = ToolCall::new(
                undo_id.clone(),
                inverse.tool.clone(),
                Arguments::Json(inverse.arguments.clone()),
            );
            let instance = match tools.hydrate(&call) {
                Ok(i) => i,
                Err(error) => {
                    self.release_undo(&entry.id).await;
                    let mut exec = fail(&inverse.tool, error);
                    self.record(&cx, &inverse.tool, category, &mut exec, trail)
                        .await;
                    return exec;
                }
            };
            let exec = self.proceed(instance, &cx, trail).await;
            if !exec.outcome.is_success() {
                // the undo did not happen: let it be tried again
                self.release_undo(&entry.id).await;
            }
            exec
        }
        .instrument(span)
        .await
    }

    /// The journal entry an undo names: by undo id, else the one entry of that call id that can
    /// still be undone (or, when all were, the latest, which then reports `ALREADY_UNDONE`).
    async fn journal_entry(&self, id: &str) -> Result<JournalEntry, ToolError> {
        let key = id.to_owned();
        let (entry, mut of_call) = self
            .with_store("get_journal/journal_of_call", move |store| {
                Ok(match store.get_journal(&key)? {
                    Some(entry) => (Some(entry), Vec::new()),
                    None => (None, store.journal_of_call(&key)?),
                })
            })
            .await?;
        if let Some(entry) = entry {
            return Ok(entry);
        }
        let open: Vec<&JournalEntry> = of_call.iter().filter(|e| !e.undone).collect();
        match open.as_slice() {
            [one] => return Ok((*one).clone()),
            [_, _, ..] => {
                let ids: Vec<&str> = open.iter().map(|e| e.id.as_str()).collect();
                return Err(ToolError::new(
                    ErrorCode::of("AMBIGUOUS"),
                    format!(
                        "{} calls with id {id:?} can be undone; undo one by its undo id: {}",
                        ids.len(),
                        ids.join(", ")
                    ),
                ));
            }
            [] => {}
        }
        of_call.pop().ok_or_else(|| {
            ToolError::new(
                ErrorCode::NOT_FOUND,
                format!(
                    "nothing to undo for {id:?}: no such undo id, or the call is unknown, failed, or its tool is not reversible"
                ),
            )
        })
    }

    /// Reverts a claim whose undo did not happen, so that it can be tried again; a store that
    /// fails leaves the entry claimed (logged), and the undo cannot be repeated.
    async fn release_undo(&self, id: &str) {
        let key = id.to_owned();
        let released = self
            .with_store("release_undo", move |store| store.release_undo(&key))
            .await;
        if let Err(e) = released {
            tracing::error!(undo_id = id, error = %e, "could not release a failed undo");
        }
    }

    /// Journals how to undo a call that succeeded, as its planner said (`None`: nothing to
    /// undo). The entry is in the store before the execution is returned.
    pub(super) async fn journal(
        &self,
        def: &ToolDefinition,
        cx: &CallContext,
        inverse: Option<crate::store::InverseCall>,
    ) -> Result<Undo, String> {
        let Some(inverse) = inverse else {
            return Ok(Undo::NotNeeded);
        };
        let entry = JournalEntry {
            id: new_undo_id(),
            call_id: cx.call_id.to_string(),
            tool: def.name.to_string(),
            inverse,
            created_ms: now_ms(),
            undone: false,
        };
        let id = entry.id.clone();
        self.with_store("put_journal", move |store| store.put_journal(&entry))
            .await
            .map(|()| Undo::Journaled { id })
            .map_err(|e| format!("its undo could not be journaled ({e})"))
    }
}
