//! The knowledge graph's storage: nodes and relationships in one SQLite file, created and seeded
//! on first use.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::{ErrorCode, ToolError};

/// A shared connection.
#[derive(Clone)]
pub struct GraphDb(Arc<Mutex<Connection>>);

impl std::fmt::Debug for GraphDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GraphDb")
    }
}

/// One node (an observation, a hypothesis, a source...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Node {
    /// Its id, e.g. `obs-1`.
    pub id: String,
    /// Its kind: Observation, Hypothesis, Source, Concept.
    pub kind: String,
    /// Its text.
    pub content: String,
}

/// One relationship between two nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Edge {
    /// Its id.
    pub id: i64,
    /// The source node.
    pub from_id: String,
    /// The target node.
    pub to_id: String,
    /// SUPPORTS, CONTRADICTS, RELATES_TO, DERIVED_FROM.
    pub rel_type: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    content TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS edges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    from_id TEXT NOT NULL,
    to_id TEXT NOT NULL,
    rel_type TEXT NOT NULL
);
";

const SEED_NODES: &[(&str, &str, &str)] = &[
    (
        "obs-1",
        "Observation",
        "Coffee consumption correlates with longer working hours in the survey data.",
    ),
    (
        "obs-2",
        "Observation",
        "Survey respondents who drink coffee report working longer hours.",
    ),
    (
        "hyp-1",
        "Hypothesis",
        "Caffeine increases productivity by delaying fatigue.",
    ),
    (
        "src-1",
        "Source",
        "Smith 2021, a survey of 2000 office workers on coffee and working hours.",
    ),
    (
        "obs-3",
        "Observation",
        "Sleep quality drops when caffeine is consumed after 4 pm.",
    ),
    (
        "con-1",
        "Concept",
        "Fatigue: the loss of capacity to work after sustained effort.",
    ),
];

const SEED_EDGES: &[(&str, &str, &str)] = &[
    ("obs-1", "hyp-1", "SUPPORTS"),
    ("obs-1", "src-1", "DERIVED_FROM"),
    ("obs-2", "src-1", "DERIVED_FROM"),
    ("obs-3", "hyp-1", "CONTRADICTS"),
    ("hyp-1", "con-1", "RELATES_TO"),
];

fn sql_err(e: rusqlite::Error) -> ToolError {
    ToolError::new(ErrorCode::INTERNAL, format!("database error: {e}"))
}

/// The words of a text that carry meaning (lower case, longer than 3 letters).
pub fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 3)
        .map(str::to_lowercase)
        .collect()
}

/// Jaccard similarity of two texts' words, 0 to 1.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

impl GraphDb {
    /// Opens (and on first use creates and seeds) the graph at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<GraphDb, ToolError> {
        if let Some(dir) = path.as_ref().parent() {
            std::fs::create_dir_all(dir)?;
        }
        Self::init(Connection::open(path).map_err(sql_err)?)
    }

    /// An in-memory graph, seeded.
    pub fn in_memory() -> Result<GraphDb, ToolError> {
        Self::init(Connection::open_in_memory().map_err(sql_err)?)
    }

    fn init(conn: Connection) -> Result<GraphDb, ToolError> {
        conn.execute_batch(SCHEMA).map_err(sql_err)?;
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM nodes", [], |r| r.get(0))
            .map_err(sql_err)?;
        if count == 0 {
            for (id, kind, content) in SEED_NODES {
                conn.execute(
                    "INSERT INTO nodes (id, kind, content) VALUES (?1, ?2, ?3)",
                    params![id, kind, content],
                )
                .map_err(sql_err)?;
            }
            for (from, to, rel) in SEED_EDGES {
                conn.execute(
                    "INSERT INTO edges (from_id, to_id, rel_type) VALUES (?1, ?2, ?3)",
                    params![from, to, rel],
                )
                .map_err(sql_err)?;
            }
        }
        Ok(GraphDb(Arc::new(Mutex::new(conn))))
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, ToolError> {
        let conn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).map_err(sql_err)
    }

    /// Every node, by id.
    pub fn nodes(&self) -> Result<Vec<Node>, ToolError> {
        self.with(|c| {
            let mut st = c.prepare("SELECT id, kind, content FROM nodes ORDER BY id")?;
            st.query_map([], |r| {
                Ok(Node {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    content: r.get(2)?,
                })
            })?
            .collect()
        })
    }

    /// One node, or `NOT_FOUND` naming the nodes whose ids look alike.
    pub fn node(&self, id: &str) -> Result<Node, ToolError> {
        let found = self.with(|c| {
            c.query_row(
                "SELECT id, kind, content FROM nodes WHERE id = ?1",
                [id],
                |r| {
                    Ok(Node {
                        id: r.get(0)?,
                        kind: r.get(1)?,
                        content: r.get(2)?,
                    })
                },
            )
            .optional()
        })?;
        if let Some(n) = found {
            return Ok(n);
        }
        // Case-insensitive: a model writes "OBS-3" for "obs-3", and the exact id is the useful hint.
        let prefix: String = id
            .chars()
            .take_while(|c| *c != '-')
            .collect::<String>()
            .to_lowercase();
        let mut alike: Vec<String> = self
            .nodes()?
            .into_iter()
            .map(|n| n.id)
            .filter(|n| n.to_lowercase().starts_with(&prefix))
            .collect();
        if alike.is_empty() {
            alike = self.nodes()?.into_iter().map(|n| n.id).take(5).collect();
        }
        Err(
            ToolError::new(ErrorCode::NOT_FOUND, format!("there is no node {id:?}"))
                .recover(format!(
                    "use an existing node id, e.g. one of {alike:?}, or find_related_nodes from a known node"
                )),
        )
    }

    /// The relationships touching a node.
    pub fn edges_of(&self, id: &str) -> Result<Vec<Edge>, ToolError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, from_id, to_id, rel_type FROM edges WHERE from_id = ?1 OR to_id = ?1 ORDER BY id",
            )?;
            st.query_map([id], |r| {
                Ok(Edge {
                    id: r.get(0)?,
                    from_id: r.get(1)?,
                    to_id: r.get(2)?,
                    rel_type: r.get(3)?,
                })
            })?
            .collect()
        })
    }

    /// Deletes a node; with `cascade` its relationships too. Without it, a node that still has
    /// relationships is refused (they would dangle).
    pub fn delete_node(&self, id: &str, cascade: bool) -> Result<usize, ToolError> {
        self.node(id)?;
        let edges = self.edges_of(id)?.len();
        if edges > 0 && !cascade {
            return Err(ToolError::new(
                ErrorCode::of("HAS_RELATIONSHIPS"),
                format!("node {id:?} has {edges} relationships"),
            )
            .recover("delete with cascade=true to remove its relationships too"));
        }
        self.with(|c| {
            c.execute("DELETE FROM edges WHERE from_id = ?1 OR to_id = ?1", [id])?;
            c.execute("DELETE FROM nodes WHERE id = ?1", [id])
        })?;
        Ok(edges)
    }

    /// Merges `secondary` into `primary`: the content combined (or one side kept), the
    /// relationships moved to `primary` (self-loops dropped), `secondary` removed. Returns the
    /// merged content and how many relationships moved.
    pub fn merge(
        &self,
        primary: &str,
        secondary: &str,
        strategy: MergeStrategy,
    ) -> Result<(String, usize), ToolError> {
        if primary == secondary {
            return Err(ToolError::new(
                ErrorCode::INVALID_ARGUMENTS,
                "a node cannot be merged into itself",
            )
            .recover("pass two different node ids"));
        }
        let p = self.node(primary)?;
        let s = self.node(secondary)?;
        let content = match strategy {
            MergeStrategy::Combine => format!("{} {}", p.content, s.content),
            MergeStrategy::PreferPrimary => p.content,
            MergeStrategy::PreferSecondary => s.content,
        };
        let moved = self.with(|c| {
            let a = c.execute(
                "UPDATE edges SET from_id = ?1 WHERE from_id = ?2 AND to_id <> ?1",
                [primary, secondary],
            )?;
            let b = c.execute(
                "UPDATE edges SET to_id = ?1 WHERE to_id = ?2 AND from_id <> ?1",
                [primary, secondary],
            )?;
            c.execute(
                "DELETE FROM edges WHERE from_id = ?1 OR to_id = ?1",
                [secondary],
            )?;
            c.execute(
                "UPDATE nodes SET content = ?2 WHERE id = ?1",
                [primary, &content],
            )?;
            c.execute("DELETE FROM nodes WHERE id = ?1", [secondary])?;
            Ok(a + b)
        })?;
        Ok((content, moved))
    }
}

/// How `merge_nodes` combines content.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MergeStrategy {
    /// Both texts, primary first.
    #[default]
    Combine,
    /// Keep the primary's text.
    PreferPrimary,
    /// Keep the secondary's text.
    PreferSecondary,
}
