//! The grants without a person, and the discovery of a server of the 2025-03-26 revision,
//! without the conformance suite: this project's own `tool-server` behind a resource server that
//! accepts only the tokens of a small authorization server (on the same listener, its issuer at
//! `/as`), which checks what each grant sends:
//! - the client credentials grant with `private_key_jwt`: the assertion's signature, `iss`,
//!   `sub`, `aud` (the issuer, or the token endpoint for a server set to expect that one) and a
//!   `jti` never seen before;
//! - enterprise-managed authorization: an identity provider (issuer `/idp`) that exchanges the
//!   person's ID token for an ID-JAG it signs, and the JWT bearer grant that redeems it, with the
//!   client's HTTP Basic authentication;
//! - a server with no protected resource metadata whose authorization server metadata, at its
//!   origin's well-known URL, names an issuer other than that URL.
//!
//! And the failures a user meets: a missing or unreadable key, a key the authorization server
//! does not know, an identity assertion that cannot be read, an issuer elsewhere: each an error
//! naming the server, with no key, secret, assertion or token in it.
//!
//! The private keys below are test fixtures made for these tests (P-256, PKCS#8), nobody's.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Form, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Value, json};
use tool_mcp::client::{
    AssertionAudience, ClientError, Grant, IdentityProvider, McpClient, OAuthConfig, ServerConfig,
};
use tool_runtime::executor::{ApproveAll, Executor, Outcome};
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, ToolCall, ToolSet, tool};
use tool_server::{ServerOptions, Tokens};

const AGENT: &str = "agent-token-behind-grants-0001";
const APPROVER: &str = "approver-token-behind-grants-1";
const CLIENT_ID: &str = "tool-mcp-machine";
const AS_SECRET: &str = "as-secret-of-the-machine-7";
/// `Basic base64(CLIENT_ID:AS_SECRET)`.
const AS_BASIC: &str = "Basic dG9vbC1tY3AtbWFjaGluZTphcy1zZWNyZXQtb2YtdGhlLW1hY2hpbmUtNw==";
const IDP_CLIENT_ID: &str = "tool-mcp-at-the-idp";
const ID_TOKEN: &str = "id-token-of-alice-from-the-idp-0042";

const CLIENT_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtb0pZnnzvshf0HQz\nFgzJXuXNl4H92Wx2L6xT00FWxXqhRANCAATYj3jVa6tpZq6uUA9R5Ltd5pQnruK/\nvovO93n/lE1wkbcIZonmzsfzRkYCdlinArNr6CVMukwjP0KmU/GauPEA\n-----END PRIVATE KEY-----";
const CLIENT_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2I941WuraWaurlAPUeS7XeaUJ67i\nv76Lzvd5/5RNcJG3CGaJ5s7H80ZGAnZYpwKza+glTLpMIz9CplPxmrjxAA==\n-----END PUBLIC KEY-----";
/// A key the authorization server does not know.
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg38LxK5WlAj5UQKpK\nOiy9k14tcXXI5PpFkd1RO5sueLOhRANCAAQdCMdH0ikEOi8nbtOajGFS+3cTq2xY\nD3H7wwsJGjFIMs7pp+wCqU6mgqDcGuzR3RkNiVCEpcJyFCrTGfWn4Wzw\n-----END PRIVATE KEY-----";
const IDP_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQga/Dbv0caRGqzIwIr\n5TRojYxtPgbaeroPubvu+8yFhw2hRANCAAQJhZVAsluhOEBHtOjOm2isnblJqAtc\nrNMRQZM5aHqqO0/+qiDiB0WbrfRYZD0pY40+ohHewY5zgLdH95pATBA1\n-----END PRIVATE KEY-----";
const IDP_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAECYWVQLJboThAR7TozptorJ25SagL\nXKzTEUGTOWh6qjtP/qog4gdFm630WGQ9KWONPqIR3sGOc4C3R/eaQEwQNQ==\n-----END PUBLIC KEY-----";

/// Says hello.
#[tool(read_only, intent = "Greet {name}")]
fn greet(
    /// Who.
    name: String,
) -> String {
    format!("hello, {name}")
}

/// How the server publishes where its authorization server is.
#[derive(Clone, Copy, PartialEq)]
enum Discovery {
    /// Protected resource metadata naming the authorization server `/as`.
    Resource,
    /// Protected resource metadata naming `/as`, whose metadata names the issuer `/oauth`.
    ResourceWithOtherIssuer,
    /// None (2025-03-26): the authorization server's metadata at the origin's well-known URL,
    /// naming the issuer `/oauth` on the same origin.
    Legacy,
    /// As `Legacy`, the issuer on another origin (`localhost` for `127.0.0.1`).
    LegacyElsewhere,
}

/// The servers, and what the authorization server saw.
struct Servers {
    url: String,
    issuer: String,
    token_endpoint: String,
    /// The audience client assertions must name: the issuer unless set.
    audience: Mutex<Option<String>>,
    idp: String,
    /// Access tokens the resource server accepts.
    valid: Mutex<Vec<String>>,
    issued: AtomicUsize,
    /// The `jti` of every client assertion accepted.
    jtis: Mutex<HashSet<String>>,
    /// ID-JAGs the identity provider issued.
    jags: AtomicUsize,
    /// Why the authorization server or the identity provider refused a request.
    refused: Mutex<Vec<String>>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl Servers {
    fn token(&self) -> Response {
        let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let access = format!("grant-access-{n}-xyz");
        self.valid.lock().unwrap().push(access.clone());
        axum::Json(json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600}))
            .into_response()
    }

    fn refuse(&self, status: StatusCode, error: &str, why: String) -> Response {
        self.refused.lock().unwrap().push(why);
        (status, axum::Json(json!({"error": error}))).into_response()
    }
}

async fn token(
    State(s): State<Arc<Servers>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    match field("grant_type") {
        "client_credentials" => {
            if field("resource") != s.url {
                return s.refuse(StatusCode::BAD_REQUEST, "invalid_target", "resource".into());
            }
            if !form.contains_key("client_assertion") {
                let basic = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok());
                let post = field("client_id") == CLIENT_ID && field("client_secret") == AS_SECRET;
                if basic == Some(AS_BASIC) || post {
                    return s.token();
                }
                return s.refuse(StatusCode::UNAUTHORIZED, "invalid_client", "secret".into());
            }
            if let Err(refused) = client_assertion(&s, &form) {
                return refused;
            }
            s.token()
        }
        "urn:ietf:params:oauth:grant-type:jwt-bearer" => {
            let basic = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            if form.contains_key("client_assertion") {
                if let Err(refused) = client_assertion(&s, &form) {
                    return refused;
                }
            } else if basic != Some(AS_BASIC) {
                return s.refuse(StatusCode::UNAUTHORIZED, "invalid_client", "basic".into());
            }
            let header = jsonwebtoken::decode_header(field("assertion"));
            if header.ok().and_then(|h| h.typ).as_deref() != Some("oauth-id-jag+jwt") {
                return s.refuse(StatusCode::BAD_REQUEST, "invalid_grant", "typ".into());
            }
            let mut validation = Validation::new(Algorithm::ES256);
            validation.set_audience(&[&s.issuer]);
            validation.set_issuer(&[&s.idp]);
            let key = DecodingKey::from_ec_pem(IDP_PUBLIC.as_bytes()).unwrap();
            match jsonwebtoken::decode::<Value>(field("assertion"), &key, &validation) {
                Ok(jag)
                    if jag.claims["client_id"] == CLIENT_ID && jag.claims["resource"] == s.url =>
                {
                    s.token()
                }
                Ok(_) => s.refuse(StatusCode::BAD_REQUEST, "invalid_grant", "claims".into()),
                Err(e) => s.refuse(StatusCode::BAD_REQUEST, "invalid_grant", e.to_string()),
            }
        }
        other => s.refuse(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            other.into(),
        ),
    }
}

/// Checks the client assertion of `form` (`private_key_jwt`): its type, its signature by the
/// client's key, `iss` and `sub` the client, `aud` the issuer (or the audience the test set),
/// a `jti` never seen before; the refusal otherwise.
fn client_assertion(s: &Servers, form: &HashMap<String, String>) -> Result<(), Response> {
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if field("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        || form.contains_key("client_secret")
    {
        return Err(s.refuse(StatusCode::BAD_REQUEST, "invalid_request", "type".into()));
    }
    let mut validation = Validation::new(Algorithm::ES256);
    let audience = (s.audience.lock().unwrap().clone()).unwrap_or_else(|| s.issuer.clone());
    validation.set_audience(&[audience]);
    validation.set_issuer(&[CLIENT_ID]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let key = DecodingKey::from_ec_pem(CLIENT_PUBLIC.as_bytes()).unwrap();
    let claims = match jsonwebtoken::decode::<Value>(field("client_assertion"), &key, &validation) {
        Ok(data) => data.claims,
        Err(e) => {
            return Err(s.refuse(StatusCode::UNAUTHORIZED, "invalid_client", e.to_string()));
        }
    };
    let jti = claims["jti"].as_str().unwrap_or_default().to_owned();
    let fresh = claims["sub"] == CLIENT_ID
        && claims["exp"].as_u64().unwrap_or_default() <= now() + 300
        && !jti.is_empty()
        && s.jtis.lock().unwrap().insert(jti);
    if !fresh {
        return Err(s.refuse(StatusCode::UNAUTHORIZED, "invalid_client", "claims".into()));
    }
    Ok(())
}

/// The identity provider's token endpoint: the token exchange of the person's ID token for an
/// ID-JAG (RFC 8693).
async fn idp_token(
    State(s): State<Arc<Servers>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    let expected = [
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:id-jag",
        ),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:id_token",
        ),
        ("client_id", IDP_CLIENT_ID),
        ("audience", s.issuer.as_str()),
        ("resource", s.url.as_str()),
    ];
    if let Some((k, _)) = expected.iter().find(|(k, v)| field(k) != *v) {
        return s.refuse(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("idp {k}"),
        );
    }
    if field("subject_token") != ID_TOKEN {
        return s.refuse(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "idp subject".into(),
        );
    }
    let n = s.jags.fetch_add(1, Ordering::SeqCst);
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("oauth-id-jag+jwt".into());
    let claims = json!({
        "iss": s.idp, "sub": "alice", "aud": s.issuer, "client_id": CLIENT_ID,
        "resource": s.url, "jti": format!("jag-{n}"), "iat": now(), "exp": now() + 300,
    });
    let key = EncodingKey::from_ec_pem(IDP_KEY.as_bytes()).unwrap();
    let jag = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    axum::Json(json!({
        "access_token": jag,
        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "token_type": "N_A",
    }))
    .into_response()
}

/// The MCP server behind the authorization server, published as `discovery` says.
async fn serve(discovery: Discovery) -> Arc<Servers> {
    let listener = tool_server::bind(
        "127.0.0.1:0".parse().unwrap(),
        &ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap()),
    )
    .await
    .unwrap();
    let port = listener.local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let named_issuer = match discovery {
        Discovery::Resource => format!("{base}/as"),
        Discovery::ResourceWithOtherIssuer | Discovery::Legacy => format!("{base}/oauth"),
        Discovery::LegacyElsewhere => format!("http://localhost:{port}/oauth"),
    };
    let servers = Arc::new(Servers {
        url: format!("{base}/mcp"),
        issuer: named_issuer.clone(),
        token_endpoint: format!("{base}/as/token"),
        audience: Mutex::default(),
        idp: format!("{base}/idp"),
        valid: Mutex::default(),
        issued: AtomicUsize::new(0),
        jtis: Mutex::default(),
        jags: AtomicUsize::new(0),
        refused: Mutex::default(),
    });
    let metadata = json!({
        "issuer": named_issuer,
        "authorization_endpoint": format!("{base}/as/authorize"),
        "token_endpoint": servers.token_endpoint,
        "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials",
                                  "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        "token_endpoint_auth_methods_supported": ["private_key_jwt", "client_secret_basic"],
        "token_endpoint_auth_signing_alg_values_supported": ["ES256"],
    });
    let legacy = matches!(discovery, Discovery::Legacy | Discovery::LegacyElsewhere);
    let challenge = if legacy {
        "Bearer realm=\"mcp\"".to_owned()
    } else {
        format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")
    };

    let set = tool_runtime::toolset![greet].unwrap();
    let executor = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let guard = servers.clone();
    let mcp = tool_server::router(
        executor,
        ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap()),
    )
    .layer(axum::middleware::from_fn(
        move |mut request: Request, next: Next| {
            let (s, challenge) = (guard.clone(), challenge.clone());
            async move {
                let sent = (request.headers().get(header::AUTHORIZATION))
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map(str::to_owned);
                if !sent.is_some_and(|t| s.valid.lock().unwrap().contains(&t)) {
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
    let metadata_path = if legacy {
        "/.well-known/oauth-authorization-server"
    } else {
        "/.well-known/oauth-authorization-server/as"
    };
    let mut app = Router::new()
        .route(
            metadata_path,
            get(move || async move { axum::Json(metadata) }),
        )
        .route("/as/token", post(token))
        .route("/idp/token", post(idp_token))
        .route(
            "/.well-known/{*rest}",
            get(|| async { StatusCode::NOT_FOUND }),
        );
    if !legacy {
        let resource =
            json!({"resource": servers.url, "authorization_servers": [format!("{base}/as")]});
        app = app.route(
            "/.well-known/oauth-protected-resource/mcp",
            get(move || async move { axum::Json(resource) }),
        );
    }
    let app = app.with_state(servers.clone()).fallback_service(mcp);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    servers
}

fn config(url: &str, oauth: OAuthConfig) -> ServerConfig {
    let mut config = ServerConfig::http(url).trusting_annotations();
    config.oauth = Some(oauth);
    config
}

/// The client credentials grant of `CLIENT_ID`, authenticated by the key in `key_file`.
fn signed(key_file: &std::path::Path) -> OAuthConfig {
    OAuthConfig {
        client_id: Some(CLIENT_ID.into()),
        client_key_file: Some(key_file.to_owned()),
        grant: Grant::ClientCredentials,
        ..OAuthConfig::default()
    }
}

/// Connects to `servers` with `oauth`, imports and calls `greet`.
async fn greets(servers: &Servers, name: &str, oauth: OAuthConfig) -> Result<(), ClientError> {
    let client = McpClient::connect(name, config(&servers.url, oauth)).await?;
    let mut set = ToolSet::new();
    assert_eq!(
        client.import(&mut set).registered,
        [format!("{name}__greet")]
    );
    let exec = Executor::builder(set)
        .confirmation(ApproveAll)
        .build()
        .unwrap();
    let call = ToolCall::new("c1", format!("{name}__greet"), json!({"name": "c1"}));
    let outcome = exec.call(&call, CallContext::new("c1")).await.outcome;
    assert!(
        matches!(&outcome, Outcome::Success { value, .. } if value == "hello, c1"),
        "{outcome:?}"
    );
    client.close();
    Ok(())
}

/// Writes `text` to a new file.
fn file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

/// The lines of a private key in PEM, none of which an error may contain.
fn key_lines(pem: &str) -> Vec<&str> {
    pem.lines().filter(|l| !l.starts_with("-----")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_client_authenticates_with_an_assertion_its_private_key_signs() {
    let servers = serve(Discovery::Resource).await;
    let key = file(CLIENT_KEY);
    greets(&servers, "signed", signed(key.path()))
        .await
        .unwrap();
    assert_eq!(servers.issued.load(Ordering::SeqCst), 1);
    assert_eq!(servers.jtis.lock().unwrap().len(), 1);
    assert!(servers.refused.lock().unwrap().is_empty());

    // the key given in the configuration itself is never shown by its Debug
    let inline = OAuthConfig {
        client_key: Some(CLIENT_KEY.into()),
        ..signed(key.path())
    };
    let shown = format!("{inline:?}");
    for line in key_lines(CLIENT_KEY) {
        assert!(!shown.contains(line), "{shown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assertion_is_for_the_issuer_unless_the_token_endpoint_is_configured() {
    let servers = serve(Discovery::Resource).await;
    let key = file(CLIENT_KEY);
    let for_endpoint = || OAuthConfig {
        client_assertion_audience: AssertionAudience::TokenEndpoint,
        ..signed(key.path())
    };
    // a server that checks the audience against its issuer refuses one for its token endpoint
    let e = greets(&servers, "signed", for_endpoint())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Unauthorized { message, .. } if message.contains("invalid_client")),
        "{e:?}"
    );
    assert_eq!(servers.issued.load(Ordering::SeqCst), 0);

    // one that expects its token endpoint refuses the issuer's, the default, and takes its own
    *servers.audience.lock().unwrap() = Some(servers.token_endpoint.clone());
    let e = greets(&servers, "signed", signed(key.path()))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Unauthorized { message, .. } if message.contains("invalid_client")),
        "{e:?}"
    );
    assert_eq!(servers.issued.load(Ordering::SeqCst), 0);
    greets(&servers, "signed", for_endpoint()).await.unwrap();
    assert_eq!(servers.issued.load(Ordering::SeqCst), 1);

    // enterprise-managed authorization: the client's assertion at the authorization server is
    // for the audience configured too (the identity provider here takes a public client)
    let id_token = file(ID_TOKEN);
    let enterprise = |audience| OAuthConfig {
        grant: Grant::EnterpriseManaged,
        client_assertion_audience: audience,
        identity_provider: Some(IdentityProvider {
            issuer: servers.idp.clone(),
            token_endpoint: format!("{}/token", servers.idp),
            client_id: IDP_CLIENT_ID.into(),
            id_token_file: Some(id_token.path().to_owned()),
            ..IdentityProvider::default()
        }),
        ..signed(key.path())
    };
    let e = greets(
        &servers,
        "enterprise",
        enterprise(AssertionAudience::Issuer),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, ClientError::Unauthorized { message, .. } if message.contains("invalid_client")),
        "{e:?}"
    );
    greets(
        &servers,
        "enterprise",
        enterprise(AssertionAudience::TokenEndpoint),
    )
    .await
    .unwrap();
    assert_eq!(servers.issued.load(Ordering::SeqCst), 2);
    *servers.audience.lock().unwrap() = None;
    greets(
        &servers,
        "enterprise",
        enterprise(AssertionAudience::Issuer),
    )
    .await
    .unwrap();
    assert_eq!(servers.issued.load(Ordering::SeqCst), 3);

    // the option is a key's: with a secret it is a configuration error
    let e = McpClient::connect(
        "signed",
        config(
            &servers.url,
            OAuthConfig {
                client_key_file: None,
                client_secret: Some(AS_SECRET.into()),
                ..for_endpoint()
            },
        ),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, ClientError::Config { server, message }
            if server == "signed" && message.contains("clientAssertionAudience")),
        "{e:?}"
    );
    assert!(!format!("{e:?}").contains(AS_SECRET), "{e:?}");

    // the option as a configuration file writes it
    let read: OAuthConfig =
        serde_json::from_value(json!({"clientAssertionAudience": "token_endpoint"})).unwrap();
    assert_eq!(
        read.client_assertion_audience,
        AssertionAudience::TokenEndpoint
    );
    let read: OAuthConfig = serde_json::from_value(json!({})).unwrap();
    assert_eq!(read.client_assertion_audience, AssertionAudience::Issuer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_bad_key_is_a_configuration_error_naming_the_server_not_the_key() {
    // nothing is listening: the configuration is refused before any request
    let url = "http://127.0.0.1:9/mcp";
    let connect = |oauth: OAuthConfig| McpClient::connect("signed", config(url, oauth));

    let missing = std::env::temp_dir().join("tool-mcp-no-such-key-4a1f.pem");
    let e = connect(signed(&missing)).await.unwrap_err();
    let ClientError::Config { server, message } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(server, "signed");
    assert!(
        message.contains("clientKeyFile") && message.contains("cannot be read"),
        "{e}"
    );
    assert!(message.contains("tool-mcp-no-such-key-4a1f.pem"), "{e}");

    // not a key: a public key, and a text that is no PEM at all
    for text in [
        CLIENT_PUBLIC,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----",
    ] {
        let e = connect(OAuthConfig {
            client_key: Some(text.into()),
            client_key_file: None,
            ..signed(&missing)
        })
        .await
        .unwrap_err();
        let ClientError::Config { server, message } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(server, "signed");
        assert!(
            message.contains("clientKey") && message.contains("not a private key"),
            "{e}"
        );
        for line in key_lines(text) {
            assert!(!format!("{e:?}").contains(line), "{e:?}");
        }
    }

    // a key for another algorithm than the one named
    let key = file(CLIENT_KEY);
    let e = connect(OAuthConfig {
        client_key_algorithm: Some("RS256".into()),
        ..signed(key.path())
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&e, ClientError::Config { server, .. } if server == "signed"),
        "{e:?}"
    );
    assert!(e.to_string().contains("RS256"), "{e}");

    // a key and a secret, or a key without the client it belongs to
    let e = connect(OAuthConfig {
        client_secret: Some(AS_SECRET.into()),
        ..signed(key.path())
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&e, ClientError::Config { .. }) && e.to_string().contains("give one"),
        "{e}"
    );
    assert!(!e.to_string().contains(AS_SECRET), "{e}");
    let e = connect(OAuthConfig {
        client_id: None,
        ..signed(key.path())
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&e, ClientError::Config { .. }) && e.to_string().contains("clientId"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_authorization_server_does_not_know_is_refused_naming_the_server() {
    let servers = serve(Discovery::Resource).await;
    let other = file(OTHER_KEY);
    let e = greets(&servers, "signed", signed(other.path()))
        .await
        .unwrap_err();
    let ClientError::Unauthorized { server, message } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(server, "signed");
    assert!(message.contains("invalid_client"), "{e}");
    let said = format!("{e:?}");
    for line in key_lines(OTHER_KEY) {
        assert!(!said.contains(line), "{said}");
    }
    assert!(!said.contains("eyJ"), "no assertion in {said}");
    assert_eq!(servers.issued.load(Ordering::SeqCst), 0);
    assert_eq!(
        servers.refused.lock().unwrap().len(),
        1,
        "one flow, not one per retry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_03_26_server_has_its_authorization_server_on_its_own_origin() {
    let secret = || OAuthConfig {
        client_id: Some(CLIENT_ID.into()),
        client_secret: Some(AS_SECRET.into()),
        grant: Grant::ClientCredentials,
        ..OAuthConfig::default()
    };
    // no protected resource metadata, the metadata at the origin naming an issuer at `/oauth`
    let servers = serve(Discovery::Legacy).await;
    greets(&servers, "legacy", secret()).await.unwrap();
    assert_eq!(servers.issued.load(Ordering::SeqCst), 1);

    // the same metadata naming an issuer on another origin is not that server's
    let servers = serve(Discovery::LegacyElsewhere).await;
    let e = greets(&servers, "legacy", secret()).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Unauthorized { server, message }
            if server == "legacy" && message.contains("issuer mismatch")),
        "{e:?}"
    );
    assert_eq!(servers.issued.load(Ordering::SeqCst), 0);

    // and a server with protected resource metadata keeps RFC 8414's check whole
    let servers = serve(Discovery::ResourceWithOtherIssuer).await;
    let e = greets(&servers, "current", secret()).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Unauthorized { message, .. } if message.contains("issuer mismatch")),
        "{e:?}"
    );
    assert_eq!(servers.issued.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enterprise_managed_authorization_redeems_the_persons_identity_assertion() {
    let servers = serve(Discovery::Resource).await;
    let id_token = file(ID_TOKEN);
    let enterprise = |id_token_file: &std::path::Path| OAuthConfig {
        client_id: Some(CLIENT_ID.into()),
        client_secret: Some(AS_SECRET.into()),
        grant: Grant::EnterpriseManaged,
        identity_provider: Some(IdentityProvider {
            issuer: servers.idp.clone(),
            token_endpoint: format!("{}/token", servers.idp),
            client_id: IDP_CLIENT_ID.into(),
            id_token_file: Some(id_token_file.to_owned()),
            ..IdentityProvider::default()
        }),
        ..OAuthConfig::default()
    };
    greets(&servers, "enterprise", enterprise(id_token.path()))
        .await
        .unwrap();
    assert_eq!(servers.jags.load(Ordering::SeqCst), 1);
    assert_eq!(servers.issued.load(Ordering::SeqCst), 1);
    assert!(
        servers.refused.lock().unwrap().is_empty(),
        "{:?}",
        servers.refused
    );

    // an identity assertion that cannot be read, or that the identity provider refuses: an
    // authorization error naming the server, without the assertion
    let gone = std::env::temp_dir().join("tool-mcp-no-such-id-token-77c2");
    let e = greets(&servers, "enterprise", enterprise(&gone))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Unauthorized { server, message }
            if server == "enterprise" && message.contains("tool-mcp-no-such-id-token-77c2")),
        "{e:?}"
    );
    let stale = file("id-token-the-idp-does-not-know");
    let e = greets(&servers, "enterprise", enterprise(stale.path()))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Unauthorized { server, message }
            if server == "enterprise" && message.contains("invalid_grant")),
        "{e:?}"
    );
    assert!(!format!("{e:?}").contains("id-token-the-idp"), "{e:?}");
    assert_eq!(servers.jags.load(Ordering::SeqCst), 1);

    // the identity provider without the assertion is a configuration error
    let mut without = enterprise(id_token.path());
    if let Some(idp) = &mut without.identity_provider {
        idp.id_token_file = None;
    }
    let e = McpClient::connect("enterprise", config(&servers.url, without))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Config { server, message }
            if server == "enterprise" && message.contains("idTokenFile")),
        "{e:?}"
    );
}
