//! Pre-selection of tools for large catalogs, never running anything.
//!
//! # Pick repeatedly: build a [`Catalog`] once
//!
//! A [`Catalog`] holds the tools' definitions and the inverted index over them (every tool's
//! name words, description, tags and parameters). Building it costs about 20 µs per tool; a
//! query then costs only the postings of its own words (well under a millisecond at 10,000
//! tools). So a program that picks per request, such as an agent loop, builds the catalog when
//! it builds its tools and keeps it next to them:
//!
//! ```
//! # use tool_runtime::{ToolSet, definition::{ToolDefinition, Safety}};
//! # use tool_runtime::select::{Catalog, PickOptions};
//! # use serde_json::json;
//! # fn read_only(name: &'static str, description: &'static str) -> ToolDefinition {
//! #     let mut d = ToolDefinition::new(name, description, &json!({"type": "object"}));
//! #     d.safety = Safety::ReadOnly;
//! #     d
//! # }
//! # futures::executor::block_on(async {
//! let mut tools = ToolSet::new();
//! tools.register_dynamic(read_only("get_weather", "Current weather for a city"), None).unwrap();
//! tools.register_dynamic(read_only("get_time", "Current time in a timezone"), None).unwrap();
//!
//! // Once, when the tools are built (share it with `Arc<Catalog>` across tasks).
//! let mut catalog = Catalog::from_toolset(&tools);
//! let options = PickOptions::new().max_candidates(3);
//!
//! // Per request: no index is rebuilt.
//! for request in ["weather in Oslo?", "what time is it in Tokyo"] {
//!     let picked = catalog.pick(request, &options).await.unwrap();
//!     let offered: Vec<&str> = picked.iter().map(|c| c.name()).collect();
//!     // ... send only `offered` tools' definitions to the model ...
//!     # assert_eq!(offered.len(), 1);
//! }
//!
//! // When the tool set changes, bring the catalog in step: only the changes are (re)indexed.
//! tools.register_dynamic(read_only("get_stock_price", "Latest price of a stock"), None).unwrap();
//! catalog.sync(&tools);
//! assert_eq!(catalog.pick("AAPL stock price", &options).await.unwrap()[0].name(), "get_stock_price");
//! # });
//! ```
//!
//! [`pick`] (over a [`ToolSet`](crate::ToolSet)) and [`pick_from`] (over definitions) are the
//! one-shot conveniences: each call builds a fresh catalog, which suits a single question or a
//! small set, not a loop. Any definitions work too ([`Catalog::from_definitions`]), including
//! names a `ToolSet` would refuse.
//!
//! # Safety filter
//!
//! ```
//! # use tool_runtime::definition::{ToolDefinition, Safety};
//! # use tool_runtime::select::{Catalog, PickOptions};
//! # use serde_json::json;
//! # futures::executor::block_on(async {
//! let mut weather = ToolDefinition::new("get_weather", "Current weather for a city", &json!({"type": "object"}));
//! weather.safety = Safety::ReadOnly;
//! let mut drop = ToolDefinition::new("drop_table", "Delete a database table", &json!({"type": "object"}));
//! drop.safety = Safety::Modify;
//! let catalog = Catalog::from_definitions([weather, drop]).unwrap();
//!
//! let picked = catalog.pick("what's the weather in Paris?", &PickOptions::new()).await.unwrap();
//! assert_eq!(picked[0].name(), "get_weather");
//! // Tools that are not read-only are left out unless allowed.
//! assert!(catalog.pick("delete the table", &PickOptions::new()).await.unwrap().is_empty());
//! # });
//! ```
//!
//! # Scorers
//!
//! Scorers are pluggable ([`Scorer`]): [`Bm25Scorer`] (the default, over the catalog's inverted
//! index), [`KeywordOverlapScorer`] (kept as a baseline), [`EmbeddingScorer`] over any
//! [`Embedder`] (a local all-MiniLM-L6-v2 ships behind the `minilm` feature), [`HybridScorer`]
//! (BM25 and cosine combined by a [`Fusion`] rule), and [`LlmScorer`] over a
//! [`RelevanceClassifier`] a provider client implements.
//!
//! # Embeddings across processes
//!
//! [`EmbeddingScorer`] keeps each tool's vector in memory. Put a `CachedEmbedder` in front of
//! the model to keep them across processes too, in an `EmbeddingCache` (a SQLite file, or Redis
//! for several processes or machines; both need the `sqlite` feature, Redis also `redis`): a new
//! process then reads the catalog's vectors back and loads the model only for a text it has not
//! seen, typically the query.

mod bm25;
mod catalog;
#[cfg(all(feature = "cli", feature = "sqlite"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "cli", feature = "sqlite"))))]
pub mod cli;
mod deadline;
mod embed;
mod hybrid;
mod index;
mod keyword;
mod llm;
mod pick;
mod scorer;
pub mod text;

pub use bm25::Bm25Scorer;
pub use catalog::{Catalog, Pool};
pub use deadline::Deadline;
#[cfg(feature = "minilm")]
pub use embed::minilm;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use embed::{CachedEmbedder, EmbeddingCache};
pub use embed::{Embedder, EmbeddingScorer, tool_text};
pub use hybrid::{Fusion, HybridScorer};
pub use index::{Bm25Config, ToolId};
pub use keyword::KeywordOverlapScorer;
pub use llm::{LlmScorer, RelevanceClassifier, classification_prompt, parse_relevance};
pub use pick::{Candidate, PickOptions, Provenance, pick, pick_from};
pub use scorer::{FnScorer, ScoreRequest, Scored, Scorer, ToolScore};
pub use text::name_words;
