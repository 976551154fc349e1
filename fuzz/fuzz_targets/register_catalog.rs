//! Arbitrary text as a catalog (a JSON array of definitions), or as one dynamic tool's
//! parameters schema, registered into a `ToolSet`.
//!
//! Properties: registration never panics and a refusal is a `RegistrationError` that says
//! something; what registers can be read back, declared for every provider without panicking,
//! and validates arguments without panicking, with the plan (where one was compiled) deciding
//! as the validator does. The runner's `-timeout` bounds the time per input, which covers
//! patterns in a catalog (the validator's regex engine gives up past a backtracking limit).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tool_fuzz::assert_structured;
use tool_providers::codec::Provider;
use tool_runtime::__private::Plan;
use tool_runtime::validate::Validator;
use tool_runtime::{ToolCall, ToolSet, definition::ToolDefinition};

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = tool_fuzz::select(data, 2) else {
        return;
    };
    let Some(text) = tool_fuzz::text(rest) else {
        return;
    };
    let mut set = ToolSet::new();
    let registered = if mode == 0 {
        set.register_catalog(text).map(|_| ())
    } else {
        let Ok(schema) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let def = ToolDefinition::new("fuzzed", "A fuzzed tool.", &schema);
        set.register_dynamic(def, None).map(|_| ())
    };
    if let Err(err) = registered {
        assert!(!err.to_string().is_empty());
        return;
    }
    let definitions: Vec<ToolDefinition> = set.definitions().cloned().collect();
    for def in &definitions {
        // registration promised a schema that can be read and compiled
        let schema = def
            .try_parameters_value()
            .expect("a registered schema can be read");
        let validator = Validator::compile(&schema).expect("a registered schema compiles");
        let plan = Plan::compile(&schema).ok();
        // the schema's own examples and defaults, and a few shapes any schema has an opinion on
        let mut probes = vec![
            json!({}),
            json!({"a": 1, "b": "x", "c": [true, null], "d": {"e": 1.5}}),
            json!([]),
            json!("x"),
        ];
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            let mut filled = serde_json::Map::new();
            for (k, sub) in props {
                let v = sub
                    .get("default")
                    .or_else(|| sub.get("const"))
                    .or_else(|| sub.get("enum").and_then(|e| e.get(0)))
                    .or_else(|| sub.get("examples").and_then(|e| e.get(0)))
                    .cloned()
                    .unwrap_or(json!("x"));
                filled.insert(k.clone(), v);
            }
            probes.push(Value::Object(filled));
        }
        for probe in probes {
            let expected = validator.is_valid(&probe);
            let _ = validator.violations(&probe);
            if let Some(plan) = &plan {
                assert_eq!(plan.accepts(&probe), expected, "{}: {probe}", def.name);
            }
            match set.hydrate(&ToolCall::new("c", def.name.to_string(), probe.clone())) {
                Ok(instance) => {
                    assert!(
                        expected || probe.is_string(),
                        "{}: accepted {probe}",
                        def.name
                    );
                    let _ = instance.arguments();
                }
                Err(err) => assert_structured(&err),
            }
        }
        // every provider declares it or says why not
        for provider in Provider::ALL {
            if let Ok(declaration) = provider.codec().declare(def) {
                serde_json::to_string(&declaration).expect("a declaration serializes");
            }
        }
    }
});
