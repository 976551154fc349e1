//! The research assistant's tools, one per action, each in its safety category.

use serde_json::{Value, json};
use tool_runtime::{ErrorCode, State, ToolError, tool};

use super::db::{Db, Entry, Note};

/// Where `fetch_doi` looks DOIs up (e.g. `https://api.crossref.org/works`); configurable so tests
/// and offline machines can point it at a local server.
#[derive(Debug, Clone)]
pub struct DoiService {
    /// The base URL; the DOI is appended as a path segment.
    pub base_url: String,
    /// The HTTP client.
    pub http: reqwest::Client,
}

/// Searches the bibliography by words in the title, authors, citation key or year.
#[tool(read_only, intent = "Search the bibliography for {query}")]
pub fn search_bibliography(
    /// Words to look for; empty lists every entry.
    query: String,
    State(db): State<Db>,
) -> Result<Vec<Entry>, ToolError> {
    db.search_bibliography(&query, 10)
}

/// Searches the user's notes by words in their title or text.
#[tool(read_only, intent = "Search notes for {query}")]
pub fn search_notes(
    /// Words to look for; empty lists every note.
    query: String,
    State(db): State<Db>,
) -> Result<Vec<Note>, ToolError> {
    db.search_notes(&query, 10)
}

/// Creates a new note with a title and a text. Use it to record findings.
#[tool(create, reversible, intent = "Create a note titled {title}")]
pub fn create_note(
    /// A short title.
    title: String,
    /// The note's text.
    body: String,
    State(db): State<Db>,
) -> Result<Note, ToolError> {
    if title.trim().is_empty() {
        return Err(
            ToolError::new(ErrorCode::INVALID_ARGUMENTS, "the title is empty")
                .recover("give the note a short, non-empty title"),
        );
    }
    db.create_note(title.trim(), &body)
}

/// Replaces the text (and optionally the title) of an existing note.
#[tool(modify, reversible, intent = "Rewrite note {id}")]
pub fn edit_note(
    /// The note's id (from search_notes).
    id: i64,
    /// The new text.
    body: String,
    /// A new title, if it should change.
    title: Option<String>,
    State(db): State<Db>,
) -> Result<Value, ToolError> {
    let before = db.edit_note(id, title.as_deref(), &body)?;
    // The previous title and text are what undo puts back.
    Ok(json!({
        "id": id,
        "previous_title": before.title,
        "previous_body": before.body,
        "title": title.unwrap_or(before.title),
        "body": body,
    }))
}

/// Deletes a note. It can be restored with undo.
#[tool(modify, reversible, intent = "Delete note {id}")]
pub fn delete_note(
    /// The note's id (from search_notes).
    id: i64,
    State(db): State<Db>,
) -> Result<Value, ToolError> {
    let before = db.delete_note(id)?;
    Ok(json!({"deleted": id, "title": before.title}))
}

/// Restores a deleted note.
#[tool(create, intent = "Restore note {id}")]
pub fn restore_note(
    /// The note's id.
    id: i64,
    State(db): State<Db>,
) -> Result<Value, ToolError> {
    db.restore_note(id)?;
    Ok(json!({"restored": id}))
}

/// Merges several notes into one new note and deletes the originals.
#[tool(modify, intent = "Merge notes {ids} into {title}")]
pub fn merge_notes(
    /// The ids of the notes to merge (at least two).
    ids: Vec<i64>,
    /// The merged note's title.
    title: String,
    State(db): State<Db>,
) -> Result<Note, ToolError> {
    // A repeated id would be read twice and deleted twice, the second delete failing after the
    // merged note was created.
    let mut distinct: Vec<i64> = Vec::with_capacity(ids.len());
    for id in ids {
        if !distinct.contains(&id) {
            distinct.push(id);
        }
    }
    if distinct.len() < 2 {
        return Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            "merging needs at least two different notes",
        )
        .recover("pass two or more different note ids, or use edit_note for a single note"));
    }
    let notes = distinct
        .iter()
        .map(|&id| db.note(id))
        .collect::<Result<Vec<_>, _>>()?;
    let body = notes
        .iter()
        .map(|n| format!("## {}\n{}", n.title, n.body))
        .collect::<Vec<_>>()
        .join("\n\n");
    let merged = db.create_note(&title, &body)?;
    for n in &notes {
        db.delete_note(n.id)?;
    }
    Ok(merged)
}

/// Adds an annotation (a comment) to a bibliography entry.
#[tool(create, intent = "Annotate bibliography entry {entry_id}")]
pub fn add_annotation(
    /// The entry's id (from search_bibliography).
    entry_id: i64,
    /// The annotation.
    text: String,
    State(db): State<Db>,
) -> Result<Value, ToolError> {
    let id = db.add_annotation(entry_id, &text)?;
    Ok(json!({"annotation_id": id, "entry_id": entry_id}))
}

/// Looks up a DOI's metadata (title, authors, year) at the DOI service. External: the DOI leaves
/// this machine.
#[tool(external, intent = "Look up DOI {doi} online", timeout = "20s")]
pub async fn fetch_doi(
    /// The DOI, e.g. 10.48550/arXiv.1706.03762.
    doi: String,
    State(service): State<DoiService>,
) -> Result<Value, ToolError> {
    let url = format!("{}/{}", service.base_url.trim_end_matches('/'), doi.trim());
    let resp = service.http.get(&url).send().await.map_err(|e| {
        ToolError::execution(format!("the DOI service at {} is unreachable: {e}", service.base_url))
            .retryable(true)
            .recover("tell the user the DOI service is unreachable (offline?) and continue with the local bibliography")
    })?;
    let status = resp.status();
    if status.as_u16() == 404 {
        return Err(ToolError::new(
            ErrorCode::NOT_FOUND,
            format!("DOI {doi} is unknown to the DOI service"),
        )
        .recover("check the DOI for typos, or search the bibliography instead"));
    }
    if !status.is_success() {
        return Err(
            ToolError::execution(format!("the DOI service answered HTTP {status}"))
                .retryable(status.is_server_error()),
        );
    }
    let body: Value = resp
        .json()
        .await
        .map_err(|e| ToolError::execution(format!("the DOI service sent no JSON: {e}")))?;
    // Crossref wraps the record in `message`; keep the fields a person cares about.
    let m = body.get("message").unwrap_or(&body);
    Ok(json!({
        "doi": doi,
        "title": m.get("title").cloned().unwrap_or(Value::Null),
        "author": m.get("author").cloned().unwrap_or(Value::Null),
        "issued": m.get("issued").cloned().unwrap_or(Value::Null),
        "publisher": m.get("publisher").cloned().unwrap_or(Value::Null),
    }))
}
