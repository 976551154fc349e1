//! The task manager: tasks in SQLite, CRUD with the consolidated `query_tasks` tool,
//! response formats, errors with `recover_action`, and chains of calls whose arguments refer to
//! earlier results.

pub mod db;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::json;
use tool_runtime::executor::{
    Change, ConfirmationHandler, Executor, ExecutorBuilder, ExecutorConfig,
};
use tool_runtime::store::Store;
use tool_runtime::{ToolError, ToolSet, toolset};

pub use db::{Priority, Task, TaskChanges, TaskDb, TaskStatus};

/// The system prompt: short, because small local models follow short prompts best.
pub const SYSTEM: &str = "You are a task manager. Use the tools to look up, create, update and \
delete the user's tasks; then answer briefly.";

/// Every tool of the task manager, with its state.
pub fn toolset(db: TaskDb) -> ToolSet {
    toolset![
        tools::query_tasks,
        tools::create_task,
        tools::update_task,
        tools::delete_task,
    ]
    .expect("the task tools have valid schemas")
    .with_state(db)
}

/// The executor: the store at `store_path`, the given confirmation handler, and what
/// [`configure`] adds.
pub fn executor(
    db: TaskDb,
    store_path: &Path,
    confirmer: Arc<dyn ConfirmationHandler>,
    config: ExecutorConfig,
) -> Result<Executor, ToolError> {
    let builder = Executor::builder(toolset(db.clone()))
        .config(config)
        .confirmation_shared(confirmer);
    configure(builder, db, crate::open_store(store_path)?)
        .build()
        .map_err(|e| ToolError::execution(e.to_string()))
}

/// What the task manager adds to an executor over its tools, whoever builds it (the agent,
/// `tasks serve`, the `tasks tools` commands): `store`, and previews of updates and deletions
/// (the task as it is now next to the requested change). The configuration and the
/// confirmation handler stay the builder's.
pub fn configure(builder: ExecutorBuilder, db: TaskDb, store: Arc<dyn Store>) -> ExecutorBuilder {
    let update_db = db.clone();
    let delete_db = db;
    builder
        .store(store)
        .preview::<tools::update_task>(move |args, _cx| {
            let db = update_db.clone();
            async move {
                let before = db.get(args.id)?;
                let after = db::planned(&before, &args.changes);
                let mut change = Change::new()
                    .replaced("title", before.title, after.title)
                    .replaced("description", before.description, after.description)
                    .replaced("status", json!(before.status), json!(after.status))
                    .replaced("priority", json!(before.priority), json!(after.priority))
                    .replaced("due", before.eta, after.eta);
                for tag in after.tags.iter().filter(|t| !before.tags.contains(t)) {
                    change = change.added("tag", tag.as_str());
                }
                Ok(change)
            }
            .boxed()
        })
        .preview::<tools::delete_task>(move |args, _cx| {
            let db = delete_db.clone();
            async move {
                let task = db.get(args.id)?;
                Ok(Change::new()
                    .removed(format!("task {}", task.id), task.title)
                    .removed_sample("its description", &task.description)
                    .touches(task.tags.len(), "tags go with it"))
            }
            .boxed()
        })
}
