//! The inverted index over every tool's metadata that BM25F (BM25 with per-field weights and
//! length normalisation) ranks.
//!
//! The index is maintained incrementally: postings keep raw per-field term counts and each tool
//! keeps its field lengths, so the averages BM25 normalises by are read at query time and adding
//! or removing a tool touches only that tool's postings. A term whose last posting goes is
//! dropped from the dictionary (its id is reused), so after any sequence of additions and
//! removals the index scores exactly as one built from scratch over the same tools.
//!
//! It sits below the catalog that owns it and the scorer that reads it, and knows neither.

use std::collections::HashMap;

use super::deadline::Deadline;
use super::text::Analyzer;
use crate::definition::ToolDefinition;

/// A tool's handle inside one [`Catalog`](super::Catalog): its slot in the index. Handles of removed tools may be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolId(pub(super) u32);

impl ToolId {
    pub(crate) fn from_slot(slot: u32) -> Self {
        ToolId(slot)
    }

    /// The slot number, usable as an index into per-tool tables a scorer keeps.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The indexed fields of a tool, in the order of [`Bm25Config::weights`].
pub(crate) const FIELDS: usize = 5;
const FIELD_NAMES: [&str; FIELDS] = [
    "name",
    "tags",
    "description",
    "parameter names",
    "parameter descriptions",
];

/// Tuning of the BM25F ranking. The defaults favour a tool's own name and tags over prose.
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Config {
    /// Term-frequency saturation (BM25's `k1`).
    pub k1: f32,
    /// Weight of the tool name's words.
    pub name_weight: f32,
    /// Weight of the tags.
    pub tags_weight: f32,
    /// Weight of the description.
    pub description_weight: f32,
    /// Weight of the parameter names' words.
    pub parameter_name_weight: f32,
    /// Weight of the parameters' descriptions (and enum values).
    pub parameter_description_weight: f32,
    /// Length normalisation (BM25's `b`) of the prose fields (description, parameter
    /// descriptions); names and tags are short and are not normalised.
    pub b: f32,
}

impl Default for Bm25Config {
    fn default() -> Self {
        Bm25Config {
            k1: 1.2,
            name_weight: 3.0,
            tags_weight: 2.0,
            description_weight: 1.0,
            parameter_name_weight: 1.0,
            parameter_description_weight: 0.4,
            b: 0.75,
        }
    }
}

impl Bm25Config {
    fn weights(&self) -> [f32; FIELDS] {
        [
            self.name_weight,
            self.tags_weight,
            self.description_weight,
            self.parameter_name_weight,
            self.parameter_description_weight,
        ]
    }

    fn bs(&self) -> [f32; FIELDS] {
        [0.0, 0.0, self.b, 0.0, self.b]
    }
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u16; FIELDS],
}

/// The inverted index behind [`Bm25Scorer`]. Owned by a [`Catalog`](super::Catalog), which keeps
/// it in step with the tools it holds.
#[derive(Debug, Default, Clone)]
pub(crate) struct Bm25Index {
    config: Bm25Config,
    analyzer: Analyzer,
    terms: HashMap<Box<str>, u32>,
    postings: Vec<Vec<Posting>>,
    /// Term ids whose postings all went away, reused by the next new terms.
    free_terms: Vec<u32>,
    /// Per document slot: its field lengths and its distinct terms (for removal and reasons).
    doc_len: Vec<[u32; FIELDS]>,
    doc_terms: Vec<Box<[u32]>>,
    total_len: [u64; FIELDS],
    docs: u32,
}

/// The terms of one query, analysed once and shared by the scorers that need them.
pub(crate) struct QueryTerms {
    /// (term id, first query word that produced it); unknown terms are dropped.
    pub(crate) known: Vec<(u32, String)>,
}

impl Bm25Index {
    pub(crate) fn new(config: Bm25Config) -> Self {
        Bm25Index {
            config,
            ..Default::default()
        }
    }

    pub(crate) fn config(&self) -> &Bm25Config {
        &self.config
    }

    /// Indexes one tool under `id` (a slot the catalog has just filled).
    pub(crate) fn insert(&mut self, id: ToolId, def: &ToolDefinition) {
        let doc = id.index();
        let mut counts: HashMap<u32, [u16; FIELDS]> = HashMap::new();
        let mut lens = [0u32; FIELDS];
        let Bm25Index {
            analyzer,
            terms,
            postings,
            free_terms,
            ..
        } = self;
        for_each_field_text(def, |field, text| {
            analyzer.for_each_term(text, |_, term| {
                let tid = term_id(terms, postings, free_terms, term);
                let tf = &mut counts.entry(tid).or_default()[field];
                *tf = tf.saturating_add(1);
                lens[field] += 1;
            });
        });

        let mut doc_terms: Vec<u32> = counts.keys().copied().collect();
        doc_terms.sort_unstable();
        for &tid in &doc_terms {
            self.postings[tid as usize].push(Posting {
                doc: doc as u32,
                tf: counts[&tid],
            });
        }
        if self.doc_len.len() <= doc {
            self.doc_len.resize(doc + 1, [0; FIELDS]);
            self.doc_terms.resize(doc + 1, Box::default());
        }
        self.doc_len[doc] = lens;
        self.doc_terms[doc] = doc_terms.into_boxed_slice();
        for (total, len) in self.total_len.iter_mut().zip(lens) {
            *total += u64::from(len);
        }
        self.docs += 1;
    }

    /// Removes the tool in slot `id`, whose definition is `def` (the one it was indexed from),
    /// from the index. Only its own postings are touched; terms no other tool has leave the
    /// dictionary, so they neither count in a later query's normalisation (a term with no
    /// postings would get the highest idf and lower every score) nor accumulate as tools churn.
    pub(crate) fn remove(&mut self, id: ToolId, def: &ToolDefinition) {
        let doc = id.index();
        let terms = std::mem::take(&mut self.doc_terms[doc]);
        let mut dead: Vec<u32> = Vec::new();
        for &tid in terms.iter() {
            let list = &mut self.postings[tid as usize];
            if let Some(pos) = list.iter().position(|p| p.doc as usize == doc) {
                list.swap_remove(pos);
            }
            if list.is_empty() {
                // Give the memory back: a popular term's list may have been long once.
                *list = Vec::new();
                dead.push(tid);
            }
        }
        if !dead.is_empty() {
            // The dictionary is keyed by the term's text, which only the definition still has:
            // analysing it again yields exactly the terms it was indexed under.
            let Bm25Index {
                analyzer,
                terms,
                free_terms,
                ..
            } = self;
            let mut dead_left = dead.len();
            for_each_field_text(def, |_, text| {
                analyzer.for_each_term(text, |_, term| {
                    if dead_left == 0 {
                        return;
                    }
                    if let Some(&tid) = terms.get(term.as_str())
                        && dead.binary_search(&tid).is_ok()
                    {
                        terms.remove(term.as_str());
                        free_terms.push(tid);
                        dead_left -= 1;
                    }
                });
            });
            debug_assert_eq!(
                dead_left, 0,
                "a removed tool's terms were not all found again"
            );
        }
        let lens = std::mem::take(&mut self.doc_len[doc]);
        for (total, len) in self.total_len.iter_mut().zip(lens) {
            *total -= u64::from(len);
        }
        self.docs -= 1;
    }

    /// Number of distinct terms in the dictionary.
    pub(crate) fn vocabulary(&self) -> usize {
        self.terms.len()
    }

    pub(crate) fn analyze_query(&self, query: &str) -> QueryTerms {
        let mut known: Vec<(u32, String)> = Vec::new();
        self.analyzer.for_each_term(query, |word, term| {
            if let Some(&tid) = self.terms.get(term.as_str())
                && !known.iter().any(|(t, _)| *t == tid)
            {
                known.push((tid, word.to_lowercase()));
            }
        });
        QueryTerms { known }
    }

    fn idf(&self, tid: u32) -> f32 {
        let n = self.docs as f32;
        let df = self.postings[tid as usize].len() as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// BM25F scores normalised to 0..1 by the query's idf mass: a tool matching every known query
    /// term strongly in its name approaches 1, one matching a single common word stays near 0.
    /// Returns `(slot, score)` for every eligible tool with a match, or `None` when `deadline`
    /// passes first (checked before each query term's postings: the unit of work here).
    pub(crate) fn search(
        &self,
        q: &QueryTerms,
        eligible: &[bool],
        deadline: Option<Deadline>,
    ) -> Option<Vec<(u32, f32)>> {
        if q.known.is_empty() || self.docs == 0 {
            return Some(Vec::new());
        }
        let weights = self.config.weights();
        let bs = self.config.bs();
        let k1 = self.config.k1;
        let inv_avg = self.total_len.map(|total| {
            let avg = total as f32 / self.docs as f32;
            if avg > 0.0 { 1.0 / avg } else { 0.0 }
        });
        let mut acc = vec![0f32; self.doc_len.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut idf_mass = 0f32;
        for (tid, _) in &q.known {
            if deadline.is_some_and(|d| d.expired()) {
                return None;
            }
            let idf = self.idf(*tid);
            idf_mass += idf;
            for p in &self.postings[*tid as usize] {
                let doc = p.doc as usize;
                if !eligible.get(doc).copied().unwrap_or(false) {
                    continue;
                }
                let lens = &self.doc_len[doc];
                let mut tf = 0f32;
                for f in 0..FIELDS {
                    if p.tf[f] != 0 {
                        let norm = 1.0 - bs[f] + bs[f] * lens[f] as f32 * inv_avg[f];
                        tf += weights[f] * f32::from(p.tf[f]) / norm;
                    }
                }
                if acc[doc] == 0.0 {
                    touched.push(p.doc);
                }
                acc[doc] += idf * tf / (k1 + tf);
            }
        }
        let inv_mass = if idf_mass > 0.0 { 1.0 / idf_mass } else { 0.0 };
        Some(
            touched
                .into_iter()
                .map(|d| (d, (acc[d as usize] * inv_mass).clamp(0.0, 1.0)))
                .collect(),
        )
    }

    /// Which query words matched which fields of one tool, e.g.
    /// `matched "weather" (name, description), "city" (parameter names)`.
    pub(crate) fn explain(&self, q: &QueryTerms, id: ToolId) -> String {
        let doc = id.index();
        let mut parts = Vec::new();
        for (tid, word) in &q.known {
            let Some(p) = self.postings[*tid as usize]
                .iter()
                .find(|p| p.doc as usize == doc)
            else {
                continue;
            };
            let fields: Vec<&str> = (0..FIELDS)
                .filter(|&f| p.tf[f] > 0)
                .map(|f| FIELD_NAMES[f])
                .collect();
            parts.push(format!("{word:?} ({})", fields.join(", ")));
        }
        if parts.is_empty() {
            "no query word matched".to_owned()
        } else {
            format!("matched {}", parts.join(", "))
        }
    }

    /// Approximate heap bytes held by the index (capacities, not lengths), for reporting memory
    /// per tool.
    pub(crate) fn heap_bytes(&self) -> usize {
        let terms: usize = self
            .terms
            .keys()
            .map(|k| k.len() + std::mem::size_of::<(Box<str>, u32)>() + 8)
            .sum();
        let postings: usize = self
            .postings
            .iter()
            .map(|p| {
                p.capacity() * std::mem::size_of::<Posting>() + std::mem::size_of::<Vec<Posting>>()
            })
            .sum();
        let docs = self.doc_len.capacity() * std::mem::size_of::<[u32; FIELDS]>()
            + self
                .doc_terms
                .iter()
                .map(|t| t.len() * 4 + std::mem::size_of::<Box<[u32]>>())
                .sum::<usize>();
        terms + postings + docs
    }
}

/// The id of `term`, adding it to the dictionary (reusing a freed id) when it is new.
fn term_id(
    terms: &mut HashMap<Box<str>, u32>,
    postings: &mut Vec<Vec<Posting>>,
    free_terms: &mut Vec<u32>,
    term: String,
) -> u32 {
    if let Some(&tid) = terms.get(term.as_str()) {
        return tid;
    }
    let tid = match free_terms.pop() {
        Some(tid) => tid,
        None => {
            postings.push(Vec::new());
            (postings.len() - 1) as u32
        }
    };
    terms.insert(term.into_boxed_str(), tid);
    tid
}

/// Feeds every indexed text of a tool to `sink` with its field number: the order and content
/// [`Bm25Index::insert`] and [`Bm25Index::remove`] both rely on.
fn for_each_field_text(def: &ToolDefinition, mut sink: impl FnMut(usize, &str)) {
    sink(0, &def.name);
    for tag in &def.tags {
        sink(1, tag);
    }
    sink(2, &def.description);
    let params = def.parameters_value();
    visit_parameters(&params, 0, &mut sink);
}

/// Feeds parameter names (field 3) and descriptions/enum values (field 4) of a JSON Schema to
/// `sink`, descending into nested objects and array items a few levels deep.
fn visit_parameters(schema: &serde_json::Value, depth: usize, sink: &mut impl FnMut(usize, &str)) {
    if depth > 4 {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        for (name, prop) in props {
            sink(3, name);
            if let Some(d) = prop.get("description").and_then(|d| d.as_str()) {
                sink(4, d);
            }
            if let Some(values) = prop.get("enum").and_then(|e| e.as_array()) {
                for v in values.iter().filter_map(|v| v.as_str()) {
                    sink(4, v);
                }
            }
            visit_parameters(prop, depth + 1, sink);
        }
    }
    if let Some(items) = schema.get("items") {
        visit_parameters(items, depth + 1, sink);
    }
}
