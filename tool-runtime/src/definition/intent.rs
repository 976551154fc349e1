//! The intent sentence of a call: the definition's template filled with the call's arguments,
//! quoted and bounded so that an argument cannot write the server's words.

use serde_json::Value;

use super::ToolDefinition;

impl ToolDefinition {
    /// Fills the intent template with the given arguments: `{query}` becomes the argument's value.
    /// Unknown placeholders are left as they are so nothing is silently hidden from the user.
    ///
    /// The sentence reads as the server's words, so a value must not be able to write any of
    /// them: a string is shown between `“` and `”`, with any double quotation mark inside it
    /// escaped (it cannot end the quotation early), numbers, booleans and null as they are, and
    /// arrays and objects as compact JSON. Every value is made [visible](crate::display::visible)
    /// (control and format characters as escapes) and cut after [`INTENT_VALUE_CHARS`]
    /// characters, followed by its full length (`“Meeting…” (200000 chars)`). Templates
    /// therefore put no quotation marks of their own around a placeholder.
    pub fn render_intent(&self, args: &Value) -> Option<String> {
        let template = self.intent.as_deref()?;
        let mut out = String::with_capacity(template.len() + 16);
        let mut rest = template;
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            match after.find('}') {
                Some(end) => {
                    let key = &after[..end];
                    match args.get(key) {
                        Some(value) => push_intent_value(&mut out, value),
                        None => {
                            out.push('{');
                            out.push_str(key);
                            out.push('}');
                        }
                    }
                    rest = &after[end + 1..];
                }
                None => {
                    out.push_str(&rest[start..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        Some(out)
    }
}

/// The most characters of one argument value an intent sentence shows; a longer value is cut
/// there and followed by its full length.
pub const INTENT_VALUE_CHARS: usize = 80;

/// `value` as an intent sentence shows it (see [`ToolDefinition::render_intent`]).
fn push_intent_value(out: &mut String, value: &Value) {
    out.push_str(&crate::display::quoted(value, INTENT_VALUE_CHARS, None));
}
