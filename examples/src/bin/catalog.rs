//! The catalog agent (seed 004): struct-form tools with verbatim schemas among ~400 declared
//! tools; `pick` narrows them to a few before each request.
//!
//! ```text
//! cargo run -p examples --bin catalog -- [--provider P] [--max N] QUESTION...
//! cargo run -p examples --bin catalog -- --pick "convert 10 miles to km"   # show the narrowing, no model
//! ```

use std::sync::Arc;

use examples::catalog;
use examples::events::print_event;
use examples::setup;
use tool_providers::agent::{Agent, AgentConfig};
use tool_providers::codec::ToolChoice;
use tool_providers::http::Provider;
use tool_runtime::executor::{ApproveAll, ExecutorConfig};

fn usage() -> ! {
    eprintln!(
        "usage: catalog [--provider P] [--max N] QUESTION...\n       catalog --pick QUERY [--max N]"
    );
    std::process::exit(2)
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!(
        "error: {}",
        tool_runtime::display::visible_lines(&e.to_string())
    );
    std::process::exit(1)
}

#[tokio::main]
async fn main() {
    examples::setup::init_logging();
    let mut provider: Option<Provider> = None;
    let mut max = 3usize;
    let mut pick_only = false;
    let mut question = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--provider" => {
                provider = Some(
                    it.next()
                        .unwrap_or_else(|| usage())
                        .parse()
                        .unwrap_or_else(|e| fail(e)),
                )
            }
            "--max" => {
                max = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--pick" => pick_only = true,
            "-h" | "--help" => usage(),
            _ => question.push(arg),
        }
    }
    if question.is_empty() {
        usage()
    }
    let q = question.join(" ");
    // Read-only tools only: nothing here needs a person's confirmation.
    let executor = catalog::executor(Arc::new(ApproveAll), ExecutorConfig::default())
        .unwrap_or_else(|e| fail(e));
    let total = executor.toolset().len();
    let picked = catalog::narrow(executor.toolset(), &q, max)
        .await
        .unwrap_or_else(|e| fail(e));
    eprintln!(
        "pick: {} of {total} tools declared: {:?}",
        picked.len(),
        picked.iter().map(|c| c.name()).collect::<Vec<_>>()
    );
    if pick_only {
        for c in &picked {
            println!("{}", serde_json::to_string(c).unwrap_or_else(|e| fail(e)));
        }
        return;
    }
    let choice = setup::choose(provider).unwrap_or_else(|e| fail(e));
    eprintln!("model: {}", choice.description);
    let config = AgentConfig {
        system: Some(catalog::SYSTEM.into()),
        session: Some("catalog-cli".into()),
        selection: Some(catalog::selection(max)),
        first_choice: choice.local.then_some(ToolChoice::Required),
        // The local 135M model may only answer once the results are back: left free it calls
        // the same tool again instead.
        choice: if choice.local {
            ToolChoice::None
        } else {
            ToolChoice::Auto
        },
        max_iterations: if choice.local { 2 } else { 6 },
        ..Default::default()
    };
    let agent = Agent::new(choice.model, executor, config).on_event(Arc::new(print_event));
    let r = agent.run(&q).await.unwrap_or_else(|e| fail(e));
    setup::print_status(&r);
    setup::print_usage(&r);
}
