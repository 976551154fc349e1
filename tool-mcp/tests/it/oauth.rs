//! A server behind OAuth 2.1, without the conformance suite: this project's own `tool-server`
//! behind a resource server that accepts only the tokens of a small authorization server (its
//! protected resource metadata at the well-known path, authorization server metadata, a
//! pre-registered confidential client, PKCE checked, refresh tokens). The client imports it with
//! an `oauth` entry: the flow runs on the first `401`, a revoked token is refreshed without asking
//! anyone again, and a server that refuses whatever is tried is `UNAUTHORIZED`, the secret and the
//! tokens in no message.

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

/// Says hello.
#[tool(read_only, intent = "Greet {name}")]
fn greet(
    /// Who.
    name: String,
) -> String {
    format!("hello, {name}")
}

/// What the authorization server has done and what the resource server accepts.
#[derive(Default)]
struct Auth {
    issuer: String,
    /// Access tokens the resource server accepts.
    valid: Mutex<Vec<String>>,
    /// Refresh tokens the authorization server honours.
    refreshable: Mutex<Vec<String>>,
    /// Codes issued, with the PKCE challenge each was issued for.
    codes: Mutex<HashMap<String, String>>,
    issued: AtomicUsize,
    authorizations: AtomicUsize,
    refreshes: AtomicUsize,
    /// Refuse every authorization and refresh from now on.
    refuse: AtomicBool,
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
}

async fn authorization_server(auth: Arc<Auth>, listener: tokio::net::TcpListener) {
    let issuer = auth.issuer.clone();
    let metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_post"],
        "scopes_supported": ["notes"],
    });
    let app = Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || async move { axum::Json(metadata) }),
        )
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(auth);
    let _ = axum::serve(listener, app).await;
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
    assert_eq!(q.get("client_id").map(String::as_str), Some(CLIENT_ID));
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
    if field("client_id") != CLIENT_ID || field("client_secret") != SECRET {
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
    let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let auth = Arc::new(Auth {
        issuer: format!("http://{}", as_listener.local_addr().unwrap()),
        ..Auth::default()
    });
    tokio::spawn(authorization_server(auth.clone(), as_listener));

    let set = tool_runtime::toolset![greet].unwrap();
    let executor = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let opts = ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap());
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let url = format!("{base}/mcp");
    let resource = json!({
        "resource": url,
        "authorization_servers": [auth.issuer],
        "scopes_supported": ["notes"],
    });
    let challenge = format!(
        "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\", \
         scope=\"notes\""
    );
    let guard = auth.clone();
    // a token of the authorization server stands for the agent's token of the server behind
    let mcp = tool_server::router(executor, opts).layer(axum::middleware::from_fn(
        move |mut request: Request, next: Next| {
            let (auth, challenge) = (guard.clone(), challenge.clone());
            async move {
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
    let app = Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(move || async move { axum::Json(resource) }),
        )
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
