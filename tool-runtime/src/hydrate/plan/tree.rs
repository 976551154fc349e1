//! The JSON trees a schema can be compiled from.
//!
//! Registration compiles a plan from a schema it has as text. A dynamic or verbatim schema is
//! parsed into a `serde_json::Value` anyway (the meta-schema check and the fallback validator
//! need one), so the plan is compiled from that. A derived schema needs neither, and a `Value`
//! is an expensive way to read one: its order-preserving maps hash every key and every string
//! is copied. [`Borrowed`] reads the same text into vectors of borrowed slices instead, at a
//! fraction of the cost, and is dropped as cheaply. The compiler and the remote-`$ref` scan are
//! written once, over [`Tree`].

use serde_json::{Number, Value};

/// A schema read without copying its strings (see the module docs).
pub(crate) type Borrowed<'a> = serde_json_borrow::Value<'a>;

/// What the plan compiler reads of a JSON document.
pub(crate) trait Tree: Sized {
    /// The entries of an object, in document order; `None` for anything else. Duplicate keys
    /// are as the tree holds them (see [`Tree::has_duplicate_keys`]).
    fn entries(&self) -> Option<impl Iterator<Item = (&str, &Self)>>;
    /// The items of an array.
    fn as_array(&self) -> Option<&[Self]>;
    fn as_str(&self) -> Option<&str>;
    fn as_bool(&self) -> Option<bool>;
    fn as_number(&self) -> Option<Number>;
    /// The value as a `serde_json::Value` (for constants the plan keeps, and messages).
    fn to_value(&self) -> Value;
    /// Whether an object repeats a key. A `Value` keeps the last of them, which is what the
    /// validator sees; a tree that keeps every entry says so here, and the compiler refuses the
    /// schema rather than guess which one counts.
    fn has_duplicate_keys(&self) -> bool {
        false
    }

    /// The value of `key` in an object.
    fn get(&self, key: &str) -> Option<&Self> {
        self.entries()?.find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The value a JSON pointer (RFC 6901, without the leading `#`) names.
    fn pointer(&self, pointer: &str) -> Option<&Self> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut at = self;
        for token in pointer.strip_prefix('/')?.split('/') {
            // `$defs` names rarely hold an escape: copy only a token that does
            let token: std::borrow::Cow<str> = if token.contains('~') {
                token.replace("~1", "/").replace("~0", "~").into()
            } else {
                token.into()
            };
            at = match at.as_array() {
                Some(items) => {
                    // RFC 6901: an index is digits without a leading zero
                    if token.len() > 1 && token.starts_with('0') {
                        return None;
                    }
                    items.get(token.parse::<usize>().ok()?)?
                }
                None => at.get(&token)?,
            };
        }
        Some(at)
    }
}

impl Tree for Value {
    fn entries(&self) -> Option<impl Iterator<Item = (&str, &Self)>> {
        Some(self.as_object()?.iter().map(|(k, v)| (k.as_str(), v)))
    }
    fn as_array(&self) -> Option<&[Self]> {
        Value::as_array(self).map(Vec::as_slice)
    }
    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn as_bool(&self) -> Option<bool> {
        Value::as_bool(self)
    }
    fn as_number(&self) -> Option<Number> {
        Value::as_number(self).cloned()
    }
    fn to_value(&self) -> Value {
        self.clone()
    }
    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object()?.get(key)
    }
    fn pointer(&self, pointer: &str) -> Option<&Self> {
        Value::pointer(self, pointer)
    }
}

impl<'a> Tree for Borrowed<'a> {
    fn entries(&self) -> Option<impl Iterator<Item = (&str, &Self)>> {
        Some(self.as_object()?.iter())
    }
    fn as_array(&self) -> Option<&[Self]> {
        Borrowed::as_array(self)
    }
    fn as_str(&self) -> Option<&str> {
        Borrowed::as_str(self)
    }
    fn as_bool(&self) -> Option<bool> {
        Borrowed::as_bool(self)
    }
    fn as_number(&self) -> Option<Number> {
        match self {
            Borrowed::Number(n) => Some(if let Some(u) = n.as_u64() {
                Number::from(u)
            } else if let Some(i) = n.as_i64() {
                Number::from(i)
            } else {
                Number::from_f64(n.as_f64()?)?
            }),
            _ => None,
        }
    }
    fn to_value(&self) -> Value {
        Value::from(self)
    }
    fn has_duplicate_keys(&self) -> bool {
        let Some(map) = self.as_object() else {
            return false;
        };
        let keys = map.as_vec();
        keys.iter()
            .enumerate()
            .any(|(i, (k, _))| keys[..i].iter().any(|(p, _)| p == k))
    }
}

/// The first `$ref` in `schema` that points outside the document (http, https, or any URL with a
/// scheme), if any.
pub(crate) fn remote_ref<T: Tree>(schema: &T) -> Option<&str> {
    if let Some(mut entries) = schema.entries() {
        // one pass over the entries, no lookup: this runs on every registration
        return entries.find_map(|(k, v)| match v.as_str() {
            Some(r) if k == "$ref" && !r.starts_with('#') => Some(r),
            _ => remote_ref(v),
        });
    }
    schema.as_array()?.iter().find_map(remote_ref)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_trees_read_alike() {
        let text =
            r#"{"a~b":{"c/d":[1,-2,2.5,"x\"y",true,null]},"$defs":{"e":{"$ref":"http://x"}}}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let borrowed: Borrowed = serde_json::from_str(text).unwrap();
        for pointer in [
            "",
            "/a~0b",
            "/a~0b/c~1d",
            "/a~0b/c~1d/3",
            "/a~0b/c~1d/01",
            "/nope",
        ] {
            assert_eq!(
                Tree::pointer(&value, pointer).map(Tree::to_value),
                Tree::pointer(&borrowed, pointer).map(Tree::to_value),
                "{pointer}"
            );
        }
        let items = Tree::pointer(&borrowed, "/a~0b/c~1d").unwrap();
        let numbers: Vec<_> = Tree::as_array(items).unwrap()[..3]
            .iter()
            .map(|n| n.as_number().unwrap())
            .collect();
        assert_eq!(
            numbers,
            [json!(1), json!(-2), json!(2.5)].map(|n| n.as_number().cloned().unwrap())
        );
        assert_eq!(remote_ref(&value), Some("http://x"));
        assert_eq!(remote_ref(&borrowed), Some("http://x"));
    }

    #[test]
    fn only_the_borrowed_tree_can_repeat_a_key() {
        let text = r#"{"type":"string","type":"integer"}"#;
        let borrowed: Borrowed = serde_json::from_str(text).unwrap();
        assert!(borrowed.has_duplicate_keys());
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(!value.has_duplicate_keys());
        assert_eq!(value["type"], "integer");
    }
}
