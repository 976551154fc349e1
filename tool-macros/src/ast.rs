//! The model of one `#[tool]` item: the item with the macro's own attributes removed, its options,
//! its doc comment, and one [`Param`] per argument or injected value.

use darling::{FromAttributes, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Fields, FnArg, Ident, ItemFn, ItemStruct, Lit, Meta, Pat, Type};

use crate::attr::{ArgOptions, CratePath, ToolOptions};

/// A parsed `#[tool]` item.
pub struct Input {
    pub opts: ToolOptions,
    pub kind: Kind,
    /// The doc comment, lines joined and trimmed; `None` when absent or blank.
    pub doc: Option<String>,
    pub ident: Ident,
    pub params: Vec<Param>,
    /// `#[serde(rename_all = "...")]` on a struct tool.
    pub rename_all: Option<String>,
    /// `#[serde(default)]` (or `default = ".."`) on a struct tool: every field may be left out.
    pub container_default: bool,
    /// Whether a struct tool already derives these (the macro adds only what is missing).
    pub derives: Derives,
}

#[derive(Default)]
pub struct Derives {
    pub serialize: bool,
    pub deserialize: bool,
    pub json_schema: bool,
    /// `#[derive(ToolArgs)]`: the struct's reader comes from the derive.
    pub tool_args: bool,
}

/// The two forms.
pub enum Kind {
    /// The function, stripped of parameter docs and helper attributes.
    Fn(Box<ItemFn>),
    /// The struct, stripped of helper attributes; `named` is false for tuple and unit structs.
    Struct { item: Box<ItemStruct>, named: bool },
}

/// How a parameter gets its value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sent by the model; part of the schema.
    Argument,
    /// `&CallContext`: the call's context itself.
    ContextRef,
    /// Extracted with `FromCallContext` (State, CallId, ..., or `#[inject]`).
    Extracted,
}

/// One parameter (function form) or field (struct form).
pub struct Param {
    /// The binding: the parameter's identifier, or the field's name. `None` for a pattern.
    pub ident: Option<Ident>,
    pub pat: Option<Box<Pat>>,
    pub ty: Type,
    pub role: Role,
    /// `///` lines as `#[doc]` attributes, moved to the generated args struct.
    pub docs: Vec<Attribute>,
    /// `#[serde(..)]` and `#[schemars(..)]`, forwarded to the args struct.
    pub serde: Vec<Attribute>,
    pub schemars: Vec<Attribute>,
    pub arg: ArgOptions,
    /// `#[serde(rename = "..")]`, if any.
    pub rename: Option<String>,
    /// `#[serde(default)]` or `#[serde(default = "..")]`.
    pub serde_default: bool,
    /// `#[serde(skip)]` / `skip_deserializing`: never sent by the model.
    pub skipped: bool,
    /// `#[serde(flatten)]`: its properties cannot be known here.
    pub flatten: bool,
    pub span: Span,
}

impl Param {
    pub fn is_argument(&self) -> bool {
        self.role == Role::Argument
    }

    /// Whether the parameter itself has a default (`#[serde(default)]` or `#[arg(default)]`);
    /// see [`Input::has_default`] for the container's too.
    pub fn has_own_default(&self) -> bool {
        self.serde_default || self.arg.default.is_some()
    }
}

/// Why [`parse`] gave no model to check.
pub enum Rejected {
    /// Not an item `#[tool]` takes, or not Rust: emitted again as it was written.
    Item(TokenStream),
    /// The item was read but its options were not. `runtime_known`: whether the `crate` option
    /// (if any) was read, so that code naming the runtime can be emitted next to the errors.
    Options {
        input: Box<Input>,
        runtime_known: bool,
    },
}

/// Parses the attribute arguments and the item. Helper attributes are removed from the item even
/// when something fails, so the item can always be emitted again as written.
pub fn parse(
    attr: TokenStream,
    item: TokenStream,
    errors: &mut darling::error::Accumulator,
) -> Result<Input, Rejected> {
    let (opts, krate) = match darling::ast::NestedMeta::parse_meta_list(attr) {
        Ok(list) => (
            errors.handle(ToolOptions::from_list(&list)),
            crate_option(&list),
        ),
        Err(e) => {
            errors.push(e.into());
            (None, None)
        }
    };
    let parsed: syn::Item = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(e) => {
            errors.push(e.into());
            return Err(Rejected::Item(item));
        }
    };
    let mut input = match parsed {
        syn::Item::Fn(f) => parse_fn(f, errors),
        syn::Item::Struct(s) => parse_struct(s, errors),
        other => {
            errors.push(
                darling::Error::custom(
                    "#[tool] goes on a function (`fn`/`async fn`) or on a struct whose fields are the arguments; for a set of choices, use an enum as the type of an argument",
                )
                .with_span(&item_name_span(&other)),
            );
            return Err(Rejected::Item(other.into_token_stream()));
        }
    };
    match opts {
        Some(opts) => {
            input.opts = opts;
            input.pass_runtime_to_derive();
            Ok(input)
        }
        None => {
            input.opts.krate = krate.clone().flatten();
            input.pass_runtime_to_derive();
            Err(Rejected::Options {
                input: Box::new(input),
                runtime_known: krate.is_some(),
            })
        }
    }
}

/// The `crate` option alone, for when the other options could not be read: `None` when it is
/// there but is not a path, `Some(None)` when it is not there.
fn crate_option(list: &[darling::ast::NestedMeta]) -> Option<Option<CratePath>> {
    let mut found = None;
    for item in list {
        if let darling::ast::NestedMeta::Meta(m) = item
            && m.path().is_ident("crate")
        {
            let Meta::NameValue(nv) = m else { return None };
            found = Some(CratePath::from_value(&nv.value).ok()?);
        }
    }
    Some(found)
}

/// Where an item that cannot be a tool is named (its doc comment would be the first token).
fn item_name_span(item: &syn::Item) -> Span {
    match item {
        syn::Item::Enum(i) => i.ident.span(),
        syn::Item::Const(i) => i.ident.span(),
        syn::Item::Static(i) => i.ident.span(),
        syn::Item::Trait(i) => i.ident.span(),
        syn::Item::Type(i) => i.ident.span(),
        syn::Item::Union(i) => i.ident.span(),
        syn::Item::Mod(i) => i.ident.span(),
        syn::Item::Impl(i) => i.impl_token.span,
        other => other.span(),
    }
}

impl Input {
    /// Where the expansion reaches the runtime (`crate = ..`, or `::tool_runtime`).
    pub fn runtime(&self) -> crate::runtime::Runtime {
        crate::runtime::Runtime::new(self.opts.krate.as_ref().map(|k| &k.0))
    }

    /// `#[derive(ToolArgs)]` on a struct tool learns where the runtime is from `#[tool(crate = ..)]`
    /// unless it has a `#[tool_args]` of its own, so that the path is written once.
    fn pass_runtime_to_derive(&mut self) {
        let (Some(krate), Kind::Struct { item, .. }) = (&self.opts.krate, &mut self.kind) else {
            return;
        };
        if self.derives.tool_args && !item.attrs.iter().any(|a| a.path().is_ident("tool_args")) {
            let path = &krate.0;
            item.attrs
                .push(syn::parse_quote!(#[tool_args(crate = #path)]));
        }
    }

    /// The item as it is emitted: unchanged except for the removed helper attributes.
    pub fn item_tokens(&self) -> TokenStream {
        match &self.kind {
            Kind::Fn(f) => f.to_token_stream(),
            Kind::Struct { item, .. } => item.to_token_stream(),
        }
    }

    /// The item emitted next to errors, when no `Tool` impl and no derives are: a struct also
    /// loses the `#[serde]`/`#[schemars]` attributes that only the derives the macro would have
    /// added understand, so that rustc adds no "cannot find attribute" to the real errors.
    pub fn item_tokens_alone(&self) -> TokenStream {
        let Kind::Struct { item, .. } = &self.kind else {
            return self.item_tokens();
        };
        let mut item = item.clone();
        let keep_serde = self.derives.serialize && self.derives.deserialize;
        let keep_schemars = self.derives.json_schema;
        let keep = |a: &Attribute| {
            (keep_serde || !a.path().is_ident("serde"))
                && (keep_schemars || !a.path().is_ident("schemars"))
        };
        item.attrs.retain(keep);
        for field in item.fields.iter_mut() {
            field.attrs.retain(keep);
        }
        item.to_token_stream()
    }

    /// Whether serde fills `p` in when the model leaves it out: its own default, or the
    /// container's `#[serde(default)]`.
    pub fn has_default(&self, p: &Param) -> bool {
        p.has_own_default() || self.container_default
    }

    /// Whether the model may leave `p` out.
    pub fn is_optional(&self, p: &Param) -> bool {
        self.has_default(p) || is_option(&p.ty)
    }

    pub fn arguments(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.is_argument())
    }

    /// The name the model sees for an argument, after serde's renames.
    pub fn wire_name(&self, p: &Param) -> String {
        if let Some(r) = &p.rename {
            return r.clone();
        }
        let base = p
            .ident
            .as_ref()
            .map(|i| i.to_string().trim_start_matches("r#").to_owned())
            .unwrap_or_default();
        match &self.rename_all {
            Some(rule) => crate::names::rename(&base, rule),
            None => base,
        }
    }
}

fn parse_fn(mut f: ItemFn, errors: &mut darling::error::Accumulator) -> Input {
    let doc = doc_text(&f.attrs);
    let mut params = Vec::new();
    for input in f.sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(r) => {
                errors.push(
                    darling::Error::custom(
                        "a tool function cannot take `self`: a tool is a free function. Move shared \
                         values into application state and take them as `State(x): State<T>`, or \
                         use the struct form (`#[tool] struct ..` + `impl Run`)",
                    )
                    .with_span(&r),
                );
            }
            FnArg::Typed(pt) => {
                let (kept, mut p) = split_attrs(std::mem::take(&mut pt.attrs), errors);
                pt.attrs = kept.other;
                p.span = pt.span();
                p.ty = (*pt.ty).clone();
                let injected = kept.inject || is_injected_type(&pt.ty);
                p.role = if is_context_ref(&pt.ty) {
                    Role::ContextRef
                } else if injected {
                    Role::Extracted
                } else {
                    Role::Argument
                };
                match &*pt.pat {
                    Pat::Ident(pi) if pi.subpat.is_none() => p.ident = Some(pi.ident.clone()),
                    _ => {}
                }
                p.pat = Some(pt.pat.clone());
                params.push(p);
            }
        }
    }
    let ident = f.sig.ident.clone();
    Input {
        opts: ToolOptions::default(),
        kind: Kind::Fn(Box::new(f)),
        doc,
        ident,
        params,
        rename_all: None,
        container_default: false,
        derives: Derives::default(),
    }
}

fn parse_struct(mut s: ItemStruct, errors: &mut darling::error::Accumulator) -> Input {
    let doc = doc_text(&s.attrs);
    let mut derives = Derives::default();
    let mut rename_all = None;
    let mut container_default = false;
    for attr in &s.attrs {
        if attr.path().is_ident("derive") {
            let _ = attr.parse_nested_meta(|m| {
                let last = m.path.segments.last().map(|s| s.ident.to_string());
                match last.as_deref() {
                    Some("Serialize") => derives.serialize = true,
                    Some("Deserialize") => derives.deserialize = true,
                    Some("JsonSchema") => derives.json_schema = true,
                    Some("ToolArgs") => derives.tool_args = true,
                    _ => {}
                }
                Ok(())
            });
        } else if attr.path().is_ident("serde") {
            let _ = attr.parse_nested_meta(|m| {
                if m.path.is_ident("rename_all") {
                    rename_all = rename_value(&m)?;
                } else if m.path.is_ident("default") {
                    container_default = true;
                    skip_value(&m)?;
                } else {
                    skip_value(&m)?;
                }
                Ok(())
            });
        }
    }
    let named = matches!(s.fields, Fields::Named(_));
    let mut params = Vec::new();
    for field in s.fields.iter_mut() {
        let (kept, mut p) = split_attrs(std::mem::take(&mut field.attrs), errors);
        // Docs and serde/schemars attributes stay on the struct: it is the args type itself.
        field.attrs = kept.other;
        field.attrs.extend(p.docs.iter().cloned());
        field.attrs.extend(p.serde.iter().cloned());
        field.attrs.extend(p.schemars.iter().cloned());
        p.ident = field.ident.clone();
        p.ty = field.ty.clone();
        // the field's name, not its doc comment: errors point at what to rename or change
        p.span = field
            .ident
            .as_ref()
            .map_or_else(|| field.ty.span(), |i| i.span());
        params.push(p);
    }
    let ident = s.ident.clone();
    Input {
        opts: ToolOptions::default(),
        kind: Kind::Struct {
            item: Box::new(s),
            named,
        },
        doc,
        ident,
        params,
        rename_all,
        container_default,
        derives,
    }
}

struct Kept {
    other: Vec<Attribute>,
    inject: bool,
}

/// Sorts a parameter's attributes into the macro's own (removed), serde/schemars/docs (moved to
/// the args struct) and the rest (kept on the item).
fn split_attrs(attrs: Vec<Attribute>, errors: &mut darling::error::Accumulator) -> (Kept, Param) {
    let arg = errors
        .handle(ArgOptions::from_attributes(&attrs))
        .unwrap_or_default();
    let mut p = Param {
        ident: None,
        pat: None,
        ty: syn::parse_quote!(()),
        role: Role::Argument,
        docs: Vec::new(),
        serde: Vec::new(),
        schemars: Vec::new(),
        arg,
        rename: None,
        serde_default: false,
        skipped: false,
        flatten: false,
        span: Span::call_site(),
    };
    let mut kept = Kept {
        other: Vec::new(),
        inject: false,
    };
    for attr in attrs {
        if attr.path().is_ident("arg") {
            continue;
        } else if attr.path().is_ident("inject") {
            kept.inject = true;
        } else if attr.path().is_ident("doc") {
            p.docs.push(attr);
        } else if attr.path().is_ident("serde") {
            let _ = attr.parse_nested_meta(|m| {
                if m.path.is_ident("rename") {
                    p.rename = rename_value(&m)?;
                } else if m.path.is_ident("default") {
                    p.serde_default = true;
                    skip_value(&m)?;
                } else if m.path.is_ident("skip") || m.path.is_ident("skip_deserializing") {
                    p.skipped = true;
                } else if m.path.is_ident("flatten") {
                    p.flatten = true;
                } else {
                    skip_value(&m)?;
                }
                Ok(())
            });
            p.serde.push(attr);
        } else if attr.path().is_ident("schemars") {
            p.schemars.push(attr);
        } else {
            kept.other.push(attr);
        }
    }
    (kept, p)
}

/// `rename = "x"` or `rename(deserialize = "x")`: the name the model sends.
fn rename_value(m: &syn::meta::ParseNestedMeta) -> syn::Result<Option<String>> {
    if m.input.peek(syn::Token![=]) {
        let s: syn::LitStr = m.value()?.parse()?;
        return Ok(Some(s.value()));
    }
    let mut out = None;
    m.parse_nested_meta(|inner| {
        if inner.path.is_ident("deserialize") {
            let s: syn::LitStr = inner.value()?.parse()?;
            out = Some(s.value());
        } else {
            skip_value(&inner)?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// Consumes whatever follows a serde option we do not interpret.
fn skip_value(m: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if m.input.peek(syn::Token![=]) {
        let _: Expr = m.value()?.parse()?;
    } else if m.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in m.input);
        let _: TokenStream = content.parse()?;
    }
    Ok(())
}

/// The doc comment's text: lines trimmed of one leading space, joined with newlines.
pub fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if let Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(l) = &nv.value
            && let Lit::Str(s) = &l.lit
        {
            let v = s.value();
            lines.push(v.strip_prefix(' ').unwrap_or(&v).trim_end().to_owned());
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The function that returns the `#[arg(default = EXPR)]` of parameter `i` (serde's
/// `default = "path"` needs a path).
pub fn default_fn_name(input: &Input, i: usize) -> syn::Ident {
    quote::format_ident!(
        "__tool_default_{}_{}",
        input.ident.to_string().trim_start_matches("r#"),
        i
    )
}

/// The last path segment's identifier of a type (`a::b::State<T>` gives `State`).
pub fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => tp.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

fn is_injected_type(ty: &Type) -> bool {
    matches!(
        last_segment(ty).map(|s| s.ident.to_string()).as_deref(),
        Some("State" | "CallContext" | "CallId" | "CorrelationId" | "Session")
    )
}

/// `&CallContext` (any path to it).
pub fn is_context_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => {
            last_segment(&r.elem).is_some_and(|s| s.ident == "CallContext")
        }
        _ => false,
    }
}

/// `Option<T>` by its last path segment.
pub fn is_option(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "Option")
}

/// The type arguments of the last segment (`Result<A, B>` gives `[A, B]`).
pub fn generic_args(seg: &syn::PathSegment) -> Vec<&Type> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
