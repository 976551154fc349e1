//! Differential test: the fast path (serde straight into the typed arguments, the compiled plan
//! checking the text as serde reads it) accepts exactly what the jsonschema validator accepts,
//! on generated valid and invalid inputs for several schema shapes, including argument types
//! whose serde attributes accept more than their schema says. A fixed seed keeps failures
//! reproducible.

use crate::common;
use tool_runtime::__private::TestHooks as _;

use std::any::Any;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tool_runtime::__private::Plan;
use tool_runtime::validate::Validator;
use tool_runtime::{ErrorCode, Tool, ToolCall, ToolError, ToolSet, tool};

use common::{CreateNote, SearchNotes, SearchNotesTool};

const CASES: usize = 3000;

/// Generates instances near the edges of a schema: mostly valid, often just out of range, now
/// and then of the wrong type, missing a required key or carrying an unknown one.
struct Gen<'a> {
    rng: fastrand::Rng,
    root: &'a Value,
    /// Stay inside the bounds and keep the shape (about half the cases), so valid inputs are
    /// common even for schemas with many constrained fields.
    tame: bool,
    /// `(property, other name)`: untame cases sometimes send the property under the other name
    /// (a serde alias the schema does not know).
    aliases: &'a [(&'a str, &'a str)],
}

impl<'a> Gen<'a> {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.f64() < p
    }

    fn resolve<'s>(&self, schema: &'s Value) -> &'s Value
    where
        'a: 's,
    {
        let root: &'s Value = self.root;
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => root.pointer(&r[1..]).expect("local ref"),
            None => schema,
        }
    }

    fn wrong_type(&mut self) -> Value {
        match self.rng.u8(0..6) {
            0 => Value::Null,
            1 => json!(true),
            2 => json!(self.rng.i64(-5..20)),
            3 => json!(2.5),
            4 => json!("x"),
            _ => json!([1]),
        }
    }

    fn around(&mut self, bound: Option<f64>, default: f64) -> f64 {
        let b = bound.unwrap_or(default);
        if self.tame {
            return b;
        }
        match self.rng.u8(0..4) {
            0 => b,
            1 => b - 1.0,
            2 => b + 1.0,
            _ => b + self.rng.f64() * 4.0 - 2.0,
        }
    }

    fn string(&mut self, schema: &Value) -> Value {
        if schema.get("pattern").is_some() {
            let pool = ["abc", "a-b-1", "ABC", "a b", "", "aa", "c", "abcc", "zz-9"];
            if self.tame {
                return json!(["abc", "aa", "abcc"][self.rng.usize(0..3)]);
            }
            return json!(pool[self.rng.usize(0..pool.len())]);
        }
        let min = schema.get("minLength").and_then(Value::as_f64);
        let max = schema.get("maxLength").and_then(Value::as_f64);
        let bound = if self.chance(0.5) { min } else { max };
        let len = self.around(bound, 5.0).max(0.0) as usize;
        let chars = ['a', 'b', 'c', 'é', '😀', ' '];
        json!(
            (0..len)
                .map(|_| chars[self.rng.usize(0..chars.len())])
                .collect::<String>()
        )
    }

    fn number(&mut self, schema: &Value, integer: bool) -> Value {
        if self.tame {
            let get = |k: &str| schema.get(k).and_then(Value::as_f64);
            let lo = get("minimum")
                .or(get("exclusiveMinimum").map(|x| x + 0.5))
                .unwrap_or(0.0);
            let hi = get("maximum")
                .or(get("exclusiveMaximum").map(|x| x - 0.5))
                .unwrap_or(lo + 5.0);
            let mut x = lo + self.rng.f64() * (hi - lo);
            if let Some(m) = get("multipleOf") {
                x = (x / m).ceil() * m;
            }
            return if integer {
                json!(x.ceil() as i64)
            } else {
                json!(x)
            };
        }
        if self.chance(0.05) {
            // a number as a string: what a lenient `deserialize_with` would take
            return json!(self.rng.i64(-2..12).to_string());
        }
        let keys = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
        let bound = keys[self.rng.usize(0..4)];
        let x = self.around(schema.get(bound).and_then(Value::as_f64), 3.0);
        if integer && !self.chance(0.1) {
            json!(x.round() as i64)
        } else if self.chance(0.3) {
            json!(x.round() + 0.5)
        } else {
            json!(x.round())
        }
    }

    fn value(&mut self, schema: &Value, depth: usize) -> Value {
        let schema = self.resolve(schema);
        if depth > 4 || (!self.tame && self.chance(0.03)) {
            return self.wrong_type();
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            let b = &branches[self.rng.usize(0..branches.len())];
            return self.value(b, depth + 1);
        }
        if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
            if self.chance(0.1) {
                return json!("not-a-variant");
            }
            let b = &branches[self.rng.usize(0..branches.len())];
            return self.value(b, depth + 1);
        }
        if let Some(c) = schema.get("const") {
            return if self.chance(0.8) {
                c.clone()
            } else {
                self.wrong_type()
            };
        }
        if let Some(e) = schema.get("enum").and_then(Value::as_array) {
            return if self.chance(0.85) {
                e[self.rng.usize(0..e.len())].clone()
            } else {
                json!("other")
            };
        }
        let ty = match schema.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts[self.rng.usize(0..ts.len())].as_str().unwrap().to_owned(),
            _ => ["string", "integer", "object"][self.rng.usize(0..3)].to_owned(),
        };
        match ty.as_str() {
            "null" => Value::Null,
            "boolean" => json!(self.chance(0.5)),
            "string" => self.string(schema),
            "integer" => self.number(schema, true),
            "number" => self.number(schema, false),
            "array" => {
                let min = schema.get("minItems").and_then(Value::as_f64);
                let max = schema.get("maxItems").and_then(Value::as_f64);
                let bound = if self.chance(0.5) { min } else { max };
                let len = self.around(bound, 2.0).clamp(0.0, 12.0);
                let items = schema.get("items").cloned().unwrap_or(json!({}));
                Value::Array(
                    (0..len as usize)
                        .map(|_| self.value(&items, depth + 1))
                        .collect(),
                )
            }
            _ => {
                let mut out = Map::new();
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    for (k, sub) in props {
                        let keep = if required.contains(&k.as_str()) {
                            self.tame || !self.chance(0.04)
                        } else {
                            self.chance(0.7)
                        };
                        if keep {
                            let v = self.value(sub, depth + 1);
                            out.insert(k.clone(), v);
                        }
                    }
                }
                if let Some(extra) = schema.get("additionalProperties").filter(|v| v.is_object()) {
                    for i in 0..self.rng.usize(0..4) {
                        let v = self.value(extra, depth + 1);
                        out.insert(format!("k{i}"), v);
                    }
                }
                if !self.tame && self.chance(0.05) {
                    out.insert("unexpected".into(), json!(1));
                }
                for (name, alias) in self.aliases {
                    if !self.tame
                        && self.chance(0.2)
                        && let Some(v) = out.remove(*name)
                    {
                        out.insert((*alias).to_owned(), v);
                    }
                }
                if !self.tame && self.chance(0.03) {
                    // an object sent as the array of its values, which serde reads into a struct
                    return Value::Array(out.into_iter().map(|(_, v)| v).collect());
                }
                Value::Object(out)
            }
        }
    }
}

/// Whether the reference (the validator, then serde from the validated value) accepts.
fn reference<A: DeserializeOwned>(validator: &Validator, value: &Value) -> bool {
    let value = integers_as_integers(value);
    validator.is_valid(&value) && serde_json::from_value::<A>(value).is_ok()
}

/// `value` as hydration reads it: a float with no fraction is the integer it equals (`2.0` is
/// `2`), on the typed and the dynamic paths alike.
fn integers_as_integers(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && (0.0..2f64.powi(64)).contains(&f) => {
                Value::from(f as u64)
            }
            Some(f) if n.is_f64() && f.fract() == 0.0 && (-(2f64.powi(63))..0.0).contains(&f) => {
                Value::from(f as i64)
            }
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(integers_as_integers).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), integers_as_integers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// That the fast path's typed arguments are the value serde builds from the validated `value`.
fn assert_builds_what_serde_builds<A: Serialize + 'static, R: DeserializeOwned + Serialize>(
    typed: &(dyn Any + Send + Sync),
    value: &Value,
    context: &str,
) {
    let fast = serde_json::to_value(typed.downcast_ref::<A>().unwrap()).unwrap();
    let slow = serde_json::from_value::<R>(value.clone()).unwrap();
    assert_eq!(
        fast,
        serde_json::to_value(slow).unwrap(),
        "{context}: {value}"
    );
}

/// `reader`: whether `#[tool]` must have generated a reader for `T` (see
/// `tool_runtime::hydrate::plan::fields`) that stands for the plan; otherwise the guard reads.
pub(crate) fn differential_typed<T: Tool>(seed: u64, aliases: &[(&str, &str)], reader: bool) {
    differential_against::<T, T::Args>(seed, aliases, reader)
}

/// [`differential_typed`] with `R` as the reference: a type with serde's derives that reads
/// what `T::Args` must read. A function tool's hidden args type deserializes through its own
/// generated reader, so it cannot be its own reference.
pub(crate) fn differential_against<T: Tool, R: DeserializeOwned + Serialize>(
    seed: u64,
    aliases: &[(&str, &str)],
    reader: bool,
) {
    let schema = T::definition().parameters_value();
    let validator = Validator::compile(&schema).unwrap();
    let set = ToolSet::new().with::<T>().unwrap();
    let name = T::definition().name.as_ref();
    // a schema the plan cannot express keeps the validator for every call
    let plan = Plan::compile(&schema).ok();
    assert_eq!(set.has_fast_path(name), plan.is_some(), "{name}");
    assert_eq!(set.has_generated_reader(name), reader, "{name}");
    let mut generator = Gen {
        rng: fastrand::Rng::with_seed(seed),
        root: &schema,
        tame: false,
        aliases,
    };
    let (mut fast_accepts, mut object_fast_accepts, mut rejects) = (0, 0, 0);
    for i in 0..CASES {
        generator.tame = i % 2 == 0;
        let value = generator.value(&schema, 0);
        let text = value.to_string();
        let expected = reference::<R>(&validator, &value);
        if let Some(plan) = &plan
            && plan.from_str::<T::Args>(&text, usize::MAX).is_ok()
        {
            assert!(
                expected,
                "case {i}: the guard accepted what the validator refuses: {text}"
            );
        }
        // the fast path as hydration takes it (the generated reader where there is one)
        if let Some(typed) = set.hydrate_fast_only(name, text.as_str()) {
            fast_accepts += 1;
            assert!(
                expected,
                "case {i}: fast path accepted what the validator refuses: {text}"
            );
            // and it builds the very value serde builds from the validated arguments
            assert_builds_what_serde_builds::<T::Args, R>(&*typed, &value, &format!("case {i}"));
        }
        let hydrated = set.hydrate(&ToolCall::new("c", name, text.as_str()));
        assert_eq!(
            hydrated.is_ok(),
            expected,
            "case {i}: {text} -> {hydrated:?}"
        );
        // valid arguments with one key left out, key by key: whether a key may be missing is
        // decided by the schema's `required`, whatever serde fills in
        if expected
            && i < 400
            && let Some(object) = value.as_object()
        {
            for key in object.keys() {
                let mut fewer = object.clone();
                fewer.remove(key);
                let fewer = Value::Object(fewer);
                let text = fewer.to_string();
                let expected = reference::<R>(&validator, &fewer);
                if set.hydrate_fast_only(name, text.as_str()).is_some() {
                    assert!(
                        expected,
                        "case {i} without {key:?}: fast path accepted {text}"
                    );
                }
                let hydrated = set.hydrate(&ToolCall::new("c", name, text.as_str()));
                assert_eq!(
                    hydrated.is_ok(),
                    expected,
                    "case {i} without {key:?}: {text}"
                );
            }
        }
        // arguments as an object (Anthropic) take the same decision, on the fast path as well
        if let Some(typed) = set.hydrate_fast_only(name, value.clone()) {
            object_fast_accepts += 1;
            assert!(
                expected,
                "case {i}: the object fast path accepted what the validator refuses: {text}"
            );
            assert_builds_what_serde_builds::<T::Args, R>(
                &*typed,
                &value,
                &format!("case {i} as object"),
            );
        }
        let hydrated = set.hydrate(&ToolCall::new("c", name, value.clone()));
        assert_eq!(hydrated.is_ok(), expected, "case {i} as object: {text}");
        if !expected {
            rejects += 1;
            let err = hydrated.unwrap_err();
            let explained = !err.violations.is_empty()
                || err.message.contains("do not fit")
                || (value.is_string() && err.code == ErrorCode::INVALID_JSON);
            assert!(explained, "{err:?}");
        }
    }
    // the generator must exercise both sides, or the test proves nothing
    if plan.is_some() {
        assert!(
            fast_accepts > CASES / 10,
            "only {fast_accepts} fast accepts"
        );
        // the object path is the same decision: it accepts on the fast path as often
        assert_eq!(object_fast_accepts, fast_accepts, "{name}");
    }
    assert!(rejects > CASES / 10, "only {rejects} rejections");
}

#[test]
fn realistic_search_tool() {
    differential_typed::<SearchNotes>(0x5eed_0001, &[], false);
}

#[test]
fn generated_reader_realistic_search_tool() {
    differential_typed::<SearchNotesTool>(0x5eed_0011, &[("query", "q")], true);
}

/// A strict function tool with every kind of leaf the reader reads directly (strings, signed
/// and unsigned integers, floats, options, vectors, an option of a vector), a rename, and a
/// closed nested struct read through the guard. Strict: every key required, objects closed.
#[tool(create, strict)]
#[allow(clippy::too_many_arguments)]
fn book_room(
    /// Room name.
    #[arg(min_length = 2, max_length = 12)]
    room: String,
    /// Floor.
    #[arg(min = -2, max = 20)]
    floor: i64,
    /// Hours.
    #[arg(min = 0.5, max = 8.0)]
    hours: f64,
    /// Share of the room.
    #[arg(max = 1.0)]
    share: f32,
    /// A note.
    #[arg(max_length = 5)]
    note: Option<String>,
    /// Attendee ages.
    #[schemars(length(min = 1, max = 4), range(max = 120))]
    ages: Vec<u8>,
    /// Extra tags.
    tags: Option<Vec<String>>,
    /// Priority.
    #[serde(rename = "prio")]
    #[arg(min = 1, max = 5)]
    priority: u32,
    /// Where.
    location: common::Location,
) -> Result<String, ToolError> {
    let _ = (floor, hours, share, note, ages, tags, priority, location);
    Ok(room)
}

#[test]
fn generated_reader_strict_function_with_every_leaf_kind() {
    differential_against::<book_room, BookRoomArgs>(0x5eed_0012, &[("room", "name")], true);
}

/// `book_room`'s arguments as serde's derive reads them: the reference its reader is held to.
#[derive(serde::Deserialize, Serialize)]
struct BookRoomArgs {
    room: String,
    floor: i64,
    hours: f64,
    share: f32,
    note: Option<String>,
    ages: Vec<u8>,
    tags: Option<Vec<String>>,
    #[serde(rename = "prio")]
    priority: u32,
    location: common::Location,
}

/// A struct with `rename_all`, `deny_unknown_fields`, defaults (a function's and the type's), an
/// open nested map read through the guard, and an `#[arg(default = ..)]`.
#[tool(read_only)]
#[derive(Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Renamed {
    /// Page size.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 9))]
    page_size: u32,
    /// Counters.
    #[serde(default)]
    counters: std::collections::BTreeMap<String, u8>,
    /// First word.
    first_word: Option<String>,
    /// Retries.
    #[arg(default = 2, max = 4)]
    retries: i8,
    /// Where it starts (a nested reader behind an option).
    origin: Option<common::Location>,
    /// Where it stops (nested readers in an array).
    #[schemars(length(max = 3))]
    stops: Vec<common::Location>,
    /// The order (a unit-variant enum's reader).
    #[serde(default = "newest")]
    order: Option<common::SortOrder>,
}

fn newest() -> Option<common::SortOrder> {
    Some(common::SortOrder::Newest)
}

#[test]
fn generated_reader_renames_defaults_and_closed_objects() {
    differential_typed::<Renamed>(0x5eed_0013, &[("pageSize", "page_size")], true);
}

#[test]
fn closed_objects_patterns_maps_and_nullable_structs() {
    differential_typed::<CreateNote>(0x5eed_0002, &[], false);
}

/// For arguments that keep every key (JSON values), plan and validator agree both ways.
#[test]
fn plan_equals_validator_on_values() {
    let schemas = [
        json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": -3, "exclusiveMaximum": 7, "multipleOf": 2},
                "x": {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5},
                "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-c]+$"},
                "e": {"enum": ["a", "b", 1, null]},
                "c": {"const": 3},
                "k": {"oneOf": [{"const": "x", "description": "X"}, {"const": "y"}]},
                "arr": {"type": "array", "items": {"type": "integer", "maximum": 3},
                        "minItems": 1, "maxItems": 3},
                "obj": {"type": "object", "properties": {"a": {"type": "string"}},
                        "required": ["a"], "additionalProperties": false},
                "map": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                        "maxProperties": 2},
                "opt": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]},
                "t": {"type": ["string", "null"], "maxLength": 1}
            },
            "required": ["n", "s"],
            "$defs": {"P": {"type": "object", "properties": {
                "v": {"type": "boolean"}, "next": {"$ref": "#/$defs/P"}}}}
        }),
        SearchNotes::definition().parameters_value(),
        CreateNote::definition().parameters_value(),
        json!({"type": "object", "additionalProperties": false,
               "properties": {"only": {"type": "array", "items": {"enum": [1, 2.5, "z"]}}}}),
        json!({"type": "object", "properties": {"a": {"type": "integer"}},
               "additionalProperties": {"type": "string"}, "minProperties": 2, "maxProperties": 3}),
    ];
    for (n, schema) in schemas.iter().enumerate() {
        let validator = Validator::compile(schema).unwrap();
        let plan = Plan::compile(schema).unwrap();
        let mut generator = Gen {
            rng: fastrand::Rng::with_seed(0x5eed_0100 + n as u64),
            root: schema,
            tame: false,
            aliases: &[],
        };
        let mut accepted = 0;
        for i in 0..CASES {
            generator.tame = i % 2 == 0;
            let value = generator.value(schema, 0);
            let expected = validator.is_valid(&value);
            assert_eq!(
                plan.accepts(&value),
                expected,
                "schema {n}, case {i}: {value}"
            );
            accepted += usize::from(expected);
        }
        assert!(
            accepted > CASES / 20 && accepted < CASES - CASES / 20,
            "schema {n}: {accepted}"
        );
    }
}

/// The default page size (of `Renamed` and the serde-attribute types).
pub(crate) fn one() -> u32 {
    1
}

/// A tool with an `f64` its reader reads as serde does: below 2^53 the float read is the number
/// sent, beyond it an integer and its float may differ.
#[tool(read_only)]
fn weigh(
    /// A weight.
    #[arg(min = -1e300, max = 9007199254740992.0)]
    grams: f64,
) -> Result<f64, ToolError> {
    Ok(grams)
}

#[test]
fn floats_beyond_two_to_the_53_are_judged_as_sent() {
    let set = ToolSet::new().with::<weigh>().unwrap();
    assert!(set.has_generated_reader("weigh"));
    let hydrate = |text: &str| set.hydrate(&ToolCall::new("c", "weigh", text));
    // within the range the fast path decides
    assert!(
        set.hydrate_fast_only("weigh", r#"{"grams": 12.5}"#)
            .is_some()
    );
    assert!(hydrate(r#"{"grams": 12.5}"#).is_ok());
    // 2^53 + 1 reads as the float 2^53, which the maximum admits; the number sent is above it,
    // so the fast path leaves it to the slow path, which refuses it
    assert!(
        set.hydrate_fast_only("weigh", r#"{"grams": 9007199254740993}"#)
            .is_none()
    );
    let refused = hydrate(r#"{"grams": 9007199254740993}"#).unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_ARGUMENTS, "{refused:?}");
    // a large number the schema admits is still accepted, by the slow path
    let accepted = hydrate(r#"{"grams": -1e200}"#).unwrap();
    assert_eq!(accepted.arguments()["grams"], json!(-1e200));
}
