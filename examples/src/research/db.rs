//! The research assistant's storage: notes, a bibliography and annotations in one SQLite file,
//! created and seeded on first use.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use tool_runtime::{ErrorCode, ToolError};

/// A shared connection (tools run concurrently; SQLite serialises writes anyway).
#[derive(Clone)]
pub struct Db(Arc<Mutex<Connection>>);

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Db")
    }
}

/// One note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Note {
    /// Its id.
    pub id: i64,
    /// Its title.
    pub title: String,
    /// Its text.
    pub body: String,
}

/// One bibliography entry.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Entry {
    /// Its id.
    pub id: i64,
    /// Citation key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Authors.
    pub authors: String,
    /// Year.
    pub year: i64,
    /// DOI, if known.
    pub doi: Option<String>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS bibliography (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    authors TEXT NOT NULL,
    year INTEGER NOT NULL,
    doi TEXT
);
CREATE TABLE IF NOT EXISTS annotations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_id INTEGER NOT NULL REFERENCES bibliography(id),
    text TEXT NOT NULL
);
";

const SEED_ENTRIES: &[(&str, &str, &str, i64, &str)] = &[
    (
        "vaswani2017",
        "Attention Is All You Need",
        "Vaswani, Shazeer, Parmar et al.",
        2017,
        "10.48550/arXiv.1706.03762",
    ),
    (
        "schick2023",
        "Toolformer: Language Models Can Teach Themselves to Use Tools",
        "Schick, Dwivedi-Yu, Dessi et al.",
        2023,
        "10.48550/arXiv.2302.04761",
    ),
    (
        "yao2023",
        "ReAct: Synergizing Reasoning and Acting in Language Models",
        "Yao, Zhao, Yu et al.",
        2023,
        "10.48550/arXiv.2210.03629",
    ),
    (
        "patil2023",
        "Gorilla: Large Language Model Connected with Massive APIs",
        "Patil, Zhang, Wang, Gonzalez",
        2023,
        "10.48550/arXiv.2305.15334",
    ),
];

const SEED_NOTES: &[(&str, &str)] = &[
    (
        "Tool use survey",
        "Toolformer and ReAct both interleave reasoning with API calls; Gorilla focuses on API retrieval.",
    ),
    (
        "Transformers",
        "Self-attention replaces recurrence; see vaswani2017.",
    ),
];

fn sql_err(e: rusqlite::Error) -> ToolError {
    ToolError::new(ErrorCode::INTERNAL, format!("database error: {e}"))
}

fn not_found(what: &str, id: i64) -> ToolError {
    ToolError::new(
        ErrorCode::NOT_FOUND,
        format!("there is no {what} with id {id}"),
    )
    .recover(format!(
        "search first (search_notes / search_bibliography) to find a valid {what} id"
    ))
}

impl Db {
    /// Opens (and on first use creates and seeds) the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Db, ToolError> {
        if let Some(dir) = path.as_ref().parent() {
            std::fs::create_dir_all(dir)?;
        }
        Self::init(Connection::open(path).map_err(sql_err)?)
    }

    /// An in-memory database, seeded.
    pub fn in_memory() -> Result<Db, ToolError> {
        Self::init(Connection::open_in_memory().map_err(sql_err)?)
    }

    fn init(conn: Connection) -> Result<Db, ToolError> {
        conn.execute_batch(SCHEMA).map_err(sql_err)?;
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM bibliography", [], |r| r.get(0))
            .map_err(sql_err)?;
        if count == 0 {
            for (key, title, authors, year, doi) in SEED_ENTRIES {
                conn.execute(
                    "INSERT INTO bibliography (key, title, authors, year, doi) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![key, title, authors, year, doi],
                )
                .map_err(sql_err)?;
            }
            for (title, body) in SEED_NOTES {
                conn.execute(
                    "INSERT INTO notes (title, body) VALUES (?1, ?2)",
                    params![title, body],
                )
                .map_err(sql_err)?;
            }
        }
        Ok(Db(Arc::new(Mutex::new(conn))))
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, ToolError> {
        let conn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).map_err(sql_err)
    }

    /// Notes whose title or body contains every word of `query` (case-insensitive).
    pub fn search_notes(&self, query: &str, limit: usize) -> Result<Vec<Note>, ToolError> {
        let notes = self.all_notes()?;
        Ok(notes
            .into_iter()
            .filter(|n| matches(query, &[&n.title, &n.body]))
            .take(limit)
            .collect())
    }

    /// Every live note.
    pub fn all_notes(&self) -> Result<Vec<Note>, ToolError> {
        self.with(|c| {
            let mut st =
                c.prepare("SELECT id, title, body FROM notes WHERE deleted = 0 ORDER BY id")?;
            st.query_map([], |r| {
                Ok(Note {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    body: r.get(2)?,
                })
            })?
            .collect()
        })
    }

    /// One live note.
    pub fn note(&self, id: i64) -> Result<Note, ToolError> {
        self.with(|c| {
            c.query_row(
                "SELECT id, title, body FROM notes WHERE id = ?1 AND deleted = 0",
                [id],
                |r| {
                    Ok(Note {
                        id: r.get(0)?,
                        title: r.get(1)?,
                        body: r.get(2)?,
                    })
                },
            )
            .optional()
        })?
        .ok_or_else(|| not_found("note", id))
    }

    /// Adds a note; returns it.
    pub fn create_note(&self, title: &str, body: &str) -> Result<Note, ToolError> {
        let id = self.with(|c| {
            c.execute(
                "INSERT INTO notes (title, body) VALUES (?1, ?2)",
                params![title, body],
            )?;
            Ok(c.last_insert_rowid())
        })?;
        self.note(id)
    }

    /// Replaces a note's body (and title, when given); returns the note before the edit.
    pub fn edit_note(&self, id: i64, title: Option<&str>, body: &str) -> Result<Note, ToolError> {
        let before = self.note(id)?;
        self.with(|c| {
            c.execute(
                "UPDATE notes SET title = ?2, body = ?3 WHERE id = ?1",
                params![id, title.unwrap_or(&before.title), body],
            )
        })?;
        Ok(before)
    }

    /// Marks a note deleted (kept for undo); returns it.
    pub fn delete_note(&self, id: i64) -> Result<Note, ToolError> {
        let before = self.note(id)?;
        self.with(|c| c.execute("UPDATE notes SET deleted = 1 WHERE id = ?1", [id]))?;
        Ok(before)
    }

    /// Brings a deleted note back.
    pub fn restore_note(&self, id: i64) -> Result<(), ToolError> {
        let n = self.with(|c| c.execute("UPDATE notes SET deleted = 0 WHERE id = ?1", [id]))?;
        if n == 0 {
            return Err(not_found("note", id));
        }
        Ok(())
    }

    /// Bibliography entries whose title, authors or key contain every word of `query`.
    pub fn search_bibliography(&self, query: &str, limit: usize) -> Result<Vec<Entry>, ToolError> {
        let all = self.with(|c| {
            let mut st = c.prepare("SELECT id, key, title, authors, year, doi FROM bibliography ORDER BY year DESC, id")?;
            st.query_map([], |r| {
                Ok(Entry {
                    id: r.get(0)?,
                    key: r.get(1)?,
                    title: r.get(2)?,
                    authors: r.get(3)?,
                    year: r.get(4)?,
                    doi: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(all
            .into_iter()
            .filter(|e| matches(query, &[&e.title, &e.authors, &e.key, &e.year.to_string()]))
            .take(limit)
            .collect())
    }

    /// Adds an annotation to a bibliography entry; returns its id.
    pub fn add_annotation(&self, entry_id: i64, text: &str) -> Result<i64, ToolError> {
        let exists: Option<i64> = self.with(|c| {
            c.query_row(
                "SELECT id FROM bibliography WHERE id = ?1",
                [entry_id],
                |r| r.get(0),
            )
            .optional()
        })?;
        if exists.is_none() {
            return Err(not_found("bibliography entry", entry_id));
        }
        self.with(|c| {
            c.execute(
                "INSERT INTO annotations (entry_id, text) VALUES (?1, ?2)",
                params![entry_id, text],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    /// The annotations of an entry.
    pub fn annotations(&self, entry_id: i64) -> Result<Vec<String>, ToolError> {
        self.with(|c| {
            let mut st =
                c.prepare("SELECT text FROM annotations WHERE entry_id = ?1 ORDER BY id")?;
            st.query_map([entry_id], |r| r.get(0))?.collect()
        })
    }
}

/// Every word of the query (ignoring short ones) occurs in one of the fields; an empty query
/// matches everything.
fn matches(query: &str, fields: &[&str]) -> bool {
    let hay = fields.join(" ").to_lowercase();
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .all(|w| hay.contains(&w.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_open_creates_and_seeds_and_crud_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/research.sqlite");
        let db = Db::open(&path).unwrap();
        assert_eq!(
            db.search_bibliography("toolformer", 10).unwrap()[0].key,
            "schick2023"
        );
        let n = db.create_note("Llamas", "Llamas are camelids").unwrap();
        assert_eq!(db.search_notes("camelids", 10).unwrap(), vec![n.clone()]);
        let before = db
            .edit_note(n.id, None, "Llamas are South American camelids")
            .unwrap();
        assert_eq!(before.body, "Llamas are camelids");
        db.delete_note(n.id).unwrap();
        assert_eq!(db.note(n.id).unwrap_err().code, ErrorCode::NOT_FOUND);
        db.restore_note(n.id).unwrap();
        // Reopening keeps the data and does not seed twice.
        drop(db);
        let db = Db::open(&path).unwrap();
        assert_eq!(
            db.search_bibliography("", 100).unwrap().len(),
            SEED_ENTRIES.len()
        );
        assert_eq!(
            db.note(n.id).unwrap().body,
            "Llamas are South American camelids"
        );
        let err = db.add_annotation(999, "x").unwrap_err();
        assert!(err.recover_action.unwrap().contains("search_bibliography"));
    }
}
