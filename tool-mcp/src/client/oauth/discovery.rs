//! Where a server's authorization server is and what its metadata says: rmcp's discovery
//! (protected resource metadata, RFC 9728, then authorization server metadata, RFC 8414 and
//! OpenID Connect discovery, with the issuer check of RFC 8414 section 3.3), and, for a server
//! of the 2025-03-26 revision of MCP, which publishes no protected resource metadata, that
//! revision's own rule.
//!
//! The 2025-03-26 revision ("Authorization", section 2.3) has no issuer identifier to start
//! from: the authorization server is found at the *authorization base URL*, the MCP server's
//! URL with its path discarded, and its metadata MUST be at
//! `{base}/.well-known/oauth-authorization-server`. The document found there is that server's
//! metadata whatever issuer it names, so RFC 8414's comparison of the issuer with the URL it was
//! found at, which presumes the URL was made from the issuer, does not apply to it. What this
//! path still requires is the revision's premise: the issuer is on the origin of the
//! authorization base URL (the server the client was configured with), so a document naming an
//! authorization server elsewhere is refused. Any sign of the newer discovery (a
//! `resource_metadata` in the challenge, a protected resource metadata document at a well-known
//! URL) keeps the whole of RFC 8414's check.

use std::time::Duration;

use rmcp::transport::AuthorizationManager;
use rmcp::transport::auth::{AuthError, AuthorizationMetadata, WWWAuthenticateParams};

/// The protocol revision whose discovery [`legacy`] follows, sent as its clients send it.
const LEGACY_REVISION: &str = "2025-03-26";

/// The authorization server metadata of the server at `url`, discovered from its challenge
/// `www_authenticate`, or from the well-known URLs alone when there is none (a process going on
/// with kept tokens has had no challenge yet).
pub(super) async fn metadata(
    manager: &AuthorizationManager,
    url: &str,
    www_authenticate: Option<&str>,
) -> Result<AuthorizationMetadata, AuthError> {
    match manager
        .resolve_metadata_from_challenge(www_authenticate)
        .await
    {
        Ok(resolution) => Ok(resolution.metadata),
        Err(mismatch @ AuthError::AuthorizationServerMismatch { .. }) => {
            match legacy(url, www_authenticate).await {
                Some(metadata) => {
                    tracing::debug!(
                        url,
                        issuer = ?metadata.issuer,
                        "authorization server metadata of a 2025-03-26 server, at its base URL"
                    );
                    Ok(metadata)
                }
                None => Err(mismatch),
            }
        }
        Err(other) => Err(other),
    }
}

/// The metadata at the authorization base URL of the server at `url` (2025-03-26, section
/// 2.3.2), when the server publishes no protected resource metadata and that metadata's issuer
/// is on the base URL's origin; `None` otherwise.
async fn legacy(url: &str, www_authenticate: Option<&str>) -> Option<AuthorizationMetadata> {
    let server = reqwest::Url::parse(url).ok()?;
    if www_authenticate.is_some_and(|challenge| {
        WWWAuthenticateParams::parse(challenge, &server)
            .resource_metadata_url
            .is_some()
    }) {
        return None;
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .ok()?;
    let at = |path: &str| {
        let mut u = server.clone();
        u.set_query(None);
        u.set_fragment(None);
        u.set_path(path);
        u
    };
    let get = |u: reqwest::Url| {
        client
            .get(u)
            .header("MCP-Protocol-Version", LEGACY_REVISION)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
    };
    // RFC 9728 section 3.1: the path-inserted well-known URL, then the root one; a document
    // there, or a challenge pointing at one, is a newer server
    let path = server.path().trim_end_matches('/');
    for candidate in [
        format!("/.well-known/oauth-protected-resource{path}"),
        "/.well-known/oauth-protected-resource".to_owned(),
    ] {
        let answer = get(at(&candidate)).await.ok()?;
        let status = answer.status();
        if status.is_success() || status == reqwest::StatusCode::UNAUTHORIZED {
            return None;
        }
    }
    let answer = get(at("/.well-known/oauth-authorization-server"))
        .await
        .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let metadata: AuthorizationMetadata =
        serde_json::from_slice(&answer.bytes().await.ok()?).ok()?;
    let issuer = reqwest::Url::parse(metadata.issuer.as_deref()?).ok()?;
    (issuer.origin() == server.origin()).then_some(metadata)
}
