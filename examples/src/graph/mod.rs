//! The knowledge graph agent: nodes and relationships in SQLite; `find_related_nodes`
//! and `summarize_node` run at once, `merge_nodes` and `delete_node` become pending operations
//! (id + preview in the store) that a person approves or denies later, from any process; the
//! activity feed is a query over the stored audit records.

pub mod db;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::executor::{Deferred, Executor, ExecutorBuilder, ExecutorConfig, Previewer};
use tool_runtime::store::Store;
use tool_runtime::{ToolError, ToolSet, toolset};

pub use db::{Edge, GraphDb, MergeStrategy, Node};

/// The system prompt.
pub const SYSTEM: &str = "You manage a knowledge graph of observations, hypotheses and sources. \
Use the tools to find related nodes, summarise, merge or delete nodes; merges and deletions wait \
for the user's approval. Answer briefly.";

/// Every tool of the graph agent, with its state.
pub fn toolset(db: GraphDb) -> ToolSet {
    toolset![
        tools::find_related_nodes,
        tools::summarize_node,
        tools::merge_nodes,
        tools::delete_node,
    ]
    .expect("the graph tools have valid schemas")
    .with_state(db)
}

/// The executor: every confirmation is deferred (a pending operation in the store at
/// `store_path`), with what [`configure`] adds.
pub fn executor(
    db: GraphDb,
    store_path: &Path,
    config: ExecutorConfig,
) -> Result<Executor, ToolError> {
    let builder = Executor::builder(toolset(db.clone()))
        .config(config)
        .confirmation(Deferred);
    configure(builder, db, crate::open_store(store_path)?)
        .build()
        .map_err(|e| ToolError::execution(e.to_string()))
}

/// What the graph agent adds to an executor over its tools, whoever builds it (the agent,
/// `graph serve`, the `graph tools` commands): `store`, and a preview of what a merge or deletion
/// would affect. The configuration and the confirmation handler stay the builder's.
pub fn configure(builder: ExecutorBuilder, db: GraphDb, store: Arc<dyn Store>) -> ExecutorBuilder {
    let del_db = db.clone();
    let delete_preview: Previewer = Arc::new(move |args: Value, _cx| {
        let db = del_db.clone();
        async move {
            let id = args["node_id"].as_str().unwrap_or_default();
            let node = db.node(id)?;
            let preview: String = node.content.chars().take(80).collect();
            Ok(
                json!({"node_id": id, "node_type": node.kind, "content_preview": preview,
                      "relationships_affected": db.edges_of(id)?.len()}),
            )
        }
        .boxed()
    });
    let merge_db = db.clone();
    let merge_preview: Previewer = Arc::new(move |args: Value, _cx| {
        let db = merge_db.clone();
        async move {
            let p = db.node(args["primary_node_id"].as_str().unwrap_or_default())?;
            let s = db.node(args["secondary_node_id"].as_str().unwrap_or_default())?;
            Ok(json!({"keep": p, "remove": s,
                      "relationships_moved": db.edges_of(&s.id)?.len()}))
        }
        .boxed()
    });
    builder
        .store(store)
        .preview_with("delete_node", delete_preview)
        .preview_with("merge_nodes", merge_preview)
}
