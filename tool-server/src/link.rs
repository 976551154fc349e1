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
//! Codes and sessions live in the process that minted them: a replica does not know another's.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::auth::{Role, same};

/// How long a sign-in code can be exchanged.
const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long a session token opened with a code grants the approver's role.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// The most codes waiting at once; minting another forgets the oldest.
const MAX_CODES: usize = 8;
/// The most sessions open at once; opening another ends the oldest.
const MAX_SESSIONS: usize = 64;

/// Mints one-time sign-in links and keeps the sessions they open.
///
/// Cheap to clone: clones share the codes and sessions, so the handle an application keeps
/// (from [`crate::ServerOptions::sign_in_links`]) mints codes the router it built accepts.
#[derive(Clone, Default)]
pub struct SignInLinks {
    inner: Arc<Mutex<Secrets>>,
}

#[derive(Default)]
struct Secrets {
    codes: Vec<(String, Instant)>,
    sessions: Vec<(String, Instant)>,
}

impl Secrets {
    fn forget_expired(&mut self, now: Instant) {
        self.codes.retain(|(_, until)| *until > now);
        self.sessions.retain(|(_, until)| *until > now);
    }
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
        self.open_at(Instant::now())
    }

    /// The role a session token grants, if it is one of the open sessions.
    pub(crate) fn role_of(&self, presented: &str) -> Option<Role> {
        let mut secrets = self.lock();
        secrets.forget_expired(Instant::now());
        // every session is compared in full, so the time taken tells nothing about which is near
        let found = secrets.sessions.iter().fold(false, |found, (token, _)| {
            found | same(presented.as_bytes(), token.as_bytes())
        });
        found.then_some(Role::Approver)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Secrets> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn code_at(&self, now: Instant) -> String {
        let code = random_hex();
        let mut secrets = self.lock();
        secrets.forget_expired(now);
        if secrets.codes.len() >= MAX_CODES {
            secrets.codes.remove(0);
        }
        secrets.codes.push((code.clone(), now + CODE_LIFETIME));
        code
    }

    fn exchange_at(&self, code: &str, now: Instant) -> Option<Session> {
        {
            let mut secrets = self.lock();
            secrets.forget_expired(now);
            let matches: Vec<bool> = secrets
                .codes
                .iter()
                .map(|(known, _)| same(code.as_bytes(), known.as_bytes()))
                .collect();
            let at = matches.iter().position(|m| *m)?;
            secrets.codes.remove(at);
        }
        Some(self.open_at(now))
    }

    fn open_at(&self, now: Instant) -> Session {
        let token = format!("session-{}", random_hex());
        let mut secrets = self.lock();
        secrets.forget_expired(now);
        if secrets.sessions.len() >= MAX_SESSIONS {
            secrets.sessions.remove(0);
        }
        secrets
            .sessions
            .push((token.clone(), now + SESSION_LIFETIME));
        let epoch_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Session {
            token,
            expires_ms: epoch_ms + SESSION_LIFETIME.as_millis() as u64,
        }
    }
}

/// 128 random bits as 32 hex digits, from the operating system's generator.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    // without the operating system's generator there is no safe code to make
    getrandom::fill(&mut bytes).expect("the operating system's random generator is unavailable");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_opens_one_session_once() {
        let links = SignInLinks::default();
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
        let links = SignInLinks::default();
        let now = Instant::now();
        let late = links.code_at(now);
        assert!(
            links
                .exchange_at(&late, now + CODE_LIFETIME + Duration::from_secs(1))
                .is_none()
        );
        let fresh = links.code_at(now);
        let session = links.exchange_at(&fresh, now).unwrap();
        links
            .lock()
            .forget_expired(now + SESSION_LIFETIME + Duration::from_secs(1));
        assert_eq!(links.role_of(&session.token), None);
    }

    #[test]
    fn only_a_handful_of_codes_wait_at_once() {
        let links = SignInLinks::default();
        let first = links.code();
        let rest: Vec<String> = (0..MAX_CODES).map(|_| links.code()).collect();
        assert!(links.exchange(&first).is_none(), "the oldest was forgotten");
        assert!(rest.iter().all(|c| links.exchange(c).is_some()));
        assert!(!format!("{links:?}").contains(&rest[0]));
    }
}
