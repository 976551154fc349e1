//! The server and the client of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`).
//!
//! ```text
//! cargo run -p examples --bin conformance -- serve [--addr 127.0.0.1:8080] [--without-token]
//! cargo run -p examples --bin conformance -- client [--scenario NAME] URL
//! ```
//! `client` runs one of the suite's client scenarios (`examples::conformance::client`): the
//! suite starts a server for it and appends its URL.
//! `serve` serves the suite's fixtures (`examples::conformance`) as the other apps serve theirs,
//! through `tool-server`: MCP at `/mcp` (tools from the tool set through the executor; resources,
//! prompts and completions from the application's handler), the JSON API and the approvals page,
//! with the bearer tokens of `TOOLS_AGENT_TOKEN` and `TOOLS_APPROVER_TOKEN` (fresh ones on a
//! loopback address without them).
//!
//! The suite's client cannot send an `Authorization` header. `--without-token` lets it in: a
//! request that carries no credential is given the agent's token before the server sees it, so
//! every check of the server (the token's role, the sessions bound to it, the Host and Origin
//! guards) runs as for any client, and the client gets what an agent gets: it lists and calls,
//! and never approves. That mode serves on a loopback address only and refuses any other, since
//! it hands the agent's rights to whoever can connect.

use std::net::SocketAddr;
use std::process::ExitCode;

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use clap::{Parser, Subcommand};
use examples::cli::DEFAULT_ADDR;
use examples::conformance;
use tool_server::{ServerOptions, Tokens};

/// The MCP conformance suite's server.
#[derive(Parser)]
#[command(name = "conformance", disable_help_subcommand = true)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the fixtures over HTTP: MCP at /mcp, the JSON API and the approvals page
    Serve {
        /// The address to listen on (a non-loopback one needs TOOLS_AGENT_TOKEN and
        /// TOOLS_APPROVER_TOKEN, and is refused with --without-token)
        #[arg(long, value_name = "HOST:PORT", default_value = DEFAULT_ADDR)]
        addr: SocketAddr,
        /// Serve clients that send no bearer token as the agent (loopback addresses only), for
        /// the suite, whose client cannot send one
        #[arg(long)]
        without_token: bool,
    },
    /// Run one client scenario of the suite against the server at URL (the suite appends it)
    Client {
        /// The scenario (else $MCP_CONFORMANCE_SCENARIO, which the suite sets)
        #[arg(long)]
        scenario: Option<String>,
        /// The server the suite started for the scenario
        url: String,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    examples::setup::init_logging();
    let (addr, without_token) = match Args::parse().command {
        Command::Serve {
            addr,
            without_token,
        } => (addr, without_token),
        Command::Client { scenario, url } => {
            let Some(scenario) =
                scenario.or_else(|| std::env::var("MCP_CONFORMANCE_SCENARIO").ok())
            else {
                eprintln!("which scenario: --scenario NAME, or MCP_CONFORMANCE_SCENARIO");
                return ExitCode::from(2);
            };
            return match conformance::client::run(&scenario, &url).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("{scenario}: {e}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    if without_token && !addr.ip().is_loopback() {
        eprintln!(
            "refusing to serve on {addr} without a token: --without-token gives the agent's \
             rights to every client that connects, so it serves on a loopback address only"
        );
        return ExitCode::from(2);
    }
    let tokens = match Tokens::from_env() {
        Ok(Some(t)) => t,
        Ok(None) => Tokens::generate(),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let executor = match conformance::executor() {
        Ok(executor) => executor,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let options = ServerOptions::new(tokens.clone())
        .mcp_server_info("mcp-conformance-server", env!("CARGO_PKG_VERSION"))
        .mcp_instructions(
            "The fixtures of the MCP conformance suite: tools, resources, prompts and \
             completions that exist to be tested.",
        )
        .mcp_app(conformance::Fixtures)
        .mcp_poll_after(conformance::POLL_AFTER);
    let listener = match tool_server::bind(addr, &options).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().unwrap_or(addr);
    if !without_token {
        if tokens.generated() {
            eprintln!("agent token (TOOLS_AGENT_TOKEN): {}", tokens.agent());
        }
        // the address line comes last: scripts read up to it
        eprintln!("MCP: http://{local}/mcp");
        return match tool_server::serve_on(listener, executor, options).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let bearer = HeaderValue::from_str(&format!("Bearer {}", tokens.agent()))
        .expect("a token is visible ASCII");
    let app = tool_server::router(executor, options).layer(axum::middleware::from_fn(
        move |mut request: Request, next: Next| {
            let bearer = bearer.clone();
            async move {
                if !request.headers().contains_key(header::AUTHORIZATION) {
                    request.headers_mut().insert(header::AUTHORIZATION, bearer);
                }
                next.run(request).await
            }
        },
    ));
    eprintln!("MCP: http://{local}/mcp  (clients without a token are served as the agent)");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("serving on {local}: {e}");
            ExitCode::FAILURE
        }
    }
}
