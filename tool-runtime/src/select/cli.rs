//! `tools pick "QUERY" [--top K] [--scorer bm25|keyword|embedding|hybrid] [--min-score S]
//! [--allow-unsafe] [--debug]`: pre-selection from the command line.

use std::sync::Arc;

use clap::{Arg, ArgAction, value_parser};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::catalog::Catalog;
use super::embed::{Embedder, EmbeddingScorer};
use super::hybrid::HybridScorer;
use super::keyword::KeywordOverlapScorer;
use super::pick::PickOptions;
use super::scorer::Scorer;
use crate::cli::{CliCommand, Exit, Output};
use crate::toolset::ToolSet;

/// The `pick` subcommand. The semantic scorers need an [`Embedder`]; without one they are refused
/// with a usage error that says how to provide it.
#[derive(Default, Clone)]
pub struct PickCommand {
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for PickCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PickCommand")
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.model().to_owned()),
            )
            .finish()
    }
}

impl PickCommand {
    /// `pick` with the lexical scorers only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Enables `--scorer embedding` and `--scorer hybrid` with this embedder.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// `pick` with the local MiniLM embedder when `TOOLS_MINILM_DIR` names a model directory, and
    /// the lexical scorers only otherwise.
    #[cfg(feature = "minilm")]
    pub fn from_env() -> Self {
        match super::embed::minilm::MiniLm::from_env() {
            Some(Ok(model)) => Self::new().with_embedder(Arc::new(model)),
            _ => Self::new(),
        }
    }
}

const SCORERS: [&str; 4] = ["bm25", "keyword", "embedding", "hybrid"];

impl CliCommand for PickCommand {
    fn command(&self) -> clap::Command {
        clap::Command::new("pick")
            .about("Rank the tools for a request and print the best candidates (runs nothing)")
            .arg(Arg::new("query").required(true).help("The user's request"))
            .arg(
                Arg::new("top")
                    .long("top")
                    .value_parser(value_parser!(usize))
                    .default_value("3")
                    .help("How many candidates to print"),
            )
            .arg(
                Arg::new("scorer")
                    .long("scorer")
                    .value_parser(SCORERS)
                    .default_value("bm25")
                    .help("bm25 (default), keyword (seed baseline), embedding or hybrid"),
            )
            .arg(
                Arg::new("min-score")
                    .long("min-score")
                    .value_parser(value_parser!(f64))
                    .default_value("0.05")
                    .help("Leave out candidates scoring below this (0..1)"),
            )
            .arg(
                Arg::new("allow-unsafe")
                    .long("allow-unsafe")
                    .action(ArgAction::SetTrue)
                    .help("Also consider tools that are not read-only"),
            )
            .arg(
                Arg::new("debug")
                    .long("debug")
                    .action(ArgAction::SetTrue)
                    .help("Include scorer details and excluded tools in the provenance"),
            )
    }

    fn run<'a>(
        &'a self,
        toolset: &'a ToolSet,
        matches: &'a clap::ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit> {
        async move {
            let query = matches.get_one::<String>("query").map(String::as_str).unwrap_or("");
            let top = matches.get_one::<usize>("top").copied().unwrap_or(3);
            let min_score = matches.get_one::<f64>("min-score").copied().unwrap_or(0.05);
            let scorer_name = matches.get_one::<String>("scorer").map(String::as_str).unwrap_or("bm25");
            let catalog = Catalog::from_toolset(toolset);
            let scorer: Option<Arc<dyn Scorer>> = match scorer_name {
                "keyword" => Some(Arc::new(KeywordOverlapScorer)),
                "embedding" | "hybrid" => {
                    let Some(embedder) = self.embedder.clone() else {
                        let _ = writeln!(
                            output.err,
                            "error: --scorer {scorer_name} needs an embedding model; set TOOLS_MINILM_DIR \
                             to a directory with all-MiniLM-L6-v2 (model.safetensors, tokenizer.json) \
                             in a build with the `minilm` feature, or use --scorer bm25"
                        );
                        return Exit::Usage;
                    };
                    let semantic = Arc::new(EmbeddingScorer::new(embedder));
                    if scorer_name == "embedding" {
                        Some(semantic)
                    } else {
                        Some(Arc::new(HybridScorer::new(semantic)))
                    }
                }
                _ => None,
            };
            let mut options = PickOptions::new()
                .max_candidates(top)
                .min_score(min_score)
                .allow_unsafe(matches.get_flag("allow-unsafe"))
                .debug(matches.get_flag("debug"));
            if let Some(s) = scorer {
                options = options.scorer(s);
            }
            let candidates = match catalog.pick(query, &options).await {
                Ok(c) => c,
                Err(e) => {
                    let _ = writeln!(output.err, "error: {}", e.message);
                    return Exit::Refused;
                }
            };
            if output.json {
                let text = serde_json::to_string_pretty(&candidates)
                    .expect("candidates serialize to JSON");
                let _ = writeln!(output.out, "{text}");
            } else if candidates.is_empty() {
                let _ = writeln!(
                    output.out,
                    "no tool scored at least {min_score} for this request{}",
                    if matches.get_flag("allow-unsafe") {
                        ""
                    } else {
                        " (only read-only tools are considered; --allow-unsafe widens the search)"
                    }
                );
            } else {
                for c in &candidates {
                    let _ = writeln!(
                        output.out,
                        "{}. {}  {:.3}  {}",
                        c.provenance.rank,
                        c.name(),
                        c.score,
                        c.reason
                    );
                }
            }
            Exit::Success
        }
        .boxed()
    }
}
