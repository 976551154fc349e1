//! The differential test's argument types whose serde attributes accept more than their derived
//! schema says (aliases, `deserialize_with`, catch-all variants, `from`, `flatten`, transparent
//! and untagged types), raw arguments the schema refuses whatever serde accepts, repeated keys,
//! and bounds compared across integers and floats.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use tool_runtime::__private::Plan;
use tool_runtime::validate::Validator;
use tool_runtime::{CallContext, ErrorCode, Tool, ToolCall, ToolError, ToolSet, tool, tool::Run};

use crate::differential::{Renamed, differential_typed, one};

// Before the plan checked the text itself, the fast path checked the typed value serialized again, and each
// of these let arguments the validator refuses reach the tool.

/// Reads `q` for `query` and `n` for `limit`.
#[tool(read_only)]
#[derive(Debug)]
struct Aliased {
    /// What to look for.
    #[serde(alias = "q")]
    #[schemars(length(min = 1, max = 20))]
    query: String,
    /// How many.
    #[serde(alias = "n", default = "one")]
    #[schemars(range(min = 1, max = 5))]
    limit: u32,
}

/// Takes its count as a number or as a string of digits.
#[tool(read_only)]
#[derive(Debug)]
struct Coerced {
    /// How many.
    #[serde(deserialize_with = "number_or_digits")]
    #[schemars(range(max = 10))]
    count: u32,
    /// Optional note, never sent back.
    #[serde(default, skip_serializing)]
    #[schemars(length(max = 5))]
    note: String,
}

fn number_or_digits<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u32),
        Digits(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Digits(s) => s.parse().map_err(serde::de::Error::custom),
    }
}

/// A mode with a catch-all variant.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Careful,
    #[serde(other)]
    Unknown,
}

/// A level the type clamps into range while deserializing (`from`).
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(from = "LevelWire")]
struct Level {
    value: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct LevelWire {
    #[schemars(range(max = 10))]
    value: u32,
}

impl From<LevelWire> for Level {
    fn from(w: LevelWire) -> Self {
        Level {
            value: w.value.min(10),
        }
    }
}

/// Paging, flattened into the arguments.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
struct Paging {
    /// Page number.
    #[schemars(range(min = 1, max = 100))]
    page: u32,
}

/// A percentage, transparent over its number.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
struct Percent(#[schemars(range(max = 100))] u8);

/// A catch-all enum, a `from` conversion, a flattened struct and a transparent newtype.
#[tool(read_only)]
#[derive(Debug)]
struct Converted {
    /// The mode.
    mode: Mode,
    /// The level.
    level: Level,
    /// Paging.
    #[serde(flatten)]
    paging: Paging,
    /// Share.
    share: Percent,
}

/// An id that is a number or a name (`untagged`): the schema is an `anyOf` no plan expresses,
/// so the validator checks every call.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Id {
    Number(#[schemars(range(max = 99))] u32),
    Name(#[schemars(length(min = 2))] String),
}

/// Looks something up by id.
#[tool(read_only)]
#[derive(Debug)]
struct Untagged {
    /// The id.
    id: Id,
}

macro_rules! no_body {
    ($($t:ty),*) => {$(
        impl Run for $t {
            type Output = ();
            type Error = ToolError;

            async fn run(self, _cx: &CallContext) -> Result<(), ToolError> {
                let _ = format!("{self:?}");
                Ok(())
            }
        }
    )*};
}

no_body!(Aliased, Converted, Untagged, Renamed);

impl Run for Coerced {
    type Output = usize;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<usize, ToolError> {
        Ok(self.count as usize + self.note.len())
    }
}

#[test]
fn aliases_are_not_the_properties_they_stand_for() {
    differential_typed::<Aliased>(0x5eed_0003, &[("query", "q"), ("limit", "n")], false);
}

#[test]
fn deserialize_with_and_skip_serializing_do_not_hide_values() {
    differential_typed::<Coerced>(0x5eed_0004, &[], false);
}

#[test]
fn catch_all_variants_from_flatten_and_transparent() {
    differential_typed::<Converted>(0x5eed_0005, &[("page", "p")], false);
}

#[test]
fn untagged_enums_keep_the_validator() {
    differential_typed::<Untagged>(0x5eed_0006, &[], false);
}

/// Raw arguments the schema refuses, each of which serde reads into a typed value that the schema
/// *accepts* once serialized again: what checking the typed value would have let through. The
/// fast path must refuse every one, with the validator's violations.
#[test]
fn raw_arguments_the_schema_refuses_are_refused_whatever_serde_accepts() {
    fn case<T: Tool>(raw: &str, pointer: &str) {
        let name = T::definition().name.as_ref();
        let schema = T::definition().parameters_value();
        let validator = Validator::compile(&schema).unwrap();
        let raw_value: Value = serde_json::from_str(raw).unwrap();
        assert!(!validator.is_valid(&raw_value), "{name}: {raw} is valid");
        // the premise: serde takes it, and the typed value passes the schema
        let typed: T::Args = serde_json::from_str(raw).unwrap();
        let round_trip = serde_json::to_value(&typed).unwrap();
        assert!(
            validator.is_valid(&round_trip),
            "{name}: {raw} -> {round_trip} should pass once typed"
        );
        let set = ToolSet::new().with::<T>().unwrap();
        assert!(set.has_fast_path(name));
        for args in [
            tool_runtime::hydrate::Arguments::from(raw),
            tool_runtime::hydrate::Arguments::from(raw_value.clone()),
        ] {
            let err = set.hydrate(&ToolCall::new("c", name, args)).unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS, "{name}: {raw}");
            assert!(
                err.violations.iter().any(|v| v.pointer == pointer),
                "{name}: {raw}: {:?}",
                err.violations
            );
        }
    }
    // an alias instead of the required property
    case::<Aliased>(r#"{"q": "rust"}"#, "");
    // digits where the schema wants an integer
    case::<Coerced>(r#"{"count": "7"}"#, "/count");
    // a value serde reads but never writes back
    case::<Coerced>(r#"{"count": 7, "note": "far too long"}"#, "/note");
    // a variant name the catch-all swallows
    case::<Converted>(
        r#"{"mode": "reckless", "level": {"value": 1}, "page": 1, "share": 5}"#,
        "/mode",
    );
    // a value the `from` conversion clamps into range
    case::<Converted>(
        r#"{"mode": "fast", "level": {"value": 50}, "page": 1, "share": 5}"#,
        "/level/value",
    );
    // a struct sent as an array of its values
    case::<Aliased>(r#"["rust", 2]"#, "");
    case::<Converted>(
        r#"{"mode": "fast", "level": [3], "page": 1, "share": 5}"#,
        "/level",
    );
}

/// A text that repeats a key counts it once, as the validator (which sees the parsed value)
/// does: `minProperties` cannot be met by repeating a key.
#[test]
fn repeated_keys_count_once() {
    let plan = Plan::compile(&json!({
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "minProperties": 2
    }))
    .unwrap();
    type Map = std::collections::HashMap<String, i64>;
    assert!(plan.from_str::<Map>(r#"{"a": 1, "b": 2}"#, 64).is_ok());
    assert!(plan.from_str::<Map>(r#"{"a": 1, "a": 2}"#, 64).is_err());
    // and every occurrence is checked, so the stricter of the two decides
    assert!(
        plan.from_str::<Map>(r#"{"a": "x", "a": 1, "b": 2}"#, 64)
            .is_err()
    );
}

/// Bounds compare a float with an integer exactly, as the validator does: `2^64` written as a
/// float is above a `maximum` of `u64::MAX`, although both are the same `f64`; an integer just
/// above a fractional bound is above it.
#[test]
fn bounds_compare_floats_with_integers_exactly() {
    let schema = json!({
        "type": "object",
        "properties": {
            "big": {"type": "integer", "maximum": 18446744073709551615u64},
            "low": {"type": "number", "exclusiveMinimum": -9223372036854775808i64},
            "near": {"type": "integer", "maximum": 9007199254740992.5}
        }
    });
    let plan = Plan::compile(&schema).unwrap();
    let validator = Validator::compile(&schema).unwrap();
    for (text, valid) in [
        (r#"{"big": 18446744073709551615}"#, true),
        (r#"{"big": 18446744073709551616.0}"#, false),
        (r#"{"big": 18446744073709551695}"#, false),
        (r#"{"big": 1.8446744073709550e19}"#, true),
        (r#"{"low": -9223372036854775808.0}"#, false),
        (r#"{"low": -9223372036854774784.0}"#, true),
        (r#"{"near": 9007199254740992}"#, true),
        (r#"{"near": 9007199254740993}"#, false),
    ] {
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(validator.is_valid(&value), valid, "validator: {text}");
        assert_eq!(plan.accepts(&value), valid, "plan: {text}");
        type Map = std::collections::HashMap<String, f64>;
        if !valid {
            assert!(
                plan.from_str::<Map>(text, 64).is_err(),
                "plan on text: {text}"
            );
        }
    }
}
