//! What every response and request goes through, whatever route serves it: the `Host` it names
//! must be one the server answers to and responses say how they may be cached and sniffed (one
//! layer, [`Outer`]), and errors that axum's extractors produce get the same JSON shape as the
//! API's own.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use futures::future::{BoxFuture, Either, Map, Ready, Then, ready};
use tool_runtime::{ErrorCode, ToolError};

use crate::error::ApiError;

/// `HOST_NOT_ALLOWED`: the request names a host the server was not told it answers to.
pub(crate) const HOST_NOT_ALLOWED: ErrorCode = ErrorCode::of("HOST_NOT_ALLOWED");

/// How much of an extractor's plain-text rejection is read to become the error's message.
const REJECTION_BYTES: usize = 16 * 1024;

/// The hosts a server answers to, parsed once when the router is built rather than on every
/// request. An empty list allows every host.
#[derive(Debug)]
pub(crate) struct AllowedHosts {
    every: bool,
    hosts: Vec<Authority>,
}

impl AllowedHosts {
    /// `list` as given to the server (`allowed_hosts`); an entry that is no host allows nothing.
    pub(crate) fn new(list: &[String]) -> Self {
        AllowedHosts {
            every: list.is_empty(),
            hosts: list.iter().filter_map(|a| Authority::parse(a)).collect(),
        }
    }

    /// Whether the request's `Host` (or HTTP/2 authority) is allowed: what
    /// `host_of(..).is_some_and(|h| h.is_in(list))` says, with the name compared without case
    /// in place of a lower-case copy of it (the allowed names are in lower case already).
    pub(crate) fn admits(&self, uri: &Uri, headers: &HeaderMap) -> bool {
        if self.every {
            return true;
        }
        let matches = |host: &str, port: Option<u16>| {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            self.hosts.iter().any(|a| {
                a.host.eq_ignore_ascii_case(host) && a.port.is_none_or(|p| port == Some(p))
            })
        };
        match headers.get(header::HOST) {
            Some(host) => match plain_authority(host.as_bytes()) {
                Some((name, port)) => matches(name, port),
                None => host
                    .to_str()
                    .ok()
                    .and_then(|text| text.parse::<axum::http::uri::Authority>().ok())
                    .is_some_and(|a| matches(a.host(), a.port_u16())),
            },
            None => uri
                .authority()
                .is_some_and(|a| matches(a.host(), a.port_u16())),
        }
    }
}

/// A `Host` value that is a name of letters, digits, dots and hyphens, optionally followed by
/// `:` and a port that fits a `u16`: its name and port, read without building an
/// `http::uri::Authority` (which copies the value). Such a value parses as an authority with that
/// very host and port, so the answer is the same; any other value (an IPv6 literal, user info, a
/// port out of range) is left to the full parse.
fn plain_authority(value: &[u8]) -> Option<(&str, Option<u16>)> {
    let (name, port) = match value.iter().position(|&b| b == b':') {
        Some(colon) => {
            let digits = &value[colon + 1..];
            if digits.is_empty() || digits.len() > 5 || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let port = std::str::from_utf8(digits).ok()?.parse::<u16>().ok()?;
            (&value[..colon], Some(port))
        }
        None => (value, None),
    };
    if name.is_empty()
        || !name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    {
        return None;
    }
    Some((std::str::from_utf8(name).ok()?, port))
}

/// What every request and response goes through, in one layer around every route:
///
/// - a request whose `Host` (or HTTP/2 authority) is not allowed is refused, as `/mcp` does: a
///   page on another site whose name was rebound to this address must not reach the API or the
///   approvals page with the browser's credentials;
/// - every response, the refusal included, says it must not be sniffed as another type, and,
///   unless it says otherwise (the page's assets do), that it must not be stored: API answers
///   carry operations, arguments and audit records that a shared cache or the browser's disk
///   must not keep.
///
/// A tower layer rather than `axum::middleware::from_fn`, which boxes a future and clones the
/// inner service into a boxed `Next` on every request: this one calls the inner service and
/// maps its future.
#[derive(Clone)]
pub(crate) struct Outer {
    pub(crate) allowed: Arc<AllowedHosts>,
}

impl<S> tower_layer::Layer<S> for Outer {
    type Service = OuterService<S>;

    fn layer(&self, inner: S) -> OuterService<S> {
        OuterService {
            inner,
            allowed: self.allowed.clone(),
        }
    }
}

/// [`Outer`] around one route.
#[derive(Clone)]
pub(crate) struct OuterService<S> {
    inner: S,
    allowed: Arc<AllowedHosts>,
}

type Answered = Result<Response, Infallible>;

impl<S> tower_service::Service<Request> for OuterService<S>
where
    S: tower_service::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Answered>, Map<S::Future, fn(Answered) -> Answered>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if !self.allowed.admits(request.uri(), request.headers()) {
            let refusal = ApiError::new(
                ToolError::new(
                    HOST_NOT_ALLOWED,
                    "this server does not answer to the host this request names",
                )
                .recover(
                    "reach the server under a name it is configured to allow (`allowed_hosts`)",
                ),
            )
            .into_response();
            return Either::Left(ready(Ok(caching_headers(refusal))));
        }
        let add: fn(Answered) -> Answered = |answered| answered.map(caching_headers);
        Either::Right(self.inner.call(request).map(add))
    }
}

/// `nosniff`, and `no-store` unless the response says how it may be cached.
fn caching_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(HeaderValue::from_static("nosniff"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// A host and port, compared as rmcp compares them at `/mcp`: the name without brackets and in
/// lower case; an allowed entry without a port allows any port.
#[derive(Debug, PartialEq)]
pub(crate) struct Authority {
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

impl Authority {
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match text.parse::<axum::http::uri::Authority>() {
            Ok(a) => Authority::new(a.host(), a.port_u16()),
            // a bare IPv6 address (`::1`) is no authority, but is a name to allow
            Err(_) => Authority::new(text, None),
        })
    }

    pub(crate) fn new(host: &str, port: Option<u16>) -> Self {
        Authority {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase(),
            port,
        }
    }

    /// Whether the name is this machine's own (`localhost`, `127.0.0.0/8`, `::1`).
    pub(crate) fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    pub(crate) fn is_in(&self, allowed: &[String]) -> bool {
        allowed
            .iter()
            .filter_map(|a| Authority::parse(a))
            .any(|a| a.host == self.host && a.port.is_none_or(|p| self.port == Some(p)))
    }
}

pub(crate) fn host_of(uri: &Uri, headers: &HeaderMap) -> Option<Authority> {
    match headers.get(header::HOST) {
        Some(host) => {
            let a: axum::http::uri::Authority = host.to_str().ok()?.parse().ok()?;
            Some(Authority::new(a.host(), a.port_u16()))
        }
        None => uri
            .authority()
            .map(|a| Authority::new(a.host(), a.port_u16())),
    }
}

/// Gives an error that is not already JSON (the plain-text rejections of axum's query, path and
/// JSON extractors) the API's error shape, keeping its text as the message.
///
/// A tower layer, as [`Outer`] is: a response that needs nothing (every success, every JSON
/// error) passes through the inner future's own; only a plain-text error is read and rewritten
/// in a boxed future.
#[derive(Clone, Copy)]
pub(crate) struct JsonErrors;

impl<S> tower_layer::Layer<S> for JsonErrors {
    type Service = JsonErrorsService<S>;

    fn layer(&self, inner: S) -> JsonErrorsService<S> {
        JsonErrorsService(inner)
    }
}

/// [`JsonErrors`] around one route.
#[derive(Clone)]
pub(crate) struct JsonErrorsService<S>(S);

type Reshaped = Either<Ready<Answered>, BoxFuture<'static, Answered>>;

impl<S> tower_service::Service<Request> for JsonErrorsService<S>
where
    S: tower_service::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Then<S::Future, Reshaped, fn(Answered) -> Reshaped>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let reshape: fn(Answered) -> Reshaped = |answered| {
            let Ok(response) = answered;
            if is_json_or_no_error(&response) {
                Either::Left(ready(Ok(response)))
            } else {
                Either::Right(Box::pin(async move { Ok(json_error(response).await) }))
            }
        };
        self.0.call(request).then(reshape)
    }
}

fn is_json_or_no_error(response: &Response) -> bool {
    let status = response.status();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    json || !(status.is_client_error() || status.is_server_error())
}

/// A plain-text error response as the API's JSON error, its text as the message.
async fn json_error(response: Response) -> Response {
    let status = response.status();
    let text = axum::body::to_bytes(response.into_body(), REJECTION_BYTES)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let (code, keep_status) = match status {
        // a query string, a path segment or a body field of the wrong type or out of range
        StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => {
            (ErrorCode::INVALID_ARGUMENTS, false)
        }
        StatusCode::NOT_FOUND => (ErrorCode::NOT_FOUND, false),
        StatusCode::PAYLOAD_TOO_LARGE => (ErrorCode::PAYLOAD_TOO_LARGE, false),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (ErrorCode::of("UNSUPPORTED_MEDIA_TYPE"), false),
        s if s.is_server_error() => (ErrorCode::INTERNAL, true),
        _ => (ErrorCode::of("BAD_REQUEST"), true),
    };
    let mut e = ApiError::new(
        ToolError::new(code, message)
            .recover("see /api/v1/openapi.json for the parameters and body each route takes"),
    );
    if keep_status {
        e.set_status(status);
    }
    e.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(host: &str, list: &[&str]) -> bool {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        host_of(&Uri::from_static("/"), &headers).is_some_and(|h| h.is_in(&list))
    }

    #[test]
    fn hosts_are_compared_by_name_and_port_where_one_is_given() {
        let loopback = ["localhost", "127.0.0.1", "::1"];
        assert!(allowed("localhost:8080", &loopback));
        assert!(allowed("LOCALHOST", &loopback));
        assert!(allowed("[::1]:3000", &loopback));
        assert!(allowed("127.0.0.1:1", &loopback));
        assert!(!allowed("evil.example:8080", &loopback));
        assert!(!allowed("localhost.evil.example", &loopback));
        assert!(allowed("tools.example:443", &["tools.example:443"]));
        assert!(!allowed("tools.example:8443", &["tools.example:443"]));
        assert!(!allowed("bad host", &loopback));
    }

    /// The list parsed once admits exactly the hosts that `host_of` and `is_in` admit.
    #[test]
    fn the_parsed_list_admits_what_the_list_admits() {
        let lists: [&[&str]; 5] = [
            &["localhost", "127.0.0.1", "::1"],
            &["Tools.Example:443", "[::1]:8080"],
            &["bad host", ""],
            &["localhost:80", "127.0.0.1"],
            &[],
        ];
        let hosts = [
            "localhost:8080",
            "LOCALHOST",
            "LocalHost:1",
            "[::1]:3000",
            "[::1]:8080",
            "127.0.0.1:1",
            "evil.example:8080",
            "localhost.evil.example",
            "tools.example:443",
            "TOOLS.EXAMPLE:443",
            "tools.example:8443",
            "tools.example",
            "bad host",
            "",
            "localhost:",
            "localhost:99999",
            "localhost:080",
            "localhost:8080:1",
            ":8080",
            "user@localhost",
            "local_host",
            "127.0.0.1",
            "TOOLS.example:0443",
        ];
        for list in lists {
            let owned: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            let parsed = AllowedHosts::new(&owned);
            for host in hosts {
                let mut headers = HeaderMap::new();
                headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
                let uri = Uri::from_static("/");
                let expected =
                    owned.is_empty() || host_of(&uri, &headers).is_some_and(|h| h.is_in(&owned));
                assert_eq!(
                    parsed.admits(&uri, &headers),
                    expected,
                    "{host} in {list:?}"
                );
            }
            // no Host header: the request's authority decides
            let uri = Uri::from_static("http://LOCALHOST:9/x");
            let expected = owned.is_empty()
                || host_of(&uri, &HeaderMap::new()).is_some_and(|h| h.is_in(&owned));
            assert_eq!(parsed.admits(&uri, &HeaderMap::new()), expected, "{list:?}");
        }
    }
}
