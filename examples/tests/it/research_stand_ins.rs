//! Stand-ins for the research assistant's external services, on 127.0.0.1, in the shapes of
//! their APIs: GNORM's annotation endpoint (entities found in the posted text, with character
//! offsets), Semantic Scholar's Graph API (citations and references of one known paper, 404 for
//! any other) and Open Library's search (records whose title or author has every word). Each
//! records what reached it and can be switched to fail in the ways a real service does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

/// How the stand-ins answer.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Mode {
    /// As the real service would.
    Normal,
    /// HTTP 503 to everything.
    Failing,
    /// Answers after two seconds.
    Slow,
    /// HTTP 200 with a body that is not JSON.
    NotJson,
    /// HTTP 200 with JSON in the wrong shape.
    WrongShape,
    /// HTTP 200 with JSON whose values are impossible (offsets outside the text, a
    /// confidence above 1, an entry without its paper, a record without a title).
    Impossible,
}

/// One request as a stand-in received it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) query: Map<String, Value>,
    pub(crate) body: Option<Value>,
}

#[derive(Clone)]
pub(crate) struct Stand {
    mode: Arc<Mutex<Mode>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Stand {
    pub(crate) fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub(crate) fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }

    /// Records the request; the answer for a mode that is not `Normal`.
    async fn take(&self, uri: &Uri, body: Option<Value>) -> Option<Response> {
        let query: Map<String, Value> = uri
            .query()
            .map(|q| {
                url_pairs(q)
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect()
            })
            .unwrap_or_default();
        self.seen.lock().unwrap().push(Seen {
            path: uri.path().to_owned(),
            query,
            body,
        });
        let mode = *self.mode.lock().unwrap();
        match mode {
            Mode::Normal | Mode::Impossible => None,
            Mode::Failing => Some((StatusCode::SERVICE_UNAVAILABLE, "overloaded").into_response()),
            Mode::Slow => {
                tokio::time::sleep(Duration::from_secs(2)).await;
                None
            }
            Mode::NotJson => Some((StatusCode::OK, "<html>gateway</html>").into_response()),
            Mode::WrongShape => Some(axum::Json(json!({"results": "none"})).into_response()),
        }
    }

    fn impossible(&self) -> bool {
        *self.mode.lock().unwrap() == Mode::Impossible
    }
}

/// `a=b&c=d`, percent- and plus-decoded.
fn url_pairs(q: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(&format!("http://x/?{q}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// What the GNORM stand-in knows: entity, type, confidence, normalised id, indicator.
const ENTITIES: &[(&str, &str, f64, Option<&str>, &str)] = &[
    (
        "Augustine of Hippo",
        "Person",
        0.94,
        Some("wikidata:Q8018"),
        "factual",
    ),
    ("divine illumination", "Concept", 0.68, None, "interpretive"),
];

async fn annotate(
    State(s): State<Stand>,
    uri: Uri,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Some(r) = s.take(&uri, Some(body.clone())).await {
        return r;
    }
    let text = body["text"].as_str().unwrap_or_default();
    let types: Option<Vec<String>> = serde_json::from_value(body["entity_types"].clone()).ok();
    let mut annotations = Vec::new();
    for (entity, kind, confidence, id, indicator) in ENTITIES {
        if types.as_ref().is_some_and(|t| !t.iter().any(|t| t == kind)) {
            continue;
        }
        if let Some(at) = text.find(entity) {
            let start = text[..at].chars().count();
            annotations.push(json!({
                "entity_text": entity, "entity_type": kind,
                "start": start, "end": start + entity.chars().count(),
                "normalized_id": id, "confidence": confidence, "epistemic_indicator": indicator,
            }));
        }
    }
    if s.impossible() {
        annotations.push(
            json!({"entity_text": "Hippo", "entity_type": "Place", "start": 5000,
                                "end": 5005, "confidence": 1.7}),
        );
    }
    axum::Json(json!({"annotations": annotations})).into_response()
}

pub(crate) const REACT: &str = "DOI:10.48550/arXiv.2210.03629";

fn paper(id: &str, title: &str, year: i64, author: &str) -> Value {
    json!({"paperId": id, "title": title, "year": year,
           "authors": [{"authorId": "1", "name": author}], "externalIds": {"DOI": format!("10.1/{id}")}})
}

async fn graph(
    State(s): State<Stand>,
    uri: Uri,
    Path((id, side)): Path<(String, String)>,
    Query(q): Query<Map<String, Value>>,
) -> Response {
    if let Some(r) = s.take(&uri, None).await {
        return r;
    }
    if id != REACT {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": format!("Paper with id {id} not found")})),
        )
            .into_response();
    }
    let (key, papers) = match side.as_str() {
        "citations" => (
            "citingPaper",
            vec![
                paper("c1", "Toolformer", 2023, "Timo Schick"),
                paper("c2", "Reflexion", 2023, "Noah Shinn"),
            ],
        ),
        _ => (
            "citedPaper",
            vec![paper("r1", "Chain-of-Thought Prompting", 2022, "Jason Wei")],
        ),
    };
    let limit: usize = q["limit"].as_str().unwrap().parse().unwrap();
    let mut data: Vec<Value> = papers
        .into_iter()
        .take(limit)
        .map(|p| json!({ key: p }))
        .collect();
    if s.impossible() {
        data.push(json!({"contexts": []}));
    }
    axum::Json(json!({"offset": 0, "data": data})).into_response()
}

async fn catalogue(
    State(s): State<Stand>,
    uri: Uri,
    Query(q): Query<Map<String, Value>>,
) -> Response {
    if let Some(r) = s.take(&uri, None).await {
        return r;
    }
    let books = [
        ("/works/OL1W", "Confessions", "Augustine of Hippo", 397),
        ("/works/OL2W", "The City of God", "Augustine of Hippo", 426),
        (
            "/works/OL3W",
            "Truth and Method",
            "Hans-Georg Gadamer",
            1960,
        ),
    ];
    let words: Vec<String> = q["q"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    let hits: Vec<Value> = books
        .iter()
        .filter(|(_, title, author, _)| {
            let hay = format!("{title} {author}").to_lowercase();
            words.iter().all(|w| hay.contains(w))
        })
        .map(|(key, title, author, year)| {
            json!({"key": key, "title": title, "author_name": [author],
                   "first_publish_year": year, "isbn": ["9780000000001"], "publisher": ["Penguin"]})
        })
        .collect();
    let limit: usize = q["limit"].as_str().unwrap().parse().unwrap();
    let mut docs: Vec<Value> = hits.iter().take(limit).cloned().collect();
    if s.impossible() {
        docs.push(json!({"key": "/works/OL9W", "author_name": ["Nobody"]}));
    }
    axum::Json(json!({"numFound": hits.len(), "start": 0, "docs": docs})).into_response()
}

/// The three stand-ins on one address: GNORM at `/gnorm`, the citation graph at `/s2/graph/v1`,
/// the catalogue at `/ol`.
pub(crate) async fn stand_ins() -> (String, Stand) {
    let stand = Stand {
        mode: Arc::new(Mutex::new(Mode::Normal)),
        seen: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/gnorm/annotate", post(annotate))
        .route("/s2/graph/v1/paper/{*rest}", get(graph_route))
        .route("/ol/search.json", get(catalogue))
        .with_state(stand.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, stand)
}

/// Paper ids hold slashes (`DOI:10.48550/arXiv...`): the side is the last segment.
async fn graph_route(
    state: State<Stand>,
    uri: Uri,
    Path(rest): Path<String>,
    query: Query<Map<String, Value>>,
) -> Response {
    let (id, side) = rest.rsplit_once('/').unwrap_or((&rest, ""));
    graph(state, uri, Path((id.to_owned(), side.to_owned())), query).await
}
