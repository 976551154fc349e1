//! The argument reader of a derived schema: a visitor that reads the arguments object field by
//! field and checks each value against its schema node as it is read (the runtime half is
//! `tool_runtime::hydrate::plan::fields`).
//!
//! `#[derive(ToolArgs)]` ([`derive`]) writes the same reader for a type nested in arguments, so
//! that it is read like the tool's own fields instead of through the guard.
//!
//! Generated only when the macro sees everything that decides how the arguments deserialize:
//! named fields, no generics, and no serde attribute but `rename = ".."`, `rename_all = ".."`,
//! `default`, `default = ".."` and `deny_unknown_fields`. Anything else (an `alias`, `with`,
//! `flatten`, a container `default`, `from`, ...) changes what serde's derive accepts in ways
//! the reader would not copy, so such tools keep the guard, which checks any argument type.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Attribute;

use crate::ast::{Input, Kind};
use crate::attr::CratePath;
use crate::runtime::Runtime;
use crate::valid::{Checked, Schema};

/// What the reader needs to know of one field.
struct Field {
    ident: syn::Ident,
    ty: syn::Type,
    /// The name the model sends.
    wire: String,
    /// What fills the field when the key is left out; `None`: what its type makes of a missing
    /// value (serde's derive asks the type the same way).
    default: Option<TokenStream>,
}

/// The `Reader` impl for a `#[tool]`'s argument type and its `Tool::__READER` constant, or
/// nothing when the reader cannot be generated faithfully (the guard then reads).
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
            let mut errors = Errors::default();
            deny_unknown = container_attrs(&item.attrs, &mut errors);
            if errors.any() {
                return None;
            }
            let ident = &input.ident;
            quote!(#ident)
        }
    };
    let rt = input.runtime();
    let fast = quote!(#rt::fast);
    let constant = quote! {
        const __READER: ::core::option::Option<#fast::ReaderOf<Self::Args>> =
            ::core::option::Option::Some(#fast::reader::<#args_ty>());
        const __GUARD: ::core::option::Option<#fast::GuardOf<Self::Args>> =
            ::core::option::Option::None;
    };
    if input.derives.tool_args {
        // `#[derive(ToolArgs)]` on the struct writes the reader
        return Some((TokenStream::new(), constant));
    }
    let mut fields = Vec::new();
    for (i, p) in input.params.iter().enumerate() {
        if !p.is_argument() {
            continue;
        }
        let mut errors = Errors::default();
        let serde_default = field_attrs(&p.serde, &mut errors);
        if errors.any() {
            return None;
        }
        let default = match (&p.arg.default, serde_default) {
            (Some(darling::util::Override::Explicit(_)), _) => {
                let f = crate::ast::default_fn_name(input, i);
                Some(quote!(#f()))
            }
            (Some(darling::util::Override::Inherit), _) | (None, Some(None)) => {
                Some(quote!(::core::default::Default::default()))
            }
            (None, Some(Some(path))) => Some(quote!(#path())),
            (None, None) => None,
        };
        fields.push(Field {
            ident: p.ident.clone()?,
            ty: p.ty.clone(),
            wire: input.wire_name(p),
            default,
        });
    }
    let mut reader = reader_impl(&rt, &args_ty, &fields, deny_unknown, input.ident.span()).ok()?;
    if let Kind::Fn(_) = input.kind {
        // The hidden args struct derives no `Deserialize` (see `args::args_struct_item`): its
        // reader stands in, so each tool compiles one deserializer instead of two.
        reader.extend(quote! {
            #[automatically_derived]
            impl<'de> #rt::serde::Deserialize<'de> for __ToolArgs {
                fn deserialize<__D: #rt::serde::Deserializer<'de>>(
                    __deserializer: __D,
                ) -> ::core::result::Result<Self, __D::Error> {
                    #fast::deserialize(__deserializer)
                }
            }
        });
    }
    Some((reader, constant))
}

/// `#[derive(ToolArgs)]`: a reader for a type nested in tool arguments (a struct with named
/// fields, or an enum of unit variants), so that hydration reads it like the tool's own fields
/// instead of through the guard. Every attribute that would make the reader differ from serde's
/// derive is a compile error at the attribute.
pub fn derive(input: syn::DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let known = runtime_option(&input.attrs, &mut errors);
    let rt = known.clone().unwrap_or_else(|| Runtime::new(None));
    if !input.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &input.generics,
            "`#[derive(ToolArgs)]` reads concrete types only: remove the generic parameters, or \
             remove the derive (hydration then checks this type through the guard, which reads \
             any type)",
        ));
    }
    let reader = match &input.data {
        syn::Data::Struct(s) => derive_struct(&rt, &input, s, &mut errors),
        syn::Data::Enum(e) => Some(derive_enum(&rt, &input, e, &mut errors)),
        syn::Data::Union(_) => {
            errors.push(syn::Error::new_spanned(
                &input.ident,
                "`#[derive(ToolArgs)]` reads structs with named fields and enums of unit \
                 variants, not unions",
            ));
            None
        }
    };
    if let Some(e) = errors.0 {
        let stub = known.and_then(|rt| stub_reader(&rt, &input));
        let errors = e.to_compile_error();
        return quote!(#stub #errors);
    }
    // its schema too, when it can be written (the tool that nests it refers to it)
    let written =
        crate::written::model(&input, &Default::default()).map(|m| m.expand(&input.ident, &rt));
    quote!(#reader #written)
}

/// Next to the derive's errors, a `Reader` that never runs (as `#[tool]`'s fallback has a stub
/// `Tool`): a `#[tool]` struct that derives it names it, and rustc would report its absence on
/// top of the derive's own errors. The errors are `compile_error!`s, so it is never called. A
/// generic type gets none: its impl would need bounds the derive cannot know.
fn stub_reader(rt: &Runtime, input: &syn::DeriveInput) -> Option<TokenStream> {
    if !matches!(input.data, syn::Data::Struct(_)) || !input.generics.params.is_empty() {
        return None;
    }
    let ident = &input.ident;
    Some(quote! {
        #[automatically_derived]
        impl #rt::fast::Reader for #ident {
            const FIELDS: &'static [&'static str] = &[];

            fn read<'de, M: #rt::serde::de::MapAccess<'de>>(
                _: &mut #rt::fast::Fields<'_, 'de, M>,
            ) -> ::core::result::Result<Self, M::Error> {
                ::core::unreachable!()
            }
        }
    })
}

/// Every problem found, each at its tokens: one build reports them all.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn any(&self) -> bool {
        self.0.is_some()
    }

    /// `result`'s error, if any, pushed; its value otherwise.
    fn handle<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }
}

/// `#[tool_args(crate = path)]`: where the runtime crate is; `None` when the option is there but
/// cannot be read (nothing naming the runtime can be emitted then).
fn runtime_option(attrs: &[Attribute], errors: &mut Errors) -> Option<Runtime> {
    let mut krate = None;
    let mut known = true;
    for attr in attrs.iter().filter(|a| a.path().is_ident("tool_args")) {
        let parsed = attr.parse_nested_meta(|m| {
            if m.path.is_ident("crate") {
                let value: syn::Expr = m.value()?.parse()?;
                krate = errors.handle(CratePath::from_value(&value)).map(|k| k.0);
                known &= krate.is_some();
            } else {
                errors.push(syn::Error::new_spanned(
                    &m.path,
                    "`#[tool_args(..)]` takes one option, `crate = path` (where the runtime crate \
                     is, when it is not `tool_runtime`)",
                ));
                // a misspelt `crate` may have meant a path other than the default
                known = false;
                skip(&m)?;
            }
            Ok(())
        });
        known &= errors.handle(parsed).is_some();
    }
    known.then(|| Runtime::new(krate.as_ref()))
}

fn derive_struct(
    rt: &Runtime,
    input: &syn::DeriveInput,
    s: &syn::DataStruct,
    errors: &mut Errors,
) -> Option<TokenStream> {
    let syn::Fields::Named(named) = &s.fields else {
        errors.push(syn::Error::new_spanned(
            &input.ident,
            "`#[derive(ToolArgs)]` reads structs with named fields (a JSON object's keys): name \
             the fields, or remove the derive",
        ));
        return None;
    };
    let deny_unknown = container_attrs(&input.attrs, errors);
    let rename_all = serde_string(&input.attrs, "rename_all");
    let mut fields = Vec::new();
    for f in &named.named {
        let ident = f.ident.clone().expect("named field");
        let serde: Vec<Attribute> = f
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("serde"))
            .cloned()
            .collect();
        let default = field_attrs(&serde, errors).map(|d| match d {
            None => quote!(::core::default::Default::default()),
            Some(path) => quote!(#path()),
        });
        let wire = match serde_string(&serde, "rename") {
            Some(r) => r,
            None => {
                let base = ident.to_string().trim_start_matches("r#").to_owned();
                match &rename_all {
                    Some(rule) => crate::names::rename(&base, rule),
                    None => base,
                }
            }
        };
        fields.push(Field {
            ident,
            ty: f.ty.clone(),
            wire,
            default,
        });
    }
    let ident = &input.ident;
    let ty = quote!(#ident);
    let reader = errors.handle(reader_impl(
        rt,
        &ty,
        &fields,
        deny_unknown,
        input.ident.span(),
    ))?;
    let fast = quote!(#rt::fast);
    let serde = quote!(#rt::serde);
    Some(quote! {
        const _: () = {
            #reader

            #[automatically_derived]
            impl #fast::Leaf for #ident {
                // inlined into the parent's read of the value, as serde's derive inlines its
                // fields' reads
                #[inline]
                fn read<'de, D: #serde::Deserializer<'de>>(
                    de: D,
                    place: #fast::Place<'_>,
                ) -> ::core::result::Result<Self, D::Error> {
                    #fast::nested::<Self, D>(de, place)
                }
            }
        };
    })
}

fn derive_enum(
    rt: &Runtime,
    input: &syn::DeriveInput,
    e: &syn::DataEnum,
    errors: &mut Errors,
) -> TokenStream {
    let mut rule = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let parsed = attr.parse_nested_meta(|m| {
            if m.path.is_ident("rename_all") && m.input.peek(syn::Token![=]) {
                let s: syn::LitStr = m.value()?.parse()?;
                rule = Some(s.value());
            } else if m.path.is_ident("crate") && m.input.peek(syn::Token![=]) {
                let _: syn::LitStr = m.value()?.parse()?;
            } else {
                errors.push(unfaithful(&m.path, ON_ENUM));
                skip(&m)?;
            }
            Ok(())
        });
        errors.handle(parsed);
    }
    let mut names = Vec::new();
    let mut variants = Vec::new();
    for v in &e.variants {
        if !matches!(v.fields, syn::Fields::Unit) {
            errors.push(syn::Error::new_spanned(
                &v.fields,
                "`#[derive(ToolArgs)]` reads enums of unit variants only (a JSON string each): \
                 remove the derive from an enum whose variants carry data (hydration then checks \
                 it through the guard)",
            ));
        }
        let mut rename = None;
        for attr in v.attrs.iter().filter(|a| a.path().is_ident("serde")) {
            let parsed = attr.parse_nested_meta(|m| {
                if m.path.is_ident("rename") && m.input.peek(syn::Token![=]) {
                    let s: syn::LitStr = m.value()?.parse()?;
                    rename = Some(s.value());
                } else {
                    errors.push(unfaithful(&m.path, ON_VARIANT));
                    skip(&m)?;
                }
                Ok(())
            });
            errors.handle(parsed);
        }
        let name = rename
            .unwrap_or_else(|| crate::names::rename_variant(&v.ident.to_string(), rule.as_deref()));
        names.push(name);
        variants.push(v.ident.clone());
    }
    let indices: Vec<usize> = (0..variants.len()).collect();
    let ident = &input.ident;
    let fast = quote!(#rt::fast);
    let serde = quote!(#rt::serde);
    quote! {
        #[automatically_derived]
        impl #fast::Leaf for #ident {
            // inlined into the parent's read of the value (see `derive_struct`)
            #[inline]
            fn read<'de, D: #serde::Deserializer<'de>>(
                de: D,
                place: #fast::Place<'_>,
            ) -> ::core::result::Result<Self, D::Error> {
                // a static: one address, which the verdicts on these names are kept under
                static __NAMES: &[&str] = &[#(#names),*];
                let __index = #fast::variant(de, place, __NAMES, |__name| match __name {
                    #(#names => #indices,)*
                    _ => usize::MAX,
                })?;
                match __index {
                    #(#indices => ::core::result::Result::Ok(Self::#variants),)*
                    _ => ::core::result::Result::Err(#fast::unknown_variant()),
                }
            }
        }
    }
}

/// The `Reader` impl of `ty` over `fields`.
/// `span`: where a struct with too many fields is reported.
fn reader_impl(
    rt: &Runtime,
    ty: &TokenStream,
    fields: &[Field],
    deny_unknown: bool,
    span: proc_macro2::Span,
) -> syn::Result<TokenStream> {
    if fields.len() > 64 {
        return Err(syn::Error::new(
            span,
            "`#[derive(ToolArgs)]` reads at most 64 fields (one bit each): group some of them in \
             a nested struct, or remove the derive (hydration then checks this type through the \
             guard)",
        ));
    }
    let fast = quote!(#rt::fast);
    let serde = quote!(#rt::serde);
    let names: Vec<&String> = fields.iter().map(|f| &f.wire).collect();
    let slots: Vec<syn::Ident> = (0..fields.len()).map(|i| format_ident!("__f{i}")).collect();
    let types: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();
    let indices: Vec<usize> = (0..fields.len()).collect();
    let idents = fields.iter().map(|f| &f.ident);
    let fills = fields.iter().enumerate().map(|(i, f)| match &f.default {
        Some(d) => d.clone(),
        None => quote!(__fields.missing(#i)?),
    });
    let unknown = if deny_unknown {
        quote!(__fields.deny()?)
    } else {
        quote!(__fields.unknown()?)
    };
    Ok(quote! {
        #[automatically_derived]
        impl #fast::Reader for #ty {
            const FIELDS: &'static [&'static str] = &[#(#names),*];

            fn read<'de, M: #serde::de::MapAccess<'de>>(
                __fields: &mut #fast::Fields<'_, 'de, M>,
            ) -> ::core::result::Result<Self, M::Error> {
                #[allow(unused_imports)]
                use #fast::{ViaGuard as _, ViaLeaf as _};
                #(let mut #slots: ::core::option::Option<#types> = ::core::option::Option::None;)*
                while let ::core::option::Option::Some(__index) = __fields.next_field(|__key| {
                    match __key {
                        #(#names => #indices,)*
                        _ => usize::MAX,
                    }
                })? {
                    match __index {
                        #(#indices => __fields.value(
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
    })
}

/// `allowed`: what serde options the reader reads in that place.
fn unfaithful(path: &syn::Path, allowed: &str) -> syn::Error {
    let name = path
        .get_ident()
        .map_or_else(|| "this option".to_owned(), ToString::to_string);
    syn::Error::new_spanned(
        path,
        format!(
            "`#[derive(ToolArgs)]` cannot read `#[serde({name})]` here the way serde does (it \
             reads {allowed} here). Remove the option, or remove the derive (hydration then \
             checks this type through the guard, which reads any serde attribute)"
        ),
    )
}

const ON_CONTAINER: &str = "`rename_all` and `deny_unknown_fields`";
const ON_FIELD: &str = "`rename` and `default`";
const ON_ENUM: &str = "`rename_all`";
const ON_VARIANT: &str = "`rename`";

/// A struct's container attributes: whether it has `deny_unknown_fields`. Every option serde's
/// derive reads otherwise than the reader is pushed to `errors`.
fn container_attrs(attrs: &[Attribute], errors: &mut Errors) -> bool {
    let mut deny = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let parsed = attr.parse_nested_meta(|m| {
            if m.path.is_ident("deny_unknown_fields") {
                deny = true;
            } else if (m.path.is_ident("rename_all") || m.path.is_ident("crate"))
                && m.input.peek(syn::Token![=])
            {
                let _: syn::LitStr = m.value()?.parse()?;
            } else {
                errors.push(unfaithful(&m.path, ON_CONTAINER));
                skip(&m)?;
            }
            Ok(())
        });
        errors.handle(parsed);
    }
    deny
}

/// The string value of serde option `key` (`rename_all = ".."` on a container, `rename = ".."`
/// on a field), if present.
fn serde_string(attrs: &[Attribute], key: &str) -> Option<String> {
    let mut out = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|m| {
            if m.path.is_ident(key) && m.input.peek(syn::Token![=]) {
                let s: syn::LitStr = m.value()?.parse()?;
                out = Some(s.value());
            } else {
                skip(&m)?;
            }
            Ok(())
        });
    }
    out
}

/// A field's default: `Some(None)` for `default`, `Some(Some(path))` for `default = "path"`
/// and `None` for no default. Every option serde's derive reads otherwise than the reader is
/// pushed to `errors`.
#[allow(clippy::option_option)]
fn field_attrs(attrs: &[Attribute], errors: &mut Errors) -> Option<Option<syn::ExprPath>> {
    let mut default = None;
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
                errors.push(unfaithful(&m.path, ON_FIELD));
                skip(&m)?;
            }
            Ok(())
        });
        errors.handle(parsed);
    }
    default
}

/// Consumes what follows an option that is not ours to read.
fn skip(m: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if m.input.peek(syn::Token![=]) {
        let _: syn::Expr = m.value()?.parse()?;
    } else if m.input.peek(syn::token::Paren) {
        m.parse_nested_meta(|inner| skip(&inner))?;
    }
    Ok(())
}
