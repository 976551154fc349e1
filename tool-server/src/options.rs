//! What a server is started with: its bearer tokens and its limits.

use std::fmt;
use std::sync::Arc;

use tool_mcp::server::McpServer;
use tool_providers::agent::Agent;

use crate::link::SignInLinks;

/// The environment variable holding the agents' token (list, check, call).
pub const AGENT_TOKEN_ENV: &str = "TOOLS_AGENT_TOKEN";
/// The environment variable holding the approvers' token (everything, approve and deny included).
pub const APPROVER_TOKEN_ENV: &str = "TOOLS_APPROVER_TOKEN";
/// The environment variable holding the token for MCP hosts that show confirmations to a person
/// (optional): what the agent's token allows, and MCP sessions opened with it confirm calls
/// in-band with `elicitation/create`.
pub const HOST_TOKEN_ENV: &str = "TOOLS_HOST_TOKEN";

/// The shortest token accepted: shorter ones can be guessed over a network.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The server's bearer tokens: one for agents, one for the people who approve, and optionally
/// one for MCP hosts that put confirmations to a person.
///
/// Who may confirm is a grant the operator makes by handing out a token, never implied by the
/// agent's: an MCP client with the agent's token that offers to answer elicitations is not
/// asked, its calls wait for the approvals page.
///
/// Deliberately not `Debug`-printable with their values.
#[derive(Clone)]
pub struct Tokens {
    agent: String,
    approver: String,
    host: Option<String>,
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
    /// Two roles share a token, so one could act as the other.
    #[error("the agent, approver and host tokens must all differ")]
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
            host: None,
            generated: false,
        })
    }

    /// Adds the token of MCP hosts that show confirmations to a person (`TOOLS_HOST_TOKEN`).
    pub fn with_host(mut self, host: impl Into<String>) -> Result<Self, TokenError> {
        let host = host.into();
        check("host", &host)?;
        if host == self.agent || host == self.approver {
            return Err(TokenError::Same);
        }
        self.host = Some(host);
        Ok(self)
    }

    /// The tokens in `TOOLS_AGENT_TOKEN` and `TOOLS_APPROVER_TOKEN`, with `TOOLS_HOST_TOKEN`
    /// when it is set; `None` when neither of the first two is set.
    pub fn from_env() -> Result<Option<Self>, TokenError> {
        let read = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let tokens = match (read(AGENT_TOKEN_ENV), read(APPROVER_TOKEN_ENV)) {
            (Some(agent), Some(approver)) => Tokens::new(agent, approver)?,
            (Some(_), None) => return Err(TokenError::OnlyOne(AGENT_TOKEN_ENV)),
            (None, Some(_)) => return Err(TokenError::OnlyOne(APPROVER_TOKEN_ENV)),
            (None, None) => return Ok(None),
        };
        match read(HOST_TOKEN_ENV) {
            Some(host) => tokens.with_host(host).map(Some),
            None => Ok(Some(tokens)),
        }
    }

    /// Two fresh random tokens (128 bits each), for a server on a loopback address; a server
    /// with generated tokens refuses any other address.
    pub fn generate() -> Self {
        Tokens {
            agent: random_token(),
            approver: random_token(),
            host: None,
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

    /// The MCP hosts' token, when one was configured.
    pub fn host(&self) -> Option<&str> {
        self.host.as_deref()
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

/// Adds the application's handler to the MCP server of each session.
#[derive(Clone)]
pub(crate) struct McpApp(pub(crate) Arc<dyn Fn(McpServer) -> McpServer + Send + Sync>);

impl fmt::Debug for McpApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("McpApp")
    }
}

/// How [`crate::router`] serves: tokens and limits.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub(crate) tokens: Tokens,
    pub(crate) max_body_bytes: Option<usize>,
    /// The name and version `/mcp` reports in `serverInfo`, and its instructions.
    pub(crate) mcp_info: Option<(String, String)>,
    pub(crate) mcp_instructions: Option<String>,
    /// The application's handler for everything `/mcp` serves besides tools.
    pub(crate) mcp_app: Option<McpApp>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) agent: Option<Arc<Agent>>,
    /// The approvals page's side of the calls: made with the options, so that the chat agent's
    /// calls ask and report there too.
    pub(crate) page: crate::questions::PageSide,
    pub(crate) serving: crate::conn::Serving,
    pub(crate) links: SignInLinks,
    pub(crate) held_tools: Option<Arc<dyn crate::HeldTools>>,
}

impl ServerOptions {
    /// Options with these tokens and the default limits.
    pub fn new(tokens: Tokens) -> Self {
        let approver = tokens.approver().to_owned();
        ServerOptions {
            tokens,
            max_body_bytes: None,
            mcp_info: None,
            mcp_instructions: None,
            mcp_app: None,
            agent: None,
            page: crate::questions::PageSide::new(),
            links: SignInLinks::new(&approver),
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            serving: crate::conn::Serving::default(),
            held_tools: None,
        }
    }

    /// Where the API and the approvals page learn which imported tools are held for a changed
    /// definition, and approve the change (a gateway's imports).
    pub fn held_tools(mut self, source: Arc<dyn crate::HeldTools>) -> Self {
        self.held_tools = Some(source);
        self
    }

    /// The largest request body read; larger ones are answered 413 without being read. The
    /// default is the tool set's argument size limit plus room for the request's envelope.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = Some(bytes);
        self
    }

    /// The `Host` names requests may carry, on every route (default `localhost`, `127.0.0.1`,
    /// `::1`; an entry with a port allows only that port): the guard against DNS rebinding that
    /// the MCP specification asks of HTTP servers, which the API and the approvals page need as
    /// much. A server reached under another name lists it here; an empty list allows any name.
    /// A browser page may send to `/mcp` from an origin under these names, a loopback one, or
    /// the origin the request itself names; any other `Origin` is refused.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// The name and version `/mcp` reports to MCP clients in `serverInfo`: the application's,
    /// which a host shows its person and keys its configuration by (by default this crate's).
    pub fn mcp_server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.mcp_info = Some((name.into(), version.into()));
        self
    }

    /// What `/mcp` tells the client's model about the server in `initialize`'s `instructions`.
    pub fn mcp_instructions(mut self, text: impl Into<String>) -> Self {
        self.mcp_instructions = Some(text.into());
        self
    }

    /// Composes the application's own rmcp handler with the tools at `/mcp`: one MCP server
    /// whose tools are the executor's tool set (with its policy) and whose resources, prompts,
    /// completions, `logging/setLevel` and the rest are `handler`'s, with `handler`'s
    /// capabilities announced beside `tools` (see
    /// [`McpServer::with_app`](tool_mcp::server::McpServer::with_app)). Each MCP session gets
    /// its own clone of `handler`; state its sessions share goes behind an `Arc`.
    pub fn mcp_app<H: rmcp::ServerHandler + Clone>(mut self, handler: H) -> Self {
        self.mcp_app = Some(McpApp(Arc::new(move |server: McpServer| {
            server.with_app(handler.clone())
        })));
        self
    }

    /// Serves `POST /api/v1/chat` with this agent. Build it over the same executor the server
    /// serves, so that its calls that wait for a person are the pending operations the page
    /// shows, and a decision resumes the run. When the executor's store keeps agent runs (the
    /// built-in stores do) and the agent has no checkpoint settings of its own
    /// ([`Agent::with_checkpoints`]), its runs are checkpointed there, so that any replica
    /// answers for them and a restarted server resumes them. Its calls' questions go to the
    /// approvals page unless the agent has a host of its own ([`Agent::with_host`]), and their
    /// progress shows there while they run.
    pub fn chat(mut self, agent: Agent) -> Self {
        let mut agent =
            crate::routes::chat::durable(agent).with_progress(self.page.progress.clone());
        if agent.host().is_none() {
            agent = agent.with_host(self.page.host.clone());
        }
        self.agent = Some(Arc::new(agent));
        self
    }

    /// The tokens.
    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// How long a client has to send a request's line and headers once it starts one, or once
    /// it has opened a connection (default 10 s); a slower one is disconnected, so that idle
    /// or trickling connections cannot pile up. Applies to [`crate::serve`] and
    /// [`crate::serve_until`], not to a [`crate::router`] served by other means.
    pub fn header_read_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.serving.header_read_timeout = timeout;
        self
    }

    /// How long an MCP session at `/mcp` may go without a message before it is closed (default
    /// 60 s); a client whose session was closed starts a new one.
    pub fn mcp_session_idle_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.serving.sessions.idle_timeout = timeout;
        self
    }

    /// How many MCP sessions may be open at once (default 1,000, each some tens of KB); a
    /// request for one more is answered `503` with `Retry-After` and a JSON-RPC error.
    pub fn max_mcp_sessions(mut self, sessions: usize) -> Self {
        self.serving.sessions.max_sessions = sessions;
        self
    }

    /// How long the server-sent events answering an MCP request wait for its answer (default:
    /// until it comes). Past that the server ends the response, and the client, told by the
    /// stream's first event how long to wait (its `retry`), reconnects with `GET` and
    /// `Last-Event-ID` for the rest, again and again until the answer (MCP's SSE polling): a
    /// long tool call then holds no connection open through proxies that cut idle ones. The
    /// events are kept in this process, so a client reconnects to the same replica.
    pub fn mcp_poll_after(mut self, wait: std::time::Duration) -> Self {
        self.serving.sessions.poll_after = Some(wait);
        self
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
        let two = Tokens::new("a".repeat(20), "b".repeat(20)).unwrap();
        for shared in ["a".repeat(20), "b".repeat(20)] {
            assert_eq!(two.clone().with_host(shared).unwrap_err(), TokenError::Same);
        }
        assert_eq!(
            two.clone().with_host("c").unwrap_err(),
            TokenError::TooShort("host")
        );
        assert_eq!(
            two.with_host("c".repeat(20)).unwrap().host(),
            Some("c".repeat(20).as_str())
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
