//! The knowledge graph's storage: nodes and relationships in one SQLite file, created and seeded
//! on first use. Every change writes a snapshot of what it replaced (see [`change`]), so each
//! modifying tool can be undone by restoring it.

pub mod change;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, Row, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::{ErrorCode, ToolError};

pub use change::{MergeStrategy, Snapshot};

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
    /// Its id, e.g. `obs-1`; it never changes, even when the node is reclassified.
    pub id: String,
    /// Its type: Observation, Hypothesis, Source, Concept.
    pub kind: String,
    /// Its text.
    pub content: String,
    /// How far the graph believes it, 0 to 1.
    pub confidence: f64,
    /// For sources found on the web: where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where its content came from: merges and searches add a line each, so a merged node still
    /// says what it was made of.
    #[serde(default)]
    pub provenance: Vec<String>,
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
    /// How sure the link is, 0 to 1.
    pub confidence: f64,
    /// Free notes about the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// The node types a node may have.
pub const NODE_TYPES: &[&str] = &["Observation", "Hypothesis", "Source", "Concept"];

/// The relationship types a relationship may have.
pub const REL_TYPES: &[&str] = &["SUPPORTS", "CONTRADICTS", "RELATES_TO", "DERIVED_FROM"];

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
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    body TEXT NOT NULL,
    restored INTEGER NOT NULL DEFAULT 0
);
";

/// Columns added to a graph file that lacks them when it is opened, so older files keep working.
const COLUMNS: &[(&str, &str, &str)] = &[
    ("nodes", "confidence", "REAL NOT NULL DEFAULT 0.5"),
    ("nodes", "url", "TEXT"),
    ("nodes", "provenance", "TEXT NOT NULL DEFAULT '[]'"),
    ("edges", "confidence", "REAL NOT NULL DEFAULT 1.0"),
    ("edges", "notes", "TEXT"),
];

const SEED_NODES: &[(&str, &str, f64, &str)] = &[
    (
        "obs-1",
        "Observation",
        0.7,
        "Coffee consumption correlates with longer working hours in the survey data.",
    ),
    (
        "obs-2",
        "Observation",
        0.6,
        "Survey respondents who drink coffee report working longer hours.",
    ),
    (
        "hyp-1",
        "Hypothesis",
        0.5,
        "Caffeine increases productivity by delaying fatigue.",
    ),
    (
        "src-1",
        "Source",
        0.8,
        "Smith 2021, a survey of 2000 office workers on coffee and working hours.",
    ),
    (
        "obs-3",
        "Observation",
        0.7,
        "Sleep quality drops when caffeine is consumed after 4 pm.",
    ),
    (
        "con-1",
        "Concept",
        0.9,
        "Fatigue: the loss of capacity to work after sustained effort.",
    ),
];

const SEED_EDGES: &[(&str, &str, &str, f64)] = &[
    ("obs-1", "hyp-1", "SUPPORTS", 0.8),
    ("obs-1", "src-1", "DERIVED_FROM", 1.0),
    ("obs-2", "src-1", "DERIVED_FROM", 1.0),
    ("obs-3", "hyp-1", "CONTRADICTS", 0.6),
    ("hyp-1", "con-1", "RELATES_TO", 0.9),
];

pub(crate) fn sql_err(e: rusqlite::Error) -> ToolError {
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

pub(crate) const NODE_COLUMNS: &str = "id, kind, content, confidence, url, provenance";
pub(crate) const EDGE_COLUMNS: &str = "id, from_id, to_id, rel_type, confidence, notes";

pub(crate) fn node_row(r: &Row<'_>) -> rusqlite::Result<Node> {
    let provenance: String = r.get(5)?;
    Ok(Node {
        id: r.get(0)?,
        kind: r.get(1)?,
        content: r.get(2)?,
        confidence: r.get(3)?,
        url: r.get(4)?,
        provenance: serde_json::from_str(&provenance).unwrap_or_default(),
    })
}

pub(crate) fn edge_row(r: &Row<'_>) -> rusqlite::Result<Edge> {
    Ok(Edge {
        id: r.get(0)?,
        from_id: r.get(1)?,
        to_id: r.get(2)?,
        rel_type: r.get(3)?,
        confidence: r.get(4)?,
        notes: r.get(5)?,
    })
}

/// A confidence must be a number from 0 to 1.
pub fn check_confidence(what: &str, value: f64) -> Result<f64, ToolError> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            format!("{what} must be between 0 and 1, not {value}"),
        )
        .recover("give a confidence from 0 (no belief) to 1 (certain)"))
    }
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
        for (table, column, decl) in COLUMNS {
            let present: bool = conn
                .query_row(
                    &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
                    [column],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(sql_err)?
                > 0;
            if !present {
                conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))
                    .map_err(sql_err)?;
            }
        }
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM nodes", [], |r| r.get(0))
            .map_err(sql_err)?;
        if count == 0 {
            for (id, kind, confidence, content) in SEED_NODES {
                conn.execute(
                    "INSERT INTO nodes (id, kind, content, confidence) VALUES (?1, ?2, ?3, ?4)",
                    params![id, kind, content, confidence],
                )
                .map_err(sql_err)?;
            }
            for (from, to, rel, confidence) in SEED_EDGES {
                conn.execute(
                    "INSERT INTO edges (from_id, to_id, rel_type, confidence) VALUES (?1, ?2, ?3, ?4)",
                    params![from, to, rel, confidence],
                )
                .map_err(sql_err)?;
            }
        }
        Ok(GraphDb(Arc::new(Mutex::new(conn))))
    }

    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, ToolError> {
        let conn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).map_err(sql_err)
    }

    /// Runs `f` in one transaction: everything it changes lands, or nothing does.
    pub(crate) fn transaction<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let conn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.unchecked_transaction().map_err(sql_err)?;
        let out = f(&tx)?;
        tx.commit().map_err(sql_err)?;
        Ok(out)
    }

    /// Every node, by id.
    pub fn nodes(&self) -> Result<Vec<Node>, ToolError> {
        self.with(|c| {
            let mut st = c.prepare(&format!("SELECT {NODE_COLUMNS} FROM nodes ORDER BY id"))?;
            st.query_map([], node_row)?.collect()
        })
    }

    /// Every relationship, by id.
    pub fn edges(&self) -> Result<Vec<Edge>, ToolError> {
        self.with(|c| {
            let mut st = c.prepare(&format!("SELECT {EDGE_COLUMNS} FROM edges ORDER BY id"))?;
            st.query_map([], edge_row)?.collect()
        })
    }

    /// One node, or `NOT_FOUND` naming the nodes whose ids look alike.
    pub fn node(&self, id: &str) -> Result<Node, ToolError> {
        let found = self.with(|c| {
            c.query_row(
                &format!("SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?1"),
                [id],
                node_row,
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

    /// One relationship, or `NOT_FOUND` naming some that exist.
    pub fn edge(&self, id: i64) -> Result<Edge, ToolError> {
        let found = self.with(|c| {
            c.query_row(
                &format!("SELECT {EDGE_COLUMNS} FROM edges WHERE id = ?1"),
                [id],
                edge_row,
            )
            .optional()
        })?;
        found.ok_or_else(|| {
            let some: Vec<i64> = self
                .edges()
                .unwrap_or_default()
                .into_iter()
                .map(|e| e.id)
                .take(8)
                .collect();
            ToolError::new(
                ErrorCode::NOT_FOUND,
                format!("there is no relationship {id}"),
            )
            .recover(format!(
                "use an existing relationship id, e.g. one of {some:?}; get_node lists a node's relationships"
            ))
        })
    }

    /// The relationships touching a node.
    pub fn edges_of(&self, id: &str) -> Result<Vec<Edge>, ToolError> {
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {EDGE_COLUMNS} FROM edges WHERE from_id = ?1 OR to_id = ?1 ORDER BY id"
            ))?;
            st.query_map([id], edge_row)?.collect()
        })
    }

    /// The Source node already recorded for `url`, if any.
    pub fn source_with_url(&self, url: &str) -> Result<Option<Node>, ToolError> {
        self.with(|c| {
            c.query_row(
                &format!("SELECT {NODE_COLUMNS} FROM nodes WHERE url = ?1 ORDER BY id LIMIT 1"),
                [url],
                node_row,
            )
            .optional()
        })
    }
}
