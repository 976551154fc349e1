//! A client that authenticates with its private key (`private_key_jwt`, RFC 7523 section 2.2):
//! the key read from the configuration and checked there, the short-lived assertion it signs
//! for each token request, and the client credentials grant sent with one.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::transport::auth::{AuthError, AuthorizationMetadata, OAuthTokenResponse};
use serde_json::json;

use super::AssertionAudience;

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
                        `BEGIN RSA PRIVATE KEY`; an EC key in SEC1 `BEGIN EC PRIVATE KEY` \
                        is converted with `openssl pkcs8 -topk8 -nocrypt`)"
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
/// (RFC 8707); the assertion is for `audience`. The token response keeps no refresh token: an
/// expired token is replaced by the same grant, with a new assertion.
pub(super) async fn client_credentials(
    metadata: &AuthorizationMetadata,
    client_id: &str,
    key: &ClientKey,
    audience: AssertionAudience,
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
    // server's issuer identifier, so that no other server can replay it; its token endpoint
    // only when the configuration says the server expects that
    let audience = match (audience, metadata.issuer.as_deref()) {
        (AssertionAudience::TokenEndpoint, _) => metadata.token_endpoint.as_str(),
        (AssertionAudience::Issuer, Some(issuer)) => issuer,
        (AssertionAudience::Issuer, None) => {
            return Err(refuse(
                "the authorization server's metadata names no issuer for the assertion".into(),
            ));
        }
    };
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
    let request = endpoint_client()?
        .post(url)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body);
    answer_of(&format!("the token endpoint {endpoint}"), request).await
}

/// The HTTP client for an authorization server's endpoints: no redirect followed (credentials
/// go to the URL the metadata names, nowhere else), 30 seconds at most.
pub(super) fn endpoint_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())
}

/// Sends `request` to the endpoint `what` names, asking for JSON: the body of a successful
/// answer, or what the server said in a refusal, its OAuth error code and description
/// (RFC 6749 section 5.2, RFC 7591 section 3.2.2), never the whole body.
pub(super) async fn answer_of(
    what: &str,
    request: reqwest::RequestBuilder,
) -> Result<Vec<u8>, String> {
    let response = request
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("{what}: {}", e.without_url()))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("{what}: {}", e.without_url()))?;
    if !status.is_success() {
        let said: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let text = |k: &str| said.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let mut why = format!("{what} answered {status}");
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
pub(super) fn secure(url: &reqwest::Url) -> bool {
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

#[cfg(test)]
mod tests {
    //! The keys below are test fixtures made for these tests, nobody's.

    use jsonwebtoken::{DecodingKey, Validation};

    use super::*;

    const RSA: (&str, &str) = (
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC/wj4Gkf0DJ7w1\nygghbSJ+EgA7y0s4DF1B5x6tTUhq0lNwYolHF8F/gPRihkWIhNwgOUs+RSbZCthK\nqOfTndv0SGL6IEQKCjx4pKeHIvVnApVoJQZM3t88fmrVac8dauMK5YD6l+cbTdpG\nIaxf/MmG86nWONRexrehjSaD8nKr0sIWb/b+txxu+Fy6MoF7AaxgBo4CZ0R8I4AW\nzEWwX8gBjBX1mdY1vN8gQTwxHsIFnYW08h33oyYqeOI9wPlNVaXxYlD88mo/TGWL\n1omHYZgbD4VLvpA7MOjFzZwWqRWMQ0of5eJ4LvoHeGZ1PCEzlMi/q3iswRiMit+W\nt0vA0xglAgMBAAECggEAD3p0Wz9pdtm8PXNDWL9ga2C0mB7+wVVuKaWoOkDkuYqk\npYuunQhz3ADiuRkxf6WJxygYxLv8OMTBVLVxkQlK+drl8l6sX0sYOny/8Q6HVHtG\n6BMlAQt0ZYOmx/c0eqFoFjcURCYCx5dvKP4K1eynr7b3XI1VxxivNeEY3MmzK99B\ndvafGK5vWflfXZFpIz8PQK/Ox79VOZ1uqUMxw7FcHFSx5AR92+UNwFOLe9tql0xo\n1ZOZokvpcEn2hTXqFs5NOMd45VCiMvXFCMkUUT5Ns9IBpSjvj0mD1Mp7djVXP3d6\nv5k8OcUN1AEKhv8fHFMD1KAnRB18VHi75ttSKThUOQKBgQDj48pFt4aVnjjueVdC\nvanX7SeWCgGNWsgcijuH1o7ltNbxyfe7R19WmPeRzG0l9r1Z8OVAjnDXK82WZ/yN\nRqV+hRkyTf+7MDXcpMR6iKrq2EFNoD623a8rho43ltpfHFdAEMbU/GtnmLKdyY5b\nbOLrZ8crjRHx/S/vXfHzDWPlMwKBgQDXaYVc6gHG9wpHTLk9KMQ03DhUCSLJ9TDK\nG+m8QmM8CRyYYF0BdSUG9iRpeoYhffAiYNK8Bk2Es5eDPKFSiVSwhFoSvZXjojRx\nKcA4gC8IhkedC61NydsE2qvgvVMkioDKILy56H1r3ErvrHhXXqSxtcZ/DXOzxfzw\n0oFaarldRwKBgE5AoexeoLAvrIz2zaf1SKUEols7BF1tltl1/gse+eKWvlg4agC8\n+VfbHufJspEesNZ5ib8pKkY4nFfRTT+Vyq4vNf+4GOBGJbimO3F4DHin2YS2SdKx\nPL1NbvhXrJSMPsmY+S2Zn6frHypfU6rBMQp0kEe8ITVfI16me7ZiGrNRAoGAe8R2\nSt9tK/uPHU5Y9Gny6ghKGQayxWUqpkWJc5CVYc4+btKXPZooLyrH2w75+E5a5fXJ\nvxzD92YUvOPeMQUU8uLoufHSKFtvVEHP3ubPn08/4FzwM0yymcRmkxdUqR8nRnuu\n1AZf4dRN/g2Ti2emqzCtHx0EiJtObLQWfHPrk0sCgYEAmJwl+6ISNaoIf645SL45\nt4KxHRMSIR8rsyKf8gI+vrQ42bSFEu+j6KUuiBJ8Y6sFcIgVGrTkESTDYTZUpQwY\neBOjDreo7jL8F3pURWi8+V5n5YIqjFYCKIi4BrZQK7V/OrgGputnSV8UCCSzTmyx\nOfeC55oLRycyXBMYG9XTLTs=\n-----END PRIVATE KEY-----",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAv8I+BpH9Aye8NcoIIW0i\nfhIAO8tLOAxdQecerU1IatJTcGKJRxfBf4D0YoZFiITcIDlLPkUm2QrYSqjn053b\n9Ehi+iBECgo8eKSnhyL1ZwKVaCUGTN7fPH5q1WnPHWrjCuWA+pfnG03aRiGsX/zJ\nhvOp1jjUXsa3oY0mg/Jyq9LCFm/2/rccbvhcujKBewGsYAaOAmdEfCOAFsxFsF/I\nAYwV9ZnWNbzfIEE8MR7CBZ2FtPId96MmKnjiPcD5TVWl8WJQ/PJqP0xli9aJh2GY\nGw+FS76QOzDoxc2cFqkVjENKH+XieC76B3hmdTwhM5TIv6t4rMEYjIrflrdLwNMY\nJQIDAQAB\n-----END PUBLIC KEY-----",
    );
    const P384: (&str, &str) = (
        "-----BEGIN PRIVATE KEY-----\nMIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDAS48+jELaQt/nx9q8x\ng/HNF65OMEZTWY+tZRQ5yt2mwaDWZKduhdtCUa+eXZGsj7ChZANiAARrLE9/aB3u\nk35mgqqTBMVxYFvXtCnxxzYiHDnEk3UQ6YJUDREkeydDlvh/kYvCuNE6NpbNkjpK\nlnStiZgOiZctAYQb7AebJP6M+f24Yqz15cvsjPXSl1vH9wXzyR2sPso=\n-----END PRIVATE KEY-----",
        "-----BEGIN PUBLIC KEY-----\nMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEayxPf2gd7pN+ZoKqkwTFcWBb17Qp8cc2\nIhw5xJN1EOmCVA0RJHsnQ5b4f5GLwrjROjaWzZI6SpZ0rYmYDomXLQGEG+wHmyT+\njPn9uGKs9eXL7Iz10pdbx/cF88kdrD7K\n-----END PUBLIC KEY-----",
    );
    const ED25519: (&str, &str) = (
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIMCcp6bXngz/of4l5NrnA0YpYJT911fbHQ1+fn5mH97B\n-----END PRIVATE KEY-----",
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAuN/7aMNF1cb9TehF4EecHEVu9MMslIFjr9h/+UJzjXE=\n-----END PUBLIC KEY-----",
    );
    const SEC1: &str = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIJ+iDsGMtutKBAXW/U83twCClQbPswc7AAoGnNvnJtc2oAoGCCqGSM49\nAwEHoUQDQgAEoVh4EbEGt045De7EsvMXWOzKZQBbfJ1I2iDaraRbK7idBvbbsuoZ\nsBMcdPx0s7hS5TFFUQ2W9nnJky8MvBlcnw==\n-----END EC PRIVATE KEY-----";

    /// The claims of `assertion`, verified with the public key `public` for `algorithm`.
    fn verified(assertion: &str, public: &str, algorithm: Algorithm) -> serde_json::Value {
        let key = match algorithm {
            Algorithm::RS256 | Algorithm::PS256 => DecodingKey::from_rsa_pem(public.as_bytes()),
            Algorithm::ES384 => DecodingKey::from_ec_pem(public.as_bytes()),
            _ => DecodingKey::from_ed_pem(public.as_bytes()),
        }
        .unwrap();
        let mut validation = Validation::new(algorithm);
        validation.set_audience(&["https://as.example"]);
        validation.set_issuer(&["machine"]);
        let header = jsonwebtoken::decode_header(assertion).unwrap();
        assert_eq!(header.typ.as_deref(), Some(TYP));
        jsonwebtoken::decode::<serde_json::Value>(assertion, &key, &validation)
            .unwrap()
            .claims
    }

    #[test]
    fn the_algorithm_is_the_one_the_key_is_for_unless_one_is_named() {
        for ((pem, public), algorithm) in [
            (RSA, Algorithm::RS256),
            (P384, Algorithm::ES384),
            (ED25519, Algorithm::EdDSA),
        ] {
            let key = ClientKey::read(pem, None).unwrap();
            assert_eq!(key.algorithm, algorithm);
            let one = key.assertion("machine", "https://as.example").unwrap();
            let two = key.assertion("machine", "https://as.example").unwrap();
            let (one, two) = (
                verified(&one, public, algorithm),
                verified(&two, public, algorithm),
            );
            assert_eq!(one["sub"], "machine");
            assert_ne!(one["jti"], two["jti"], "a jti is never used twice");
            let (iat, exp) = (one["iat"].as_u64().unwrap(), one["exp"].as_u64().unwrap());
            assert_eq!(exp - iat, LIFETIME_SECS);
        }
        // a named algorithm of the key's kind, and one the key cannot sign
        let pss = ClientKey::read(RSA.0, Some("PS256")).unwrap();
        let signed = pss.assertion("machine", "https://as.example").unwrap();
        verified(&signed, RSA.1, Algorithm::PS256);
        let e = ClientKey::read(P384.0, Some("ES256")).unwrap_err();
        assert!(e.contains("cannot sign") && e.contains("ES256"), "{e}");
        let e = ClientKey::read(RSA.0, Some("HS256")).unwrap_err();
        assert!(e.contains("cannot sign"), "{e}");
        let e = ClientKey::read(RSA.0, Some("RS257")).unwrap_err();
        assert!(e.contains("not a signing algorithm"), "{e}");
        // the key's Debug shows its algorithm alone
        assert_eq!(format!("{pss:?}"), "ClientKey { algorithm: PS256, .. }");
    }

    #[test]
    fn a_sec1_key_is_refused_with_the_way_to_convert_it_and_none_of_its_bytes() {
        let e = ClientKey::read(SEC1, None).unwrap_err();
        assert!(e.contains("openssl pkcs8 -topk8"), "{e}");
        for line in SEC1.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!e.contains(line), "{e}");
        }
    }
}
