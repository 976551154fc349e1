//! A client that registers itself with the authorization server (dynamic client registration,
//! RFC 7591), as this crate does it rather than leaving it to rmcp's authorization session:
//! the registration's answer is kept whole (its client ID, the secret the server may issue even
//! to a client that asked to be public, and the token endpoint authentication it was given), so
//! that the client's token requests authenticate as it was registered, and so that a kept token
//! (`store`) is refreshed by a restarted process as the same client.
//!
//! The registration is used again for as long as its secret lasts: a new authorization (after
//! a refresh token was refused) is asked for by the same client, redirected where it was
//! registered to be. A secret that expired, or expires within a small margin
//! (`client_secret_expires_at`, RFC 7591 section 3.2.1), is never sent: the client registers
//! again instead.

use rmcp::transport::auth::{AuthError, AuthorizationMetadata, OAuthClientConfig};
use serde::{Deserialize, Serialize};

/// The client an authorization server registered: what a token request needs of it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Registration {
    pub(super) client_id: String,
    /// The secret it was issued, when the server made it a confidential client. Never logged,
    /// audited or shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) client_secret: Option<String>,
    /// How it authenticates at the token endpoint (RFC 7591 section 2), when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) token_endpoint_auth_method: Option<String>,
    /// When its secret expires, in seconds since the Unix epoch; `0` or absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) client_secret_expires_at: Option<u64>,
    /// When it was registered, in seconds since the Unix epoch: the server's word, else this
    /// process's clock at registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) client_id_issued_at: Option<u64>,
    /// The redirect URIs it was registered with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) redirect_uris: Vec<String>,
    /// The scopes it was registered for (space-separated), when it was registered for some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) scope: Option<String>,
    /// The issuer of the authorization server that registered it (this crate's own field, not
    /// the server's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) issuer: Option<String>,
}

/// How long before its expiry a secret is no longer used, at most: a request on its way when
/// it expires would be refused.
const SECRET_MARGIN: u64 = 60;

/// Now, in seconds since the Unix epoch.
pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("client_secret_expires_at", &self.client_secret_expires_at)
            .field("client_id_issued_at", &self.client_id_issued_at)
            .field("redirect_uris", &self.redirect_uris)
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl Registration {
    /// From when its secret is no longer used, in seconds since the Unix epoch: a margin before
    /// the secret's expiry (a minute, or half the secret's lifetime when that is shorter, so
    /// that a short-lived secret is used at all); none for a secret that never expires or a
    /// client without one.
    pub(super) fn secret_deadline(&self) -> Option<u64> {
        self.client_secret.as_ref()?;
        let expires = self.client_secret_expires_at.filter(|&t| t != 0)?;
        let lifetime = self
            .client_id_issued_at
            .filter(|&issued| issued <= expires)
            .map_or(u64::MAX, |issued| expires - issued);
        Some(expires - SECRET_MARGIN.min(lifetime / 2))
    }

    /// Whether its secret expired, or is about to, at `now`.
    pub(super) fn secret_expired(&self, now: u64) -> bool {
        self.secret_deadline()
            .is_some_and(|deadline| now >= deadline)
    }

    /// Whether a new authorization at the authorization server `issuer`, for `scopes`, can be
    /// asked for by this client: it was registered there, for those scopes (or for none in
    /// particular), and its secret is still good at `now`.
    pub(super) fn serves(&self, issuer: Option<&str>, scopes: &[String], now: u64) -> bool {
        let registered_for = |scope: &String| {
            self.scope
                .as_deref()
                .is_none_or(|all| all.split_whitespace().any(|s| s == scope))
        };
        issuer.is_some()
            && self.issuer.as_deref() == issuer
            && scopes.iter().all(registered_for)
            && !self.secret_expired(now)
    }

    /// The port of the loopback redirect URI it was registered with.
    pub(super) fn redirect_port(&self) -> Option<u16> {
        self.redirect_uris.iter().find_map(|uri| {
            uri.strip_prefix("http://127.0.0.1:")?
                .strip_suffix("/callback")?
                .parse()
                .ok()
        })
    }

    /// Makes `metadata` list only the secret-based token endpoint authentication this client was
    /// registered with, when it was registered with one: rmcp's client picks its
    /// authentication from the methods the metadata lists (`client_secret_basic` whenever it is
    /// among them), and a server that registered the client for `client_secret_post` refuses
    /// any other.
    pub(super) fn authenticate_as_registered(&self, metadata: &mut AuthorizationMetadata) {
        if self.client_secret.is_none() {
            return;
        }
        if let Some(method @ ("client_secret_post" | "client_secret_basic")) =
            self.token_endpoint_auth_method.as_deref()
        {
            metadata.additional_fields.insert(
                "token_endpoint_auth_methods_supported".to_owned(),
                serde_json::json!([method]),
            );
        }
    }

    /// The configuration of rmcp's client for this registration, redirecting to `redirect_uri`.
    pub(super) fn client_config(&self, redirect_uri: &str) -> OAuthClientConfig {
        let config = OAuthClientConfig::new(&self.client_id, redirect_uri);
        match &self.client_secret {
            Some(secret) => config.with_client_secret(secret),
            None => config,
        }
    }
}

/// Registers a client named `name`, redirected to `redirect_uri`, for `scopes`, at the
/// registration endpoint of the authorization server `metadata` describes. The client asks to be
/// a public native application, as rmcp's registration does; the server may make it a
/// confidential one, which the answer says. What the server says in a refusal is its error code
/// and description, never the whole answer.
pub(super) async fn register(
    metadata: &AuthorizationMetadata,
    name: &str,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<Registration, AuthError> {
    let failed =
        |why: String| AuthError::RegistrationFailed(format!("dynamic registration: {why}"));
    let endpoint = metadata
        .registration_endpoint
        .as_deref()
        .ok_or_else(|| failed("the authorization server has no registration endpoint".into()))?;
    let url = reqwest::Url::parse(endpoint)
        .map_err(|e| failed(format!("the registration endpoint {endpoint:?}: {e}")))?;
    if !super::assertion::secure(&url) {
        return Err(failed(format!(
            "the registration endpoint {endpoint} is neither HTTPS nor on a loopback address"
        )));
    }
    let mut request = serde_json::json!({
        "client_name": name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        "response_types": ["code"],
        "application_type": "native",
    });
    if !scopes.is_empty() {
        request["scope"] = scopes.join(" ").into();
    }
    let client = super::assertion::endpoint_client().map_err(&failed)?;
    let bytes = super::assertion::answer_of(endpoint, client.post(url).json(&request))
        .await
        .map_err(&failed)?;
    let mut registered: Registration = serde_json::from_slice(&bytes)
        .map_err(|_| failed(format!("{endpoint} answered with no client")))?;
    // an empty secret is a public client's (some servers send one), never a password to send
    registered.client_secret = registered.client_secret.filter(|s| !s.is_empty());
    if registered.client_id.is_empty() {
        return Err(failed(format!("{endpoint} answered with no client")));
    }
    // what a server's answer leaves out is what was asked for
    registered.client_id_issued_at = registered.client_id_issued_at.or(Some(now()));
    if registered.redirect_uris.is_empty() {
        registered.redirect_uris = vec![redirect_uri.to_owned()];
    }
    if registered.scope.is_none() && !scopes.is_empty() {
        registered.scope = Some(scopes.join(" "));
    }
    registered.issuer = metadata.issuer.clone();
    Ok(registered)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata listing both secret-based token endpoint authentications.
    fn both() -> AuthorizationMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "https://as.example",
            "authorization_endpoint": "https://as.example/authorize",
            "token_endpoint": "https://as.example/token",
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        }))
        .unwrap()
    }

    fn listed(metadata: &AuthorizationMetadata) -> serde_json::Value {
        metadata.additional_fields["token_endpoint_auth_methods_supported"].clone()
    }

    #[test]
    fn a_registered_secret_is_sent_as_the_registration_says_and_never_shown() {
        let registered: Registration = serde_json::from_value(serde_json::json!({
            "client_id": "c1", "client_secret": "the-secret-1",
            "token_endpoint_auth_method": "client_secret_post",
            "redirect_uris": ["http://127.0.0.1:4000/callback"], "client_id_issued_at": 1,
        }))
        .unwrap();
        let mut metadata = both();
        registered.authenticate_as_registered(&mut metadata);
        assert_eq!(listed(&metadata), serde_json::json!(["client_secret_post"]));
        assert!(!format!("{registered:?}").contains("the-secret-1"));

        // a public client, or a method that is not a secret's, leaves the metadata as it is
        let public = Registration {
            client_secret: None,
            ..registered.clone()
        };
        let keyed = Registration {
            token_endpoint_auth_method: Some("private_key_jwt".into()),
            ..registered.clone()
        };
        for client in [public, keyed] {
            let mut metadata = both();
            client.authenticate_as_registered(&mut metadata);
            assert_eq!(listed(&metadata), listed(&both()));
        }
    }

    fn secret_until(expires_at: Option<u64>, issued_at: Option<u64>) -> Registration {
        serde_json::from_value(serde_json::json!({
            "client_id": "c2", "client_secret": "the-secret-2",
            "client_secret_expires_at": expires_at, "client_id_issued_at": issued_at,
            "redirect_uris": ["http://127.0.0.1:4711/callback"], "scope": "notes read",
        }))
        .unwrap()
    }

    #[test]
    fn a_secret_is_not_used_from_a_margin_before_it_expires() {
        let now = 1_000_000;
        // 0, or no expiry at all: never expires
        for never in [Some(0), None] {
            let client = secret_until(never, Some(now - 10));
            assert_eq!(client.secret_deadline(), None);
            assert!(!client.secret_expired(u64::MAX));
        }
        // a secret of a day: a minute before it expires
        let day = secret_until(Some(now + 86_400), Some(now));
        assert_eq!(day.secret_deadline(), Some(now + 86_400 - 60));
        assert!(!day.secret_expired(now + 86_400 - 61));
        assert!(day.secret_expired(now + 86_400 - 60));
        // a secret of ten seconds: five seconds before, so that it is used at all
        let short = secret_until(Some(now + 10), Some(now));
        assert!(!short.secret_expired(now + 4));
        assert!(short.secret_expired(now + 5));
        // an unknown issue time: the whole margin
        let unknown = secret_until(Some(now + 30), None);
        assert!(unknown.secret_expired(now));
        // a public client has no secret to expire
        let public = Registration {
            client_secret: None,
            ..secret_until(Some(now - 1), None)
        };
        assert!(!public.secret_expired(now));
    }

    #[test]
    fn a_registration_serves_its_issuer_and_scopes_while_its_secret_lasts() {
        let now = 1_000_000;
        let mut client = secret_until(Some(now + 86_400), Some(now));
        client.issuer = Some("https://as.example".into());
        let scopes = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = Some("https://as.example");
        assert!(client.serves(at, &scopes(&["notes"]), now));
        assert!(client.serves(at, &[], now));
        assert!(!client.serves(at, &scopes(&["notes", "write"]), now));
        assert!(!client.serves(Some("https://other.example"), &[], now));
        assert!(!client.serves(None, &[], now));
        assert!(!client.serves(at, &[], now + 86_400));
        assert_eq!(client.redirect_port(), Some(4711));
        // registered for no scope in particular: any
        client.scope = None;
        assert!(client.serves(at, &scopes(&["write"]), now));
        assert!(!format!("{client:?}").contains("the-secret-2"));
    }
}
