#![doc = include_str!("../../README.md")]

// The macro crate's README, doctested here: its example needs `tool_runtime`, which the macro
// crate itself cannot depend on.
#[cfg(doctest)]
#[doc = include_str!("../../tool-macros/README.md")]
pub struct MacrosReadme;
