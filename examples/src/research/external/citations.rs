//! `citation_graph`: the papers that cite a paper and the papers it cites, from a citation graph
//! with Semantic Scholar's Graph API: `GET {url}/paper/{id}/citations` answers
//! `{"data": [{"citingPaper": {...}}]}` and `GET {url}/paper/{id}/references` answers
//! `{"data": [{"citedPaper": {...}}]}`, each paper with `paperId`, `title`, `year`, `authors`
//! and `externalIds`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tool_runtime::{ErrorCode, State, ToolError, tool};

use super::{Service, Services, timed};

/// Which side of the graph to fetch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Papers that cite this one.
    Citing,
    /// Papers this one cites (its references).
    Cited,
    /// Both.
    #[default]
    Both,
}

/// The fields asked of each paper: what a person reads in a list, nothing more.
const FIELDS: &str = "paperId,title,year,authors,externalIds";

#[derive(Debug, Deserialize)]
struct Page {
    data: Vec<Map<String, Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Paper {
    #[serde(default)]
    paper_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    year: Option<i64>,
    #[serde(default)]
    authors: Vec<Author>,
    #[serde(default)]
    external_ids: Option<Map<String, Value>>,
}

#[derive(Debug, Deserialize)]
struct Author {
    name: String,
}

/// Looks up a paper in the citation graph (Semantic Scholar or a service with its API): the
/// papers that cite it and the papers it cites. External: the paper's identifier, the direction
/// and the limit are sent to the citation service; nothing else leaves this machine.
#[tool(
    external,
    idempotent,
    intent = "Look up the citations of {paper_id} in the citation graph",
    timeout = "30s"
)]
pub async fn citation_graph(
    /// The paper: `DOI:10.48550/arXiv.2210.03629`, `ARXIV:2210.03629`, or the service's own id.
    #[arg(min_length = 1, max_length = 300)]
    paper_id: String,
    /// citing (papers that cite it), cited (papers it cites) or both.
    #[arg(default)]
    direction: Direction,
    /// At most this many papers on each side.
    #[arg(default = 10, min = 1, max = 100)]
    limit: u32,
    State(services): State<Services>,
) -> Result<Value, ToolError> {
    let service = &services.citations;
    let id = paper_id.trim();
    // the id is a path segment: anything that would end it or start a query is refused, so the
    // request goes to the paper that was named and nowhere else
    if id.is_empty() || id.chars().any(|c| c.is_whitespace() || "?#".contains(c)) {
        return Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            format!("{paper_id:?} is not a paper identifier"),
        )
        .recover("pass one identifier such as DOI:10.48550/arXiv.2210.03629 or ARXIV:2210.03629"));
    }
    let side = |path: &'static str, key: &'static str| {
        let url = service.url(&format!("paper/{id}/{path}"));
        async move {
            let url = reqwest::Url::parse_with_params(
                &url?,
                [("fields", FIELDS), ("limit", &limit.to_string())],
            )
            .map_err(|e| service.misconfigured(e))?;
            let request = service.http.get(url);
            let page = service.send::<Page>(request).await?.ok_or_else(|| {
                ToolError::new(
                    ErrorCode::NOT_FOUND,
                    format!("{id} is unknown to {}", service.name),
                )
                .recover(
                    "check the identifier: a DOI as DOI:10..., an arXiv id as ARXIV:2210.03629",
                )
            })?;
            papers(service, page, key)
        }
    };
    let wants = |d: Direction| direction == d || direction == Direction::Both;
    let ((citing, cited), execution_ms) = timed(async {
        futures::join!(
            async {
                if wants(Direction::Citing) {
                    side("citations", "citingPaper").await.map(Some)
                } else {
                    Ok(None)
                }
            },
            async {
                if wants(Direction::Cited) {
                    side("references", "citedPaper").await.map(Some)
                } else {
                    Ok(None)
                }
            }
        )
    })
    .await;
    let mut out = json!({"service": "citation graph", "paper_id": id});
    if let Some(citing) = citing? {
        out["citing"] = citing;
    }
    if let Some(cited) = cited? {
        out["cited"] = cited;
    }
    out["execution_ms"] = json!(execution_ms);
    Ok(out)
}

/// The papers of one page, each under `key` (`citingPaper` or `citedPaper`).
fn papers(service: &Service, page: Page, key: &str) -> Result<Value, ToolError> {
    let mut out = Vec::with_capacity(page.data.len());
    for (i, mut edge) in page.data.into_iter().enumerate() {
        let Some(paper) = edge.remove(key) else {
            return Err(service.malformed(format!("entry {i} has no {key}")));
        };
        let paper: Paper = serde_json::from_value(paper)
            .map_err(|e| service.malformed(format!("entry {i}: {e}")))?;
        let doi = paper
            .external_ids
            .as_ref()
            .and_then(|ids| ids.get("DOI"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.push(json!({
            "paper_id": paper.paper_id,
            "title": paper.title,
            "year": paper.year,
            "authors": paper.authors.into_iter().map(|a| a.name).collect::<Vec<_>>(),
            "doi": doi,
        }));
    }
    Ok(Value::Array(out))
}
