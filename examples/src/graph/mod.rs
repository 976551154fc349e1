//! The knowledge graph agent: nodes and relationships in SQLite and the tool layer over them.
//!
//! - nodes: `get_node` (read-only), `create_node` (create), `update_node`, `delete_node` (modify);
//! - relationships: `create_relationship` (create), `update_relationship`,
//!   `delete_relationship` (modify);
//! - analyses: `find_related_nodes`, `summarize_node`, `summarize_node_with_context`,
//!   `summarize_relationship` (read-only); `link_related_nodes` (create: links what
//!   `find_related_nodes` finds); `recalculate_node_confidence`,
//!   `recalculate_edge_confidence`, `reclassify_node`, `reclassify_relationship`, `merge_nodes`
//!   (modify);
//! - `search_web_for_evidence` (external: first-time gate, rate limited), which records Source
//!   nodes and links them;
//! - `apply_to_nodes` (modify): one operation over many nodes, one approval listing them all;
//! - `restore_snapshot` (modify): the undo of every change.
//!
//! Every modifying tool asks first, with a preview of its change, and can be undone. In the
//! agent every confirmation is deferred: a pending operation (id + preview in the store) that a
//! person approves or denies later, from any process. The activity feed is a query over the
//! stored audit records, each with who initiated the call and who decided.

pub mod analysis;
pub mod db;
pub mod feed;
pub mod policy;
pub mod search;
pub mod similarity;
pub mod summary;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use tool_runtime::executor::{Deferred, Executor, ExecutorBuilder, ExecutorConfig, Window};
use tool_runtime::store::Store;
use tool_runtime::{ToolError, ToolSet, toolset};

pub use db::{Edge, GraphDb, MergeStrategy, Node};
pub use search::SearchService;
pub use similarity::Similarity;
pub use summary::Summarizer;

/// The system prompt.
pub const SYSTEM: &str = "You manage a knowledge graph of observations, hypotheses and sources. \
Use the tools to read, find, summarise, link, reclassify, merge or delete nodes; changes wait for \
the user's approval. Answer briefly.";

/// The web search's rate limit unless the configuration sets one: calls per minute.
pub const SEARCH_CALLS_PER_MINUTE: u32 = 5;

/// What the tools use besides the graph: how similarity is scored, who writes summaries, and
/// the web search service.
#[derive(Clone, Debug)]
pub struct Services {
    /// Embeddings or word overlap.
    pub similarity: Similarity,
    /// The model, or extractive summaries.
    pub summarizer: Summarizer,
    /// The web search service.
    pub search: SearchService,
}

impl Services {
    /// From the environment (`TOOLS_MINILM_DIR` with the `minilm` feature, `TOOLS_SEARCH_URL`),
    /// with extractive summaries.
    pub fn from_env() -> Result<Self, ToolError> {
        Ok(Services {
            similarity: Similarity::from_env()?,
            summarizer: Summarizer::extractive(),
            search: SearchService::from_env(),
        })
    }

    /// Word overlap, extractive summaries and no web search: what needs nothing outside.
    pub fn offline() -> Self {
        Services {
            similarity: Similarity::words(),
            summarizer: Summarizer::extractive(),
            search: SearchService::none(),
        }
    }
}

/// Every tool of the graph agent, with its state.
pub fn toolset(db: GraphDb, services: Services) -> ToolSet {
    toolset![
        tools::get_node,
        tools::create_node,
        tools::update_node,
        tools::delete_node,
        tools::create_relationship,
        tools::update_relationship,
        tools::delete_relationship,
        tools::find_related_nodes,
        tools::link_related_nodes,
        tools::summarize_node,
        tools::summarize_node_with_context,
        tools::summarize_relationship,
        tools::recalculate_node_confidence,
        tools::recalculate_edge_confidence,
        tools::reclassify_node,
        tools::reclassify_relationship,
        tools::merge_nodes,
        tools::search_web_for_evidence,
        tools::apply_to_nodes,
        tools::restore_snapshot,
    ]
    .expect("the graph tools have valid schemas")
    .with_state(db)
    .with_state(services.similarity)
    .with_state(services.summarizer)
    .with_state(services.search)
}

/// The executor with the services from the environment (see [`executor_with`]).
pub fn executor(
    db: GraphDb,
    store_path: &Path,
    config: ExecutorConfig,
) -> Result<Executor, ToolError> {
    executor_with(db, Services::from_env()?, store_path, config)
}

/// The executor: every confirmation is deferred (a pending operation in the store at
/// `store_path`), with what [`configure`] adds and the web search limited to
/// [`SEARCH_CALLS_PER_MINUTE`] unless `config` limits it otherwise.
pub fn executor_with(
    db: GraphDb,
    services: Services,
    store_path: &Path,
    config: ExecutorConfig,
) -> Result<Executor, ToolError> {
    let config = with_search_limit(config);
    let builder = Executor::builder(toolset(db.clone(), services.clone()))
        .config(config)
        .confirmation(Deferred);
    configure(builder, db, services, crate::open_store(store_path)?)
        .build()
        .map_err(|e| ToolError::execution(e.to_string()))
}

/// `config` with the web search's own rate limit, unless it has one.
pub fn with_search_limit(mut config: ExecutorConfig) -> ExecutorConfig {
    config
        .rate_limits
        .tools
        .entry(<tools::search_web_for_evidence as tool_runtime::Tool>::NAME.to_owned())
        .or_insert(Window::per_minute(SEARCH_CALLS_PER_MINUTE));
    config
}

/// What the graph agent adds to an executor over its tools, whoever builds it (the agent,
/// `graph serve`, the `graph tools` commands): `store`, previews of every change and undo
/// (see [`policy`]). The configuration and the confirmation handler stay the builder's.
pub fn configure(
    builder: ExecutorBuilder,
    db: GraphDb,
    services: Services,
    store: Arc<dyn Store>,
) -> ExecutorBuilder {
    policy::configure(builder, db, services.similarity, store)
}
