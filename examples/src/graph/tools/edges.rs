//! Relationships: create, update, delete, and their analyses (confidence, type, summary).

use serde_json::{Value, json};
use tool_runtime::{ErrorCode, State, ToolError, tool};

use super::RelType;
use crate::graph::analysis::{edge_confidence, strength, suggest_type};
use crate::graph::db::GraphDb;
use crate::graph::db::change::NewEdge;
use crate::graph::similarity::Similarity;
use crate::graph::summary::{Summarizer, cut};

/// Creates a relationship from one node to another. Can be undone.
#[tool(
    create,
    reversible,
    intent = "Link {from_id} {relationship_type} {to_id}"
)]
pub fn create_relationship(
    /// The source node, e.g. obs-2.
    from_id: String,
    /// The target node, e.g. hyp-1.
    to_id: String,
    /// SUPPORTS, CONTRADICTS, RELATES_TO or DERIVED_FROM.
    relationship_type: RelType,
    /// How sure the link is, 0 to 1 (default 1).
    #[arg(min = 0.0, max = 1.0)]
    confidence: Option<f64>,
    /// Notes about the link.
    notes: Option<String>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let (edge, snap) = db.create_edge(&NewEdge {
        from_id,
        to_id,
        rel_type: relationship_type.as_str().into(),
        confidence: confidence.unwrap_or(1.0),
        notes,
    })?;
    Ok(
        json!({"relationship": edge, "edge_id": edge.id, "snapshot_id": snap,
              "message": format!("Created relationship {}.", edge.id)}),
    )
}

/// Changes a relationship's type, confidence and/or notes. Waits for the user's approval; can
/// be undone.
#[tool(modify, reversible, intent = "Update relationship {edge_id}")]
pub fn update_relationship(
    /// The relationship's id.
    edge_id: i64,
    /// Its new type.
    relationship_type: Option<RelType>,
    /// Its new confidence, 0 to 1.
    #[arg(min = 0.0, max = 1.0)]
    confidence: Option<f64>,
    /// Its new notes (an empty text removes them).
    notes: Option<String>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    if relationship_type.is_none() && confidence.is_none() && notes.is_none() {
        return Err(
            ToolError::new(ErrorCode::INVALID_ARGUMENTS, "nothing to update")
                .recover("give a relationship_type, a confidence, notes, or several"),
        );
    }
    let (before, after, snap) = db.change_edge(edge_id, |e| {
        if let Some(t) = relationship_type {
            e.rel_type = t.as_str().into();
        }
        if let Some(c) = confidence {
            e.confidence = c;
        }
        if let Some(n) = notes {
            e.notes = Some(n).filter(|n| !n.is_empty());
        }
        Ok(())
    })?;
    Ok(
        json!({"edge_id": edge_id, "before": before, "after": after, "snapshot_id": snap,
              "message": "Relationship updated."}),
    )
}

/// Deletes a relationship. Always waits for the user's approval; can be undone.
#[tool(modify, reversible, intent = "Delete relationship {edge_id}")]
pub fn delete_relationship(
    /// The relationship's id.
    edge_id: i64,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let (edge, snap) = db.delete_edge(edge_id)?;
    Ok(
        json!({"edge_id": edge_id, "deleted": edge, "snapshot_id": snap,
              "message": "Relationship deleted with user confirmation."}),
    )
}

/// Recomputes a relationship's confidence from how alike its two nodes are and (by default)
/// the graph around them, and stores it. Waits for the user's approval (the preview shows the
/// new value); can be undone.
#[tool(
    modify,
    reversible,
    intent = "Recalculate the confidence of relationship {edge_id}"
)]
pub fn recalculate_edge_confidence(
    /// The relationship's id.
    edge_id: i64,
    /// Weigh the ends' confidence and other paths between them (default true).
    consider_graph_structure: Option<bool>,
    State(db): State<GraphDb>,
    State(sim): State<Similarity>,
) -> Result<Value, ToolError> {
    let a = edge_confidence(&db, &sim, edge_id, consider_graph_structure.unwrap_or(true))?;
    let (_, _, snap) = db.change_edge(edge_id, |e| {
        e.confidence = a.new;
        Ok(())
    })?;
    Ok(
        json!({"edge_id": edge_id, "old_confidence": a.old, "new_confidence": a.new,
              "reasoning": a.reasoning, "factors": a.factors_json(), "snapshot_id": snap}),
    )
}

/// The type `reclassify_relationship` gives a relationship: the one asked for, or the one its
/// nodes suggest; and why.
pub fn target_type(
    db: &GraphDb,
    edge_id: i64,
    new_type: Option<RelType>,
) -> Result<(String, String), ToolError> {
    let edge = db.edge(edge_id)?;
    Ok(match new_type {
        Some(t) => (t.as_str().to_owned(), "the type asked for".to_owned()),
        None => {
            let (t, why) = suggest_type(&db.node(&edge.from_id)?, &db.node(&edge.to_id)?);
            (t.to_owned(), format!("suggested: {why}"))
        }
    })
}

/// Changes a relationship's type; without new_type the type its nodes suggest. With
/// preserve_notes=false its notes are cleared. Waits for the user's approval; can be undone.
#[tool(modify, reversible, intent = "Reclassify relationship {edge_id}")]
pub fn reclassify_relationship(
    /// The relationship's id.
    edge_id: i64,
    /// SUPPORTS, CONTRADICTS, RELATES_TO or DERIVED_FROM; left out, the nodes suggest one.
    new_type: Option<RelType>,
    /// Keep its notes (default true).
    preserve_notes: Option<bool>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let (target, reasoning) = target_type(&db, edge_id, new_type)?;
    let current = db.edge(edge_id)?;
    if current.rel_type == target {
        return Err(ToolError::new(
            ErrorCode::of("NO_CHANGE"),
            format!("relationship {edge_id} is already {target} ({reasoning})"),
        )
        .recover("leave it, or give another new_type"));
    }
    let (before, after, snap) = db.change_edge(edge_id, |e| {
        e.rel_type = target.clone();
        if !preserve_notes.unwrap_or(true) {
            e.notes = None;
        }
        Ok(())
    })?;
    Ok(
        json!({"edge_id": edge_id, "old_type": before.rel_type, "new_type": after.rel_type,
              "confidence": after.confidence, "reasoning": reasoning, "snapshot_id": snap}),
    )
}

/// Explains a relationship: its two nodes, a summary of the connection, the evidence (the
/// nodes' own texts, its notes, other links between them) and how strong it is.
#[tool(read_only, intent = "Explain relationship {edge_id}", timeout = "60s")]
pub async fn summarize_relationship(
    /// The relationship's id.
    edge_id: i64,
    /// List the evidence (default true).
    include_evidence: Option<bool>,
    State(db): State<GraphDb>,
    State(summarizer): State<Summarizer>,
) -> Result<Value, ToolError> {
    let edge = db.edge(edge_id)?;
    let from = db.node(&edge.from_id)?;
    let to = db.node(&edge.to_id)?;
    let verb = edge.rel_type.to_lowercase().replace('_', " ");
    let text = format!(
        "{} ({}) {verb} {} ({}). {}: {} {}: {}",
        from.id, from.kind, to.id, to.kind, from.id, from.content, to.id, to.content
    );
    let summary = summarizer
        .summarize(&format!("how {} {verb} {}", from.id, to.id), &text, 240)
        .await;
    let mut out = json!({"edge_id": edge.id, "from_node": from.id, "to_node": to.id,
                         "relationship_type": edge.rel_type, "confidence": edge.confidence,
                         "summary": summary.text, "method": summary.method,
                         "strength_assessment": strength(&edge)});
    if include_evidence.unwrap_or(true) {
        let mut evidence = vec![
            format!("{}: {}", from.id, cut(&from.content, 160)),
            format!("{}: {}", to.id, cut(&to.content, 160)),
        ];
        if let Some(notes) = &edge.notes {
            evidence.push(format!("notes: {notes}"));
        }
        for other in db.edges_of(&from.id)? {
            let joins = (other.from_id == to.id || other.to_id == to.id) && other.id != edge.id;
            if joins {
                evidence.push(format!(
                    "also {} {} {} (relationship {})",
                    other.from_id, other.rel_type, other.to_id, other.id
                ));
            }
        }
        out["evidence"] = json!(evidence);
    }
    Ok(out)
}
