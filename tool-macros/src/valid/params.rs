//! The rules on a function tool's parameters: each one a type the schema can describe and the
//! reader can read, owned (no borrows), with an argument attribute only where it applies.

use crate::ast::{Input, Kind, Param, Role, generic_args, last_segment};
use darling::Error;
use quote::ToTokens;
use syn::Type;

/// Each parameter alone, and no two arguments under one wire name.
pub(super) fn params(input: &Input, errors: &mut darling::error::Accumulator) {
    for p in &input.params {
        check_param(input, p, errors);
    }
    let mut seen = std::collections::BTreeMap::new();
    for p in input.arguments().filter(|p| !p.skipped && !p.flatten) {
        let wire = input.wire_name(p);
        if let Some(prev) = seen.insert(wire.clone(), p.span) {
            let _ = prev;
            errors.push(
                Error::custom(format!("two arguments are both named `{wire}` for the model; rename one with #[serde(rename = \"..\")]"))
                    .with_span(&p.span),
            );
        }
    }
}

fn check_param(input: &Input, p: &Param, errors: &mut darling::error::Accumulator) {
    let is_fn = matches!(input.kind, Kind::Fn(_));
    if p.role != Role::Argument {
        if p.arg.shapes_schema() || p.arg.default.is_some() || p.arg.sensitive.is_present() {
            errors.push(
                Error::custom("#[arg] applies to arguments the model sends; this parameter is injected from the call context, so remove its #[arg(..)]")
                    .with_span(&p.span),
            );
        }
        return;
    }
    if let Type::Reference(r) = &p.ty {
        let only = if is_fn {
            "`&CallContext` is the only reference a tool function takes"
        } else {
            "a struct tool's fields are its arguments"
        };
        errors.push(
            Error::custom(format!(
                "borrowed types cannot be tool arguments: the model's arguments are deserialized into owned values. Use an owned type instead ({}); {only}",
                owned_hint(&r.elem)
            ))
            .with_span(&p.ty),
        );
    }
    if !is_fn {
        return;
    }
    match &p.ty {
        Type::Reference(_) => {}
        Type::ImplTrait(_) => errors.push(
            Error::custom(
                "`impl Trait` cannot be a tool argument: the schema needs a concrete type; name the type (an enum for alternatives)",
            )
            .with_span(&p.ty),
        ),
        Type::TraitObject(_) => errors.push(
            Error::custom("a trait object cannot be a tool argument: the schema needs a concrete, deserializable type; name it (an enum for alternatives, `serde_json::Value` for free-form JSON)")
                .with_span(&p.ty),
        ),
        _ => {}
    }
    if p.ident.is_none() {
        errors.push(
            Error::custom(
                "bind each argument to a plain name (`query: String`): the name is the property the model sends. Patterns are only for injected parameters such as `State(db): State<Db>`",
            )
            .with_span(&p.pat),
        );
    }
}

fn owned_hint(elem: &Type) -> String {
    match elem {
        Type::Path(tp) if tp.path.is_ident("str") => "`String` for `&str`".into(),
        Type::Slice(s) => format!(
            "`Vec<{}>` for `&[{}]`",
            s.elem.to_token_stream(),
            s.elem.to_token_stream()
        ),
        other => format!("`{}`", other.to_token_stream()),
    }
    .replace(" < ", "<")
    .replace(" >", ">")
}

pub(super) fn is_open_map(ty: &Type) -> bool {
    let Some(seg) = last_segment(ty) else {
        return false;
    };
    let id = seg.ident.to_string();
    if matches!(
        id.as_str(),
        "HashMap" | "BTreeMap" | "IndexMap" | "Map" | "Value"
    ) {
        return true;
    }
    matches!(id.as_str(), "Option" | "Vec" | "Box")
        && generic_args(seg).first().is_some_and(|t| is_open_map(t))
}
