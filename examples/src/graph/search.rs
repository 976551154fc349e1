//! The web search service `search_web_for_evidence` asks: a Tavily-style JSON API at
//! `TOOLS_SEARCH_URL` (`POST {url}/search` with `{"query", "max_results"}`, answering
//! `{"results": [{"url", "title", "content", "score"}]}`), with `TOOLS_SEARCH_API_KEY` as a
//! bearer token when set.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use tool_runtime::{ErrorCode, ToolError};

/// The environment variable naming the service's base URL.
pub const SEARCH_URL_ENV: &str = "TOOLS_SEARCH_URL";
/// The environment variable with the service's API key, if it needs one.
pub const SEARCH_KEY_ENV: &str = "TOOLS_SEARCH_API_KEY";

/// Where the search service is.
#[derive(Clone, Debug)]
pub struct SearchService {
    base_url: Option<String>,
    api_key: Option<String>,
    http: reqwest::Client,
}

/// One hit, as the service returns it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Hit {
    /// Where.
    pub url: String,
    /// Its title.
    #[serde(default)]
    pub title: String,
    /// The snippet.
    #[serde(default, alias = "snippet")]
    pub content: String,
    /// The service's relevance, 0 to 1, when it gives one.
    #[serde(default)]
    pub score: Option<f64>,
}

#[derive(Deserialize)]
struct Answer {
    results: Vec<Hit>,
}

impl SearchService {
    /// The service at `base_url`.
    pub fn new(base_url: impl Into<String>) -> Self {
        SearchService {
            base_url: Some(base_url.into()),
            api_key: None,
            http: client(),
        }
    }

    /// No service: the tool answers `NOT_CONFIGURED`.
    pub fn none() -> Self {
        SearchService {
            base_url: None,
            api_key: None,
            http: client(),
        }
    }

    /// From `TOOLS_SEARCH_URL` and `TOOLS_SEARCH_API_KEY`.
    pub fn from_env() -> Self {
        let var = |k| {
            std::env::var(k)
                .ok()
                .filter(|v: &String| !v.trim().is_empty())
        };
        SearchService {
            base_url: var(SEARCH_URL_ENV),
            api_key: var(SEARCH_KEY_ENV),
            http: client(),
        }
    }

    /// Searches; unreachable services and server errors are retryable, refusals are not.
    pub async fn search(&self, query: &str, max_results: u32) -> Result<Vec<Hit>, ToolError> {
        let Some(base) = &self.base_url else {
            return Err(ToolError::new(
                ErrorCode::of("NOT_CONFIGURED"),
                "no web search service is configured",
            )
            .recover(format!(
                "tell the user that web search needs {SEARCH_URL_ENV} (a Tavily-compatible service); continue with the graph"
            )));
        };
        let url = format!("{}/search", base.trim_end_matches('/'));
        let mut req = self
            .http
            .post(&url)
            .json(&json!({"query": query, "max_results": max_results}));
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| {
            ToolError::execution(format!("the search service at {base} is unreachable: {e}"))
                .retryable(true)
                .recover("try again later, or tell the user the search service is unreachable")
        })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(
                ToolError::execution(format!("the search service answered HTTP {status}"))
                    .retryable(status.is_server_error() || status.as_u16() == 429)
                    .recover(if status.is_server_error() || status.as_u16() == 429 {
                        "try again later"
                    } else {
                        "check the search service's configuration (URL, API key)"
                    }),
            );
        }
        let answer: Answer = resp.json().await.map_err(|e| {
            ToolError::execution(format!("the search service sent no usable JSON: {e}"))
        })?;
        Ok(answer
            .results
            .into_iter()
            .take(max_results as usize)
            .collect())
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("a default HTTP client builds")
}
