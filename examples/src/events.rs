//! How the example agents report their calls on standard error, one line per event.
//!
//! Tool names, arguments, results and call ids come from the model or from a tool, so every one
//! of them is printed through [`visible`]: a call id carrying escape sequences is shown as text,
//! and cannot erase or rewrite the line that reports the call.

use tool_providers::agent::AgentEvent;
use tool_runtime::display::visible;

/// The most characters of a result shown on its line.
const RESULT_CHARS: usize = 300;

/// Prints a call as it starts (`→ tool {arguments}`), how far it is when it reports progress
/// (`… 3/10 message (call id)`), as it ends (`← tool [status] result (call id)`) and a run that
/// waits for approval.
pub fn print_event(e: &AgentEvent) {
    match e {
        AgentEvent::CallStarted {
            tool, arguments, ..
        } => eprintln!("→ {} {}", visible(tool), visible(&arguments.to_string())),
        AgentEvent::CallFinished {
            tool,
            status,
            result,
            call_id,
        } => {
            let mut text = result.to_string();
            if text.chars().count() > RESULT_CHARS {
                text = format!("{}…", text.chars().take(RESULT_CHARS).collect::<String>());
            }
            eprintln!(
                "← {} [{}] {}   (call {})",
                visible(tool),
                status.as_str(),
                visible(&text),
                visible(call_id)
            );
        }
        AgentEvent::CallProgress {
            call_id,
            progress,
            total,
            message,
        } => {
            let done = match total {
                Some(total) => format!("{progress}/{total}"),
                None => progress.to_string(),
            };
            let about = message.as_deref().map(visible).unwrap_or_default();
            eprintln!("… {done} {about}   (call {})", visible(call_id));
        }
        AgentEvent::Suspended { operations } => {
            eprintln!("⏸ waiting for approval: {operations:?}")
        }
        _ => {}
    }
}
