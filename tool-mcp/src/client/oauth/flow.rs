//! The authorization of one server: the token manager its requests read their token from, and
//! the flow that replaces it when the server asks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use oauth2::TokenResponse;
use rmcp::transport::AuthorizationManager;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, CredentialStore, InMemoryCredentialStore, OAuthClientConfig,
    OAuthTokenResponse, StoredCredentials, WWWAuthenticateParams,
};

use super::assertion::{self, ClientKey};
use super::enterprise::{self, ClientAuth, IdToken};
use super::registration::Registration;
use super::store::{self, FileStore};
use super::{AssertionAudience, Grant, OAuthConfig, consent, discovery, registration};
use crate::client::ClientError;
use crate::client::config::resolve;

/// The authorization of one server, kept for the life of the client: the token manager the
/// requests read their token from, and the flow that replaces it when the server asks.
pub(crate) struct Authorization {
    server: String,
    url: String,
    config: OAuthConfig,
    /// The client's private key, when it authenticates with one.
    key: Option<Arc<ClientKey>>,
    /// The identity provider of enterprise-managed authorization.
    idp: Option<enterprise::IdentityProvider>,
    /// The file the tokens are kept in, when the configuration asks.
    store: Option<FileStore>,
    pub(super) client: AuthClient<reqwest::Client>,
    /// Serialises flows; counts those completed, so a request refused before another request's
    /// flow ended sends again with the new token instead of starting one more.
    flows: tokio::sync::Mutex<()>,
    pub(super) generation: AtomicU64,
    /// Flows in a row that were not followed by a request the server accepted: past a few, the
    /// server is refusing whatever is granted and no more flows are started.
    fruitless: AtomicU32,
    /// Scopes asked for so far: a step-up asks for them with the new ones.
    scopes: std::sync::Mutex<Vec<String>>,
    /// Why the server's last refusal could not be answered, for the calls that fail on it.
    refused: std::sync::Mutex<Option<String>>,
    /// The client that registered itself dynamically, the current tokens' (read from the file
    /// or registered by a flow): a new authorization is asked for by it while its secret lasts.
    registration: std::sync::Mutex<Option<Registration>>,
    /// From when that client's secret is no longer used (seconds since the Unix epoch; `0`:
    /// never), read by every request without taking the lock.
    secret_deadline: AtomicU64,
}

/// Flows in a row without an accepted request after which no more are started.
const MAX_FRUITLESS: u32 = 3;

impl Authorization {
    /// The authorization of `server` at `url`, with no token yet. The secrets of `config` are
    /// read from the environment here.
    pub(crate) async fn new(
        server: &str,
        url: &str,
        config: &OAuthConfig,
    ) -> Result<Arc<Self>, ClientError> {
        let mut config = config.clone();
        let read = |value: &mut Option<String>| -> Result<(), ClientError> {
            if let Some(v) = value {
                *v = resolve(server, v)?;
            }
            Ok(())
        };
        read(&mut config.client_id)?;
        read(&mut config.client_secret)?;
        let wrong = |message: &str| ClientError::Config {
            server: server.to_owned(),
            message: message.to_owned(),
        };
        let key = client_key(
            server,
            "oauth",
            config.client_key.as_deref(),
            config.client_key_file.as_deref(),
            config.client_key_algorithm.as_deref(),
        )?
        .map(Arc::new);
        // the key is kept parsed in `key`, and the configuration kept beside it holds no copy
        config.client_key = None;
        if config.client_secret.is_some() && key.is_some() {
            return Err(wrong(
                "`oauth.clientSecret` and a private key (`clientKey`, `clientKeyFile`): give one",
            ));
        }
        if config.client_assertion_audience != AssertionAudience::default() && key.is_none() {
            return Err(wrong(
                "`oauth.clientAssertionAudience` is for a private key (`clientKey`, \
                 `clientKeyFile`)",
            ));
        }
        if (config.client_secret.is_some() || key.is_some()) && config.client_id.is_none() {
            return Err(wrong(
                "`oauth.clientSecret` or a private key needs the `clientId` it belongs to",
            ));
        }
        match config.grant {
            Grant::AuthorizationCode if key.is_some() => {
                return Err(wrong(
                    "a private key (`clientKey`, `clientKeyFile`) authenticates a client of \
                     `grant = \"client_credentials\"` or `\"enterprise_managed\"`",
                ));
            }
            Grant::ClientCredentials
                if config.client_id.is_none()
                    || (config.client_secret.is_none() && key.is_none()) =>
            {
                return Err(wrong(
                    "`oauth.grant = \"client_credentials\"` needs `clientId` and `clientSecret` \
                     or a private key (`clientKey`, `clientKeyFile`)",
                ));
            }
            Grant::EnterpriseManaged
                if config.client_id.is_none() || config.identity_provider.is_none() =>
            {
                return Err(wrong(
                    "`oauth.grant = \"enterprise_managed\"` needs `clientId` and \
                     `identityProvider`",
                ));
            }
            _ => {}
        }
        let idp = match (&config.identity_provider, config.grant) {
            (Some(idp), Grant::EnterpriseManaged) => Some(identity_provider(server, idp)?),
            (Some(_), _) => {
                return Err(wrong(
                    "`oauth.identityProvider` is for `grant = \"enterprise_managed\"`",
                ));
            }
            (None, _) => None,
        };
        if let Some(idp) = &mut config.identity_provider {
            idp.client_secret = None;
            idp.client_key = None;
            idp.id_token = None;
        }
        let store = match (&config.token_file, config.keep_tokens) {
            (Some(file), _) => Some(FileStore::new(file.clone())),
            (None, true) => {
                let var = |name| std::env::var_os(name).map(std::path::PathBuf::from);
                let path = store::default_path(
                    var("XDG_DATA_HOME").as_deref(),
                    var("HOME").as_deref(),
                    server,
                    url,
                )
                .ok_or_else(|| {
                    wrong(
                        "`oauth.keepTokens` needs a data directory: neither XDG_DATA_HOME nor \
                         HOME is set; give `tokenFile`",
                    )
                })?;
                Some(FileStore::new(path))
            }
            (None, false) => None,
        };
        let mut manager = manager(server, url).await?;
        let mut registration = None;
        if let Some(store) = &store {
            manager.set_credential_store(store.clone());
            if store.exists() {
                registration = kept(server, url, &config, store, &mut manager).await;
            }
        }
        Ok(Arc::new(Authorization {
            secret_deadline: AtomicU64::new(deadline(registration.as_ref())),
            registration: std::sync::Mutex::new(registration),
            server: server.to_owned(),
            url: url.to_owned(),
            scopes: std::sync::Mutex::new(config.scopes.clone()),
            config,
            key,
            idp,
            store,
            client: AuthClient::new(reqwest::Client::default(), manager),
            flows: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            fruitless: AtomicU32::new(0),
            refused: std::sync::Mutex::new(None),
        }))
    }

    /// Why the server refuses this client, when a flow could not win its acceptance (until a
    /// request is accepted again).
    pub(crate) fn refused(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(super) fn accepted(&self) {
        if self.fruitless.load(Ordering::Relaxed) != 0 {
            self.fruitless.store(0, Ordering::Relaxed);
        }
        if self
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// The client that registered itself, the current tokens'.
    fn registration(&self) -> Option<Registration> {
        self.registration
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes `registration` the client a new authorization is asked for by.
    fn hold_registration(&self, registration: Option<Registration>) {
        self.secret_deadline
            .store(deadline(registration.as_ref()), Ordering::Relaxed);
        *self.registration.lock().unwrap_or_else(|p| p.into_inner()) = registration;
    }

    /// Whether the secret of the client that registered itself expired or is about to: it is
    /// not to be sent.
    pub(super) fn secret_expired(&self) -> bool {
        let deadline = self.secret_deadline.load(Ordering::Relaxed);
        deadline != 0 && registration::now() >= deadline
    }

    /// Discards the client and the tokens issued to it, `why` (which names no secret) being
    /// that they can no longer be used: the authorization server no longer knows the client, or
    /// its secret expired. The token manager is replaced by one holding nothing and the kept
    /// file removed, so that the next request goes without a token and the server's challenge
    /// starts again as on first use (a new registration where the server offers it). Nothing
    /// is discarded when a flow completed since `seen`: its tokens are of another client.
    pub(super) async fn forget_client(&self, seen: u64, why: &str) {
        let _one = self.flows.lock().await;
        if self.generation.load(Ordering::SeqCst) != seen {
            return;
        }
        tracing::warn!(
            server = %self.server,
            "{why}: the client and its tokens are discarded, and the client authorizes again"
        );
        match manager(&self.server, &self.url).await {
            Ok(mut manager) => {
                if let Some(store) = &self.store {
                    manager.set_credential_store(store.clone());
                }
                *self.client.auth_manager.lock().await = manager;
            }
            Err(e) => tracing::warn!(server = %self.server, "{e}"),
        }
        if let Some(store) = &self.store
            && let Err(e) = store.forget()
        {
            tracing::warn!(server = %self.server, "{e}");
        }
        self.hold_registration(None);
    }

    pub(super) fn refuse(&self, why: String) -> String {
        tracing::warn!(server = %self.server, "authorization refused: {why}");
        *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
        why
    }

    /// Answers the server's challenge (`www_authenticate`, from a `401` or a `403`) unless a
    /// flow completed since `seen` (the generation the refused request was sent under), in
    /// which case the request is only sent again.
    pub(super) async fn answer(&self, seen: u64, www_authenticate: &str) -> Result<(), AuthError> {
        let _one = self.flows.lock().await;
        if self.generation.load(Ordering::SeqCst) != seen {
            return Ok(());
        }
        if self.fruitless.fetch_add(1, Ordering::SeqCst) >= MAX_FRUITLESS {
            return Err(AuthError::AuthorizationFailed(self.refuse(format!(
                "the server kept refusing after {MAX_FRUITLESS} authorizations in a row; \
                 no more are started"
            ))));
        }
        let manager = match self.flow(www_authenticate).await {
            Ok(manager) => manager,
            Err(e) => {
                return Err(AuthError::AuthorizationFailed(
                    self.refuse(format!("authorization failed: {e}")),
                ));
            }
        };
        *self.client.auth_manager.lock().await = manager;
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// One authorization: discovery from the challenge, the client, the grant; the manager
    /// holding the token.
    async fn flow(&self, www_authenticate: &str) -> Result<AuthorizationManager, AuthError> {
        let mut manager = AuthorizationManager::new(self.url.as_str()).await?;
        if let Some(store) = &self.store {
            manager.set_credential_store(store.clone());
        }
        let metadata = discovery::metadata(&manager, &self.url, Some(www_authenticate)).await?;
        manager.set_metadata(metadata.clone());
        let config = &self.config;
        let scopes = self.scopes_for(www_authenticate);
        let client_id = config.client_id.as_deref();
        let token = match (config.grant, client_id, &self.key, &self.idp) {
            (Grant::ClientCredentials, Some(client_id), Some(key), _) => {
                // the token is for this server alone (RFC 8707)
                assertion::client_credentials(
                    &metadata,
                    client_id,
                    key,
                    config.client_assertion_audience,
                    &scopes,
                    &self.url,
                )
                .await?
            }
            (Grant::ClientCredentials, Some(client_id), None, _) => {
                let Some(client_secret) = &config.client_secret else {
                    return Err(AuthError::InternalError("no client credentials".into()));
                };
                let credentials = ClientCredentialsConfig::ClientSecret {
                    client_id: client_id.to_owned(),
                    client_secret: client_secret.clone(),
                    scopes,
                    resource: Some(self.url.clone()),
                };
                manager.validate_client_credentials_metadata(&credentials)?;
                manager.configure_client_credentials(&credentials)?;
                manager.exchange_client_credentials(&credentials).await?;
                return Ok(manager);
            }
            (Grant::EnterpriseManaged, Some(client_id), key, Some(idp)) => {
                let auth = match (key, &config.client_secret) {
                    (Some(key), _) => {
                        ClientAuth::Key(key.clone(), config.client_assertion_audience)
                    }
                    (None, Some(secret)) => ClientAuth::Secret(secret.clone()),
                    (None, None) => ClientAuth::None,
                };
                enterprise::token(
                    &self.server,
                    idp,
                    &metadata,
                    client_id,
                    &auth,
                    &self.url,
                    &scopes,
                )
                .await?
            }
            (Grant::AuthorizationCode, ..) => {
                let registers = client_id.is_none() && self.registers(&metadata);
                // the client that registered itself asks again while its secret lasts,
                // redirected where it was registered to be
                let now = registration::now();
                let again = self
                    .registration()
                    .filter(|r| registers && r.serves(metadata.issuer.as_deref(), &scopes, now));
                let again = match again {
                    Some(again) => {
                        let port = config.redirect_port.or(again.redirect_port());
                        match consent::Redirect::bind(port).await {
                            Ok(redirect) if again.redirect_uris.contains(&redirect.uri()) => {
                                Some((redirect, again))
                            }
                            // another port than the registration's is configured: its listener
                            // is closed before it is listened on again, and the client registers
                            Ok(other) => {
                                drop(other);
                                None
                            }
                            // the registration's port is taken: a free one, and a registration
                            Err(_) => None,
                        }
                    }
                    None => None,
                };
                let (redirect, again) = match again {
                    Some((redirect, again)) => (redirect, Some(again)),
                    None => (consent::Redirect::bind(config.redirect_port).await?, None),
                };
                let name = config.client_name.as_deref().unwrap_or("tool-mcp");
                // the client registers itself here rather than in rmcp's session, which keeps
                // nothing of the registration but the client ID and secret it configures
                let registered = if registers {
                    let registration = match again {
                        Some(again) => again,
                        None => {
                            let registration =
                                registration::register(&metadata, name, &redirect.uri(), &scopes)
                                    .await?;
                            self.hold_registration(Some(registration.clone()));
                            registration
                        }
                    };
                    let mut metadata = metadata.clone();
                    registration.authenticate_as_registered(&mut metadata);
                    manager.set_metadata(metadata);
                    if let Some(store) = &self.store {
                        store.registered(registration.clone());
                    }
                    Some(registration)
                } else {
                    None
                };
                let mut request = AuthorizationRequest::new(redirect.uri())
                    .with_client_name(name)
                    .with_scopes(scopes);
                let (id, secret) = match &registered {
                    Some(r) => (Some(r.client_id.as_str()), r.client_secret.as_ref()),
                    None => (client_id, config.client_secret.as_ref()),
                };
                if let Some(id) = id {
                    request = request.with_preregistered_client(id);
                }
                if let Some(secret) = secret {
                    request = request.with_client_secret(secret.clone());
                }
                if let Some(url) = &config.client_metadata_url {
                    request = request.with_client_metadata_url(url.clone());
                }
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, e)| e)?;
                let callback = redirect
                    .wait(&self.server, &session.auth_url, config.consent)
                    .await?;
                session.handle_callback_url(&callback).await?;
                return Ok(session.auth_manager);
            }
            _ => {
                return Err(AuthError::InternalError(
                    "the grant lacks its client".into(),
                ));
            }
        };
        let client_id = client_id.unwrap_or_default();
        hold(
            &mut manager,
            self.store.clone(),
            client_id,
            token,
            metadata.issuer,
        )
        .await?;
        Ok(manager)
    }

    /// Whether a client without a client ID registers itself dynamically at the authorization
    /// server `metadata` describes: when the server has a registration endpoint and the client
    /// ID metadata document, which rmcp's session prefers, is not given or not supported there.
    fn registers(&self, metadata: &AuthorizationMetadata) -> bool {
        let documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        metadata.registration_endpoint.is_some()
            && !(documents && self.config.client_metadata_url.is_some())
    }

    /// The scopes to ask for: those asked for so far with the challenge's; none when neither
    /// names any (the authorization manager then picks the resource's).
    fn scopes_for(&self, www_authenticate: &str) -> Vec<String> {
        let base = reqwest::Url::parse(&self.url).ok();
        let challenged = base
            .map(|base| WWWAuthenticateParams::parse(www_authenticate, &base))
            .and_then(|p| p.scope)
            .unwrap_or_default();
        let mut scopes = self.scopes.lock().unwrap_or_else(|p| p.into_inner());
        for scope in challenged.split_whitespace() {
            if !scopes.iter().any(|s| s == scope) {
                scopes.push(scope.to_owned());
            }
        }
        scopes.clone()
    }
}

/// Makes `manager` hold `token`, obtained by `client_id` from the authorization server
/// `issuer`: its requests carry it, and when it expires (it has no refresh token) they go
/// without, so that the server's challenge starts a new authorization.
async fn hold(
    manager: &mut AuthorizationManager,
    kept: Option<FileStore>,
    client_id: &str,
    token: OAuthTokenResponse,
    issuer: Option<String>,
) -> Result<(), AuthError> {
    let store: Box<dyn CredentialStore> = match kept {
        Some(file) => {
            manager.set_credential_store(file.clone());
            Box::new(file)
        }
        None => {
            let memory = InMemoryCredentialStore::new();
            manager.set_credential_store(memory.clone());
            Box::new(memory)
        }
    };
    let scopes = token
        .scopes()
        .map(|s| s.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .ok();
    store
        .save(
            StoredCredentials::new(client_id.to_owned(), Some(token), scopes, now)
                .with_issuer(issuer),
        )
        .await?;
    // a client the manager knows, so that an expired token asks for authorization
    manager.configure_client_id(client_id)
}

/// Makes `manager` go on with the tokens kept in `store` by an earlier process: the
/// authorization server is discovered again, as a flow discovers it (the 2025-03-26 revision's
/// rule included, which the discovery of rmcp's `initialize_from_store` lacks), and the tokens
/// are dropped when it is another one than the one that issued them (`initialize_from_store`).
/// The client that refreshes them is the one they were issued to: the configured one with its
/// secret, or the one that registered itself, with the secret and the token endpoint
/// authentication kept with its registration. A store that cannot be used is as good as none:
/// the server's challenge starts a new authorization, which replaces it. A registration whose
/// secret expired (or is about to) is discarded with the tokens issued to it, which only that
/// secret could refresh, so that the client registers again instead of sending it. The
/// registration the tokens go on with, when they are of a client that registered itself.
async fn kept(
    server: &str,
    url: &str,
    config: &OAuthConfig,
    store: &FileStore,
    manager: &mut AuthorizationManager,
) -> Option<Registration> {
    let mut metadata = match discovery::metadata(manager, url, None).await {
        Ok(metadata) => metadata,
        Err(e) => {
            tracing::warn!(server, "the kept tokens are not used: {e}");
            return None;
        }
    };
    let registration = match (&config.client_id, store.load().await) {
        (None, Ok(Some(kept))) => store.registration(&kept.client_id),
        _ => None,
    };
    if let Some(registration) = &registration
        && registration.secret_expired(registration::now())
    {
        tracing::warn!(
            server,
            client_id = %registration.client_id,
            "the secret of the client kept with the tokens expired: the client and its tokens \
             are discarded, and the client registers and authorizes again"
        );
        if let Err(e) = store.forget() {
            tracing::warn!(server, "{e}");
        }
        return None;
    }
    if let Some(registration) = &registration {
        registration.authenticate_as_registered(&mut metadata);
    }
    manager.set_metadata(metadata);
    match manager.initialize_from_store().await {
        Ok(true) => {
            let client = match (&registration, &config.client_id, &config.client_secret) {
                (Some(registration), ..) => Some(registration.client_config(url)),
                // a confidential client refreshes with its secret
                (None, Some(id), Some(secret)) => {
                    Some(OAuthClientConfig::new(id, url).with_client_secret(secret))
                }
                _ => None,
            };
            if let Some(client) = client
                && let Err(e) = manager.configure_client(client)
            {
                tracing::warn!(server, "the kept tokens cannot be refreshed: {e}");
            }
            tracing::debug!(server, "going on with the tokens kept");
            registration
        }
        Ok(false) => None,
        Err(e) => {
            tracing::warn!(server, "the kept tokens are not used: {e}");
            None
        }
    }
}

/// From when the secret of `registration` is no longer used, `0` for never.
fn deadline(registration: Option<&Registration>) -> u64 {
    registration
        .and_then(Registration::secret_deadline)
        .unwrap_or(0)
}

/// The private key `pem` (or `${NAME}`) or the file `file` gives, for the configuration's
/// `entry`; none when neither is given. The errors name the server and the entry, never the key.
fn client_key(
    server: &str,
    entry: &str,
    pem: Option<&str>,
    file: Option<&std::path::Path>,
    algorithm: Option<&str>,
) -> Result<Option<ClientKey>, ClientError> {
    let wrong = |message: String| ClientError::Config {
        server: server.to_owned(),
        message,
    };
    let (pem, from) = match (pem, file) {
        (None, None) => {
            if algorithm.is_some() {
                return Err(wrong(format!(
                    "`{entry}.clientKeyAlgorithm` without `clientKey` or `clientKeyFile`"
                )));
            }
            return Ok(None);
        }
        (Some(_), Some(_)) => {
            return Err(wrong(format!(
                "`{entry}.clientKey` and `{entry}.clientKeyFile`: give one"
            )));
        }
        (Some(pem), None) => (resolve(server, pem)?, format!("`{entry}.clientKey`")),
        (None, Some(path)) => {
            let from = format!("`{entry}.clientKeyFile` {}", path.display());
            let pem = std::fs::read_to_string(path)
                .map_err(|e| wrong(format!("{from} cannot be read: {e}")))?;
            (pem, from)
        }
    };
    ClientKey::read(&pem, algorithm)
        .map(Some)
        .map_err(|why| wrong(format!("{from}: {why}")))
}

/// The identity provider `config` names, its secrets read and its key checked.
fn identity_provider(
    server: &str,
    config: &super::IdentityProvider,
) -> Result<enterprise::IdentityProvider, ClientError> {
    let wrong = |message: &str| ClientError::Config {
        server: server.to_owned(),
        message: message.to_owned(),
    };
    let client_id = resolve(server, &config.client_id)?;
    if config.issuer.is_empty() || config.token_endpoint.is_empty() || client_id.is_empty() {
        return Err(wrong(
            "`oauth.identityProvider` needs `issuer`, `tokenEndpoint` and `clientId`",
        ));
    }
    let key = client_key(
        server,
        "oauth.identityProvider",
        config.client_key.as_deref(),
        config.client_key_file.as_deref(),
        config.client_key_algorithm.as_deref(),
    )?;
    let auth = match (key, &config.client_secret) {
        (Some(_), Some(_)) => {
            return Err(wrong(
                "`oauth.identityProvider.clientSecret` and a private key: give one",
            ));
        }
        // the identity provider's assertions are for its issuer
        (Some(key), None) => ClientAuth::Key(Arc::new(key), AssertionAudience::Issuer),
        (None, Some(secret)) => ClientAuth::Secret(resolve(server, secret)?),
        (None, None) => ClientAuth::None,
    };
    let id_token = match (&config.id_token, &config.id_token_file) {
        (Some(token), None) => IdToken::Value(token.clone()),
        (None, Some(file)) => IdToken::File(file.clone()),
        _ => {
            return Err(wrong(
                "`oauth.identityProvider` needs the person's identity assertion: `idToken` \
                 (`${NAME}`) or `idTokenFile`, one of them",
            ));
        }
    };
    Ok(enterprise::IdentityProvider {
        issuer: config.issuer.clone(),
        token_endpoint: config.token_endpoint.clone(),
        client_id,
        auth,
        id_token,
    })
}

/// A token manager for `url` with no token.
async fn manager(server: &str, url: &str) -> Result<AuthorizationManager, ClientError> {
    AuthorizationManager::new(url)
        .await
        .map_err(|e| ClientError::Config {
            server: server.to_owned(),
            message: format!("OAuth cannot be set up for {url}: {e}"),
        })
}
