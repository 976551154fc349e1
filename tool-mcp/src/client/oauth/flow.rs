//! The authorization of one server: the token manager its requests read their token from, and
//! the flow that replaces it when the server asks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rmcp::transport::AuthorizationManager;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationRequest, ClientCredentialsConfig, OAuthState,
    WWWAuthenticateParams,
};

use super::{Grant, OAuthConfig, consent};
use crate::client::ClientError;
use crate::client::config::resolve;

/// The authorization of one server, kept for the life of the client: the token manager the
/// requests read their token from, and the flow that replaces it when the server asks.
pub(crate) struct Authorization {
    server: String,
    url: String,
    config: OAuthConfig,
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
        if config.client_secret.is_some() && config.client_id.is_none() {
            return Err(wrong(
                "`oauth.clientSecret` needs the `clientId` it belongs to",
            ));
        }
        if config.grant == Grant::ClientCredentials
            && (config.client_id.is_none() || config.client_secret.is_none())
        {
            return Err(wrong(
                "`oauth.grant = \"client_credentials\"` needs `clientId` and `clientSecret`",
            ));
        }
        let manager = manager(server, url).await?;
        Ok(Arc::new(Authorization {
            server: server.to_owned(),
            url: url.to_owned(),
            scopes: std::sync::Mutex::new(config.scopes.clone()),
            config,
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
        let manager = AuthorizationManager::new(self.url.as_str()).await?;
        let mut state = OAuthState::Unauthorized(manager);
        let config = &self.config;
        if config.grant == Grant::ClientCredentials {
            let (Some(client_id), Some(client_secret)) = (&config.client_id, &config.client_secret)
            else {
                return Err(AuthError::InternalError("no client credentials".into()));
            };
            state
                .authenticate_client_credentials(ClientCredentialsConfig::ClientSecret {
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                    scopes: self.scopes_for(www_authenticate),
                    // the token is for this server alone (RFC 8707)
                    resource: Some(self.url.clone()),
                })
                .await?;
        } else {
            let redirect = consent::Redirect::bind(config.redirect_port).await?;
            let mut request = AuthorizationRequest::new(redirect.uri())
                .with_client_name(config.client_name.as_deref().unwrap_or("tool-mcp"))
                .with_challenge(www_authenticate)
                .with_scopes(self.scopes_for(www_authenticate));
            if let Some(id) = &config.client_id {
                request = request.with_preregistered_client(id.clone());
            }
            if let Some(secret) = &config.client_secret {
                request = request.with_client_secret(secret.clone());
            }
            if let Some(url) = &config.client_metadata_url {
                request = request.with_client_metadata_url(url.clone());
            }
            state.start_authorization(request).await?;
            let url = state.get_authorization_url().await?;
            let callback = redirect.wait(&self.server, &url, config.consent).await?;
            state.handle_callback_url(&callback).await?;
        }
        state
            .into_authorization_manager()
            .ok_or_else(|| AuthError::InternalError("the flow left no token".into()))
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

/// A token manager for `url` with no token.
async fn manager(server: &str, url: &str) -> Result<AuthorizationManager, ClientError> {
    AuthorizationManager::new(url)
        .await
        .map_err(|e| ClientError::Config {
            server: server.to_owned(),
            message: format!("OAuth cannot be set up for {url}: {e}"),
        })
}
