//! The rules on where the schema comes from (derived, inline, a file, none) and, for a verbatim
//! schema, on its agreement with the Rust parameters the macro can see.

use super::{Schema, has_named_fields};
use crate::ast::{Input, Kind, Param};
use crate::names::suggestion;
use crate::verbatim::{self, Verbatim};
use darling::Error;
use syn::Expr;

/// The names the model sees, for the intent, sensitive and example checks.
pub(super) fn wire_names(input: &Input, schema: &Schema) -> Vec<String> {
    match schema {
        Schema::Verbatim(v) if !has_named_fields(input) => verbatim::properties(&v.value).0,
        _ => input
            .arguments()
            .filter(|p| !p.skipped)
            .map(|p| input.wire_name(p))
            .collect(),
    }
}

/// A verbatim schema agrees with the parameters, which do not shape it.
pub(super) fn verbatim_rules(
    input: &Input,
    schema: &Schema,
    errors: &mut darling::error::Accumulator,
) {
    if let Schema::Verbatim(v) = schema {
        if has_named_fields(input) {
            check_agreement(input, v, errors);
        }
        for p in input.arguments() {
            if p.arg.shapes_schema() {
                errors.push(
                    Error::custom(
                        "min/max/min_length/max_length shape a derived schema, but this tool's schema is verbatim: put `minimum`/`maximum`/`minLength`/`maxLength` in the schema instead",
                    )
                    .with_span(&p.span),
                );
            }
        }
    }
}

/// The schema options agree: at most one verbatim schema, and `allow_no_schema` alone, with a
/// mode, on a tool without named fields. The mode's variant name, if one is given.
fn schema_options(input: &Input, errors: &mut darling::error::Accumulator) -> Option<&'static str> {
    let o = &input.opts;
    if let (Some(_), Some(s)) = (&o.parameters, &o.schema) {
        errors.push(
            Error::custom("`parameters` and `schema` both given: a tool has one verbatim schema; keep the inline one or the file")
                .with_span(s),
        );
    }
    let mode = match &o.no_schema_mode {
        Some(e) => {
            if !o.allow_no_schema.is_present() {
                errors.push(
                    Error::custom("`no_schema_mode` only applies with `allow_no_schema`: add `allow_no_schema`, or remove the mode")
                        .with_span(e),
                );
            }
            mode_of(e, errors)
        }
        None => None,
    };
    if o.allow_no_schema.is_present() {
        if o.parameters.is_some() || o.schema.is_some() {
            errors.push(
                Error::custom(
                    "`allow_no_schema` with a schema: remove `allow_no_schema`, the schema is used",
                )
                .with_span(&o.allow_no_schema.span()),
            );
        } else if has_named_fields(input) {
            let what = if matches!(input.kind, Kind::Fn(_)) {
                "its parameters"
            } else {
                "its fields"
            };
            errors.push(
                Error::custom(format!(
                    "`allow_no_schema` is for struct tools without named fields; this tool's schema is derived from {what}, so opting out would only drop validation. Remove `allow_no_schema`"
                ))
                .with_span(&o.allow_no_schema.span()),
            );
        }
        if o.no_schema_mode.is_none() {
            errors.push(
                Error::custom("`allow_no_schema` needs a constraining mode: add `no_schema_mode = read_only | human_approval | full` (read_only: side effects need approval; human_approval: every call is approved by a person; full: no constraint, not recommended)")
                    .with_span(&o.allow_no_schema.span()),
            );
        }
    }
    mode
}

pub(super) fn schema_source(input: &Input, errors: &mut darling::error::Accumulator) -> Schema {
    let o = &input.opts;
    let mode = schema_options(input, errors);
    let verbatim = if let Some(lit) = &o.parameters {
        Some(verbatim::inline(lit).map_err(|p| (p, lit.span())))
    } else {
        o.schema
            .as_ref()
            .map(|lit| verbatim::file(lit).map_err(|p| (p, lit.span())))
    };
    match verbatim {
        Some(Ok(v)) => Schema::Verbatim(Box::new(v)),
        Some(Err((p, span))) => {
            errors.push(Error::custom(p.0).with_span(&span));
            Schema::Derived
        }
        None if o.allow_no_schema.is_present() => Schema::None(mode.unwrap_or("HumanApproval")),
        None => {
            if !has_named_fields(input) && matches!(input.kind, Kind::Struct { .. }) {
                if let Kind::Struct { item, .. } = &input.kind
                    && matches!(item.fields, syn::Fields::Unnamed(_))
                {
                    errors.push(
                        Error::custom(format!(
                            "struct tool `{}` has no named fields, so it has no schema: give it named fields (they become the arguments), supply `parameters = r#\"{{..}}\"#` or `schema = \"file.json\"`, or opt out explicitly with `allow_no_schema, no_schema_mode = human_approval`",
                            input.ident
                        ))
                        .with_span(&item.fields),
                    );
                }
                Schema::None("HumanApproval")
            } else {
                Schema::Derived
            }
        }
    }
}

fn mode_of(e: &Expr, errors: &mut darling::error::Accumulator) -> Option<&'static str> {
    let word = match e {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    };
    match word.as_deref().map(|w| w.replace('-', "_")).as_deref() {
        Some("read_only") => Some("ReadOnly"),
        Some("human_approval") => Some("HumanApproval"),
        Some("full") => Some("Full"),
        _ => {
            errors.push(
                Error::custom(
                    "unknown `no_schema_mode`: use `read_only`, `human_approval` or `full`",
                )
                .with_span(e),
            );
            None
        }
    }
}

/// A verbatim schema must agree with the Rust type: the same property names (after serde
/// renames, with a "did you mean" for near misses), the same required-ness both ways, and JSON
/// types the Rust types can hold (`agree`). What
/// the Rust type requires (not an `Option`, no default) must be listed in `required`; what the
/// schema requires must not have a default of its own (it would never apply), and an `Option`
/// the schema requires must accept `null` (or it could never be `None`). A container's
/// `#[serde(default)]` makes every field optional for serde, so the schema may still require some.
fn check_agreement(input: &Input, v: &Verbatim, errors: &mut darling::error::Accumulator) {
    let (props, required) = verbatim::properties(&v.value);
    let args: Vec<(&Param, String)> = input
        .arguments()
        .filter(|p| !p.skipped)
        .map(|p| (p, input.wire_name(p)))
        .collect();
    let has_flatten = args.iter().any(|(p, _)| p.flatten);
    for (p, wire) in args.iter().filter(|(p, _)| !p.flatten) {
        if !props.contains(wire) {
            errors.push(
                Error::custom(format!(
                    "argument `{wire}` has no property in the verbatim schema{}; add it under \"properties\" or rename the parameter",
                    suggestion(wire, props.iter().map(String::as_str))
                ))
                .with_span(&p.span),
            );
        } else if !input.is_optional(p) && !required.contains(wire) {
            errors.push(
                Error::custom(format!(
                    "argument `{wire}` is required by the Rust type (not an Option, no default) but the schema does not list it in \"required\": add it there, or make it `Option<T>` or give it #[arg(default = ..)]"
                ))
                .with_span(&p.span),
            );
        } else if required.contains(wire) && p.has_own_default() {
            errors.push(
                Error::custom(format!(
                    "argument `{wire}` has a default, but the schema lists it in \"required\", so the model always sends it and the default never applies: remove `{wire}` from \"required\", or remove the default"
                ))
                .with_span(&p.span),
            );
        } else if required.contains(wire)
            && crate::ast::is_option(&p.ty)
            && !verbatim::accepts_null(&v.value, wire)
        {
            errors.push(
                Error::custom(format!(
                    "argument `{wire}` is an `Option`, but the schema requires it and does not accept null, so it can never be `None`: remove `{wire}` from \"required\", allow null (e.g. \"type\": [\"string\", \"null\"]), or make it a plain `T`"
                ))
                .with_span(&p.span),
            );
        }
        if !custom_deserializer(p)
            && let Some(why) = crate::agree::property_disagreement(&v.value, wire, &p.ty)
        {
            errors.push(Error::custom(why).with_span(&p.ty));
        }
    }
    if !has_flatten {
        let wires: Vec<&str> = args.iter().map(|(_, w)| w.as_str()).collect();
        for prop in &props {
            if !wires.contains(&prop.as_str()) {
                errors.push(
                    Error::custom(format!(
                        "the schema's property `{prop}` matches no argument{}; add a parameter named `{prop}` (or #[serde(rename = \"{prop}\")] on one), or remove it from the schema",
                        suggestion(prop, wires.iter().copied())
                    ))
                    .with_span(&v.span),
                );
            }
        }
        for name in &required {
            if !props.contains(name) && !wires.contains(&name.as_str()) {
                errors.push(
                    Error::custom(format!(
                        "the schema requires `{name}`, which is neither a property nor an argument{}; no call could ever be valid. Remove it from \"required\", or add the property and a parameter",
                        suggestion(name, wires.iter().copied())
                    ))
                    .with_span(&v.span),
                );
            }
        }
    }
}

/// `#[serde(with = "..")]` or `deserialize_with`: the field's JSON is the function's to define.
fn custom_deserializer(p: &Param) -> bool {
    p.serde.iter().any(|a| {
        a.meta.require_list().is_ok_and(|l| {
            l.tokens.clone().into_iter().any(|t| {
                matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "with" || i == "deserialize_with")
            })
        })
    })
}
