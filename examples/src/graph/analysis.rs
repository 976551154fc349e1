//! The graph's judgements, computed without changing anything (the previews show them before a
//! tool writes them): a node's confidence from its type and the evidence around it, a
//! relationship's confidence from how alike its ends are and the structure around them, the
//! relationship type two nodes suggest, and how strong a relationship is.

use serde_json::{Value, json};
use tool_runtime::ToolError;

use super::db::{Edge, GraphDb, Node, words};
use super::similarity::Similarity;

/// A recomputed confidence and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// The stored confidence.
    pub old: f64,
    /// The recomputed one.
    pub new: f64,
    /// Each factor and its effect (`"+0.12"`).
    pub factors: Vec<(String, String)>,
    /// One sentence for the person.
    pub reasoning: String,
}

impl Assessment {
    /// The factors as the tools return them.
    pub fn factors_json(&self) -> Value {
        Value::Array(
            self.factors
                .iter()
                .map(|(f, i)| json!({"factor": f, "impact": i}))
                .collect(),
        )
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn signed(v: f64) -> String {
    format!("{v:+.2}")
}

/// The belief a node of this type starts from: sources and concepts are documented, an
/// observation was seen once, a hypothesis is a claim to test.
pub fn prior(kind: &str) -> f64 {
    match kind {
        "Source" => 0.7,
        "Concept" => 0.8,
        "Observation" => 0.6,
        "Hypothesis" => 0.4,
        _ => 0.5,
    }
}

/// A node's confidence from its type's prior and, with `factor_in_relationships`, the nodes
/// that support or contradict it and the sources it derives from, each weighted by its own
/// confidence and the link's. Kept within 0.05 and 0.95: the graph alone never makes a node
/// certain or impossible.
pub fn node_confidence(
    db: &GraphDb,
    id: &str,
    factor_in_relationships: bool,
) -> Result<Assessment, ToolError> {
    let node = db.node(id)?;
    let base = prior(&node.kind);
    let mut factors = vec![(format!("{} prior", node.kind), format!("{base:.2}"))];
    let mut value = base;
    if factor_in_relationships {
        for e in db.edges_of(id)? {
            let incoming = e.to_id == id;
            let other = db.node(if incoming { &e.from_id } else { &e.to_id })?;
            let weight = e.confidence * other.confidence;
            let (label, delta) = match (e.rel_type.as_str(), incoming) {
                ("SUPPORTS", true) => (format!("supported by {}", other.id), 0.15 * weight),
                ("CONTRADICTS", true) => (format!("contradicted by {}", other.id), -0.15 * weight),
                ("DERIVED_FROM", false) => (format!("backed by source {}", other.id), 0.1 * weight),
                _ => continue,
            };
            value += delta;
            factors.push((label, signed(delta)));
        }
    }
    let new = round2(value.clamp(0.05, 0.95));
    let moved = factors.len() - 1;
    let reasoning = if moved == 0 {
        format!(
            "{} has no supporting, contradicting or source links to weigh; its confidence is its type's prior",
            node.id
        )
    } else {
        format!(
            "{} starts at the {} prior {base:.2}; {moved} linked nodes move it to {new:.2}",
            node.id, node.kind
        )
    };
    Ok(Assessment {
        old: node.confidence,
        new,
        factors,
        reasoning,
    })
}

/// A relationship's confidence: how alike its two nodes' texts are and, with
/// `consider_graph_structure`, how much the graph believes its ends and whether they share a
/// neighbour (a second path between them).
pub fn edge_confidence(
    db: &GraphDb,
    similarity: &Similarity,
    edge_id: i64,
    consider_graph_structure: bool,
) -> Result<Assessment, ToolError> {
    let edge = db.edge(edge_id)?;
    let from = db.node(&edge.from_id)?;
    let to = db.node(&edge.to_id)?;
    let s = similarity.scores(&from.content, std::slice::from_ref(&to.content))?[0];
    let text = 0.4 + 0.6 * s;
    let mut factors = vec![(
        format!("text similarity {s:.2} ({})", similarity.method()),
        format!("{text:.2}"),
    )];
    let mut value = text;
    if consider_graph_structure {
        let ends = (from.confidence + to.confidence) / 2.0;
        let blended = 0.6 * text + 0.4 * ends;
        factors.push((
            format!("the ends' confidence (average {ends:.2})"),
            signed(blended - value),
        ));
        value = blended;
        let neighbours = |n: &str| -> Result<Vec<String>, ToolError> {
            Ok(db
                .edges_of(n)?
                .into_iter()
                .filter(|e| e.id != edge.id)
                .map(|e| if e.from_id == n { e.to_id } else { e.from_id })
                .collect())
        };
        let a = neighbours(&from.id)?;
        if let Some(shared) = neighbours(&to.id)?.into_iter().find(|n| a.contains(n)) {
            factors.push((format!("a second path through {shared}"), signed(0.05)));
            value += 0.05;
        }
    }
    let new = round2(value.clamp(0.05, 0.95));
    Ok(Assessment {
        old: edge.confidence,
        new,
        reasoning: format!(
            "{} {} {}: {} factors give {new:.2}",
            edge.from_id,
            edge.rel_type,
            edge.to_id,
            factors.len()
        ),
        factors,
    })
}

const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "drops",
    "decreases",
    "reduces",
    "lower",
    "worse",
    "fails",
    "contradicts",
    "refutes",
    "without",
];

/// Whether a text reads as negative (a drop, a failure, a denial).
pub fn negative(text: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .any(|w| NEGATIONS.contains(&w.to_lowercase().as_str()))
}

/// The relationship type two nodes suggest, and why: a node that reads as negative about a
/// hypothesis contradicts it, an observation or a source about a hypothesis supports it,
/// anything about a source derives from it, otherwise they relate.
pub fn suggest_type(from: &Node, to: &Node) -> (&'static str, String) {
    let shared = words(&from.content)
        .intersection(&words(&to.content))
        .count();
    if to.kind == "Hypothesis" && negative(&from.content) && !negative(&to.content) {
        return (
            "CONTRADICTS",
            format!(
                "{} reads as negative about the hypothesis {}",
                from.id, to.id
            ),
        );
    }
    if to.kind == "Hypothesis" && matches!(from.kind.as_str(), "Observation" | "Source") {
        return (
            "SUPPORTS",
            format!(
                "{} is a {} about the hypothesis {}",
                from.id, from.kind, to.id
            ),
        );
    }
    if to.kind == "Source" {
        return ("DERIVED_FROM", format!("{} is a source", to.id));
    }
    (
        "RELATES_TO",
        format!("the nodes share {shared} words and no stronger pattern"),
    )
}

/// `strong`, `moderate` or `weak`, from a relationship's confidence.
pub fn strength(edge: &Edge) -> &'static str {
    if edge.confidence >= 0.75 {
        "strong"
    } else if edge.confidence >= 0.45 {
        "moderate"
    } else {
        "weak"
    }
}
