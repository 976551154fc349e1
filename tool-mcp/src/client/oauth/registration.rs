//! A client that registers itself with the authorization server (dynamic client registration,
//! RFC 7591), as this crate does it rather than leaving it to rmcp's authorization session:
//! the registration's answer is kept whole (its client ID, the secret the server may issue even
//! to a client that asked to be public, and the token endpoint authentication it was given), so
//! that the client's token requests authenticate as it was registered, and so that a kept token
//! (`store`) is refreshed by a restarted process as the same client.

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
            .finish()
    }
}

impl Registration {
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
            ..registered
        };
        for client in [public, keyed] {
            let mut metadata = both();
            client.authenticate_as_registered(&mut metadata);
            assert_eq!(listed(&metadata), listed(&both()));
        }
    }
}
