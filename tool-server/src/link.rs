//! One-time sign-in links for the approvals page, and the short sessions they open.
//!
//! A link that carried the approver's token would leave that token wherever a browser keeps
//! addresses: its history, its session-restore files, a synced profile. A link carries a code
//! instead (`http://ADDR/#code=…`): random (128 bits), good for one exchange within ten minutes,
//! kept in this process's memory. The page trades it (`POST /api/v1/session`) for a session
//! token that grants the approver's role for twelve hours and is never the configured token, so
//! what a browser may keep is either spent or short-lived. A token typed into the page is traded
//! the same way, so the configured token is never stored by the browser either.
//!
//! A session token is its own proof: its expiry and a nonce, signed with HMAC-SHA256 keyed by
//! the configured approver's token, so every replica configured with that token accepts it (a
//! page behind a load balancer stays signed in) and none has to remember it. It cannot be
//! revoked before it expires except by changing the approver's token, which ends every session.
//! Codes are spent once, so they live in the memory of the process that minted them: open a
//! link on the server that printed it.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::auth::{Role, same};

/// The first part of every session token: the format's version.
const SESSION_PREFIX: &str = "session1";

/// How long a sign-in code can be exchanged.
const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long a session token opened with a code grants the approver's role.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// The most codes waiting at once; minting another forgets the oldest.
const MAX_CODES: usize = 8;
/// Mints one-time sign-in links and checks the sessions they open.
///
/// Cheap to clone: clones share the codes, so the handle an application keeps (from
/// [`crate::ServerOptions::sign_in_links`]) mints codes the router it built accepts.
#[derive(Clone)]
pub struct SignInLinks {
    codes: Arc<Mutex<Vec<(String, Instant)>>>,
    /// The session tokens' signing key: the configured approver's token.
    key: Arc<[u8]>,
}

/// A session opened by [`SignInLinks::exchange`].
#[derive(Clone)]
pub struct Session {
    /// The bearer token of the session; it grants [`Role::Approver`].
    pub token: String,
    /// When it stops being accepted (ms since the epoch).
    pub expires_ms: u64,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("expires_ms", &self.expires_ms)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for SignInLinks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignInLinks").finish_non_exhaustive()
    }
}

impl SignInLinks {
    /// Links whose sessions are signed with `approver_token`: every server configured with the
    /// same token accepts the sessions this one opens.
    pub(crate) fn new(approver_token: &str) -> Self {
        SignInLinks {
            codes: Arc::default(),
            key: approver_token.as_bytes().into(),
        }
    }

    /// A fresh code, exchangeable once within ten minutes.
    pub fn code(&self) -> String {
        self.code_at(Instant::now())
    }

    /// The approvals page's address at `addr` (`host:port`) with a fresh code:
    /// `http://ADDR/#code=…`. The code travels in the fragment, which a browser never sends.
    pub fn link(&self, addr: impl fmt::Display) -> String {
        format!("http://{addr}/#code={}", self.code())
    }

    /// Spends `code` and opens a session; `None` when the code is unknown, spent or expired.
    pub fn exchange(&self, code: &str) -> Option<Session> {
        self.exchange_at(code, Instant::now())
    }

    /// Opens a session without a code, for a caller that proved itself otherwise (the
    /// configured approver's token).
    pub(crate) fn open(&self) -> Session {
        self.open_at(epoch_ms())
    }

    /// The role a session token grants: the approver's, when its signature is this server's
    /// and it has not expired.
    pub(crate) fn role_of(&self, presented: &str) -> Option<Role> {
        self.role_at(presented, epoch_ms())
    }

    fn role_at(&self, presented: &str, now_ms: u64) -> Option<Role> {
        let rest = presented.strip_prefix(SESSION_PREFIX)?.strip_prefix('.')?;
        let (signed, mac) = rest.rsplit_once('.')?;
        let (expires, _nonce) = signed.split_once('.')?;
        let expires: u64 = expires.parse().ok()?;
        let lifetime = SESSION_LIFETIME.as_millis() as u64;
        // a token from the future is not one this server signed for now
        if expires <= now_ms || expires > now_ms.saturating_add(lifetime) {
            return None;
        }
        same(mac.as_bytes(), self.sign(signed).as_bytes()).then_some(Role::Approver)
    }

    /// The hex HMAC-SHA256 of `text` under the approver's token.
    fn sign(&self, text: &str) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(SESSION_PREFIX.as_bytes());
        mac.update(b".");
        mac.update(text.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Instant)>> {
        self.codes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn code_at(&self, now: Instant) -> String {
        let code = random_hex();
        let mut codes = self.lock();
        codes.retain(|(_, until)| *until > now);
        if codes.len() >= MAX_CODES {
            codes.remove(0);
        }
        codes.push((code.clone(), now + CODE_LIFETIME));
        code
    }

    fn exchange_at(&self, code: &str, now: Instant) -> Option<Session> {
        {
            let mut codes = self.lock();
            codes.retain(|(_, until)| *until > now);
            // every code is compared in full, so the time taken tells nothing about which is near
            let matches: Vec<bool> = (codes.iter())
                .map(|(known, _)| same(code.as_bytes(), known.as_bytes()))
                .collect();
            let at = matches.iter().position(|m| *m)?;
            codes.remove(at);
        }
        Some(self.open_at(epoch_ms()))
    }

    fn open_at(&self, now_ms: u64) -> Session {
        let expires_ms = now_ms + SESSION_LIFETIME.as_millis() as u64;
        let signed = format!("{expires_ms}.{}", random_hex());
        Session {
            token: format!("{SESSION_PREFIX}.{signed}.{}", self.sign(&signed)),
            expires_ms,
        }
    }
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 128 random bits as 32 hex digits, from the operating system's generator.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    // without the operating system's generator there is no safe code to make
    getrandom::fill(&mut bytes).expect("the operating system's random generator is unavailable");
    hex(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPROVER: &str = "approver-token-for-link-tests";

    #[test]
    fn a_code_opens_one_session_once() {
        let links = SignInLinks::new(APPROVER);
        let code = links.code();
        assert_eq!(code.len(), 32);
        let session = links.exchange(&code).expect("a fresh code opens a session");
        assert_eq!(links.role_of(&session.token), Some(Role::Approver));
        assert!(links.exchange(&code).is_none(), "a spent code is refused");
        assert_eq!(links.role_of(&code), None, "a code is not a bearer token");
        assert_eq!(links.role_of(""), None);
        assert!(links.exchange("").is_none());
    }

    #[test]
    fn codes_and_sessions_expire() {
        let links = SignInLinks::new(APPROVER);
        let now = Instant::now();
        let late = links.code_at(now);
        assert!(
            links
                .exchange_at(&late, now + CODE_LIFETIME + Duration::from_secs(1))
                .is_none()
        );
        let session = links.open_at(1_000);
        let lifetime = SESSION_LIFETIME.as_millis() as u64;
        assert_eq!(links.role_at(&session.token, 1_001), Some(Role::Approver));
        assert_eq!(links.role_at(&session.token, 1_000 + lifetime), None);
        // a token that claims a longer life than the server gives is not the server's
        assert_eq!(links.role_at(&session.token, 0), None);
    }

    #[test]
    fn a_session_holds_on_every_replica_with_the_same_token_and_nowhere_else() {
        let here = SignInLinks::new(APPROVER);
        let replica = SignInLinks::new(APPROVER);
        let other = SignInLinks::new("another-approver-token-0001");
        let token = here.open().token;
        assert_eq!(replica.role_of(&token), Some(Role::Approver));
        assert_eq!(other.role_of(&token), None);
        // any change to the token breaks its signature
        let (head, mac) = token.rsplit_once('.').unwrap();
        let (_, nonce_and_rest) = head.split_once('.').unwrap();
        let longer = format!("{SESSION_PREFIX}.{}.{nonce_and_rest}.{mac}", u64::MAX / 2);
        let flipped = format!(
            "{head}.{}{}",
            if mac.starts_with('0') { '1' } else { '0' },
            &mac[1..]
        );
        for forged in [longer, flipped, format!("{token}0"), head.to_owned()] {
            assert_eq!(here.role_of(&forged), None, "{forged}");
        }
        assert!(!format!("{here:?}").contains(APPROVER));
    }

    #[test]
    fn only_a_handful_of_codes_wait_at_once() {
        let links = SignInLinks::new(APPROVER);
        let first = links.code();
        let rest: Vec<String> = (0..MAX_CODES).map(|_| links.code()).collect();
        assert!(links.exchange(&first).is_none(), "the oldest was forgotten");
        assert!(rest.iter().all(|c| links.exchange(c).is_some()));
        assert!(!format!("{links:?}").contains(&rest[0]));
    }
}
