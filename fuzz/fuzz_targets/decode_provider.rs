//! Arbitrary text as a provider's response: a full body, or a stream capture (SSE or NDJSON),
//! decoded by the codec the selector byte picks.
//!
//! Properties: decoding never panics and refuses with a `CodecError` that converts into a
//! structured `ToolError`; the one-pass decoder (`decode_text`) and the two-step one (`parse`
//! then `decode`) agree; calls an accumulator yields while streaming are the first calls of the
//! finished response, in order; every decoded call's arguments are JSON or are refused by
//! hydration with a structured error, and the calls can be echoed back to the provider.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use tool_fuzz::assert_structured;
use tool_providers::codec::{
    Codec, Provider, StreamCapture, ToolOutcome, ToolResult, hydrate_call,
};
use tool_runtime::hydrate::parse_arguments;
use tool_runtime::{ErrorCode, ToolError, ToolSet};

/// Tools named as in the wire captures the seeds come from, so decoded calls reach hydration
/// against a schema rather than stopping at an unknown name.
static TOOLS: LazyLock<ToolSet> = LazyLock::new(|| {
    let mut set = ToolSet::new();
    set.register_catalog(
        r#"[
        {"type": "function", "name": "get_weather", "description": "Weather.",
         "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "location": {"type": "string"},
            "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", null]}},
          "additionalProperties": false}},
        {"type": "function", "name": "search", "description": "Search.",
         "parameters": {"type": "object", "properties": {"query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1}}, "required": ["query"]}}
    ]"#,
    )
    .expect("the decoding target's tools register");
    set
});

fuzz_target!(|data: &[u8]| {
    let Some((which, rest)) = tool_fuzz::select(data, Provider::ALL.len()) else {
        return;
    };
    let Some(text) = tool_fuzz::text(rest) else {
        return;
    };
    let provider = Provider::ALL[which];
    let codec = provider.codec();

    let one_pass = StreamCapture::decode_text(provider, text, &*codec);
    let two_steps = StreamCapture::parse(provider, text).and_then(|c| c.decode(&*codec));
    match (&one_pass, &two_steps) {
        (Ok((a, _)), Ok(b)) => assert_eq!(a, b, "{provider}: {text:?}"),
        // the one-pass decoder stops at the first event its accumulator refuses, before the
        // two-step one has read the lines after it: both refuse, not always at the same place
        (Err(_), Err(_)) => {}
        _ => panic!("{provider}: one pass {one_pass:?}, two steps {two_steps:?}"),
    }
    let decoded = match one_pass {
        Ok((decoded, _)) => decoded,
        Err(err) => {
            assert!(!err.to_string().is_empty());
            assert_structured(&ToolError::from(err));
            return;
        }
    };

    // streamed calls come out as soon as they are complete, and first in the response
    if let Ok(StreamCapture::Events(events)) = StreamCapture::parse(provider, text) {
        let mut acc = codec.accumulator();
        let mut yielded = Vec::new();
        for event in &events {
            yielded.extend(acc.push(event).expect("the same events pushed again"));
        }
        let finished = acc.finish().expect("the same stream finished again");
        assert!(
            finished.calls.starts_with(&yielded),
            "{provider}: yielded {yielded:?}, finished {:?}",
            finished.calls
        );
    }

    for call in &decoded.calls {
        match parse_arguments(&call.arguments, TOOLS.limits()) {
            Ok(_) => {}
            Err(err) => {
                assert_structured(&err);
                assert!(
                    [
                        ErrorCode::INVALID_JSON,
                        ErrorCode::PAYLOAD_TOO_LARGE,
                        ErrorCode::NESTING_TOO_DEEP
                    ]
                    .contains(&err.code),
                    "{provider}: {err:?}"
                );
            }
        }
        if let Err(err) = hydrate_call(&TOOLS, call) {
            assert_structured(&err);
        }
    }
    echo(&*codec, &decoded.text, &decoded.calls);
});

/// The turn and the results go back to the provider: both must be JSON that serializes.
fn echo(codec: &dyn Codec, text: &str, calls: &[tool_runtime::ToolCall]) {
    for message in codec.encode_assistant(text, calls) {
        serde_json::to_string(&message).expect("an echoed turn serializes");
    }
    let results: Vec<ToolResult> = calls
        .iter()
        .map(|c| ToolResult::new(c, ToolOutcome::Success(serde_json::json!({"ok": true}))))
        .collect();
    for message in codec.encode_results(&results) {
        serde_json::to_string(&message).expect("encoded results serialize");
    }
}
