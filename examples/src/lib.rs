//! Shared pieces of the example agents.
