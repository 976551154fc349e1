//! OAuth 2.1 authorization of a server reached over streamable HTTP, as the MCP authorization
//! specification has it, on rmcp's authorization manager.
//!
//! Nothing is asked up front: requests go out without a token until the server answers `401`
//! with a `WWW-Authenticate` challenge. Then the flow runs once: the protected resource metadata
//! (RFC 9728, from the challenge's `resource_metadata` or the well-known paths) names the
//! authorization server, whose metadata is discovered (RFC 8414, then OpenID Connect discovery);
//! the client is the pre-registered one the configuration gives, or a client ID metadata
//! document, or is registered dynamically (RFC 7591); the scopes are the challenge's, else the
//! resource's; the code is obtained with PKCE from the person (or, for a machine client, the
//! client credentials grant is used) and exchanged for a token, and the request is sent again
//! with it. An expired token is refreshed without asking anyone; a `403 insufficient_scope`
//! asks for the scopes the server names, added to those already granted (step-up), once per
//! request. Tokens are kept for the life of the process, for every reconnection.

#[cfg(feature = "client-http")]
mod consent;
#[cfg(feature = "client-http")]
mod flow;
#[cfg(feature = "client-http")]
mod transport;

use serde::Deserialize;

#[cfg(feature = "client-http")]
pub(crate) use flow::Authorization;
#[cfg(feature = "client-http")]
pub(crate) use transport::OAuthHttp;

/// OAuth 2.1 authorization for a server reached over HTTP (the `oauth` entry of a server).
///
/// With no key at all (`oauth = {}`), the client registers itself dynamically and asks the
/// person for the scopes the server's challenge names. `clientId` and `clientSecret` (either
/// written `${NAME}` to read them from the environment) name a client registered with the
/// authorization server beforehand.
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthConfig {
    /// A client registered with the authorization server beforehand; dynamic registration (or a
    /// client ID metadata document) is used when absent.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (`${NAME}` to read it from the environment). Never
    /// logged, audited or shown.
    pub client_secret: Option<String>,
    /// The HTTPS URL of this client's ID metadata document, used as its client ID where the
    /// authorization server supports such documents.
    pub client_metadata_url: Option<String>,
    /// The name a dynamically registered client is given (the person sees it on the consent
    /// page); `tool-mcp` when absent.
    pub client_name: Option<String>,
    /// The scopes to ask for; when empty, those the server's challenge or its protected
    /// resource metadata names.
    pub scopes: Vec<String>,
    /// How the token is obtained.
    pub grant: Grant,
    /// The port of the loopback address (`http://127.0.0.1:PORT/callback`) the authorization
    /// server redirects the person's browser to; a free one when absent. Some authorization
    /// servers accept only the redirect URI a client was registered with: give its port then.
    pub redirect_port: Option<u16>,
    /// How the person's consent is obtained; set in code only.
    #[serde(skip)]
    pub consent: Consent,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("redirect_port", &self.redirect_port)
            .field("consent", &self.consent)
            .finish()
    }
}

/// The OAuth grant a token is obtained with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person signs in and consents in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// No person: the client authenticates as itself with `clientId` and `clientSecret`.
    ClientCredentials,
}

/// How the person's consent to an authorization code flow is obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Consent {
    /// The authorization URL is printed on standard error for the person to open, and the code
    /// comes back on a loopback redirect (RFC 8252), waited for up to five minutes.
    #[default]
    Person,
    /// The authorization URL is requested without a browser and its redirect read as the
    /// answer: only for an authorization server that grants at once without asking anyone (a
    /// test server, or one where consent was given before).
    FollowRedirect,
}

/// A server's authorization, when it has one: kept by the client for the life of its
/// connection and every reconnection.
#[cfg(feature = "client-http")]
pub(crate) type Auth = Option<std::sync::Arc<flow::Authorization>>;
/// A server's authorization: never one in a build without the HTTP client.
#[cfg(not(feature = "client-http"))]
pub(crate) type Auth = Option<NoAuth>;

/// No authorization: a build without the HTTP client has none to hold.
#[cfg(not(feature = "client-http"))]
#[derive(Clone)]
pub(crate) enum NoAuth {}

/// The authorization `config` asks for, with no token yet.
pub(crate) async fn authorization(
    name: &str,
    config: &super::ServerConfig,
) -> Result<Auth, super::ClientError> {
    #[cfg(feature = "client-http")]
    if let (Some(oauth), super::config::Transport::Http(url)) =
        (&config.oauth, config.transport(name)?)
    {
        return Ok(Some(Authorization::new(name, url, oauth).await?));
    }
    let _ = (name, config);
    Ok(None)
}

/// Why the server refuses this client, when its authorization could not win its acceptance.
pub(crate) fn refused(auth: &Auth) -> Option<String> {
    #[cfg(feature = "client-http")]
    return auth.as_ref().and_then(|a| a.refused());
    #[cfg(not(feature = "client-http"))]
    match auth {
        Some(never) => match *never {},
        None => None,
    }
}
