//! What `#[tool]` emits next to its errors (thiserror-impl's `fallback` is the model): the item
//! as it was written, a function's marker type, and a `Tool` impl whose items are never used, so
//! that the tool's uses elsewhere (`toolset![..]`, `ToolSet::with::<..>()`) type-check and rustc
//! adds nothing to the macro's own errors. The errors are `compile_error!`s, so a crate holding
//! the stub never builds and the stub can never be called.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{Input, Kind};

/// `name`: the tool's name, for the marker's doc. `stub`: whether the runtime's path is known.
pub fn expand(input: &Input, name: &str, stub: bool) -> TokenStream {
    let item = input.item_tokens_alone();
    let marker = match &input.kind {
        Kind::Fn(f) if f.sig.receiver().is_none() => marker(f, name),
        _ => TokenStream::new(),
    };
    // a method has no marker to implement the trait for, and a generic struct's impl would need
    // bounds the macro cannot know
    let stub = match &input.kind {
        Kind::Fn(f) => stub && f.sig.receiver().is_none(),
        Kind::Struct { item, .. } => stub && item.generics.params.is_empty(),
    };
    let stub = stub.then(|| stub_impl(input));
    quote!(#item #marker #stub)
}

/// The marker type a function tool is named by: a braced struct, which lives only in the type
/// namespace and so coexists with the function of the same name.
pub(crate) fn marker(f: &syn::ItemFn, name: &str) -> TokenStream {
    let vis = &f.vis;
    let ident = &f.sig.ident;
    let doc = format!(
        "The `{name}` tool: name it in `ToolSet::with::<{ident}>()` or `toolset![{ident}]`; the function `{ident}` stays callable as it is."
    );
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #ident {}
    }
}

/// `NAME` keeps its default, the empty "known only at run time", so that `toolset!`'s
/// duplicate-name check finds nothing to compare.
fn stub_impl(input: &Input) -> TokenStream {
    let rt = input.runtime();
    let ident = &input.ident;
    quote! {
        #[automatically_derived]
        impl #rt::Tool for #ident {
            type Args = ();
            type Output = ();

            fn definition() -> &'static #rt::ToolDefinition {
                ::core::unreachable!()
            }

            fn call(
                _: (),
                _: &#rt::CallContext,
            ) -> impl ::core::future::Future<Output = ::core::result::Result<(), #rt::ToolError>> + ::core::marker::Send {
                ::core::future::pending::<::core::result::Result<(), #rt::ToolError>>()
            }
        }
    }
}
