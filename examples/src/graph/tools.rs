//! The knowledge graph's tools: two read-only analyses and two destructive operations
//! that always wait for a person's approval by id.

use serde_json::{Value, json};
use tool_runtime::{State, ToolError, tool};

use super::db::{GraphDb, MergeStrategy, similarity};

/// Finds nodes related to a node: its direct relationships, and nodes whose text is similar
/// (word overlap), each with a score and a suggested relationship.
#[tool(read_only, intent = "Find nodes related to {node_id}")]
pub fn find_related_nodes(
    /// The node to analyse, e.g. obs-1.
    node_id: String,
    /// At most this many (default 10).
    limit: Option<u32>,
    /// Leave out nodes less similar than this, 0 to 1 (default 0.1).
    min_similarity: Option<f64>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let edges = db.edges_of(&node_id)?;
    let min = min_similarity.unwrap_or(0.1);
    let mut related: Vec<Value> = Vec::new();
    let mut scored: Vec<(f64, Value)> = db
        .nodes()?
        .into_iter()
        .filter(|n| n.id != node.id)
        .filter_map(|n| {
            let linked = edges.iter().find(|e| e.from_id == n.id || e.to_id == n.id);
            let score = similarity(&node.content, &n.content);
            if linked.is_none() && score < min {
                return None;
            }
            let (suggested, reasoning) = match linked {
                Some(e) => (
                    e.rel_type.clone(),
                    format!("already linked: {} {} {}", e.from_id, e.rel_type, e.to_id),
                ),
                None => (
                    "RELATES_TO".to_owned(),
                    format!("{:.0}% of their words are shared", score * 100.0),
                ),
            };
            // Linked nodes rank first: a stated relationship beats a guessed one.
            let rank = score + if linked.is_some() { 1.0 } else { 0.0 };
            Some((
                rank,
                json!({"id": n.id, "kind": n.kind, "content": n.content,
                       "similarity_score": (score * 100.0).round() / 100.0,
                       "suggested_relationship": suggested, "reasoning": reasoning}),
            ))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    related.extend(
        scored
            .into_iter()
            .take(limit.unwrap_or(10) as usize)
            .map(|(_, v)| v),
    );
    Ok(json!({"node_id": node_id, "related_nodes": related,
              "message": format!("{} related nodes", related.len())}))
}

/// Summarises a node: its text shortened to max_length characters, key points, and (optionally)
/// its relationships.
#[tool(read_only, intent = "Summarise node {node_id}")]
pub fn summarize_node(
    /// The node, e.g. hyp-1.
    node_id: String,
    /// Also list its relationships.
    include_relationships: Option<bool>,
    /// The longest summary, in characters (default 200).
    max_length: Option<u32>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let max = max_length.unwrap_or(200).max(10) as usize;
    let summary: String = if node.content.chars().count() > max {
        let cut: String = node.content.chars().take(max - 1).collect();
        format!("{cut}…")
    } else {
        node.content.clone()
    };
    let key_points: Vec<&str> = node
        .content
        .split(['.', ';'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut out = json!({"node_id": node.id, "kind": node.kind, "summary": summary, "key_points": key_points});
    if include_relationships.unwrap_or(false) {
        let edges = db.edges_of(&node_id)?;
        out["related_count"] = json!(edges.len());
        out["relationships"] = json!(edges);
    }
    Ok(out)
}

/// Merges a duplicate node into another: the relationships move to the primary node, the
/// secondary node is removed. Always waits for the user's approval.
#[tool(
    modify,
    intent = "Merge node {secondary_node_id} into {primary_node_id}"
)]
pub fn merge_nodes(
    /// The node to keep.
    primary_node_id: String,
    /// The node merged in and removed.
    secondary_node_id: String,
    /// combine (default), prefer_primary or prefer_secondary.
    merge_strategy: Option<MergeStrategy>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let (merged, moved) = db.merge(
        &primary_node_id,
        &secondary_node_id,
        merge_strategy.unwrap_or_default(),
    )?;
    Ok(
        json!({"primary_node_id": primary_node_id, "secondary_node_id": secondary_node_id,
              "merged_content": merged, "relationships_transferred": moved,
              "message": "Nodes merged with user confirmation."}),
    )
}

/// Deletes a node (with cascade, its relationships too). Always waits for the user's approval.
#[tool(modify, intent = "Delete node {node_id}")]
pub fn delete_node(
    /// The node to delete.
    node_id: String,
    /// Also delete its relationships (otherwise a node with relationships is refused).
    cascade: Option<bool>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let removed = db.delete_node(&node_id, cascade.unwrap_or(false))?;
    Ok(json!({"node_id": node_id, "relationships_removed": removed,
              "message": "Node deleted successfully with user confirmation."}))
}
