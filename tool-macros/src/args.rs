//! The argument type exactly as serde's and schemars' derives see it: a function tool's hidden
//! args struct, or a struct tool with the derives it lacks, its `#[arg]`s turned into serde and
//! schemars attributes. `expand` emits it and `written` reads it, so both see the same tokens.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{Input, Kind, Param, default_fn_name};
use crate::valid::{Checked, Schema};

pub(crate) fn derived(c: &Checked) -> bool {
    matches!(c.schema, Schema::Derived)
}

/// `#[arg]` translated to serde/schemars attributes.
/// `schema`: with the schemars attributes (the type derives `JsonSchema`).
fn arg_attrs(
    input: &Input,
    p: &Param,
    c: &Checked,
    default_fn: &syn::Ident,
    schema: bool,
) -> TokenStream {
    let mut out = TokenStream::new();
    if let Some(d) = &p.arg.default {
        match d {
            darling::util::Override::Inherit => out.extend(quote!(#[serde(default)])),
            darling::util::Override::Explicit(_) => {
                let path = default_fn.to_string();
                out.extend(quote!(#[serde(default = #path)]));
            }
        }
    }
    if schema && derived(c) {
        let range = bounds(&p.arg.min, &p.arg.max);
        if !range.is_empty() {
            out.extend(quote!(#[schemars(range(#range))]));
        }
        let length = bounds(&p.arg.min_length, &p.arg.max_length);
        if !length.is_empty() {
            out.extend(quote!(#[schemars(length(#length))]));
        }
    }
    let _ = input;
    out
}

fn bounds(min: &Option<syn::Expr>, max: &Option<syn::Expr>) -> TokenStream {
    match (min, max) {
        (Some(a), Some(b)) => quote!(min = #a, max = #b),
        (Some(a), None) => quote!(min = #a),
        (None, Some(b)) => quote!(max = #b),
        (None, None) => TokenStream::new(),
    }
}

/// The struct with `#[arg]` options turned into serde/schemars attributes on its fields.
pub(crate) fn struct_item(input: &Input, c: &Checked, item: &syn::ItemStruct) -> TokenStream {
    let mut item = item.clone();
    for (i, (field, p)) in item.fields.iter_mut().zip(&input.params).enumerate() {
        let extra = arg_attrs(input, p, c, &default_fn_name(input, i), true);
        let parsed: syn::Result<Vec<syn::Attribute>> =
            syn::parse::Parser::parse2(syn::Attribute::parse_outer, extra);
        if let Ok(attrs) = parsed {
            field.attrs.extend(attrs);
        }
        if !derived(c) {
            // Without a JsonSchema derive, `#[schemars]` would be an unknown attribute.
            field
                .attrs
                .retain(|a| !a.path().is_ident("schemars") || input.derives.json_schema);
        }
    }
    quote!(#item)
}

/// Derives a struct tool still needs, with the crate paths pointing through tool_runtime; `#[arg]`
/// attributes become serde/schemars ones on the fields.
pub(crate) fn struct_derives(input: &Input, c: &Checked) -> TokenStream {
    let rt = input.runtime();
    let d = &input.derives;
    let mut derives = Vec::new();
    if !d.deserialize {
        derives.push(quote!(#rt::serde::Deserialize));
    }
    if !d.serialize {
        derives.push(quote!(#rt::serde::Serialize));
    }
    let want_schema = derived(c) && !d.json_schema;
    if want_schema {
        derives.push(quote!(#rt::schemars::JsonSchema));
    }
    let mut out = TokenStream::new();
    if !derives.is_empty() {
        out.extend(quote!(#[derive(#(#derives),*)]));
    }
    if !d.deserialize || !d.serialize {
        let serde = rt.crate_string("serde");
        out.extend(quote!(#[serde(crate = #serde)]));
    }
    if want_schema {
        let schemars = rt.crate_string("schemars");
        out.extend(quote!(#[schemars(crate = #schemars)]));
    }
    out
}

/// The argument type exactly as serde's and schemars' derives will see it: a struct tool with
/// its missing derives and its `#[arg]`s turned into serde/schemars attributes, or a function
/// tool's args struct.
pub(crate) fn final_args_item(input: &Input, c: &Checked) -> TokenStream {
    match &input.kind {
        Kind::Fn(_) => args_struct_item(input, c, true, true),
        Kind::Struct { item, .. } => {
            let derives = struct_derives(input, c);
            let item = struct_item(input, c, item);
            quote!(#derives #item)
        }
    }
}

/// One field per argument, carrying the parameter's docs (schemars turns them into
/// descriptions) and serde/schemars attributes. `schema`: with the `JsonSchema` derive (and the
/// schemars attributes it reads) when the schema is derived; without, the struct is the one
/// serde's derives and the generated reader need. `deserialize`: with serde's `Deserialize`
/// derive (without, the tool's generated reader implements it).
pub(crate) fn args_struct_item(
    input: &Input,
    c: &Checked,
    schema: bool,
    deserialize: bool,
) -> TokenStream {
    let schema = schema && derived(c);
    let mut fields = Vec::new();
    for (i, p) in input.params.iter().enumerate() {
        if !p.is_argument() {
            continue;
        }
        let Some(ident) = &p.ident else { continue };
        let ty = &p.ty;
        let docs = &p.docs;
        let serde = &p.serde;
        let schemars = if schema {
            p.schemars.clone()
        } else {
            Vec::new()
        };
        let extra = arg_attrs(input, p, c, &default_fn_name(input, i), schema);
        fields.push(quote! {
            #(#docs)*
            #(#serde)*
            #(#schemars)*
            #extra
            pub #ident: #ty
        });
    }
    let rt = input.runtime();
    let (schema_derive, schema_crate) = if schema {
        let schemars = rt.crate_string("schemars");
        (
            quote!(, #rt::schemars::JsonSchema),
            quote!(#[schemars(crate = #schemars)]),
        )
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    let serde = rt.crate_string("serde");
    let deserialize = deserialize.then(|| quote!(#rt::serde::Deserialize,));
    quote! {
        #[doc(hidden)]
        #[derive(#deserialize #rt::serde::Serialize #schema_derive)]
        #[serde(crate = #serde)]
        #schema_crate
        pub struct __ToolArgs {
            #(#fields,)*
        }
    }
}
