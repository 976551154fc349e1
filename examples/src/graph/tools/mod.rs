//! The knowledge graph's tools, by concern: node CRUD and restoring earlier states (`nodes`),
//! relationships (`edges`), analyses and restructuring of nodes (`analysis`), the web search
//! (`web`), and one operation over many nodes (`batch`).
//!
//! Every tool that changes the graph returns the `snapshot_id` of what it replaced;
//! `restore_snapshot` puts it back, and is the undo the executor journals for them.

pub mod analysis;
pub mod batch;
pub mod edges;
pub mod nodes;
pub mod web;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use analysis::{
    find_related_nodes, link_related_nodes, merge_nodes, recalculate_node_confidence,
    reclassify_node, summarize_node, summarize_node_with_context,
};
pub use batch::{BatchTool, apply_to_nodes};
pub use edges::{
    create_relationship, delete_relationship, recalculate_edge_confidence, reclassify_relationship,
    summarize_relationship, update_relationship,
};
pub use nodes::{create_node, delete_node, get_node, restore_snapshot, update_node};
pub use web::search_web_for_evidence;

/// A node's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum NodeType {
    /// Something seen in data.
    Observation,
    /// A claim to test.
    Hypothesis,
    /// A publication or page.
    Source,
    /// A defined idea.
    Concept,
}

impl NodeType {
    /// The name stored in the graph.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::Observation => "Observation",
            NodeType::Hypothesis => "Hypothesis",
            NodeType::Source => "Source",
            NodeType::Concept => "Concept",
        }
    }
}

/// A relationship's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RelType {
    /// The source node is evidence for the target.
    Supports,
    /// The source node is evidence against the target.
    Contradicts,
    /// The nodes are about the same thing.
    RelatesTo,
    /// The source node comes from the target (a source).
    DerivedFrom,
}

impl RelType {
    /// The name stored in the graph.
    pub fn as_str(self) -> &'static str {
        match self {
            RelType::Supports => "SUPPORTS",
            RelType::Contradicts => "CONTRADICTS",
            RelType::RelatesTo => "RELATES_TO",
            RelType::DerivedFrom => "DERIVED_FROM",
        }
    }
}
