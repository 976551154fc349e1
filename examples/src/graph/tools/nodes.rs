//! Node CRUD, and restoring what a change replaced.

use serde_json::{Value, json};
use tool_runtime::{State, ToolError, tool};

use super::NodeType;
use super::analysis::related;
use crate::graph::db::GraphDb;
use crate::graph::db::change::NewNode;
use crate::graph::similarity::Similarity;

/// Reads one node: its type, text, confidence, provenance and relationships.
#[tool(read_only, intent = "Read node {node_id}")]
pub fn get_node(
    /// The node, e.g. obs-1.
    node_id: String,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let edges = db.edges_of(&node_id)?;
    Ok(json!({"node": node, "relationships": edges}))
}

/// Creates a node; its id comes from its type (obs-4, hyp-2...). With auto_analyze (default
/// true) the result also suggests related nodes to link.
#[tool(create, reversible, intent = "Create a {node_type} node")]
pub fn create_node(
    /// Observation, Hypothesis, Source or Concept.
    node_type: NodeType,
    /// The node's text.
    content: String,
    /// How far it is believed, 0 to 1 (default 0.5).
    #[arg(min = 0.0, max = 1.0)]
    confidence: Option<f64>,
    /// Also suggest related nodes (default true).
    auto_analyze: Option<bool>,
    State(db): State<GraphDb>,
    State(sim): State<Similarity>,
) -> Result<Value, ToolError> {
    if content.trim().is_empty() {
        return Err(ToolError::new(
            tool_runtime::ErrorCode::INVALID_ARGUMENTS,
            "a node needs some content",
        )
        .recover("give the node's text in content"));
    }
    let (node, _, snap) = db.create_node(
        &NewNode {
            kind: node_type.as_str().into(),
            content,
            confidence: confidence.unwrap_or(0.5),
            url: None,
            provenance: vec!["created with create_node".into()],
        },
        &[],
    )?;
    let mut out = json!({"node": node, "snapshot_id": snap,
                         "message": format!("Created {}.", node.id)});
    if auto_analyze.unwrap_or(true) {
        out["related_nodes"] = json!(related(&db, &sim, &node, 3, None)?);
    }
    Ok(out)
}

/// Changes a node's text and/or confidence; with re_analyze, suggests related nodes for the
/// new text. Waits for the user's approval; can be undone.
#[tool(modify, reversible, intent = "Update node {node_id}")]
pub fn update_node(
    /// The node to change.
    node_id: String,
    /// Its new text.
    content: Option<String>,
    /// Its new confidence, 0 to 1.
    #[arg(min = 0.0, max = 1.0)]
    confidence: Option<f64>,
    /// Also suggest related nodes for the new text (default false).
    re_analyze: Option<bool>,
    State(db): State<GraphDb>,
    State(sim): State<Similarity>,
) -> Result<Value, ToolError> {
    let (before, after, snap) = db.update_node(&node_id, content, confidence)?;
    let mut out = json!({"node_id": node_id, "before": before, "after": after,
                         "snapshot_id": snap, "message": "Node updated."});
    if re_analyze.unwrap_or(false) {
        out["related_nodes"] = json!(related(&db, &sim, &after, 3, None)?);
    }
    Ok(out)
}

/// What a deletion did: a typed result, so MCP clients get its output schema and structured
/// content (and, for a deletion that did not run, the declared "not run" form).
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Deleted {
    /// The node deleted.
    pub node_id: String,
    /// How many of its relationships went with it.
    pub relationships_removed: usize,
    /// The snapshot that restores it (`restore_snapshot`).
    pub snapshot_id: i64,
    /// What happened, for the model.
    pub message: String,
}

/// Deletes a node (with cascade, its relationships too). Always waits for the user's approval;
/// can be undone.
#[tool(modify, reversible, intent = "Delete node {node_id}")]
pub fn delete_node(
    /// The node to delete.
    node_id: String,
    /// Also delete its relationships (otherwise a node with relationships is refused).
    cascade: Option<bool>,
    State(db): State<GraphDb>,
) -> Result<Deleted, ToolError> {
    let (removed, snap) = db.delete_node(&node_id, cascade.unwrap_or(false))?;
    Ok(Deleted {
        node_id,
        relationships_removed: removed,
        snapshot_id: snap,
        message: "Node deleted successfully with user confirmation.".into(),
    })
}

/// Puts the graph back as it was before the changes that returned these snapshot ids (the
/// latest first) and removes what they created. Each snapshot restores once.
#[tool(modify, intent = "Restore the graph from snapshots {snapshot_ids}")]
pub fn restore_snapshot(
    /// The snapshot_id values the changes returned.
    snapshot_ids: Vec<i64>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    if snapshot_ids.is_empty() {
        return Err(tool_runtime::ToolError::new(
            tool_runtime::ErrorCode::INVALID_ARGUMENTS,
            "no snapshot to restore",
        )
        .recover("give the snapshot_id a modifying tool returned"));
    }
    let mut restored = Vec::new();
    for id in snapshot_ids.iter().rev() {
        let snap = db.restore(*id)?;
        restored.push(json!({
            "snapshot_id": id,
            "nodes_restored": snap.nodes.iter().map(|n| &n.id).collect::<Vec<_>>(),
            "relationships_restored": snap.edges.iter().map(|e| e.id).collect::<Vec<_>>(),
            "nodes_removed": snap.created_nodes,
            "relationships_removed": snap.created_edges,
        }));
    }
    Ok(json!({"restored": restored, "message": "Restored."}))
}
