//! One operation over many nodes, confirmed once: the preview lists every node and what the
//! operation does to it; approved, it runs on all of them, or (when one fails) on none.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::executor::Change;
use tool_runtime::{ErrorCode, State, ToolError, tool};

use super::NodeType;
use crate::graph::analysis::node_confidence;
use crate::graph::db::GraphDb;
use crate::graph::summary::cut;

/// The operations `apply_to_nodes` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BatchTool {
    /// `recalculate_node_confidence` on each node.
    RecalculateNodeConfidence,
    /// `reclassify_node` on each node (needs new_type).
    ReclassifyNode,
    /// `delete_node` on each node.
    DeleteNode,
}

impl BatchTool {
    /// The tool this applies.
    pub fn tool_name(self) -> &'static str {
        match self {
            BatchTool::RecalculateNodeConfidence => "recalculate_node_confidence",
            BatchTool::ReclassifyNode => "reclassify_node",
            BatchTool::DeleteNode => "delete_node",
        }
    }
}

/// What `apply_to_nodes` was asked.
#[derive(Debug, Clone, Copy)]
pub struct BatchOptions {
    /// The operation.
    pub operation: BatchTool,
    /// For reclassify_node.
    pub new_type: Option<NodeType>,
    /// For reclassify_node (default true).
    pub preserve_relationships: bool,
    /// For delete_node (default false).
    pub cascade: bool,
    /// For recalculate_node_confidence (default true).
    pub factor_in_relationships: bool,
}

/// What the batch will do to each node, checked before anything changes: every node exists,
/// appears once, and the operation can apply to it. The change lists each node's entries in
/// the order given.
pub fn plan(db: &GraphDb, ids: &[String], o: BatchOptions) -> Result<Change, ToolError> {
    if ids.is_empty() {
        return Err(
            ToolError::new(ErrorCode::INVALID_ARGUMENTS, "no nodes to apply it to")
                .recover("list the node ids in node_ids"),
        );
    }
    let mut change = Change::new();
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(ToolError::new(
                ErrorCode::INVALID_ARGUMENTS,
                format!("{id} is listed twice"),
            )
            .recover("list each node once"));
        }
        let node = db.node(id)?;
        let edges = db.edges_of(id)?.len();
        let label = |what: &str| format!("{} {what}", node.id);
        change = match o.operation {
            BatchTool::RecalculateNodeConfidence => {
                let a = node_confidence(db, id, o.factor_in_relationships)?;
                change.replaced(label("confidence"), a.old, a.new)
            }
            BatchTool::ReclassifyNode => {
                let Some(t) = o.new_type else {
                    return Err(ToolError::new(
                        ErrorCode::INVALID_ARGUMENTS,
                        "reclassify_node needs new_type",
                    )
                    .recover("give new_type: Observation, Hypothesis, Source or Concept"));
                };
                if node.kind == t.as_str() {
                    return Err(ToolError::new(
                        ErrorCode::INVALID_ARGUMENTS,
                        format!("{id} is already a {}", node.kind),
                    )
                    .recover("leave it out of node_ids"));
                }
                let lost = if o.preserve_relationships { 0 } else { edges };
                change
                    .replaced(label("type"), node.kind.as_str(), t.as_str())
                    .touches(
                        lost,
                        format!("relationships of {} will be removed", node.id),
                    )
            }
            BatchTool::DeleteNode => {
                if edges > 0 && !o.cascade {
                    return Err(ToolError::new(
                        ErrorCode::of("HAS_RELATIONSHIPS"),
                        format!("node {id:?} has {edges} relationships"),
                    )
                    .recover("use cascade=true to remove their relationships too"));
                }
                change
                    .removed(format!("{} {}", node.kind, node.id), cut(&node.content, 80))
                    .touches(
                        edges,
                        format!("relationships of {} will be removed", node.id),
                    )
            }
        };
    }
    Ok(change)
}

fn apply_one(db: &GraphDb, id: &str, o: BatchOptions) -> Result<(Value, i64), ToolError> {
    Ok(match o.operation {
        BatchTool::RecalculateNodeConfidence => {
            let a = node_confidence(db, id, o.factor_in_relationships)?;
            let (_, _, snap) = db.update_node(id, None, Some(a.new))?;
            (
                json!({"node_id": id, "old_confidence": a.old, "new_confidence": a.new}),
                snap,
            )
        }
        BatchTool::ReclassifyNode => {
            let t = o.new_type.expect("checked by the plan");
            let (before, removed, snap) =
                db.reclassify_node(id, t.as_str(), o.preserve_relationships)?;
            (
                json!({"node_id": id, "old_type": before.kind, "new_type": t.as_str(),
                       "relationships_removed": removed.len()}),
                snap,
            )
        }
        BatchTool::DeleteNode => {
            let (removed, snap) = db.delete_node(id, o.cascade)?;
            (
                json!({"node_id": id, "deleted": true, "relationships_removed": removed}),
                snap,
            )
        }
    })
}

/// Applies one operation (recalculate_node_confidence, reclassify_node or delete_node) to
/// many nodes with a single approval that lists every node and its change. All or nothing: the
/// nodes are checked first, and a failure part-way puts back the ones already changed. Can be
/// undone as a whole.
#[tool(modify, reversible, intent = "Apply {operation} to nodes {node_ids}")]
pub fn apply_to_nodes(
    /// recalculate_node_confidence, reclassify_node or delete_node.
    operation: BatchTool,
    /// The nodes, e.g. ["obs-1", "obs-2"].
    node_ids: Vec<String>,
    /// For reclassify_node: Observation, Hypothesis, Source or Concept.
    new_type: Option<NodeType>,
    /// For reclassify_node: keep relationships (default true).
    preserve_relationships: Option<bool>,
    /// For delete_node: delete relationships too (default false).
    cascade: Option<bool>,
    /// For recalculate_node_confidence: weigh linked nodes (default true).
    factor_in_relationships: Option<bool>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let o = BatchOptions {
        operation,
        new_type,
        preserve_relationships: preserve_relationships.unwrap_or(true),
        cascade: cascade.unwrap_or(false),
        factor_in_relationships: factor_in_relationships.unwrap_or(true),
    };
    plan(&db, &node_ids, o)?;
    let (mut results, mut snaps) = (Vec::new(), Vec::new());
    for id in &node_ids {
        match apply_one(&db, id, o) {
            Ok((r, snap)) => {
                results.push(r);
                snaps.push(snap);
            }
            Err(e) => {
                for snap in snaps.iter().rev() {
                    db.restore(*snap)?;
                }
                return Err(e.with_detail("node_id", id.clone()));
            }
        }
    }
    Ok(
        json!({"operation": operation.tool_name(), "applied": results.len(),
              "results": results, "snapshot_ids": snaps,
              "message": format!("{} applied to {} nodes.", operation.tool_name(), node_ids.len())}),
    )
}
