//! Undo: a reversible tool declares how its effect is reverted, as a call of another tool planned
//! from the original arguments and result. The executor journals that call in the store when the
//! original succeeds, and [`crate::executor::Executor::undo`] runs it once.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::store::InverseCall;
use crate::tool::Tool;

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
