//! The JSON trees a schema can be compiled from.
//!
//! Registration compiles a plan from a schema it has as text. A dynamic or verbatim schema is
//! parsed into a `serde_json::Value` anyway (the meta-schema check and the fallback validator
//! need one), so the plan is compiled from that. A derived schema needs neither, and a `Value`
//! is an expensive way to read one: its order-preserving maps hash every key, every string is
//! copied, and every object and array is an allocation of its own, freed again one by one. A
//! [`Tape`] reads the same text into one vector of tokens that borrow its strings, in a single
//! allocation. The compiler and the remote-`$ref` scan are written once, over [`Tree`]: a
//! cheap, copyable position in either.

use std::borrow::Cow;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// What the plan compiler reads of a JSON document, through a copyable position in it.
pub(crate) trait Tree<'t>: Copy + 't {
    /// The entries of an object, in document order; `None` for anything else. Duplicate keys
    /// are as the tree holds them (see [`Tree::has_duplicate_keys`]).
    fn entries(self) -> Option<impl Iterator<Item = (&'t str, Self)> + 't>;
    /// The items of an array.
    fn items(self) -> Option<impl ExactSizeIterator<Item = Self> + 't>;
    fn as_str(self) -> Option<&'t str>;
    fn as_bool(self) -> Option<bool>;
    fn as_number(self) -> Option<Number>;
    /// The value as a `serde_json::Value` (for constants the plan keeps, and messages).
    fn to_value(self) -> Value;
    /// Whether an object repeats a key. A `Value` keeps the last of them, which is what the
    /// validator sees; a tree that keeps every entry says so here, and the compiler refuses the
    /// schema rather than guess which one counts.
    fn has_duplicate_keys(self) -> bool {
        false
    }

    /// The first `$ref` below this value that points outside the document (http, https, or any
    /// URL with a scheme), if any.
    fn remote_ref(self) -> Option<&'t str> {
        if let Some(mut entries) = self.entries() {
            // one pass over the entries, no lookup: this runs on every registration
            return entries.find_map(|(k, v)| match v.as_str() {
                Some(r) if k == "$ref" && !tool_wire::is_local_ref(r) => Some(r),
                _ => v.remote_ref(),
            });
        }
        self.items()?.find_map(Tree::remote_ref)
    }

    /// Whether this is an object or an array.
    fn is_compound(self) -> bool {
        self.entries().is_some() || self.items().is_some()
    }

    /// The value of `key` in an object.
    fn get(self, key: &str) -> Option<Self> {
        self.entries()?.find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The value a JSON pointer (RFC 6901, without the leading `#`) names.
    fn pointer(self, pointer: &str) -> Option<Self> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut at = self;
        for token in pointer.strip_prefix('/')?.split('/') {
            // `$defs` names rarely hold an escape: copy only a token that does
            let token: Cow<str> = if token.contains('~') {
                tool_wire::unescape(token).into()
            } else {
                token.into()
            };
            at = match at.items() {
                Some(mut items) => {
                    // RFC 6901: an index is digits without a leading zero
                    if token.len() > 1 && token.starts_with('0') {
                        return None;
                    }
                    items.nth(token.parse::<usize>().ok()?)?
                }
                None => at.get(&token)?,
            };
        }
        Some(at)
    }
}

impl<'v> Tree<'v> for &'v Value {
    fn entries(self) -> Option<impl Iterator<Item = (&'v str, Self)> + 'v> {
        Some(self.as_object()?.iter().map(|(k, v)| (k.as_str(), v)))
    }
    fn items(self) -> Option<impl ExactSizeIterator<Item = Self> + 'v> {
        Value::as_array(self).map(|items| items.iter())
    }
    fn as_str(self) -> Option<&'v str> {
        Value::as_str(self)
    }
    fn as_bool(self) -> Option<bool> {
        Value::as_bool(self)
    }
    fn as_number(self) -> Option<Number> {
        Value::as_number(self).cloned()
    }
    fn to_value(self) -> Value {
        self.clone()
    }
    fn get(self, key: &str) -> Option<Self> {
        self.as_object()?.get(key)
    }
    fn pointer(self, pointer: &str) -> Option<Self> {
        Value::pointer(self, pointer)
    }
}

/// A JSON document read into one vector of tokens, in document order: an array or object token
/// is followed by its contents (an object's as key, value, key, value...) and records where they
/// end, so that a reader can step over them.
pub(crate) struct Tape<'a> {
    tokens: Vec<Token<'a>>,
}

enum Token<'a> {
    Null,
    Bool(bool),
    Number(Number),
    /// A string; borrowed from the text unless it held an escape.
    Str(Cow<'a, str>),
    /// An object's key, borrowed the same way.
    Key(Cow<'a, str>),
    /// `len` items; the tokens up to `end` (exclusive) are its contents.
    Array {
        len: u32,
        end: u32,
    },
    /// `len` entries; the tokens up to `end` (exclusive) are its contents.
    Object {
        len: u32,
        end: u32,
    },
}

impl<'a> Tape<'a> {
    /// Reads `text`, which must be one JSON value.
    pub(crate) fn parse(text: &'a str) -> serde_json::Result<Tape<'a>> {
        // about one token per ten bytes of a derived schema; the tape is dropped right after
        // compiling, so a generous guess costs nothing that lasts
        let mut tokens = Vec::with_capacity(text.len() / 8 + 4);
        let mut de = serde_json::Deserializer::from_str(text);
        Build::value(&mut tokens).deserialize(&mut de)?;
        de.end()?;
        Ok(Tape { tokens })
    }

    /// The document's root.
    pub(crate) fn root(&self) -> At<'_, 'a> {
        At {
            tokens: &self.tokens,
            i: 0,
        }
    }
}

/// A position in a [`Tape`].
#[derive(Clone, Copy)]
pub(crate) struct At<'t, 'a> {
    tokens: &'t [Token<'a>],
    i: usize,
}

impl<'t, 'a> At<'t, 'a> {
    fn token(self) -> &'t Token<'a> {
        &self.tokens[self.i]
    }

    /// The position right after this value.
    fn next(self) -> At<'t, 'a> {
        let i = match self.token() {
            Token::Array { end, .. } | Token::Object { end, .. } => *end as usize,
            _ => self.i + 1,
        };
        At { i, ..self }
    }

    /// The `n` values (or key-value pairs, `pairs`) that follow this array or object token.
    fn contents(self, n: u32, pairs: bool) -> Contents<'t, 'a> {
        Contents {
            at: At {
                i: self.i + 1,
                ..self
            },
            left: n as usize,
            pairs,
        }
    }
}

/// The contents of an array or object on a tape.
pub(crate) struct Contents<'t, 'a> {
    at: At<'t, 'a>,
    left: usize,
    pairs: bool,
}

impl<'t, 'a> Iterator for Contents<'t, 'a> {
    /// The key (for an object) and the value.
    type Item = (Option<&'t str>, At<'t, 'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let key = if self.pairs {
            let key = match self.at.token() {
                Token::Key(k) => &**k,
                _ => unreachable!("an object's entries start with a key"),
            };
            self.at.i += 1;
            Some(key)
        } else {
            None
        };
        let value = self.at;
        self.at = value.next();
        Some((key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Contents<'_, '_> {}

impl<'t, 'a: 't> Tree<'t> for At<'t, 'a> {
    fn entries(self) -> Option<impl Iterator<Item = (&'t str, Self)> + 't> {
        match *self.token() {
            Token::Object { len, .. } => Some(
                self.contents(len, true)
                    .map(|(k, v)| (k.unwrap_or_default(), v)),
            ),
            _ => None,
        }
    }
    fn items(self) -> Option<impl ExactSizeIterator<Item = Self> + 't> {
        match *self.token() {
            Token::Array { len, .. } => Some(self.contents(len, false).map(|(_, v)| v)),
            _ => None,
        }
    }
    fn as_str(self) -> Option<&'t str> {
        match self.token() {
            Token::Str(s) => Some(s),
            _ => None,
        }
    }
    fn as_bool(self) -> Option<bool> {
        match *self.token() {
            Token::Bool(b) => Some(b),
            _ => None,
        }
    }
    fn as_number(self) -> Option<Number> {
        match self.token() {
            Token::Number(n) => Some(n.clone()),
            _ => None,
        }
    }
    fn is_compound(self) -> bool {
        matches!(self.token(), Token::Array { .. } | Token::Object { .. })
    }
    fn to_value(self) -> Value {
        match self.token() {
            Token::Null => Value::Null,
            Token::Bool(b) => Value::Bool(*b),
            Token::Number(n) => Value::Number(n.clone()),
            Token::Str(s) | Token::Key(s) => Value::String(s.clone().into_owned()),
            Token::Array { .. } => Value::Array(
                self.items()
                    .into_iter()
                    .flatten()
                    .map(At::to_value)
                    .collect(),
            ),
            Token::Object { .. } => Value::Object(
                self.entries()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.to_owned(), v.to_value()))
                    .collect(),
            ),
        }
    }
    fn has_duplicate_keys(self) -> bool {
        let Some(entries) = self.entries() else {
            return false;
        };
        entries.enumerate().any(|(i, (key, _))| {
            self.entries()
                .into_iter()
                .flatten()
                .take(i)
                .any(|(k, _)| k == key)
        })
    }
    fn remote_ref(self) -> Option<&'t str> {
        // the tape is the document in order: a key and the token after it are an entry, and
        // nothing needs walking
        let end = self.next().i;
        self.tokens[self.i..end]
            .windows(2)
            .find_map(|pair| match pair {
                [Token::Key(k), Token::Str(r)] if k == "$ref" && !tool_wire::is_local_ref(r) => {
                    Some(&**r)
                }
                _ => None,
            })
    }
}

/// Appends one value's tokens to the tape; with `key`, an object's key.
struct Build<'v, 'a> {
    tokens: &'v mut Vec<Token<'a>>,
    key: bool,
}

impl<'v, 'a> Build<'v, 'a> {
    fn value(tokens: &'v mut Vec<Token<'a>>) -> Self {
        Build { tokens, key: false }
    }

    fn key(tokens: &'v mut Vec<Token<'a>>) -> Self {
        Build { tokens, key: true }
    }

    fn string(self, s: Cow<'a, str>) {
        self.tokens.push(if self.key {
            Token::Key(s)
        } else {
            Token::Str(s)
        });
    }

    /// An array or object: `open` pushed, its contents read by `fill` (which counts them), and
    /// `open` then told how many there were and where they end.
    fn nest<E: de::Error>(
        self,
        open: Token<'a>,
        fill: impl FnOnce(&mut Vec<Token<'a>>) -> Result<usize, E>,
    ) -> Result<(), E> {
        let tokens = self.tokens;
        let at = tokens.len();
        tokens.push(open);
        let n = fill(tokens)?;
        let too_big = || E::custom("a schema too large to compile");
        let (len, end) = (
            u32::try_from(n).map_err(|_| too_big())?,
            u32::try_from(tokens.len()).map_err(|_| too_big())?,
        );
        match &mut tokens[at] {
            Token::Array { len: l, end: e } | Token::Object { len: l, end: e } => {
                (*l, *e) = (len, end);
            }
            _ => unreachable!("opened as an array or object"),
        }
        Ok(())
    }
}

impl<'a> DeserializeSeed<'a> for Build<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'a>>(self, de: D) -> Result<(), D::Error> {
        if self.key {
            de.deserialize_str(self)
        } else {
            de.deserialize_any(self)
        }
    }
}

impl<'a> Visitor<'a> for Build<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.tokens.push(Token::Null);
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.tokens.push(Token::Bool(v));
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.tokens.push(Token::Number(v.into()));
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.tokens.push(Token::Number(v.into()));
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        let n = Number::from_f64(v).ok_or_else(|| E::custom("a number that is not finite"))?;
        self.tokens.push(Token::Number(n));
        Ok(())
    }
    fn visit_borrowed_str<E>(self, v: &'a str) -> Result<(), E> {
        self.string(Cow::Borrowed(v));
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.string(Cow::Owned(v.to_owned()));
        Ok(())
    }
    fn visit_string<E>(self, v: String) -> Result<(), E> {
        self.string(Cow::Owned(v));
        Ok(())
    }
    fn visit_seq<S: SeqAccess<'a>>(self, mut seq: S) -> Result<(), S::Error> {
        self.nest(Token::Array { len: 0, end: 0 }, |tokens| {
            let mut n = 0;
            while seq.next_element_seed(Build::value(tokens))?.is_some() {
                n += 1;
            }
            Ok(n)
        })
    }
    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<(), M::Error> {
        self.nest(Token::Object { len: 0, end: 0 }, |tokens| {
            let mut n = 0;
            while map.next_key_seed(Build::key(tokens))?.is_some() {
                map.next_value_seed(Build::value(tokens))?;
                n += 1;
            }
            Ok(n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_trees_read_alike() {
        let text = r#"{"a~b":{"c/d":[1,-2,2.5,"x\"y",true,null,[],{}]},"$defs":{"e":{"$ref":"http://x"}},"z":[[1,[2]],{"k":{"l":3}}]}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let tape = Tape::parse(text).unwrap();
        let root = tape.root();
        assert_eq!(root.to_value(), value);
        for pointer in [
            "",
            "/a~0b",
            "/a~0b/c~1d",
            "/a~0b/c~1d/3",
            "/a~0b/c~1d/01",
            "/a~0b/c~1d/7",
            "/z/0/1/0",
            "/z/1/k/l",
            "/z/2",
            "/nope",
        ] {
            assert_eq!(
                Tree::pointer(&value, pointer).map(Tree::to_value),
                Tree::pointer(root, pointer).map(Tree::to_value),
                "{pointer}"
            );
        }
        let items = Tree::pointer(root, "/a~0b/c~1d").unwrap();
        assert_eq!(items.items().unwrap().len(), 8);
        let numbers: Vec<_> = items
            .items()
            .unwrap()
            .take(3)
            .map(|n| n.as_number().unwrap())
            .collect();
        assert_eq!(
            numbers,
            [json!(1), json!(-2), json!(2.5)].map(|n| n.as_number().cloned().unwrap())
        );
        // the escaped string is the only one copied, and reads the same
        assert_eq!(
            Tree::pointer(root, "/a~0b/c~1d/3").unwrap().as_str(),
            Some("x\"y")
        );
        let keys: Vec<&str> = root.entries().unwrap().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a~b", "$defs", "z"]);
        assert_eq!((&value).remote_ref(), Some("http://x"));
        assert_eq!(root.remote_ref(), Some("http://x"));
    }

    #[test]
    fn only_the_tape_can_repeat_a_key() {
        let text = r#"{"type":"string","type":"integer"}"#;
        let tape = Tape::parse(text).unwrap();
        assert!(tape.root().has_duplicate_keys());
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(!(&value).has_duplicate_keys());
        assert_eq!(value["type"], "integer");
    }

    #[test]
    fn a_tape_refuses_what_is_not_one_json_value() {
        for text in ["", "{", "[1,]", "{} {}", "nul"] {
            assert!(Tape::parse(text).is_err(), "{text}");
        }
    }
}
