//! Undo: a reversible tool declares how its effect is reverted, as a call of another tool planned
//! from the original arguments and result. The executor journals that call in the store when the
//! original succeeds, and [`crate::executor::Executor::undo`] runs it once.

use std::sync::Arc;

use serde_json::Value;

use crate::store::InverseCall;
use crate::tool::Tool;

/// Plans the inverse of a successful call from its arguments and its result.
pub type UndoPlanner = Arc<dyn Fn(&Value, &Value) -> Option<InverseCall> + Send + Sync>;

/// A typed tool that knows how to revert itself. Register it with
/// [`crate::executor::ExecutorBuilder::reversible`].
///
/// ```ignore
/// impl Reversible for CreateNote {
///     fn inverse(_args: &CreateNoteArgs, output: &Value) -> Option<InverseCall> {
///         Some(InverseCall { tool: "delete_note".into(), arguments: json!({"id": output["id"]}) })
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
