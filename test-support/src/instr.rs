//! Instruction counts beside the criterion timings.
//!
//! On a shared machine wall-clock ratios are noisy; the number of instructions an operation
//! executes is not. Every bench binary that calls [`run_if_requested`] first can also be started as
//!
//! ```text
//! INSTR_CASE=<case> INSTR_ITERS=<n> valgrind --tool=callgrind --collect-atstart=no \
//!     --toggle-collect=instr_measured_loop <bench binary>
//! ```
//!
//! which runs one named case `n` times inside [`instr_measured_loop`] and exits without starting
//! criterion. Callgrind counts only what runs inside that function, so set-up, the warm-up call and
//! process start-up are excluded, and the total divided by `n` is the cost of one operation.
//! `bench/instr.sh` does this for a list of cases and prints the ratios.

use std::hint::black_box;

/// One measurable operation, with its state moved in.
pub struct Case {
    /// The name given in `INSTR_CASE`.
    pub name: &'static str,
    /// Whether to call the operation once before counting (lazy initialisation excluded).
    pub warm: bool,
    /// The operation.
    pub run: Box<dyn FnMut()>,
}

impl Case {
    /// A case whose first call is not counted.
    pub fn warm(name: &'static str, run: impl FnMut() + 'static) -> Self {
        Case {
            name,
            warm: true,
            run: Box::new(run),
        }
    }

    /// A case counted from its very first call (e.g. a first registration).
    pub fn cold(name: &'static str, run: impl FnMut() + 'static) -> Self {
        Case {
            name,
            warm: false,
            run: Box::new(run),
        }
    }
}

/// `run`, keeping everything it returns until the case itself is dropped, after the count: for
/// operations whose result's teardown is not part of what is measured (a registration, not the
/// dropping of the set it built).
pub fn keeping<T: 'static>(mut run: impl FnMut() -> T + 'static) -> impl FnMut() + 'static {
    let mut kept = Vec::new();
    move || kept.push(run())
}

/// The loop callgrind counts. Not mangled, never inlined, so `--toggle-collect` finds it by name.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "Rust" fn instr_measured_loop(iterations: u64, run: &mut dyn FnMut()) {
    for _ in 0..black_box(iterations) {
        run();
    }
}

/// How many times the case runs (`INSTR_ITERS`, default 1,000), for cases that prepare one input
/// per run ahead of the count.
pub fn iterations() -> u64 {
    std::env::var("INSTR_ITERS")
        .ok()
        .map(|s| s.parse().expect("INSTR_ITERS is a number"))
        .unwrap_or(1000)
}

/// When `INSTR_CASE` is set, builds that case with `cases`, runs it `INSTR_ITERS` times (default
/// 1,000) inside [`instr_measured_loop`] and returns `true`: the caller then exits instead of
/// running criterion. `INSTR_CASE=list` prints the case names.
pub fn run_if_requested(cases: impl FnOnce() -> Vec<Case>) -> bool {
    let Ok(wanted) = std::env::var("INSTR_CASE") else {
        return false;
    };
    let iterations = iterations();
    let all = cases();
    if wanted == "list" {
        for c in &all {
            println!("{}", c.name);
        }
        return true;
    }
    let names: Vec<&str> = all.iter().map(|c| c.name).collect();
    let mut case = all
        .into_iter()
        .find(|c| c.name == wanted)
        .unwrap_or_else(|| panic!("no case {wanted:?}; the cases are {names:?}"));
    if case.warm {
        (case.run)();
    }
    instr_measured_loop(iterations, &mut *case.run);
    eprintln!("instr: ran {wanted} {iterations} times");
    true
}
