//! The `tools` command line every app built on a `ToolSet` gets.
