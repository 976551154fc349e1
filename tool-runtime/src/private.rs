//! Support for the `#[tool]` expansion. Not a public API.

pub use schemars;
pub use serde;
pub use serde_json;
