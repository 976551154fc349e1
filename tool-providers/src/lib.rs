//! Provider wire formats for tool-runtime: one module per provider.
