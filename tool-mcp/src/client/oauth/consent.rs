//! The person's side of an authorization code flow: the authorization URL shown to them, and
//! the code brought back by the authorization server's redirect to a loopback address
//! (RFC 8252: `http://127.0.0.1:PORT/callback`, answered by this process).

use std::time::Duration;

use rmcp::transport::auth::AuthError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::Consent;

/// How long the person has to sign in and consent.
const PATIENCE: Duration = Duration::from_secs(300);

/// The loopback address the authorization server redirects to, listening.
pub(super) struct Redirect {
    listener: TcpListener,
    port: u16,
}

impl Redirect {
    /// Listens on 127.0.0.1 at `port`, or at a free port.
    pub(super) async fn bind(port: Option<u16>) -> Result<Self, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| {
                AuthError::InternalError(format!(
                    "cannot listen for the authorization's redirect on 127.0.0.1:{}: {e}",
                    port.unwrap_or(0)
                ))
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::InternalError(e.to_string()))?
            .port();
        Ok(Redirect { listener, port })
    }

    /// The redirect URI to register and send.
    pub(super) fn uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// The URL the authorization server redirected to (with its `code` and `state`), once the
    /// person consented at `authorize` as `consent` says.
    pub(super) async fn wait(
        self,
        server: &str,
        authorize: &str,
        consent: Consent,
    ) -> Result<String, AuthError> {
        match consent {
            Consent::FollowRedirect => follow(authorize).await,
            Consent::Person => {
                eprintln!(
                    "The MCP server {server} asks for authorization. Open this address in a \
                     browser, sign in and consent:\n\n  {authorize}\n"
                );
                tracing::info!(server = %server, "waiting for the person to authorize");
                tokio::time::timeout(PATIENCE, self.accept())
                    .await
                    .map_err(|_| {
                        AuthError::AuthorizationFailed(format!(
                            "nobody authorized within {} minutes",
                            PATIENCE.as_secs() / 60
                        ))
                    })?
            }
        }
    }

    /// Answers requests on the loopback address until one comes to `/callback`.
    async fn accept(self) -> Result<String, AuthError> {
        loop {
            let Ok((mut stream, _)) = self.listener.accept().await else {
                continue;
            };
            let mut buffer = vec![0u8; 8192];
            let mut read = 0;
            // the request line is all that is read: the browser's headers do not matter
            while read < buffer.len() && !buffer[..read].contains(&b'\n') {
                match stream.read(&mut buffer[read..]).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => read += n,
                }
            }
            let head = String::from_utf8_lossy(&buffer[..read]);
            let target = head
                .lines()
                .next()
                .and_then(|line| line.strip_prefix("GET "))
                .and_then(|rest| rest.split(' ').next())
                .unwrap_or_default()
                .to_owned();
            let callback = target.starts_with("/callback?") || target == "/callback";
            let (status, body) = if callback {
                (
                    "200 OK",
                    "Authorization received: you can close this page and go back to the program.",
                )
            } else {
                ("404 Not Found", "Not the authorization's redirect.")
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            if callback {
                return Ok(format!("http://127.0.0.1:{}{target}", self.port));
            }
        }
    }
}

/// The redirect the authorization endpoint answers at once, read without following it.
async fn follow(authorize: &str) -> Result<String, AuthError> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| AuthError::InternalError(e.to_string()))?;
    let response =
        client.get(authorize).send().await.map_err(|e| {
            AuthError::AuthorizationFailed(format!("the authorization endpoint: {e}"))
        })?;
    response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            AuthError::AuthorizationFailed(format!(
                "the authorization endpoint answered {} without redirecting",
                response.status()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_code_comes_back_on_the_loopback_redirect() {
        let redirect = Redirect::bind(None).await.unwrap();
        let uri = redirect.uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let browser = tokio::spawn({
            let uri = uri.clone();
            async move {
                let client = reqwest::Client::new();
                let base = uri.trim_end_matches("/callback");
                // the browser's other requests are answered, and waited past
                let other = client.get(format!("{base}/favicon.ico")).send().await;
                assert_eq!(other.unwrap().status(), 404);
                let answer = client
                    .get(format!("{uri}?code=abc&state=xyz"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(answer.status(), 200);
                answer.text().await.unwrap()
            }
        });
        let back = redirect.accept().await.unwrap();
        assert_eq!(back, format!("{uri}?code=abc&state=xyz"));
        assert!(browser.await.unwrap().contains("close this page"));
    }
}
