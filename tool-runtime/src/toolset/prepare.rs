//! Registration work done ahead, on every core: deriving typed tools' definitions and compiling
//! their checks.
//!
//! Both are done once per process and kept (see `typed_check`), so whichever thread does them
//! first does them for every set. A process that registers many typed tools at start-up can
//! therefore spread that work over the machine's cores and then register as usual, each
//! registration finding its check ready. `toolset!` does this for the tools it lists.

use std::num::NonZeroUsize;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{ToolSet, typed_check};
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

/// Below this many tools per thread, starting a thread costs more than it saves (a typed tool
/// takes tens of microseconds to prepare, a thread about as long to start).
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
    /// use tool_runtime::{Prepare, ToolSet, tool};
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
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let threads = cores.min(tools.len() / TOOLS_PER_THREAD);
        if threads <= 1 {
            tools.iter().for_each(|t| (t.run)());
            return;
        }
        // tools take unequal time: each thread takes the next one left
        let next = AtomicUsize::new(0);
        let panicked = Mutex::new(None);
        let work = || {
            while let Some(tool) = tools.get(next.fetch_add(1, Ordering::Relaxed)) {
                if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(tool.run)) {
                    next.store(tools.len(), Ordering::Relaxed);
                    panicked
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(payload);
                }
            }
        };
        std::thread::scope(|s| {
            for _ in 1..threads {
                s.spawn(work);
            }
            work();
        });
        if let Some(payload) = panicked.into_inner().unwrap_or_else(|e| e.into_inner()) {
            panic::resume_unwind(payload);
        }
    }
}
