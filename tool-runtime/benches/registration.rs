//! Registering 1,000 tools with every validator ready (goal: under 20 ms in total), against
//! compiling 1,000 jsonschema validators one by one, in the same run:
//!
//! - typed tools with derived schemas (what `#[tool]` generates), both as a process pays it the
//!   first time (each tool's definition derived by schemars and made strict on first access,
//!   measured in a fresh child process per sample) and again in the same process ("definitions
//!   already derived": each typed tool's check is compiled once per process and shared, so
//!   this is what a second `ToolSet` pays), and the first time again with the work
//!   prepared first over every core the process may use (`ToolSet::prepare`, as `toolset!` does;
//!   the instruction counts leave this row out: callgrind counts only the measuring thread);
//! - typed tools with verbatim schemas whose struct and enum properties the macro cannot see
//!   into, so registration compares them by reading samples through the argument type (first
//!   registration, in a child process);
//! - catalogs of 1,000 dynamic definitions: all expressible by the compiled plan, 10% not
//!   (`uniqueItems`, a non-null `anyOf`, a two-branch `allOf`: those tools get their jsonschema
//!   validator compiled at registration), and none expressible;
//! - the 10% catalog followed by one refused call per tool, which also compiles every explaining
//!   jsonschema validator the plan-checked tools build lazily (an upper bound: it includes 1,000
//!   refused hydrations).
//!
//! Every row times the registration alone, not the dropping of what it built afterwards (the
//! typed first registrations stop their clock in the child; the other rows through
//! [`registering`]). The drop is left out because it is not registration: for a catalog of
//! 1,000 jsonschema validators it would be about a fifth of the row.
//!
//! cargo bench -p tool-runtime --bench registration -- --warm-up-time 1 --measurement-time 3
//!
//! Instruction counts: `bash bench/instr.sh registration` (see `test-support/src/instr.rs`).

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::{Value, json};
use tool_runtime::definition::DefinitionBuilder;
use tool_runtime::validate::Validator;
use tool_runtime::{
    CallContext, Tool, ToolCall, ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
    toolset::Prepare,
};

#[path = "../tests/it/common/mod.rs"]
mod common;
use common::{SearchArgs, definition_once, derived_definition};
use test_support::instr;

/// One of 1,000 distinct typed tools sharing the realistic argument type. `WRITTEN`: its
/// definition is built as `#[tool]` builds it, from the schema the macros wrote at compile time
/// (`DefinitionBuilder::written`, output schema included); otherwise derived by schemars at run
/// time, as for a type whose schema the macro cannot write (measured beside it).
struct Numbered<const N: usize, const WRITTEN: bool>;

impl<const N: usize, const WRITTEN: bool> Tool for Numbered<N, WRITTEN> {
    type Args = SearchArgs;
    type Output = u32;

    fn definition() -> &'static ToolDefinition {
        definition_once::<Self>(|| {
            let name: &'static str = Box::leak(format!("search_{N}").into_boxed_str());
            if WRITTEN {
                #[allow(unused_imports, clippy::needless_borrow)]
                use tool_runtime::__private::written::{NotWritten as _, Probe, ViaWritten as _};
                DefinitionBuilder::new(name, "Search the notes.")
                    .written::<SearchArgs>((&&Probe::<SearchArgs>::NEW).written())
                    .output::<u32>()
                    .safety(Safety::ReadOnly)
                    .build()
            } else {
                derived_definition::<SearchArgs>(name, "Search the notes.")
            }
        })
    }

    async fn call(args: SearchArgs, _cx: &CallContext) -> Result<u32, ToolError> {
        Ok(args.limit)
    }
}

/// Arguments whose verbatim schema describes types `#[tool]` cannot see into (a struct and an
/// enum of the author's), which registration compares by reading samples through them.
#[derive(serde::Serialize, serde::Deserialize)]
struct VerbatimArgs {
    query: String,
    limit: u32,
    filter: Filter,
    sort: Sort,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Filter {
    author: Option<String>,
    min_score: f64,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Sort {
    Relevance,
    Newest,
}

const VERBATIM: &str = r#"{"type":"object","properties":{
    "query":{"type":"string","minLength":1},
    "limit":{"type":"integer","minimum":1,"maximum":50,"default":10},
    "filter":{"type":"object","properties":{"author":{"type":["string","null"]},
        "min_score":{"type":"number","minimum":0,"maximum":1}},"required":["min_score"],
        "examples":[{"author":"Knuth","min_score":0.5}]},
    "sort":{"type":"string","enum":["relevance","newest"],"default":"relevance"}},
    "required":["query","limit","filter","sort"]}"#;

/// One of 1,000 distinct typed tools with that verbatim schema (`W` is unused: it keeps the
/// shape of [`Numbered`] for the registering macros).
struct Verbatim<const N: usize, const W: bool>;

impl<const N: usize, const W: bool> Tool for Verbatim<N, W> {
    type Args = VerbatimArgs;
    type Output = u32;

    fn definition() -> &'static ToolDefinition {
        definition_once::<Self>(|| {
            let name: &'static str = Box::leak(format!("find_{N}").into_boxed_str());
            DefinitionBuilder::new(name, "Find the notes.")
                .verbatim(VERBATIM)
                .safety(Safety::ReadOnly)
                .build()
        })
    }

    async fn call(args: VerbatimArgs, _cx: &CallContext) -> Result<u32, ToolError> {
        Ok(args.limit)
    }
}

macro_rules! register_units {
    ($ty:ident, $set:ident, $w:literal, $h:literal, $t:literal) => {
        register_units!(@ $ty, $set, $w, $h, $t, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $ty:ident, $set:ident, $w:literal, $h:literal, $t:literal, $($u:literal)*) => {
        $( $set.register::<$ty<{ $h * 100 + $t * 10 + $u }, $w>>().unwrap(); )*
    };
}
macro_rules! register_tens {
    ($ty:ident, $set:ident, $w:literal, $h:literal) => {
        register_tens!(@ $ty, $set, $w, $h, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $ty:ident, $set:ident, $w:literal, $h:literal, $($t:literal)*) => {
        $( register_units!($ty, $set, $w, $h, $t); )*
    };
}
macro_rules! register_1000 {
    ($w:literal) => {
        register_1000!(Numbered, $w)
    };
    ($ty:ident, $w:literal) => {{
        let mut set = ToolSet::new();
        register_tens!($ty, set, $w, 0);
        register_tens!($ty, set, $w, 1);
        register_tens!($ty, set, $w, 2);
        register_tens!($ty, set, $w, 3);
        register_tens!($ty, set, $w, 4);
        register_tens!($ty, set, $w, 5);
        register_tens!($ty, set, $w, 6);
        register_tens!($ty, set, $w, 7);
        register_tens!($ty, set, $w, 8);
        register_tens!($ty, set, $w, 9);
        set
    }};
}

macro_rules! prepare_tens {
    ($w:literal, $h:literal) => {
        prepare_tens!(@ $w, $h, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $w:literal, $h:literal, $($t:literal)*) => {
        [$( prepare_units!($w, $h, $t) ),*]
    };
}
macro_rules! prepare_units {
    ($w:literal, $h:literal, $t:literal) => {
        prepare_units!(@ $w, $h, $t, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $w:literal, $h:literal, $t:literal, $($u:literal)*) => {
        [$( Prepare::of::<Numbered<{ $h * 100 + $t * 10 + $u }, $w>>() ),*]
    };
}
macro_rules! prepare_1000 {
    ($w:literal) => {
        [
            prepare_tens!($w, 0),
            prepare_tens!($w, 1),
            prepare_tens!($w, 2),
            prepare_tens!($w, 3),
            prepare_tens!($w, 4),
            prepare_tens!($w, 5),
            prepare_tens!($w, 6),
            prepare_tens!($w, 7),
            prepare_tens!($w, 8),
            prepare_tens!($w, 9),
        ]
        .into_iter()
        .flatten()
        .flatten()
        .collect::<Vec<Prepare>>()
    };
}

/// The registration work of the 1,000 typed tools, as `toolset!` hands it to `ToolSet::prepare`.
fn prepare_1000_typed(written: bool) -> Vec<Prepare> {
    if written {
        prepare_1000!(true)
    } else {
        prepare_1000!(false)
    }
}

/// The 1,000 typed tools, with written schemas (as `#[tool]` defines them) or derived ones.
fn register_1000_typed(written: bool) -> ToolSet {
    if written {
        register_1000!(true)
    } else {
        register_1000!(false)
    }
}

/// Which of the three keywords the plan cannot express tool `i` uses, if any: every
/// `every`-th tool (`every == 0`: none; `every == 1`: all).
fn unplannable(i: usize, every: usize) -> Option<usize> {
    (every != 0 && i.is_multiple_of(every)).then_some((i / every.max(1)) % 3)
}

/// One six-field schema, distinct per `i`; `variant` puts in a keyword the plan cannot express.
fn schema(i: usize, variant: Option<usize>) -> Value {
    let mut s = json!({
        "type": "object",
        "properties": {
            format!("query_{i}"): {"type": "string", "minLength": 1, "maxLength": 100 + i},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10 + i},
            "sort": {"type": "string", "enum": ["relevance", "newest", format!("v{i}")]},
            "archived": {"type": "boolean"},
            "filter": {
                "type": "object",
                "properties": {
                    "author": {"type": ["string", "null"]},
                    "min_score": {"type": "number", "minimum": 0, "maximum": 1}
                },
                "required": ["min_score"]
            },
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10}
        },
        "required": [format!("query_{i}"), "limit"]
    });
    let props = &mut s["properties"];
    match variant {
        None => {}
        // a typed set would drop duplicates, so the plan refuses to stand for this
        Some(0) => props["tags"]["uniqueItems"] = json!(true),
        // not the `T or null` shape of `Option<T>`
        Some(1) => {
            props[format!("query_{i}")] =
                json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        }
        // `allOf` other than a single schema
        _ => {
            props["filter"]["properties"]["min_score"] =
                json!({"allOf": [{"type": "number", "minimum": 0}, {"maximum": 1}]})
        }
    }
    s
}

/// Arguments that only the plan-inexpressible keyword of `variant` refuses.
fn refused_only_by_variant(i: usize, variant: usize) -> Value {
    let q = format!("query_{i}");
    match variant {
        0 => json!({q: "x", "limit": 1, "tags": ["a", "a"]}),
        1 => json!({q: true, "limit": 1}),
        _ => json!({q: "x", "limit": 1, "filter": {"min_score": 2}}),
    }
}

/// A catalog of 1,000 tools as a file would hold it, and its schemas.
struct Catalog {
    json: String,
    schemas: Vec<Value>,
}

fn catalog(every: usize) -> Catalog {
    let schemas: Vec<Value> = (0..1000)
        .map(|i| schema(i, unplannable(i, every)))
        .collect();
    let defs: Vec<Value> = schemas
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"type": "function", "name": format!("tool_{i}"), "description": "A tool.",
                   "parameters": s, "safety": "read_only"})
        })
        .collect();
    let c = Catalog {
        json: serde_json::to_string(&defs).unwrap(),
        schemas,
    };
    // what is measured must work: every tool registered, valid arguments accepted, and each
    // plan-inexpressible keyword enforced
    let set = register_catalog(&c.json);
    assert_eq!(set.len(), 1000);
    for i in 0..1000 {
        let q = format!("query_{i}");
        let ok = json!({q: "x", "limit": 1, "tags": ["a", "b"], "filter": {"min_score": 0.5}});
        set.hydrate(&ToolCall::new("c", format!("tool_{i}"), ok))
            .unwrap();
        if let Some(v) = unplannable(i, every) {
            let bad = refused_only_by_variant(i, v);
            assert!(
                set.hydrate(&ToolCall::new("c", format!("tool_{i}"), bad))
                    .is_err()
            );
        }
    }
    c
}

fn register_catalog(json: &str) -> ToolSet {
    let mut set = ToolSet::new();
    set.register_catalog(json).unwrap();
    set
}

/// One refused call per tool: `{}` lacks the required keys, so each plan-checked tool compiles
/// the jsonschema validator that explains refusals.
fn refuse_every_tool(set: &ToolSet, calls: &[ToolCall]) {
    for call in calls {
        assert!(set.hydrate(call).is_err());
    }
}

fn empty_calls() -> Vec<ToolCall> {
    (0..1000)
        .map(|i| ToolCall::new("c", format!("tool_{i}"), "{}"))
        .collect()
}

/// Set in the child process that measures a first registration.
const COLD_CHILD: &str = "REGISTRATION_COLD_CHILD";

/// In the child: the first registration of the 1,000 typed tools in this process, definitions
/// included, printed in nanoseconds. The mode names how: `written` or `derived` schemas, and
/// with `-prepared`, the work prepared first on every core, as `toolset!` does.
fn cold_child(mode: &str) {
    if mode == "verbatim" {
        let start = Instant::now();
        let set = black_box(register_1000!(Verbatim, true));
        let elapsed = start.elapsed();
        assert_eq!(set.len(), 1000);
        println!("{}", elapsed.as_nanos());
        return;
    }
    let written = mode.starts_with("written");
    let tools = prepare_1000_typed(written);
    let start = Instant::now();
    if mode.ends_with("-prepared") {
        ToolSet::prepare(black_box(&tools));
    }
    let set = black_box(register_1000_typed(written));
    let elapsed = start.elapsed();
    assert_eq!(set.len(), 1000);
    println!("{}", elapsed.as_nanos());
}

/// Runs one child process and reads its measurement.
fn cold_once(mode: &str) -> Duration {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(COLD_CHILD, mode)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nanos: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    Duration::from_nanos(nanos)
}

/// Times `register` alone, `iters` times: what it returns is dropped after its clock stopped.
fn registering<T>(iters: u64, mut register: impl FnMut() -> T) -> Duration {
    (0..iters)
        .map(|_| {
            let start = Instant::now();
            let built = black_box(register());
            let elapsed = start.elapsed();
            drop(built);
            elapsed
        })
        .sum()
}

fn registration(c: &mut Criterion) {
    for written in [true, false] {
        let set = register_1000_typed(written);
        assert_eq!(set.len(), 1000);
        assert!(set.has_fast_path("search_999"));
    }
    // both ways define the same schema
    assert_eq!(
        Numbered::<7, true>::definition().parameters.get(),
        Numbered::<7, false>::definition().parameters.get()
    );
    let plannable = catalog(0);
    let mixed = catalog(10);
    let none = catalog(1);
    let calls = empty_calls();

    let mut g = c.benchmark_group("register 1000");
    g.sample_size(10);
    for (mode, what) in [
        (
            "written",
            "typed tools, first registration, schemas written at compile time",
        ),
        (
            "written-prepared",
            "typed tools, first registration, written, prepared on every core (as toolset! does)",
        ),
        (
            "derived",
            "typed tools, first registration, schemas derived by schemars (previous approach)",
        ),
        (
            "derived-prepared",
            "typed tools, first registration, derived, prepared on every core",
        ),
        (
            "verbatim",
            "typed tools, first registration, verbatim schemas with a struct and an enum the \
             macro cannot see into (compared at registration)",
        ),
    ] {
        g.bench_function(what, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| cold_once(mode)).sum())
        });
    }
    g.bench_function("typed tools, definitions already made", |b| {
        b.iter_custom(|iters| registering(iters, || register_1000_typed(true)))
    });
    g.bench_function("catalog, every schema plan-expressible", |b| {
        b.iter_custom(|iters| registering(iters, || register_catalog(black_box(&plannable.json))))
    });
    g.bench_function("catalog, 10% not plan-expressible", |b| {
        b.iter_custom(|iters| registering(iters, || register_catalog(black_box(&mixed.json))))
    });
    g.bench_function("catalog, none plan-expressible", |b| {
        b.iter_custom(|iters| registering(iters, || register_catalog(black_box(&none.json))))
    });
    g.bench_function(
        "catalog 10% + one refused call per tool (every jsonschema validator compiled)",
        |b| {
            b.iter_custom(|iters| {
                registering(iters, || {
                    let set = register_catalog(black_box(&mixed.json));
                    refuse_every_tool(&set, &calls);
                    set
                })
            })
        },
    );
    g.bench_function("jsonschema compile one by one (baseline)", |b| {
        b.iter_custom(|iters| {
            registering(iters, || {
                plannable
                    .schemas
                    .iter()
                    .map(|s| Validator::compile(black_box(s)).unwrap())
                    .collect::<Vec<_>>()
            })
        })
    });
    g.bench_function("meta-schema check only", |b| {
        b.iter(|| {
            for s in &plannable.schemas {
                Validator::check(black_box(s)).unwrap();
            }
        })
    });
    g.finish();
}

fn instr_cases() -> Vec<instr::Case> {
    use instr::{Case, keeping};
    let Catalog {
        json: plannable,
        schemas,
    } = catalog(0);
    let mixed = catalog(10).json;
    let none = catalog(1).json;
    let mixed_forced = mixed.clone();
    let calls = empty_calls();
    // like the timed rows, every case counts the registration and not the drop of what it built
    vec![
        // counted from the first call: run it with INSTR_ITERS=1
        Case::cold("typed_first", keeping(|| register_1000_typed(true))),
        Case::cold(
            "typed_100_first",
            keeping(|| {
                let mut set = ToolSet::new();
                register_tens!(Numbered, set, true, 0);
                set
            }),
        ),
        Case::cold(
            "typed_first_derived",
            keeping(|| register_1000_typed(false)),
        ),
        Case::warm("typed_again", keeping(|| register_1000_typed(true))),
        Case::warm(
            "catalog_plannable",
            keeping(move || register_catalog(&plannable)),
        ),
        Case::warm("catalog_mixed10", keeping(move || register_catalog(&mixed))),
        Case::warm("catalog_none", keeping(move || register_catalog(&none))),
        Case::warm(
            "catalog_mixed10_forced",
            keeping(move || {
                let set = register_catalog(&mixed_forced);
                refuse_every_tool(&set, &calls);
                set
            }),
        ),
        Case::warm(
            "jsonschema_1000",
            keeping(move || {
                schemas
                    .iter()
                    .map(|s| Validator::compile(s).unwrap())
                    .collect::<Vec<_>>()
            }),
        ),
    ]
}

fn main() {
    if let Ok(mode) = std::env::var(COLD_CHILD) {
        cold_child(&mode);
        return;
    }
    if instr::run_if_requested(instr_cases) {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    registration(&mut c);
    c.final_summary();
}
