//! Tools written by hand the way `#[tool]` expands them, shared by the tests and the benches.
#![allow(dead_code)]

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{
    CallContext, Tool, ToolArgs, ToolError,
    definition::{Safety, SchemaOrigin, ToolDefinition},
};

/// Sort order of search results. `ToolArgs`: `#[tool]` readers read it directly (the guard,
/// which hand-written `Tool` impls get, ignores that).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    /// Best match first.
    Relevance,
    /// Newest first.
    Newest,
}

/// Which notes to consider.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema, ToolArgs)]
pub struct Filter {
    /// Only notes by this author.
    pub author: Option<String>,
    /// Minimum relevance score.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: f64,
}

/// The realistic call the hydration benchmarks measure: six fields, one nested object, one
/// array. The hand-written [`SearchNotes`] uses it as a plain argument type (read through the
/// guard); as the `#[tool]` struct [`SearchNotesTool`] it is read by its generated reader.
pub type SearchArgs = SearchNotesTool;

/// `search_notes` as a `#[tool]` struct: the macro generates a reader for it (leaf fields read
/// and checked directly, the enum and the nested struct by their `ToolArgs` readers).
#[tool_runtime::tool(read_only, name = "search_notes")]
/// Search the notes.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct SearchNotesTool {
    /// What to look for.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// How many results to return.
    #[schemars(range(min = 1, max = 50))]
    pub limit: u32,
    /// Result order.
    pub sort: SortOrder,
    /// Whether archived notes count.
    #[serde(default)]
    pub include_archived: bool,
    /// Which notes to consider.
    pub filter: Filter,
    /// Only notes with all of these tags.
    #[schemars(length(max = 10))]
    pub tags: Vec<String>,
}

impl tool_runtime::tool::Run for SearchNotesTool {
    type Output = Value;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<Value, ToolError> {
        Ok(json!({"query": self.query, "count": self.limit}))
    }
}

/// A valid call's arguments, as a model sends them.
pub const VALID: &str = r#"{"query":"rust ownership","limit":10,"sort":"relevance","include_archived":false,"filter":{"author":"ana","min_score":0.25},"tags":["rust","memory"]}"#;

/// An invalid call: three constraint violations serde alone would accept.
pub const INVALID: &str = r#"{"query":"","limit":500,"sort":"relevance","include_archived":false,"filter":{"author":null,"min_score":1.5},"tags":["rust"]}"#;

/// What `#[tool]` generates for a derived schema, for the name and args given.
pub fn derived_definition<A: JsonSchema>(
    name: &'static str,
    description: &'static str,
) -> ToolDefinition {
    let mut def = ToolDefinition::new(name, description, &tool_runtime::schema::derive::<A>());
    def.schema_origin = SchemaOrigin::Derived;
    def.safety = Safety::ReadOnly;
    def
}

/// The definition of tool type `T`, made by `make` on first use and kept, as the `static`
/// `#[tool]` generates per tool (a `static` in a generic function would be shared by every
/// instantiation, hence the map). Made outside the map's lock, as each tool's own `static` would
/// be, so threads making different tools' definitions do not wait for each other.
pub fn definition_once<T: 'static>(
    make: impl FnOnce() -> ToolDefinition,
) -> &'static ToolDefinition {
    static MADE: LazyLock<Mutex<HashMap<TypeId, &'static ToolDefinition>>> =
        LazyLock::new(Default::default);
    if let Some(d) = MADE.lock().unwrap().get(&TypeId::of::<T>()) {
        return d;
    }
    let made: &'static ToolDefinition = Box::leak(Box::new(make()));
    MADE.lock()
        .unwrap()
        .entry(TypeId::of::<T>())
        .or_insert(made)
}

/// `search_notes`: the realistic tool.
pub struct SearchNotes;

impl Tool for SearchNotes {
    type Args = SearchArgs;
    type Output = Value;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> =
            LazyLock::new(|| derived_definition::<SearchArgs>("search_notes", "Search the notes."));
        &DEF
    }

    async fn call(args: SearchArgs, _cx: &CallContext) -> Result<Value, ToolError> {
        Ok(json!({"query": args.query, "count": args.limit}))
    }
}

/// Arguments of a tool with no parameters.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct NoArgs {}

/// `list_notebooks`: takes nothing.
pub struct ListNotebooks;

impl Tool for ListNotebooks {
    type Args = NoArgs;
    type Output = Vec<String>;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> =
            LazyLock::new(|| derived_definition::<NoArgs>("list_notebooks", "List the notebooks."));
        &DEF
    }

    async fn call(_args: NoArgs, _cx: &CallContext) -> Result<Vec<String>, ToolError> {
        Ok(vec!["work".into(), "home".into()])
    }
}

/// Arguments with a pattern, closed objects, a map and a nullable nested struct.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteArgs {
    /// Note title.
    #[schemars(length(min = 1, max = 80))]
    pub title: String,
    /// Slug for the URL.
    #[schemars(regex(pattern = r"^[a-z0-9-]+$"))]
    pub slug: String,
    /// Free-form metadata.
    #[serde(default)]
    pub meta: std::collections::BTreeMap<String, i64>,
    /// Where to file it.
    pub location: Option<Location>,
}

/// A place in the notebook tree.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct Location {
    /// Notebook name.
    pub notebook: String,
    /// Depth in the tree.
    #[schemars(range(max = 8))]
    pub depth: u8,
}

/// `create_note`: closed objects and a pattern.
pub struct CreateNote;

impl Tool for CreateNote {
    type Args = NoteArgs;
    type Output = Value;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> = LazyLock::new(|| {
            let mut d = derived_definition::<NoteArgs>("create_note", "Create a note.");
            d.safety = Safety::Create;
            d
        });
        &DEF
    }

    async fn call(args: NoteArgs, _cx: &CallContext) -> Result<Value, ToolError> {
        Ok(json!({"created": args.slug}))
    }
}
