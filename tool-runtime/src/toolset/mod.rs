//! `ToolSet`: the registry. Names unique, schemas present, validators compiled, state checked, all
//! at registration; a call is hydrated by its tool's entry (`hydrate::entry`).

mod check;
mod prepare;

pub use check::CallCheck;
pub use prepare::Prepare;

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use crate::definition::{SchemaOrigin, ToolDefinition};
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::entry::Entry;
pub use crate::hydrate::entry::{DynHandler, RegistrationError};
use crate::hydrate::{Arguments, Limits, ToolCall, ToolInstance};
use crate::tool::{Extensions, Tool};

/// The longest tool name any provider accepts, in characters: unknown names are compared and
/// echoed only this far.
const MAX_NAME_CHARS: usize = 64;

/// The registry of tools an agent can call.
#[derive(Clone, Default)]
pub struct ToolSet {
    entries: Vec<Arc<Entry>>,
    /// Seeded per process (foldhash's `RandomState`), so names a model sends cannot be chosen
    /// to collide.
    by_name: HashMap<String, usize, foldhash::fast::RandomState>,
    state: Arc<Extensions>,
    limits: Limits,
    /// The tools that carry a [`CallCheck`], by name; `None` while none does, so that a set
    /// without them costs the executor one branch per call.
    checks: Option<Arc<check::Checks>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field(
                "tools",
                &self
                    .entries
                    .iter()
                    .map(|e| &e.definition().name)
                    .collect::<Vec<_>>(),
            )
            .field("state", &self.state)
            .field("limits", &self.limits)
            .finish()
    }
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a typed tool (what `#[tool]` generates).
    pub fn register<T: Tool>(&mut self) -> Result<&mut Self, RegistrationError> {
        self.register_typed(T::definition, Entry::typed::<T>)
    }

    /// [`ToolSet::register`], compiled once: the tool's functions are passed in.
    fn register_typed(
        &mut self,
        definition: fn() -> &'static ToolDefinition,
        entry: fn() -> Result<Entry, RegistrationError>,
    ) -> Result<&mut Self, RegistrationError> {
        self.ensure_new(&definition().name)?;
        self.push(entry()?);
        Ok(self)
    }

    /// Builder form of [`ToolSet::register`].
    pub fn with<T: Tool>(mut self) -> Result<Self, RegistrationError> {
        self.register::<T>()?;
        Ok(self)
    }

    /// Registers a tool defined at run time (learned from an MCP server, read from a file), with a
    /// body or without one (declared for the model, hydrated and validated, but not runnable here).
    ///
    /// Its schema is always checked against the draft 2020-12 meta-schema and every call is
    /// validated against it, whatever the definition's `schema_origin` says: the origin is
    /// recorded as [`SchemaOrigin::Dynamic`] (a definition printed by `tools schema` says
    /// `derived` or `verbatim`, which described the process it came from). A definition that
    /// claims no schema (`{"kind": "none", ..}`) is refused: only `#[tool(allow_no_schema)]`, in
    /// code, can opt a tool out of validation.
    pub fn register_dynamic(
        &mut self,
        mut definition: ToolDefinition,
        handler: Option<DynHandler>,
    ) -> Result<&mut Self, RegistrationError> {
        as_dynamic(&mut definition)?;
        self.ensure_new(&definition.name)?;
        self.push(Entry::dynamic(definition, handler)?);
        Ok(self)
    }

    /// Gives the registered tool `name` a check the executor runs on each of its calls after
    /// hydration and before the policy (see [`CallCheck`]); a second check replaces the first.
    /// Returns whether `name` is registered.
    pub fn set_check(&mut self, name: &str, check: CallCheck) -> bool {
        if !self.by_name.contains_key(name) {
            return false;
        }
        let checks = self.checks.get_or_insert_with(Default::default);
        Arc::make_mut(checks).insert(name.to_owned(), check);
        true
    }

    /// The check of the tool `name`, if it carries one ([`ToolSet::set_check`]).
    #[inline]
    pub fn check_of(&self, name: &str) -> Option<&CallCheck> {
        self.checks.as_ref()?.get(name)
    }

    /// Registers every definition of a catalog: a JSON array of definitions in the canonical shape
    /// `{"type": "function", "name", "description", "parameters", "strict"?, ...}` (plus the
    /// optional safety fields), without bodies.
    ///
    /// All or nothing: when one definition is refused, none is registered, and the error names it.
    /// Each definition is checked and validated as [`ToolSet::register_dynamic`] describes.
    pub fn register_catalog(&mut self, json: &str) -> Result<&mut Self, RegistrationError> {
        // One pass over the text; only when it fails is it read again, definition by
        // definition, to name the one at fault.
        let mut defs: Vec<ToolDefinition> =
            serde_json::from_str(json).map_err(|e| catalog_error(json, e))?;
        for def in &mut defs {
            as_dynamic(def)?;
        }
        let mut staged: Vec<Entry> = Vec::with_capacity(defs.len());
        let mut names: HashMap<&str, usize> = HashMap::with_capacity(defs.len());
        for (i, def) in defs.iter().enumerate() {
            let name = def.name.as_ref();
            if self.by_name.contains_key(name) || names.insert(name, i).is_some() {
                return Err(RegistrationError::DuplicateName(name.to_owned()));
            }
        }
        // each definition's check (its meta-schema check, its plan or its validator) is
        // compiled on every core; the first refusal in the catalog's order is the one reported
        for entry in prepare::spread(defs, |def| Entry::dynamic(def, None)) {
            staged.push(entry?);
        }
        for entry in staged {
            self.push(entry);
        }
        Ok(self)
    }

    /// Adds application state that `State<T>` parameters extract.
    pub fn with_state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.state).insert(value);
        self
    }

    /// Sets the hydration limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Checks that every tool's injected state is present. Call once after all state is added;
    /// the agent and the executor call it for you.
    pub fn check_state(&self) -> Result<(), RegistrationError> {
        for entry in &self.entries {
            for req in entry.required_state() {
                if !self.state.contains(req.type_id) {
                    return Err(RegistrationError::MissingState {
                        tool: entry.definition().name.to_string(),
                        type_name: req.type_name,
                    });
                }
            }
        }
        Ok(())
    }

    /// Refuses a name already registered.
    fn ensure_new(&self, name: &str) -> Result<(), RegistrationError> {
        if self.by_name.contains_key(name) {
            return Err(RegistrationError::DuplicateName(name.to_owned()));
        }
        Ok(())
    }

    fn push(&mut self, entry: Entry) {
        self.by_name
            .insert(entry.definition().name.to_string(), self.entries.len());
        self.entries.push(Arc::new(entry));
    }

    /// Removes a tool; returns whether it was present.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(idx) = self.by_name.remove(name) else {
            return false;
        };
        if let Some(checks) = &mut self.checks {
            Arc::make_mut(checks).remove(name);
        }
        self.entries.remove(idx);
        for v in self.by_name.values_mut() {
            if *v > idx {
                *v -= 1;
            }
        }
        true
    }

    /// Every definition, in registration order.
    pub fn definitions(&self) -> impl ExactSizeIterator<Item = &ToolDefinition> {
        self.entries.iter().map(|e| e.definition())
    }

    /// One definition by name.
    pub fn get(&self, name: &str) -> Option<&ToolDefinition> {
        self.by_name
            .get(name)
            .map(|&i| self.entries[i].definition())
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The shared state tools extract from.
    pub fn state(&self) -> &Arc<Extensions> {
        &self.state
    }

    /// The hydration limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Hydrates a call: find the tool, parse the arguments (with limits and one recorded repair),
    /// validate them against the canonical schema collecting every violation, and only then
    /// deserialize them into the tool's typed arguments. Runs nothing.
    pub fn hydrate(&self, call: &ToolCall) -> Result<ToolInstance, ToolError> {
        self.lookup(&call.name)?.hydrate(call, &self.limits)
    }

    /// Whether `name` is registered with a body that can run in this process (dynamic tools may
    /// be declared without one).
    pub fn is_runnable(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.entries[i].is_runnable())
    }

    /// Whether calls to `name` are hydrated on the fast path (straight into the typed arguments,
    /// checked by a compiled plan) rather than through a `Value` and the validator. For tests,
    /// benchmarks and the `tools list --json` report.
    pub fn has_fast_path(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.entries[i].has_fast_path())
    }

    /// The test hooks of [`crate::__private::TestHooks`].
    pub(crate) fn has_generated_reader_(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.entries[i].has_generated_reader())
    }

    pub(crate) fn hydrate_fast_only_(
        &self,
        name: &str,
        arguments: Arguments,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        let entry = self.lookup(name).ok()?;
        entry.fast(&arguments, &self.limits).ok().flatten()
    }

    #[inline]
    fn lookup(&self, name: &str) -> Result<&Arc<Entry>, ToolError> {
        match self.by_name.get(name) {
            Some(&i) => Ok(&self.entries[i]),
            None => Err(self.unknown_tool(name)),
        }
    }

    /// The error for a call to a tool the set does not have, with the nearest names. Kept out
    /// of [`ToolSet::lookup`], which every call goes through, so that the lookup's own code stays
    /// small enough to inline.
    #[cold]
    #[inline(never)]
    fn unknown_tool(&self, name: &str) -> ToolError {
        let suggestions = self.nearest_names(name, 3);
        let shown = match name.char_indices().nth(MAX_NAME_CHARS) {
            // the model gets its own name back, but not a megabyte of it
            Some((end, _)) => format!("{:?}... ({} bytes)", &name[..end], name.len()),
            None => format!("{name:?}"),
        };
        let mut err = ToolError::new(
            ErrorCode::UNKNOWN_TOOL,
            format!("there is no tool named {shown}"),
        )
        .with_detail("available", self.by_name.len());
        err = if suggestions.is_empty() {
            err.recover("call one of the tools you were given")
        } else {
            err.recover(format!("did you mean {}?", quoted_list(&suggestions)))
                .with_detail("suggestions", suggestions)
        };
        err
    }

    /// The registered names nearest to `name`, best first.
    ///
    /// Only the first 64 characters of `name` are compared (no provider accepts a longer tool
    /// name, and registered names are at most that long), so the work per registered tool is
    /// bounded however long a name a model sends.
    pub fn nearest_names(&self, name: &str, max: usize) -> Vec<String> {
        let probe: String = name
            .chars()
            .take(MAX_NAME_CHARS)
            .collect::<String>()
            .to_lowercase();
        let mut scored: Vec<(f64, &str)> = self
            .entries
            .iter()
            .map(|e| {
                let n = e.definition().name.as_ref();
                (strsim::jaro_winkler(&probe, &n.to_ascii_lowercase()), n)
            })
            .filter(|(s, _)| *s >= 0.75)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(max)
            .map(|(_, n)| n.to_owned())
            .collect()
    }
}

/// Makes a definition registered at run time a dynamic one. Its `schema_origin` came with the
/// JSON, and a claim in the JSON must not decide how its calls are checked: `derived` would skip
/// the meta-schema check and `none` would skip validation altogether.
/// Why a catalog did not read as definitions: the first definition that does not, by its index,
/// or the array itself.
fn catalog_error(json: &str, whole: serde_json::Error) -> RegistrationError {
    let raw: Vec<Box<serde_json::value::RawValue>> = match serde_json::from_str(json) {
        Ok(raw) => raw,
        Err(e) => {
            return RegistrationError::Catalog(format!(
                "expected a JSON array of tool definitions: {e}"
            ));
        }
    };
    for (i, r) in raw.iter().enumerate() {
        if let Err(e) = serde_json::from_str::<ToolDefinition>(r.get()) {
            return RegistrationError::Catalog(format!("definition {i}: {e}"));
        }
    }
    RegistrationError::Catalog(format!(
        "expected a JSON array of tool definitions: {whole}"
    ))
}

fn as_dynamic(definition: &mut ToolDefinition) -> Result<(), RegistrationError> {
    if let SchemaOrigin::None(_) = definition.schema_origin {
        return Err(RegistrationError::InvalidDefinition {
            name: definition.name.to_string(),
            reason: "a definition registered at run time cannot opt out of its schema \
                     (\"schema_origin\": {\"kind\": \"none\"}); remove schema_origin and give it \
                     a schema (`{\"type\": \"object\"}` accepts any object, and is still checked)"
                .to_owned(),
        });
    }
    definition.schema_origin = SchemaOrigin::Dynamic;
    Ok(())
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Builds a [`ToolSet`](crate::ToolSet) from `#[tool]` types:
/// `toolset![search_notes, GetWeather]`.
///
/// Evaluates to `Result<ToolSet, RegistrationError>`: registration can fail for reasons only
/// known at run time (a derived schema that cannot be strict, a schema that does not compile),
/// and the caller decides whether that is fatal. Two tools with the same name are a compile
/// error when both names are known at compile time (always, for `#[tool]` types), pointing at
/// the second one; otherwise registration refuses them with
/// [`RegistrationError::DuplicateName`](crate::toolset::RegistrationError::DuplicateName).
///
/// Every tool's `strict` request is checked here too (see [`ToolDefinition::strict_problems`]).
/// The tools' definitions and checks are made first, spread over the machine's cores when there
/// are many (see [`ToolSet::prepare`](crate::ToolSet::prepare)).
#[macro_export]
macro_rules! toolset {
    ($($tool:path),* $(,)?) => {{
        $crate::__private::check_unique_names!($crate; $($tool),*);
        (|| -> ::core::result::Result<$crate::ToolSet, $crate::toolset::RegistrationError> {
            $crate::ToolSet::prepare(&[$($crate::toolset::Prepare::of::<$tool>()),*]);
            #[allow(unused_mut)]
            let mut set = $crate::ToolSet::new();
            $( $crate::__private::register::<$tool>(&mut set)?; )*
            ::core::result::Result::Ok(set)
        })()
    }};
}
