//! The task manager's storage: tasks in one SQLite file, created and seeded on first use.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, Row, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::{ErrorCode, ToolError};

/// A shared connection (tools run concurrently; SQLite serialises writes anyway).
#[derive(Clone)]
pub struct TaskDb(Arc<Mutex<Connection>>);

impl std::fmt::Debug for TaskDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskDb")
    }
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
}

/// How urgent a task is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Whenever.
    Low,
    /// The default.
    Medium,
    /// Soon.
    High,
    /// Now.
    Critical,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// Its id.
    pub id: i64,
    /// Its title.
    pub title: String,
    /// Longer text.
    pub description: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// How urgent it is.
    pub priority: Priority,
    /// Due date, `YYYY-MM-DD`, if any.
    pub eta: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'pending',
    priority TEXT NOT NULL DEFAULT 'medium',
    eta TEXT,
    tags TEXT NOT NULL DEFAULT ''
);
";

/// A seed row: title, description, status, priority, eta, comma-separated tags.
type SeedTask = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
    &'static str,
);

const SEED: &[SeedTask] = &[
    (
        "Review PR #123",
        "Check the parser changes",
        "pending",
        "high",
        Some("2026-11-23"),
        "code,review",
    ),
    (
        "Write release notes",
        "For version 0.2",
        "in_progress",
        "medium",
        Some("2026-11-30"),
        "docs",
    ),
    (
        "Renew TLS certificate",
        "",
        "pending",
        "critical",
        Some("2026-11-22"),
        "ops",
    ),
    ("Clean up old branches", "", "done", "low", None, "code"),
];

fn sql_err(e: rusqlite::Error) -> ToolError {
    ToolError::new(ErrorCode::INTERNAL, format!("database error: {e}"))
}

fn word<T: for<'de> Deserialize<'de>>(s: &str) -> rusqlite::Result<T> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.into())
    })
}

fn name_of<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn row(r: &Row<'_>) -> rusqlite::Result<Task> {
    let tags: String = r.get(6)?;
    Ok(Task {
        id: r.get(0)?,
        title: r.get(1)?,
        description: r.get(2)?,
        status: word(&r.get::<_, String>(3)?)?,
        priority: word(&r.get::<_, String>(4)?)?,
        eta: r.get(5)?,
        tags: tags
            .split(',')
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

const COLUMNS: &str = "id, title, description, status, priority, eta, tags";

/// The changes `update` applies; `None` keeps a field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskChanges {
    /// A new title.
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new status.
    pub status: Option<TaskStatus>,
    /// A new priority.
    pub priority: Option<Priority>,
    /// A new due date, `YYYY-MM-DD`.
    pub eta: Option<String>,
    /// Tags to add.
    #[serde(default)]
    pub add_tags: Vec<String>,
}

/// `task` as `changes` leave it, without writing anything (the update's preview shows it).
pub fn planned(task: &Task, changes: &TaskChanges) -> Task {
    let mut t = task.clone();
    if let Some(v) = &changes.title {
        t.title = v.clone();
    }
    if let Some(v) = &changes.description {
        t.description = v.clone();
    }
    if let Some(v) = changes.status {
        t.status = v;
    }
    if let Some(v) = changes.priority {
        t.priority = v;
    }
    if let Some(v) = &changes.eta {
        t.eta = Some(v.clone());
    }
    for tag in &changes.add_tags {
        if !t.tags.contains(tag) {
            t.tags.push(tag.clone());
        }
    }
    t
}

impl TaskDb {
    /// Opens (and on first use creates and seeds) the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<TaskDb, ToolError> {
        if let Some(dir) = path.as_ref().parent() {
            std::fs::create_dir_all(dir)?;
        }
        Self::init(Connection::open(path).map_err(sql_err)?)
    }

    /// An in-memory database, seeded.
    pub fn in_memory() -> Result<TaskDb, ToolError> {
        Self::init(Connection::open_in_memory().map_err(sql_err)?)
    }

    fn init(conn: Connection) -> Result<TaskDb, ToolError> {
        conn.execute_batch(SCHEMA).map_err(sql_err)?;
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))
            .map_err(sql_err)?;
        if count == 0 {
            for (title, desc, status, prio, eta, tags) in SEED {
                conn.execute(
                    "INSERT INTO tasks (title, description, status, priority, eta, tags) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![title, desc, status, prio, eta, tags],
                )
                .map_err(sql_err)?;
            }
        }
        Ok(TaskDb(Arc::new(Mutex::new(conn))))
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, ToolError> {
        let conn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).map_err(sql_err)
    }

    /// Every task, by id.
    pub fn all(&self) -> Result<Vec<Task>, ToolError> {
        self.with(|c| {
            let mut st = c.prepare(&format!("SELECT {COLUMNS} FROM tasks ORDER BY id"))?;
            st.query_map([], row)?.collect()
        })
    }

    /// One task, or `NOT_FOUND` naming the nearest existing ids (so the model can recover).
    pub fn get(&self, id: i64) -> Result<Task, ToolError> {
        let found = self.with(|c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
        })?;
        match found {
            Some(t) => Ok(t),
            None => Err(self.not_found(id)?),
        }
    }

    fn not_found(&self, id: i64) -> Result<ToolError, ToolError> {
        let mut ids: Vec<i64> = self.all()?.into_iter().map(|t| t.id).collect();
        ids.sort_by_key(|x| (x - id).abs());
        ids.truncate(3);
        let recover = if ids.is_empty() {
            "there are no tasks yet; create one with create_task".to_owned()
        } else {
            format!("use an existing id; the nearest are {ids:?} (query_tasks lists them all)")
        };
        Ok(ToolError::new(
            ErrorCode::NOT_FOUND,
            format!("there is no task with id {id}"),
        )
        .recover(recover)
        .with_detail("nearest_ids", serde_json::json!(ids)))
    }

    /// Adds a task; returns it.
    pub fn create(
        &self,
        title: &str,
        description: &str,
        priority: Priority,
        eta: Option<&str>,
        tags: &[String],
    ) -> Result<Task, ToolError> {
        let id = self.with(|c| {
            c.execute(
                "INSERT INTO tasks (title, description, priority, eta, tags) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![title, description, name_of(&priority), eta, tags.join(",")],
            )?;
            Ok(c.last_insert_rowid())
        })?;
        self.get(id)
    }

    /// Applies `changes`; returns the task before and after.
    pub fn update(&self, id: i64, changes: &TaskChanges) -> Result<(Task, Task), ToolError> {
        let before = self.get(id)?;
        let t = planned(&before, changes);
        self.with(|c| {
            c.execute(
                "UPDATE tasks SET title = ?2, description = ?3, status = ?4, priority = ?5, eta = ?6, tags = ?7 WHERE id = ?1",
                params![id, t.title, t.description, name_of(&t.status), name_of(&t.priority), t.eta, t.tags.join(",")],
            )
        })?;
        Ok((before, t))
    }

    /// Deletes a task; returns it.
    pub fn delete(&self, id: i64) -> Result<Task, ToolError> {
        let before = self.get(id)?;
        self.with(|c| c.execute("DELETE FROM tasks WHERE id = ?1", [id]))?;
        Ok(before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_once_and_not_found_names_the_nearest_ids() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t/tasks.sqlite");
        let db = TaskDb::open(&path).unwrap();
        assert_eq!(db.all().unwrap().len(), SEED.len());
        let t = db
            .create("Buy milk", "", Priority::Low, None, &["home".into()])
            .unwrap();
        drop(db);
        let db = TaskDb::open(&path).unwrap();
        assert_eq!(db.all().unwrap().len(), SEED.len() + 1);
        assert_eq!(db.get(t.id).unwrap().tags, vec!["home".to_owned()]);
        let err = db.get(42).unwrap_err();
        assert_eq!(err.code, ErrorCode::NOT_FOUND);
        assert!(err.recover_action.unwrap().contains("[5, 4, 3]"));
    }
}
