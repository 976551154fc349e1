//! The threads a sync tool's body runs on.
//!
//! A sync body may block, so it never runs on a thread that polls futures: there it would hold
//! the thread that has to notice the executor's timeout. tokio's blocking pool would serve, but a
//! job handed to it wakes a sleeping thread, and the thread sleeps again after every job: two or
//! three context switches per call, which cost more than a trivial call itself when many are in
//! flight. Here long-lived threads, one per core, take bodies from one queue, and a thread that
//! finishes one takes the next without sleeping; only an idle thread is woken.
//!
//! A fixed set of threads would let bodies that block hold them all, and queue every other body
//! behind them until its call timed out. So the pool grows: a watchdog thread looks at the queue
//! every [`STALL`] while there is work, and when bodies waited that long without any thread taking
//! one (every thread is in a body that has not returned), it starts one more thread. A body thus
//! waits at most about twice [`STALL`] for a thread, however many bodies block, up to
//! [`MAX_THREADS`] threads (tokio's own limit for its blocking pool; past it bodies queue). Threads
//! started that way end after [`KEEP_ALIVE`] without work; the first ones stay.
//!
//! A body runs inside the tokio runtime context of the task that handed it over (as a
//! `spawn_blocking` closure does), so it may use `Handle::current()`. Its panic is caught on its
//! thread and handed back; the thread goes on with the next body.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
#[cfg(not(target_os = "linux"))]
use std::time::Instant;

/// How long queued bodies may wait without a thread taking any before the pool grows.
const STALL: Duration = Duration::from_millis(10);

/// How long a thread the pool grew by waits for work before it ends.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// The most threads the pool grows to.
const MAX_THREADS: usize = 512;

/// Periods of [`STALL`] without work after which the watchdog sleeps until a body is queued.
const QUIET_PERIODS: u32 = 100;

type Job = Box<dyn FnOnce() + Send>;

/// What a body's caller gets back when the body did not return.
pub(crate) enum Lost {
    /// The body panicked: its payload.
    Panicked(Box<dyn std::any::Any + Send>),
    /// The body was dropped without running (the process is ending).
    Dropped,
}

struct Pool {
    state: Mutex<State>,
    /// Idle threads wait here for a job.
    work: Condvar,
    /// The watchdog waits here: a period, or until a job is queued when it sleeps.
    watch: Condvar,
}

struct State {
    queue: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
    /// Idle threads woken for a job that have not yet taken the lock: not woken again for the
    /// next job, which would be a wake-up for nothing.
    waking: usize,
    /// Threads alive.
    threads: usize,
    /// Jobs taken from the queue so far: the watchdog's measure of progress.
    taken: u64,
    /// The watchdog sleeps until a job is queued.
    watch_asleep: bool,
}

static POOL: LazyLock<&'static Pool> = LazyLock::new(|| {
    let pool: &'static Pool = Box::leak(Box::new(Pool {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            idle: 0,
            waking: 0,
            threads: 0,
            taken: 0,
            watch_asleep: false,
        }),
        work: Condvar::new(),
        watch: Condvar::new(),
    }));
    let first = std::thread::available_parallelism().map_or(2, |n| n.get());
    for _ in 0..first {
        pool.start_thread(false);
    }
    std::thread::Builder::new()
        .name("tool-body-watch".into())
        .spawn(move || pool.watch())
        .expect("the tool-body watchdog thread starts");
    pool
});

/// Runs `body` on the pool within `handle`'s runtime context and waits for it without blocking;
/// `timed`: how the body ran on its thread is measured and handed back with its result. Once the
/// returned future has been polled, the body runs to its end even if the future is dropped
/// before it ends.
pub(crate) async fn run<T, F>(
    handle: tokio::runtime::Handle,
    timed: bool,
    body: F,
) -> Result<(T, Option<Ran>), Lost>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    POOL.submit(Box::new(move || {
        let _context = handle.enter();
        let start = if timed { Usage::now() } else { None };
        let result = std::panic::catch_unwind(AssertUnwindSafe(body))
            .map(|value| (value, start.and_then(|s| s.since())))
            .map_err(Lost::Panicked);
        // the caller may have stopped waiting: the result is dropped then
        let _ = tx.send(result);
    }));
    rx.await.unwrap_or(Err(Lost::Dropped))
}

/// How a body ran on its thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ran {
    /// The processor time it took.
    cpu: Duration,
    /// Whether it gave up its thread to wait (IO, a lock, a sleep): a voluntary context switch.
    waited: bool,
}

/// The thread's processor time and voluntary context switches so far; where the system does not
/// tell them apart from the wall clock, the wall clock, and no switches.
#[derive(Clone, Copy)]
struct Usage {
    #[cfg(target_os = "linux")]
    cpu: Duration,
    #[cfg(target_os = "linux")]
    switches: i64,
    #[cfg(not(target_os = "linux"))]
    at: Instant,
}

impl Usage {
    /// The thread's processor time from its scheduler clock (`CLOCK_THREAD_CPUTIME_ID`, exact to
    /// the nanosecond; getrusage's is only brought up to date at the scheduler's ticks, so it
    /// jumps), and its voluntary context switches from getrusage.
    #[cfg(target_os = "linux")]
    fn now() -> Option<Usage> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: clock_gettime and getrusage write the struct each is given and nothing else, and
        // a zeroed rusage is a valid one
        let ru = unsafe {
            if libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) != 0
                || libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) != 0
            {
                return None;
            }
            ru.assume_init()
        };
        Some(Usage {
            cpu: Duration::from_secs(u64::try_from(ts.tv_sec).unwrap_or(0))
                + Duration::from_nanos(u64::try_from(ts.tv_nsec).unwrap_or(0)),
            switches: ru.ru_nvcsw,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn now() -> Option<Usage> {
        Some(Usage { at: Instant::now() })
    }

    /// How the thread ran from `self` to now.
    fn since(self) -> Option<Ran> {
        let now = Usage::now()?;
        #[cfg(target_os = "linux")]
        return Some(Ran {
            cpu: now.cpu.saturating_sub(self.cpu),
            waited: now.switches > self.switches,
        });
        #[cfg(not(target_os = "linux"))]
        Some(Ran {
            cpu: now.at.duration_since(self.at),
            waited: false,
        })
    }
}

/// A body that takes this little processor time and never waits holds a thread no longer than
/// tokio's guidance for the time a task may run between two awaits.
const QUICK_BODY: Duration = Duration::from_micros(50);

/// Bodies measured before the author is told.
const WATCHED: u32 = 1_000;

/// Of those, how many may take longer than [`QUICK_BODY`]: a trivial body is charged 50-160 µs
/// about once in 500 runs (interrupts handled on its thread's time, on a virtual machine), which
/// says nothing about the body.
const SLOW_ALLOWED: u32 = WATCHED / 50;

/// What one sync tool's bodies have shown: whether its first 1,000 ran without once waiting (for
/// IO, a lock, a sleep: a voluntary context switch of their thread) and all but 2% of them within
/// 50 µs of processor time. Each paid a hand-off to the pool and back, which costs more than such
/// a body itself (a few microseconds of CPU and two context switches, see BENCHMARKS.md), and only
/// the author can say that the body never blocks. So when they were quick, the author is told
/// once, with a `tracing` event at `INFO`, that `#[tool(non_blocking)]` would call it in place. A
/// body that waited, or more slow ones than that, end the watch without a word; after the verdict
/// bodies are not measured. Processor time rather than the wall clock, so that a thread preempted
/// in the middle of a quick body does not make it a slow one (on Linux; elsewhere the wall clock).
pub struct BodyTimes {
    tool: &'static str,
    measured: AtomicU32,
    slow: AtomicU32,
    /// The most processor time a quick body took.
    longest_ns: AtomicU64,
    settled: AtomicBool,
}

impl BodyTimes {
    /// The record of the tool named `tool`, kept in a `static` beside its body.
    pub const fn new(tool: &'static str) -> Self {
        BodyTimes {
            tool,
            measured: AtomicU32::new(0),
            slow: AtomicU32::new(0),
            longest_ns: AtomicU64::new(0),
            settled: AtomicBool::new(false),
        }
    }

    /// Whether the next body should be measured.
    pub(crate) fn watching(&self) -> bool {
        !self.settled.load(Ordering::Relaxed)
    }

    /// Notes how one body ran; tells the author when this one completes the watch and the bodies
    /// were quick.
    pub(crate) fn record(&self, ran: Ran) {
        if ran.waited {
            self.settled.store(true, Ordering::Relaxed);
            return;
        }
        if ran.cpu > QUICK_BODY {
            if self.slow.fetch_add(1, Ordering::Relaxed) + 1 > SLOW_ALLOWED {
                self.settled.store(true, Ordering::Relaxed);
                return;
            }
        } else {
            let nanos = u64::try_from(ran.cpu.as_nanos()).unwrap_or(u64::MAX);
            self.longest_ns.fetch_max(nanos, Ordering::Relaxed);
        }
        if self.measured.fetch_add(1, Ordering::Relaxed) + 1 != WATCHED
            || self.settled.swap(true, Ordering::Relaxed)
        {
            return;
        }
        let quick = WATCHED - self.slow.load(Ordering::Relaxed).min(WATCHED);
        let longest_us = self.longest_ns.load(Ordering::Relaxed).div_ceil(1_000);
        tracing::info!(
            tool = self.tool,
            bodies = WATCHED,
            quick,
            longest_us,
            "tool `{}`: none of its first {WATCHED} sync bodies waited, {quick} of them ran within {longest_us} µs of CPU, and each call handed its body to another thread and back, which costs more than that; if the body never blocks (no IO, no lock held long, no sleeping), `#[tool(non_blocking)]` calls it in place, on the thread that polls the call",
            self.tool
        );
    }
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        // jobs run outside the lock and catch their panics: nothing panics while it is held
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn submit(&'static self, job: Job) {
        let mut state = self.lock();
        state.queue.push_back(job);
        if state.idle > state.waking {
            state.waking += 1;
            self.work.notify_one();
        }
        if state.watch_asleep {
            state.watch_asleep = false;
            self.watch.notify_one();
        }
    }

    /// Starts a thread; `grown`: one the watchdog adds, which ends when it has been idle for
    /// [`KEEP_ALIVE`]. A thread the system refuses is not counted (the watchdog tries again at
    /// its next look while bodies wait).
    fn start_thread(&'static self, grown: bool) {
        // counted before it starts, so that its end never comes before its count
        self.lock().threads += 1;
        let started = std::thread::Builder::new()
            .name("tool-body".into())
            .spawn(move || self.serve(grown));
        if started.is_err() {
            self.lock().threads -= 1;
        }
    }

    fn serve(&self, grown: bool) {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.queue.pop_front() {
                state.taken += 1;
                drop(state);
                // a job catches its body's panic; this catches one from dropping an answer nobody
                // waits for (a panic payload whose drop panics), which would end the thread, and
                // leaks that payload rather than drop it here
                if let Err(payload) = std::panic::catch_unwind(AssertUnwindSafe(job)) {
                    std::mem::forget(payload);
                }
                state = self.lock();
                continue;
            }
            state.idle += 1;
            let timed_out = if grown {
                let (s, wait) = self
                    .work
                    .wait_timeout(state, KEEP_ALIVE)
                    .unwrap_or_else(PoisonError::into_inner);
                state = s;
                wait.timed_out()
            } else {
                state = self
                    .work
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                false
            };
            state.idle -= 1;
            state.waking = state.waking.saturating_sub(1).min(state.idle);
            if timed_out && state.queue.is_empty() {
                state.threads -= 1;
                return;
            }
        }
    }

    /// The watchdog: grows the pool when queued bodies wait a whole [`STALL`] and no thread took
    /// any in it.
    fn watch(&'static self) {
        let mut state = self.lock();
        let mut seen = state.taken;
        let mut quiet = 0u32;
        loop {
            if state.watch_asleep {
                state = self
                    .watch
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                seen = state.taken;
                quiet = 0;
                continue;
            }
            state = self
                .watch
                .wait_timeout(state, STALL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            let progressed = std::mem::replace(&mut seen, state.taken) != state.taken;
            let waiting = !state.queue.is_empty();
            let stalled = waiting && !progressed && state.idle == 0 && state.threads < MAX_THREADS;
            if waiting || progressed {
                quiet = 0;
            } else {
                quiet += 1;
                state.watch_asleep = quiet >= QUIET_PERIODS;
            }
            if stalled {
                drop(state);
                self.start_thread(true);
                state = self.lock();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Instant;

    /// Every thread of the pool held by a body that blocks, and more: a quick body still runs,
    /// on a thread the watchdog added, long before the blocked ones return.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_body_does_not_wait_behind_bodies_that_block_every_thread() {
        let handle = tokio::runtime::Handle::current();
        let first = std::thread::available_parallelism().map_or(2, |n| n.get());
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = std::sync::Arc::new(Mutex::new(released));
        let (entered, entries) = mpsc::channel();
        let mut blocked = Vec::new();
        for _ in 0..first + 2 {
            let (released, entered) = (released.clone(), entered.clone());
            blocked.push(tokio::spawn(run(handle.clone(), false, move || {
                entered.send(()).unwrap();
                // each waits for its own release, or gives up after a minute
                let _ = released
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(60));
            })));
        }
        // the first body holds the lock while it waits, the others wait for the lock: every one
        // of them is in its body, and every first thread is held
        for _ in 0..first + 2 {
            entries
                .recv_timeout(Duration::from_secs(30))
                .expect("each blocking body gets a thread");
        }
        let start = Instant::now();
        let quick = run(handle.clone(), false, || 7);
        let answer = tokio::time::timeout(Duration::from_secs(30), quick)
            .await
            .expect("a quick body runs while the others block");
        assert!(matches!(answer, Ok((7, None))));
        // not a timing assertion on the machine's speed: the bound is the minute the blocked
        // bodies would otherwise hold their threads
        assert!(start.elapsed() < Duration::from_secs(30));
        for _ in 0..first + 2 {
            release.send(()).unwrap();
        }
        for b in blocked {
            assert!(b.await.unwrap().is_ok());
        }
    }

    #[tokio::test]
    async fn a_panic_is_handed_back_and_the_thread_serves_the_next_body() {
        let handle = tokio::runtime::Handle::current();
        let lost = run(handle.clone(), true, || -> u32 {
            panic!("the body gave up")
        })
        .await;
        match lost {
            Err(Lost::Panicked(p)) => {
                assert_eq!(p.downcast_ref::<&str>(), Some(&"the body gave up"));
            }
            _ => panic!("the panic was not handed back"),
        }
        for i in 0..100u32 {
            assert!(
                matches!(run(handle.clone(), true, move || i * 2).await, Ok((n, Some(_))) if n == i * 2)
            );
        }
    }

    /// A body can reach the runtime of the task that handed it over, as a `spawn_blocking`
    /// closure can.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_body_runs_in_its_callers_runtime_context() {
        let handle = tokio::runtime::Handle::current();
        let got = run(handle, false, || {
            tokio::runtime::Handle::current().block_on(async { 40 + 2 })
        })
        .await;
        assert!(matches!(got, Ok((42, None))));
    }
}
