//! The task manager's tools: CRUD with one consolidated `query_tasks`, response formats
//! and errors that say how to recover.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::executor::{FormatFields, ResponseFormat};
use tool_runtime::{ErrorCode, State, ToolError, tool};

use super::db::{Priority, Task, TaskChanges, TaskDb, TaskStatus};

/// The fields each response format keeps (detailed keeps all).
pub const TASK_FIELDS: FormatFields<'static> = FormatFields {
    concise: &["id", "title", "status"],
    standard: &["id", "title", "status", "priority", "eta"],
};

/// The order of `query_tasks` results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    /// Earliest due date first (tasks without one last).
    #[default]
    EtaAsc,
    /// Most urgent first.
    PriorityDesc,
    /// Newest first.
    CreatedDesc,
}

/// Finds tasks. Use it for every question about existing tasks: "what's due today?", "show
/// high-priority tasks", "list completed tasks", or one task by id. Returns the tasks, the total
/// count and the filters applied.
#[tool(read_only, intent = "Look up tasks")]
#[allow(clippy::too_many_arguments)]
pub fn query_tasks(
    /// Only the task with this id.
    id: Option<i64>,
    /// Only tasks in this status.
    status: Option<TaskStatus>,
    /// Only tasks of this priority.
    priority: Option<Priority>,
    /// Only tasks with this tag.
    tag: Option<String>,
    /// Only tasks whose title or description contains these words.
    text: Option<String>,
    /// Only tasks due on or before this date (YYYY-MM-DD).
    due_before: Option<String>,
    /// At most this many (default 50).
    limit: Option<u32>,
    /// Order of the results (default eta_asc).
    sort: Option<Sort>,
    /// concise (id, title, status), standard (adds priority and eta; the default) or detailed
    /// (every field).
    response_format: Option<ResponseFormat>,
    State(db): State<TaskDb>,
) -> Result<Value, ToolError> {
    if let Some(id) = id {
        // An unknown id is an error with the nearest ids, not an empty list.
        db.get(id)?;
    }
    if let Some(d) = &due_before {
        check_date(d, "due_before")?;
    }
    let words: Vec<String> = text
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    let mut tasks: Vec<Task> = db
        .all()?
        .into_iter()
        .filter(|t| id.is_none_or(|i| t.id == i))
        .filter(|t| status.is_none_or(|s| t.status == s))
        .filter(|t| priority.is_none_or(|p| t.priority == p))
        .filter(|t| tag.as_ref().is_none_or(|g| t.tags.contains(g)))
        .filter(|t| {
            let hay = format!("{} {}", t.title, t.description).to_lowercase();
            words.iter().all(|w| hay.contains(w))
        })
        .filter(|t| {
            due_before
                .as_deref()
                .is_none_or(|d| t.eta.as_deref().is_some_and(|e| e <= d))
        })
        .collect();
    match sort.unwrap_or_default() {
        Sort::EtaAsc => tasks.sort_by(|a, b| match (&a.eta, &b.eta) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.id.cmp(&b.id),
        }),
        Sort::PriorityDesc => tasks.sort_by_key(|t| std::cmp::Reverse(t.priority)),
        Sort::CreatedDesc => tasks.sort_by_key(|t| std::cmp::Reverse(t.id)),
    }
    let total = tasks.len();
    tasks.truncate(limit.unwrap_or(50) as usize);
    let listed = serde_json::to_value(&tasks).map_err(|e| ToolError::execution(e.to_string()))?;
    let format = response_format.unwrap_or_default();
    Ok(json!({
        "tasks": format.project(&listed, &TASK_FIELDS),
        "total": total,
        "filters": {"id": id, "status": status, "priority": priority, "tag": tag, "text": text, "due_before": due_before},
    }))
}

fn check_date(d: &str, field: &str) -> Result<(), ToolError> {
    let ok = d.len() == 10
        && d.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    if ok {
        Ok(())
    } else {
        Err(ToolError::new(
            ErrorCode::of("INVALID_DATE"),
            format!("{field} {d:?} is not a date in YYYY-MM-DD form"),
        )
        .recover(format!("write {field} as YYYY-MM-DD, e.g. 2026-11-30")))
    }
}

/// Creates a new task. Use it when the user asks to add a task or capture an action item. New
/// tasks are pending, with medium priority unless given.
#[tool(create, intent = "Create the task {title}")]
pub fn create_task(
    /// The title, 1 to 255 characters.
    title: String,
    /// Longer text, optional.
    description: Option<String>,
    /// low, medium (default), high or critical.
    priority: Option<Priority>,
    /// Due date, YYYY-MM-DD.
    eta: Option<String>,
    /// Tags for grouping.
    tags: Option<Vec<String>>,
    State(db): State<TaskDb>,
) -> Result<Task, ToolError> {
    let title = title.trim();
    if title.is_empty() || title.chars().count() > 255 {
        return Err(ToolError::new(
            ErrorCode::of("INVALID_TITLE"),
            format!(
                "the title must be 1 to 255 characters, it is {}",
                title.chars().count()
            ),
        )
        .recover("give a title of 1 to 255 characters (truncate a long one) and retry"));
    }
    if let Some(d) = &eta {
        check_date(d, "eta")?;
    }
    db.create(
        title,
        description.as_deref().unwrap_or_default(),
        priority.unwrap_or(Priority::Medium),
        eta.as_deref(),
        &tags.unwrap_or_default(),
    )
}

/// Changes a task: its title, description, status (e.g. mark it done), priority, due date, or
/// adds tags.
#[tool(modify, intent = "Update task {id}")]
pub fn update_task(
    /// The task's id (from query_tasks).
    id: i64,
    /// What to change.
    changes: TaskChanges,
    State(db): State<TaskDb>,
) -> Result<Value, ToolError> {
    if let Some(d) = &changes.eta {
        check_date(d, "changes.eta")?;
    }
    let (before, after) = db.update(id, &changes)?;
    Ok(json!({"id": id, "before": before, "after": after}))
}

/// Deletes a task for good.
#[tool(modify, intent = "Delete task {id}")]
pub fn delete_task(
    /// The task's id (from query_tasks).
    id: i64,
    State(db): State<TaskDb>,
) -> Result<Value, ToolError> {
    let t = db.delete(id)?;
    Ok(json!({"deleted": id, "title": t.title}))
}
