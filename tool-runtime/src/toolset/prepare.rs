//! Registration work spread over every core: typed tools' definitions derived and checks
//! compiled ahead ([`ToolSet::prepare`]), and a catalog's checks compiled
//! ([`ToolSet::register_catalog`]).
//!
//! A typed tool's definition and check are made once per process and kept (see `typed_check`),
//! so whichever thread makes them first makes them for every set. A process that registers many
//! typed tools at start-up can therefore spread that work over the machine's cores and then
//! register as usual, each registration finding its check ready. `toolset!` does this for the
//! tools it lists.

use std::num::NonZeroUsize;
use std::panic;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::ToolSet;
use crate::hydrate::typed::typed_check;
use crate::tool::Tool;

/// One typed tool's registration work, to be done ahead by [`ToolSet::prepare`].
#[derive(Clone, Copy)]
pub struct Prepare {
    run: fn(),
}

impl std::fmt::Debug for Prepare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepare").finish_non_exhaustive()
    }
}

impl Prepare {
    /// The work of registering `T`: its definition derived, its check compiled.
    pub const fn of<T: Tool>() -> Prepare {
        Prepare { run: prepare::<T> }
    }
}

fn prepare<T: Tool>() {
    // an error is not kept: the registration that follows meets it again and reports it
    drop(typed_check::<T>());
}

/// Below this many tools per thread, starting a thread costs more than it saves (a tool takes
/// tens of microseconds to prepare, a thread about as long to start).
const TOOLS_PER_THREAD: usize = 16;

impl ToolSet {
    /// Derives the definitions and compiles the checks of `tools` ahead of their registration,
    /// spread over the cores this process may use, so that the [`ToolSet::register`] calls that
    /// follow (in this or any other set) find them ready. Registration itself stays in the
    /// caller's order, and so do its errors: a tool that cannot be registered is reported by
    /// its `register`, not here. A panic while preparing (a definition that panics) is resumed
    /// on the calling thread.
    ///
    /// ```
    /// use tool_runtime::{ToolSet, tool, toolset::Prepare};
    ///
    /// /// Adds two numbers.
    /// #[tool(read_only)]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// ToolSet::prepare(&[Prepare::of::<add>()]);
    /// let set = ToolSet::new().with::<add>().unwrap();
    /// assert!(set.has_fast_path("add"));
    /// ```
    pub fn prepare(tools: &[Prepare]) {
        spread(tools.to_vec(), |tool| (tool.run)());
    }
}

/// `f` applied to every item, the items spread over the cores this process may use, the results
/// in the items' order. A panic in `f` is resumed on the calling thread once every thread has
/// stopped.
pub(crate) fn spread<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let threads = cores.min(items.len() / TOOLS_PER_THREAD);
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    // items take unequal time: each thread takes the next one left
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(i) else {
                return done;
            };
            let item = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(item) = item {
                done.push((i, f(item)));
            }
        }
    };
    let mut results = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for thread in others {
            match thread.join() {
                Ok(done) => all.extend(done),
                Err(payload) => panic::resume_unwind(payload),
            }
        }
        all
    });
    results.sort_unstable_by_key(|&(i, _)| i);
    results.into_iter().map(|(_, r)| r).collect()
}
