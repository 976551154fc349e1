//! The `#[tool]` attribute. Use it through `tool_runtime::tool`.

use proc_macro::TokenStream;

/// Turns a function or a struct into a tool. See `tool_runtime` for the options.
#[proc_macro_attribute]
pub fn tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
