//! Arbitrary text as the arguments of `#[tool]`-derived tools.
//!
//! Properties, for every input:
//! - the fast path (generated reader or guard, checking the text as serde reads it) accepts only
//!   what the reference accepts: serde_json's `Value`, valid under the jsonschema validator of
//!   the canonical schema, that serde then reads into the typed arguments;
//! - what it accepts is the very value serde builds from that text;
//! - hydration as a whole (fast path, then the slow path) accepts exactly what the reference
//!   accepts, for text and for the same arguments sent as an object, and explains a refusal.
#![no_main]

use std::any::Any;
use std::sync::LazyLock;

use tool_runtime::__private::TestHooks as _;
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tool_fuzz::tools::{BookRoomArgs, CreateNote, Draw, Renamed, SearchNotes, book_room};
use tool_fuzz::{
    assert_structured, integers_as_integers, refused_beyond_the_reference, same_as_floats,
};
use tool_runtime::validate::Validator;
use tool_runtime::{Tool, ToolCall, ToolSet};

/// Built once: registration compiles the plan and the readers, which is not what is fuzzed.
struct Harness {
    set: ToolSet,
    validators: Vec<Validator>,
}

static HARNESS: LazyLock<Harness> = LazyLock::new(|| {
    let set = ToolSet::new()
        .with::<SearchNotes>()
        .and_then(|s| s.with::<book_room>())
        .and_then(|s| s.with::<Renamed>())
        .and_then(|s| s.with::<CreateNote>())
        .and_then(|s| s.with::<Draw>())
        .expect("the fuzzed tools register");
    let validators = set
        .definitions()
        .map(|d| Validator::compile(&d.parameters_value()).expect("derived schemas compile"))
        .collect();
    Harness { set, validators }
});

fuzz_target!(|data: &[u8]| {
    let Some((which, rest)) = tool_fuzz::select(data, 5) else {
        return;
    };
    let Some(text) = tool_fuzz::text(rest) else {
        return;
    };
    let h = &*HARNESS;
    let v = &h.validators[which];
    match which {
        0 => check::<SearchNotes, <SearchNotes as Tool>::Args>(&h.set, v, text),
        1 => check::<book_room, BookRoomArgs>(&h.set, v, text),
        2 => check::<Renamed, <Renamed as Tool>::Args>(&h.set, v, text),
        3 => check::<CreateNote, <CreateNote as Tool>::Args>(&h.set, v, text),
        _ => check::<Draw, <Draw as Tool>::Args>(&h.set, v, text),
    }
});

/// The reference decision for `value`, and the typed value it builds.
fn reference<A: DeserializeOwned>(validator: &Validator, value: &Value) -> Option<A> {
    let value = integers_as_integers(value);
    if !validator.is_valid(&value) {
        return None;
    }
    serde_json::from_value::<A>(value).ok()
}

fn as_json<A: Serialize + 'static>(typed: &(dyn Any + Send + Sync)) -> Value {
    serde_json::to_value(typed.downcast_ref::<A>().expect("the tool's own type"))
        .expect("typed arguments serialize")
}

/// `R`: the reference type, with serde's derives, that reads what `T::Args` must read (a
/// function tool's hidden args type deserializes through its own reader, so it cannot be its
/// own reference).
fn check<T: Tool, R: DeserializeOwned + Serialize>(set: &ToolSet, validator: &Validator, text: &str) {
    let name = T::definition().name.as_ref();
    let parsed = serde_json::from_str::<Value>(text).ok();
    let expected: Option<Value> = parsed
        .as_ref()
        .and_then(|v| reference::<R>(validator, v))
        .map(|a| serde_json::to_value(a).expect("typed arguments serialize"));

    // the fast path never accepts what the reference refuses, and builds what serde builds
    if let Some(typed) = set.hydrate_fast_only(name, text) {
        let Some(expected) = &expected else {
            panic!("{name}: the fast path accepted what the validator refuses: {text:?}");
        };
        assert_eq!(&as_json::<T::Args>(&*typed), expected, "{name}: {text:?}");
    }

    let hydrated = set.hydrate(&ToolCall::new("c", name, text));
    match (&parsed, &hydrated) {
        // a JSON string holding JSON is decoded once more (a recorded repair); not JSON at all,
        // hydration may have repaired it (recorded too, see the `repair` target)
        (Some(Value::String(_)) | None, Ok(instance)) => {
            assert!(!instance.repairs().is_empty(), "{name}: {text:?}");
        }
        (Some(Value::String(_)) | None, Err(err)) => assert_structured(err),
        (Some(_), Ok(instance)) => {
            let Some(expected) = &expected else {
                panic!("{name}: hydration accepted what the validator refuses: {text:?}");
            };
            assert!(instance.repairs().is_empty(), "{name}: {text:?}");
            // from text, integers are read by their digits (see `same_as_floats`)
            let typed = instance.args::<T::Args>().expect("the tool's own type");
            let typed = serde_json::to_value(typed).unwrap();
            assert!(
                same_as_floats(&typed, expected),
                "{name}: {text:?} -> {typed}"
            );
            assert_eq!(instance.arguments(), &typed, "{name}: {text:?}");
        }
        (Some(_), Err(err)) => {
            assert_structured(err);
            assert!(
                expected.is_none() || refused_beyond_the_reference(err),
                "{name}: hydration refused what the validator accepts: {text:?} -> {err:?}"
            );
        }
    }

    // the same arguments as an object (Anthropic, Gemini, Ollama, MCP) take the same decision
    if let Some(value) = parsed.filter(|v| !v.is_string()) {
        if let Some(typed) = set.hydrate_fast_only(name, value.clone()) {
            let Some(expected) = &expected else {
                panic!(
                    "{name}: the object fast path accepted what the validator refuses: {text:?}"
                );
            };
            assert_eq!(&as_json::<T::Args>(&*typed), expected, "{name}: {text:?}");
        }
        match set.hydrate(&ToolCall::new("c", name, value)) {
            Ok(instance) => {
                let Some(expected) = &expected else {
                    panic!(
                        "{name}: object hydration accepted what the validator refuses: {text:?}"
                    );
                };
                assert_eq!(instance.arguments(), expected, "{name}: {text:?}");
            }
            Err(err) => {
                assert_structured(&err);
                assert!(
                    expected.is_none() || refused_beyond_the_reference(&err),
                    "{name}: object hydration refused what the validator accepts: {text:?} -> {err:?}"
                );
            }
        }
    }
}
