//! The one path the expansions reach the runtime through: `<crate>::__private`, where `<crate>`
//! is `::tool_runtime` unless `#[tool(crate = ..)]` or `#[tool_args(crate = ..)]` names it.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

/// `<crate>::__private`, as tokens.
#[derive(Clone)]
pub struct Runtime(TokenStream);

impl Runtime {
    /// `krate`: the path written in `crate = ..`, if any.
    pub fn new(krate: Option<&syn::Path>) -> Self {
        match krate {
            Some(path) => Runtime(quote!(#path::__private)),
            None => Runtime(quote!(::tool_runtime::__private)),
        }
    }

    /// The value of serde's and schemars' `crate = ".."` for the copies re-exported here: those
    /// attributes take a string.
    pub fn crate_string(&self, krate: &str) -> String {
        format!("{}::{krate}", self.0)
    }
}

impl ToTokens for Runtime {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
    }
}
