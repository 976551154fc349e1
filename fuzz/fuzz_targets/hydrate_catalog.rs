//! Arbitrary text as the arguments of dynamic tools (registered from a catalog, schemas written
//! by hand): recursive `$ref`s, unions, patterns, formats, fractions, keywords no plan expresses.
//!
//! Properties, for every input that is JSON:
//! - where the schema compiles to a plan, the plan accepts exactly what the jsonschema validator
//!   accepts (both ways: dynamic tools have no typed reading to excuse a difference);
//! - hydration accepts exactly what the validator accepts (text and object alike), hands back
//!   the value it validated, and explains a refusal with violations.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_fuzz::schemas::DYNAMIC;
use tool_fuzz::{
    assert_structured, integers_as_integers, refused_beyond_the_reference, same_as_floats,
};
use tool_runtime::__private::Plan;
use tool_runtime::validate::Validator;
use tool_runtime::{ErrorCode, ToolCall, ToolSet, hydrate::Arguments};

struct Harness {
    set: ToolSet,
    names: Vec<String>,
    plans: Vec<Option<Plan>>,
    validators: Vec<Validator>,
}

static HARNESS: LazyLock<Harness> = LazyLock::new(|| {
    let mut catalog = Vec::new();
    let mut names = Vec::new();
    let mut plans = Vec::new();
    let mut validators = Vec::new();
    for (i, text) in DYNAMIC.iter().enumerate() {
        let schema: Value = serde_json::from_str(text).expect("the fuzzed schemas are JSON");
        let name = format!("dynamic_{i}");
        catalog.push(serde_json::json!({
            "type": "function", "name": name, "description": "A dynamic tool.",
            "parameters": schema,
        }));
        names.push(name);
        plans.push(Plan::compile(&schema).ok());
        validators.push(Validator::compile(&schema).expect("the fuzzed schemas compile"));
    }
    let mut set = ToolSet::new();
    set.register_catalog(&Value::Array(catalog).to_string())
        .expect("the fuzzed catalog registers");
    Harness {
        set,
        names,
        plans,
        validators,
    }
});

fuzz_target!(|data: &[u8]| {
    let h = &*HARNESS;
    let Some((which, rest)) = tool_fuzz::select(data, h.names.len()) else {
        return;
    };
    let Some(text) = tool_fuzz::text(rest) else {
        return;
    };
    let name = h.names[which].as_str();
    let validator = &h.validators[which];
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        // not JSON: a structured refusal, or a recorded repair
        match h.set.hydrate(&ToolCall::new("c", name, text)) {
            Ok(instance) => assert!(!instance.repairs().is_empty(), "{text:?}"),
            Err(err) => assert_structured(&err),
        }
        return;
    };
    if let Some(plan) = &h.plans[which] {
        assert_eq!(
            plan.accepts(&value),
            validator.is_valid(&value),
            "{name}: plan and validator disagree on {text:?}"
        );
    }
    let normalized = integers_as_integers(&value);
    let expected = validator.is_valid(&normalized);
    let sent: [Option<Arguments>; 2] = [
        (!value.is_string()).then(|| value.clone().into()),
        Some(text.into()),
    ];
    for arguments in sent.into_iter().flatten() {
        let as_text = matches!(arguments, Arguments::Text(_));
        match h.set.hydrate(&ToolCall::new("c", name, arguments)) {
            Ok(instance) if value.is_string() => assert!(!instance.repairs().is_empty()),
            Ok(instance) => {
                assert!(
                    expected,
                    "{name}: accepted what the validator refuses: {text:?}"
                );
                // from text, integers are read by their digits (see `same_as_floats`)
                if as_text {
                    assert!(
                        same_as_floats(instance.arguments(), &normalized),
                        "{name}: {text:?} -> {}",
                        instance.arguments()
                    );
                } else {
                    assert_eq!(instance.arguments(), &normalized, "{name}: {text:?}");
                }
            }
            Err(err) => {
                assert_structured(&err);
                if value.is_string() {
                    continue;
                }
                assert!(
                    !expected || refused_beyond_the_reference(&err),
                    "{name}: refused what the validator accepts: {text:?} -> {err:?}"
                );
                if err.code == ErrorCode::INVALID_ARGUMENTS {
                    assert!(!err.violations.is_empty(), "{name}: {text:?} -> {err:?}");
                }
            }
        }
    }
});
