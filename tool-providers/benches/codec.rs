//! Codec benchmarks, each against a baseline measured in the same run, for every provider:
//!
//! - `encode_100_tools/<provider>`: the tool list of a 100-tool request spliced from the
//!   declaration cache, against building every declaration from its canonical schema and
//!   serializing the same fragment afresh (the set-up checks that both produce identical text).
//! - `decode_8_parallel/<provider>`: decoding a response with 8 parallel calls and hydrating each
//!   (typed, validated), against plain `serde_json` parsing of the same body. MCP is left out
//!   here: a `tools/call` message carries exactly one call.
//!
//! cargo bench -p tool-providers --bench codec -- --warm-up-time 1 --measurement-time 3
//!
//! Instruction counts: `bash bench/instr.sh codec` (see
//! `test-support/src/instr.rs`).

#[path = "../tests/it/common/mod.rs"]
mod common;
use test_support::instr;

use std::hint::black_box;

use criterion::Criterion;
use serde_json::{Value, json};
use tool_providers::codec::{Codec, DeclarationCache, Provider, ToolConfig, hydrate_call};
use tool_runtime::{ToolSet, definition::ToolDefinition};

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

/// The baseline: every declaration built from its canonical schema and serialized, the fragment
/// written around them; exactly the text the cache splices together, without the cache.
fn fresh(codec: &dyn Codec, tools: &[&ToolDefinition], config: &ToolConfig) -> String {
    let choice = codec.encode_choice(config).unwrap();
    let declarations: Vec<String> = tools
        .iter()
        .map(|d| codec.declare(d).unwrap().to_string())
        .collect();
    let mut out = String::from("{");
    codec.write_tools_field(&declarations.join(","), &mut out);
    for (k, v) in &choice.fields {
        out.push(',');
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        out.push_str(&v.to_string());
    }
    out.push('}');
    out
}

/// One provider's encoding fixture, checked: the cache is warm and gives the fresh text.
struct Encoding {
    codec: Box<dyn Codec>,
    cache: DeclarationCache,
    defs: Vec<ToolDefinition>,
    config: ToolConfig,
}

impl Encoding {
    fn new(provider: Provider) -> Self {
        let e = Encoding {
            codec: provider.codec(),
            cache: DeclarationCache::new(),
            defs: hundred_tools(),
            config: ToolConfig::default(),
        };
        let refs = e.refs();
        let cached = e
            .cache
            .encode_tools_text(e.codec.as_ref(), &refs, &e.config)
            .unwrap();
        assert_eq!(
            cached,
            fresh(e.codec.as_ref(), &refs, &e.config),
            "{provider}: the baseline must produce what the cache produces"
        );
        assert_eq!(e.cache.len(), 100);
        e
    }

    fn refs(&self) -> Vec<&ToolDefinition> {
        self.defs.iter().collect()
    }

    fn fresh(&self, refs: &[&ToolDefinition]) -> String {
        fresh(self.codec.as_ref(), refs, &self.config)
    }

    fn cached_text(&self, refs: &[&ToolDefinition]) -> String {
        self.cache
            .encode_tools_text(self.codec.as_ref(), refs, &self.config)
            .unwrap()
    }
}

fn encode(c: &mut Criterion) {
    for provider in Provider::ALL {
        let e = Encoding::new(provider);
        let refs = e.refs();
        let mut group = c.benchmark_group(format!("encode_100_tools/{provider}"));
        group.bench_function("fresh (baseline)", |b| {
            b.iter(|| black_box(e.fresh(black_box(&refs))))
        });
        group.bench_function("cached_text", |b| {
            b.iter(|| black_box(e.cached_text(black_box(&refs))))
        });
        group.bench_function("cached_raw_value", |b| {
            b.iter(|| {
                black_box(
                    e.cache
                        .encode_tools(e.codec.as_ref(), black_box(&refs), &e.config)
                        .unwrap(),
                )
            })
        });
        group.finish();
    }
}

/// The providers whose responses carry parallel calls.
const DECODED: [Provider; 5] = [
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic,
    Provider::Ollama,
    Provider::Gemini,
];

/// The arguments of call `i`; every other call has the `null` a strict model sends for an
/// optional field, which hydration strips.
fn arguments(i: usize) -> Value {
    json!({"city": format!("City {i}"), "unit": if i.is_multiple_of(2) { json!("c") } else { Value::Null }})
}

/// A response body with 8 parallel `get_weather` calls, in `provider`'s shape.
fn eight_parallel_calls(provider: Provider) -> String {
    let body = match provider {
        Provider::OpenAiChat => {
            let calls: Vec<Value> = (0..8)
                .map(|i| {
                    json!({"id": format!("call_{i}"), "type": "function",
                           "function": {"name": "get_weather", "arguments": arguments(i).to_string()}})
                })
                .collect();
            json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
                   "choices": [{"index": 0, "finish_reason": "tool_calls",
                                "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
                   "usage": {"prompt_tokens": 120, "completion_tokens": 160, "total_tokens": 280}})
        }
        Provider::OpenAiResponses => {
            let items: Vec<Value> = (0..8)
                .map(|i| {
                    json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": format!("call_{i}"),
                           "name": "get_weather", "arguments": arguments(i).to_string(), "status": "completed"})
                })
                .collect();
            json!({"id": "resp_1", "object": "response", "model": "gpt-4.1", "output": items,
                   "usage": {"input_tokens": 120, "output_tokens": 160, "total_tokens": 280}})
        }
        Provider::Anthropic => {
            let content: Vec<Value> = (0..8)
                .map(|i| {
                    json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": "get_weather",
                           "input": arguments(i)})
                })
                .collect();
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4",
                   "stop_reason": "tool_use", "content": content,
                   "usage": {"input_tokens": 120, "output_tokens": 160}})
        }
        Provider::Ollama => {
            let calls: Vec<Value> = (0..8)
                .map(|i| {
                    json!({"id": format!("call_{i}"), "function": {"index": i, "name": "get_weather",
                           "arguments": arguments(i)}})
                })
                .collect();
            json!({"model": "qwen3", "created_at": "2026-01-01T00:00:00Z",
                   "message": {"role": "assistant", "content": "", "tool_calls": calls},
                   "done": true, "done_reason": "stop", "prompt_eval_count": 120, "eval_count": 160})
        }
        Provider::Gemini => {
            let parts: Vec<Value> = (0..8)
                .map(|i| json!({"functionCall": {"name": "get_weather", "args": arguments(i)}}))
                .collect();
            json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                   "index": 0}],
                   "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 160,
                                     "totalTokenCount": 280}})
        }
        Provider::Mcp => unreachable!("an MCP message carries one call"),
    };
    body.to_string()
}

/// Parses, decodes and hydrates every call (the measured path).
fn decode_and_hydrate(codec: &dyn Codec, set: &ToolSet, body: &str) -> usize {
    let v: Value = serde_json::from_str(body).unwrap();
    let decoded = codec.decode_response(&v).unwrap();
    let instances: Vec<_> = decoded
        .calls
        .iter()
        .map(|call| hydrate_call(set, call).unwrap())
        .collect();
    black_box(instances).len()
}

/// One provider's decoding fixture, checked: 8 calls decode and hydrate.
fn decoding(provider: Provider) -> (Box<dyn Codec>, ToolSet, String) {
    let body = eight_parallel_calls(provider);
    let set = common::fixture_toolset();
    let codec = provider.codec();
    assert_eq!(
        decode_and_hydrate(codec.as_ref(), &set, &body),
        8,
        "{provider}"
    );
    (codec, set, body)
}

fn decode(c: &mut Criterion) {
    for provider in DECODED {
        let (codec, set, body) = decoding(provider);
        let mut group = c.benchmark_group(format!("decode_8_parallel/{provider}"));
        group.bench_function("serde_json_parse (baseline)", |b| {
            b.iter(|| black_box(serde_json::from_str::<Value>(black_box(&body)).unwrap()))
        });
        group.bench_function("decode_and_hydrate", |b| {
            b.iter(|| decode_and_hydrate(codec.as_ref(), &set, black_box(&body)))
        });
        group.finish();
    }
}

fn instr_cases() -> Vec<instr::Case> {
    use instr::Case;
    let mut cases = Vec::new();
    // case names: encode_fresh/<provider>, encode_cached/<provider>, parse/<provider>,
    // decode/<provider>
    for provider in Provider::ALL {
        let name = |kind: &str| -> &'static str { format!("{kind}/{provider}").leak() };
        let e = std::rc::Rc::new(Encoding::new(provider));
        let e2 = e.clone();
        cases.push(Case::warm(name("encode_fresh"), move || {
            black_box(e.fresh(&e.refs()));
        }));
        cases.push(Case::warm(name("encode_cached"), move || {
            black_box(e2.cached_text(&e2.refs()));
        }));
        if DECODED.contains(&provider) {
            let (codec, set, body) = decoding(provider);
            let body2 = body.clone();
            cases.push(Case::warm(name("parse"), move || {
                black_box(serde_json::from_str::<Value>(&body2).unwrap());
            }));
            cases.push(Case::warm(name("decode"), move || {
                decode_and_hydrate(codec.as_ref(), &set, &body);
            }));
        }
    }
    cases
}

fn main() {
    if instr::run_if_requested(instr_cases) {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    encode(&mut c);
    decode(&mut c);
    c.final_summary();
}
