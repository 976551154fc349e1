//! Argument schemas written by the macros at compile time.
//!
//! schemars derives a schema at run time: it builds a tree of maps for the type and every type
//! nested in it, which is most of what registering a typed tool costs. For argument types whose
//! schema follows from their tokens alone (named fields of primitive, `String`, `Option`, `Vec`
//! and nested `#[derive(ToolArgs)]` types, doc comments, and the serde/schemars attributes
//! the macros understand), `#[tool]` and `#[derive(ToolArgs)]` write the schema's text while
//! they expand, exactly as schemars would print it. What the tokens cannot tell is left to run
//! time as [`Piece`]s: the `$defs` name of a nested type (its own derive knows it) and a default
//! value (serialized as schemars serializes it). [`compose`] joins the pieces, and the nested
//! types' schemas under `$defs` in schemars' order; any type without a written schema makes it
//! give up, and the definition is derived by schemars at run time.
//!
//! With the `verify-written` feature, debug builds check every composed schema against
//! schemars' (see
//! [`DefinitionBuilder::written`](crate::definition::DefinitionBuilder::written)): a difference
//! is logged and schemars' text kept, or, with `TOOL_RUNTIME_STRICT_WRITTEN` set as this
//! workspace sets it for its own tests, a panic, so a divergence shows in a test suite instead of
//! in a provider's request.

use std::marker::PhantomData;

use serde::Serialize;

/// A type's schema as the macros wrote it.
#[derive(Debug)]
pub struct Written {
    /// The key under `$defs` (schemars' `schema_name`: the type's name).
    pub name: &'static str,
    /// The schema object's text without its closing brace and without its description.
    pub body: &'static [Piece],
    /// `,"description":".."` (what a nested type adds before its closing brace), or empty.
    pub description: &'static str,
}

/// A piece of a [`Written`] schema's text.
#[derive(Debug)]
pub enum Piece {
    /// Text as it stands.
    Text(&'static str),
    /// A JSON string referring to a nested type under `$defs`; `None`: the type has no written
    /// schema.
    Ref(fn() -> Option<&'static Written>),
    /// `,"default":..` with the field's default serialized; `None`: the default does not
    /// serialize, and schemars leaves the keyword out.
    Default(fn() -> Option<String>),
}

/// A type with a written schema: what `#[derive(ToolArgs)]` and `#[tool]` implement when they can
/// write it.
pub trait HasWritten {
    /// The written schema.
    fn written() -> &'static Written;
}

/// The text of `root`'s schema as [`crate::schema::derive`] gives it: the root object, then the
/// nested types under `$defs` in the order schemars first meets them. `None` when a nested type
/// has no written schema, refers back to the root, or shares its name with another.
pub fn compose(root: &'static Written) -> Option<String> {
    let mut body = String::with_capacity(1024);
    let mut defs: Vec<(&'static Written, String)> = Vec::new();
    write_body(root, root, &mut body, &mut defs)?;
    // the definition keeps this text for the life of the process: allocate it once, at its
    // exact size, rather than leave the slack of a grown buffer behind
    let defs_len: usize = defs.iter().map(|(w, t)| w.name.len() + t.len() + 4).sum();
    let mut out = String::with_capacity(body.len() + defs_len + ",\"$defs\":{}}".len());
    out.push_str(&body);
    if !defs.is_empty() {
        out.push_str(",\"$defs\":{");
        for (i, (w, text)) in defs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('"');
            out.push_str(w.name);
            out.push_str("\":");
            out.push_str(text);
        }
        out.push('}');
    }
    out.push('}');
    Some(out)
}

fn write_body(
    w: &'static Written,
    root: &'static Written,
    out: &mut String,
    defs: &mut Vec<(&'static Written, String)>,
) -> Option<()> {
    for piece in w.body {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Default(f) => {
                if let Some(v) = f() {
                    out.push_str(",\"default\":");
                    out.push_str(&v);
                }
            }
            Piece::Ref(f) => {
                let nested = f()?;
                if std::ptr::eq(nested, root) {
                    return None;
                }
                out.push_str("\"#/$defs/");
                out.push_str(nested.name);
                out.push('"');
                if defs.iter().any(|(d, _)| std::ptr::eq(*d, nested)) {
                    continue;
                }
                if defs.iter().any(|(d, _)| d.name == nested.name) {
                    // schemars would number the second one; not worth copying
                    return None;
                }
                // registered before it is written, as schemars does, so the types it refers to
                // come after it
                let at = defs.len();
                defs.push((nested, String::new()));
                let mut text = String::with_capacity(256);
                write_body(nested, root, &mut text, defs)?;
                text.push_str(nested.description);
                text.push('}');
                defs[at].1 = text;
            }
        }
    }
    Some(())
}

/// Finds a type's written schema if it has one, by autoref: `(&&Probe::<T>::NEW).written()`.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// The probe.
    pub const NEW: Probe<T> = Probe(PhantomData);
}

/// The [`HasWritten`] side of [`Probe`].
pub trait ViaWritten {
    /// The type's written schema.
    fn written(&self) -> Option<&'static Written>;
}

impl<T: HasWritten> ViaWritten for &Probe<T> {
    fn written(&self) -> Option<&'static Written> {
        Some(T::written())
    }
}

/// The fallback side of [`Probe`]: no written schema.
pub trait NotWritten {
    /// `None`.
    fn written(&self) -> Option<&'static Written>;
}

impl<T> NotWritten for Probe<T> {
    fn written(&self) -> Option<&'static Written> {
        None
    }
}

/// A default value, serialized the way schemars serializes it (through a `Value`) when its type
/// is `Serialize`; `MaybeSerialize(v).text()`.
pub struct MaybeSerialize<T>(pub T);

impl<T: Serialize> MaybeSerialize<T> {
    /// The value's JSON text.
    pub fn text(self) -> Option<String> {
        serde_json::to_value(self.0).ok().map(|v| v.to_string())
    }
}

/// The fallback of [`MaybeSerialize`]: a type that does not serialize has no default keyword.
pub trait NoSerialize: Sized {
    /// `None`.
    fn text(self) -> Option<String> {
        None
    }
}

impl<T> NoSerialize for MaybeSerialize<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    static LEAF: Written = Written {
        name: "Leaf",
        body: &[Piece::Text(r#"{"type":"string""#)],
        description: r#","description":"A leaf.""#,
    };
    static MID: Written = Written {
        name: "Mid",
        body: &[
            Piece::Text(r#"{"type":"object","properties":{"l":{"$ref":"#),
            Piece::Ref(|| Some(&LEAF)),
            Piece::Text("}}"),
        ],
        description: "",
    };
    static ROOT: Written = Written {
        name: "Root",
        body: &[
            Piece::Text(r#"{"type":"object","properties":{"m":{"$ref":"#),
            Piece::Ref(|| Some(&MID)),
            Piece::Text(r#"},"l":{"$ref":"#),
            Piece::Ref(|| Some(&LEAF)),
            Piece::Text(r#"},"n":{"type":"integer""#),
            Piece::Default(|| MaybeSerialize(3u8).text()),
            Piece::Text("}}"),
        ],
        description: r#","description":"left out at the root""#,
    };

    #[test]
    fn nested_types_go_under_defs_once_in_the_order_first_met() {
        assert_eq!(
            compose(&ROOT).unwrap(),
            r##"{"type":"object","properties":{"m":{"$ref":"#/$defs/Mid"},"l":{"$ref":"#/$defs/Leaf"},"n":{"type":"integer","default":3}},"$defs":{"Mid":{"type":"object","properties":{"l":{"$ref":"#/$defs/Leaf"}}},"Leaf":{"type":"string","description":"A leaf."}}}"##
        );
    }

    static MISSING: Written = Written {
        name: "Missing",
        body: &[
            Piece::Text("{\"x\":"),
            Piece::Ref(|| None),
            Piece::Text("}"),
        ],
        description: "",
    };
    static CLASH: Written = Written {
        name: "Leaf",
        body: &[Piece::Text("{")],
        description: "",
    };
    static TWO_LEAVES: Written = Written {
        name: "Two",
        body: &[
            Piece::Text("{\"a\":"),
            Piece::Ref(|| Some(&LEAF)),
            Piece::Text(",\"b\":"),
            Piece::Ref(|| Some(&CLASH)),
        ],
        description: "",
    };
    static SELF_REF: Written = Written {
        name: "SelfRef",
        body: &[Piece::Text("{\"a\":"), Piece::Ref(|| Some(&SELF_REF))],
        description: "",
    };

    #[test]
    fn what_schemars_would_do_differently_gives_up() {
        assert_eq!(
            compose(&MISSING),
            None,
            "a nested type without a written schema"
        );
        assert_eq!(compose(&TWO_LEAVES), None, "two nested types of one name");
        assert_eq!(compose(&SELF_REF), None, "a reference to the root");
    }

    #[test]
    #[allow(clippy::needless_borrow)] // the autoref is the point
    fn probes_find_written_schemas_and_defaults_that_serialize() {
        struct With;
        impl HasWritten for With {
            fn written() -> &'static Written {
                &LEAF
            }
        }
        struct Without;
        assert!(std::ptr::eq(
            (&&Probe::<With>::NEW).written().unwrap(),
            &LEAF
        ));
        assert!((&&Probe::<Without>::NEW).written().is_none());
        assert_eq!(
            MaybeSerialize(vec![1.5f64]).text().as_deref(),
            Some("[1.5]")
        );
        assert_eq!(MaybeSerialize(Without).text(), None);
    }
}
