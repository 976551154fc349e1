//! Every change to the graph, each in one transaction that also stores a [`Snapshot`] of what it
//! replaced: restoring the snapshot puts the graph back as it was, which is how the modifying
//! tools are undone.

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::{ErrorCode, ToolError};

use super::{
    EDGE_COLUMNS, Edge, GraphDb, NODE_COLUMNS, Node, check_confidence, edge_row, node_row, sql_err,
};

/// What a change replaced: the nodes and relationships as they were before it (put back as they
/// were), and what it created (removed again).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Nodes as they were.
    pub nodes: Vec<Node>,
    /// Relationships as they were.
    pub edges: Vec<Edge>,
    /// Nodes the change created.
    pub created_nodes: Vec<String>,
    /// Relationships the change created.
    pub created_edges: Vec<i64>,
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

impl MergeStrategy {
    /// The merged node's content when `secondary` is merged into `primary`.
    pub fn content(self, primary: &Node, secondary: &Node) -> String {
        match self {
            MergeStrategy::Combine => format!("{} {}", primary.content, secondary.content),
            MergeStrategy::PreferPrimary => primary.content.clone(),
            MergeStrategy::PreferSecondary => secondary.content.clone(),
        }
    }
}

fn get_node(c: &Connection, id: &str) -> Result<Option<Node>, ToolError> {
    c.query_row(
        &format!("SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?1"),
        [id],
        node_row,
    )
    .optional()
    .map_err(sql_err)
}

fn edges_of(c: &Connection, id: &str) -> Result<Vec<Edge>, ToolError> {
    let mut st = c
        .prepare(&format!(
            "SELECT {EDGE_COLUMNS} FROM edges WHERE from_id = ?1 OR to_id = ?1 ORDER BY id"
        ))
        .map_err(sql_err)?;
    st.query_map([id], edge_row)
        .and_then(|rows| rows.collect())
        .map_err(sql_err)
}

fn put_node(c: &Connection, n: &Node) -> Result<(), ToolError> {
    let provenance = serde_json::to_string(&n.provenance).expect("strings serialize");
    c.execute(
        "INSERT OR REPLACE INTO nodes (id, kind, content, confidence, url, provenance) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![n.id, n.kind, n.content, n.confidence, n.url, provenance],
    )
    .map_err(sql_err)?;
    Ok(())
}

fn put_edge(c: &Connection, e: &Edge) -> Result<(), ToolError> {
    c.execute(
        "INSERT OR REPLACE INTO edges (id, from_id, to_id, rel_type, confidence, notes) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![e.id, e.from_id, e.to_id, e.rel_type, e.confidence, e.notes],
    )
    .map_err(sql_err)?;
    Ok(())
}

fn save(c: &Connection, snapshot: &Snapshot) -> Result<i64, ToolError> {
    let body = serde_json::to_string(snapshot).expect("a snapshot serializes");
    c.execute("INSERT INTO snapshots (body) VALUES (?1)", [body])
        .map_err(sql_err)?;
    Ok(c.last_insert_rowid())
}

/// The prefix of new ids of a node type (`Observation` → `obs`).
pub fn id_prefix(kind: &str) -> String {
    match kind {
        "Observation" => "obs".into(),
        "Hypothesis" => "hyp".into(),
        "Source" => "src".into(),
        "Concept" => "con".into(),
        other => other.chars().take(3).collect::<String>().to_lowercase(),
    }
}

fn next_id(c: &Connection, kind: &str) -> Result<String, ToolError> {
    let prefix = id_prefix(kind);
    let mut st = c
        .prepare("SELECT id FROM nodes WHERE id LIKE ?1 || '-%'")
        .map_err(sql_err)?;
    let ids: Vec<String> = st
        .query_map([&prefix], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(sql_err)?;
    let max = ids
        .iter()
        .filter_map(|id| id.rsplit('-').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    Ok(format!("{prefix}-{}", max + 1))
}

/// What a new node is made of.
#[derive(Debug, Clone, Default)]
pub struct NewNode {
    /// Its type.
    pub kind: String,
    /// Its text.
    pub content: String,
    /// Its confidence.
    pub confidence: f64,
    /// Where it is on the web, for sources.
    pub url: Option<String>,
    /// Where it came from.
    pub provenance: Vec<String>,
}

/// What a new relationship is made of.
#[derive(Debug, Clone)]
pub struct NewEdge {
    /// The source node.
    pub from_id: String,
    /// The target node.
    pub to_id: String,
    /// Its type.
    pub rel_type: String,
    /// Its confidence.
    pub confidence: f64,
    /// Notes.
    pub notes: Option<String>,
}

fn insert_node(c: &Connection, new: &NewNode) -> Result<Node, ToolError> {
    let node = Node {
        id: next_id(c, &new.kind)?,
        kind: new.kind.clone(),
        content: new.content.clone(),
        confidence: check_confidence("confidence", new.confidence)?,
        url: new.url.clone(),
        provenance: new.provenance.clone(),
    };
    put_node(c, &node)?;
    Ok(node)
}

fn insert_edge(c: &Connection, new: &NewEdge) -> Result<Edge, ToolError> {
    for id in [&new.from_id, &new.to_id] {
        if get_node(c, id)?.is_none() {
            return Err(
                ToolError::new(ErrorCode::NOT_FOUND, format!("there is no node {id:?}"))
                    .recover("link existing nodes; get_node or find_related_nodes finds them"),
            );
        }
    }
    if new.from_id == new.to_id {
        return Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            "a relationship joins two different nodes",
        )
        .recover("give two different node ids"));
    }
    let duplicate: Option<i64> = c
        .query_row(
            "SELECT id FROM edges WHERE from_id = ?1 AND to_id = ?2 AND rel_type = ?3",
            params![new.from_id, new.to_id, new.rel_type],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql_err)?;
    if let Some(id) = duplicate {
        return Err(ToolError::new(
            ErrorCode::of("ALREADY_EXISTS"),
            format!(
                "relationship {id} already says {} {} {}",
                new.from_id, new.rel_type, new.to_id
            ),
        )
        .recover(format!(
            "use relationship {id} (update_relationship changes it)"
        )));
    }
    c.execute(
        "INSERT INTO edges (from_id, to_id, rel_type, confidence, notes) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            new.from_id,
            new.to_id,
            new.rel_type,
            check_confidence("confidence", new.confidence)?,
            new.notes
        ],
    )
    .map_err(sql_err)?;
    Ok(Edge {
        id: c.last_insert_rowid(),
        from_id: new.from_id.clone(),
        to_id: new.to_id.clone(),
        rel_type: new.rel_type.clone(),
        confidence: new.confidence,
        notes: new.notes.clone(),
    })
}

impl GraphDb {
    fn node_in(&self, c: &Connection, id: &str) -> Result<Node, ToolError> {
        match get_node(c, id)? {
            Some(n) => Ok(n),
            // `GraphDb::node`'s hint lists other nodes, which needs the lock this transaction holds
            None => Err(
                ToolError::new(ErrorCode::NOT_FOUND, format!("there is no node {id:?}"))
                    .recover("use an existing node id; find_related_nodes or get_node finds them"),
            ),
        }
    }

    /// Creates a node (its id from its type: `obs-4`, `hyp-2`...) and the relationships `links`
    /// makes from it (`None` as an end stands for the new node). Returns the node, the
    /// relationships, and the snapshot id that removes them again.
    pub fn create_node(
        &self,
        new: &NewNode,
        links: &[NewEdge],
    ) -> Result<(Node, Vec<Edge>, i64), ToolError> {
        self.transaction(|c| {
            let node = insert_node(c, new)?;
            let mut edges = Vec::new();
            for link in links {
                let mut link = link.clone();
                for end in [&mut link.from_id, &mut link.to_id] {
                    if end.is_empty() {
                        *end = node.id.clone();
                    }
                }
                edges.push(insert_edge(c, &link)?);
            }
            let snap = save(
                c,
                &Snapshot {
                    created_nodes: vec![node.id.clone()],
                    created_edges: edges.iter().map(|e| e.id).collect(),
                    ..Default::default()
                },
            )?;
            Ok((node, edges, snap))
        })
    }

    /// Creates nodes and relationships together (the web search's sources and their links);
    /// an end naming `#N` is the N-th new node. Returns them and the snapshot id.
    pub fn create_many(
        &self,
        nodes: &[NewNode],
        links: &[NewEdge],
    ) -> Result<(Vec<Node>, Vec<Edge>, i64), ToolError> {
        self.transaction(|c| {
            let mut created = Vec::new();
            for n in nodes {
                created.push(insert_node(c, n)?);
            }
            let mut edges = Vec::new();
            for link in links {
                let mut link = link.clone();
                for end in [&mut link.from_id, &mut link.to_id] {
                    if let Some(i) = end.strip_prefix('#').and_then(|i| i.parse::<usize>().ok()) {
                        *end = created[i].id.clone();
                    }
                }
                edges.push(insert_edge(c, &link)?);
            }
            let snap = save(
                c,
                &Snapshot {
                    created_nodes: created.iter().map(|n| n.id.clone()).collect(),
                    created_edges: edges.iter().map(|e| e.id).collect(),
                    ..Default::default()
                },
            )?;
            Ok((created, edges, snap))
        })
    }

    /// Changes a node's text and/or confidence. Returns it before and after, and the snapshot id.
    pub fn update_node(
        &self,
        id: &str,
        content: Option<String>,
        confidence: Option<f64>,
    ) -> Result<(Node, Node, i64), ToolError> {
        if content.is_none() && confidence.is_none() {
            return Err(
                ToolError::new(ErrorCode::INVALID_ARGUMENTS, "nothing to update")
                    .recover("give a new content, a new confidence, or both"),
            );
        }
        if let Some(v) = confidence {
            check_confidence("confidence", v)?;
        }
        self.transaction(|c| {
            let before = self.node_in(c, id)?;
            let mut after = before.clone();
            if let Some(text) = content {
                after.content = text;
            }
            if let Some(v) = confidence {
                after.confidence = v;
            }
            put_node(c, &after)?;
            let snap = save(
                c,
                &Snapshot {
                    nodes: vec![before.clone()],
                    ..Default::default()
                },
            )?;
            Ok((before, after, snap))
        })
    }

    /// Deletes a node; with `cascade` its relationships too. Without it, a node that still has
    /// relationships is refused (they would dangle). Returns how many relationships went and the
    /// snapshot id.
    pub fn delete_node(&self, id: &str, cascade: bool) -> Result<(usize, i64), ToolError> {
        self.node(id)?;
        self.transaction(|c| {
            let node = self.node_in(c, id)?;
            let edges = edges_of(c, id)?;
            if !edges.is_empty() && !cascade {
                return Err(ToolError::new(
                    ErrorCode::of("HAS_RELATIONSHIPS"),
                    format!("node {id:?} has {} relationships", edges.len()),
                )
                .recover("delete with cascade=true to remove its relationships too"));
            }
            c.execute("DELETE FROM edges WHERE from_id = ?1 OR to_id = ?1", [id])
                .map_err(sql_err)?;
            c.execute("DELETE FROM nodes WHERE id = ?1", [id])
                .map_err(sql_err)?;
            let n = edges.len();
            let snap = save(
                c,
                &Snapshot {
                    nodes: vec![node],
                    edges,
                    ..Default::default()
                },
            )?;
            Ok((n, snap))
        })
    }

    /// Creates a relationship between two existing, different nodes (a duplicate of the same
    /// type and direction is refused). Returns it and the snapshot id.
    pub fn create_edge(&self, new: &NewEdge) -> Result<(Edge, i64), ToolError> {
        self.transaction(|c| {
            let edge = insert_edge(c, new)?;
            let snap = save(
                c,
                &Snapshot {
                    created_edges: vec![edge.id],
                    ..Default::default()
                },
            )?;
            Ok((edge, snap))
        })
    }

    /// Changes a relationship: `f` edits a copy, which replaces it. Returns it before and
    /// after, and the snapshot id.
    pub fn change_edge(
        &self,
        id: i64,
        f: impl FnOnce(&mut Edge) -> Result<(), ToolError>,
    ) -> Result<(Edge, Edge, i64), ToolError> {
        let before = self.edge(id)?;
        let mut after = before.clone();
        f(&mut after)?;
        check_confidence("confidence", after.confidence)?;
        self.transaction(|c| {
            put_edge(c, &after)?;
            let snap = save(
                c,
                &Snapshot {
                    edges: vec![before.clone()],
                    ..Default::default()
                },
            )?;
            Ok((before, after, snap))
        })
    }

    /// Deletes a relationship. Returns it and the snapshot id.
    pub fn delete_edge(&self, id: i64) -> Result<(Edge, i64), ToolError> {
        let edge = self.edge(id)?;
        self.transaction(|c| {
            c.execute("DELETE FROM edges WHERE id = ?1", [id])
                .map_err(sql_err)?;
            let snap = save(
                c,
                &Snapshot {
                    edges: vec![edge.clone()],
                    ..Default::default()
                },
            )?;
            Ok((edge, snap))
        })
    }

    /// Changes a node's type; its id stays (other nodes refer to it). Without
    /// `preserve_relationships` its relationships are removed. Returns the node before, the
    /// relationships removed and the snapshot id.
    pub fn reclassify_node(
        &self,
        id: &str,
        new_type: &str,
        preserve_relationships: bool,
    ) -> Result<(Node, Vec<Edge>, i64), ToolError> {
        let before = self.node(id)?;
        self.transaction(|c| {
            let removed = if preserve_relationships {
                Vec::new()
            } else {
                let edges = edges_of(c, id)?;
                c.execute("DELETE FROM edges WHERE from_id = ?1 OR to_id = ?1", [id])
                    .map_err(sql_err)?;
                edges
            };
            let mut after = before.clone();
            after.kind = new_type.to_owned();
            put_node(c, &after)?;
            let snap = save(
                c,
                &Snapshot {
                    nodes: vec![before.clone()],
                    edges: removed.clone(),
                    ..Default::default()
                },
            )?;
            Ok((before, removed, snap))
        })
    }

    /// Merges `secondary` into `primary`: the content combined (or one side kept), the higher
    /// confidence kept, the relationships moved to `primary` (a relationship between the two, or
    /// one `primary` already has, is dropped), `secondary` removed, and `primary`'s provenance
    /// extended with `secondary`'s and a line naming it. Returns the merged node, how many
    /// relationships moved and the snapshot id.
    pub fn merge(
        &self,
        primary: &str,
        secondary: &str,
        strategy: MergeStrategy,
    ) -> Result<(Node, usize, i64), ToolError> {
        if primary == secondary {
            return Err(ToolError::new(
                ErrorCode::INVALID_ARGUMENTS,
                "a node cannot be merged into itself",
            )
            .recover("pass two different node ids"));
        }
        let p = self.node(primary)?;
        let s = self.node(secondary)?;
        self.transaction(|c| {
            let s_edges = edges_of(c, secondary)?;
            let p_edges = edges_of(c, primary)?;
            let mut merged = p.clone();
            merged.content = strategy.content(&p, &s);
            merged.confidence = p.confidence.max(s.confidence);
            if merged.url.is_none() {
                merged.url = s.url.clone();
            }
            merged.provenance.extend(s.provenance.iter().cloned());
            merged.provenance.push(format!(
                "merged from {} ({}, confidence {:.2}): {}",
                s.id, s.kind, s.confidence, s.content
            ));
            let mut moved = 0;
            for e in &s_edges {
                let mut e2 = e.clone();
                if e2.from_id == secondary {
                    e2.from_id = primary.to_owned();
                }
                if e2.to_id == secondary {
                    e2.to_id = primary.to_owned();
                }
                let self_loop = e2.from_id == e2.to_id;
                let duplicate = p_edges.iter().any(|p| {
                    p.from_id == e2.from_id && p.to_id == e2.to_id && p.rel_type == e2.rel_type
                });
                if self_loop || duplicate {
                    c.execute("DELETE FROM edges WHERE id = ?1", [e.id])
                        .map_err(sql_err)?;
                } else {
                    put_edge(c, &e2)?;
                    moved += 1;
                }
            }
            put_node(c, &merged)?;
            c.execute("DELETE FROM nodes WHERE id = ?1", [secondary])
                .map_err(sql_err)?;
            let snap = save(
                c,
                &Snapshot {
                    nodes: vec![p.clone(), s.clone()],
                    edges: s_edges,
                    ..Default::default()
                },
            )?;
            Ok((merged, moved, snap))
        })
    }

    /// What merging `secondary` into `primary` does to `secondary`'s relationships: how many
    /// move, and how many are dropped (they would join `primary` to itself, or repeat one it
    /// has).
    pub fn merge_moves(&self, primary: &str, secondary: &str) -> Result<(usize, usize), ToolError> {
        let p_edges = self.edges_of(primary)?;
        let (mut moved, mut dropped) = (0, 0);
        for e in self.edges_of(secondary)? {
            let swap = |id: String| {
                if id == secondary {
                    primary.to_owned()
                } else {
                    id
                }
            };
            let (from, to) = (swap(e.from_id), swap(e.to_id));
            let repeat = p_edges
                .iter()
                .any(|p| p.from_id == from && p.to_id == to && p.rel_type == e.rel_type);
            if from == to || repeat {
                dropped += 1;
            } else {
                moved += 1;
            }
        }
        Ok((moved, dropped))
    }

    /// Puts back what the change that wrote snapshot `id` replaced, and removes what it
    /// created; once. Refused (nothing changed) when a relationship to restore would point at a
    /// node that no longer exists.
    pub fn restore(&self, id: i64) -> Result<Snapshot, ToolError> {
        self.transaction(|c| {
            let row: Option<(String, bool)> = c
                .query_row(
                    "SELECT body, restored FROM snapshots WHERE id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(sql_err)?;
            let Some((body, restored)) = row else {
                return Err(ToolError::new(
                    ErrorCode::NOT_FOUND,
                    format!("there is no snapshot {id}"),
                )
                .recover("use the snapshot_id a modifying tool returned"));
            };
            if restored {
                return Err(ToolError::new(
                    ErrorCode::of("ALREADY_RESOLVED"),
                    format!("snapshot {id} was already restored"),
                ));
            }
            let snap: Snapshot = serde_json::from_str(&body).map_err(|e| {
                ToolError::new(
                    ErrorCode::INTERNAL,
                    format!("snapshot {id} is unreadable: {e}"),
                )
            })?;
            for e in &snap.created_edges {
                c.execute("DELETE FROM edges WHERE id = ?1", [e])
                    .map_err(sql_err)?;
            }
            for n in &snap.created_nodes {
                c.execute("DELETE FROM edges WHERE from_id = ?1 OR to_id = ?1", [n])
                    .map_err(sql_err)?;
                c.execute("DELETE FROM nodes WHERE id = ?1", [n])
                    .map_err(sql_err)?;
            }
            for n in &snap.nodes {
                put_node(c, n)?;
            }
            for e in &snap.edges {
                for end in [&e.from_id, &e.to_id] {
                    if get_node(c, end)?.is_none() {
                        return Err(ToolError::new(
                            ErrorCode::of("CONFLICT"),
                            format!(
                                "relationship {} cannot come back: node {end:?} is gone",
                                e.id
                            ),
                        )
                        .recover("restore the change that removed that node first"));
                    }
                }
                put_edge(c, e)?;
            }
            c.execute("UPDATE snapshots SET restored = 1 WHERE id = ?1", [id])
                .map_err(sql_err)?;
            Ok(snap)
        })
    }
}
