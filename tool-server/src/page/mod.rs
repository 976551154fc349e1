//! The approvals page: one HTML file, a stylesheet and three scripts, compiled into the binary, so
//! a server needs no build step and no files beside it.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;

const INDEX: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("app.js");
const QUESTIONS: &str = include_str!("questions.js");
const HELD: &str = include_str!("held.js");
const STYLE: &str = include_str!("style.css");

/// What the page may load: only itself. A tool's arguments are shown as text, and this keeps
/// even a mistake in that from running anything another origin supplies.
const POLICY: &str = "default-src 'self'; style-src 'self'; script-src 'self'; \
                      connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(POLICY),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
}

/// `GET /`, `GET /assets/app.js`, `GET /assets/questions.js`, `GET /assets/held.js`,
/// `GET /assets/style.css`.
pub(crate) fn router() -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/assets/questions.js",
            get(|| async { asset("text/javascript; charset=utf-8", QUESTIONS) }),
        )
        .route(
            "/assets/held.js",
            get(|| async { asset("text/javascript; charset=utf-8", HELD) }),
        )
        .route(
            "/assets/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}
