//! Provider declarations as compile-time constants: when the whole argument schema is known while
//! the macro runs (a verbatim schema, arguments of primitive types, no schema at all), each
//! provider's default declaration is built here by `tool-wire` (the code the codecs use at run
//! time) and emitted as a `&'static str` table on the definition
//! (`tool_runtime::definition::PrebuiltDeclarations`), so nothing is computed at run time.
//!
//! The table records the fields it was built from; the codecs use it only while the definition
//! still has exactly those (see `tool_providers::codec::cache::prebuilt`). The views that depend on
//! the output schema (Gemini's `responseJsonSchema`, MCP's `outputSchema`) are emitted only when
//! the output type's schema is known too (unit or a primitive); a view that refuses the schema (a
//! strict tool whose schema cannot be strict) is left out, so the codec reports the refusal at run
//! time exactly as for any other tool.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use serde_json::{Value, json};
use syn::Type;

use crate::ast::{Input, Kind, last_segment};
use crate::valid::{Checked, Schema};

/// `definition` (an expression building the `ToolDefinition`) with the constant table attached,
/// or `definition` unchanged when the schema is only known at run time. `derived`: a derived
/// schema's whole text, when it was written at compile time (`Tool::SCHEMA_JSON`).
pub fn with_prebuilt(
    input: &Input,
    c: &Checked,
    derived: Option<&str>,
    definition: TokenStream,
) -> TokenStream {
    let Some(table) = table(input, c, derived) else {
        return definition;
    };
    let rt = input.runtime();
    quote! {{
        static PREBUILT: #rt::PrebuiltDeclarations = #table;
        let mut definition = #definition;
        definition.prebuilt = ::core::option::Option::Some(&PREBUILT);
        definition
    }}
}

/// The stored parameters text (exactly what the definition will hold) and its parsed value.
fn parameters(c: &Checked, derived: Option<&str>) -> Option<(String, Value)> {
    match &c.schema {
        Schema::Verbatim(v) => Some((v.text.clone(), v.value.clone())),
        // what `DefinitionBuilder::no_schema` stores
        Schema::None(_) => Some((r#"{"type":"object"}"#.to_owned(), json!({"type": "object"}))),
        Schema::Derived => {
            let text = derived?;
            let value = serde_json::from_str(text).ok()?;
            Some((text.to_owned(), value))
        }
    }
}

fn table(input: &Input, c: &Checked, derived: Option<&str>) -> Option<TokenStream> {
    let (text, value) = parameters(c, derived)?;
    let category = category_name(c.safety)?;
    // `Some(None)`: no output schema; `None`: only known at run time (struct form, or a type
    // whose schema only schemars knows)
    let output: Option<Option<Value>> = match (&input.kind, &c.output) {
        (Kind::Fn(_), Some(o)) => output_schema(&o.ty),
        _ => None,
    };
    let strict = c.strict.then_some(true);
    let spec = tool_wire::ToolSpec {
        name: &c.name,
        description: &c.description,
        parameters: &value,
        output_schema: output.as_ref().and_then(Option::as_ref),
        strict,
        hints: tool_wire::McpHints::for_category(category, c.idempotent)?
            .reversible(c.reversible)
            .human_approval(matches!(c.schema, Schema::None("HumanApproval"))),
    };
    let views = tool_wire::declare::default_declarations(&spec, output.is_some());
    let (keys, texts): (Vec<&str>, Vec<String>) = views.into_iter().unzip();
    let name = &c.name;
    let description = &c.description;
    let strict = match strict {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    };
    let safety = syn::Ident::new(c.safety, Span::call_site());
    let idempotent = c.idempotent;
    let reversible = c.reversible;
    let output = match &output {
        None => quote!(::core::option::Option::None),
        Some(None) => quote!(::core::option::Option::Some(::core::option::Option::None)),
        Some(Some(schema)) => {
            let s = schema.to_string();
            quote!(::core::option::Option::Some(::core::option::Option::Some(#s)))
        }
    };
    let rt = input.runtime();
    Some(quote! {
        #rt::PrebuiltDeclarations {
            name: #name,
            description: #description,
            parameters: #text,
            strict: #strict,
            safety: #rt::Safety::#safety,
            idempotent: #idempotent,
            reversible: #reversible,
            output_schema: #output,
            views: &[#((#keys, #texts)),*],
        }
    })
}

/// `Safety`'s configuration name of a variant name (`ReadOnly` → `read_only`).
fn category_name(variant: &str) -> Option<&'static str> {
    Some(match variant {
        "ReadOnly" => "read_only",
        "Create" => "create",
        "Modify" => "modify",
        "External" => "external",
        "Unspecified" => "unspecified",
        _ => return None,
    })
}

/// The output schema `DefinitionBuilder::output` derives for `ty`, when the macro knows it without
/// schemars: `Some(None)` for `()` (no output schema), `Some(Some(schema))` for a primitive.
fn output_schema(ty: &Type) -> Option<Option<Value>> {
    if let Type::Tuple(t) = ty
        && t.elems.is_empty()
    {
        return Some(None);
    }
    let seg = last_segment(ty)?;
    if !seg.arguments.is_empty() {
        return None;
    }
    let schema = match seg.ident.to_string().as_str() {
        "usize" => json!({"type": "integer", "format": "uint", "minimum": 0}),
        "isize" => json!({"type": "integer", "format": "int"}),
        _ => Value::Object(crate::primitive::primitive(ty)?),
    };
    Some(Some(schema))
}
