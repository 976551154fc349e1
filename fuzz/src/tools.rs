//! `#[tool]`-derived tools covering the shapes the fast path reads differently from the
//! validator: generated readers and the guard, nested structs and enums, options of vectors,
//! numeric bounds of every width, patterns, renames, defaults and closed objects.
#![allow(missing_docs)]

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::{CallContext, ToolArgs, ToolError, tool, tool::Run};

/// Unit variants: read by the enum's generated reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    Relevance,
    Newest,
}

/// A nested struct with a generated reader and a float range.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema, ToolArgs)]
pub struct Filter {
    pub author: Option<String>,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: f64,
}

/// A closed nested struct.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct Location {
    pub notebook: String,
    #[schemars(range(max = 8))]
    pub depth: u8,
}

/// A realistic search: the `#[tool]` struct's generated reader.
#[tool(read_only)]
#[derive(Debug)]
pub struct SearchNotes {
    /// What to look for.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// How many.
    #[schemars(range(min = 1, max = 50))]
    pub limit: u32,
    /// Order.
    pub sort: SortOrder,
    /// Archived too.
    #[serde(default)]
    pub include_archived: bool,
    /// Which notes.
    pub filter: Filter,
    /// Tags.
    #[schemars(length(max = 10))]
    pub tags: Vec<String>,
}

/// A strict function tool: every leaf kind the reader reads directly, all keys required.
#[tool(create, strict)]
#[allow(clippy::too_many_arguments)]
pub fn book_room(
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
    location: Location,
) -> Result<String, ToolError> {
    let _ = (floor, hours, share, note, ages, tags, priority, location);
    Ok(room)
}

/// `book_room`'s arguments as serde's derive reads them: the reference its reader is held to.
#[derive(Deserialize, Serialize)]
pub struct BookRoomArgs {
    room: String,
    floor: i64,
    hours: f64,
    share: f32,
    note: Option<String>,
    ages: Vec<u8>,
    tags: Option<Vec<String>>,
    #[serde(rename = "prio")]
    priority: u32,
    location: Location,
}

/// Renames, closed objects, defaults of every kind, an open map, options and vectors of nested
/// readers.
#[tool(read_only)]
#[derive(Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Renamed {
    /// Page size.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 9))]
    pub page_size: u32,
    /// Counters.
    #[serde(default)]
    pub counters: BTreeMap<String, u8>,
    /// First word.
    pub first_word: Option<String>,
    /// Retries.
    #[arg(default = 2, max = 4)]
    pub retries: i8,
    /// Where it starts.
    pub origin: Option<Location>,
    /// Where it stops.
    #[schemars(length(max = 3))]
    pub stops: Vec<Location>,
    /// Order.
    #[serde(default = "newest")]
    pub order: Option<SortOrder>,
}

fn one() -> u32 {
    1
}

fn newest() -> Option<SortOrder> {
    Some(SortOrder::Newest)
}

/// A pattern, a closed object, a map of signed integers, a nullable nested struct.
#[tool(create)]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
pub struct CreateNote {
    /// Title.
    #[schemars(length(min = 1, max = 80))]
    pub title: String,
    /// URL slug.
    #[schemars(regex(pattern = r"^[a-z0-9-]+$"))]
    pub slug: String,
    /// Metadata.
    #[serde(default)]
    pub meta: BTreeMap<String, i64>,
    /// Where to file it.
    pub location: Option<Location>,
}

/// Data-carrying variants: an externally tagged enum is a `oneOf` of objects.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    Circle {
        #[schemars(range(min = 0.0))]
        radius: f64,
    },
    Square(#[schemars(range(min = 1, max = 100))] u16),
    Empty,
}

/// A tagged enum (serde's `tag`), read through the guard.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fill {
    Solid { color: String },
    None,
}

/// Enums with data, options of options in arrays, small signed and wide unsigned integers.
#[tool(modify)]
#[derive(Debug)]
pub struct Draw {
    /// The shape.
    pub shape: Shape,
    /// The fill.
    pub fill: Option<Fill>,
    /// Offsets, some missing.
    #[schemars(length(max = 6))]
    pub offsets: Option<Vec<Option<i16>>>,
    /// A seed.
    pub seed: u64,
    /// A scale.
    #[schemars(range(min = -1000.0, max = 1000.0))]
    pub scale: Option<f32>,
}

macro_rules! no_body {
    ($($t:ty),*) => {$(
        impl Run for $t {
            type Output = ();
            type Error = ToolError;

            async fn run(self, _cx: &CallContext) -> Result<(), ToolError> {
                Ok(())
            }
        }
    )*};
}

no_body!(SearchNotes, Renamed, CreateNote, Draw);
