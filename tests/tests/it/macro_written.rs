//! Schemas written at compile time (`tool_runtime::schema::written`) against what schemars
//! derives at run time for the same types: byte for byte, key order included, on every form the
//! macros write, and the forms they leave to schemars.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::__private::written::{HasWritten, compose};
use tool_runtime::{CallContext, Tool, ToolArgs, ToolError, tool, tool::Run};

/// How a result is ordered.
///
/// Two paragraphs, the second one longer.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Best first.
    BestMatch,
    /// Newest first.
    #[serde(rename = "latest")]
    Newest,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, ToolArgs)]
pub enum Plain {
    A,
    B,
}

/// Some documented, some not.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Mixed {
    Left,
    /// The middle one.
    Middle,
    Right,
}

/// A point.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Across.
    #[schemars(range(min = -10.5, max = 10))]
    pub x: f64,
    /// Down, with a doc comment
    ///   over lines that keep their indentation   
    pub y: Option<f32>,
}

/// Nests a point and an order.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "camelCase")]
pub struct Area {
    pub top_left: Point,
    pub corners: Vec<Point>,
    pub order: Option<Order>,
    #[serde(default)]
    pub origin: Point,
}

/// A tool with every field form the macros write.
#[tool(read_only)]
#[derive(Debug)]
pub struct EveryForm {
    /// Text with bounds.
    #[schemars(length(min = 1, max = 20), regex(pattern = r"^[a-z]+$"))]
    pub text: String,
    /// A count with a default.
    #[arg(default = 5, min = 1, max = 9)]
    pub count: u8,
    #[serde(default)]
    pub verbose: bool,
    #[serde(rename = "r#type")]
    pub kind: Option<String>,
    pub r#ratio: f64,
    /// Tags, at most three.
    #[schemars(length(max = 3))]
    pub tags: Vec<String>,
    pub maybe_tags: Option<Vec<i64>>,
    #[serde(default)]
    pub numbers: Vec<u16>,
    /// The area.
    pub area: Area,
    pub areas: Option<Vec<Area>>,
    pub order: Order,
    #[schemars(length(max = 2))]
    pub plain: Vec<Plain>,
    #[serde(default = "default_mixed")]
    pub mixed: Mixed,
    #[serde(default)]
    pub point: Option<Point>,
}

fn default_mixed() -> Mixed {
    Mixed::Middle
}

impl Run for EveryForm {
    type Output = usize;
    type Error = ToolError;
    async fn run(self, _cx: &CallContext) -> Result<usize, ToolError> {
        Ok(self.text.len())
    }
}

/// A function tool with a nested type and literal defaults.
#[tool(read_only)]
async fn plot(
    /// Where.
    at: Point,
    /// How many.
    #[arg(default = 2.5)]
    scale: f64,
    #[arg(default = String::from("x"))] label: String,
    #[arg(default = -3, min = -5)] shift: i32,
) -> f64 {
    at.x * scale + f64::from(shift) + label.len() as f64
}

/// A map is not written: schemars derives this one.
#[tool(read_only)]
async fn with_map(counts: BTreeMap<String, u32>) -> usize {
    counts.len()
}

/// Nests a type without `ToolArgs`: written, but not composable.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct Foreign {
    pub a: u32,
}

/// Takes the foreign type.
#[tool(read_only)]
async fn with_foreign(foreign: Foreign) -> u32 {
    foreign.a
}

/// A title in the doc comment is schemars' business.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, ToolArgs)]
pub struct Titled {
    /// # A title
    ///
    /// and a description
    pub a: u32,
}

/// The written schema of a type, if it has one (the probe `#[tool]` expands to).
macro_rules! written_of {
    ($t:ty) => {{
        #[allow(unused_imports, clippy::needless_borrow)]
        {
            use tool_runtime::__private::written::{NotWritten as _, Probe, ViaWritten as _};
            (&&Probe::<$t>::NEW).written()
        }
    }};
}

fn derived<T: JsonSchema>() -> String {
    serde_json::to_string(&tool_runtime::schema::derive::<T>()).unwrap()
}

/// `compose` of `T`'s written schema, which must exist.
fn composed<T: HasWritten>() -> String {
    compose(T::written()).expect("every nested type has a written schema")
}

#[test]
fn written_schemas_equal_what_schemars_derives_byte_for_byte() {
    assert_eq!(composed::<Order>(), derived::<Order>());
    assert_eq!(composed::<Plain>(), derived::<Plain>());
    assert_eq!(composed::<Mixed>(), derived::<Mixed>());
    assert_eq!(composed::<Point>(), derived::<Point>());
    assert_eq!(composed::<Area>(), derived::<Area>());
    assert_eq!(composed::<EveryForm>(), derived::<EveryForm>());
}

#[test]
fn tool_definitions_hold_the_written_text() {
    assert_eq!(
        EveryForm::definition().parameters.get(),
        derived::<EveryForm>()
    );
    // nested `$defs` in first-met order, each once
    let text = EveryForm::definition().parameters.get();
    let defs = text.find("\"$defs\"").unwrap();
    let order: Vec<usize> = [
        "\"Area\":",
        "\"Point\":",
        "\"Order\":",
        "\"Plain\":",
        "\"Mixed\":",
    ]
    .iter()
    .map(|k| text[defs..].find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert_eq!(
        plot::definition().parameters_value(),
        serde_json::from_str::<serde_json::Value>(&derived_of_tool::<plot>()).unwrap()
    );
}

fn derived_of_tool<T: Tool>() -> String
where
    T::Args: JsonSchema,
{
    derived::<T::Args>()
}

#[test]
fn a_function_tool_with_nested_types_is_written_but_not_constant() {
    // the nested type's `$defs` name is only known when its own impl runs
    assert!(<plot as Tool>::SCHEMA_JSON.is_none());
    assert_eq!(
        plot::definition().parameters.get(),
        derived_of_tool::<plot>()
    );
    let v = plot::definition().parameters_value();
    assert_eq!(v["properties"]["scale"]["default"], 2.5);
    assert_eq!(v["properties"]["shift"]["default"], -3);
}

#[test]
fn what_is_not_written_is_derived_by_schemars() {
    // a map: nothing written at compile time
    assert!(<with_map as Tool>::SCHEMA_JSON.is_none());
    assert_eq!(
        with_map::definition().parameters.get(),
        derived_of_tool::<with_map>()
    );
    // a nested type without `ToolArgs`: written, but composing gives up
    assert_eq!(
        with_foreign::definition().parameters.get(),
        derived_of_tool::<with_foreign>()
    );
    // a doc comment that schemars splits into a title: `Titled` has no written schema, and a
    // type without `ToolArgs` has none either
    assert!(written_of!(Titled).is_none());
    assert!(written_of!(Foreign).is_none());
}

/// A `ToolArgs` type whose `JsonSchema` is written by hand, and says more than its tokens: the
/// written schema (from the tokens) and schemars' differ.
#[derive(Debug, Clone, Deserialize, Serialize, ToolArgs)]
pub struct Email {
    pub address: String,
}

impl JsonSchema for Email {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Email".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {"address": {"type": "string", "format": "email"}},
            "required": ["address"]
        })
    }
}

/// Sends a message.
#[tool(external)]
async fn send(to: Email) -> usize {
    to.address.len()
}

/// The comparison above is only a test where it runs and panics: this crate's tests build the
/// runtime with its `verify-written` feature (the comparison's opt-in), and in CI the
/// workspace's `.cargo/config.toml` must have set the variable for every test process.
#[test]
fn ci_compares_written_schemas_strictly() {
    assert!(
        tool_runtime::__private::verifies_written(),
        "the tests crate's dev-dependency on tool-runtime turns on `verify-written`"
    );
    if test_support::in_ci() {
        assert_eq!(
            std::env::var("TOOL_RUNTIME_STRICT_WRITTEN").as_deref(),
            Ok("1"),
            "run the tests through cargo in this workspace, whose .cargo/config.toml sets it"
        );
    }
}

/// Debug builds compare the written schema with schemars' when the definition is made: they
/// keep schemars' on a difference (the hand-written `format` survives), or panic when
/// `TOOL_RUNTIME_STRICT_WRITTEN` is set, as this workspace's `.cargo/config.toml` sets it so
/// that every tool of its tests and examples is a differential test too.
#[cfg(debug_assertions)]
#[test]
fn a_written_schema_that_differs_from_schemars_gives_way_in_debug_builds() {
    assert!(
        written_of!(Email).is_some(),
        "the derive wrote one from the tokens"
    );
    let strict =
        std::env::var("TOOL_RUNTIME_STRICT_WRITTEN").is_ok_and(|v| !v.is_empty() && v != "0");
    if strict {
        let panic = std::panic::catch_unwind(|| send::definition().parameters.get().len())
            .expect_err("strict: a difference panics");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("\"send\""), "{message}");
        assert!(message.contains("\"format\":\"email\""), "{message}");
        return;
    }
    let def = send::definition();
    assert_eq!(def.parameters.get(), derived_of_tool::<send>());
    assert_eq!(
        def.parameters_value()["$defs"]["Email"]["properties"]["address"]["format"],
        "email"
    );
}
