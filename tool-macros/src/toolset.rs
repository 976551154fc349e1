//! `toolset!`'s compile-time duplicate-name check: one constant assertion per pair of tools,
//! spanned at the later one so the error points into the `toolset![..]` invocation.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Path, Token};

pub struct Input {
    krate: TokenStream,
    tools: Vec<Path>,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut krate = TokenStream::new();
        while !input.peek(Token![;]) {
            let tt: proc_macro2::TokenTree = input.parse()?;
            krate.extend([tt]);
        }
        input.parse::<Token![;]>()?;
        let tools = Punctuated::<Path, Token![,]>::parse_terminated(input)?;
        Ok(Input {
            krate,
            tools: tools.into_iter().collect(),
        })
    }
}

pub fn check(input: Input) -> TokenStream {
    let krate = &input.krate;
    let mut asserts = TokenStream::new();
    for (j, b) in input.tools.iter().enumerate() {
        for a in &input.tools[..j] {
            let msg = format!(
                "toolset!: `{}` and `{}` have the same tool name; tool names must be unique within a ToolSet. Rename one with #[tool(name = \"...\")]",
                path_text(a),
                path_text(b)
            );
            asserts.extend(quote_spanned! {b.span()=>
                if #krate::__private::str_eq(<#a as #krate::__private::Tool>::NAME, <#b as #krate::__private::Tool>::NAME) {
                    ::core::panic!(#msg);
                }
            });
        }
    }
    quote! {
        const _: () = { #asserts };
    }
}

fn path_text(p: &Path) -> String {
    quote!(#p).to_string().replace(' ', "")
}
