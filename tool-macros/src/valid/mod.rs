//! Checks a parsed [`Input`] and resolves its options into a [`Checked`] model. Every problem is
//! accumulated with the span of the tokens to fix; the model is still produced (with fallbacks)
//! so the expansion can go on and rustc reports nothing but our errors.

use darling::Error;
use serde_json::Value;
use syn::Type;

use crate::ast::{Input, Kind, generic_args, last_segment};
use crate::names::{snake_case, suggestion};
use crate::verbatim::{self, Verbatim};

mod params;
mod schema;

use params::{is_open_map, params};
use schema::{schema_source, verbatim_rules, wire_names};

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
    /// `non_blocking` on a sync function: its body runs in place, not on the blocking pool.
    pub non_blocking: bool,
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
    let non_blocking = non_blocking(input, errors);
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
        non_blocking,
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

/// `non_blocking`: only on a sync function, whose body would otherwise run on the blocking pool,
/// and without a per-tool timeout, which could not interrupt a body run in place.
fn non_blocking(input: &Input, errors: &mut darling::error::Accumulator) -> bool {
    let o = &input.opts;
    if !o.non_blocking.is_present() {
        return false;
    }
    let flag = o.non_blocking.span();
    match &input.kind {
        Kind::Fn(f) if f.sig.asyncness.is_some() => {
            errors.push(
                Error::custom(
                    "`non_blocking` is for a sync `fn`: an `async fn`'s body already runs in place, on the thread that polls the call; remove `non_blocking`",
                )
                .with_span(&flag),
            );
            return false;
        }
        Kind::Fn(_) => {}
        Kind::Struct { .. } => {
            errors.push(
                Error::custom(
                    "`non_blocking` is for a sync function tool: a struct tool's `Run::run` returns a future, which is already polled in place; remove `non_blocking`",
                )
                .with_span(&flag),
            );
            return false;
        }
    }
    let timeout = o
        .timeout
        .as_ref()
        .map(|l| l.span())
        .or(o.timeout_ms.as_ref().map(|l| l.span()));
    if let Some(span) = timeout {
        errors.push(
            Error::custom(
                "a timeout cannot interrupt a `non_blocking` body: it runs to its end on the thread that polls the call. Remove the timeout, or remove `non_blocking` so that the body runs on the blocking pool, where the timeout applies",
            )
            .with_span(&span),
        );
    }
    true
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
