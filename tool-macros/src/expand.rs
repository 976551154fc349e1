//! Emits the item, its marker type (function form), the hidden args struct, and the `Tool` impl.
//! The impl calls into `tool_runtime::__private`; behaviour lives there, not in generated code.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::args::{args_struct_item, struct_derives, struct_item};
use crate::ast::{Input, Kind, Rejected, Role};
use crate::fallback::marker;
use crate::valid::{Checked, Schema};

/// The `#[tool]` entry point: parse, check, emit. On a failure the item is emitted as it was
/// written (minus the helper attributes) next to the errors, so IDEs keep working, with a stub
/// impl (see `fallback`) so that its uses elsewhere add no errors of rustc's.
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = darling::Error::accumulator();
    let input = match crate::ast::parse(attr, item, &mut errors) {
        Ok(input) => input,
        Err(rejected) => {
            let errs = errors.finish().err().map(|e| e.write_errors());
            let item = match rejected {
                Rejected::Item(item) => item,
                Rejected::Options {
                    input,
                    runtime_known,
                } => crate::fallback::expand(&input, &input.ident.to_string(), runtime_known),
            };
            return quote!(#item #errs);
        }
    };
    let checked = crate::valid::check(&input, &mut errors);
    match errors.finish() {
        Ok(()) => emit(&input, &checked),
        Err(e) => {
            let item = crate::fallback::expand(&input, &checked.name, true);
            let errs = e.write_errors();
            quote!(#item #errs)
        }
    }
}

fn emit(input: &Input, c: &Checked) -> TokenStream {
    let parts = Shared::of(input, c);
    match &input.kind {
        Kind::Fn(f) => emit_fn(input, c, f, &parts),
        Kind::Struct { item, .. } => emit_struct(input, c, item, &parts),
    }
}

/// What both forms of the `Tool` impl carry: the written schema and its reader, the definition,
/// and the impl's constants.
struct Shared {
    rt: crate::runtime::Runtime,
    /// The stored definition's expression (evaluated once, in a `LazyLock`).
    definition: TokenStream,
    /// The written schema's `JsonSchema` impl, when the macro writes it for this type.
    written_impl: TokenStream,
    /// `const SCHEMA_JSON`, when the schema text is known at compile time.
    schema_json: TokenStream,
    reader: TokenStream,
    reader_const: TokenStream,
    /// Whether a generated reader reads every call (so the args struct derives no `Deserialize`).
    reads_itself: bool,
    /// Whether the whole schema text is a compile-time constant.
    constant: bool,
}

impl Shared {
    fn of(input: &Input, c: &Checked) -> Shared {
        let rt = input.runtime();
        let written = crate::written::for_tool(input, c);
        // the whole text, when nothing is left to run time and `strict` does not rewrite it
        let constant = written
            .as_ref()
            .filter(|_| !c.strict)
            .and_then(|m| m.constant());
        let definition = crate::declare::with_prebuilt(
            input,
            c,
            constant.as_deref(),
            definition(input, c, constant.as_deref()),
        );
        // `#[derive(ToolArgs)]` on a struct tool writes it (from the same tokens)
        let written_impl = match (&written, &input.kind) {
            (Some(m), Kind::Fn(_)) => {
                m.expand(&syn::Ident::new("__ToolArgs", Span::call_site()), &rt)
            }
            (Some(m), Kind::Struct { .. }) if !input.derives.tool_args => {
                m.expand(&input.ident, &rt)
            }
            _ => TokenStream::new(),
        };
        let text = match &c.schema {
            Schema::Verbatim(v) => Some(schema_text(v)),
            _ => constant.as_ref().map(|text| quote!(#text)),
        };
        let schema_json = text.map_or_else(TokenStream::new, |text| {
            quote!(const SCHEMA_JSON: ::core::option::Option<&'static str> = ::core::option::Option::Some(#text);)
        });
        let generated = crate::reader::reader(input, c);
        let reads_itself = generated.is_some();
        let (reader, reader_const) = generated.unwrap_or_default();
        Shared {
            rt,
            definition,
            written_impl,
            schema_json,
            reader,
            reader_const,
            reads_itself,
            constant: constant.is_some(),
        }
    }
}

/// A function tool: the function as written, its marker type, the hidden args struct and the
/// `Tool` impl on the marker.
fn emit_fn(input: &Input, c: &Checked, f: &syn::ItemFn, parts: &Shared) -> TokenStream {
    let Shared {
        rt,
        written_impl,
        reader,
        ..
    } = parts;
    let item = input.item_tokens();
    let name = &c.name;
    let args_struct = args_struct(input, c, parts.constant, !parts.reads_itself);
    let output = c.output.as_ref().expect("function form has an output");
    let out_ty = &output.ty;
    let body = match (f.sig.asyncness.is_some(), c.non_blocking) {
        (true, _) => Body::Async,
        (false, true) => Body::InPlace,
        (false, false) => Body::Blocking,
    };
    let (call, requirements) = call_body(input, name, body, output.is_result);
    let marker = marker(f, name);
    let tool_impl = tool_impl(
        input,
        c,
        parts,
        quote!(__ToolArgs),
        quote!(#out_ty),
        call,
        quote! {
            fn required_state() -> ::std::vec::Vec<#rt::StateRequirement> {
                #rt::requirements(&[#(#requirements),*])
            }
        },
    );
    quote! {
        #item
        #marker

        const _: () = {
            #args_struct
            #reader
            #written_impl

            #tool_impl
        };
    }
}

/// A struct tool: the struct with its derives and default functions, and the `Tool` impl that
/// runs it through its `Run` impl.
fn emit_struct(input: &Input, c: &Checked, item: &syn::ItemStruct, parts: &Shared) -> TokenStream {
    let Shared {
        rt,
        written_impl,
        reader,
        ..
    } = parts;
    let ident = &input.ident;
    let item = struct_item(input, c, item);
    let derives = struct_derives(input, c);
    let defaults = default_fns(input, c);
    let tool_impl = tool_impl(
        input,
        c,
        parts,
        quote!(#ident),
        quote!(<#ident as #rt::Run>::Output),
        quote! {
            async move {
                #rt::into_result(<#ident as #rt::Run>::run(args, cx).await)
            }
        },
        TokenStream::new(),
    );
    quote! {
        #derives
        #item
        #defaults

        const _: () = {
            #reader
            #written_impl

            #tool_impl
        };
    }
}

/// The `Tool` impl of either form: `args` and `output` are its associated types, `call` the body
/// of its `call`, `extra` any further items.
fn tool_impl(
    input: &Input,
    c: &Checked,
    parts: &Shared,
    args: TokenStream,
    output: TokenStream,
    call: TokenStream,
    extra: TokenStream,
) -> TokenStream {
    let Shared {
        rt,
        definition,
        schema_json,
        reader_const,
        ..
    } = parts;
    let ident = &input.ident;
    let name = &c.name;
    quote! {
        #[automatically_derived]
        impl #rt::Tool for #ident {
            type Args = #args;
            type Output = #output;
            const NAME: &'static str = #name;
            #schema_json
            #reader_const

            fn definition() -> &'static #rt::ToolDefinition {
                static DEFINITION: ::std::sync::LazyLock<#rt::ToolDefinition> =
                    ::std::sync::LazyLock::new(|| #definition);
                &DEFINITION
            }

            fn call(
                args: Self::Args,
                cx: &#rt::CallContext,
            ) -> impl ::core::future::Future<Output = ::core::result::Result<Self::Output, #rt::ToolError>> + ::core::marker::Send {
                #call
            }

            #extra
        }
    }
}

/// The stored schema text: `include_str!` of the file when it is kept byte-for-byte (so cargo
/// tracks it), the literal otherwise.
fn schema_text(v: &crate::verbatim::Verbatim) -> TokenStream {
    let tracked: Vec<TokenStream> = v
        .tracked
        .iter()
        .map(|p| {
            quote!(
                const _: &str = include_str!(#p);
            )
        })
        .collect();
    match &v.include {
        Some(path) => quote!({ #(#tracked)* include_str!(#path) }),
        None => {
            let text = &v.text;
            quote!({ #(#tracked)* #text })
        }
    }
}

/// The expression building the tool's definition. A derived schema the macro wrote whole
/// (`constant`) is used as written without the runtime's `verify-written` feature, and compared
/// with schemars' with it (see `DefinitionBuilder::written`): the two are emitted, and the
/// runtime's `verify_written!` keeps one, so that schemars is compiled for the arguments only
/// where the comparison is.
fn definition(input: &Input, c: &Checked, constant: Option<&str>) -> TokenStream {
    let rt = input.runtime();
    let chain = definition_chain(input, c, None);
    match constant {
        Some(text) if matches!(c.schema, Schema::Derived) => {
            let unverified = definition_chain(input, c, Some(text));
            quote!(#rt::verify_written!({ #chain } { #unverified }))
        }
        _ => chain,
    }
}

/// The builder chain; `written_text`: the derived schema's whole text, used as written.
fn definition_chain(input: &Input, c: &Checked, written_text: Option<&str>) -> TokenStream {
    let rt = input.runtime();
    let name = &c.name;
    let description = &c.description;
    let safety = syn::Ident::new(c.safety, Span::call_site());
    let ident = &input.ident;
    let args_ty = match input.kind {
        Kind::Fn(_) => quote!(__ToolArgs),
        Kind::Struct { .. } => quote!(#ident),
    };
    let schema = match &c.schema {
        Schema::Derived if written_text.is_some() => quote!(.written_text(#written_text)),
        Schema::Derived => quote!(.written::<#args_ty>({
            #[allow(unused_imports)]
            use #rt::written::{NotWritten as _, ViaWritten as _};
            (&&#rt::written::Probe::<#args_ty>::NEW).written()
        })),
        Schema::Verbatim(v) => {
            let text = schema_text(v);
            quote!(.verbatim(#text))
        }
        Schema::None(mode) => {
            let mode = syn::Ident::new(mode, Span::call_site());
            quote!(.no_schema(#rt::NoSchemaMode::#mode))
        }
    };
    let output = match &c.output {
        Some(o) => {
            let ty = &o.ty;
            quote!(.output::<#ty>())
        }
        None => quote!(.output::<<#ident as #rt::Run>::Output>()),
    };
    let mut extra = TokenStream::new();
    if c.reversible {
        extra.extend(quote!(.reversible(true)));
    }
    if c.idempotent {
        extra.extend(quote!(.idempotent(true)));
    }
    if c.retry {
        extra.extend(quote!(.retry(true)));
    }
    if c.strict {
        extra.extend(quote!(.strict(true)));
    }
    if let Some(i) = &c.intent {
        extra.extend(quote!(.intent(#i)));
    }
    if !c.tags.is_empty() {
        let t = &c.tags;
        extra.extend(quote!(.tags(&[#(#t),*])));
    }
    if !c.examples.is_empty() {
        let e = &c.examples;
        extra.extend(quote!(.examples(&[#(#e),*])));
    }
    if let Some(ms) = c.timeout_ms {
        extra.extend(quote!(.timeout_ms(#ms)));
    }
    if !c.sensitive.is_empty() {
        let s = &c.sensitive;
        extra.extend(quote!(.sensitive(&[#(#s),*])));
    }
    quote! {
        #rt::DefinitionBuilder::new(#name, #description)
            #schema
            #output
            .safety(#rt::Safety::#safety)
            #extra
            .build()
    }
}

/// Functions that return `#[arg(default = EXPR)]` values (serde's `default = "path"` needs a path).
fn default_fns(input: &Input, _c: &Checked) -> TokenStream {
    let mut out = TokenStream::new();
    for (i, p) in input.params.iter().enumerate() {
        if let Some(darling::util::Override::Explicit(e)) = &p.arg.default {
            let name = crate::ast::default_fn_name(input, i);
            let ty = &p.ty;
            out.extend(quote_spanned! {e.span()=>
                #[doc(hidden)]
                #[allow(non_snake_case)]
                fn #name() -> #ty { #e }
            });
        }
    }
    out
}

/// The hidden args struct of a function tool, with the functions of its `#[arg(default = ..)]`s.
///
/// When the schema is written whole at compile time (`constant`), schemars is needed only for
/// the runtime's `verify-written` comparison: the struct is emitted with and without its
/// `JsonSchema` derive, and the runtime's `verify_written!` keeps the one it needs.
/// `deserialize`: whether it derives `Deserialize` (not when its generated reader stands in).
fn args_struct(input: &Input, c: &Checked, constant: bool, deserialize: bool) -> TokenStream {
    let defaults = default_fns(input, c);
    let item = args_struct_item(input, c, true, deserialize);
    let item = if constant && crate::args::derived(c) {
        let rt = input.runtime();
        let without = args_struct_item(input, c, false, deserialize);
        quote!(#rt::verify_written!({ #item } { #without });)
    } else {
        item
    };
    quote! {
        #defaults

        #item
    }
}

/// Where a function's body runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    /// An `async fn`: awaited in place.
    Async,
    /// A sync `fn`: on the runtime's threads for sync bodies.
    Blocking,
    /// A sync `fn` with `non_blocking`: called in place, in the call's first poll.
    InPlace,
}

/// The body of `Tool::call` for a function: unpack the args, extract injected values, call the
/// function unchanged, and convert its result.
///
/// A sync function runs on the runtime's threads for sync bodies (`__private::run_blocking`):
/// run inline, a body that blocks would hold the thread that also has to notice the executor's
/// timeout, and on a current-thread runtime the timeout could never fire. So everything it receives moves into the
/// closure: the arguments, the injected values (which must therefore be `Send + 'static`, checked
/// at the parameter), and for `&CallContext` a clone of the context. With `non_blocking` the
/// author vouches that the body never blocks, and it is called in place as an async fn's body is
/// polled: no thread hop, nothing moved, and no timeout that could interrupt it.
fn call_body(
    input: &Input,
    name: &str,
    body: Body,
    is_result: bool,
) -> (TokenStream, Vec<TokenStream>) {
    let is_async = body == Body::Async;
    let on_pool = body == Body::Blocking;
    let rt = input.runtime();
    let ident = &input.ident;
    let mut extract = Vec::new();
    let mut call_args = Vec::new();
    let mut requirements = Vec::new();
    let mut context_ref = false;
    for (i, p) in input.params.iter().enumerate() {
        match p.role {
            Role::Argument => {
                if let Some(id) = &p.ident {
                    call_args.push(quote!(args.#id));
                } else {
                    call_args.push(quote!(::core::unreachable!()));
                }
            }
            Role::ContextRef => {
                context_ref = true;
                call_args.push(if on_pool { quote!(&__cx) } else { quote!(cx) });
            }
            Role::Extracted => {
                let ty = &p.ty;
                let var = format_ident!("__injected{}", i);
                if on_pool {
                    extract.push(quote_spanned! {p.ty.span()=>
                        #rt::movable_to_blocking_thread::<#ty>();
                    });
                }
                extract.push(quote_spanned! {p.ty.span()=>
                    let #var = #rt::extract::<#ty>(cx)?;
                });
                call_args.push(quote!(#var));
                requirements.push(quote!(<#ty as #rt::FromCallContext>::requirement));
            }
        }
    }
    let invoke = if is_async {
        quote!(#ident(#(#call_args),*).await)
    } else {
        quote!(#ident(#(#call_args),*))
    };
    let result = if is_result {
        quote!(#rt::into_result(#invoke))
    } else {
        quote!(::core::result::Result::Ok(#invoke))
    };
    let call = if !on_pool {
        quote! {
            async move {
                #(#extract)*
                #result
            }
        }
    } else {
        let clone_cx = context_ref.then(|| quote!(let __cx = ::core::clone::Clone::clone(cx);));
        quote! {
            async move {
                #(#extract)*
                #clone_cx
                static __BODY_TIMES: #rt::BodyTimes = #rt::BodyTimes::new(#name);
                #rt::run_blocking(&__BODY_TIMES, move || #result).await
            }
        }
    };
    (call, requirements)
}
