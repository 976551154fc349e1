//! Stable ids for calls a provider sent without one (Gemini may omit `functionCall.id`, old
//! Ollama servers never send one, the prompt fallback has none).
//!
//! The id is `gen_` followed by 16 hex digits of FNV-1a (64 bit) over the provider name, the
//! call's position in the response, the tool name and the arguments' text. The same response
//! decoded twice yields the same ids, so retries, audit records and logs agree; two identical calls
//! at different positions still get different ids. FNV-1a is implemented here rather than taken
//! from `std`'s hasher because `std` does not promise that its algorithm stays the same across
//! releases, and these ids end up in audit trails.

/// The prefix of every generated id; [`is_generated`] tells them apart from a provider's.
pub const GENERATED_PREFIX: &str = "gen_";

/// The stable id of the call at `position` in a response of `provider`.
pub fn stable_id(provider: &str, position: usize, name: &str, arguments: &str) -> String {
    let mut h = Fnv::new();
    h.write(provider.as_bytes());
    h.write(&[0]);
    h.write(&(position as u64).to_le_bytes());
    h.write(name.as_bytes());
    h.write(&[0]);
    h.write(arguments.as_bytes());
    format!("{GENERATED_PREFIX}{:016x}", h.finish())
}

/// Whether `id` was generated here (and so must not be sent to a provider that never issued it).
pub fn is_generated(id: &str) -> bool {
    id.len() == GENERATED_PREFIX.len() + 16
        && id.starts_with(GENERATED_PREFIX)
        && id[GENERATED_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
}

/// FNV-1a, 64 bit.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinguish_position_name_and_arguments() {
        let a = stable_id("gemini", 0, "weather", r#"{"city":"Paris"}"#);
        assert_eq!(a, stable_id("gemini", 0, "weather", r#"{"city":"Paris"}"#));
        assert_ne!(a, stable_id("gemini", 1, "weather", r#"{"city":"Paris"}"#));
        assert_ne!(a, stable_id("gemini", 0, "weathe", r#"r{"city":"Paris"}"#));
        assert_ne!(a, stable_id("ollama", 0, "weather", r#"{"city":"Paris"}"#));
        assert!(is_generated(&a));
        assert!(!is_generated("call_abc"));
        // FNV-1a of the empty input is its offset basis: the algorithm is the documented one
        assert_eq!(Fnv::new().finish(), 0xcbf29ce484222325);
    }
}
