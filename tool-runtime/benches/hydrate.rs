//! Hydration of a realistic call (six fields, one nested object, one array) against
//! `serde_json::from_str` into the same type alone, in the same run; the invalid-arguments path;
//! and the `Value` + jsonschema path hydration used to take, as the other baseline.
//!
//! cargo bench -p tool-runtime --bench hydrate -- --warm-up-time 1 --measurement-time 3

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use tool_runtime::validate::Validator;
use tool_runtime::{Tool, ToolCall, ToolSet};

#[path = "../tests/common/mod.rs"]
mod common;
use common::{INVALID, SearchArgs, SearchNotes, VALID};

fn hydrate(c: &mut Criterion) {
    let set = ToolSet::new().with::<SearchNotes>().unwrap();
    assert!(set.has_fast_path("search_notes"));
    let valid = ToolCall::new("call_1", "search_notes", VALID);
    let invalid = ToolCall::new("call_1", "search_notes", INVALID);
    let as_object = ToolCall::new(
        "call_1",
        "search_notes",
        serde_json::from_str::<Value>(VALID).unwrap(),
    );
    assert!(set.hydrate(&valid).is_ok());
    assert_eq!(set.hydrate(&invalid).unwrap_err().violations.len(), 3);
    let schema = SearchNotes::definition().parameters_value();
    let validator = Validator::compile(&schema).unwrap();

    let mut g = c.benchmark_group("hydrate");
    g.bench_function("serde_json_from_str (baseline)", |b| {
        b.iter(|| serde_json::from_str::<SearchArgs>(black_box(VALID)).unwrap())
    });
    g.bench_function("value+jsonschema+from_value (old path)", |b| {
        b.iter(|| {
            let v: Value = serde_json::from_str(black_box(VALID)).unwrap();
            assert!(validator.is_valid(&v));
            serde_json::from_value::<SearchArgs>(v).unwrap()
        })
    });
    g.bench_function("toolset.hydrate valid text", |b| {
        b.iter(|| set.hydrate(black_box(&valid)).unwrap())
    });
    g.bench_function("toolset.hydrate valid + arguments()", |b| {
        b.iter(|| {
            let inst = set.hydrate(black_box(&valid)).unwrap();
            black_box(inst.arguments());
            inst
        })
    });
    g.bench_function("toolset.hydrate valid object (Anthropic)", |b| {
        b.iter(|| set.hydrate(black_box(&as_object)).unwrap())
    });
    g.bench_function("toolset.hydrate invalid (3 violations)", |b| {
        b.iter(|| set.hydrate(black_box(&invalid)).unwrap_err())
    });
    g.finish();
}

criterion_group!(benches, hydrate);
criterion_main!(benches);
