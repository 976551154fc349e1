//! The imported tools' pins as a surface that shows held tools and approves their changes sees
//! them (the approvals page of a gateway): what the servers serve now, judged against the pins
//! in the store, so that a change approved elsewhere (another replica, `tools approve-change`)
//! is no longer listed.

use std::sync::Arc;

use tool_runtime::store::{Store, StoreError};

use super::pin::{Held, approve_change};
use super::watch::Live;

/// The tools imported with pins from some servers ([`PinnedImports::add`]), and the store that
/// pins them. Cheap to clone.
#[derive(Clone)]
pub struct PinnedImports {
    store: Arc<dyn Store>,
    servers: Vec<Arc<Live>>,
}

impl std::fmt::Debug for PinnedImports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedImports")
            .field("servers", &self.servers.len())
            .finish_non_exhaustive()
    }
}

/// What approving a held tool's change did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Approval {
    /// The served definition is pinned now; the tool's calls run again.
    Approved(Box<Held>),
    /// No tool imported here has this name.
    Unknown,
    /// The tool is not held (its server serves what was approved, or nothing is pinned yet).
    NotHeld,
    /// The server serves another definition than the one approved (`served`): the person was
    /// shown something else, so nothing is written.
    OtherHash {
        /// The hash the server serves now.
        served: String,
    },
    /// The pin changed between the look and the write (another person decided): nothing is
    /// written.
    Raced,
}

impl PinnedImports {
    /// Nothing imported yet, pinned in `store` (the store the tools were imported with).
    pub fn new(store: Arc<dyn Store>) -> Self {
        PinnedImports {
            store,
            servers: Vec::new(),
        }
    }

    /// Adds the tools `client` imported with [`McpClient::import_pinned`](super::McpClient).
    pub fn add(&mut self, client: &super::McpClient) {
        self.servers.push(client.live.clone());
    }

    /// Registers the tools these servers add later in `executor`, as
    /// [`McpClient::follow`](super::McpClient::follow) does for one server: call it once the
    /// executor over the imported tools is built.
    pub fn follow(&self, executor: &tool_runtime::Executor) {
        for live in &self.servers {
            live.follow(executor.downgrade());
        }
    }

    /// The held tools, by name: those whose server serves another definition than the one
    /// pinned in the store, each with what changed.
    pub fn held(&self) -> Result<Vec<Held>, StoreError> {
        let served: Vec<_> = self.servers.iter().flat_map(|l| l.served()).collect();
        if served.is_empty() {
            return Ok(Vec::new());
        }
        let pins: std::collections::HashMap<String, _> = (self.store.list_pins()?.into_iter())
            .map(|p| (p.tool.clone(), p))
            .collect();
        let mut held: Vec<Held> = served
            .into_iter()
            .filter_map(|s| match pins.get(&s.tool) {
                Some(p) if p.hash != s.hash => Some(Held::new(p.clone(), s)),
                _ => None,
            })
            .collect();
        held.sort_by(|a, b| a.served.tool.cmp(&b.served.tool));
        held.dedup_by(|a, b| a.served.tool == b.served.tool);
        Ok(held)
    }

    /// Approves the change of the held tool `tool` to the definition with hash `hash` (the one
    /// the person was shown): written only if the server still serves it and the stored pin is
    /// still the one it replaces.
    pub fn approve(&self, tool: &str, hash: &str) -> Result<Approval, StoreError> {
        let known = self.servers.iter().flat_map(|l| l.served());
        let Some(served) = known.into_iter().find(|s| s.tool == tool) else {
            return Ok(Approval::Unknown);
        };
        let Some(held) = self.held()?.into_iter().find(|h| h.served.tool == tool) else {
            return Ok(Approval::NotHeld);
        };
        if served.hash != hash || held.served.hash != hash {
            return Ok(Approval::OtherHash {
                served: held.served.hash,
            });
        }
        Ok(match approve_change(&*self.store, &held)? {
            true => Approval::Approved(Box::new(held)),
            false => Approval::Raced,
        })
    }
}
