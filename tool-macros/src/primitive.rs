//! The argument schema of a function whose arguments are all primitive types, computed at
//! compile time so `Tool::SCHEMA_JSON` can carry it and provider codecs need no run-time work.
//! It must equal what schemars derives, down to the key order (the provider declarations `#[tool]`
//! emits from it are used only while the definition's schema text is byte-identical);
//! `tests/tests/macro_primitive.rs` and tool-providers' `tests/encode.rs` prove that.

use serde_json::{Map, Value, json};
use syn::{Expr, Lit, Type, UnOp};

use crate::ast::{Input, Kind, generic_args, is_option, last_segment};
use crate::valid::{Checked, Schema};

/// The schema text, or `None` when any argument is not a plain primitive (or carries options
/// whose effect only schemars knows: serde/schemars attributes, multi-line docs, non-literal
/// defaults), or the tool is not a derived-schema function.
pub fn schema_json(input: &Input, c: &Checked) -> Option<String> {
    if !matches!(input.kind, Kind::Fn(_)) || !matches!(c.schema, Schema::Derived) || c.strict {
        return None;
    }
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in input.arguments() {
        if !p.serde.is_empty() || !p.schemars.is_empty() || p.ident.is_none() {
            return None;
        }
        let optional = is_option(&p.ty);
        let inner = if optional {
            last_segment(&p.ty).and_then(|s| generic_args(s).first().copied())?
        } else {
            &p.ty
        };
        // schemars' order (schemars_derive 1.x): the type's own schema (type, format, its
        // built-in bounds), then the description, then the `length`/`range` attributes (a bound
        // the type already has keeps its place), then the default. Kept exactly, so the text is
        // byte-identical to the derived one and `#[tool]`'s provider constants apply.
        let mut out = primitive(inner)?;
        if optional {
            // `Option<T>` adds `null` to the type in place
            let t = out.get_mut("type")?;
            *t = json!([t.take(), "null"]);
        }
        if p.docs.len() > 1 {
            return None;
        }
        if let Some(d) = crate::ast::doc_text(&p.docs) {
            out.insert("description".into(), Value::String(d));
        }
        for (key, e) in [
            ("minLength", &p.arg.min_length),
            ("maxLength", &p.arg.max_length),
            ("minimum", &p.arg.min),
            ("maximum", &p.arg.max),
        ] {
            if let Some(e) = e {
                out.insert(key.into(), literal(e)?);
            }
        }
        match &p.arg.default {
            Some(darling::util::Override::Explicit(e)) => {
                out.insert("default".into(), literal(e)?);
            }
            Some(darling::util::Override::Inherit) => {
                out.insert("default".into(), zero(inner)?);
            }
            None => {}
        }
        let name = input.wire_name(p);
        if !input.is_optional(p) {
            required.push(Value::String(name.clone()));
        }
        props.insert(name, Value::Object(out));
    }
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    // schemars leaves `properties` out for a struct without fields.
    if !props.is_empty() {
        root.insert("properties".into(), Value::Object(props));
    }
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
    Some(Value::Object(root).to_string())
}

pub(crate) fn primitive(ty: &Type) -> Option<Map<String, Value>> {
    let seg = last_segment(ty)?;
    if !seg.arguments.is_empty() {
        return None;
    }
    let v = match seg.ident.to_string().as_str() {
        "String" => json!({"type": "string"}),
        "bool" => json!({"type": "boolean"}),
        "i8" => json!({"type": "integer", "format": "int8", "minimum": -128, "maximum": 127}),
        "i16" => json!({"type": "integer", "format": "int16", "minimum": -32768, "maximum": 32767}),
        "i32" => json!({"type": "integer", "format": "int32"}),
        "i64" => json!({"type": "integer", "format": "int64"}),
        "u8" => json!({"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}),
        "u16" => json!({"type": "integer", "format": "uint16", "minimum": 0, "maximum": 65535}),
        "u32" => json!({"type": "integer", "format": "uint32", "minimum": 0}),
        "u64" => json!({"type": "integer", "format": "uint64", "minimum": 0}),
        "f32" => json!({"type": "number", "format": "float"}),
        "f64" => json!({"type": "number", "format": "double"}),
        _ => return None,
    };
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

fn zero(ty: &Type) -> Option<Value> {
    let seg = last_segment(ty)?;
    Some(match seg.ident.to_string().as_str() {
        "String" => json!(""),
        "bool" => json!(false),
        "f32" | "f64" => json!(0.0),
        _ => json!(0),
    })
}

/// The JSON value of a literal expression (`10`, `-3`, `true`, `"x"`); `None` otherwise.
fn literal(e: &Expr) -> Option<Value> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i
                .base10_parse::<u64>()
                .ok()
                .map(Value::from)
                .or_else(|| i.base10_parse::<i64>().ok().map(Value::from)),
            Lit::Bool(b) => Some(Value::Bool(b.value)),
            Lit::Str(s) => Some(Value::String(s.value())),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match literal(&u.expr)? {
            Value::Number(n) => n.as_i64().map(|n| Value::from(-n)),
            _ => None,
        },
        Expr::Group(g) => literal(&g.expr),
        Expr::Paren(p) => literal(&p.expr),
        _ => None,
    }
}
