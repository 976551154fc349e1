//! The catalog pre-selection searches: the tools' definitions plus the inverted index over them,
//! built as tools enter and updated as they leave.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::index::{Bm25Config, Bm25Index, ToolId};
use crate::definition::ToolDefinition;
use crate::toolset::{RegistrationError, ToolSet};

#[derive(Debug, Clone)]
struct Slot {
    def: Arc<ToolDefinition>,
    /// Registration sequence number: the order the fallback and tie-breaking follow.
    seq: u64,
}

/// Tool definitions indexed for selection.
///
/// Build one when the tool catalog is built (from a [`ToolSet`] or any definitions) and keep it:
/// [`Catalog::insert`] and [`Catalog::remove`] update the index in place, and
/// [`Catalog::sync`] brings it in step with a `ToolSet` that has changed. Names must be unique;
/// unlike a `ToolSet`, a catalog accepts any name (BFCL's dotted names, for instance), since it
/// only ranks definitions and never calls anything.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    by_name: HashMap<String, ToolId>,
    next_seq: u64,
    index: Bm25Index,
}

impl Catalog {
    /// An empty catalog with the default BM25 tuning.
    pub fn new() -> Self {
        Self::with_config(Bm25Config::default())
    }

    /// An empty catalog with the given BM25 tuning.
    pub fn with_config(config: Bm25Config) -> Self {
        Catalog {
            index: Bm25Index::new(config),
            ..Default::default()
        }
    }

    /// A catalog of every tool in `toolset`, in its registration order: what a program that picks
    /// per request builds once and keeps (with [`Catalog::sync`] when the set changes), instead
    /// of calling the one-shot [`pick`](super::pick) that rebuilds the index each time.
    pub fn from_toolset(toolset: &ToolSet) -> Self {
        let mut catalog = Catalog::new();
        for def in toolset.definitions() {
            catalog
                .insert(def.clone())
                .expect("a ToolSet's names are unique");
        }
        catalog
    }

    /// A catalog of `definitions`, in order. Fails on the first duplicate name.
    pub fn from_definitions(
        definitions: impl IntoIterator<Item = ToolDefinition>,
    ) -> Result<Self, RegistrationError> {
        let mut catalog = Catalog::new();
        for def in definitions {
            catalog.insert(def)?;
        }
        Ok(catalog)
    }

    /// Adds one tool and indexes it; only this tool's terms are touched.
    pub fn insert(&mut self, definition: ToolDefinition) -> Result<ToolId, RegistrationError> {
        self.insert_shared(Arc::new(definition))
    }

    /// [`Catalog::insert`] for a definition that is already shared.
    pub fn insert_shared(
        &mut self,
        definition: Arc<ToolDefinition>,
    ) -> Result<ToolId, RegistrationError> {
        if self.by_name.contains_key(definition.name.as_ref()) {
            return Err(RegistrationError::DuplicateName(
                definition.name.to_string(),
            ));
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        let id = ToolId(slot);
        self.index.insert(id, &definition);
        self.by_name.insert(definition.name.to_string(), id);
        self.slots[slot as usize] = Some(Slot {
            def: definition,
            seq: self.next_seq,
        });
        self.next_seq += 1;
        Ok(id)
    }

    /// Removes a tool by name and unindexes it; returns whether it was present.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(id) = self.by_name.remove(name) else {
            return false;
        };
        let slot = self.slots[id.index()]
            .take()
            .expect("a named tool has a slot");
        self.index.remove(id, &slot.def);
        self.free.push(id.0);
        true
    }

    /// Brings the catalog in step with `toolset`: removes the tools it no longer has and indexes
    /// the new ones (a tool whose definition changed under the same name is re-indexed). Cost is
    /// proportional to the changes plus one pass over the names.
    pub fn sync(&mut self, toolset: &ToolSet) {
        let wanted: HashSet<&str> = toolset.definitions().map(|d| d.name.as_ref()).collect();
        let stale: Vec<String> = self
            .by_name
            .keys()
            .filter(|n| !wanted.contains(n.as_str()))
            .cloned()
            .collect();
        for name in stale {
            self.remove(&name);
        }
        for def in toolset.definitions() {
            if let Some(existing) = self.get(&def.name) {
                if same_definition(existing, def) {
                    continue;
                }
                self.remove(&def.name);
            }
            self.insert(def.clone())
                .expect("the name was removed just before");
        }
    }

    /// The definition of a tool by name.
    pub fn get(&self, name: &str) -> Option<&Arc<ToolDefinition>> {
        self.by_name.get(name).map(|&id| self.definition(id))
    }

    /// The handle of a tool by name.
    pub fn id(&self, name: &str) -> Option<ToolId> {
        self.by_name.get(name).copied()
    }

    /// The definition behind a handle.
    ///
    /// # Panics
    /// If the handle does not belong to a tool currently in this catalog.
    pub fn definition(&self, id: ToolId) -> &Arc<ToolDefinition> {
        &self.slots[id.index()]
            .as_ref()
            .expect("ToolId of a tool in this catalog")
            .def
    }

    /// Every tool, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = (ToolId, &Arc<ToolDefinition>)> {
        let mut live: Vec<(u64, ToolId, &Arc<ToolDefinition>)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (s.seq, ToolId(i as u32), &s.def)))
            .collect();
        live.sort_unstable_by_key(|(seq, _, _)| *seq);
        live.into_iter().map(|(_, id, def)| (id, def))
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether the catalog is empty.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Approximate heap bytes held by the inverted index (not the definitions themselves).
    pub fn index_heap_bytes(&self) -> usize {
        self.index.heap_bytes()
    }

    /// Number of distinct terms in the index's dictionary. Terms leave it with the last tool that
    /// had them, so it tracks the current tools, not the history of the catalog.
    pub fn vocabulary_size(&self) -> usize {
        self.index.vocabulary()
    }

    /// The BM25 tuning in use.
    pub fn bm25_config(&self) -> &Bm25Config {
        self.index.config()
    }

    pub(crate) fn index(&self) -> &Bm25Index {
        &self.index
    }

    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn seq_of_slot(&self, slot: u32) -> u64 {
        self.slots[slot as usize]
            .as_ref()
            .map_or(u64::MAX, |s| s.seq)
    }

    pub(crate) fn seq(&self, id: ToolId) -> u64 {
        self.seq_of_slot(id.0)
    }

    pub(crate) fn live_slots(&self) -> impl Iterator<Item = (ToolId, &Arc<ToolDefinition>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (ToolId(i as u32), &s.def)))
    }
}

/// Whether two definitions would index identically (what selection reads of them).
fn same_definition(a: &ToolDefinition, b: &ToolDefinition) -> bool {
    a.description == b.description
        && a.tags == b.tags
        && a.safety == b.safety
        && a.parameters.get() == b.parameters.get()
}

/// The tools one pick may return: the catalog minus the ones its options exclude. Scorers score
/// only these.
#[derive(Debug)]
pub struct Pool<'a> {
    catalog: &'a Catalog,
    mask: Vec<bool>,
    len: usize,
}

impl<'a> Pool<'a> {
    /// The tools of `catalog` for which `keep` is true.
    pub fn new(catalog: &'a Catalog, mut keep: impl FnMut(&ToolDefinition) -> bool) -> Self {
        let mut mask = vec![false; catalog.slot_count()];
        let mut len = 0;
        for (id, def) in catalog.live_slots() {
            if keep(def) {
                mask[id.index()] = true;
                len += 1;
            }
        }
        Pool { catalog, mask, len }
    }

    /// The catalog the pool is drawn from.
    pub fn catalog(&self) -> &'a Catalog {
        self.catalog
    }

    /// Whether a tool is in the pool.
    pub fn contains(&self, id: ToolId) -> bool {
        self.mask.get(id.index()).copied().unwrap_or(false)
    }

    /// The pool's tools in slot order (cheap; not registration order).
    pub fn iter(&self) -> impl Iterator<Item = (ToolId, &'a Arc<ToolDefinition>)> + '_ {
        self.catalog
            .live_slots()
            .filter(|(id, _)| self.mask[id.index()])
    }

    /// Number of tools in the pool.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn mask(&self) -> &[bool] {
        &self.mask
    }
}
