//! OAuth 2.1 authorization of a server reached over streamable HTTP, as the MCP authorization
//! specification has it, on rmcp's authorization manager.
//!
//! Nothing is asked up front: requests go out without a token until the server answers `401`
//! with a `WWW-Authenticate` challenge. Then the flow runs once: the protected resource metadata
//! (RFC 9728, from the challenge's `resource_metadata` or the well-known paths) names the
//! authorization server, whose metadata is discovered (RFC 8414, then OpenID Connect discovery);
//! a server of the 2025-03-26 revision, which publishes no protected resource metadata, has its
//! authorization server's metadata at its own origin, as that revision says (`discovery`). The
//! client is the pre-registered one the configuration gives, or a client ID metadata document,
//! or is registered dynamically (RFC 7591); the scopes are the challenge's, else the resource's.
//! The token is obtained by one of three grants:
//! - the authorization code with PKCE, from the person (`consent`);
//! - the client credentials grant, for a machine client authenticated by its secret or by an
//!   assertion signed with its private key (`private_key_jwt`, RFC 7523; `assertion`);
//! - enterprise-managed authorization, where the person's identity assertion from the
//!   enterprise identity provider is exchanged there for an ID-JAG (RFC 8693), and that at the
//!   authorization server for the token (RFC 7523 JWT bearer grant; `enterprise`).
//!
//! The request is then sent again with the token. An expired token is refreshed without asking
//! anyone (a token of the last two grants has no refresh token: the same grant is run again); a
//! `403 insufficient_scope` asks for the scopes the server names, added to those already granted
//! (step-up), once per request. Tokens are kept for the life of the process, for every
//! reconnection, and, when the configuration asks (`keepTokens`, `tokenFile`), in a file only the
//! user can read, for the next process (`store`), with the registration of a client that
//! registered itself (`registration`), whose secret its refresh needs. A client the
//! authorization server no longer takes (a refresh refused with `invalid_client` or
//! `unauthorized_client`, or a registered secret that expired) is discarded with its tokens,
//! and the client starts again as on first use (`transport`). Secrets, private keys,
//! identity assertions and tokens are in no `Debug`, log line or error.

#[cfg(feature = "client-http")]
mod assertion;
#[cfg(feature = "client-http")]
mod consent;
#[cfg(feature = "client-http")]
mod discovery;
#[cfg(feature = "client-http")]
mod enterprise;
#[cfg(feature = "client-http")]
mod flow;
#[cfg(feature = "client-http")]
mod registration;
#[cfg(feature = "client-http")]
mod store;
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
/// authorization server beforehand; `clientKey` or `clientKeyFile` in place of the secret
/// authenticate that client with assertions signed by its private key (`private_key_jwt`).
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthConfig {
    /// A client registered with the authorization server beforehand; dynamic registration (or a
    /// client ID metadata document) is used when absent.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (`${NAME}` to read it from the environment). Never
    /// logged, audited or shown.
    pub client_secret: Option<String>,
    /// Its private key, in PEM (PKCS#8 `BEGIN PRIVATE KEY`, or PKCS#1 `BEGIN RSA PRIVATE KEY`;
    /// an EC key in SEC1 `BEGIN EC PRIVATE KEY` is converted with `openssl pkcs8 -topk8
    /// -nocrypt`), or `${NAME}` to read it from the environment: the client authenticates at the
    /// token endpoint with a short-lived assertion it signs (`private_key_jwt`, RFC 7523 section
    /// 2.2) instead of a secret. Never logged, audited or shown.
    pub client_key: Option<String>,
    /// The file holding that private key in PEM, in place of `clientKey`.
    pub client_key_file: Option<std::path::PathBuf>,
    /// The algorithm the assertions are signed with (`RS256`, `RS384`, `RS512`, `PS256`,
    /// `PS384`, `PS512`, `ES256`, `ES384` or `EdDSA`); when absent, the one the key is for:
    /// `RS256` for an RSA key, `ES256` or `ES384` for a P-256 or P-384 key, `EdDSA` for Ed25519.
    pub client_key_algorithm: Option<String>,
    /// The HTTPS URL of this client's ID metadata document, used as its client ID where the
    /// authorization server supports such documents.
    pub client_metadata_url: Option<String>,
    /// The name a dynamically registered client is given (the person sees it on the consent
    /// page); `tool-mcp` when absent.
    pub client_name: Option<String>,
    /// The scopes to ask for; when empty, those the server's challenge or its protected
    /// resource metadata names.
    pub scopes: Vec<String>,
    /// The audience (`aud`) of the client assertions signed with `clientKey` or
    /// `clientKeyFile`: `issuer` (the default), the authorization server's issuer identifier,
    /// as RFC 7523bis and the MCP specification (SEP-1046) require; or `token_endpoint`, its
    /// token endpoint URL, for an authorization server that still expects that one.
    pub client_assertion_audience: AssertionAudience,
    /// How the token is obtained.
    pub grant: Grant,
    /// The enterprise identity provider whose identity assertion is exchanged for the token,
    /// for `grant = "enterprise_managed"`.
    pub identity_provider: Option<IdentityProvider>,
    /// The port of the loopback address (`http://127.0.0.1:PORT/callback`) the authorization
    /// server redirects the person's browser to; a free one when absent. Some authorization
    /// servers accept only the redirect URI a client was registered with: give its port then.
    pub redirect_port: Option<u16>,
    /// Keep the tokens in a file only the user can read (mode `0600`), so that a restarted
    /// process goes on with them instead of asking again: `tool-mcp/oauth/NAME-HASH.json` in the
    /// user's data directory (`$XDG_DATA_HOME`, else `~/.local/share`). A client that registered
    /// itself dynamically is kept with them (its client ID, the secret it was given and when
    /// that expires, how it authenticates), so that the next process refreshes them as the same
    /// client. When the authorization server refuses that refresh because it no longer knows the
    /// client (`invalid_client`, `unauthorized_client`: a registration it dropped, a file
    /// written without the registration), or the client's secret expired (or expires within a
    /// minute), the client and its tokens are discarded with a warning, and the client starts
    /// again as on first use: it registers again where the server offers that, then is
    /// authorized as the configuration says. A refused refresh token (`invalid_grant`) is
    /// followed by a new authorization of the same client. Off by default: the tokens are kept
    /// for the life of the process.
    pub keep_tokens: bool,
    /// The file to keep the tokens in, in place of the default one; giving it keeps them.
    pub token_file: Option<std::path::PathBuf>,
    /// How the person's consent is obtained; set in code only.
    #[serde(skip)]
    pub consent: Consent,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("client_key", &self.client_key.as_ref().map(|_| "…"))
            .field("client_key_file", &self.client_key_file)
            .field("client_key_algorithm", &self.client_key_algorithm)
            .field("client_assertion_audience", &self.client_assertion_audience)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("identity_provider", &self.identity_provider)
            .field("redirect_port", &self.redirect_port)
            .field("keep_tokens", &self.keep_tokens)
            .field("token_file", &self.token_file)
            .field("consent", &self.consent)
            .finish()
    }
}

/// The grant a token is obtained with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person signs in and consents in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// No person: the client authenticates as itself with `clientId` and `clientSecret`, or
    /// `clientId` and its private key.
    ClientCredentials,
    /// Enterprise-managed authorization (the MCP extension of that name, "cross-app access"): the
    /// person's identity assertion from the enterprise identity provider (`identityProvider`)
    /// is exchanged there for an identity assertion authorization grant (ID-JAG, by an RFC 8693
    /// token exchange), which the MCP server's authorization server exchanges for the token
    /// (RFC 7523 JWT bearer grant); nobody is asked. `clientId` with `clientSecret` or a private
    /// key is the client registered with the MCP server's authorization server.
    EnterpriseManaged,
}

/// The audience of the client assertions a client signs with its private key
/// (`clientAssertionAudience`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssertionAudience {
    /// The authorization server's issuer identifier, which no other server can take the
    /// assertion for (RFC 7523bis, SEP-1046).
    #[default]
    Issuer,
    /// The authorization server's token endpoint URL, as RFC 7523 allowed and some servers
    /// still expect.
    TokenEndpoint,
}

impl AssertionAudience {
    /// The audience for the authorization server with the issuer `issuer` and the token
    /// endpoint `token_endpoint`.
    #[cfg(feature = "client-http")]
    fn of<'a>(self, issuer: &'a str, token_endpoint: &'a str) -> &'a str {
        match self {
            AssertionAudience::Issuer => issuer,
            AssertionAudience::TokenEndpoint => token_endpoint,
        }
    }
}

/// The enterprise identity provider of `grant = "enterprise_managed"`: where the person's
/// identity assertion is exchanged, by which client, and where that assertion is read.
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct IdentityProvider {
    /// Its issuer identifier, exactly as its metadata gives it; the ID-JAG it issues must name
    /// it.
    pub issuer: String,
    /// Its token endpoint, where the token exchange is sent.
    pub token_endpoint: String,
    /// The client registered with it (`${NAME}` to read it from the environment).
    pub client_id: String,
    /// That client's secret, sent with HTTP Basic authentication (`${NAME}`); a public client
    /// without it or a key. Never logged, audited or shown.
    pub client_secret: Option<String>,
    /// That client's private key in PEM (`${NAME}`), for `private_key_jwt`.
    pub client_key: Option<String>,
    /// The file holding that private key, in place of `clientKey`.
    pub client_key_file: Option<std::path::PathBuf>,
    /// The algorithm of that key's assertions, as `clientKeyAlgorithm` of the `oauth` entry.
    pub client_key_algorithm: Option<String>,
    /// The person's identity assertion (an OpenID Connect ID token the identity provider issued
    /// to this client), written `${NAME}` to read it from the environment. Never logged,
    /// audited or shown.
    pub id_token: Option<String>,
    /// The file holding that ID token, read again at every authorization so that a token the
    /// single sign-on agent renews is picked up, in place of `idToken`.
    pub id_token_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("client_key", &self.client_key.as_ref().map(|_| "…"))
            .field("client_key_file", &self.client_key_file)
            .field("client_key_algorithm", &self.client_key_algorithm)
            .field("id_token", &self.id_token.as_ref().map(|_| "…"))
            .field("id_token_file", &self.id_token_file)
            .finish()
    }
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
