//! Arbitrary text through the local repair of malformed arguments (code fences, trailing
//! commas, double encoding, empty text) and the strict-mode `null` normalization of decoded
//! calls.
//!
//! Properties:
//! - valid JSON is never repaired: `repair` leaves it alone, and parsing it gives serde_json's
//!   value with no repair recorded (except a JSON string holding JSON, decoded once and
//!   recorded as such);
//! - text that is not JSON is only ever accepted with the repairs that made it JSON recorded,
//!   on the parse and on the hydrated instance, and the repaired text is what was validated;
//! - the `null` normalization of decoded calls changes nothing hydration accepts already.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_fuzz::assert_structured;
use tool_fuzz::tools::SearchNotes;
use tool_providers::codec::hydrate_call;
use tool_runtime::hydrate::{Arguments, Limits, Repair, parse_arguments, repair};
use tool_runtime::{ToolCall, ToolSet};

static TOOLS: LazyLock<ToolSet> = LazyLock::new(|| {
    let mut set = ToolSet::new()
        .with::<SearchNotes>()
        .expect("the repair target's tools register");
    set.register_catalog(
        r#"[{"type": "function", "name": "open_map", "description": "Anything.",
             "parameters": {"type": "object", "properties": {"n": {"type": "integer"},
                "opt": {"type": "string"}, "nested": {"type": "object",
                "properties": {"x": {"type": "number"}}}}}}]"#,
    )
    .expect("the repair target's catalog registers");
    set
});

fuzz_target!(|data: &[u8]| {
    let Some(text) = tool_fuzz::text(data) else {
        return;
    };
    let limits = Limits::default();
    let strict = serde_json::from_str::<Value>(text).ok();

    if strict.is_some() {
        assert_eq!(repair(text), None, "valid JSON was repaired: {text:?}");
    }
    if let Some((fixed, applied)) = repair(text) {
        assert!(!applied.is_empty());
        assert!(fixed.len() <= text.len(), "a repair only removes: {text:?}");
    }

    let parsed = parse_arguments(&Arguments::from(text), &limits);
    match (&strict, &parsed) {
        // a JSON string is decoded once more only when it holds JSON, and then says so
        (Some(value @ Value::String(_)), Ok((parsed, repairs))) if parsed != value => {
            assert!(repairs.contains(&Repair::DoubleEncoded), "{text:?}")
        }
        (Some(value), Ok((parsed, repairs))) => {
            assert_eq!(parsed, value, "{text:?}");
            assert!(repairs.is_empty(), "valid JSON was repaired: {text:?}");
        }
        (None, Ok((_, repairs))) => assert!(!repairs.is_empty(), "silent repair of {text:?}"),
        (_, Err(err)) => assert_structured(err),
    }
    // arguments that arrive as a JSON string (a double-encoded object) are always recorded
    if let Ok((_, repairs)) = parse_arguments(&Arguments::Json(Value::String(text.into())), &limits)
    {
        assert_eq!(repairs.first(), Some(&Repair::DoubleEncoded), "{text:?}");
    }

    for name in ["search_notes", "open_map"] {
        let call = ToolCall::new("c", name, text);
        let hydrated = TOOLS.hydrate(&call);
        match (&hydrated, &parsed) {
            (Ok(instance), Ok((_, repairs))) => {
                assert_eq!(instance.repairs(), repairs.as_slice(), "{text:?}");
            }
            (Ok(_), Err(err)) => panic!("hydrated what does not parse: {text:?}: {err:?}"),
            (Err(err), _) => assert_structured(err),
        }
        // what hydration accepts as sent, the strict-mode normalization keeps as it is
        let normalized = hydrate_call(&TOOLS, &call);
        if let Ok(instance) = &hydrated {
            let again = normalized
                .as_ref()
                .expect("normalization refused what hydration accepts");
            assert_eq!(again.arguments(), instance.arguments(), "{text:?}");
        } else if let Err(err) = &normalized {
            assert_structured(err);
        }
        // and whatever it accepts still records the repairs the text needed
        if let (Ok(instance), Ok((_, repairs))) = (&normalized, &parsed) {
            for r in repairs {
                assert!(instance.repairs().contains(r), "{r:?} lost: {text:?}");
            }
        }
    }
});
