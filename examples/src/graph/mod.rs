//! The knowledge graph agent: nodes and relationships in SQLite; `find_related_nodes`
//! and `summarize_node` run at once, `merge_nodes` and `delete_node` become pending operations
//! (id + preview in the store) that a person approves or denies later, from any process; the
//! activity feed is a query over the stored audit records.

pub mod db;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::json;
use tool_runtime::executor::{Deferred, Executor, ExecutorBuilder, ExecutorConfig};
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
    let merge_db = db;
    builder
        .store(store)
        .preview::<tools::delete_node>(move |args, _cx| {
            let db = del_db.clone();
            async move {
                let node = db.node(&args.node_id)?;
                let preview: String = node.content.chars().take(80).collect();
                Ok(json!({
                    "node_id": args.node_id, "node_type": node.kind, "content_preview": preview,
                    "relationships_affected": db.edges_of(&args.node_id)?.len(),
                }))
            }
            .boxed()
        })
        .preview::<tools::merge_nodes>(move |args, _cx| {
            let db = merge_db.clone();
            async move {
                let p = db.node(&args.primary_node_id)?;
                let s = db.node(&args.secondary_node_id)?;
                Ok(json!({"keep": p, "remove": s,
                          "relationships_moved": db.edges_of(&s.id)?.len()}))
            }
            .boxed()
        })
}
