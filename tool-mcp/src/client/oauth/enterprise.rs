//! Enterprise-managed authorization (the MCP extension of that name, SEP-990, "cross-app
//! access"): the person's identity assertion from the enterprise identity provider is exchanged
//! there for an identity assertion authorization grant (ID-JAG; RFC 8693 token exchange,
//! `requested_token_type` `urn:ietf:params:oauth:token-type:id-jag`, the audience the MCP
//! server's authorization server and the resource the MCP server), and the ID-JAG is exchanged at
//! that authorization server for the access token (RFC 7523 JWT bearer grant). The two
//! exchanges and the checks of the ID-JAG's bindings (its issuer, audience, client, resource,
//! lifetime) are rmcp's; what is here is where the servers, the clients and the assertion come
//! from.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use oauth2::ClientSecret;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAssertion, EmaClientAssertionProvider,
    EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, OAuthTokenResponse, default_oauth_http_client,
};
use serde_json::json;

use super::AssertionAudience;
use super::assertion::ClientKey;
use crate::client::config::resolve;

/// How a client authenticates at one of the two token endpoints.
#[derive(Clone)]
pub(super) enum ClientAuth {
    /// A public client.
    None,
    /// A secret, sent with HTTP Basic authentication.
    Secret(String),
    /// Assertions signed with its private key (`private_key_jwt`), for the audience given.
    Key(Arc<ClientKey>, AssertionAudience),
}

impl ClientAuth {
    fn ema(&self) -> EmaClientAuthentication {
        match self {
            ClientAuth::None => EmaClientAuthentication::None,
            ClientAuth::Secret(secret) => {
                EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.clone()))
            }
            ClientAuth::Key(key, audience) => EmaClientAuthentication::JwtAssertion(Arc::new(
                KeyAssertions(key.clone(), *audience),
            )),
        }
    }
}

/// Where the person's identity assertion is read, at every authorization.
#[derive(Clone)]
pub(super) enum IdToken {
    /// Written in the configuration, or `${NAME}` of the environment.
    Value(String),
    /// In a file, which the single sign-on agent may renew.
    File(PathBuf),
}

/// The identity provider, its client and the identity assertion, as the configuration gives
/// them once read and checked.
#[derive(Clone)]
pub(super) struct IdentityProvider {
    pub(super) issuer: String,
    pub(super) token_endpoint: String,
    pub(super) client_id: String,
    pub(super) auth: ClientAuth,
    pub(super) id_token: IdToken,
}

impl IdentityProvider {
    /// The person's identity assertion, read at each authorization.
    fn id_token(&self, server: &str) -> Result<String, AuthError> {
        let token = match &self.id_token {
            IdToken::Value(value) => resolve(server, value).map_err(|e| {
                AuthError::AuthorizationFailed(format!("the identity assertion: {e}"))
            })?,
            IdToken::File(path) => std::fs::read_to_string(path).map_err(|e| {
                AuthError::AuthorizationFailed(format!(
                    "the identity assertion cannot be read from {}: {e}",
                    path.display()
                ))
            })?,
        };
        let token = token.trim().to_owned();
        if token.is_empty() {
            return Err(AuthError::AuthorizationFailed(
                "the identity assertion is empty".into(),
            ));
        }
        Ok(token)
    }
}

/// The access token for `resource` from the authorization server `metadata` describes, where
/// `client_id` is registered and authenticates as `auth`: the identity assertion exchanged at
/// `idp` for an ID-JAG, and that for the token.
pub(super) async fn token(
    server: &str,
    idp: &IdentityProvider,
    metadata: &AuthorizationMetadata,
    client_id: &str,
    auth: &ClientAuth,
    resource: &str,
    scopes: &[String],
) -> Result<OAuthTokenResponse, AuthError> {
    let issuer = metadata.issuer.as_deref().ok_or_else(|| {
        AuthError::AuthorizationFailed(
            "the authorization server's metadata names no issuer, which the ID-JAG's audience \
             must be"
                .into(),
        )
    })?;
    let id_token = idp.id_token(server)?;
    let identity_provider =
        EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id)
            .with_client_authentication(idp.auth.ema());
    let authorization_server =
        EmaAuthorizationServer::new(issuer, &metadata.token_endpoint, client_id)
            .with_client_authentication(auth.ema());
    let http = default_oauth_http_client()?;
    let granted = EmaExchangeRequest::new_with_id_token(
        identity_provider,
        authorization_server,
        resource,
        &id_token,
    )
    .with_scopes(scopes.iter().cloned())
    .exchange(&http, &http)
    .await
    .map_err(|e| {
        AuthError::AuthorizationFailed(format!("enterprise-managed authorization: {e}"))
    })?;
    let mut scopes: Vec<&str> = granted.scopes.iter().map(String::as_str).collect();
    scopes.sort_unstable();
    let mut response = json!({
        "access_token": granted.access_token.secret(),
        "token_type": "Bearer",
    });
    if let Some(lifetime) = granted.expires_in {
        response["expires_in"] = json!(lifetime.as_secs());
    }
    if !scopes.is_empty() {
        response["scope"] = json!(scopes.join(" "));
    }
    serde_json::from_value(response)
        .map_err(|e| AuthError::InternalError(format!("the token obtained: {e}")))
}

/// The client assertions of a client with a private key, signed as each token request is made,
/// for the server it is sent to (its issuer or its token endpoint, as the audience says).
struct KeyAssertions(Arc<ClientKey>, AssertionAudience);

type Assertion = Result<EmaClientAssertion, Box<dyn std::error::Error + Send + Sync>>;

// rmcp declares the trait with `async_trait`: this is the signature that macro gives it.
impl EmaClientAssertionProvider for KeyAssertions {
    fn create_assertion<'life0, 'life1, 'async_trait>(
        &'life0 self,
        server: &'life1 EmaAuthorizationServer,
    ) -> Pin<Box<dyn Future<Output = Assertion> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let audience = self.1.of(&server.issuer, &server.token_endpoint);
            let assertion = self.0.assertion(&server.client_id, audience)?;
            Ok(EmaClientAssertion::new(assertion))
        })
    }
}
