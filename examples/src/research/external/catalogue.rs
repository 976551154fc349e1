//! `search_catalogue`: records from a library catalogue with Open Library's search API:
//! `GET {url}/search.json?q=...&limit=...&fields=...` answers `{"numFound": N, "docs": [...]}`,
//! each record with `key`, `title`, `author_name`, `first_publish_year`, `isbn` and `publisher`.

use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::{State, ToolError, tool};

use super::{Services, timed};

/// The fields asked of each record.
const FIELDS: &str = "key,title,author_name,first_publish_year,isbn,publisher";

#[derive(Debug, Deserialize)]
struct Response {
    #[serde(rename = "numFound")]
    num_found: u64,
    docs: Vec<Record>,
}

#[derive(Debug, Deserialize)]
struct Record {
    key: String,
    title: String,
    #[serde(default)]
    author_name: Vec<String>,
    #[serde(default)]
    first_publish_year: Option<i64>,
    #[serde(default)]
    isbn: Vec<String>,
    #[serde(default)]
    publisher: Vec<String>,
}

/// Searches a library catalogue (Open Library or a service with its API) for books and other
/// works by title, author or subject. External: the query and the limit are sent to the
/// catalogue service; nothing else leaves this machine. Use search_bibliography for the user's
/// own bibliography.
#[tool(
    external,
    idempotent,
    intent = "Search the library catalogue for {query}",
    timeout = "30s"
)]
pub async fn search_catalogue(
    /// Words to look for (title, author, subject).
    #[arg(min_length = 1, max_length = 300)]
    query: String,
    /// At most this many records.
    #[arg(default = 10, min = 1, max = 50)]
    limit: u32,
    State(services): State<Services>,
) -> Result<Value, ToolError> {
    let service = &services.catalogue;
    let url = service.url("search.json")?;
    let url = reqwest::Url::parse_with_params(
        &url,
        [
            ("q", query.as_str()),
            ("limit", &limit.to_string()),
            ("fields", FIELDS),
        ],
    )
    .map_err(|e| service.misconfigured(e))?;
    let request = service.http.get(url.clone());
    let (answer, execution_ms) = timed(service.send::<Response>(request)).await;
    let Some(response) = answer? else {
        return Err(service.malformed(format!("{url} does not exist (HTTP 404)")));
    };
    let records: Vec<Value> = response
        .docs
        .into_iter()
        .map(|r| {
            json!({
                "id": r.key,
                "title": r.title,
                "authors": r.author_name,
                "year": r.first_publish_year,
                "isbn": r.isbn.into_iter().next(),
                "publisher": r.publisher.into_iter().next(),
            })
        })
        .collect();
    Ok(json!({
        "service": "library catalogue",
        "query": query,
        "total": response.num_found,
        "records": records,
        "execution_ms": execution_ms,
    }))
}
