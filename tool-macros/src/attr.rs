//! The options written on `#[tool(...)]` and on parameters (`#[arg(...)]`), parsed with darling.

use darling::ast::NestedMeta;
use darling::util::{Flag, Override};
use darling::{FromAttributes, FromMeta};
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Expr, Lit, LitInt, LitStr};

/// A string option (`name = "..."`). darling's own error for another kind of value names only
/// the type it found; this one says what to write.
#[derive(Debug, Clone)]
pub struct Text(pub LitStr);

impl std::ops::Deref for Text {
    type Target = LitStr;

    fn deref(&self) -> &LitStr {
        &self.0
    }
}

impl ToTokens for Text {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
    }
}

fn string_literal(expr: &Expr) -> darling::Result<LitStr> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        Expr::Group(g) => string_literal(&g.expr),
        other => Err(darling::Error::custom(
            "this option takes a string: write the value in double quotes, e.g. `\"...\"`",
        )
        .with_span(other)),
    }
}

impl FromMeta for Text {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        string_literal(expr).map(Text)
    }

    fn from_word() -> darling::Result<Self> {
        Err(darling::Error::custom(
            "this option needs a value: write it as `option = \"...\"`",
        ))
    }
}

/// A list of strings: `tags = ["a", "b"]` or `tags("a", "b")`.
#[derive(Debug, Clone, Default)]
pub struct Texts(pub Vec<LitStr>);

impl<'a> IntoIterator for &'a Texts {
    type Item = &'a LitStr;
    type IntoIter = std::slice::Iter<'a, LitStr>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

const LIST_HINT: &str =
    "this option takes a list of strings: write it in brackets, e.g. `[\"a\", \"b\"]`";

impl FromMeta for Texts {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            Expr::Array(a) => {
                let mut errors = darling::Error::accumulator();
                let items = a
                    .elems
                    .iter()
                    .filter_map(|e| errors.handle(string_literal(e)))
                    .collect();
                errors.finish_with(Texts(items))
            }
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(darling::Error::custom(LIST_HINT).with_span(other)),
        }
    }

    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        let mut errors = darling::Error::accumulator();
        let mut out = Vec::new();
        for item in items {
            match item {
                NestedMeta::Lit(Lit::Str(s)) => out.push(s.clone()),
                other => errors.push(darling::Error::custom(LIST_HINT).with_span(other)),
            }
        }
        errors.finish_with(Texts(out))
    }

    fn from_word() -> darling::Result<Self> {
        Err(darling::Error::custom(LIST_HINT))
    }
}

/// `crate = some::path` (or `crate = "some::path"`, as serde writes it): where the runtime crate
/// is, when the code using the macros names it otherwise than `tool_runtime` (a renamed
/// dependency, or a crate that re-exports it).
#[derive(Debug, Clone)]
pub struct CratePath(pub syn::Path);

const CRATE_HINT: &str = "`crate` takes the path of the runtime crate as this code names it, \
     e.g. `crate = ::my_runtime` or `crate = my_framework::tool_runtime` (a string, \
     `crate = \"my_runtime\"`, works too)";

impl CratePath {
    pub fn from_value(expr: &Expr) -> syn::Result<Self> {
        match expr {
            Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => {
                Ok(CratePath(p.path.clone()))
            }
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) => s
                .parse::<syn::Path>()
                .map(CratePath)
                .map_err(|_| syn::Error::new_spanned(s, CRATE_HINT)),
            Expr::Group(g) => Self::from_value(&g.expr),
            other => Err(syn::Error::new_spanned(other, CRATE_HINT)),
        }
    }
}

impl FromMeta for CratePath {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        Ok(Self::from_value(expr)?)
    }

    fn from_word() -> darling::Result<Self> {
        Err(darling::Error::custom(CRATE_HINT))
    }
}

/// Everything `#[tool(...)]` accepts. Unknown options are rejected by darling with a
/// "did you mean" of its own.
#[derive(Debug, Default, FromMeta)]
#[darling(default)]
pub struct ToolOptions {
    /// Overrides the default name (the function's name, or the struct's name in snake_case).
    pub name: Option<Text>,
    /// Overrides the doc comment.
    pub description: Option<Text>,
    pub read_only: Flag,
    pub create: Flag,
    pub modify: Flag,
    pub external: Flag,
    pub reversible: Flag,
    pub idempotent: Flag,
    /// Retries allowed although the tool is neither read-only nor idempotent.
    pub retry: Flag,
    /// A sync function whose body never blocks: run in place, like an async fn's body, instead of
    /// on the blocking pool.
    pub non_blocking: Flag,
    pub strict: Flag,
    pub intent: Option<Text>,
    /// `tags = ["a", "b"]` or `tags("a", "b")`.
    pub tags: Option<Texts>,
    /// JSON texts, each an example argument object.
    pub examples: Option<Texts>,
    /// `"30s"`, `"500ms"`, `"2m"`, `"1h"`.
    pub timeout: Option<Text>,
    pub timeout_ms: Option<LitInt>,
    /// An inline verbatim JSON Schema.
    pub parameters: Option<Text>,
    /// A verbatim JSON Schema file, relative to `CARGO_MANIFEST_DIR`.
    pub schema: Option<Text>,
    pub allow_no_schema: Flag,
    /// `read_only | human_approval | full` (a path or a string).
    pub no_schema_mode: Option<Expr>,
    /// Argument names the audit trail redacts.
    pub sensitive: Option<Texts>,
    /// `crate = path`: the runtime crate's path.
    #[darling(rename = "crate")]
    pub krate: Option<CratePath>,
}

/// Per-parameter (function form) or per-field (struct form) options: `#[arg(...)]`.
#[derive(Debug, Default, FromAttributes)]
#[darling(attributes(arg))]
pub struct ArgOptions {
    /// `default` (the type's `Default`) or `default = EXPR`.
    pub default: Option<Override<Expr>>,
    pub min: Option<Expr>,
    pub max: Option<Expr>,
    pub min_length: Option<Expr>,
    pub max_length: Option<Expr>,
    /// Redacted in the audit trail.
    pub sensitive: Flag,
}

impl ArgOptions {
    /// Whether any schema-shaping option is present (these have no meaning with a verbatim schema).
    pub fn shapes_schema(&self) -> bool {
        self.min.is_some()
            || self.max.is_some()
            || self.min_length.is_some()
            || self.max_length.is_some()
    }
}
