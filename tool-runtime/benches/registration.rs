//! Registering 1,000 tools with every validator ready (goal: under 20 ms in total), against
//! compiling 1,000 jsonschema validators one by one, in the same run:
//!
//! - typed tools with derived schemas (what `#[tool]` generates), both as a process pays it the
//!   first time (each tool's definition derived by schemars and made strict on first access,
//!   measured in a fresh child process per sample) and again in the same process ("definitions
//!   already derived": since stop 9 each typed tool's check is also compiled once per process and
//!   shared, so this is what a second `ToolSet` pays), and the first time again with the work
//!   prepared first over every core the process may use (`ToolSet::prepare`, as `toolset!` does;
//!   the instruction counts leave this row out: callgrind counts only the measuring thread);
//! - catalogs of 1,000 dynamic definitions: all expressible by the compiled plan, 10% not
//!   (`uniqueItems`, a non-null `anyOf`, a two-branch `allOf`: those tools get their jsonschema
//!   validator compiled at registration), and none expressible;
//! - the 10% catalog followed by one refused call per tool, which also compiles every explaining
//!   jsonschema validator the plan-checked tools build lazily (an upper bound: it includes 1,000
//!   refused hydrations).
//!
//! cargo bench -p tool-runtime --bench registration -- --warm-up-time 1 --measurement-time 3
//!
//! Instruction counts: `bash bench/instr.sh registration` (see `support/instr.rs`).

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::{Value, json};
use tool_runtime::validate::Validator;
use tool_runtime::{CallContext, Prepare, Tool, ToolCall, ToolDefinition, ToolError, ToolSet};

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/instr.rs"]
mod instr;
use common::{SearchArgs, definition_once, derived_definition};

/// One of 1,000 distinct typed tools sharing the realistic argument type.
struct Numbered<const N: usize>;

impl<const N: usize> Tool for Numbered<N> {
    type Args = SearchArgs;
    type Output = u32;

    fn definition() -> &'static ToolDefinition {
        definition_once::<Self>(|| {
            let name: &'static str = Box::leak(format!("search_{N}").into_boxed_str());
            derived_definition::<SearchArgs>(name, "Search the notes.")
        })
    }

    async fn call(args: SearchArgs, _cx: &CallContext) -> Result<u32, ToolError> {
        Ok(args.limit)
    }
}

macro_rules! register_units {
    ($set:ident, $h:literal, $t:literal) => {
        register_units!(@ $set, $h, $t, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $set:ident, $h:literal, $t:literal, $($u:literal)*) => {
        $( $set.register::<Numbered<{ $h * 100 + $t * 10 + $u }>>().unwrap(); )*
    };
}
macro_rules! register_tens {
    ($set:ident, $h:literal) => {
        register_tens!(@ $set, $h, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $set:ident, $h:literal, $($t:literal)*) => {
        $( register_units!($set, $h, $t); )*
    };
}

macro_rules! prepare_tens {
    ($h:literal) => {
        prepare_tens!(@ $h, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $h:literal, $($t:literal)*) => {
        [$( prepare_units!($h, $t) ),*]
    };
}
macro_rules! prepare_units {
    ($h:literal, $t:literal) => {
        prepare_units!(@ $h, $t, 0 1 2 3 4 5 6 7 8 9)
    };
    (@ $h:literal, $t:literal, $($u:literal)*) => {
        [$( Prepare::of::<Numbered<{ $h * 100 + $t * 10 + $u }>>() ),*]
    };
}

/// The registration work of the 1,000 typed tools, as `toolset!` hands it to `ToolSet::prepare`.
fn prepare_1000_typed() -> Vec<Prepare> {
    [
        prepare_tens!(0),
        prepare_tens!(1),
        prepare_tens!(2),
        prepare_tens!(3),
        prepare_tens!(4),
        prepare_tens!(5),
        prepare_tens!(6),
        prepare_tens!(7),
        prepare_tens!(8),
        prepare_tens!(9),
    ]
    .into_iter()
    .flatten()
    .flatten()
    .collect()
}

fn register_1000_typed() -> ToolSet {
    let mut set = ToolSet::new();
    register_tens!(set, 0);
    register_tens!(set, 1);
    register_tens!(set, 2);
    register_tens!(set, 3);
    register_tens!(set, 4);
    register_tens!(set, 5);
    register_tens!(set, 6);
    register_tens!(set, 7);
    register_tens!(set, 8);
    register_tens!(set, 9);
    set
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

/// In the child: the first registration of the 1,000 typed tools in this process, derivation
/// included, printed in nanoseconds; `prepared`: with the work prepared first on every core, as
/// `toolset!` does.
fn cold_child(prepared: bool) {
    let tools = prepare_1000_typed();
    let start = Instant::now();
    if prepared {
        ToolSet::prepare(black_box(&tools));
    }
    let set = black_box(register_1000_typed());
    let elapsed = start.elapsed();
    assert_eq!(set.len(), 1000);
    println!("{}", elapsed.as_nanos());
}

/// Runs one child process and reads its measurement.
fn cold_once(prepared: bool) -> Duration {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(COLD_CHILD, if prepared { "prepared" } else { "1" })
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

fn registration(c: &mut Criterion) {
    let set = register_1000_typed();
    assert_eq!(set.len(), 1000);
    assert!(set.has_fast_path("search_999"));
    let plannable = catalog(0);
    let mixed = catalog(10);
    let none = catalog(1);
    let calls = empty_calls();

    let mut g = c.benchmark_group("register 1000");
    g.sample_size(10);
    g.bench_function(
        "typed tools, first registration (derivation included)",
        |b| b.iter_custom(|iters| (0..iters).map(|_| cold_once(false)).sum()),
    );
    g.bench_function(
        "typed tools, first registration, prepared on every core (as toolset! does)",
        |b| b.iter_custom(|iters| (0..iters).map(|_| cold_once(true)).sum()),
    );
    g.bench_function("typed tools, definitions already derived", |b| {
        b.iter(register_1000_typed)
    });
    g.bench_function("catalog, every schema plan-expressible", |b| {
        b.iter(|| register_catalog(black_box(&plannable.json)))
    });
    g.bench_function("catalog, 10% not plan-expressible", |b| {
        b.iter(|| register_catalog(black_box(&mixed.json)))
    });
    g.bench_function("catalog, none plan-expressible", |b| {
        b.iter(|| register_catalog(black_box(&none.json)))
    });
    g.bench_function(
        "catalog 10% + one refused call per tool (every jsonschema validator compiled)",
        |b| {
            b.iter(|| {
                let set = register_catalog(black_box(&mixed.json));
                refuse_every_tool(&set, &calls);
                set
            })
        },
    );
    g.bench_function("jsonschema compile one by one (baseline)", |b| {
        b.iter(|| {
            plannable
                .schemas
                .iter()
                .map(|s| Validator::compile(black_box(s)).unwrap())
                .collect::<Vec<_>>()
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
    use instr::Case;
    let Catalog {
        json: plannable,
        schemas,
    } = catalog(0);
    let mixed = catalog(10).json;
    let none = catalog(1).json;
    let mixed_forced = mixed.clone();
    let calls = empty_calls();
    vec![
        // counted from the first call: run it with INSTR_ITERS=1
        Case::cold("typed_first", || {
            black_box(register_1000_typed());
        }),
        Case::warm("typed_derived", || {
            black_box(register_1000_typed());
        }),
        Case::warm("catalog_plannable", move || {
            black_box(register_catalog(&plannable));
        }),
        Case::warm("catalog_mixed10", move || {
            black_box(register_catalog(&mixed));
        }),
        Case::warm("catalog_none", move || {
            black_box(register_catalog(&none));
        }),
        Case::warm("catalog_mixed10_forced", move || {
            let set = register_catalog(&mixed_forced);
            refuse_every_tool(&set, &calls);
            black_box(set);
        }),
        Case::warm("jsonschema_1000", move || {
            black_box(
                schemas
                    .iter()
                    .map(|s| Validator::compile(s).unwrap())
                    .collect::<Vec<_>>(),
            );
        }),
    ]
}

fn main() {
    if let Some(mode) = std::env::var_os(COLD_CHILD) {
        cold_child(mode == "prepared");
        return;
    }
    if instr::run_if_requested(instr_cases) {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    registration(&mut c);
    c.final_summary();
}
