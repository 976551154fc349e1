//! A server behind OAuth 2.1, without the conformance suite: this project's own `tool-server`
//! behind a resource server that accepts only the tokens of a small authorization server (its
//! protected resource metadata at the well-known path, authorization server metadata, a
//! pre-registered confidential client, PKCE checked, refresh tokens). The client imports it with
//! an `oauth` entry: the flow runs on the first `401`, a revoked token is refreshed without asking
//! anyone again, and a server that refuses whatever is tried is `UNAUTHORIZED`, the secret and the
//! tokens in no message. Kept tokens (`tokenFile`) serve a restarted process, on a server of the
//! 2025-03-26 revision too (no protected resource metadata, the authorization server on the
//! server's own origin), and a client that registered itself dynamically (RFC 7591) keeps its
//! registration with them, so that its refresh is authenticated with the secret it was given.
//! A client the authorization server no longer knows (its registration dropped, a file without
//! the registration) or whose secret expired registers and is authorized again, the dead secret
//! never sent; a refused refresh token is followed by a new authorization of the same client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sha2::Digest;
use tool_mcp::client::{ClientError, Consent, McpClient, OAuthConfig, ServerConfig};
use tool_runtime::executor::{ApproveAll, Executor, Outcome};
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, ErrorCode, ToolCall, ToolSet, tool};
use tool_server::{ServerOptions, Tokens};

const AGENT: &str = "agent-token-behind-oauth-0001";
const APPROVER: &str = "approver-token-behind-oauth-1";
const CLIENT_ID: &str = "tool-mcp-test-client";
const SECRET: &str = "s3cret-of-the-test-client-42";
/// The secrets of the clients registered dynamically begin with this.
const DYN_SECRET: &str = "dyn-s3cret-given-at-registration";

/// Says hello.
#[tool(read_only, intent = "Greet {name}")]
fn greet(
    /// Who.
    name: String,
) -> String {
    format!("hello, {name}")
}

/// How the servers are set up.
#[derive(Clone, Copy, Default)]
struct Mode {
    /// No protected resource metadata (the 2025-03-26 revision): the authorization server is on
    /// the MCP server's origin, its metadata at that origin's well-known URL naming the issuer
    /// `/oauth` there.
    legacy: bool,
    /// No pre-registered client: clients register themselves (RFC 7591) and are each given a
    /// secret and `client_secret_post`, which the token endpoint requires, though the metadata
    /// lists `client_secret_basic` too.
    dynamic: bool,
    /// How long the secret of a client registered dynamically lasts, in seconds
    /// (`client_secret_expires_at`); forever (`0`) when absent.
    secret_lifetime: Option<u64>,
}

/// A client registered dynamically.
struct Registered {
    secret: String,
    redirects: Vec<String>,
    /// When its secret expires (seconds since the Unix epoch), `0` for never.
    expires_at: u64,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// What the authorization server has done and what the resource server accepts.
#[derive(Default)]
struct Auth {
    issuer: String,
    mode: Mode,
    /// The clients registered dynamically.
    clients: Mutex<HashMap<String, Registered>>,
    registrations: AtomicUsize,
    /// Access tokens the resource server accepts.
    valid: Mutex<Vec<String>>,
    /// Refresh tokens the authorization server honours.
    refreshable: Mutex<Vec<String>>,
    /// Codes issued, with the PKCE challenge each was issued for.
    codes: Mutex<HashMap<String, String>>,
    issued: AtomicUsize,
    authorizations: AtomicUsize,
    refreshes: AtomicUsize,
    /// Sessions the MCP server was asked to end (`DELETE`), as a client closes.
    ended: AtomicUsize,
    /// Refuse every authorization and refresh from now on.
    refuse: AtomicBool,
    /// Token requests refused because the client's secret, the right one, had expired.
    dead_secrets: AtomicUsize,
}

impl Auth {
    fn token(&self) -> Value {
        let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let (access, refresh) = (format!("access-{n}-xyz"), format!("refresh-{n}-xyz"));
        self.valid.lock().unwrap().push(access.clone());
        self.refreshable.lock().unwrap().push(refresh.clone());
        json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
               "refresh_token": refresh, "scope": "notes"})
    }

    fn revoke_access(&self) {
        self.valid.lock().unwrap().clear();
    }

    /// Refresh tokens issued so far are refused (`invalid_grant`), as revoked ones are.
    fn revoke_refresh(&self) {
        self.refreshable.lock().unwrap().clear();
    }

    /// The clients registered dynamically are dropped, as a server that lost or purged its
    /// registrations has them.
    fn forget_clients(&self) {
        self.clients.lock().unwrap().clear();
    }

    /// The secrets of the clients registered dynamically have expired.
    fn expire_secrets(&self) {
        for client in self.clients.lock().unwrap().values_mut() {
            client.expires_at = 1;
        }
    }

    /// Whether `client_id` is a client of this server.
    fn knows(&self, client_id: &str) -> bool {
        if self.mode.dynamic {
            self.clients.lock().unwrap().contains_key(client_id)
        } else {
            client_id == CLIENT_ID
        }
    }

    /// Whether `secret` is the secret of `client_id`.
    fn authenticates(&self, client_id: &str, secret: &str) -> bool {
        if self.mode.dynamic {
            let clients = self.clients.lock().unwrap();
            let Some(client) = clients.get(client_id).filter(|c| c.secret == secret) else {
                return false;
            };
            if client.expires_at != 0 && now() >= client.expires_at {
                self.dead_secrets.fetch_add(1, Ordering::SeqCst);
                return false;
            }
            true
        } else {
            client_id == CLIENT_ID && secret == SECRET
        }
    }
}

/// The authorization server of `auth`, its endpoints under `prefix` (the issuer's path), its
/// metadata at the origin's well-known URL.
fn authorization_server(auth: Arc<Auth>, prefix: &str) -> Router {
    let issuer = auth.issuer.clone();
    let mut metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_post"],
        "scopes_supported": ["notes"],
    });
    if auth.mode.dynamic {
        metadata["registration_endpoint"] = json!(format!("{issuer}/register"));
        metadata["token_endpoint_auth_methods_supported"] =
            json!(["client_secret_basic", "client_secret_post"]);
    }
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || async move { axum::Json(metadata) }),
        )
        .route(&format!("{prefix}/authorize"), get(authorize))
        .route(&format!("{prefix}/token"), post(token))
        .route(&format!("{prefix}/register"), post(register))
        .with_state(auth)
}

/// Dynamic client registration (RFC 7591): a public client is asked for, and a confidential one
/// with `client_secret_post` is registered, as some servers do.
async fn register(State(auth): State<Arc<Auth>>, body: axum::Json<Value>) -> Response {
    if !auth.mode.dynamic {
        return (StatusCode::NOT_FOUND, "no registration here").into_response();
    }
    let request = body.0;
    let redirects = request["redirect_uris"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if redirects.is_empty() || request["client_name"] != "tool-mcp" {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_client_metadata"})),
        )
            .into_response();
    }
    let n = auth.registrations.fetch_add(1, Ordering::SeqCst) + 1;
    let (id, secret) = (format!("dyn-client-{n}"), format!("{DYN_SECRET}-{n}"));
    let expires_at = auth
        .mode
        .secret_lifetime
        .map_or(0, |lifetime| now() + lifetime);
    auth.clients.lock().unwrap().insert(
        id.clone(),
        Registered {
            secret: secret.clone(),
            redirects: (redirects.iter())
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect(),
            expires_at,
        },
    );
    let registered = json!({
        "client_id": id, "client_secret": secret, "client_secret_expires_at": expires_at,
        "token_endpoint_auth_method": "client_secret_post", "redirect_uris": redirects,
        "grant_types": ["authorization_code", "refresh_token"], "client_name": "tool-mcp",
    });
    (StatusCode::CREATED, axum::Json(registered)).into_response()
}

async fn authorize(
    State(auth): State<Arc<Auth>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    auth.authorizations.fetch_add(1, Ordering::SeqCst);
    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
    let state = q.get("state").cloned().unwrap_or_default();
    assert!(
        redirect.starts_with("http://127.0.0.1:"),
        "a loopback redirect: {redirect}"
    );
    let client = q.get("client_id").map(String::as_str).unwrap_or_default();
    assert!(auth.knows(client), "an unknown client: {client}");
    if auth.mode.dynamic {
        // the redirect is one the client was registered with
        let clients = auth.clients.lock().unwrap();
        assert!(
            clients[client].redirects.contains(&redirect),
            "{redirect} is not a redirect of {client}"
        );
    }
    assert_eq!(
        q.get("code_challenge_method").map(String::as_str),
        Some("S256")
    );
    if auth.refuse.load(Ordering::SeqCst) {
        return Redirect::to(&format!("{redirect}?error=access_denied&state={state}"))
            .into_response();
    }
    let n = auth.authorizations.load(Ordering::SeqCst);
    let code = format!("code-{n}");
    let challenge = q.get("code_challenge").cloned().unwrap_or_default();
    auth.codes.lock().unwrap().insert(code.clone(), challenge);
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

async fn token(
    State(auth): State<Arc<Auth>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let refuse = |status: StatusCode, error: &str| {
        (status, axum::Json(json!({"error": error}))).into_response()
    };
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if !auth.authenticates(field("client_id"), field("client_secret")) {
        return refuse(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    match field("grant_type") {
        "authorization_code" => {
            let Some(challenge) = auth.codes.lock().unwrap().remove(field("code")) else {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            // PKCE: the verifier is the one the challenge was made from
            let digest = sha2::Sha256::digest(field("code_verifier").as_bytes());
            if base64url(&digest) != challenge {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            axum::Json(auth.token()).into_response()
        }
        "refresh_token" => {
            let known = (auth.refreshable.lock().unwrap()).contains(&field("refresh_token").into());
            if !known || auth.refuse.load(Ordering::SeqCst) {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            auth.refreshes.fetch_add(1, Ordering::SeqCst);
            axum::Json(auth.token()).into_response()
        }
        _ => refuse(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// The MCP server behind OAuth and its authorization server; the server's URL.
async fn protected() -> (String, Arc<Auth>) {
    protected_as(Mode::default()).await
}

/// The MCP server behind OAuth and its authorization server, set up as `mode` says.
async fn protected_as(mode: Mode) -> (String, Arc<Auth>) {
    let opts = ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap());
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let url = format!("{base}/mcp");
    let auth = if mode.legacy {
        Arc::new(Auth {
            issuer: format!("{base}/oauth"),
            mode,
            ..Auth::default()
        })
    } else {
        let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let auth = Arc::new(Auth {
            issuer: format!("http://{}", as_listener.local_addr().unwrap()),
            mode,
            ..Auth::default()
        });
        let app = authorization_server(auth.clone(), "");
        tokio::spawn(async move {
            let _ = axum::serve(as_listener, app).await;
        });
        auth
    };

    let set = tool_runtime::toolset![greet].unwrap();
    let executor = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let resource = json!({
        "resource": url,
        "authorization_servers": [auth.issuer],
        "scopes_supported": ["notes"],
    });
    let challenge = if mode.legacy {
        "Bearer realm=\"mcp\", scope=\"notes\"".to_owned()
    } else {
        format!(
            "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\", \
             scope=\"notes\""
        )
    };
    let guard = auth.clone();
    // a token of the authorization server stands for the agent's token of the server behind
    let mcp = tool_server::router(executor, opts).layer(axum::middleware::from_fn(
        move |mut request: Request, next: Next| {
            let (auth, challenge) = (guard.clone(), challenge.clone());
            async move {
                if request.method() == axum::http::Method::DELETE {
                    auth.ended.fetch_add(1, Ordering::SeqCst);
                }
                let sent = (request.headers().get(header::AUTHORIZATION))
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map(str::to_owned);
                let valid = sent.is_some_and(|t| auth.valid.lock().unwrap().contains(&t));
                if !valid {
                    let mut refused = StatusCode::UNAUTHORIZED.into_response();
                    refused.headers_mut().insert(
                        header::WWW_AUTHENTICATE,
                        HeaderValue::from_str(&challenge).unwrap(),
                    );
                    return refused;
                }
                request.headers_mut().insert(
                    header::AUTHORIZATION,
                    HeaderValue::from_str(&format!("Bearer {AGENT}")).unwrap(),
                );
                next.run(request).await
            }
        },
    ));
    let app = if mode.legacy {
        // the origin publishes its authorization server's metadata and nothing else
        authorization_server(auth.clone(), "/oauth").route(
            "/.well-known/{*rest}",
            get(|| async { StatusCode::NOT_FOUND }),
        )
    } else {
        Router::new().route(
            "/.well-known/oauth-protected-resource/mcp",
            get(move || async move { axum::Json(resource) }),
        )
    }
    .fallback_service(mcp);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, auth)
}

fn oauth(url: &str) -> ServerConfig {
    let mut config = ServerConfig::http(url).trusting_annotations();
    config.oauth = Some(OAuthConfig {
        client_id: Some(CLIENT_ID.into()),
        client_secret: Some(SECRET.into()),
        // the test's authorization server grants at once: its redirect is followed here where a
        // person would open the URL
        consent: Consent::FollowRedirect,
        ..OAuthConfig::default()
    });
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_behind_oauth_is_authorized_refreshed_and_refused_without_telling_secrets() {
    let (url, auth) = protected().await;

    // without an `oauth` entry the server's challenge is an authorization error naming the fix
    let e = McpClient::connect("notes", ServerConfig::http(&url))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Unauthorized { .. }), "{e}");
    assert!(e.to_string().contains("`oauth`"), "{e}");
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 0);

    let client = McpClient::connect("notes", oauth(&url)).await.unwrap();
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
    let mut set = ToolSet::new();
    assert_eq!(client.import(&mut set).registered, ["notes__greet"]);
    let exec = Executor::builder(set)
        .confirmation(ApproveAll)
        .build()
        .unwrap();
    // a different name each time: the executor may keep a read-only tool's answer
    let call = |id: &str| {
        let (exec, call) = (
            exec.clone(),
            ToolCall::new(id, "notes__greet", json!({"name": id})),
        );
        let id = id.to_owned();
        async move { exec.call(&call, CallContext::new(id)).await.outcome }
    };
    let first = call("c1").await;
    assert!(
        matches!(&first, Outcome::Success { value, .. } if value == "hello, c1"),
        "{first:?}"
    );

    // a revoked access token is refreshed, and nobody is asked again
    auth.revoke_access();
    let second = call("c2").await;
    assert!(
        matches!(&second, Outcome::Success { value, .. } if value == "hello, c2"),
        "{second:?}"
    );
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 1);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);

    // a server that refuses the token, its refresh and a new authorization: UNAUTHORIZED, not
    // retryable, with neither the secret nor a token in what the model or the log reads
    auth.refuse.store(true, Ordering::SeqCst);
    auth.revoke_access();
    let refused = call("c3").await;
    let error = refused.error().expect("an error");
    assert_eq!(error.code, ErrorCode::of("UNAUTHORIZED"), "{error:?}");
    assert!(!error.retryable, "{error:?}");
    assert!(error.message.contains("notes"), "{error:?}");
    let said = format!("{error:?}");
    for secret in [SECRET, "access-", "refresh-"] {
        assert!(!said.contains(secret), "{secret} in {said}");
    }
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 2);
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_kept_in_a_file_serve_the_next_process_without_asking_again() {
    let (url, auth) = protected().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oauth/notes.json");
    let kept = || {
        let mut config = oauth(&url);
        if let Some(oauth) = &mut config.oauth {
            oauth.token_file = Some(file.clone());
        }
        config
    };
    let first = McpClient::connect("notes", kept()).await.unwrap();
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
    first.close();
    drop(first);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the token file is its owner's alone");
    }

    // a new client, as a restarted process makes: the kept token is sent, nobody is asked
    let client = McpClient::connect("notes", kept()).await.unwrap();
    let mut set = ToolSet::new();
    assert_eq!(client.import(&mut set).registered, ["notes__greet"]);
    let exec = Executor::builder(set)
        .confirmation(ApproveAll)
        .build()
        .unwrap();
    let call = |id: &str| {
        let (exec, call) = (
            exec.clone(),
            ToolCall::new(id, "notes__greet", json!({"name": id})),
        );
        let id = id.to_owned();
        async move { exec.call(&call, CallContext::new(id)).await.outcome }
    };
    assert!(matches!(call("k1").await, Outcome::Success { .. }));
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);

    // and its kept refresh token is honoured, the confidential client authenticated with its
    // secret, still without asking anyone
    auth.revoke_access();
    let refreshed = call("k2").await;
    assert!(
        matches!(&refreshed, Outcome::Success { value, .. } if value == "hello, k2"),
        "{refreshed:?}"
    );
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 1);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
    client.close();

    // without the file, the next process asks again
    std::fs::remove_file(&file).unwrap();
    let again = McpClient::connect("notes", kept()).await.unwrap();
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 2);
    again.close();
}

/// Imports the server `client` is connected to and calls its `greet` as `id`.
async fn greet_once(client: &McpClient, id: &str) -> Outcome {
    let mut set = ToolSet::new();
    assert_eq!(client.import(&mut set).registered, ["notes__greet"]);
    let exec = Executor::builder(set)
        .confirmation(ApproveAll)
        .build()
        .unwrap();
    let call = ToolCall::new(id, "notes__greet", json!({"name": id}));
    exec.call(&call, CallContext::new(id)).await.outcome
}

/// Makes the access token kept in `file` expired, as if it had been received long ago.
fn expire(file: &std::path::Path) {
    let mut kept: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert!(kept["token_received_at"].is_u64(), "{kept}");
    kept["token_received_at"] = json!(1);
    std::fs::write(file, serde_json::to_vec(&kept).unwrap()).unwrap();
}

/// Closes `client` and waits until it has ended its session, the last request its process
/// makes: the next process then finds the token file as this one left it.
async fn closed(client: McpClient, auth: &Auth) {
    let before = auth.ended.load(Ordering::SeqCst);
    client.close();
    drop(client);
    for _ in 0..500 {
        if auth.ended.load(Ordering::SeqCst) > before {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the client did not end its session");
}

#[cfg(unix)]
fn mode(file: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_kept_for_a_2025_03_26_server_are_used_and_refreshed() {
    // the pre-registered client, and one that registers itself there
    for dynamic in [false, true] {
        let (url, auth) = protected_as(Mode {
            legacy: true,
            dynamic,
            ..Mode::default()
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("oauth/notes.json");
        let kept = || {
            let mut config = oauth(&url);
            if let Some(oauth) = &mut config.oauth {
                oauth.token_file = Some(file.clone());
                if dynamic {
                    oauth.client_id = None;
                    oauth.client_secret = None;
                }
            }
            config
        };
        let first = McpClient::connect("notes", kept()).await.unwrap();
        assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
        closed(first, &auth).await;

        // a restarted process sends the kept token, and nobody is asked
        let client = McpClient::connect("notes", kept()).await.unwrap();
        let outcome = greet_once(&client, "l1").await;
        assert!(matches!(&outcome, Outcome::Success { .. }), "{outcome:?}");
        assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
        assert_eq!(auth.refreshes.load(Ordering::SeqCst), 0);
        closed(client, &auth).await;

        // the kept access token expired (and no longer accepted): the next process refreshes it
        // with the kept refresh token at the token endpoint its discovery found, asking nobody
        expire(&file);
        auth.revoke_access();
        let client = McpClient::connect("notes", kept()).await.unwrap();
        let outcome = greet_once(&client, "l2").await;
        assert!(
            matches!(&outcome, Outcome::Success { value, .. } if value == "hello, l2"),
            "{outcome:?}"
        );
        assert_eq!(auth.refreshes.load(Ordering::SeqCst), 1);
        assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
        assert_eq!(
            auth.registrations.load(Ordering::SeqCst),
            usize::from(dynamic)
        );
        client.close();
    }
}

/// What the client logs, at every level, on the test's thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Everything logged on this thread at any level, until the guard is dropped.
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

// one thread, so that the subscriber set for it sees everything the client and its tasks log
#[tokio::test(flavor = "current_thread")]
async fn a_client_that_registered_itself_keeps_its_registration_with_its_tokens() {
    let (logs, _logging) = Logs::capture();

    let (url, auth) = protected_as(Mode {
        dynamic: true,
        ..Mode::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oauth/notes.json");
    let kept = || registering(&url, &file);
    let first = McpClient::connect("notes", kept()).await.unwrap();
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
    // the process that registered refreshes a revoked token as the registration says
    auth.revoke_access();
    let outcome = greet_once(&first, "d0").await;
    assert!(matches!(&outcome, Outcome::Success { .. }), "{outcome:?}");
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 1);
    closed(first, &auth).await;
    // the registration is kept with the tokens, in a file only its owner reads
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(&format!("{DYN_SECRET}-1")),
        "the secret is kept"
    );
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);

    // a restarted process whose kept access token expired refreshes it as the client registered
    // before, authenticated by that client's secret, without registering or asking again
    expire(&file);
    auth.revoke_access();
    let client = McpClient::connect("notes", kept()).await.unwrap();
    let outcome = greet_once(&client, "d1").await;
    assert!(
        matches!(&outcome, Outcome::Success { value, .. } if value == "hello, d1"),
        "{outcome:?}"
    );
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 2);
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);
    closed(client, &auth).await;
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    let kept: Value = serde_json::from_str(&text).unwrap();
    assert_ne!(
        kept["token_received_at"],
        json!(1),
        "the refreshed tokens are kept"
    );
    assert!(
        text.contains(&format!("{DYN_SECRET}-1")),
        "with the same registration"
    );

    // the logs were written (the kept tokens were taken up), and the secret is in none of them
    let logged = logs.text();
    assert!(logged.contains("going on with the tokens kept"), "{logged}");
    assert!(!logged.contains(DYN_SECRET), "the secret was logged");
}

/// The client a restarted process connects, registering itself at `url` with its tokens kept
/// in `file`.
async fn connected(url: &str, file: &std::path::Path) -> McpClient {
    McpClient::connect("notes", registering(url, file))
        .await
        .unwrap()
}

/// `client` greets `who` through the server.
async fn greets(client: &McpClient, who: &str) {
    let outcome = greet_once(client, who).await;
    assert!(
        matches!(&outcome, Outcome::Success { value, .. } if *value == format!("hello, {who}")),
        "{outcome:?}"
    );
}

/// The token file `file`, which must keep the registration of `client_id` and be readable by
/// its owner alone.
fn kept_for(file: &std::path::Path, client_id: &str) -> Value {
    let kept = read_kept(file);
    assert_eq!(kept["registration"]["client_id"], client_id, "{kept}");
    #[cfg(unix)]
    assert_eq!(mode(file), 0o600);
    kept
}

/// A client of the server at `url` that registers itself dynamically, its tokens kept in
/// `file`.
fn registering(url: &str, file: &std::path::Path) -> ServerConfig {
    let mut config = ServerConfig::http(url).trusting_annotations();
    config.oauth = Some(OAuthConfig {
        consent: Consent::FollowRedirect,
        token_file: Some(file.to_owned()),
        ..OAuthConfig::default()
    });
    config
}

/// The token file `file`, read.
fn read_kept(file: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

/// Writes `kept` to the token file `file`, as a process of another build or time left it.
fn write_kept(file: &std::path::Path, kept: &Value) {
    std::fs::write(file, serde_json::to_vec(kept).unwrap()).unwrap();
}

// one thread, so that the subscriber set for it sees everything the client and its tasks log
#[tokio::test(flavor = "current_thread")]
async fn a_client_the_authorization_server_no_longer_knows_registers_and_authorizes_again() {
    let (logs, _logging) = Logs::capture();

    let (url, auth) = protected_as(Mode {
        dynamic: true,
        ..Mode::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oauth/notes.json");
    let first = connected(&url, &file).await;
    closed(first, &auth).await;
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);

    // the authorization server dropped the registration (and the tokens issued to it): the
    // restarted process's refresh is refused with `invalid_client`, and the client registers
    // and authorizes again as on first use, instead of failing until the file is deleted
    auth.forget_clients();
    auth.revoke_access();
    expire(&file);
    let client = connected(&url, &file).await;
    greets(&client, "f1").await;
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 2);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 2);
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 0);
    closed(client, &auth).await;
    // the file holds the new client and its tokens, and only its owner reads it
    let kept = kept_for(&file, "dyn-client-2");
    assert_eq!(kept["client_id"], "dyn-client-2", "{kept}");
    assert!(!kept.to_string().contains(&format!("{DYN_SECRET}-1")));

    // a file written by a build that kept no registration: the tokens' client, without its
    // secret, is refused at the refresh, and the client starts again the same way
    let mut kept = read_kept(&file);
    kept.as_object_mut().unwrap().remove("registration");
    write_kept(&file, &kept);
    expire(&file);
    auth.revoke_access();
    let client = connected(&url, &file).await;
    greets(&client, "f2").await;
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 3);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 3);
    closed(client, &auth).await;
    kept_for(&file, "dyn-client-3");

    // each time a warning said why, naming no secret
    let logged = logs.text();
    let warned = logged
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("invalid_client") && l.contains("discarded"))
        .count();
    assert_eq!(warned, 2, "{logged}");
    assert!(!logged.contains(DYN_SECRET), "a secret was logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_token_is_replaced_by_an_authorization_of_the_same_client() {
    let (url, auth) = protected_as(Mode {
        dynamic: true,
        ..Mode::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oauth/notes.json");
    let client = connected(&url, &file).await;
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 1);

    // the refresh token is refused (`invalid_grant`): a new authorization, by the client
    // registered before, redirected where it was registered to be
    auth.revoke_access();
    auth.revoke_refresh();
    greets(&client, "g1").await;
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 2);
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    closed(client, &auth).await;

    // the same in a restarted process, with the registration kept in the file
    auth.revoke_access();
    auth.revoke_refresh();
    expire(&file);
    let client = connected(&url, &file).await;
    greets(&client, "g2").await;
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 3);
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 0);
    closed(client, &auth).await;
    let kept = kept_for(&file, "dyn-client-1");
    assert_eq!(kept["client_id"], "dyn-client-1", "{kept}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_secret_expired_registers_again_before_sending_it() {
    let (url, auth) = protected_as(Mode {
        dynamic: true,
        secret_lifetime: Some(3600),
        ..Mode::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oauth/notes.json");
    let first = connected(&url, &file).await;
    closed(first, &auth).await;
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 1);
    // the secret's expiry is kept with the registration
    let mut kept = read_kept(&file);
    let expires = kept["registration"]["client_secret_expires_at"].as_u64();
    assert!(expires.is_some_and(|t| t > now()), "{kept}");

    // an hour later: the secret expires in half a minute, less than the margin, and the
    // authorization server takes it no more; the access token expired too
    kept["registration"]["client_secret_expires_at"] = json!(now() + 30);
    kept["registration"]["client_id_issued_at"] = json!(now() - 3570);
    write_kept(&file, &kept);
    expire(&file);
    auth.expire_secrets();
    auth.revoke_access();
    let client = connected(&url, &file).await;
    greets(&client, "e1").await;
    // the client registered again before any token request: the dead secret was never sent
    assert_eq!(auth.dead_secrets.load(Ordering::SeqCst), 0);
    assert_eq!(auth.registrations.load(Ordering::SeqCst), 2);
    assert_eq!(auth.authorizations.load(Ordering::SeqCst), 2);
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 0);
    closed(client, &auth).await;
    let kept = kept_for(&file, "dyn-client-2");
    assert!(!kept.to_string().contains(&format!("{DYN_SECRET}-1")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_that_expires_while_the_process_runs_is_not_sent() {
    // secrets of two seconds, and no token file: the process's own registration expires
    let (url, auth) = protected_as(Mode {
        dynamic: true,
        secret_lifetime: Some(2),
        ..Mode::default()
    })
    .await;
    let mut config = ServerConfig::http(&url).trusting_annotations();
    config.oauth = Some(OAuthConfig {
        consent: Consent::FollowRedirect,
        ..OAuthConfig::default()
    });
    let client = McpClient::connect("notes", config).await.unwrap();
    let expiry = (auth.clients.lock().unwrap().values())
        .map(|c| c.expires_at)
        .max()
        .unwrap();
    while now() < expiry {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // the access token is refused: its refresh would need the secret, which expired
    auth.revoke_access();
    let registered = auth.registrations.load(Ordering::SeqCst);
    greets(&client, "x1").await;
    assert_eq!(auth.dead_secrets.load(Ordering::SeqCst), 0);
    assert!(auth.registrations.load(Ordering::SeqCst) > registered);
    assert_eq!(auth.refreshes.load(Ordering::SeqCst), 0);
    client.close();
}
