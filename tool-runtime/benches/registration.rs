//! Registering 1,000 tools with every validator ready (goal: under 20 ms in total), for typed
//! tools with derived schemas (what `#[tool]` generates) and for a catalog of 1,000 dynamic
//! definitions; against compiling 1,000 jsonschema validators one by one, in the same run.
//!
//! cargo bench -p tool-runtime --bench registration -- --warm-up-time 1 --measurement-time 3

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{LazyLock, Mutex};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_runtime::validate::Validator;
use tool_runtime::{CallContext, Tool, ToolDefinition, ToolError, ToolSet};

#[path = "../tests/common/mod.rs"]
mod common;
use common::{SearchArgs, derived_definition};

/// One of 1,000 distinct typed tools sharing the realistic argument type.
struct Numbered<const N: usize>;

static DEFINITIONS: LazyLock<Mutex<HashMap<usize, &'static ToolDefinition>>> =
    LazyLock::new(Default::default);

impl<const N: usize> Tool for Numbered<N> {
    type Args = SearchArgs;
    type Output = u32;

    fn definition() -> &'static ToolDefinition {
        // statics in generic functions are shared by every instantiation, hence the map
        DEFINITIONS.lock().unwrap().entry(N).or_insert_with(|| {
            let name: &'static str = Box::leak(format!("search_{N}").into_boxed_str());
            Box::leak(Box::new(derived_definition::<SearchArgs>(
                name,
                "Search the notes.",
            )))
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

/// 1,000 distinct six-field schemas as a catalog file would hold them.
fn catalog() -> (String, Vec<Value>) {
    let schemas: Vec<Value> = (0..1000)
        .map(|i| {
            json!({
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
            })
        })
        .collect();
    let defs: Vec<Value> = schemas
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"type": "function", "name": format!("tool_{i}"), "description": "A tool.",
                   "parameters": s, "safety": "read_only"})
        })
        .collect();
    (serde_json::to_string(&defs).unwrap(), schemas)
}

fn registration(c: &mut Criterion) {
    // build the definitions once, as a process does before registering
    let set = register_1000_typed();
    assert_eq!(set.len(), 1000);
    assert!(set.has_fast_path("search_999"));
    let (catalog_json, schemas) = catalog();

    let mut g = c.benchmark_group("register 1000");
    g.sample_size(10);
    g.bench_function("typed tools, derived schemas", |b| {
        b.iter(register_1000_typed)
    });
    g.bench_function("catalog of dynamic definitions", |b| {
        b.iter(|| {
            let mut set = ToolSet::new();
            set.register_catalog(black_box(&catalog_json)).unwrap();
            set
        })
    });
    g.bench_function("jsonschema compile one by one (old path)", |b| {
        b.iter(|| {
            schemas
                .iter()
                .map(|s| Validator::compile(black_box(s)).unwrap())
                .collect::<Vec<_>>()
        })
    });
    g.bench_function("meta-schema check only", |b| {
        b.iter(|| {
            for s in &schemas {
                Validator::check(black_box(s)).unwrap();
            }
        })
    });
    g.finish();
}

criterion_group!(benches, registration);
criterion_main!(benches);
