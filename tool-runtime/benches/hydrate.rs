//! Hydration of a realistic call (six fields, one nested object, one array) against
//! `serde_json::from_str` into the same type alone, in the same run, for the two fast paths: the
//! reader `#[tool]` generates (`SearchNotesTool`, a `#[tool]` struct) and the guard any argument
//! type gets (`SearchNotes`, a hand-written `Tool` impl over the same fields); arguments that
//! arrived as an object (Anthropic, Ollama, Gemini, MCP) against serde reading the same type from
//! that object by reference; the invalid-arguments path
//! against the same baseline on the same (invalid) text; and the straightforward `Value` +
//! jsonschema path, as the other baseline.
//!
//! cargo bench -p tool-runtime --bench hydrate -- --warm-up-time 1 --measurement-time 3
//!
//! Instruction counts of the same operations: `bash bench/instr.sh hydrate` (see
//! `test-support/src/instr.rs`).

use std::hint::black_box;
use tool_runtime::__private::TestHooks as _;

use criterion::Criterion;
use serde::Deserialize;
use serde_json::Value;
use tool_runtime::validate::Validator;
use tool_runtime::{Tool, ToolCall, ToolSet};

#[path = "../tests/it/common/mod.rs"]
mod common;
use common::{INVALID, SearchArgs, SearchNotes, SearchNotesTool, VALID};
use test_support::instr;

/// Everything the measured operations need, built and checked once.
struct Fixture {
    set: ToolSet,
    /// `SearchNotesTool`, read by its generated reader.
    generated: ToolSet,
    valid: ToolCall,
    invalid: ToolCall,
    as_object: ToolCall,
    /// The valid arguments as the object an object-delivering provider hands over.
    object: Value,
    validator: Validator,
}

fn fixture() -> Fixture {
    let set = ToolSet::new().with::<SearchNotes>().unwrap();
    // the measured paths must be the ones described: the fast path on valid text, three
    // violations reported on the invalid text (which serde alone accepts)
    assert!(set.has_fast_path("search_notes"));
    let valid = ToolCall::new("call_1", "search_notes", VALID);
    let invalid = ToolCall::new("call_1", "search_notes", INVALID);
    let as_object = ToolCall::new(
        "call_1",
        "search_notes",
        serde_json::from_str::<Value>(VALID).unwrap(),
    );
    assert!(set.hydrate(&valid).is_ok());
    assert!(set.hydrate(&as_object).is_ok());
    assert_eq!(set.hydrate(&invalid).unwrap_err().violations.len(), 3);
    assert!(serde_json::from_str::<SearchArgs>(INVALID).is_ok());
    let generated = ToolSet::new().with::<SearchNotesTool>().unwrap();
    assert!(generated.has_generated_reader("search_notes"));
    assert!(!set.has_generated_reader("search_notes"));
    assert!(generated.hydrate_fast_only("search_notes", VALID).is_some());
    assert!(
        generated
            .hydrate_fast_only("search_notes", INVALID)
            .is_none()
    );
    assert_eq!(generated.hydrate(&invalid).unwrap_err().violations.len(), 3);
    let object = serde_json::from_str::<Value>(VALID).unwrap();
    assert!(
        generated
            .hydrate_fast_only("search_notes", object.clone())
            .is_some()
    );
    let validator = Validator::compile(&SearchNotes::definition().parameters_value()).unwrap();
    Fixture {
        set,
        generated,
        valid,
        invalid,
        as_object,
        object,
        validator,
    }
}

/// The straightforward path: parse into a `Value`, validate, convert.
fn old_path(validator: &Validator, text: &str) -> SearchArgs {
    let v: Value = serde_json::from_str(text).unwrap();
    assert!(validator.is_valid(&v));
    serde_json::from_value::<SearchArgs>(v).unwrap()
}

fn hydrate(c: &mut Criterion) {
    let f = fixture();
    let mut g = c.benchmark_group("hydrate");
    g.bench_function("serde_json_from_str (baseline)", |b| {
        b.iter(|| serde_json::from_str::<SearchArgs>(black_box(VALID)).unwrap())
    });
    g.bench_function("serde_json_from_str #[tool] type (baseline)", |b| {
        b.iter(|| serde_json::from_str::<SearchNotesTool>(black_box(VALID)).unwrap())
    });
    g.bench_function("toolset.hydrate valid text, generated reader", |b| {
        b.iter(|| f.generated.hydrate(black_box(&f.valid)).unwrap())
    });
    g.bench_function("toolset.hydrate valid text", |b| {
        b.iter(|| f.set.hydrate(black_box(&f.valid)).unwrap())
    });
    g.bench_function("value+jsonschema+from_value (old path)", |b| {
        b.iter(|| old_path(&f.validator, black_box(VALID)))
    });
    g.bench_function("toolset.hydrate valid + arguments()", |b| {
        b.iter(|| {
            let inst = f.set.hydrate(black_box(&f.valid)).unwrap();
            black_box(inst.arguments());
            inst
        })
    });
    g.bench_function("toolset.hydrate valid object (Anthropic)", |b| {
        b.iter(|| f.set.hydrate(black_box(&f.as_object)).unwrap())
    });
    g.bench_function(
        "SearchNotesTool::deserialize(&Value) (object baseline)",
        |b| b.iter(|| SearchNotesTool::deserialize(black_box(&f.object)).unwrap()),
    );
    g.bench_function("toolset.hydrate valid object, generated reader", |b| {
        b.iter(|| f.generated.hydrate(black_box(&f.as_object)).unwrap())
    });
    g.bench_function("serde_json_from_str invalid text (baseline)", |b| {
        b.iter(|| serde_json::from_str::<SearchArgs>(black_box(INVALID)).unwrap())
    });
    g.bench_function("toolset.hydrate invalid (3 violations)", |b| {
        b.iter(|| f.set.hydrate(black_box(&f.invalid)).unwrap_err())
    });
    g.finish();
}

fn instr_cases() -> Vec<instr::Case> {
    use instr::Case;
    let f = std::rc::Rc::new(fixture());
    let (f1, f2, f3, f4, f5) = (f.clone(), f.clone(), f.clone(), f.clone(), f.clone());
    let (f6, f7) = (f.clone(), f.clone());
    vec![
        Case::warm("serde_valid", || {
            black_box(serde_json::from_str::<SearchArgs>(black_box(VALID)).unwrap());
        }),
        Case::warm("serde_valid_tool_type", || {
            black_box(serde_json::from_str::<SearchNotesTool>(black_box(VALID)).unwrap());
        }),
        Case::warm("hydrate_valid_reader", move || {
            black_box(f5.generated.hydrate(black_box(&f5.valid)).unwrap());
        }),
        Case::warm("hydrate_valid", move || {
            black_box(f1.set.hydrate(black_box(&f1.valid)).unwrap());
        }),
        Case::warm("old_path_valid", move || {
            black_box(old_path(&f2.validator, black_box(VALID)));
        }),
        Case::warm("hydrate_object", move || {
            black_box(f3.set.hydrate(black_box(&f3.as_object)).unwrap());
        }),
        Case::warm("serde_object", move || {
            black_box(SearchNotesTool::deserialize(black_box(&f6.object)).unwrap());
        }),
        Case::warm("hydrate_object_reader", move || {
            black_box(f7.generated.hydrate(black_box(&f7.as_object)).unwrap());
        }),
        Case::warm("serde_invalid", || {
            black_box(serde_json::from_str::<SearchArgs>(black_box(INVALID)).unwrap());
        }),
        Case::warm("hydrate_invalid", move || {
            black_box(f4.set.hydrate(black_box(&f4.invalid)).unwrap_err());
        }),
    ]
}

fn main() {
    if instr::run_if_requested(instr_cases) {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    hydrate(&mut c);
    c.final_summary();
}
