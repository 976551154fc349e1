//! Checks a parsed [`Input`] and resolves its options into a [`Checked`] model. Every problem is
//! accumulated with the span of the tokens to fix; the model is still produced (with fallbacks)
//! so the expansion can go on and rustc reports nothing but our errors.

use darling::Error;
use quote::ToTokens;
use serde_json::Value;
use syn::{Expr, Type};

use crate::ast::{Input, Kind, Param, Role, generic_args, last_segment};
use crate::names::{snake_case, suggestion};
use crate::verbatim::{self, Verbatim};

/// Where the argument schema comes from.
pub enum Schema {
    Derived,
    Verbatim(Box<Verbatim>),
    /// `allow_no_schema`, with the mode's variant name (`ReadOnly`, `HumanApproval`, `Full`).
    None(&'static str),
}

/// The return type of a function tool.
pub struct Output {
    pub ty: Type,
    pub is_result: bool,
}

/// The resolved options.
pub struct Checked {
    pub name: String,
    pub description: String,
    /// Variant name of `Safety`.
    pub safety: &'static str,
    pub reversible: bool,
    pub idempotent: bool,
    pub retry: bool,
    pub strict: bool,
    pub intent: Option<String>,
    pub tags: Vec<String>,
    pub examples: Vec<String>,
    pub timeout_ms: Option<u64>,
    pub sensitive: Vec<String>,
    pub schema: Schema,
    /// Function form only.
    pub output: Option<Output>,
}

pub fn check(input: &Input, errors: &mut darling::error::Accumulator) -> Checked {
    let o = &input.opts;
    let name = name(input, errors);
    let description = description(input, &name, errors);
    let safety = safety(input, errors);
    item_shape(input, errors);
    params(input, errors);
    let schema = schema_source(input, errors);
    let wire_names = wire_names(input, &schema);
    verbatim_rules(input, &schema, errors);
    let intent = intent(input, &wire_names, errors);
    let sensitive = sensitive(input, &wire_names, errors);
    let timeout_ms = timeout(input, errors);
    let examples = examples(input, &schema, &wire_names, errors);
    let strict = strict(input, &schema, errors);
    let output = match &input.kind {
        Kind::Fn(f) => Some(output(&f.sig.output, errors)),
        Kind::Struct { .. } => None,
    };
    Checked {
        name,
        description,
        safety,
        reversible: o.reversible.is_present(),
        idempotent: o.idempotent.is_present(),
        retry: o.retry.is_present(),
        strict,
        intent,
        tags: o.tags.iter().flatten().map(|l| l.value()).collect(),
        examples,
        timeout_ms,
        sensitive,
        schema,
        output,
    }
}

/// The tool's name: `name = ".."`, or the item's; one providers accept.
fn name(input: &Input, errors: &mut darling::error::Accumulator) -> String {
    let o = &input.opts;
    let ident_span = input.ident.span();
    let is_fn = matches!(input.kind, Kind::Fn(_));
    let name = match &o.name {
        Some(l) => l.value(),
        None if is_fn => input.ident.to_string().trim_start_matches("r#").to_owned(),
        None => snake_case(&input.ident.to_string()),
    };
    if !valid_name(&name) {
        let span = o.name.as_ref().map_or(ident_span, |l| l.span());
        errors.push(
            Error::custom(format!(
                "tool name {name:?} is rejected by providers: names must match ^[a-zA-Z0-9_-]{{1,64}}$ (letters, digits, `_` and `-`, at most 64); set a valid one with `name = \"...\"`"
            ))
            .with_span(&span),
        );
    }
    name
}

/// `description = ".."` or the doc comment: one of them, not blank.
fn description(input: &Input, name: &str, errors: &mut darling::error::Accumulator) -> String {
    let o = &input.opts;
    let ident_span = input.ident.span();
    match &o.description {
        Some(l) if !l.value().trim().is_empty() => l.value().trim().to_owned(),
        Some(l) => {
            errors.push(
                Error::custom("`description` is empty: say what the tool does, for the model")
                    .with_span(l),
            );
            String::new()
        }
        None => match &input.doc {
            Some(d) => d.clone(),
            None => {
                errors.push(
                    Error::custom(format!(
                        "tool `{name}` has no description: the model chooses tools by their description. Add a doc comment (`/// What it does`) or `description = \"...\"` to #[tool]"
                    ))
                    .with_span(&ident_span),
                );
                String::new()
            }
        },
    }
}

/// At most one safety category; the variant name of `Safety`.
fn safety(input: &Input, errors: &mut darling::error::Accumulator) -> &'static str {
    let o = &input.opts;
    let flags = [
        ("read_only", "ReadOnly", &o.read_only),
        ("create", "Create", &o.create),
        ("modify", "Modify", &o.modify),
        ("external", "External", &o.external),
    ];
    let mut safety = "Unspecified";
    let mut first: Option<&str> = None;
    for (word, variant, flag) in flags {
        if flag.is_present() {
            match first {
                None => {
                    first = Some(word);
                    safety = variant;
                }
                Some(f) => errors.push(
                    Error::custom(format!(
                        "conflicting safety categories `{f}` and `{word}`: a tool has exactly one; keep the one that describes its worst effect"
                    ))
                    .with_span(&flag.span()),
                ),
            }
        }
    }
    safety
}

/// What the item's form rules out: generics, variadics, unit structs.
fn item_shape(input: &Input, errors: &mut darling::error::Accumulator) {
    let ident_span = input.ident.span();
    match &input.kind {
        Kind::Fn(f) => {
            if !f.sig.generics.params.is_empty() || f.sig.generics.where_clause.is_some() {
                errors.push(
                    Error::custom(
                        "a tool function cannot be generic: its argument schema must be known at compile time; use concrete types (an enum for alternatives, `serde_json::Value` for free-form JSON)",
                    )
                    .with_span(&f.sig.generics),
                );
            }
            if let Some(v) = &f.sig.variadic {
                errors.push(
                    Error::custom(
                        "a tool function cannot be variadic: the model sends named arguments; take the values as one argument, e.g. `values: Vec<u32>`",
                    )
                    .with_span(v),
                );
            }
        }
        Kind::Struct { item, named } => {
            if !item.generics.params.is_empty() {
                errors.push(
                    Error::custom(
                        "a tool struct cannot be generic or borrow: it is deserialized from the model's arguments; use owned, concrete field types (`String` for `&str`)",
                    )
                    .with_span(&item.generics),
                );
            }
            if matches!(item.fields, syn::Fields::Unit) {
                errors.push(
                    Error::custom(format!(
                        "a unit struct cannot receive arguments (they are a JSON object): write `struct {} {{}}` for a tool without arguments",
                        input.ident
                    ))
                    .with_span(&ident_span),
                );
            }
            let _ = named;
        }
    }
}

/// Each parameter alone, and no two arguments under one wire name.
fn params(input: &Input, errors: &mut darling::error::Accumulator) {
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

/// The names the model sees, for the intent, sensitive and example checks.
fn wire_names(input: &Input, schema: &Schema) -> Vec<String> {
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
fn verbatim_rules(input: &Input, schema: &Schema, errors: &mut darling::error::Accumulator) {
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

/// Each intent placeholder names an argument.
fn intent(
    input: &Input,
    wire_names: &[String],
    errors: &mut darling::error::Accumulator,
) -> Option<String> {
    let o = &input.opts;
    o.intent.as_ref().map(|lit| {
        let text = lit.value();
        for ph in placeholders(&text) {
            if !wire_names.contains(&ph) {
                let names = if wire_names.is_empty() {
                    "it has no arguments".to_owned()
                } else {
                    format!("its arguments are {}", quoted(wire_names))
                };
                let hint = crate::names::did_you_mean(&ph, wire_names.iter().map(String::as_str))
                    .map(|c| format!("did you mean `{{{c}}}`? "))
                    .unwrap_or_default();
                errors.push(
                    Error::custom(format!(
                        "intent placeholder `{{{ph}}}` names no argument of this tool: {hint}{names}"
                    ))
                    .with_span(lit),
                );
            }
        }
        text
    })
}

/// Each `sensitive` name is an argument; `#[arg(sensitive)]` adds its own.
fn sensitive(
    input: &Input,
    wire_names: &[String],
    errors: &mut darling::error::Accumulator,
) -> Vec<String> {
    let o = &input.opts;
    let mut sensitive = Vec::new();
    for lit in o.sensitive.iter().flatten() {
        let n = lit.value();
        if !wire_names.contains(&n) {
            errors.push(
                Error::custom(format!(
                    "`sensitive` names `{n}`, which is not an argument{}",
                    suggestion(&n, wire_names.iter().map(String::as_str))
                ))
                .with_span(lit),
            );
        }
        sensitive.push(n);
    }
    for p in input.arguments().filter(|p| p.arg.sensitive.is_present()) {
        let n = input.wire_name(p);
        if !sensitive.contains(&n) {
            sensitive.push(n);
        }
    }
    sensitive
}

/// One of `timeout` and `timeout_ms`, readable and not zero.
fn timeout(input: &Input, errors: &mut darling::error::Accumulator) -> Option<u64> {
    let o = &input.opts;
    let ident_span = input.ident.span();
    let timeout_ms = match (&o.timeout, &o.timeout_ms) {
        (Some(_), Some(ms)) => {
            errors.push(
                Error::custom("`timeout` and `timeout_ms` both given: keep one").with_span(ms),
            );
            None
        }
        (Some(t), None) => match parse_duration(&t.value()) {
            Some(ms) => Some(ms),
            None => {
                errors.push(
                    Error::custom(format!(
                        "cannot read timeout {:?}: write a number with a unit, e.g. \"500ms\", \"30s\", \"2m\" or \"1h\"",
                        t.value()
                    ))
                    .with_span(t),
                );
                None
            }
        },
        (None, Some(ms)) => errors.handle(ms.base10_parse::<u64>().map_err(|e| {
            Error::custom(format!(
                "cannot read `timeout_ms` ({e}): write whole milliseconds, or use `timeout = \"30s\"`"
            ))
            .with_span(ms)
        })),
        (None, None) => None,
    };
    if timeout_ms == Some(0) {
        let span = o
            .timeout
            .as_ref()
            .map(|l| l.span())
            .or(o.timeout_ms.as_ref().map(|l| l.span()));
        errors.push(
            Error::custom("a timeout of zero would fail every call")
                .with_span(&span.unwrap_or(ident_span)),
        );
    }
    timeout_ms
}

/// Each example is a JSON object of the tool's arguments (checked against a verbatim schema).
fn examples(
    input: &Input,
    schema: &Schema,
    wire_names: &[String],
    errors: &mut darling::error::Accumulator,
) -> Vec<String> {
    let o = &input.opts;
    let mut examples = Vec::new();
    for lit in o.examples.iter().flatten() {
        let text = lit.value();
        match serde_json::from_str::<Value>(&text) {
            Ok(v) => {
                if !v.is_object() {
                    errors.push(
                        Error::custom("an example is a JSON object of arguments, e.g. r#\"{\"query\": \"rust\"}\"#")
                            .with_span(lit),
                    );
                } else if let Schema::Verbatim(s) = schema {
                    let problems = verbatim::example_problems(&s.value, &v);
                    if !problems.is_empty() {
                        errors.push(
                            Error::custom(format!(
                                "this example does not match the schema: {}",
                                problems.join("; ")
                            ))
                            .with_span(lit),
                        );
                    }
                } else if let Value::Object(m) = &v {
                    for k in m.keys() {
                        if !wire_names.contains(k) {
                            errors.push(
                                Error::custom(format!(
                                    "this example sends `{k}`, which is not an argument{}",
                                    suggestion(k, wire_names.iter().map(String::as_str))
                                ))
                                .with_span(lit),
                            );
                        }
                    }
                }
            }
            Err(e) => errors
                .push(Error::custom(format!("this example is not valid JSON: {e}")).with_span(lit)),
        }
        examples.push(text);
    }
    examples
}

/// What `strict` needs of the schema, as far as the macro can tell.
fn strict(input: &Input, schema: &Schema, errors: &mut darling::error::Accumulator) -> bool {
    let o = &input.opts;
    let strict = o.strict.is_present();
    if strict {
        match schema {
            Schema::None(_) => errors.push(
                Error::custom(
                    "`strict` needs a schema, but this tool opted out with `allow_no_schema`",
                )
                .with_span(&o.strict.span()),
            ),
            Schema::Verbatim(v) => {
                for sp in tool_wire::strict_check::problems(&v.value) {
                    let span = sp
                        .property
                        .as_ref()
                        .and_then(|prop| {
                            input
                                .arguments()
                                .find(|p| input.wire_name(p) == *prop)
                                .map(|p| p.span)
                        })
                        .unwrap_or(v.span);
                    errors.push(
                        Error::custom(format!(
                            "`strict` cannot hold: at {} of the schema, {}",
                            sp.pointer,
                            sp.message()
                        ))
                        .with_span(&span),
                    );
                }
            }
            Schema::Derived => {
                for p in input.arguments().filter(|p| !p.skipped) {
                    if is_open_map(&p.ty) {
                        errors.push(
                            Error::custom(
                                "`strict` forbids open objects: this type becomes an object with arbitrary keys, which strict mode rejects; use a Vec of key/value structs, or drop `strict`",
                            )
                            .with_span(&p.ty),
                        );
                    } else if input.has_default(p) && !crate::ast::is_option(&p.ty) {
                        errors.push(
                            Error::custom(
                                "`strict` requires every property to be sent, so this default would never apply: make the parameter `Option<T>` (the model sends null), or drop `strict`",
                            )
                            .with_span(&p.span),
                        );
                    }
                }
            }
        }
    }
    strict
}

fn has_named_fields(input: &Input) -> bool {
    match &input.kind {
        Kind::Fn(_) => true,
        Kind::Struct { named, .. } => *named,
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

fn schema_source(input: &Input, errors: &mut darling::error::Accumulator) -> Schema {
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

fn output(ret: &syn::ReturnType, errors: &mut darling::error::Accumulator) -> Output {
    match ret {
        syn::ReturnType::Default => Output {
            ty: syn::parse_quote!(()),
            is_result: false,
        },
        syn::ReturnType::Type(_, ty) => {
            if let Type::ImplTrait(_) = &**ty {
                errors.push(
                    Error::custom("a tool's return type must be named (its schema is the output schema): return a concrete type or `Result<T, E>`")
                        .with_span(ty),
                );
                return Output {
                    ty: syn::parse_quote!(()),
                    is_result: false,
                };
            }
            if let Some(seg) = last_segment(ty)
                && seg.ident == "Result"
                && let Some(t) = generic_args(seg).first()
            {
                return Output {
                    ty: (*t).clone(),
                    is_result: true,
                };
            }
            Output {
                ty: (**ty).clone(),
                is_result: false,
            }
        }
    }
}

fn is_open_map(ty: &Type) -> bool {
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

fn valid_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `{name}` placeholders of an intent template.
pub fn placeholders(t: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(s) = rest.find('{') {
        let after = &rest[s + 1..];
        match after.find('}') {
            Some(e) => {
                out.push(after[..e].trim().to_owned());
                rest = &after[e + 1..];
            }
            None => break,
        }
    }
    out
}

fn parse_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().ok()?;
    let factor = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
