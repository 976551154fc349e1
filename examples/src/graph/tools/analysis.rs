//! Analyses of nodes (related nodes, summaries, confidence) and the changes they lead to
//! (reclassify, merge).

use serde_json::{Value, json};
use tool_runtime::{ErrorCode, State, ToolError, tool};

use super::{NodeType, RelType};
use crate::graph::analysis::{node_confidence, suggest_type};
use crate::graph::db::change::NewEdge;
use crate::graph::db::{GraphDb, MergeStrategy, Node};
use crate::graph::similarity::Similarity;
use crate::graph::summary::{Summarizer, cut, sentences};

/// The nodes related to `node`, best first: its direct relationships, then nodes whose text is
/// similar (at least `min`; by default 0.5 with embeddings, 0.1 with word overlap).
pub fn related(
    db: &GraphDb,
    sim: &Similarity,
    node: &Node,
    limit: usize,
    min: Option<f64>,
) -> Result<Vec<Value>, ToolError> {
    let edges = db.edges_of(&node.id)?;
    let others: Vec<Node> = db
        .nodes()?
        .into_iter()
        .filter(|n| n.id != node.id)
        .collect();
    let texts: Vec<String> = others.iter().map(|n| n.content.clone()).collect();
    let scores = sim.scores(&node.content, &texts)?;
    let min = min.unwrap_or(if sim.method().starts_with("word") {
        0.1
    } else {
        0.5
    });
    let mut scored: Vec<(f64, Value)> = others
        .iter()
        .zip(scores)
        .filter_map(|(n, score)| {
            let linked = edges.iter().find(|e| e.from_id == n.id || e.to_id == n.id);
            if linked.is_none() && score < min {
                return None;
            }
            let (suggested, reasoning) = match linked {
                Some(e) => (
                    e.rel_type.clone(),
                    format!("already linked: {} {} {}", e.from_id, e.rel_type, e.to_id),
                ),
                None => {
                    let (t, why) = suggest_type(node, n);
                    (
                        t.to_owned(),
                        format!("similarity {:.2} ({}); {why}", score, sim.method()),
                    )
                }
            };
            // Linked nodes rank first: a stated relationship beats a guessed one.
            let rank = score + if linked.is_some() { 1.0 } else { 0.0 };
            Some((
                rank,
                json!({"id": n.id, "type": n.kind, "content": n.content,
                       "similarity_score": (score * 100.0).round() / 100.0,
                       "linked": linked.is_some(),
                       "suggested_relationship": suggested, "reasoning": reasoning}),
            ))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(scored.into_iter().take(limit).map(|(_, v)| v).collect())
}

/// Finds nodes related to a node: its direct relationships, and nodes whose text is similar
/// (embeddings when available, word overlap otherwise), each with a score and a suggested
/// relationship type. Link them with create_relationship.
#[tool(read_only, intent = "Find nodes related to {node_id}")]
pub fn find_related_nodes(
    /// The node to analyse, e.g. obs-1.
    node_id: String,
    /// At most this many (default 10).
    #[arg(min = 1, max = 100)]
    limit: Option<u32>,
    /// Leave out unlinked nodes less similar than this, 0 to 1 (default 0.5 with embeddings,
    /// 0.1 with word overlap).
    #[arg(min = 0.0, max = 1.0)]
    min_similarity: Option<f64>,
    State(db): State<GraphDb>,
    State(sim): State<Similarity>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let found = related(
        &db,
        &sim,
        &node,
        limit.unwrap_or(10) as usize,
        min_similarity,
    )?;
    Ok(
        json!({"node_id": node_id, "related_nodes": found, "method": sim.method(),
              "message": format!("{} related nodes", found.len())}),
    )
}

/// The links `link_related_nodes` would make from `node`: one to each unlinked related node,
/// typed as the nodes suggest, with the similarity as its confidence.
pub fn planned_links(
    db: &GraphDb,
    sim: &Similarity,
    node: &Node,
    limit: usize,
    min: Option<f64>,
) -> Result<Vec<NewEdge>, ToolError> {
    Ok(related(db, sim, node, limit, min)?
        .into_iter()
        .filter(|r| r["linked"] == false)
        .map(|r| NewEdge {
            from_id: node.id.clone(),
            to_id: r["id"].as_str().unwrap_or_default().to_owned(),
            rel_type: r["suggested_relationship"]
                .as_str()
                .unwrap_or("RELATES_TO")
                .to_owned(),
            confidence: r["similarity_score"]
                .as_f64()
                .unwrap_or(0.0)
                .clamp(0.0, 1.0),
            notes: Some(format!(
                "linked by link_related_nodes: {}",
                r["reasoning"].as_str().unwrap_or("")
            )),
        })
        .collect())
}

/// Links a node to the related nodes it is not linked to yet (what find_related_nodes lists),
/// each with the suggested relationship type and its similarity as confidence. Asks first (the
/// preview lists the links); can be undone.
#[tool(
    create,
    reversible,
    intent = "Link node {node_id} to its related nodes"
)]
pub fn link_related_nodes(
    /// The node, e.g. obs-2.
    node_id: String,
    /// At most this many related nodes considered (default 10).
    #[arg(min = 1, max = 100)]
    limit: Option<u32>,
    /// Only nodes at least this similar, 0 to 1 (default 0.5 with embeddings, 0.1 with word
    /// overlap).
    #[arg(min = 0.0, max = 1.0)]
    min_similarity: Option<f64>,
    State(db): State<GraphDb>,
    State(sim): State<Similarity>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let links = planned_links(
        &db,
        &sim,
        &node,
        limit.unwrap_or(10) as usize,
        min_similarity,
    )?;
    let (_, edges, snap) = db.create_many(&[], &links)?;
    Ok(
        json!({"node_id": node_id, "links_created": edges.len(), "relationships": edges,
              "snapshot_id": snap,
              "message": format!("{} relationships created", edges.len())}),
    )
}

/// Summarises a node in at most max_length characters (written by the model when one is
/// configured, its own sentences otherwise), with key points and optionally its relationships.
#[tool(read_only, intent = "Summarise node {node_id}", timeout = "60s")]
pub async fn summarize_node(
    /// The node, e.g. hyp-1.
    node_id: String,
    /// Also list its relationships.
    include_relationships: Option<bool>,
    /// The longest summary, in characters (default 200).
    #[arg(min = 20, max = 2000)]
    max_length: Option<u32>,
    State(db): State<GraphDb>,
    State(summarizer): State<Summarizer>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let max = max_length.unwrap_or(200) as usize;
    let summary = summarizer
        .summarize(
            &format!("the {} {}", node.kind, node.id),
            &node.content,
            max,
        )
        .await;
    let mut out = json!({"node_id": node.id, "type": node.kind, "confidence": node.confidence,
                         "summary": summary.text, "method": summary.method,
                         "key_points": sentences(&node.content)});
    if include_relationships.unwrap_or(false) {
        let edges = db.edges_of(&node_id)?;
        out["related_count"] = json!(edges.len());
        out["relationships"] = json!(edges);
    }
    Ok(out)
}

/// Summarises a node with its neighbourhood up to depth hops: what supports it, what
/// contradicts it, what relates to it, and an overall assessment.
#[tool(
    read_only,
    intent = "Summarise node {node_id} with its context",
    timeout = "90s"
)]
pub async fn summarize_node_with_context(
    /// The node, e.g. hyp-1.
    node_id: String,
    /// How many hops to include, 1 to 3 (default 1).
    #[arg(min = 1, max = 3)]
    depth: Option<u32>,
    /// Only these relationship types (default all).
    relationship_types: Option<Vec<RelType>>,
    State(db): State<GraphDb>,
    State(summarizer): State<Summarizer>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let wanted: Option<Vec<&str>> = relationship_types
        .as_ref()
        .map(|ts| ts.iter().map(|t| t.as_str()).collect());
    let (mut supports, mut contradicts, mut related) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = vec![node.id.clone()];
    let mut frontier = vec![node.id.clone()];
    for hop in 1..=depth.unwrap_or(1) {
        let mut next = Vec::new();
        for id in &frontier {
            for e in db.edges_of(id)? {
                if wanted
                    .as_ref()
                    .is_some_and(|w| !w.contains(&e.rel_type.as_str()))
                {
                    continue;
                }
                let other = if e.from_id == *id {
                    &e.to_id
                } else {
                    &e.from_id
                };
                if seen.contains(other) {
                    continue;
                }
                seen.push(other.clone());
                next.push(other.clone());
                let n = db.node(other)?;
                let line = format!(
                    "{} ({}, confidence {:.2}, {} hop{}, {} {} {}): {}",
                    n.id,
                    n.kind,
                    n.confidence,
                    hop,
                    if hop == 1 { "" } else { "s" },
                    e.from_id,
                    e.rel_type,
                    e.to_id,
                    cut(&n.content, 120)
                );
                let toward_root = hop == 1 && e.to_id == node.id;
                match e.rel_type.as_str() {
                    "SUPPORTS" if toward_root => supports.push(line),
                    "CONTRADICTS" if toward_root => contradicts.push(line),
                    _ => related.push(line),
                }
            }
        }
        frontier = next;
    }
    let summary = summarizer
        .summarize(
            &format!("the {} {}", node.kind, node.id),
            &node.content,
            200,
        )
        .await;
    let balance = match (supports.len(), contradicts.len()) {
        (0, 0) => "no direct evidence for or against it".to_owned(),
        (s, 0) => format!("{s} supporting and nothing contradicting: the evidence leans for it"),
        (0, c) => {
            format!("{c} contradicting and nothing supporting: the evidence leans against it")
        }
        (s, c) => format!("{s} supporting and {c} contradicting: the evidence is mixed"),
    };
    let mut synthesis = format!(
        "{} ({}, confidence {:.2}) has {balance}; {} more nodes relate to it.",
        node.id,
        node.kind,
        node.confidence,
        related.len()
    );
    if summarizer.has_model() {
        let context = [&supports[..], &contradicts[..], &related[..]]
            .concat()
            .join("\n");
        let s = summarizer
            .summarize(
                &format!("the evidence around {}", node.id),
                &format!("{}\n{synthesis}\n{context}", node.content),
                300,
            )
            .await;
        if s.method == "model" {
            synthesis = s.text;
        }
    }
    Ok(
        json!({"node_id": node.id, "summary": summary.text, "method": summary.method,
              "context": {"supports": supports, "contradicts": contradicts, "related": related},
              "synthesis": synthesis}),
    )
}

/// Recomputes a node's confidence from its type and (by default) the nodes that support or
/// contradict it and the sources it derives from, and stores it. Waits for the user's
/// approval (the preview shows the new value); can be undone.
#[tool(
    modify,
    reversible,
    intent = "Recalculate the confidence of node {node_id}"
)]
pub fn recalculate_node_confidence(
    /// The node, e.g. hyp-1.
    node_id: String,
    /// Weigh the linked nodes (default true).
    factor_in_relationships: Option<bool>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let a = node_confidence(&db, &node_id, factor_in_relationships.unwrap_or(true))?;
    let (_, _, snap) = db.update_node(&node_id, None, Some(a.new))?;
    Ok(
        json!({"node_id": node_id, "old_confidence": a.old, "new_confidence": a.new,
              "reasoning": a.reasoning, "factors": a.factors_json(), "snapshot_id": snap}),
    )
}

/// Changes a node's type (e.g. Observation to Hypothesis); its id stays. With
/// preserve_relationships=false its relationships are removed. Waits for the user's approval;
/// can be undone.
#[tool(modify, reversible, intent = "Reclassify node {node_id} as {new_type}")]
pub fn reclassify_node(
    /// The node, e.g. obs-2.
    node_id: String,
    /// Observation, Hypothesis, Source or Concept.
    new_type: NodeType,
    /// Keep its relationships (default true).
    preserve_relationships: Option<bool>,
    State(db): State<GraphDb>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    if node.kind == new_type.as_str() {
        return Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            format!("{node_id} is already a {}", node.kind),
        )
        .recover("pick another type, or leave the node as it is"));
    }
    let (before, removed, snap) = db.reclassify_node(
        &node_id,
        new_type.as_str(),
        preserve_relationships.unwrap_or(true),
    )?;
    let after = db.node(&node_id)?;
    let mut warnings: Vec<String> = Vec::new();
    if !removed.is_empty() {
        warnings.push(format!("{} relationships were removed", removed.len()));
    }
    for e in db.edges_of(&node_id)? {
        let (from, to) = (db.node(&e.from_id)?, db.node(&e.to_id)?);
        let (fits, _) = suggest_type(&from, &to);
        if fits != e.rel_type {
            warnings.push(format!(
                "relationship {} ({} {} {}) may now be better as {fits} (reclassify_relationship)",
                e.id, e.from_id, e.rel_type, e.to_id
            ));
        }
    }
    let mut out = json!({"node_id": node_id, "old_type": before.kind, "new_type": after.kind,
                         "relationships_removed": removed.len(), "snapshot_id": snap,
                         "message": format!("{node_id} is now a {}.", after.kind)});
    if !warnings.is_empty() {
        out["warning"] = json!(warnings.join("; "));
    }
    Ok(out)
}

/// Merges a duplicate node into another: content combined (or one side kept), relationships
/// moved to the primary node, the secondary's provenance kept on the primary, the secondary
/// removed. Always waits for the user's approval; can be undone.
#[tool(
    modify,
    reversible,
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
    let (merged, moved, snap) = db.merge(
        &primary_node_id,
        &secondary_node_id,
        merge_strategy.unwrap_or_default(),
    )?;
    Ok(
        json!({"primary_node_id": primary_node_id, "secondary_node_id": secondary_node_id,
              "merged_content": merged.content, "relationships_transferred": moved,
              "provenance": merged.provenance, "snapshot_id": snap,
              "message": "Nodes merged with user confirmation."}),
    )
}
