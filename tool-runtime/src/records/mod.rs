//! The records the executor writes and the stores keep: a call's outcome and execution, its
//! preview and the change it describes, its audit record and the activity queries over them, and a rate limit's window. They
//! have a module of their own so that the executor and the stores both depend on them and
//! neither on the other.

mod audit;
mod change;
mod outcome;
mod window;

pub use audit::{ActivityQuery, AuditArguments, AuditRecord};
pub use change::{Change, ChangeEntry, SAMPLE_CHARS};
pub use outcome::{Decider, Decision, Execution, FirstUse, Outcome, Preview, Status, Undo};
pub use window::Window;
