//! The `#[tool]` attribute. Use it through `tool_runtime::tool`.
//!
//! Structure, as in serde_derive, in one direction: `ast` parses the item and its options into a
//! model (options with darling in `attr`), `valid` checks it and accumulates every error at its
//! tokens (`verbatim` reads and checks author-supplied schemas), and `expand` emits code that
//! calls into `tool_runtime::__private` (`runtime`: the one path it is reached through; `args`:
//! the argument type as serde and schemars see it, which `written` and `reader` also read), or,
//! when there are errors, `fallback` emits them with a stub impl.

mod agree;
mod args;
mod ast;
mod attr;
mod declare;
mod expand;
mod fallback;
mod names;
mod primitive;
mod reader;
mod runtime;
mod toolset;
mod valid;
mod verbatim;
mod written;

use proc_macro::TokenStream;

/// Turns a function or a struct into a tool: a `tool_runtime::Tool` impl whose canonical
/// definition is built once, on first use.
///
/// # Function form
///
/// ```ignore
/// /// Search your notes.                      <- the tool's description
/// #[tool(read_only, intent = "Search your notes for {query}")]
/// async fn search_notes(
///     /// The search text                    <- the property's description
///     query: String,
///     #[arg(default = 10, min = 1, max = 50)]
///     limit: u32,
///     State(db): State<Db>,                  // injected, not in the schema
/// ) -> Result<Vec<Note>, MyError> { .. }
///
/// let set = toolset![search_notes]?.with_state(db);   // or ToolSet::new().with::<search_notes>()
/// ```
///
/// The function stays an ordinary function. A marker type of the same name (a braced struct,
/// which lives only in the type namespace) names the tool. Parameters whose type is `State<T>`,
/// `CallContext`, `&CallContext`, `CallId`, `CorrelationId` or `Session`, or that carry
/// `#[inject]` (any `FromCallContext` type), are extracted from the call's context; their
/// `requirement()`s are the tool's `required_state()`. Every other parameter is an argument:
/// owned, concrete, bound to a plain name. The return type is `Result<T, E>` with
/// `E: Into<ToolError>`, or a plain `T`; `T: Serialize + JsonSchema` and its schema is the
/// output schema.
///
/// A sync function runs on the runtime's threads for sync bodies (long-lived, one per core, more
/// when bodies block; within the caller's tokio runtime context, as `spawn_blocking` runs a
/// closure), never on the thread that polls the call, so the executor's timeout fires even while
/// the body blocks (the body keeps its thread until it returns; its late result is dropped). Its
/// injected values therefore move to that thread and must be `Send + 'static` (`State<T>` always
/// is); `&CallContext` is a clone. The hop costs a hand-off to another thread and back per call,
/// which is most of a short body's cost under load. A
/// sync function whose body never blocks (a computation, a lookup in memory) can opt out with
/// `non_blocking`: it is then called in place, on the thread that polls the call, as an async
/// fn's body is, and the executor's timeout cannot interrupt it. Nothing moves then: `&CallContext`
/// is lent and the injected values need not be `Send + 'static`.
///
/// # Struct form
///
/// `#[tool(modify)] struct DeleteNote { /// The id\n id: u64 }` plus `impl Run for DeleteNote`.
/// The fields are the arguments; `Deserialize`, `Serialize` and `JsonSchema` are derived unless
/// the struct derives them already. The default name is the struct's name in snake_case.
///
/// # Options of `#[tool(..)]`
///
/// | option | meaning |
/// |---|---|
/// | `name = ".."` | the tool's name (`^[a-zA-Z0-9_-]{1,64}$`) |
/// | `description = ".."` | overrides the doc comment (one of them is required) |
/// | `read_only` / `create` / `modify` / `external` | the safety category; none means `Safety::Unspecified`, treated most restrictively |
/// | `reversible`, `idempotent` | flags for the executor's policy |
/// | `retry` | the executor may retry failed calls even though the tool is neither read-only nor idempotent (the author vouches that a repeat is harmless) |
/// | `intent = "..{arg}.."` | a human-readable template; each placeholder must name an argument |
/// | `tags = ["a", "b"]` or `tags("a", "b")` | tags for pre-selection |
/// | `examples = [r#"{..}"#]` | example argument objects: valid JSON, checked against a verbatim schema |
/// | `timeout = "30s"` or `timeout_ms = 30000` | per-tool timeout (`ms`, `s`, `m`, `h`) |
/// | `non_blocking` | a sync `fn` whose body never blocks (no IO, no locks held long, no sleeping: a computation or a lookup in memory) is called in place, on the thread that polls the call, instead of on the threads for sync bodies, saving the two thread hand-offs of each call. The trade-off, the author's to make: neither the executor's timeout nor a per-tool one can interrupt the body (a per-tool timeout is refused with it), and while it runs it holds a runtime worker thread, so a body that does block stalls the other tasks of that thread (on a current-thread runtime, all of them). Refused on an `async fn` and on a struct tool, which run in place already. Without it, the runtime measures a sync tool's first 1,000 bodies and, when they never waited and ran quickly, suggests it once in an `INFO` event |
/// | `strict` | OpenAI strict mode: checked at compile time for verbatim schemas and for maps/defaults of derived ones; a derived schema is brought into strict form, and what cannot be is refused at registration by `toolset!` |
/// | `parameters = r#"{..}"#` | an inline verbatim JSON Schema, stored byte for byte |
/// | `schema = "file.json"` | a verbatim schema file relative to `CARGO_MANIFEST_DIR`; its relative file `$ref`s are inlined under `$defs`; the files are tracked for rebuilds |
/// | `allow_no_schema, no_schema_mode = read_only \| human_approval \| full` | opt out of a schema (struct tools without named fields only) |
/// | `sensitive = ["password"]` | arguments the audit trail redacts |
/// | `crate = some::path` or `crate = "some::path"` | where the runtime crate is when this code does not name it `tool_runtime` (a renamed dependency, or a framework's re-export); a `#[derive(ToolArgs)]` on a struct tool takes it too. `toolset!` needs nothing: it finds its crate by itself |
///
/// Per argument, `#[arg(default)]`, `#[arg(default = EXPR)]`, `#[arg(min = .., max = ..)]`,
/// `#[arg(min_length = .., max_length = ..)]` and `#[arg(sensitive)]`; `#[serde(..)]` and
/// `#[schemars(..)]` are forwarded as they are.
///
/// Whatever serde attributes the argument types carry, here or in nested types (`alias`,
/// `deserialize_with`, `#[serde(other)]`, `flatten`, `from`, a hand-written `Deserialize`),
/// hydration checks the arguments *as the model sent them* against the canonical schema before a
/// tool sees them: serde accepting more than the schema never lets arguments through. Mind that
/// the schema only describes the canonical names, so a model that sends an alias is refused.
///
/// When the arguments deserialize the plain way (named fields; no serde attribute but `rename`,
/// `rename_all`, `default`, `deny_unknown_fields`), the macro also generates the arguments'
/// reader: keys matched to fields by index, each value checked against its schema node as serde
/// reads it. Nested structs and unit enums get the same with `#[derive(ToolArgs)]`; other types
/// are read through the guard every argument type gets.
///
/// The derived schema is written at compile time, exactly as schemars would print it, when the
/// tokens tell all of it: named fields of primitives, `String`, `Option<T>`, `Vec<T>` and nested
/// `#[derive(ToolArgs)]` types, doc comments, and literal `rename`, `rename_all`, `default`,
/// `deny_unknown_fields`, `length`, `range` and `regex(pattern)` options. Registering the tool
/// then runs no schemars (`Tool::SCHEMA_JSON` holds the text when nothing nested is left to
/// join). Anything else is derived by schemars at run time.
///
/// # Checked at compile time
///
/// A missing description, an invalid name, intent placeholders and `sensitive` names that match
/// no argument, conflicting options, a verbatim schema that is not JSON, not a draft 2020-12 JSON
/// Schema, not an object, has a remote `$ref`, or disagrees with the parameters (names after
/// serde renames, required-ness, and the JSON types of the properties against the Rust types:
/// integers, floats, strings, booleans, `Option` and null, sequences by their `items`, maps by
/// their `additionalProperties`, `enum`/`const` values), `strict` that cannot hold, a struct
/// without a schema, and argument types that cannot be deserialized into (borrowed,
/// `impl Trait`, generics, `self`).
///
/// # Checked at registration
///
/// A type the macro cannot see into (a struct or enum of the author's, `serde_json::Value`, a
/// field with `#[serde(with)]` or `deserialize_with`) is compared with a verbatim schema when the
/// tool is first registered in the process (`ToolSet::with`, `toolset!`), through the argument
/// type's own `Deserialize`, as every call is read: each property's own values in the schema
/// (`const`, `enum`, `default`, `examples`) must be read by the type, and a small instance of
/// each JSON type the property declares that its schema accepts (an object with its properties
/// filled in, `""`, `0`, `0.5`, `false`, `[]`, `null`) must not be refused as the wrong kind
/// (serde's "invalid type"; a value of the right kind the type refuses, such as `""` for a date,
/// passes). A disagreement refuses the registration with `RegistrationError::TypeDisagrees`,
/// which names the property, what the schema says and allows, serde's refusal and the fix.
/// `serde_json::Value` reads anything, so it always agrees. What the check cannot show (a
/// required property no sample fits, a refusal serde does not place at a property) is left to
/// the schema's author, and a call the type refuses is answered with serde's error at run time.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(attr.into(), item.into()).into()
}

/// A reader for a type nested in tool arguments: a struct with named fields or an enum of unit
/// variants. Use it through `tool_runtime::ToolArgs`.
///
/// Hydration then reads the type like a `#[tool]`'s own fields (keys matched by index, values
/// checked against the schema as they are read) instead of through the guard that any
/// `Deserialize` type gets, and the type's schema is written at compile time where `#[tool]`'s
/// would be (see there), so the tools that nest it register without schemars. The written schema
/// assumes `JsonSchema` is derived too, from the same tokens: with a hand-written `JsonSchema`,
/// debug builds notice the difference and warn, and schemars' text is used. Only serde's `rename`, `rename_all`, `default` and
/// `deny_unknown_fields` are read; any other serde attribute is a compile error here, because a
/// reader that ignored it would read the type differently from serde.
///
/// `#[tool_args(crate = some::path)]` (or `crate = "some::path"`) says where the runtime crate is
/// when this code does not name it `tool_runtime`, as `#[tool(crate = ..)]` does.
#[proc_macro_derive(ToolArgs, attributes(tool_args))]
pub fn tool_args(input: TokenStream) -> TokenStream {
    match syn::parse::<syn::DeriveInput>(input) {
        Ok(i) => reader::derive(i).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `toolset!`'s compile-time duplicate-name check. Not a public API: use `tool_runtime::toolset!`.
#[doc(hidden)]
#[proc_macro]
pub fn __check_unique_names(input: TokenStream) -> TokenStream {
    match syn::parse::<toolset::Input>(input) {
        Ok(i) => toolset::check(i).into(),
        Err(e) => e.to_compile_error().into(),
    }
}
