//! A verbatim schema against the argument types `#[tool]` cannot see into (a struct or enum of
//! the author's, `serde_json::Value`, a field read `with` a module): registration reads values
//! the schema accepts through the tool's argument type and refuses the tool when the type
//! refuses one, naming the property, what the schema says, what the type refused and the fix.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{ToolCall, ToolSet, hydrate::Arguments, tool, toolset::RegistrationError};

/// A point, read from an object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    x: i64,
    y: i64,
}

/// Says the point is a string: every call either fails the schema (an object) or the type
/// (a string).
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"at":{"type":"string","description":"Where."}},"required":["at"]}"#
)]
fn place_as_string(at: Point) -> i64 {
    at.x + at.y
}

/// Describes the point as the type reads it.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"at":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"],"examples":[{"x":1,"y":2}]}},"required":["at"]}"#
)]
fn place(at: Point) -> i64 {
    at.x + at.y
}

/// A colour of the author's, read by its lowercase name.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Colour {
    /// Red.
    Red,
    /// Green.
    Green,
}

/// Its schema offers a colour the type does not have.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"colour":{"type":"string","enum":["red","green","blue"]}},"required":["colour"]}"#
)]
fn paint_blue(colour: Colour) -> String {
    format!("{colour:?}")
}

/// Its schema's enumeration is the type's.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"colour":{"type":"string","enum":["red","green"],"default":"red"}},"required":["colour"]}"#
)]
fn paint(colour: Colour) -> String {
    format!("{colour:?}")
}

/// Anything goes: `Value` reads every JSON value, whatever the schema allows.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"payload":{"type":["string","integer","number","boolean","array","object","null"],"examples":[1,"x",[1],{"a":null}]}},"required":["payload"]}"#
)]
fn echo(payload: Value) -> Value {
    payload
}

/// A date read from text: `""` is not a date, but it is a string; only the kind is checked for
/// samples, so a type that refuses a value of the right kind is not a disagreement.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Day(String);

impl TryFrom<String> for Day {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let ok = s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-';
        ok.then(|| Day(s.clone()))
            .ok_or_else(|| format!("{s:?} is not a YYYY-MM-DD date"))
    }
}

impl From<Day> for String {
    fn from(d: Day) -> String {
        d.0
    }
}

/// A date as a string, with an example that is one.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"on":{"type":"string","format":"date","examples":["2024-05-01"]}},"required":["on"]}"#
)]
fn schedule(on: Day) -> String {
    on.0
}

/// The same with an example that is not a date: the schema's own value must be readable.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"on":{"type":"string","examples":["next tuesday"]}},"required":["on"]}"#
)]
fn schedule_loosely(on: Day) -> String {
    on.0
}

/// Read `with` a module: a count written as text.
mod as_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(n: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&n.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Args with a field read `with` a module, whose schema says integer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Count {
    /// How many, read from text.
    #[serde(with = "as_text")]
    n: u32,
    /// A label.
    label: String,
}

/// The field is read from text, the schema says integer.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"count":{"type":"object","properties":{"n":{"type":"integer"},"label":{"type":"string"}},"required":["n","label"]}},"required":["count"]}"#
)]
fn tally(count: Count) -> u32 {
    count.n
}

fn refusal(set: Result<ToolSet, RegistrationError>) -> RegistrationError {
    match set {
        Err(e) => e,
        Ok(_) => panic!("the tool was registered"),
    }
}

#[test]
fn a_struct_the_schema_calls_a_string_is_refused_with_the_property_and_the_fix() {
    let err = refusal(ToolSet::new().with::<place_as_string>());
    let RegistrationError::TypeDisagrees {
        name,
        property,
        schema,
        allows,
        refused,
        fix,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(name, "place_as_string");
    assert_eq!(property, "at");
    assert!(schema.contains(r#""type":"string""#), "{schema}");
    assert!(allows.contains("\"type\": \"string\""), "{allows}");
    assert!(
        refused.contains("invalid type") && refused.contains("struct Point"),
        "{refused}"
    );
    assert!(fix.contains("\"type\""), "{fix}");
    let text = err.to_string();
    assert!(
        text.contains("place_as_string") && text.contains("\"at\""),
        "{text}"
    );
}

#[test]
fn a_struct_described_as_it_is_read_registers_and_runs() {
    let set = ToolSet::new().with::<place>().expect("the schema agrees");
    let call = ToolCall::new(
        "1",
        "place",
        Arguments::Json(json!({"at": {"x": 1, "y": 2}})),
    );
    assert!(set.hydrate(&call).is_ok());
}

#[test]
fn an_enum_value_the_type_does_not_have_is_refused() {
    let err = refusal(ToolSet::new().with::<paint_blue>());
    let RegistrationError::TypeDisagrees {
        property, allows, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(property, "colour");
    assert!(allows.contains("`enum` value \"blue\""), "{allows}");
    assert!(err.to_string().contains("unknown variant `blue`"), "{err}");
    ToolSet::new()
        .with::<paint>()
        .expect("red and green are colours");
}

#[test]
fn serde_json_value_takes_anything_the_schema_allows() {
    ToolSet::new()
        .with::<echo>()
        .expect("Value reads every JSON value");
}

#[test]
fn a_sample_of_the_right_kind_that_is_not_a_valid_value_passes_but_an_example_must_be_read() {
    ToolSet::new()
        .with::<schedule>()
        .expect("\"\" is a string the type refuses by value, not by kind");
    let err = refusal(ToolSet::new().with::<schedule_loosely>());
    let RegistrationError::TypeDisagrees {
        property,
        allows,
        refused,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(property, "on");
    assert!(
        allows.contains("`examples` value \"next tuesday\""),
        "{allows}"
    );
    assert!(refused.contains("not a YYYY-MM-DD date"), "{refused}");
}

#[test]
fn a_field_read_with_a_module_is_checked_inside_its_struct() {
    let err = refusal(ToolSet::new().with::<tally>());
    let RegistrationError::TypeDisagrees {
        property, refused, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    // the refusal is placed at the tool's property that holds the field
    assert_eq!(property, "count");
    assert!(refused.contains("invalid type"), "{refused}");
}

#[test]
fn the_refusal_holds_for_every_set_in_the_process() {
    // the check is made once per tool type; a second set gets the same answer
    let first = refusal(ToolSet::new().with::<place_as_string>());
    let second = refusal(ToolSet::new().with::<place_as_string>());
    assert_eq!(first, second);
    assert_eq!(json!(first.to_string()), json!(second.to_string()));
}

/// A tool whose verbatim schema comes with examples, built by hand as a build without the
/// `schema-checks` feature leaves them: unchecked until registration.
struct Labelled<const GOOD: bool>;

impl<const GOOD: bool> tool_runtime::Tool for Labelled<GOOD> {
    type Args = Value;
    type Output = Value;

    fn definition() -> &'static tool_runtime::definition::ToolDefinition {
        static DEFS: [std::sync::LazyLock<tool_runtime::definition::ToolDefinition>; 2] = [
            std::sync::LazyLock::new(|| labelled(r#"{"label": "a", "count": 1}"#)),
            std::sync::LazyLock::new(|| labelled(r#"{"label": 7}"#)),
        ];
        &DEFS[usize::from(!GOOD)]
    }

    async fn call(
        args: Value,
        _: &tool_runtime::CallContext,
    ) -> Result<Value, tool_runtime::ToolError> {
        Ok(args)
    }
}

fn labelled(second_example: &str) -> tool_runtime::definition::ToolDefinition {
    tool_runtime::definition::DefinitionBuilder::new("labelled", "Labels a thing.")
        .verbatim(
            r#"{"type":"object","properties":{"label":{"type":"string"},"count":{"type":"integer"}},"required":["label"]}"#,
        )
        .examples(&[r#"{"label": "b"}"#, second_example])
        .build()
}

/// An example that does not fit a verbatim schema is refused when the tool is registered,
/// naming the example and the property, whether or not the macro checked it at compile time.
#[test]
fn examples_of_verbatim_schemas_are_checked_at_registration() {
    ToolSet::new().with::<Labelled<true>>().unwrap();
    match ToolSet::new().with::<Labelled<false>>() {
        Err(RegistrationError::InvalidSchema { name, error }) => {
            assert_eq!(name, "labelled");
            let error = error.to_string();
            assert!(
                error.contains("example 2") && error.contains("/label"),
                "{error}"
            );
        }
        other => panic!("expected the example to be refused, got {:?}", other.err()),
    }
}
