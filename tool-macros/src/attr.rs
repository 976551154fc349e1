//! The options written on `#[tool(...)]` and on parameters (`#[arg(...)]`), parsed with darling.

use darling::util::{Flag, Override};
use darling::{FromAttributes, FromMeta};
use syn::{Expr, LitInt, LitStr};

/// Everything `#[tool(...)]` accepts. Unknown options are rejected by darling with a
/// "did you mean" of its own.
#[derive(Debug, Default, FromMeta)]
#[darling(default)]
pub struct ToolOptions {
    /// Overrides the default name (the function's name, or the struct's name in snake_case).
    pub name: Option<LitStr>,
    /// Overrides the doc comment.
    pub description: Option<LitStr>,
    pub read_only: Flag,
    pub create: Flag,
    pub modify: Flag,
    pub external: Flag,
    pub reversible: Flag,
    pub idempotent: Flag,
    pub strict: Flag,
    pub intent: Option<LitStr>,
    /// `tags = ["a", "b"]` or `tags("a", "b")`.
    pub tags: Option<Vec<LitStr>>,
    /// JSON texts, each an example argument object.
    pub examples: Option<Vec<LitStr>>,
    /// `"30s"`, `"500ms"`, `"2m"`, `"1h"`.
    pub timeout: Option<LitStr>,
    pub timeout_ms: Option<LitInt>,
    /// An inline verbatim JSON Schema.
    pub parameters: Option<LitStr>,
    /// A verbatim JSON Schema file, relative to `CARGO_MANIFEST_DIR`.
    pub schema: Option<LitStr>,
    pub allow_no_schema: Flag,
    /// `read_only | human_approval | full` (a path or a string).
    pub no_schema_mode: Option<Expr>,
    /// Argument names the audit trail redacts.
    pub sensitive: Option<Vec<LitStr>>,
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
