//! The argument reader of a derived schema: a visitor that reads the arguments object field by
//! field and checks each value against its schema node as it is read (the runtime half is
//! `tool_runtime::hydrate::plan::fields`).
//!
//! Generated only when the macro sees everything that decides how the arguments deserialize:
//! named fields, no generics, and no serde attribute but `rename = ".."`, `rename_all = ".."`,
//! `default`, `default = ".."` and `deny_unknown_fields`. Anything else (an `alias`, `with`,
//! `flatten`, a container `default`, `from`, ...) changes what serde's derive accepts in ways
//! the reader would not copy, so such tools keep the guard, which checks any argument type.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Attribute;

use crate::ast::{Input, Kind, Param};
use crate::valid::{Checked, Schema};

/// What the reader needs to know of one field.
struct Field<'a> {
    param: &'a Param,
    /// The name the model sends.
    wire: String,
    /// What fills the field when the key is left out; `None`: what its type makes of a missing
    /// value (serde's derive asks the type the same way).
    default: Option<TokenStream>,
}

/// The `Reader` impl for the argument type and the `Tool::__READER` constant, or nothing when
/// the reader cannot be generated faithfully.
pub fn reader(input: &Input, c: &Checked) -> Option<(TokenStream, TokenStream)> {
    if !matches!(c.schema, Schema::Derived) {
        return None;
    }
    let mut deny_unknown = false;
    let args_ty = match &input.kind {
        Kind::Fn(_) => quote!(__ToolArgs),
        Kind::Struct { item, named } => {
            if !named || !item.generics.params.is_empty() {
                return None;
            }
            deny_unknown = container_attrs(&item.attrs)?;
            let ident = &input.ident;
            quote!(#ident)
        }
    };
    let mut fields = Vec::new();
    for (i, p) in input.params.iter().enumerate() {
        if !p.is_argument() {
            continue;
        }
        p.ident.as_ref()?;
        let serde_default = field_attrs(&p.serde)?;
        let default = match (&p.arg.default, serde_default) {
            (Some(darling::util::Override::Explicit(_)), _) => {
                let f = crate::expand::default_fn_name(input, i);
                Some(quote!(#f()))
            }
            (Some(darling::util::Override::Inherit), _) | (None, Some(None)) => {
                Some(quote!(::core::default::Default::default()))
            }
            (None, Some(Some(path))) => Some(quote!(#path())),
            (None, None) => None,
        };
        fields.push(Field {
            param: p,
            wire: input.wire_name(p),
            default,
        });
    }
    if fields.len() > 64 {
        return None;
    }

    let fast = quote!(::tool_runtime::__private::fast);
    let serde = quote!(::tool_runtime::__private::serde);
    let names: Vec<&String> = fields.iter().map(|f| &f.wire).collect();
    let slots: Vec<syn::Ident> = (0..fields.len()).map(|i| format_ident!("__f{i}")).collect();
    let types: Vec<&syn::Type> = fields.iter().map(|f| &f.param.ty).collect();
    let indices = 0..fields.len();
    let idents = fields.iter().map(|f| f.param.ident.as_ref());
    let fills = fields.iter().map(|f| match &f.default {
        Some(d) => d.clone(),
        None => quote!(__fields.missing()?),
    });
    let unknown = if deny_unknown {
        quote!(__fields.deny()?)
    } else {
        quote!(__fields.unknown()?)
    };
    let reader = quote! {
        #[automatically_derived]
        impl #fast::Reader for #args_ty {
            const FIELDS: &'static [&'static str] = &[#(#names),*];

            fn read<'de, M: #serde::de::MapAccess<'de>>(
                __fields: &mut #fast::Fields<'_, 'de, M>,
            ) -> ::core::result::Result<Self, M::Error> {
                #[allow(unused_imports)]
                use #fast::{ViaGuard as _, ViaLeaf as _};
                #(let mut #slots: ::core::option::Option<#types> = ::core::option::Option::None;)*
                while let ::core::option::Option::Some(__key) = __fields.next_key()? {
                    match __key.as_str() {
                        #(#names => __fields.value(
                            #indices,
                            &mut #slots,
                            (&&#fast::Probe::<#types>::NEW).kind(),
                        )?,)*
                        _ => #unknown,
                    }
                }
                __fields.finish()?;
                ::core::result::Result::Ok(Self {
                    #(#idents: match #slots {
                        ::core::option::Option::Some(__v) => __v,
                        ::core::option::Option::None => #fills,
                    },)*
                })
            }
        }
    };
    let constant = quote! {
        const __READER: ::core::option::Option<#fast::ReaderOf<Self::Args>> =
            ::core::option::Option::Some(#fast::reader::<#args_ty>());
    };
    Some((reader, constant))
}

/// A struct tool's container attributes: `Some(deny_unknown_fields)` when serde's derive reads
/// the struct the way the reader does.
fn container_attrs(attrs: &[Attribute]) -> Option<bool> {
    let mut deny = false;
    let mut faithful = true;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let parsed = attr.parse_nested_meta(|m| {
            if m.path.is_ident("deny_unknown_fields") {
                deny = true;
            } else if (m.path.is_ident("rename_all") || m.path.is_ident("crate"))
                && m.input.peek(syn::Token![=])
            {
                let _: syn::LitStr = m.value()?.parse()?;
            } else {
                faithful = false;
                skip(&m)?;
            }
            Ok(())
        });
        if parsed.is_err() {
            return None;
        }
    }
    faithful.then_some(deny)
}

/// A field's serde attributes: `Some(default)` when the reader reads the field as serde's
/// derive does, where `default` is `Some(None)` for `default`, `Some(Some(path))` for
/// `default = "path"` and `None` for no default.
#[allow(clippy::option_option)]
fn field_attrs(attrs: &[Attribute]) -> Option<Option<Option<syn::ExprPath>>> {
    let mut default = None;
    let mut faithful = true;
    for attr in attrs {
        let parsed = attr.parse_nested_meta(|m| {
            if m.path.is_ident("rename") && m.input.peek(syn::Token![=]) {
                let _: syn::LitStr = m.value()?.parse()?;
            } else if m.path.is_ident("default") {
                if m.input.peek(syn::Token![=]) {
                    let s: syn::LitStr = m.value()?.parse()?;
                    default = Some(Some(s.parse::<syn::ExprPath>()?));
                } else {
                    default = Some(None);
                }
            } else {
                faithful = false;
                skip(&m)?;
            }
            Ok(())
        });
        if parsed.is_err() {
            return None;
        }
    }
    faithful.then_some(default)
}

/// Consumes what follows an option the reader does not copy.
fn skip(m: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if m.input.peek(syn::Token![=]) {
        let _: syn::Expr = m.value()?.parse()?;
    } else if m.input.peek(syn::token::Paren) {
        m.parse_nested_meta(|inner| skip(&inner))?;
    }
    Ok(())
}
