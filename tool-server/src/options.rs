//! What a server is started with: its two bearer tokens and its limits.

use std::fmt;
use std::sync::Arc;

use tool_providers::agent::Agent;

use crate::link::SignInLinks;

/// The environment variable holding the agents' token (list, check, call).
pub const AGENT_TOKEN_ENV: &str = "TOOLS_AGENT_TOKEN";
/// The environment variable holding the approvers' token (everything, approve and deny included).
pub const APPROVER_TOKEN_ENV: &str = "TOOLS_APPROVER_TOKEN";

/// The shortest token accepted: shorter ones can be guessed over a network.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The server's two bearer tokens: one for agents, one for the people who approve.
///
/// Deliberately not `Debug`-printable with their values.
#[derive(Clone)]
pub struct Tokens {
    agent: String,
    approver: String,
    generated: bool,
}

/// Why a pair of tokens is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Only one of the two is set.
    #[error("set both {AGENT_TOKEN_ENV} and {APPROVER_TOKEN_ENV}, or neither (found only {0})")]
    OnlyOne(&'static str),
    /// A token is too short.
    #[error("the {0} token is shorter than {MIN_TOKEN_CHARS} characters")]
    TooShort(&'static str),
    /// A token has characters an `Authorization` header cannot carry.
    #[error("the {0} token must be visible ASCII without spaces")]
    Unprintable(&'static str),
    /// Both tokens are the same, so the agent could approve.
    #[error("the agent and approver tokens must differ")]
    Same,
}

impl Tokens {
    /// Two tokens chosen by the operator.
    pub fn new(agent: impl Into<String>, approver: impl Into<String>) -> Result<Self, TokenError> {
        let (agent, approver) = (agent.into(), approver.into());
        check("agent", &agent)?;
        check("approver", &approver)?;
        if agent == approver {
            return Err(TokenError::Same);
        }
        Ok(Tokens {
            agent,
            approver,
            generated: false,
        })
    }

    /// The tokens in `TOOLS_AGENT_TOKEN` and `TOOLS_APPROVER_TOKEN`; `None` when neither is set.
    pub fn from_env() -> Result<Option<Self>, TokenError> {
        let read = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        match (read(AGENT_TOKEN_ENV), read(APPROVER_TOKEN_ENV)) {
            (Some(agent), Some(approver)) => Tokens::new(agent, approver).map(Some),
            (Some(_), None) => Err(TokenError::OnlyOne(AGENT_TOKEN_ENV)),
            (None, Some(_)) => Err(TokenError::OnlyOne(APPROVER_TOKEN_ENV)),
            (None, None) => Ok(None),
        }
    }

    /// Two fresh random tokens (128 bits each), for a server on a loopback address; a server
    /// with generated tokens refuses any other address.
    pub fn generate() -> Self {
        Tokens {
            agent: random_token(),
            approver: random_token(),
            generated: true,
        }
    }

    /// The agents' token.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The approvers' token.
    pub fn approver(&self) -> &str {
        &self.approver
    }

    /// Whether the tokens were generated rather than configured.
    pub fn generated(&self) -> bool {
        self.generated
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("generated", &self.generated)
            .finish_non_exhaustive()
    }
}

fn check(role: &'static str, token: &str) -> Result<(), TokenError> {
    if token.chars().count() < MIN_TOKEN_CHARS {
        return Err(TokenError::TooShort(role));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(TokenError::Unprintable(role));
    }
    Ok(())
}

fn random_token() -> String {
    let mut bytes = [0u8; 16];
    // the operating system's generator; without it there is no safe token to make
    getrandom::fill(&mut bytes).expect("the operating system's random generator is unavailable");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How [`crate::router`] serves: tokens and limits.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub(crate) tokens: Tokens,
    pub(crate) max_body_bytes: Option<usize>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) agent: Option<Arc<Agent>>,
    pub(crate) links: SignInLinks,
}

impl ServerOptions {
    /// Options with these tokens and the default limits.
    pub fn new(tokens: Tokens) -> Self {
        ServerOptions {
            tokens,
            max_body_bytes: None,
            agent: None,
            links: SignInLinks::default(),
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
        }
    }

    /// The largest request body read; larger ones are answered 413 without being read. The
    /// default is the tool set's argument size limit plus room for the request's envelope.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = Some(bytes);
        self
    }

    /// The `Host` names MCP requests at `/mcp` may carry (default `localhost`, `127.0.0.1`,
    /// `::1`): the guard against DNS rebinding that the MCP specification asks of HTTP servers.
    /// A server reached under another name lists it here.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Serves `POST /api/v1/chat` with this agent. Build it over the same executor the server
    /// serves, so that its calls that wait for a person are the pending operations the page
    /// shows, and a decision resumes the run.
    pub fn chat(mut self, agent: Agent) -> Self {
        self.agent = Some(Arc::new(agent));
        self
    }

    /// The tokens.
    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// The sign-in links of the server these options build: a handle that mints one-time
    /// links to the approvals page (`http://ADDR/#code=…`) which the router accepts, however
    /// often the options are cloned.
    pub fn sign_in_links(&self) -> SignInLinks {
        self.links.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_that_an_agent_could_guess_or_share_are_refused() {
        assert_eq!(
            Tokens::new("short", "x".repeat(20)).unwrap_err(),
            TokenError::TooShort("agent")
        );
        let same = "a".repeat(20);
        assert_eq!(
            Tokens::new(same.clone(), same).unwrap_err(),
            TokenError::Same
        );
        assert_eq!(
            Tokens::new("a".repeat(20), format!("{} b", "x".repeat(20))).unwrap_err(),
            TokenError::Unprintable("approver")
        );
        assert!(
            !Tokens::new("a".repeat(20), "b".repeat(20))
                .unwrap()
                .generated()
        );
    }

    #[test]
    fn generated_tokens_differ_and_are_not_printed() {
        let t = Tokens::generate();
        assert_ne!(t.agent(), t.approver());
        assert_eq!(t.agent().len(), 32);
        assert!(t.generated());
        assert!(!format!("{t:?}").contains(t.agent()));
    }
}
