//! The research assistant: notes and a bibliography in SQLite, tools in the four safety
//! categories, confirmation with previews of edits, undo, and external services behind the
//! first-time gate: a DOI lookup, GNORM entity annotation, a citation graph and a library
//! catalogue, whose results [`display`] shows with the service's execution time and confidences.

pub mod db;
pub mod display;
pub mod external;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::json;
use tool_runtime::executor::{
    Change, ConfirmationHandler, Executor, ExecutorBuilder, ExecutorConfig,
};
use tool_runtime::store::{InverseCall, Store};
use tool_runtime::{ToolError, ToolSet, toolset};

pub use db::Db;
pub use external::{Service, Services};
pub use tools::DoiService;

/// The question the `research` binary asks when it is given none and has nobody to ask for one
/// (no argument, and a stdin that is not a terminal and ends before its first line): read-only,
/// so it needs no confirmation that nobody could give.
pub const DEMO_QUESTION: &str = "search the bibliography for ReAct";

/// The system prompt: short, because small local models follow short prompts best.
pub const SYSTEM: &str = "You are a research assistant. You manage the user's notes and \
bibliography with the tools. Use a tool whenever the request is about notes, the bibliography, \
a DOI, entities in a passage, citations of a paper or the library catalogue; then answer briefly.";

/// Every tool of the assistant, with its state: the database and the external services.
pub fn toolset(db: Db, services: Services) -> ToolSet {
    toolset![
        tools::search_bibliography,
        tools::search_notes,
        tools::create_note,
        tools::edit_note,
        tools::delete_note,
        tools::restore_note,
        tools::merge_notes,
        tools::add_annotation,
        tools::fetch_doi,
        external::gnorm::gnorm_annotate,
        external::citations::citation_graph,
        external::catalogue::search_catalogue,
    ]
    .expect("the research tools have valid schemas")
    .with_state(db)
    .with_state(services.doi.clone())
    .with_state(services)
}

/// The executor: the store at `store_path` (next to the notes), the given confirmation handler,
/// and what [`configure`] adds.
pub fn executor(
    toolset: ToolSet,
    db: Db,
    store_path: &Path,
    confirmer: Arc<dyn ConfirmationHandler>,
    config: ExecutorConfig,
) -> Result<Executor, ToolError> {
    let builder = Executor::builder(toolset)
        .config(config)
        .confirmation_shared(confirmer);
    configure(builder, db, crate::open_store(store_path)?)
        .build()
        .map_err(|e| ToolError::execution(e.to_string()))
}

/// What the assistant adds to an executor over its tools, whoever builds it (the agent,
/// `research serve`, the `research tools` commands): `store`, previews of edits, deletions and
/// merges, and undo for creating, editing and deleting notes. The configuration and the
/// confirmation handler stay the builder's.
pub fn configure(builder: ExecutorBuilder, db: Db, store: Arc<dyn Store>) -> ExecutorBuilder {
    let edit_db = db.clone();
    let delete_db = db.clone();
    let merge_db = db;
    builder
        .store(store)
        .preview::<tools::edit_note>(move |args, _cx| {
            let db = edit_db.clone();
            async move {
                let note = db.note(args.id)?;
                let mut change = Change::new();
                if let Some(title) = args.title {
                    change = change.replaced("title", note.title.as_str(), title);
                }
                Ok(change.replaced("text", note.body, args.body))
            }
            .boxed()
        })
        .preview::<tools::delete_note>(move |args, _cx| {
            let db = delete_db.clone();
            async move {
                let note = db.note(args.id)?;
                Ok(Change::new()
                    .removed(format!("note {}", note.id), note.title)
                    .removed_sample("its text", &note.body))
            }
            .boxed()
        })
        .preview::<tools::merge_notes>(move |args, _cx| {
            let db = merge_db.clone();
            async move {
                let mut ids: Vec<i64> = Vec::new();
                for id in args.ids {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                let notes = ids
                    .iter()
                    .map(|&id| db.note(id))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut change = Change::new().added("note", args.title);
                for n in &notes {
                    change = change.removed(format!("note {}", n.id), n.title.as_str());
                }
                Ok(change.note(format!(
                    "The new note holds the text of the {} notes it replaces.",
                    notes.len()
                )))
            }
            .boxed()
        })
        .undo::<tools::create_note>(|_args, note| {
            Some(InverseCall::to::<tools::delete_note>(
                json!({"id": note.id}),
            ))
        })
        .undo::<tools::delete_note>(|args, _result| {
            Some(InverseCall::to::<tools::restore_note>(
                json!({"id": args.id}),
            ))
        })
        .undo::<tools::edit_note>(|args, result| {
            Some(InverseCall::to::<tools::edit_note>(json!({
                "id": args.id,
                "body": result["previous_body"],
                "title": result["previous_title"],
            })))
        })
}
