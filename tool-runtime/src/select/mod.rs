//! Pre-selection of tools for large catalogs (seed 004 `pickTools`), never running anything.
//!
//! Build a [`Catalog`] once when the tool catalog is built (it indexes every tool's name words,
//! description, tags and parameters), then [`Catalog::pick`] per request:
//!
//! ```
//! # use tool_runtime::{ToolDefinition, Safety};
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
//! Scorers are pluggable ([`Scorer`]): [`Bm25Scorer`] (the default, over the catalog's inverted
//! index), [`KeywordOverlapScorer`] (the seed's, kept as a baseline), [`EmbeddingScorer`] over any
//! [`Embedder`] (a local all-MiniLM-L6-v2 ships behind the `minilm` feature), [`HybridScorer`],
//! and [`LlmScorer`] over a [`RelevanceClassifier`] a provider client implements.

mod bm25;
mod catalog;
pub mod cli;
mod embed;
mod hybrid;
mod keyword;
mod llm;
mod pick;
mod scorer;
pub mod text;

pub use bm25::{Bm25Config, Bm25Scorer, name_words};
pub use catalog::{Catalog, Pool, ToolId};
#[cfg(feature = "minilm")]
pub use embed::minilm;
pub use embed::{Embedder, EmbeddingScorer, tool_text};
pub use hybrid::HybridScorer;
pub use keyword::KeywordOverlapScorer;
pub use llm::{LlmScorer, RelevanceClassifier, classification_prompt, parse_relevance};
pub use pick::{Candidate, PickOptions, Provenance, pick, pick_from};
pub use scorer::{Deadline, FnScorer, ScoreRequest, Scored, Scorer, ToolScore};
