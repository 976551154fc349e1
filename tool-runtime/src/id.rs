//! [`SharedId`]: the call and correlation ids every record of one call carries.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An id that the records of one call share: the decoded [`crate::ToolCall`], the hydrated
/// [`crate::hydrate::ToolInstance`], the [`crate::CallContext`] the tool sees, the audit record and the
/// outcome. Cloning it copies a pointer, not the text, so hydrating and running a call never
/// copies its id. Reads as a `&str` (it dereferences to one) and serializes as a JSON string.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedId(Arc<str>);

impl SharedId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SharedId {
    fn default() -> Self {
        // one allocation per process for every empty id
        static EMPTY: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from(""));
        SharedId(EMPTY.clone())
    }
}

impl Deref for SharedId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SharedId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SharedId {
    fn from(s: &str) -> Self {
        SharedId(Arc::from(s))
    }
}

impl From<String> for SharedId {
    fn from(s: String) -> Self {
        SharedId(Arc::from(s))
    }
}

impl From<&String> for SharedId {
    fn from(s: &String) -> Self {
        SharedId(Arc::from(s.as_str()))
    }
}

impl From<Arc<str>> for SharedId {
    fn from(s: Arc<str>) -> Self {
        SharedId(s)
    }
}

impl From<&SharedId> for SharedId {
    fn from(s: &SharedId) -> Self {
        s.clone()
    }
}

impl From<SharedId> for String {
    fn from(s: SharedId) -> Self {
        s.0.to_string()
    }
}

impl PartialEq<str> for SharedId {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for SharedId {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for SharedId {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<SharedId> for str {
    fn eq(&self, other: &SharedId) -> bool {
        self == &*other.0
    }
}

impl PartialEq<SharedId> for &str {
    fn eq(&self, other: &SharedId) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<SharedId> for String {
    fn eq(&self, other: &SharedId) -> bool {
        **self == *other.0
    }
}

impl Serialize for SharedId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SharedId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // a visitor, not `String`: the text is copied once, into the `Arc`
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = SharedId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an id string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<SharedId, E> {
                Ok(SharedId::from(s))
            }
        }
        d.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_text_and_compare_as_text() {
        let a = SharedId::from("call_1");
        let b = a.clone();
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert_eq!(a, "call_1");
        assert_eq!("call_1", a);
        assert_eq!(a, String::from("call_1"));
        assert_eq!(a.len(), 6);
        assert_eq!(format!("{a} {a:?}"), "call_1 \"call_1\"");
    }

    #[test]
    fn serializes_as_a_json_string_and_reads_escaped_text() {
        let a = SharedId::from("a\"b");
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(text, r#""a\"b""#);
        let back: SharedId = serde_json::from_str(&text).unwrap();
        assert_eq!(back, a);
        assert!(serde_json::from_str::<SharedId>("1").is_err());
        assert_eq!(SharedId::default(), "");
    }
}
