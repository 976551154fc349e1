//! Provider views of the canonical schema, from the pure [`tool_wire`] crate (which `#[tool]`
//! shares, so the declarations it emits at compile time are built by the same code). Each view works
//! on a copy: the canonical schema (the one hydration validates against) is never changed, and a
//! view that cannot represent a schema says so with a [`ViewError`] instead of sending something
//! else.
//!
//! - [`strict`]: OpenAI strict mode (every object closed, every property required, optional ones
//!   nullable).
//! - [`inline`]: `$defs`/`$ref` inlined, for providers that drop `$ref` (Ollama) or reject it.
//! - [`gemini`]: Gemini's OpenAPI-style `parameters` subset (the Gemini codec sends
//!   `parametersJsonSchema` by default; see [`crate::codec::gemini`] for why).

pub use tool_wire::{ViewError, gemini, inline, strict};

pub(crate) use tool_wire::resolve;
