//! Which MCP servers to import and how far to trust them: one [`ServerConfig`] per server, read
//! from the `mcpServers` JSON that desktop MCP hosts write, or built in code.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use tool_runtime::definition::Safety;

use super::ClientError;
use super::oauth::OAuthConfig;

/// One MCP server: how to reach it and how its tools are imported.
///
/// The transport is a child process (`command`, with `args`, `env`, `cwd`) or streamable HTTP
/// (`url`, with `headers`); exactly one of `command` and `url` is given. Values of `env` and
/// `headers` written `${NAME}` are read from this process's environment when the server is
/// connected, so secrets live in the environment, not in the file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerConfig {
    /// The program that serves MCP on its stdin and stdout.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment, added to this process's (`${NAME}` values read from it).
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// The server's streamable HTTP endpoint.
    pub url: Option<String>,
    /// Headers sent with every HTTP request (`${NAME}` values read from the environment).
    pub headers: BTreeMap<String, String>,
    /// OAuth 2.1 authorization of an HTTP server that asks for it (a `401` with a
    /// `WWW-Authenticate` challenge): without it, such a server cannot be connected.
    pub oauth: Option<OAuthConfig>,
    /// Desktop hosts' marker of the transport (`stdio`, `http`, `streamable-http`); read and
    /// checked against `command`/`url`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Whether the server's annotations decide its tools' categories.
    pub trust: Trust,
    /// The prefix of its tools' names (`<prefix>__<tool>`); the server's name when absent.
    pub prefix: Option<String>,
    /// A category per tool (by the server's name for it), over what `trust` gives.
    pub categories: BTreeMap<String, Safety>,
    /// Only these tools are imported (by the server's names), when given.
    pub allow: Option<Vec<String>>,
    /// These tools are never imported.
    pub deny: Vec<String>,
    /// Refuse a tool whose description or schema reads like instructions to the model (the
    /// executor's injection check); by default such a tool is imported and flagged.
    pub refuse_suspicious: bool,
}

/// How far a server's own description of its tools is believed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Annotations are a third party's hints and decide nothing: every tool is
    /// [`Safety::Unspecified`], confirmed like a modifying tool and gated like an external one.
    #[default]
    None,
    /// `readOnlyHint` makes a tool read-only, `destructiveHint` (true unless the server says
    /// false) modifying, anything else creating; `idempotentHint` lets failed calls be retried.
    Annotations,
}

/// How the server is reached, resolved from a [`ServerConfig`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transport<'a> {
    Stdio(&'a str),
    Http(&'a str),
}

impl ServerConfig {
    /// A server started as `command` with `args`.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ServerConfig {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// A server reached at `url` over streamable HTTP.
    pub fn http(url: impl Into<String>) -> Self {
        ServerConfig {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// The same, with its annotations trusted.
    pub fn trusting_annotations(mut self) -> Self {
        self.trust = Trust::Annotations;
        self
    }

    pub(crate) fn transport(&self, name: &str) -> Result<Transport<'_>, ClientError> {
        let wrong = |why: &str| ClientError::Config {
            server: name.to_owned(),
            message: why.to_owned(),
        };
        let transport = match (&self.command, &self.url) {
            (Some(c), None) if !c.trim().is_empty() => Transport::Stdio(c),
            (None, Some(u)) if u.starts_with("http://") || u.starts_with("https://") => {
                Transport::Http(u)
            }
            (None, Some(_)) => return Err(wrong("`url` must be an http:// or https:// URL")),
            (Some(_), Some(_)) => {
                return Err(wrong(
                    "give either `command` (stdio) or `url` (HTTP), not both",
                ));
            }
            _ => return Err(wrong("give `command` (stdio) or `url` (streamable HTTP)")),
        };
        if self.oauth.is_some() && matches!(transport, Transport::Stdio(_)) {
            return Err(wrong(
                "`oauth` authorizes a server reached over HTTP (`url`), not a `command`",
            ));
        }
        match (self.kind.as_deref(), &transport) {
            (None | Some("stdio"), Transport::Stdio(_))
            | (None | Some("http" | "streamable-http" | "streamableHttp"), Transport::Http(_)) => {
                Ok(transport)
            }
            (Some(kind), _) => Err(wrong(&format!(
                "`type` {kind:?} does not match the transport its `command`/`url` gives"
            ))),
        }
    }

    /// The name prefix of the server's tools.
    pub(crate) fn prefix<'a>(&'a self, name: &'a str) -> &'a str {
        self.prefix.as_deref().unwrap_or(name)
    }

    /// The server in words for a person at a first-time gate: its name, and the command that
    /// starts it or its URL (without credentials or query). The environment and headers are
    /// left out: they may hold secrets.
    pub(crate) fn described(&self, name: &str) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut line = command.clone();
                for arg in &self.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                format!("MCP server {name}, started on this machine as `{line}`")
            }
            (None, Some(url)) => {
                let url = url.split(['?', '#']).next().unwrap_or_default();
                let url = match url.split_once("://") {
                    Some((scheme, rest)) => {
                        let rest = rest.split_once('@').map_or(rest, |(_, host)| host);
                        format!("{scheme}://{rest}")
                    }
                    None => url.to_owned(),
                };
                format!("MCP server {name} at {url}")
            }
            (None, None) => format!("MCP server {name}"),
        }
    }

    /// Whether the server's tool `tool` is imported at all.
    pub(crate) fn admits(&self, tool: &str) -> bool {
        let allowed = (self.allow.as_ref()).is_none_or(|a| a.iter().any(|t| t == tool));
        allowed && !self.deny.iter().any(|t| t == tool)
    }
}

/// The `mcpServers` file desktop MCP hosts use (`{"mcpServers": {"NAME": {...}}}`), each entry a
/// [`ServerConfig`]; the servers by name. An unknown key in an entry is refused, naming it, so a
/// misspelt `trust` or `deny` is never silently ignored.
pub fn read_servers_json(text: &str) -> Result<BTreeMap<String, ServerConfig>, ClientError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct File {
        mcp_servers: BTreeMap<String, ServerConfig>,
    }
    let file: File = serde_json::from_str(text).map_err(|e| ClientError::Config {
        server: String::new(),
        message: format!("not an mcpServers file: {e}"),
    })?;
    for (name, server) in &file.mcp_servers {
        check_name(name)?;
        server.transport(name)?;
    }
    Ok(file.mcp_servers)
}

/// The servers of a configuration file's `[mcp.servers.NAME]` tables
/// ([`McpConfig`](tool_runtime::executor::McpConfig)), each read as a [`ServerConfig`] with the
/// same keys as an `mcpServers` entry, by name. An unknown key is refused, naming it.
pub fn read_servers_config(
    config: &tool_runtime::executor::McpConfig,
) -> Result<BTreeMap<String, ServerConfig>, ClientError> {
    let mut servers = BTreeMap::new();
    for (name, table) in &config.servers {
        check_name(name)?;
        let server: ServerConfig =
            serde_json::from_value(table.clone()).map_err(|e| ClientError::Config {
                server: name.clone(),
                message: format!("[mcp.servers.{name}]: {e}"),
            })?;
        server.transport(name)?;
        servers.insert(name.clone(), server);
    }
    Ok(servers)
}

/// A server's name becomes its tools' prefix: it must fit in a tool name.
pub(crate) fn check_name(name: &str) -> Result<(), ClientError> {
    let fits = !name.is_empty()
        && name.len() <= 32
        && (name.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if fits {
        Ok(())
    } else {
        Err(ClientError::Config {
            server: name.to_owned(),
            message: "a server's name is its tools' prefix: 1 to 32 of a-z, A-Z, 0-9, _ and -"
                .to_owned(),
        })
    }
}

/// `value`, or the environment variable it names when it is written `${NAME}`.
pub(crate) fn resolve(server: &str, value: &str) -> Result<String, ClientError> {
    let Some(var) = value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) else {
        return Ok(value.to_owned());
    };
    std::env::var(var).map_err(|_| ClientError::Config {
        server: server.to_owned(),
        message: format!("the environment variable {var} is not set"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_desktop_hosts_file_is_read_as_is() {
        let servers = read_servers_json(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"],
                       "env": {"TOKEN": "${FS_TOKEN}"}},
                "remote": {"type": "http", "url": "https://example.test/mcp",
                           "headers": {"Authorization": "Bearer ${REMOTE}"}, "trust": "annotations"}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            servers["fs"].transport("fs").unwrap(),
            Transport::Stdio("npx")
        );
        assert_eq!(servers["fs"].trust, Trust::None);
        assert_eq!(servers["remote"].trust, Trust::Annotations);
        assert_eq!(
            servers["remote"].transport("remote").unwrap(),
            Transport::Http("https://example.test/mcp")
        );
    }

    #[test]
    fn a_wrong_entry_is_refused_naming_it() {
        let cases = [
            (r#"{"mcpServers": {"a": {}}}"#, "give `command`"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}"#,
                "not both",
            ),
            (r#"{"mcpServers": {"a": {"url": "ftp://h"}}}"#, "http://"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "type": "http"}}}"#,
                "`type`",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "trsut": "annotations"}}}"#,
                "trsut",
            ),
            (r#"{"mcpServers": {"a b": {"command": "x"}}}"#, "prefix"),
            (r#"{"servers": {}}"#, "mcpServers"),
        ];
        for (text, says) in cases {
            let e = read_servers_json(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn the_configuration_files_servers_are_read_with_the_same_keys() {
        let config: tool_runtime::executor::ExecutorConfig = toml::from_str(
            r#"
            [mcp.servers.fs]
            command = "npx"
            args = ["-y", "server-filesystem", "/tmp"]
            trust = "annotations"
            categories = { write_file = "modify" }
            deny = ["move_file"]

            [mcp.servers.remote]
            url = "https://example.test/mcp"
            headers = { Authorization = "Bearer ${REMOTE}" }
            "#,
        )
        .unwrap();
        let servers = read_servers_config(&config.mcp).unwrap();
        assert_eq!(servers["fs"], {
            let mut fs = ServerConfig::stdio("npx", ["-y", "server-filesystem", "/tmp"])
                .trusting_annotations();
            fs.categories.insert("write_file".into(), Safety::Modify);
            fs.deny = vec!["move_file".into()];
            fs
        });
        assert_eq!(
            servers["remote"].transport("remote").unwrap(),
            Transport::Http("https://example.test/mcp")
        );
        let wrong: tool_runtime::executor::ExecutorConfig =
            toml::from_str("[mcp.servers.fs]\ncommand = \"x\"\ntrsut = \"annotations\"\n").unwrap();
        let e = read_servers_config(&wrong.mcp).unwrap_err().to_string();
        assert!(e.contains("trsut") && e.contains("[mcp.servers.fs]"), "{e}");
    }

    #[test]
    fn oauth_is_read_from_both_files_and_only_for_http() {
        let servers = read_servers_json(
            r#"{"mcpServers": {"saas": {"url": "https://mcp.example.com/mcp", "oauth": {
                "clientId": "${SAAS_ID}", "clientSecret": "${SAAS_SECRET}",
                "scopes": ["read", "write"], "redirectPort": 8765}}}}"#,
        )
        .unwrap();
        let oauth = servers["saas"].oauth.as_ref().unwrap();
        assert_eq!(oauth.client_id.as_deref(), Some("${SAAS_ID}"));
        assert_eq!(oauth.scopes, ["read", "write"]);
        assert_eq!(oauth.redirect_port, Some(8765));
        assert_eq!(oauth.grant, crate::client::Grant::AuthorizationCode);
        // its secret is never shown, even in a debug print of the configuration
        let secret = OAuthConfig {
            client_secret: Some("literal-secret".into()),
            ..OAuthConfig::default()
        };
        assert!(!format!("{secret:?}").contains("literal-secret"));
        let config: tool_runtime::executor::ExecutorConfig = toml::from_str(
            "[mcp.servers.saas]\nurl = \"https://mcp.example.com/mcp\"\n\
             [mcp.servers.saas.oauth]\ngrant = \"client_credentials\"\n\
             clientId = \"machine\"\nclientSecret = \"${SAAS_SECRET}\"\n",
        )
        .unwrap();
        let servers = read_servers_config(&config.mcp).unwrap();
        let oauth = servers["saas"].oauth.as_ref().unwrap();
        assert_eq!(oauth.grant, crate::client::Grant::ClientCredentials);
        // a machine client with its private key, and enterprise-managed authorization
        let config: tool_runtime::executor::ExecutorConfig = toml::from_str(
            "[mcp.servers.signed]\nurl = \"https://mcp.example.com/mcp\"\n\
             [mcp.servers.signed.oauth]\ngrant = \"client_credentials\"\n\
             clientId = \"machine\"\nclientKeyFile = \"/etc/tools/machine.pem\"\n\
             clientKeyAlgorithm = \"ES256\"\nkeepTokens = true\n\
             [mcp.servers.corp]\nurl = \"https://mcp.example.com/mcp\"\n\
             [mcp.servers.corp.oauth]\ngrant = \"enterprise_managed\"\n\
             clientId = \"corp\"\nclientSecret = \"${CORP_SECRET}\"\n\
             [mcp.servers.corp.oauth.identityProvider]\nissuer = \"https://idp.example.com\"\n\
             tokenEndpoint = \"https://idp.example.com/token\"\nclientId = \"tools\"\n\
             idTokenFile = \"/run/user/1000/id_token\"\n",
        )
        .unwrap();
        let servers = read_servers_config(&config.mcp).unwrap();
        let signed = servers["signed"].oauth.as_ref().unwrap();
        assert_eq!(
            signed.client_key_file.as_deref(),
            Some(std::path::Path::new("/etc/tools/machine.pem"))
        );
        assert_eq!(signed.client_key_algorithm.as_deref(), Some("ES256"));
        assert!(signed.keep_tokens && signed.token_file.is_none());
        let corp = servers["corp"].oauth.as_ref().unwrap();
        assert_eq!(corp.grant, crate::client::Grant::EnterpriseManaged);
        let idp = corp.identity_provider.as_ref().unwrap();
        assert_eq!(idp.token_endpoint, "https://idp.example.com/token");
        assert_eq!(
            idp.id_token_file.as_deref(),
            Some(std::path::Path::new("/run/user/1000/id_token"))
        );
        // the key and the identity assertion are never shown either
        let secrets = OAuthConfig {
            client_key: Some("-----BEGIN PRIVATE KEY-----literal-key".into()),
            identity_provider: Some(crate::client::IdentityProvider {
                id_token: Some("literal-id-token".into()),
                client_secret: Some("literal-idp-secret".into()),
                ..Default::default()
            }),
            ..OAuthConfig::default()
        };
        let shown = format!("{secrets:?}");
        for secret in ["literal-key", "literal-id-token", "literal-idp-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        for (text, says) in [
            (
                r#"{"mcpServers": {"a": {"command": "x", "oauth": {}}}}"#,
                "over HTTP",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "oauth": {"scope": "x"}}}}"#,
                "scope",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "oauth": {
                    "identityProvider": {"issuer": "https://i", "idtoken": "x"}}}}}"#,
                "idtoken",
            ),
        ] {
            let e = read_servers_json(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn secrets_come_from_the_environment() {
        assert_eq!(resolve("s", "plain").unwrap(), "plain");
        let e = resolve("s", "${TOOL_MCP_SURELY_UNSET}").unwrap_err();
        assert!(e.to_string().contains("TOOL_MCP_SURELY_UNSET"), "{e}");
        let path = std::env::var("PATH").unwrap();
        assert_eq!(resolve("s", "${PATH}").unwrap(), path);
    }

    #[test]
    fn a_server_is_described_by_its_command_or_its_url_without_credentials() {
        let stdio = ServerConfig::stdio("npx", ["-y", "@scope/server", "/srv"]);
        assert_eq!(
            stdio.described("fs"),
            "MCP server fs, started on this machine as `npx -y @scope/server /srv`"
        );
        let http = ServerConfig::http("https://user:secret@api.example.com/mcp?key=abc");
        assert_eq!(
            http.described("api"),
            "MCP server api at https://api.example.com/mcp"
        );
    }
}
