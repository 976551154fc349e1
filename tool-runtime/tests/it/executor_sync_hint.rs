//! A sync tool's body runs on the threads for sync bodies, a hand-off that costs more than a body
//! that never blocks. The runtime measures the first 1,000 bodies of each sync tool and, when none
//! of them waited and nearly all ran within 50 µs of CPU, tells the author once, with an `INFO`
//! event, that `#[tool(non_blocking)]` would call it in place. One body that waits ends the watch
//! without a word, and a tool already called in place is never measured.

use crate::executor_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use executor_support::{Person, executor, quick};
use tool_runtime::{CallContext, Executor, ToolCall, ToolSet, tool, toolset};

/// Doubles a number: a body that never blocks.
#[tool(read_only)]
fn double_quickly(
    /// The number.
    n: i64,
) -> i64 {
    n * 2
}

/// Doubles a number, after a nap when it is 0: one slow body among quick ones.
#[tool(read_only)]
fn double_after_a_nap(
    /// The number.
    n: i64,
) -> i64 {
    if n == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    n * 2
}

/// Doubles a number, called in place.
#[tool(read_only, non_blocking)]
fn double_in_place(
    /// The number.
    n: i64,
) -> i64 {
    n * 2
}

/// The events of the sync-body watch: their message and fields, one line each.
#[derive(Clone, Default)]
struct Hints(Arc<Mutex<Vec<String>>>);

/// An executor of `set`, and the watch's events on this thread until the guard is dropped.
fn watched(set: ToolSet) -> (Hints, tracing::subscriber::DefaultGuard, Executor) {
    use tracing_subscriber::layer::SubscriberExt;
    let hints = Hints::default();
    let guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(hints.clone()));
    let (exec, _) = executor(set, quick(), &Person::default());
    (hints, guard, exec)
}

impl Hints {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

struct Line<'a>(&'a mut String);

impl tracing::field::Visit for Line<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Hints {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() == "tool_runtime::bodies" {
            let mut line = format!("{}", event.metadata().level());
            event.record(&mut Line(&mut line));
            self.0.lock().unwrap().push(line);
        }
    }
}

async fn call_times(exec: &Executor, tool: &str, numbers: impl Iterator<Item = i64>) {
    for n in numbers {
        let r = exec
            .call(
                &ToolCall::new("c", tool, format!(r#"{{"n":{n}}}"#)),
                CallContext::new("t"),
            )
            .await;
        assert_eq!(r.value(), Some(&serde_json::json!(n * 2)), "{tool}({n})");
    }
}

#[tokio::test]
async fn quick_sync_bodies_point_their_author_to_non_blocking_once() {
    let (hints, _guard, exec) = watched(toolset![double_quickly].unwrap());

    call_times(&exec, "double_quickly", 1..1000).await;
    assert_eq!(
        hints.lines(),
        Vec::<String>::new(),
        "told before 1,000 bodies"
    );

    call_times(&exec, "double_quickly", 1000..1001).await;
    let lines = hints.lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let hint = &lines[0];
    assert!(hint.starts_with("INFO "), "{hint}");
    for part in [
        "tool `double_quickly`",
        "none of its first 1000 sync bodies waited",
        "`#[tool(non_blocking)]`",
        "tool=\"double_quickly\"",
        "bodies=1000",
    ] {
        assert!(hint.contains(part), "{part:?} not in {hint}");
    }
    let longest: u64 = hint
        .split(" longest_us=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no longest_us in {hint}"));
    assert!(longest <= 50, "{hint}");

    call_times(&exec, "double_quickly", 0..300).await;
    assert_eq!(hints.lines().len(), 1, "told more than once");
}

#[tokio::test]
async fn one_slow_body_ends_the_watch_without_a_word() {
    let (hints, _guard, exec) = watched(toolset![double_after_a_nap].unwrap());
    call_times(&exec, "double_after_a_nap", 1..500).await;
    call_times(&exec, "double_after_a_nap", 0..1).await;
    call_times(&exec, "double_after_a_nap", 1..1200).await;
    assert_eq!(hints.lines(), Vec::<String>::new());
}

#[tokio::test]
async fn a_body_called_in_place_is_not_watched() {
    let (hints, _guard, exec) = watched(toolset![double_in_place].unwrap());
    call_times(&exec, "double_in_place", 0..1200).await;
    assert_eq!(hints.lines(), Vec::<String>::new());
}
