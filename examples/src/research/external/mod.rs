//! The research assistant's external services: GNORM entity annotation, a citation graph and a
//! library catalogue. Each is a URL the user configures; the tools send only their own arguments
//! there, and every failure comes back as a structured error that says whether trying again can
//! help.

pub mod catalogue;
pub mod citations;
pub mod gnorm;

use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::Value;
use tool_runtime::{ErrorCode, ToolError};

use super::tools::DoiService;

/// One external service: what it is called, where it is, and the HTTP client that reaches it.
#[derive(Debug, Clone)]
pub struct Service {
    /// The service's name as the user knows it (used in messages).
    pub name: &'static str,
    /// The environment variable that sets its URL (named when it is missing).
    pub env: &'static str,
    /// The base URL; `None` when the service is not configured.
    pub base_url: Option<String>,
    /// The HTTP client (its timeout bounds each request).
    pub http: reqwest::Client,
}

/// Every service the assistant's external tools talk to.
#[derive(Debug, Clone)]
pub struct Services {
    /// The DOI registry (`fetch_doi`).
    pub doi: DoiService,
    /// GNORM entity annotation (`gnorm_annotate`): `POST {url}/annotate`.
    pub gnorm: Service,
    /// The citation graph (`citation_graph`), Semantic Scholar's Graph API or one in its shape:
    /// `GET {url}/paper/{id}/citations` and `/references`.
    pub citations: Service,
    /// The library catalogue (`search_catalogue`), Open Library's search API or one in its
    /// shape: `GET {url}/search.json?q=...`.
    pub catalogue: Service,
}

/// Where the citation graph is when `TOOLS_CITATIONS_URL` is not set.
pub const CITATIONS_DEFAULT: &str = "https://api.semanticscholar.org/graph/v1";
/// Where the catalogue is when `TOOLS_CATALOGUE_URL` is not set.
pub const CATALOGUE_DEFAULT: &str = "https://openlibrary.org";
/// How long one request to a service may take before it counts as timed out.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

impl Services {
    /// The DOI service given, the other services unconfigured (their tools then say so): for
    /// offline use and tests, which add the services they run with [`Services::gnorm`] and
    /// its siblings.
    pub fn with_doi(doi: DoiService) -> Self {
        let http = doi.http.clone();
        let service = |name, env| Service {
            name,
            env,
            base_url: None,
            http: http.clone(),
        };
        Services {
            doi,
            gnorm: service("GNORM", "TOOLS_GNORM_URL"),
            citations: service("the citation graph", "TOOLS_CITATIONS_URL"),
            catalogue: service("the library catalogue", "TOOLS_CATALOGUE_URL"),
        }
    }

    /// The services the environment names: `TOOLS_DOI_URL` (default Crossref),
    /// `TOOLS_GNORM_URL` (no default: GNORM has no public address), `TOOLS_CITATIONS_URL`
    /// (default Semantic Scholar) and `TOOLS_CATALOGUE_URL` (default Open Library), each
    /// request bounded by [`REQUEST_TIMEOUT`].
    pub fn from_env() -> Self {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .expect("an HTTP client with a timeout");
        let var = |key: &str| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
        let doi = DoiService {
            base_url: var("TOOLS_DOI_URL")
                .unwrap_or_else(|| "https://api.crossref.org/works".into()),
            http,
        };
        Services::with_doi(doi)
            .gnorm(var("TOOLS_GNORM_URL"))
            .citations(Some(
                var("TOOLS_CITATIONS_URL").unwrap_or_else(|| CITATIONS_DEFAULT.into()),
            ))
            .catalogue(Some(
                var("TOOLS_CATALOGUE_URL").unwrap_or_else(|| CATALOGUE_DEFAULT.into()),
            ))
    }

    /// Sets GNORM's URL.
    pub fn gnorm(mut self, url: Option<String>) -> Self {
        self.gnorm.base_url = url;
        self
    }

    /// Sets the citation graph's URL.
    pub fn citations(mut self, url: Option<String>) -> Self {
        self.citations.base_url = url;
        self
    }

    /// Sets the catalogue's URL.
    pub fn catalogue(mut self, url: Option<String>) -> Self {
        self.catalogue.base_url = url;
        self
    }

    /// Uses `http` for every service (e.g. one with a shorter timeout).
    pub fn http(mut self, http: reqwest::Client) -> Self {
        self.doi.http = http.clone();
        self.gnorm.http = http.clone();
        self.citations.http = http.clone();
        self.catalogue.http = http;
        self
    }
}

/// Runs `work` and says how long it took, in milliseconds: the time the service took to
/// answer, which the result reports as `execution_ms` (the executor's own timing also counts
/// the person's confirmation).
pub(crate) async fn timed<T>(work: impl Future<Output = T>) -> (T, u64) {
    let started = Instant::now();
    let out = work.await;
    (out, started.elapsed().as_millis() as u64)
}

impl Service {
    /// `{base}/{path}`, or the error saying the service is not configured.
    pub(crate) fn url(&self, path: &str) -> Result<String, ToolError> {
        let Some(base) = &self.base_url else {
            return Err(ToolError::execution(format!(
                "{} is not configured on this machine (set {})",
                self.name, self.env
            ))
            .recover(format!(
                "tell the user {} is not configured and continue without it",
                self.name
            ))
            .with_detail("service", self.name));
        };
        Ok(format!("{}/{}", base.trim_end_matches('/'), path))
    }

    /// Sends `request` and reads the answer as `T`: the service's JSON in the shape the tool
    /// expects, or a structured error (retryable when the service was unreachable, slow, busy
    /// or failing; not when it answered something that cannot be read). A 404 is `None`.
    pub(crate) async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Option<T>, ToolError> {
        let resp = request.send().await.map_err(|e| self.transport(e))?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let mut err = ToolError::new(
                ErrorCode::RATE_LIMITED,
                format!("{} refused the request: too many requests", self.name),
            )
            .retryable(true)
            .recover("wait a minute before asking this service again")
            .with_detail("service", self.name);
            if let Some(secs) = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                err = err.with_detail("retry_after_ms", secs * 1000);
            }
            return Err(err);
        }
        if !status.is_success() {
            return Err(ToolError::execution(format!(
                "{} answered HTTP {}",
                self.name,
                status.as_u16()
            ))
            .retryable(status.is_server_error())
            .recover(if status.is_server_error() {
                "the service is failing: try again later, or continue without it"
            } else {
                "the service refused the request: check the arguments"
            })
            .with_detail("service", self.name)
            .with_detail("http_status", status.as_u16()));
        }
        let bytes = resp.bytes().await.map_err(|e| self.transport(e))?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.malformed(format!("its answer is not JSON ({e})")))?;
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| self.malformed(e.to_string()))
    }

    /// The configured URL is not one (a typo in the environment variable).
    pub(crate) fn misconfigured(&self, why: impl std::fmt::Display) -> ToolError {
        ToolError::execution(format!(
            "{} is configured with a URL that is not one ({why}); check {}",
            self.name, self.env
        ))
        .recover(format!(
            "tell the user {} is misconfigured and continue without it",
            self.name
        ))
        .with_detail("service", self.name)
    }

    /// The service answered, but not in the shape its API promises.
    pub(crate) fn malformed(&self, why: impl std::fmt::Display) -> ToolError {
        ToolError::execution(format!(
            "{} sent an answer this tool cannot read: {why}",
            self.name
        ))
        .retryable(false)
        .recover(format!(
            "tell the user {} answered in an unexpected format (is the configured URL the right \
             service?) and continue without it",
            self.name
        ))
        .with_detail("service", self.name)
    }

    fn transport(&self, e: reqwest::Error) -> ToolError {
        let base = self.base_url.as_deref().unwrap_or_default();
        if e.is_timeout() {
            return ToolError::new(
                ErrorCode::TIMEOUT,
                format!("{} at {base} did not answer in time", self.name),
            )
            .retryable(true)
            .recover("try again later, or continue without this service")
            .with_detail("service", self.name);
        }
        ToolError::execution(format!("{} at {base} is unreachable: {e}", self.name))
            .retryable(true)
            .recover(format!(
                "tell the user {} is unreachable (offline?) and continue without it",
                self.name
            ))
            .with_detail("service", self.name)
    }
}
