//! Argument schemas written at compile time (the run-time half is
//! `tool_runtime::schema::written`): the text schemars would print for a struct or a unit enum,
//! worked out from the same tokens its derive reads, so that registering a tool does not have to
//! run schemars.
//!
//! Written only for what is fully known here, and byte for byte as schemars 1.x prints it (key
//! order included): named fields of primitive types, `String`, `Option<T>`, `Vec<T>` and nested
//! types (referred to under `$defs`; their own `#[derive(ToolArgs)]` writes theirs), unit enums,
//! doc comments, and the attributes `#[serde(rename = "..", default, default = "..",
//! rename_all = "..", deny_unknown_fields)]` and `#[schemars(length(..), range(..),
//! regex(pattern = ".."))]` with literal values. Anything else (another attribute, a generic, a
//! map, a `#` title in a doc comment, ...) writes nothing, and schemars derives the schema at run
//! time. `tests/tests/it/macro_written.rs` compares the two on many types, and debug builds with
//! the runtime's `verify-written` feature compare every written schema with schemars' when a
//! tool is defined.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Map, Value, json};
use syn::{Attribute, Data, DeriveInput, Expr, Fields, Lit, Meta, Type, UnOp};

use crate::ast::{generic_args, last_segment};

/// A written schema: its text with the run-time pieces, and whether it has any.
pub struct Model {
    /// `$defs` name.
    name: String,
    /// The object's text without its closing brace and description, cut at the run-time pieces.
    pieces: Vec<Out>,
    /// `,"description":".."` or empty.
    description: String,
}

enum Out {
    Text(String),
    /// A nested type's reference.
    Ref(Type),
    /// An expression giving a field's default.
    Default(TokenStream),
}

impl Model {
    /// The whole text of the root schema, when nothing is left to run time.
    pub fn constant(&self) -> Option<String> {
        match self.pieces.as_slice() {
            [Out::Text(t)] => Some(format!("{t}}}")),
            _ => None,
        }
    }

    /// `impl HasWritten for #ident`.
    pub fn expand(&self, ident: &syn::Ident, rt: &crate::runtime::Runtime) -> TokenStream {
        let w = quote!(#rt::written);
        let pieces = self.pieces.iter().map(|p| match p {
            Out::Text(t) => quote!(#w::Piece::Text(#t)),
            Out::Ref(ty) => quote!(#w::Piece::Ref(|| {
                #[allow(unused_imports)]
                use #w::{NotWritten as _, ViaWritten as _};
                (&&#w::Probe::<#ty>::NEW).written()
            })),
            Out::Default(e) => quote!(#w::Piece::Default(|| {
                #[allow(unused_imports)]
                use #w::NoSerialize as _;
                #w::MaybeSerialize(#e).text()
            })),
        });
        let name = &self.name;
        let description = &self.description;
        quote! {
            #[automatically_derived]
            impl #w::HasWritten for #ident {
                fn written() -> &'static #w::Written {
                    static WRITTEN: #w::Written = #w::Written {
                        name: #name,
                        body: &[#(#pieces),*],
                        description: #description,
                    };
                    &WRITTEN
                }
            }
        }
    }
}

/// The written schema of a `#[tool]`'s argument type, when it is derived and can be written.
pub fn for_tool(input: &crate::ast::Input, c: &crate::valid::Checked) -> Option<Model> {
    if !matches!(c.schema, crate::valid::Schema::Derived) {
        return None;
    }
    let item: DeriveInput = syn::parse2(crate::args::final_args_item(input, c)).ok()?;
    let known: HashMap<String, Expr> = input
        .params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match &p.arg.default {
            Some(darling::util::Override::Explicit(e)) => {
                Some((crate::ast::default_fn_name(input, i).to_string(), e.clone()))
            }
            _ => None,
        })
        .collect();
    model(&item, &known)
}

/// The written schema of `item` (a struct or enum exactly as schemars' derive will see it), or
/// `None` when only schemars knows it. `known_defaults`: default functions whose value is a
/// literal (the ones `#[arg(default = ..)]` generates), by name.
pub fn model(item: &DeriveInput, known_defaults: &HashMap<String, Expr>) -> Option<Model> {
    if !item.generics.params.is_empty() {
        return None;
    }
    let container = container(&item.attrs)?;
    let name = item.ident.to_string();
    if name.starts_with("r#") {
        return None;
    }
    let mut cx = Cx::default();
    let schema = match &item.data {
        Data::Struct(s) => {
            let Fields::Named(named) = &s.fields else {
                return None;
            };
            struct_schema(named, &container, known_defaults, &mut cx)?
        }
        Data::Enum(e) => enum_schema(e, &container)?,
        Data::Union(_) => return None,
    };
    let description = match schemars_doc(&item.attrs)? {
        Some(d) => format!(",\"description\":{}", Value::String(d)),
        None => String::new(),
    };
    let text = Value::Object(schema).to_string();
    let body = text.strip_suffix('}')?;
    Some(Model {
        name,
        pieces: cut(body, cx)?,
        description,
    })
}

/// Nested types and run-time defaults met so far, in order: their markers are JSON strings
/// `"\u0001R<n>\u0001"` and `"\u0001D<n>\u0001"` in the text, which [`cut`] replaces.
#[derive(Default)]
struct Cx {
    refs: Vec<Type>,
    defaults: Vec<TokenStream>,
}

const MARK: char = '\u{1}';

impl Cx {
    fn reference(&mut self, ty: &Type) -> Value {
        self.refs.push(ty.clone());
        Value::String(format!("{MARK}R{}{MARK}", self.refs.len() - 1))
    }

    fn default_value(&mut self, e: TokenStream) -> Value {
        self.defaults.push(e);
        Value::String(format!("{MARK}D{}{MARK}", self.defaults.len() - 1))
    }
}

/// Cuts the text at its markers. `None` if the text holds a marker-like string the macro did not
/// put there (a doc comment with a U+0001 in it).
fn cut(body: &str, cx: Cx) -> Option<Vec<Out>> {
    const OPEN: &str = "\"\\u0001";
    if body.matches(OPEN).count() != cx.refs.len() + cx.defaults.len() {
        return None;
    }
    let mut refs = cx.refs.into_iter();
    let mut defaults = cx.defaults.into_iter();
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find(OPEN) {
        let mut text = &rest[..at];
        let after = &rest[at + OPEN.len()..];
        let end = after.find("\\u0001\"")?;
        let piece = match after.as_bytes().first()? {
            b'R' => Out::Ref(refs.next()?),
            b'D' => {
                text = text.strip_suffix(",\"default\":")?;
                Out::Default(defaults.next()?)
            }
            _ => return None,
        };
        if !text.is_empty() {
            out.push(Out::Text(text.to_owned()));
        }
        out.push(piece);
        rest = &after[end + "\\u0001\"".len()..];
    }
    if !rest.is_empty() {
        out.push(Out::Text(rest.to_owned()));
    }
    Some(out)
}

struct Container {
    rename_all: Option<String>,
    deny_unknown_fields: bool,
}

/// The container's attributes, if all are understood.
fn container(attrs: &[Attribute]) -> Option<Container> {
    let mut c = Container {
        rename_all: None,
        deny_unknown_fields: false,
    };
    read_attrs(attrs, |of, m| {
        match of {
            Of::Serde if m.path.is_ident("rename_all") => c.rename_all = Some(lit_str(m)?),
            Of::Serde if m.path.is_ident("deny_unknown_fields") => c.deny_unknown_fields = true,
            _ if m.path.is_ident("crate") => {
                lit_str(m)?;
            }
            _ => return Err(m.error("not written")),
        }
        Ok(())
    })?;
    Some(c)
}

/// Whose attribute an option is in.
enum Of {
    Serde,
    Schemars,
}

/// Hands every option of the `#[serde(..)]` and `#[schemars(..)]` attributes to `read`. `None`
/// when `read` refuses one (it is not written) or another attribute may change what schemars
/// prints.
fn read_attrs(
    attrs: &[Attribute],
    mut read: impl FnMut(Of, &syn::meta::ParseNestedMeta) -> syn::Result<()>,
) -> Option<()> {
    for a in attrs {
        let p = a.path();
        if p.is_ident("serde") {
            a.parse_nested_meta(|m| read(Of::Serde, &m)).ok()?;
        } else if p.is_ident("schemars") {
            a.parse_nested_meta(|m| read(Of::Schemars, &m)).ok()?;
        } else if !harmless(a) {
            return None;
        }
    }
    Some(())
}

/// Attributes that change nothing schemars prints.
fn harmless(a: &Attribute) -> bool {
    let p = a.path();
    [
        "doc",
        "derive",
        // `#[derive(ToolArgs)]`'s own options: where the runtime is
        "tool_args",
        "allow",
        "warn",
        "deny",
        "expect",
        "must_use",
        "non_exhaustive",
    ]
    .iter()
    .any(|i| p.is_ident(i))
}

fn lit_str(m: &syn::meta::ParseNestedMeta) -> syn::Result<String> {
    let s: syn::LitStr = m.value()?.parse()?;
    Ok(s.value())
}

/// A field's attributes as schemars reads them.
#[derive(Default)]
struct FieldAttrs {
    rename: Option<String>,
    /// `Some(None)`: `#[serde(default)]`; `Some(Some(path))`: `default = "path"`.
    default: Option<Option<String>>,
    min_length: Option<Value>,
    max_length: Option<Value>,
    minimum: Option<Value>,
    maximum: Option<Value>,
    pattern: Option<String>,
}

fn field_attrs(attrs: &[Attribute]) -> Option<FieldAttrs> {
    let mut f = FieldAttrs::default();
    read_attrs(attrs, |of, m| {
        let is = |i: &str| m.path.is_ident(i);
        match of {
            Of::Serde if is("rename") => f.rename = Some(lit_str(m)?),
            Of::Serde if is("default") => {
                f.default = Some(if m.input.peek(syn::Token![=]) {
                    Some(lit_str(m)?)
                } else {
                    None
                });
            }
            Of::Schemars if is("length") || is("range") => {
                let length = is("length");
                m.parse_nested_meta(|b| {
                    let v: Expr = b.value()?.parse()?;
                    let v = literal(&v).ok_or_else(|| b.error("not a literal"))?;
                    let slot = match (length, b.path.get_ident().map(|i| i.to_string())) {
                        (true, Some(k)) if k == "min" => &mut f.min_length,
                        (true, Some(k)) if k == "max" => &mut f.max_length,
                        (false, Some(k)) if k == "min" => &mut f.minimum,
                        (false, Some(k)) if k == "max" => &mut f.maximum,
                        _ => return Err(b.error("not written")),
                    };
                    *slot = Some(v);
                    Ok(())
                })?;
            }
            Of::Schemars if is("regex") => m.parse_nested_meta(|b| {
                if !b.path.is_ident("pattern") {
                    return Err(b.error("not written"));
                }
                let s: syn::LitStr = b.value()?.parse()?;
                f.pattern = Some(s.value());
                Ok(())
            })?,
            _ => return Err(m.error("not written")),
        }
        Ok(())
    })?;
    Some(f)
}

fn struct_schema(
    named: &syn::FieldsNamed,
    c: &Container,
    known_defaults: &HashMap<String, Expr>,
    cx: &mut Cx,
) -> Option<Map<String, Value>> {
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    if c.deny_unknown_fields {
        root.insert("additionalProperties".into(), Value::Bool(false));
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in &named.named {
        let ident = field.ident.as_ref()?;
        let attrs = field_attrs(&field.attrs)?;
        // schemars' order: the type's schema, the description, length, range, pattern, default
        let mut s = type_schema(&field.ty, cx)?;
        if let Some(d) = schemars_doc(&field.attrs)? {
            s.insert("description".into(), Value::String(d));
        }
        for (kind, key, v) in [
            ("string", "minLength", &attrs.min_length),
            ("string", "maxLength", &attrs.max_length),
            ("array", "minItems", &attrs.min_length),
            ("array", "maxItems", &attrs.max_length),
            ("number", "minimum", &attrs.minimum),
            ("number", "maximum", &attrs.maximum),
        ] {
            if let Some(v) = v
                && has_type(&s, kind)
            {
                s.insert(key.into(), v.clone());
            }
        }
        if let Some(p) = &attrs.pattern
            && has_type(&s, "string")
        {
            s.insert("pattern".into(), Value::String(p.clone()));
        }
        if let Some(d) = &attrs.default {
            let value = match d {
                None => zero(&field.ty).unwrap_or_else(|| {
                    let ty = &field.ty;
                    cx.default_value(quote!(<#ty as ::core::default::Default>::default()))
                }),
                Some(path) => known_defaults
                    .get(path)
                    .and_then(|e| typed_literal(e, &field.ty))
                    .map_or_else(
                        || {
                            let path: syn::ExprPath = syn::parse_str(path).ok()?;
                            Some(cx.default_value(quote!(#path())))
                        },
                        Some,
                    )?,
            };
            s.insert("default".into(), value);
        }
        let base = ident.to_string().trim_start_matches("r#").to_owned();
        let wire = match (&attrs.rename, &c.rename_all) {
            (Some(r), _) => r.clone(),
            (None, Some(rule)) => crate::names::rename(&base, rule),
            (None, None) => base,
        };
        if attrs.default.is_none() && !is_named(&field.ty, "Option") {
            required.push(Value::String(wire.clone()));
        }
        properties.insert(wire, Value::Object(s));
    }
    if !properties.is_empty() {
        root.insert("properties".into(), Value::Object(properties));
    }
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
    Some(root)
}

fn enum_schema(e: &syn::DataEnum, c: &Container) -> Option<Map<String, Value>> {
    if e.variants.is_empty() {
        return None;
    }
    let mut plain = Vec::new();
    let mut documented = Vec::new();
    for v in &e.variants {
        if !matches!(v.fields, Fields::Unit) || v.discriminant.is_some() {
            return None;
        }
        let mut rename = None;
        read_attrs(&v.attrs, |of, m| match of {
            Of::Serde if m.path.is_ident("rename") => {
                rename = Some(lit_str(m)?);
                Ok(())
            }
            _ => Err(m.error("not written")),
        })?;
        let base = v.ident.to_string().trim_start_matches("r#").to_owned();
        let name =
            rename.unwrap_or_else(|| crate::names::rename_variant(&base, c.rename_all.as_deref()));
        match schemars_doc(&v.attrs)? {
            None => plain.push(Value::String(name)),
            Some(d) => documented.push(json!({"type": "string", "const": name, "description": d})),
        }
    }
    let plain = json!({"type": "string", "enum": plain});
    let schema = if documented.is_empty() {
        plain
    } else {
        let mut all = Vec::new();
        if plain["enum"].as_array().is_some_and(|a| !a.is_empty()) {
            all.push(plain);
        }
        all.extend(documented);
        json!({ "oneOf": all })
    };
    match schema {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The schema of a field's type as schemars' impls write it.
fn type_schema(ty: &Type, cx: &mut Cx) -> Option<Map<String, Value>> {
    let seg = last_segment(ty)?;
    let args = generic_args(seg);
    match (seg.ident.to_string().as_str(), args.as_slice()) {
        ("Option", [inner]) => {
            if is_named(inner, "Option") {
                return None;
            }
            let mut s = type_schema(inner, cx)?;
            if ["if", "allOf", "anyOf", "oneOf", "$ref"]
                .iter()
                .any(|k| s.contains_key(*k))
            {
                let mut wrapped = Map::new();
                wrapped.insert("anyOf".into(), json!([Value::Object(s), {"type": "null"}]));
                return Some(wrapped);
            }
            match s.get_mut("type")? {
                Value::String(t) => {
                    let t = std::mem::take(t);
                    s.insert("type".into(), json!([t, "null"]));
                }
                _ => return None,
            }
            Some(s)
        }
        ("Vec", [inner]) => {
            let items = type_schema(inner, cx)?;
            let mut s = Map::new();
            s.insert("type".into(), json!("array"));
            s.insert("items".into(), Value::Object(items));
            Some(s)
        }
        (_, []) if seg.arguments.is_empty() => match crate::primitive::primitive(ty) {
            Some(s) => Some(s),
            None => {
                let mut s = Map::new();
                s.insert("$ref".into(), cx.reference(ty));
                Some(s)
            }
        },
        _ => None,
    }
}

fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name)
}

/// schemars' `has_type`: an integer counts as a number.
fn has_type(s: &Map<String, Value>, kind: &str) -> bool {
    let is = |t: &Value| t == kind || (kind == "number" && t == "integer");
    match s.get("type") {
        Some(Value::Array(ts)) => ts.iter().any(is),
        Some(t) => is(t),
        None => false,
    }
}

/// `Default::default()` of a type whose value is known here.
fn zero(ty: &Type) -> Option<Value> {
    let seg = last_segment(ty)?;
    Some(match seg.ident.to_string().as_str() {
        "Option" => Value::Null,
        "Vec" => json!([]),
        "String" => json!(""),
        "bool" => json!(false),
        "f32" | "f64" => json!(0.0),
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => json!(0),
        _ => return None,
    })
}

/// A literal default as the field's type serializes it; `None` when that is not known here (an
/// `f32`, whose value goes through `f64` on its way into a `Value`, or a non-primitive type).
fn typed_literal(e: &Expr, ty: &Type) -> Option<Value> {
    let v = literal(e)?;
    let seg = last_segment(ty)?;
    let fits = match seg.ident.to_string().as_str() {
        "String" => v.is_string(),
        "bool" => v.is_boolean(),
        "f64" => v.is_f64(),
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => v.is_i64() || v.is_u64(),
        _ => false,
    };
    fits.then_some(v)
}

/// The JSON value of a literal expression (`10`, `-3`, `0.5`, `true`, `"x"`); `None` otherwise.
pub fn literal(e: &Expr) -> Option<Value> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i
                .base10_parse::<u64>()
                .ok()
                .map(Value::from)
                .or_else(|| i.base10_parse::<i64>().ok().map(Value::from)),
            // an `f32` literal would go through `f64` and print differently
            Lit::Float(f) if f.suffix().is_empty() || f.suffix() == "f64" => {
                f.base10_parse::<f64>().ok().map(Value::from)
            }
            Lit::Bool(b) => Some(Value::Bool(b.value)),
            Lit::Str(s) => Some(Value::String(s.value())),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match literal(&u.expr)? {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(Value::from(-i))
                } else {
                    n.as_f64().map(|f| Value::from(-f))
                }
            }
            _ => None,
        },
        Expr::Group(g) => literal(&g.expr),
        Expr::Paren(p) => literal(&p.expr),
        _ => None,
    }
}

/// The description schemars takes from a doc comment: the lines, each without one leading space,
/// joined with newlines and trimmed. `Ok(None)` for none; `None` when schemars would make a title
/// of it (a first line starting with `#`) or it is not all literal text.
fn schemars_doc(attrs: &[Attribute]) -> Option<Option<String>> {
    let mut lines = Vec::new();
    for a in attrs {
        let Meta::NameValue(nv) = &a.meta else {
            continue;
        };
        if !nv.path.is_ident("doc") {
            continue;
        }
        let Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) = &nv.value
        else {
            return None;
        };
        let v = s.value();
        lines.push(v.strip_prefix(' ').map(str::to_owned).unwrap_or(v));
    }
    let text = lines.join("\n");
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if text.starts_with('#') {
        return None;
    }
    Some((!text.is_empty()).then(|| text.to_owned()))
}
