//! The external tool: web search for evidence about a node, which records what it finds as
//! Source nodes linked to the node.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{State, ToolError, tool};

use crate::graph::analysis::negative;
use crate::graph::db::GraphDb;
use crate::graph::db::change::{NewEdge, NewNode};
use crate::graph::search::SearchService;
use crate::graph::similarity::Similarity;
use crate::graph::summary::cut;

/// Which evidence `search_web_for_evidence` keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceType {
    /// Results that support the node.
    Supporting,
    /// Results that contradict it.
    Contradicting,
    /// Everything relevant.
    #[default]
    All,
}

/// Searches the web for evidence about a node through the web search service configured with
/// TOOLS_SEARCH_URL (a Tavily-compatible search API). The node's text, or query_override,
/// is sent to that service; nothing else leaves this machine. Each result is judged
/// supporting, contradicting or neutral, recorded as a Source node (one per URL) and linked to
/// the node with SUPPORTS, CONTRADICTS or RELATES_TO. Can be undone (the sources and links it
/// added are removed).
#[tool(
    external,
    reversible,
    intent = "Search the web for evidence about node {node_id}",
    timeout = "30s"
)]
pub async fn search_web_for_evidence(
    /// The node, e.g. hyp-1.
    node_id: String,
    /// Search for this instead of the node's text.
    query_override: Option<String>,
    /// supporting, contradicting or all (default).
    evidence_type: Option<EvidenceType>,
    /// At most this many results, 1 to 10 (default 5).
    #[arg(min = 1, max = 10)]
    max_results: Option<u32>,
    State(db): State<GraphDb>,
    State(sim): State<Similarity>,
    State(service): State<SearchService>,
) -> Result<Value, ToolError> {
    let node = db.node(&node_id)?;
    let query = query_override
        .filter(|q| !q.trim().is_empty())
        .unwrap_or_else(|| format!("evidence for {}", node.content));
    let hits = service.search(&query, max_results.unwrap_or(5)).await?;
    let wanted = evidence_type.unwrap_or_default();
    let texts: Vec<String> = hits
        .iter()
        .map(|h| format!("{} {}", h.title, h.content))
        .collect();
    let similar = sim.scores(&node.content, &texts)?;
    let existing = db.edges_of(&node_id)?;
    let (mut new_nodes, mut links, mut results) = (Vec::new(), Vec::new(), Vec::new());
    let mut reused = Vec::new();
    for (hit, s) in hits.iter().zip(similar) {
        let relevance = ((hit.score.unwrap_or(s).clamp(0.0, 1.0)) * 100.0).round() / 100.0;
        let (kind, rel, reasoning) = if negative(&hit.content) && !negative(&node.content) {
            (
                EvidenceType::Contradicting,
                "CONTRADICTS",
                "the snippet reads as negative about the node's claim",
            )
        } else if relevance >= 0.3 {
            (
                EvidenceType::Supporting,
                "SUPPORTS",
                "the snippet is relevant and does not deny the claim",
            )
        } else {
            (
                EvidenceType::All,
                "RELATES_TO",
                "the snippet is only loosely relevant",
            )
        };
        if wanted != EvidenceType::All && wanted != kind {
            continue;
        }
        let label = match kind {
            EvidenceType::Supporting => "supporting",
            EvidenceType::Contradicting => "contradicting",
            EvidenceType::All => "neutral",
        };
        // A URL is one Source: found before, or earlier in these results.
        let earlier = new_nodes
            .iter()
            .position(|n: &NewNode| n.url.as_deref() == Some(hit.url.as_str()));
        let end = match (db.source_with_url(&hit.url)?, earlier) {
            (Some(src), _) => {
                reused.push(src.id.clone());
                src.id
            }
            (None, Some(i)) => format!("#{i}"),
            (None, None) => {
                new_nodes.push(NewNode {
                    kind: "Source".into(),
                    content: cut(&format!("{}: {}", hit.title, hit.content), 500),
                    confidence: 0.6,
                    url: Some(hit.url.clone()),
                    provenance: vec![format!(
                        "found by search_web_for_evidence for {node_id} (query {query:?})"
                    )],
                });
                format!("#{}", new_nodes.len() - 1)
            }
        };
        let linked = existing
            .iter()
            .any(|e| e.from_id == end && e.to_id == node_id && e.rel_type == rel)
            || links
                .iter()
                .any(|l: &NewEdge| l.from_id == end && l.rel_type == rel);
        if !linked {
            links.push(NewEdge {
                from_id: end.clone(),
                to_id: node_id.clone(),
                rel_type: rel.into(),
                confidence: relevance,
                notes: Some(format!("web search: {}", hit.url)),
            });
        }
        results.push(
            json!({"url": hit.url, "title": hit.title, "snippet": cut(&hit.content, 300),
                            "relevance_score": relevance, "evidence_type": label,
                            "reasoning": reasoning, "source": end}),
        );
    }
    let (created, edges, snap) = db.create_many(&new_nodes, &links)?;
    // Placeholders (#N) name the sources just created.
    for r in &mut results {
        if let Some(i) = r["source"]
            .as_str()
            .and_then(|s| s.strip_prefix('#'))
            .and_then(|i| i.parse::<usize>().ok())
        {
            r["source"] = json!(created[i].id);
        }
    }
    Ok(
        json!({"node_id": node_id, "query": query, "results": results,
              "sources_created": created.len(), "sources_reused": reused,
              "links_created": edges.len(), "snapshot_id": snap,
              "message": format!("{} results; {} Source nodes created and {} links made",
                                 results.len(), created.len(), edges.len())}),
    )
}
