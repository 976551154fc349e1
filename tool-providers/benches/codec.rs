//! Codec benchmarks, each against a baseline measured in the same run:
//!
//! - `encode_100_tools`: the tool list of a 100-tool request spliced from the declaration cache,
//!   against building every declaration and serializing the request afresh.
//! - `decode_8_parallel`: decoding a response with 8 parallel calls and hydrating each (typed,
//!   validated), against plain `serde_json` parsing of the same body.
//!
//! Run: `cargo bench -p tool-providers --bench codec`

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_providers::codec::{Codec, DeclarationCache, Provider, ToolConfig, hydrate_call};
use tool_runtime::ToolDefinition;

/// 100 tools: the representative set (nested objects, `$defs`, enums, a verbatim schema) renamed.
fn hundred_tools() -> Vec<ToolDefinition> {
    let base = common::representative_definitions();
    (0..100)
        .map(|i| {
            let mut d = base[i % base.len()].clone();
            d.name = format!("{}_{i}", d.name).into();
            d
        })
        .collect()
}

/// The honest baseline: every declaration built from its canonical schema, the whole fragment
/// serialized.
fn fresh(codec: &dyn Codec, tools: &[&ToolDefinition], config: &ToolConfig) -> String {
    let declarations: Vec<Value> = tools.iter().map(|d| codec.declare(d).unwrap()).collect();
    let mut body = json!({ "tools": declarations });
    for (k, v) in codec.encode_choice(config).unwrap().fields {
        body[k] = v;
    }
    serde_json::to_string(&body).unwrap()
}

fn encode(c: &mut Criterion) {
    let defs = hundred_tools();
    let refs: Vec<&ToolDefinition> = defs.iter().collect();
    let config = ToolConfig::default();
    for provider in [Provider::OpenAiChat, Provider::Anthropic] {
        let codec = provider.codec();
        let cache = DeclarationCache::new();
        cache.encode_tools(codec.as_ref(), &refs, &config).unwrap(); // warm
        let mut group = c.benchmark_group(format!("encode_100_tools/{provider}"));
        group.bench_function("fresh", |b| {
            b.iter(|| black_box(fresh(codec.as_ref(), black_box(&refs), &config)))
        });
        group.bench_function("cached_text", |b| {
            b.iter(|| {
                black_box(
                    cache
                        .encode_tools_text(codec.as_ref(), black_box(&refs), &config)
                        .unwrap(),
                )
            })
        });
        group.bench_function("cached_raw_value", |b| {
            b.iter(|| {
                black_box(
                    cache
                        .encode_tools(codec.as_ref(), black_box(&refs), &config)
                        .unwrap(),
                )
            })
        });
        group.finish();
    }
}

fn eight_parallel_calls() -> String {
    let calls: Vec<Value> = (0..8)
        .map(|i| {
            let args = json!({"city": format!("City {i}"), "unit": if i % 2 == 0 { json!("c") } else { Value::Null }});
            json!({"id": format!("call_{i}"), "type": "function",
                   "function": {"name": "get_weather", "arguments": args.to_string()}})
        })
        .collect();
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
           "choices": [{"index": 0, "finish_reason": "tool_calls",
                        "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
           "usage": {"prompt_tokens": 120, "completion_tokens": 160, "total_tokens": 280}})
    .to_string()
}

fn decode(c: &mut Criterion) {
    let body = eight_parallel_calls();
    let set = common::fixture_toolset();
    let codec = Provider::OpenAiChat.codec();
    // the measured path must really succeed
    let d = codec
        .decode_response(&serde_json::from_str(&body).unwrap())
        .unwrap();
    assert!(d.calls.iter().all(|call| hydrate_call(&set, call).is_ok()));

    let mut group = c.benchmark_group("decode_8_parallel");
    group.bench_function("serde_json_parse", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(black_box(&body)).unwrap()))
    });
    group.bench_function("decode_and_hydrate", |b| {
        b.iter(|| {
            let v: Value = serde_json::from_str(black_box(&body)).unwrap();
            let decoded = codec.decode_response(&v).unwrap();
            let instances: Vec<_> = decoded
                .calls
                .iter()
                .map(|call| hydrate_call(&set, call).unwrap())
                .collect();
            black_box(instances)
        })
    });
    group.finish();
}

criterion_group!(benches, encode, decode);
criterion_main!(benches);
