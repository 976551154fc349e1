//! A tool's own condition for being called at all, asked before anyone is asked to confirm.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::ToolError;

/// A check a registered tool carries ([`ToolSet::set_check`](super::ToolSet::set_check)): the
/// executor awaits it on each call of the tool right after hydration and before the policy, so
/// a call it refuses is refused with its error (and recorded once, as refused) without a
/// confirmation being asked, an operation parked or a first-time gate shown.
///
/// It says whether the tool can be called now at all, not whether this call should be: a tool
/// imported from another server whose definition changed since a person approved it is the
/// case it is made for. A tool's body can still refuse a call when it runs, for what changed
/// between the check and the run.
pub type CallCheck = Arc<dyn Fn() -> BoxFuture<'static, Result<(), ToolError>> + Send + Sync>;

/// The checks of a set's tools, by name.
pub(super) type Checks = HashMap<String, CallCheck, foldhash::fast::RandomState>;
