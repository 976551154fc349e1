//! A client that authenticates with its private key (`private_key_jwt`, RFC 7523 section 2.2):
//! the key read from the configuration and checked there, the short-lived assertion it signs
//! for each token request, and the client credentials grant sent with one.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::transport::auth::{AuthError, AuthorizationMetadata, OAuthTokenResponse};
use serde_json::json;

/// How long an assertion is accepted: one token request, with room for clocks apart.
const LIFETIME_SECS: u64 = 120;

/// The `typ` of a client assertion (draft-ietf-oauth-rfc7523bis), which keeps it from being
/// taken for any other kind of JWT.
const TYP: &str = "client-authentication+jwt";

/// The `client_assertion_type` of a JWT client assertion (RFC 7523 section 2.2).
pub(super) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A client's private key and the algorithm its assertions are signed with. Its `Debug` shows
/// the algorithm alone.
pub(super) struct ClientKey {
    key: EncodingKey,
    algorithm: Algorithm,
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl ClientKey {
    /// The key in `pem`, signing with `algorithm` or, when absent, the one the key is for. The
    /// error says what is wrong without a byte of the key.
    pub(super) fn read(pem: &str, algorithm: Option<&str>) -> Result<Self, String> {
        let pem = pem.trim().as_bytes();
        let named = algorithm
            .map(|name| {
                name.parse::<Algorithm>().map_err(|_| {
                    format!(
                        "{name:?} is not a signing algorithm (RS256, RS384, RS512, PS256, PS384, \
                         PS512, ES256, ES384, EdDSA)"
                    )
                })
            })
            .transpose()?;
        // each kind of key, with the algorithms it signs for, the default first
        let mut kinds: Vec<(EncodingKey, &[Algorithm])> = Vec::new();
        if let Ok(key) = EncodingKey::from_rsa_pem(pem) {
            kinds.push((
                key,
                &[
                    Algorithm::RS256,
                    Algorithm::RS384,
                    Algorithm::RS512,
                    Algorithm::PS256,
                    Algorithm::PS384,
                    Algorithm::PS512,
                ],
            ));
        }
        if let Ok(key) = EncodingKey::from_ec_pem(pem) {
            // the curve decides: a P-256 key signs ES256 only, a P-384 key ES384 only
            kinds.push((key, &[Algorithm::ES256, Algorithm::ES384]));
        }
        if let Ok(key) = EncodingKey::from_ed_pem(pem) {
            kinds.push((key, &[Algorithm::EdDSA]));
        }
        if kinds.is_empty() {
            return Err(
                "not a private key in PEM (PKCS#8 `BEGIN PRIVATE KEY`, or PKCS#1 \
                        `BEGIN RSA PRIVATE KEY`)"
                    .to_owned(),
            );
        }
        for (key, algorithms) in kinds {
            for &algorithm in algorithms {
                if named.is_some_and(|n| n != algorithm) {
                    continue;
                }
                let candidate = ClientKey {
                    key: key.clone(),
                    algorithm,
                };
                // a signature made here is the proof the key and the algorithm go together
                if candidate.sign_claims(&json!({})).is_ok() {
                    return Ok(candidate);
                }
            }
        }
        Err(match named {
            Some(n) => format!("the key cannot sign {n:?}: give the algorithm its kind signs"),
            None => "the key signs no algorithm offered (RSA, P-256, P-384, Ed25519)".to_owned(),
        })
    }

    /// The algorithm's name, as metadata lists it (`ES256`).
    pub(super) fn algorithm(&self) -> String {
        format!("{:?}", self.algorithm)
    }

    fn sign_claims(
        &self,
        claims: &serde_json::Value,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(self.algorithm);
        header.typ = Some(TYP.to_owned());
        jsonwebtoken::encode(&header, claims, &self.key)
    }

    /// A fresh assertion that `client_id` is authenticating to the authorization server
    /// `audience`: `iss` and `sub` the client, a `jti` never used before, valid for two minutes.
    pub(super) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, AuthError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| AuthError::InternalError("the clock is before 1970".into()))?
            .as_secs();
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti)
            .map_err(|e| AuthError::InternalError(format!("no randomness for a jti: {e}")))?;
        let jti: String = jti.iter().map(|b| format!("{b:02x}")).collect();
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + LIFETIME_SECS,
            "jti": jti,
        });
        self.sign_claims(&claims).map_err(|e| {
            AuthError::InternalError(format!("the client assertion cannot be signed: {e}"))
        })
    }
}

/// The client credentials grant for `client_id`, authenticated with an assertion signed by
/// `key`, at the authorization server `metadata` describes; the token is for `resource`
/// (RFC 8707). The token response keeps no refresh token: an expired token is replaced by the
/// same grant, with a new assertion.
pub(super) async fn client_credentials(
    metadata: &AuthorizationMetadata,
    client_id: &str,
    key: &ClientKey,
    scopes: &[String],
    resource: &str,
) -> Result<OAuthTokenResponse, AuthError> {
    let refuse = |why: String| AuthError::ClientCredentialsError(why);
    let listed = |field: &str, value: &str| {
        metadata
            .additional_fields
            .get(field)
            .and_then(|v| v.as_array())
            .is_none_or(|list| list.iter().any(|m| m.as_str() == Some(value)))
    };
    if !listed("token_endpoint_auth_methods_supported", "private_key_jwt") {
        return Err(refuse(
            "the authorization server does not accept `private_key_jwt` client authentication \
             (its token_endpoint_auth_methods_supported)"
                .into(),
        ));
    }
    let algorithm = key.algorithm();
    if !listed(
        "token_endpoint_auth_signing_alg_values_supported",
        &algorithm,
    ) {
        return Err(refuse(format!(
            "the authorization server does not accept client assertions signed with {algorithm} \
             (its token_endpoint_auth_signing_alg_values_supported): give `clientKeyAlgorithm` \
             and a key it accepts"
        )));
    }
    // RFC 7523bis and SEP-1046: the audience of a client assertion is the authorization
    // server's issuer identifier, so that no other server can replay it
    let audience = metadata.issuer.as_deref().ok_or_else(|| {
        refuse("the authorization server's metadata names no issuer for the assertion".into())
    })?;
    let assertion = key.assertion(client_id, audience)?;
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_assertion_type", ASSERTION_TYPE),
        ("client_assertion", assertion.as_str()),
        ("resource", resource),
    ];
    let scope = scopes.join(" ");
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    let body = post_form(&metadata.token_endpoint, &form)
        .await
        .map_err(refuse)?;
    token_response(&body).map_err(refuse)
}

/// Sends `form` to the token endpoint `endpoint` (HTTPS, or HTTP on a loopback address), no
/// redirect followed; the body of a successful answer, or what the server said.
pub(super) async fn post_form(endpoint: &str, form: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    let url = reqwest::Url::parse(endpoint)
        .map_err(|e| format!("the token endpoint {endpoint:?} is not a URL: {e}"))?;
    if !secure(&url) {
        return Err(format!(
            "the token endpoint {endpoint} is neither HTTPS nor on a loopback address"
        ));
    }
    let body = oauth2::url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().copied())
        .finish();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let response = client
        .post(url)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("the token endpoint {endpoint}: {}", e.without_url()))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("the token endpoint {endpoint}: {}", e.without_url()))?;
    if !status.is_success() {
        // the OAuth error code and its description (RFC 6749 section 5.2), never the whole body
        let said: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let text = |k: &str| said.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let mut why = format!("the token endpoint {endpoint} answered {status}");
        if let Some(error) = text("error") {
            why.push_str(&format!(": {error}"));
        }
        if let Some(description) = text("error_description") {
            why.push_str(&format!(" ({description})"));
        }
        return Err(why);
    }
    Ok(bytes.to_vec())
}

/// Whether a token endpoint may receive credentials: HTTPS, or HTTP to this machine.
fn secure(url: &reqwest::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(oauth2::url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
            Some(oauth2::url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(oauth2::url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// The bearer token of a token response, without any refresh token.
pub(super) fn token_response(body: &[u8]) -> Result<OAuthTokenResponse, String> {
    let mut token: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| "the token endpoint's answer is not JSON".to_owned())?;
    if let Some(fields) = token.as_object_mut() {
        fields.remove("refresh_token");
    }
    serde_json::from_value(token)
        .map_err(|e| format!("the token endpoint's answer is not a token response: {e}"))
}
