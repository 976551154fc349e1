//! The audit trail: one record per call, redacted, to every sink; and the activity feed as a
//! query over the stored records.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::definition::ToolDefinition;
use crate::error::ToolError;
use crate::hydrate::plain::Plain;

use crate::records::{AuditRecord, Change, ChangeEntry, Outcome};

/// The longest result summary kept in a record, in characters.
pub const SUMMARY_CHARS: usize = 200;

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// Receives every audit record. Must not block for long: it runs on the call's task.
pub trait AuditSink: Send + Sync {
    /// Takes one record.
    fn record(&self, record: &AuditRecord);

    /// Takes one record that every sink and the store share: a sink that keeps records keeps
    /// this one by its reference count instead of copying it. The executor calls this; by
    /// default it hands the record to [`AuditSink::record`].
    fn record_shared(&self, record: &Arc<AuditRecord>) {
        self.record(record);
    }
}

/// An audit sink that keeps records in memory (tests, benchmarks, short-lived tools).
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    records: Mutex<Vec<Arc<AuditRecord>>>,
}

impl MemoryAuditSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of every record so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        let records = self.records.lock().expect("audit sink poisoned");
        records.iter().map(|r| AuditRecord::clone(r)).collect()
    }

    /// How many records were received.
    pub fn len(&self) -> usize {
        self.records.lock().expect("audit sink poisoned").len()
    }

    /// Whether no record was received.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl AuditSink for MemoryAuditSink {
    fn record(&self, record: &AuditRecord) {
        self.records
            .lock()
            .expect("audit sink poisoned")
            .push(Arc::new(record.clone()));
    }

    fn record_shared(&self, record: &Arc<AuditRecord>) {
        self.records
            .lock()
            .expect("audit sink poisoned")
            .push(record.clone());
    }
}

/// Fragments that mark a key as secret wherever they appear in it, once the key is normalised
/// to `snake_case` (`privateKey`, `private-key` and `PRIVATE_KEY` all read `private_key`).
const SECRET_FRAGMENTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "signing_key",
    "encryption_key",
    "credential",
    "authorization",
    "cookie",
    "session_id",
    "sessionid",
    "session_key",
    "credit_card",
    "creditcard",
    "card_number",
    "cardnumber",
    "connection_string",
    "conn_str",
    "database_url",
    "db_url",
    "security_code",
    "social_security",
];

/// Short names that mark a key as secret only as a whole word of it (`pin` and `user_pin`, not
/// `spinner`; `auth` and `auth_header`, not `author`).
const SECRET_WORDS: &[&str] = &[
    "pwd", "pin", "otp", "totp", "ssn", "cvv", "cvc", "jwt", "dsn", "auth", "bearer", "iban",
    "mfa", "2fa",
];

/// Whether an argument key names a secret: by fragment anywhere in the key, or by one of the
/// short names as a whole word of it, in any of `snake_case`, `camelCase`, `kebab-case` or
/// `SCREAMING_CASE`.
pub fn is_secret_key(key: &str) -> bool {
    // every argument key of every call is asked about (for the audit record and again for the
    // result summary), so the usual key, short and ASCII, is normalised on the stack
    let mut buf = [0u8; 2 * SHORT_KEY];
    match snake_case_short(key, &mut buf) {
        Some(normal) => is_secret_normal(normal),
        None => is_secret_normal(snake_case(key).as_bytes()),
    }
}

/// The longest key normalised on the stack (its `snake_case` form is at most twice as long).
const SHORT_KEY: usize = 32;

/// Whether a key already in lower `snake_case` names a secret.
fn is_secret_normal(normal: &[u8]) -> bool {
    let contains = |fragment: &[u8]| {
        fragment.len() <= normal.len() && normal.windows(fragment.len()).any(|w| w == fragment)
    };
    SECRET_FRAGMENTS.iter().any(|f| contains(f.as_bytes()))
        || normal
            .split(|&b| b == b'_')
            .any(|word| SECRET_WORDS.iter().any(|w| w.as_bytes() == word))
}

/// [`snake_case`] of an ASCII key of at most [`SHORT_KEY`] bytes, written into `buf`; `None`
/// for any other key. For ASCII the two agree byte for byte.
fn snake_case_short<'a>(key: &str, buf: &'a mut [u8; 2 * SHORT_KEY]) -> Option<&'a [u8]> {
    if key.len() > SHORT_KEY || !key.is_ascii() {
        return None;
    }
    let mut len = 0;
    let mut prev_lower = false;
    for c in key.bytes() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower {
                buf[len] = b'_';
                len += 1;
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            buf[len] = c.to_ascii_lowercase();
            len += 1;
        } else {
            if len == 0 || buf[len - 1] != b'_' {
                buf[len] = b'_';
                len += 1;
            }
            prev_lower = false;
        }
    }
    Some(&buf[..len])
}

/// `key` in lower `snake_case`: a word starts at each upper-case letter that follows a lower-case
/// letter or digit, and at every character that is not a letter or digit.
fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                out.push('_');
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            out.extend(c.to_lowercase());
        } else {
            if !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    out
}

/// A string value whose shape gives it away as a credential, whatever its key: the value with
/// the secret part replaced by [`REDACTED`], or `None` when nothing in it looks secret.
///
/// Recognised: an `Authorization`-style `Bearer`/`Basic` credential, the user-info of a URL
/// (`postgres://user:password@host`), a PEM private key block, a JSON Web Token, and tokens with
/// a well-known issuer prefix (OpenAI/Stripe `sk-`/`sk_live_`, GitHub `ghp_`/`github_pat_`,
/// Slack `xoxb-`, AWS `AKIA`, GitLab `glpat-`, Google `AIza`).
pub fn redact_shapes(text: &str) -> Option<String> {
    // a finder made once: `str::contains` prepares its searcher on every call, which costs more
    // than scanning the short strings most arguments are
    static PEM_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("PRIVATE KEY-----"));
    if PEM_KEY.find(text.as_bytes()).is_some() {
        return Some(REDACTED.to_owned());
    }
    // every string of every call's arguments and result comes through here, and almost none has
    // anything to hide: the redacted copy is made from the first word that changes
    let mut out: Option<String> = None;
    let mut after_scheme = false;
    let mut offset = 0;
    for (i, word) in text.split(' ').enumerate() {
        let replaced: Option<Cow<'_, str>> = if after_scheme && !word.is_empty() {
            after_scheme = false;
            Some(Cow::Borrowed(REDACTED))
        } else {
            after_scheme = ["bearer", "basic", "token"]
                .iter()
                .any(|scheme| word.eq_ignore_ascii_case(scheme));
            if let Some(redacted) = url_user_info(word) {
                Some(Cow::Owned(redacted))
            } else if looks_like_token(word) {
                Some(Cow::Borrowed(REDACTED))
            } else {
                None
            }
        };
        match (&mut out, replaced) {
            (None, None) => {}
            (None, Some(r)) => {
                // the words before this one, with the space that follows them
                let mut o = String::with_capacity(text.len());
                o.push_str(&text[..offset]);
                o.push_str(&r);
                out = Some(o);
            }
            (Some(o), r) => {
                if i > 0 {
                    o.push(' ');
                }
                o.push_str(r.as_deref().unwrap_or(word));
            }
        }
        offset += word.len() + 1;
    }
    out
}

/// `scheme://user:password@host...` with the user-info replaced.
fn url_user_info(word: &str) -> Option<String> {
    let bytes = word.as_bytes();
    let scheme_end = memchr::memchr_iter(b':', bytes).find(|&i| bytes[i..].starts_with(b"://"))?;
    let rest = &word[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    if !rest[..at].contains(':') {
        // a user name alone is not a secret
        return None;
    }
    Some(format!(
        "{}{REDACTED}{}",
        &word[..scheme_end + 3],
        &rest[at..]
    ))
}

fn looks_like_token(word: &str) -> bool {
    // punctuation around a word, and the marks an intent sentence quotes and cuts a value with
    let word = word.trim_matches(|c: char| {
        matches!(
            c,
            '"' | '\'' | ',' | ';' | '(' | ')' | '\u{201c}' | '\u{201d}' | '\u{2026}'
        )
    });
    const PREFIXES: &[&str] = &[
        "sk-",
        "sk_live_",
        "sk_test_",
        "rk_live_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "xoxs-",
        "glpat-",
        "AIza",
        "AKIA",
        "ASIA",
    ];
    let long_enough = word.len() >= 16;
    let token_chars = word
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'=' | b'/' | b'+'));
    if long_enough && token_chars && PREFIXES.iter().any(|p| word.starts_with(p)) {
        return true;
    }
    // a JSON Web Token: three base64url parts, the first two JSON objects (`eyJ` is `{"`)
    let mut parts = word.split('.');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some(h), Some(p), Some(_), None) if h.starts_with("eyJ") && p.starts_with("eyJ") && long_enough
    )
}

/// The arguments with every secret value replaced by [`REDACTED`], at any depth: keys that look
/// like secrets and the fields the tool marks sensitive.
pub fn redact(arguments: &Value, definition: &ToolDefinition) -> Value {
    redact_with(arguments, &definition.sensitive)
}

/// Redacts keys that look like secrets, for arguments of a call whose tool is unknown.
pub(crate) fn redact_with_keys(arguments: &Value) -> Value {
    redact_with(arguments, &[])
}

/// [`redact`] when it hides something, `None` when the arguments have nothing to hide (the
/// usual call): they are then their own redacted form, and no copy is built to find that out.
/// `plan` names the top-level keys known not to be secret, which are then not tested again.
pub(crate) fn redact_if_needed(
    arguments: &Value,
    definition: &ToolDefinition,
    plan: &KeyPlan,
) -> Option<Value> {
    let sensitive = &definition.sensitive;
    let hides = match arguments {
        Value::Object(map) => map.iter().any(|(k, v)| {
            (!plan.is_plain(k) && (is_secret_key(k) || sensitive.iter().any(|s| s == k)))
                || hides_something(v, sensitive)
        }),
        other => hides_something(other, sensitive),
    };
    hides.then(|| redact_with(arguments, sensitive))
}

/// [`redact_if_needed`]'s test of typed arguments kept as a [`Plain`] tree: whether they may
/// hide something. An object's repeated key is tested with every value it was given, the
/// overwritten ones too, so a tree that may hide something is made into JSON and redacted by
/// [`redact_if_needed`], which decides exactly.
pub(crate) fn plain_may_hide(
    arguments: &Plain,
    definition: &ToolDefinition,
    plan: &KeyPlan,
) -> bool {
    let sensitive = &definition.sensitive;
    match arguments {
        Plain::Object(entries) => entries.iter().any(|(k, v)| {
            (!plan.is_plain(k) && (is_secret_key(k) || sensitive.iter().any(|s| s == k)))
                || plain_hides(v, sensitive)
        }),
        other => plain_hides(other, sensitive),
    }
}

/// [`hides_something`] of a [`Plain`] tree.
fn plain_hides(value: &Plain, sensitive: &[Cow<'static, str>]) -> bool {
    match value {
        Plain::Object(entries) => entries.iter().any(|(k, v)| {
            is_secret_key(k) || sensitive.iter().any(|s| s == k) || plain_hides(v, sensitive)
        }),
        Plain::Array(items) => items.iter().any(|v| plain_hides(v, sensitive)),
        Plain::String(text) => redact_shapes(text).is_some(),
        Plain::Null | Plain::Bool(_) | Plain::Number(_) => false,
    }
}

/// The top-level argument keys of one tool that name no secret: the properties its schema
/// declares that neither look like a secret ([`is_secret_key`]) nor are marked sensitive. Made
/// once per tool, so that a call's arguments are tested for secret keys only where a key is
/// unknown; their values are tested on every call all the same.
#[derive(Debug, Default)]
pub(crate) struct KeyPlan {
    plain: Box<[Box<str>]>,
}

impl KeyPlan {
    pub(crate) fn of(definition: &ToolDefinition) -> Self {
        #[derive(serde::Deserialize)]
        struct Schema {
            #[serde(default)]
            properties: serde_json::Map<String, Value>,
        }
        let Ok(schema) = serde_json::from_str::<Schema>(definition.parameters.get()) else {
            return KeyPlan::default();
        };
        let plain = schema
            .properties
            .keys()
            .filter(|k| !is_secret_key(k) && !definition.sensitive.iter().any(|s| s == *k))
            .map(|k| k.as_str().into())
            .collect();
        KeyPlan { plain }
    }

    /// Whether `key` is known not to be secret.
    fn is_plain(&self, key: &str) -> bool {
        self.plain.iter().any(|p| **p == *key)
    }
}

/// Whether [`redact_with`] would change `value`: the same tests, without building anything.
fn hides_something(value: &Value, sensitive: &[Cow<'static, str>]) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| {
            is_secret_key(k) || sensitive.iter().any(|s| s == k) || hides_something(v, sensitive)
        }),
        Value::Array(items) => items.iter().any(|v| hides_something(v, sensitive)),
        Value::String(text) => redact_shapes(text).is_some(),
        _ => false,
    }
}

fn redact_with(value: &Value, sensitive: &[Cow<'static, str>]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let hide = is_secret_key(k) || sensitive.iter().any(|s| s == k);
                    let v = if hide {
                        Value::String(REDACTED.into())
                    } else {
                        redact_with(v, sensitive)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_with(v, sensitive)).collect())
        }
        Value::String(text) => Value::String(redact_shapes(text).unwrap_or_else(|| text.clone())),
        other => other.clone(),
    }
}

/// Secret values shorter than this are not searched for in free text (a one-character password
/// would otherwise blank every occurrence of that character); they are still hidden wherever
/// their field can be located: under their key in a result, and in a validation message whose
/// pointer names their field.
pub const MIN_SCRUBBED_CHARS: usize = 4;

/// What must not reach the audit trail from one call: the tool's sensitive field names and the
/// arguments the call was made with (the original and any edit), from which the values of
/// secret fields are found again wherever they are echoed (a result, an error message quoting
/// an invalid value).
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    sensitive: Vec<Cow<'static, str>>,
    arguments: Vec<Value>,
}

impl Secrets {
    /// The secrets of a call of the tool `definition` (unknown tool: `None`, and only keys that
    /// look like secrets count).
    pub fn new(definition: Option<&ToolDefinition>) -> Self {
        Secrets {
            sensitive: definition.map(|d| d.sensitive.clone()).unwrap_or_default(),
            arguments: Vec::new(),
        }
    }

    /// Takes the sensitive field names of the tool `definition`.
    pub(crate) fn use_definition(&mut self, definition: &ToolDefinition) {
        // most tools mark no field sensitive: nothing to copy then
        if self.sensitive.is_empty() && definition.sensitive.is_empty() {
            return;
        }
        self.sensitive = definition.sensitive.clone();
    }

    /// Adds arguments the call was made with (the model's, or a person's edit).
    pub fn add_arguments(&mut self, arguments: &Value) {
        if !self.arguments.contains(arguments) {
            self.arguments.push(arguments.clone());
        }
    }

    fn is_sensitive(&self, key: &str) -> bool {
        is_secret_key(key) || self.sensitive.iter().any(|s| s == key)
    }

    /// Whether a JSON pointer into the arguments goes through a secret or sensitive field.
    fn is_sensitive_pointer(&self, pointer: &str) -> bool {
        pointer
            .split('/')
            .skip(1)
            .any(|seg| self.is_sensitive(&tool_wire::unescape(seg)))
    }

    /// The texts to search for: every scalar under a secret or sensitive key of the arguments,
    /// as written and as escaped inside JSON text, longest first (so that a secret containing
    /// another is replaced whole).
    fn literals(&self) -> Vec<String> {
        fn under(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::String(s) => {
                    out.push(s.clone());
                    let escaped = serde_json::to_string(s).unwrap_or_default();
                    out.push(escaped[1..escaped.len() - 1].to_owned());
                }
                Value::Number(n) => out.push(n.to_string()),
                Value::Array(items) => items.iter().for_each(|i| under(i, out)),
                Value::Object(map) => map.values().for_each(|i| under(i, out)),
                Value::Bool(_) | Value::Null => {}
            }
        }
        fn walk(secrets: &Secrets, v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(map) => {
                    for (k, v) in map {
                        if secrets.is_sensitive(k) {
                            under(v, out);
                        } else {
                            walk(secrets, v, out);
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|i| walk(secrets, i, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for a in &self.arguments {
            walk(self, a, &mut out);
        }
        out.retain(|s| s.chars().count() >= MIN_SCRUBBED_CHARS);
        out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        out.dedup();
        out
    }

    /// `text` with every secret value of the arguments replaced by [`REDACTED`].
    pub fn scrub_text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in self.literals() {
            if text.contains(&secret) {
                text = text.replace(&secret, REDACTED);
            }
        }
        text
    }

    /// A value (a tool's result) with secret and sensitive keys redacted at any depth, and secret
    /// values of the arguments echoed anywhere else in its strings replaced.
    pub fn redact_value(&self, value: &Value) -> Value {
        let literals = self.literals();
        fn strings(v: Value, literals: &[String]) -> Value {
            match v {
                Value::String(mut s) => {
                    for secret in literals {
                        if s.contains(secret.as_str()) {
                            s = s.replace(secret.as_str(), REDACTED);
                        }
                    }
                    Value::String(s)
                }
                Value::Array(items) => {
                    Value::Array(items.into_iter().map(|i| strings(i, literals)).collect())
                }
                Value::Object(map) => Value::Object(
                    map.into_iter()
                        .map(|(k, v)| (k, strings(v, literals)))
                        .collect(),
                ),
                other => other,
            }
        }
        strings(redact_with(value, &self.sensitive), &literals)
    }

    /// A change as a store may keep it: the values of an entry whose label names a secret or
    /// sensitive field redacted, and in every value and sentence what [`Secrets::redact_value`]
    /// and [`Secrets::redact_text`] redact.
    pub fn redact_change(&self, change: Change) -> Change {
        let hidden = |label: &str| is_secret_key(label) || self.is_sensitive(label);
        let value = |label: &str, v: Value| {
            if hidden(label) && !v.is_null() {
                Value::String(REDACTED.into())
            } else {
                self.redact_value(&v)
            }
        };
        change.map(|entry| match entry {
            ChangeEntry::Add {
                label,
                value: v,
                chars,
            } => ChangeEntry::Add {
                value: value(&label, v),
                label: self.redact_text(&label),
                chars,
            },
            ChangeEntry::Remove {
                label,
                value: v,
                chars,
            } => ChangeEntry::Remove {
                value: value(&label, v),
                label: self.redact_text(&label),
                chars,
            },
            ChangeEntry::Replace { label, old, new } => ChangeEntry::Replace {
                old: value(&label, old),
                new: value(&label, new),
                label: self.redact_text(&label),
            },
            ChangeEntry::Touch { count, what } => ChangeEntry::Touch {
                count,
                what: self.redact_text(&what),
            },
            ChangeEntry::Note { text } => ChangeEntry::Note {
                text: self.redact_text(&text),
            },
            ChangeEntry::Json { value } => ChangeEntry::Json {
                value: self.redact_value(&value),
            },
        })
    }

    /// The error as the audit trail may keep it: a violation of a secret or sensitive field
    /// loses its message (validation messages quote the offending value), a violation elsewhere
    /// has any secret inside the value it quotes redacted, and secret values are removed from
    /// the message, the recovery hint and the details.
    pub fn scrub_error(&self, error: &ToolError) -> ToolError {
        let mut e = error.clone();
        for v in &mut e.violations {
            let scrubbed = if self.is_sensitive_pointer(&v.pointer) {
                format!("the value of a sensitive field is not valid ({REDACTED})")
            } else {
                let mut m = v.message.clone();
                // the message may quote the instance at its pointer, secrets inside included
                for args in &self.arguments {
                    if let Some(instance) = args.pointer(&v.pointer) {
                        let redacted = redact_with(instance, &self.sensitive);
                        if &redacted != instance {
                            m = m.replace(&instance.to_string(), &redacted.to_string());
                        }
                    }
                }
                m
            };
            if scrubbed != v.message {
                e.message = e.message.replace(&v.message, &scrubbed);
                v.message = scrubbed;
            }
        }
        e.message = self.scrub_text(&e.message);
        for v in &mut e.violations {
            v.message = self.scrub_text(&v.message);
        }
        e.recover_action = e.recover_action.map(|r| self.scrub_text(&r));
        e.details = self.redact_value(&e.details);
        e
    }

    /// The outcome as a store may keep it once its operation is decided: a result's secret and
    /// sensitive keys and echoed secret values redacted, an error scrubbed as the audit trail
    /// keeps it, a reason without secret values.
    pub fn redact_outcome(&self, outcome: &Outcome) -> Outcome {
        match outcome {
            Outcome::Success { value, truncated } => Outcome::Success {
                value: self.redact_value(value),
                truncated: *truncated,
            },
            Outcome::Error { error } => Outcome::Error {
                error: Box::new(self.scrub_error(error)),
            },
            Outcome::Denied { reason, by } => Outcome::Denied {
                reason: self.scrub_text(reason),
                by: *by,
            },
            Outcome::Pending {
                operation_id,
                preview,
            } => {
                let mut preview = preview.clone();
                preview.arguments = self.redact_value(&preview.arguments);
                preview.intent = self.redact_text(&preview.intent);
                preview.change = preview.change.map(|c| self.redact_change(c));
                Outcome::Pending {
                    operation_id: operation_id.clone(),
                    preview,
                }
            }
        }
    }

    /// `text` without the secret values of the arguments and without words shaped like
    /// credentials ([`redact_shapes`]).
    pub fn redact_text(&self, text: &str) -> String {
        let text = self.scrub_text(text);
        redact_shapes(&text).unwrap_or(text)
    }

    /// The [`SUMMARY_CHARS`] summary of an outcome for the audit record, secrets removed
    /// before it is cut (so that no prefix of a secret survives at the cut).
    pub fn summary(&self, outcome: &Outcome) -> String {
        let text = match outcome {
            // a number, a boolean or null has no key to hide and no text to scrub
            Outcome::Success {
                value: Value::Number(n),
                ..
            } => match (n.as_i64(), n.as_u64()) {
                // an integer's own `to_string` writes its digits without a formatter
                (Some(i), _) => i.to_string(),
                (None, Some(u)) => u.to_string(),
                _ => n.to_string(),
            },
            Outcome::Success {
                value: v @ (Value::Bool(_) | Value::Null),
                ..
            } => v.to_string(),
            Outcome::Success { value, .. } => match crate::content::blocks(value) {
                // what the blocks are, never what they carry
                Some(blocks) => self.scrub_text(&crate::content::describe(&blocks)),
                None => self.redact_value(value).to_string(),
            },
            Outcome::Error { error } => {
                let e = self.scrub_error(error);
                format!("{}: {}", e.code, e.message)
            }
            Outcome::Denied { reason, .. } => self.scrub_text(reason),
            Outcome::Pending { operation_id, .. } => {
                return format!("pending operation {operation_id}");
            }
        };
        if text.len() <= SUMMARY_CHARS {
            // no more bytes than the limit has no more characters either: kept as it is
            return text;
        }
        summarize(&text, SUMMARY_CHARS)
    }
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn summarize(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_at_any_depth_and_sensitive_fields_too() {
        let mut def = ToolDefinition::new("t", "d", &json!({"type": "object"}));
        def.sensitive = vec!["ssn".into()];
        let args = json!({
            "query": "x",
            "password": "hunter2",
            "login": {"API_KEY": "k", "Bearer_Token": "t", "user": "bob"},
            "auth": {"user": "bob"},
            "items": [{"client_secret": "s"}],
            "ssn": "123"
        });
        let r = redact(&args, &def);
        assert_eq!(r["query"], "x");
        assert_eq!(r["password"], REDACTED);
        assert_eq!(r["login"]["API_KEY"], REDACTED);
        assert_eq!(r["login"]["Bearer_Token"], REDACTED);
        assert_eq!(r["login"]["user"], "bob");
        assert_eq!(
            r["auth"], REDACTED,
            "a secret key hides everything under it"
        );
        assert_eq!(r["items"][0]["client_secret"], REDACTED);
        assert_eq!(r["ssn"], REDACTED);
        assert!(!r.to_string().contains("hunter2"));
    }

    #[test]
    fn summaries_of_scalars_and_short_text_are_the_value_itself() {
        let mut s = Secrets::new(None);
        s.add_arguments(&json!({"pin_code": 1234, "password": "hunter2-long"}));
        let ok = |value| Outcome::Success {
            value,
            truncated: false,
        };
        assert_eq!(s.summary(&ok(json!(5))), "5");
        assert_eq!(s.summary(&ok(json!(-2.5))), "-2.5");
        assert_eq!(s.summary(&ok(json!(true))), "true");
        assert_eq!(s.summary(&ok(Value::Null)), "null");
        assert_eq!(
            s.summary(&ok(json!("is hunter2-long"))),
            "\"is [REDACTED]\""
        );
        let long = s.summary(&ok(json!("é".repeat(300))));
        assert_eq!(long.chars().count(), SUMMARY_CHARS);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn the_key_plan_skips_only_declared_keys_that_name_no_secret() {
        let schema = json!({"type": "object", "properties": {
            "query": {"type": "string"},
            "api_key": {"type": "string"},
            "ssn": {"type": "string"},
            "note": {"type": "string", "writeOnly": true},
            "filter": {"type": "object"}
        }});
        let mut def = ToolDefinition::new("t", "d", &schema);
        def.sensitive = vec!["ssn".into(), "note".into()];
        let plan = KeyPlan::of(&def);
        assert!(plan.is_plain("query") && plan.is_plain("filter"));
        for secret in ["api_key", "ssn", "note", "password", "undeclared"] {
            assert!(!plan.is_plain(secret), "{secret}");
        }
        // plain keys: nothing to hide, no copy
        let plain = json!({"query": "weather", "filter": {"city": "Oslo"}});
        assert_eq!(redact_if_needed(&plain, &def, &plan), None);
        // what the plan does not cover is still found: secret and sensitive keys, a secret key
        // under a plain one, a value shaped like a credential under a plain key
        for (args, hidden) in [
            (json!({"query": "x", "api_key": "k"}), "/api_key"),
            (json!({"query": "x", "ssn": "1"}), "/ssn"),
            (json!({"filter": {"password": "p"}}), "/filter/password"),
            (json!({"query": "sk-0123456789abcdefghij"}), "/query"),
        ] {
            let r = redact_if_needed(&args, &def, &plan).expect("hides something");
            assert_eq!(r.pointer(hidden).unwrap(), REDACTED, "{args}");
        }
        // a schema without properties plans nothing, and everything is tested
        let bare = KeyPlan::of(&ToolDefinition::new("t", "d", &json!({"type": "object"})));
        assert!(!bare.is_plain("query"));
    }

    #[test]
    fn secrets_are_found_again_in_text_results_and_errors() {
        use crate::error::{ErrorCode, Violation};
        let mut def = ToolDefinition::new("t", "d", &json!({"type": "object"}));
        def.sensitive = vec!["ssn".into()];
        let mut s = Secrets::new(Some(&def));
        s.add_arguments(
            &json!({"password": "a\"b-long", "ssn": "123-45", "pin_code": 7, "q": "x"}),
        );
        // short values are not searched for in free text (they would blank ordinary text)
        assert_eq!(s.scrub_text("the answer is 7"), "the answer is 7");
        // a secret is found raw and as escaped inside JSON text
        assert_eq!(s.scrub_text("pw a\"b-long"), "pw [REDACTED]");
        assert_eq!(
            s.scrub_text(r#"{"x":"a\"b-long"}"#),
            r#"{"x":"[REDACTED]"}"#
        );
        let v = s.redact_value(&json!({"ssn": "1", "echo": "your ssn 123-45", "n": 1}));
        assert_eq!(
            v,
            json!({"ssn": REDACTED, "echo": "your ssn [REDACTED]", "n": 1})
        );
        // a violation of a secret field loses its message, wherever it appears
        let e = ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            "bad: /ssn: 123-45 is wrong; /q: x",
        )
        .with_violations([
            Violation::new("/ssn", "123-45 is wrong"),
            Violation::new("/q", "x"),
        ]);
        let scrubbed = s.scrub_error(&e);
        assert!(!scrubbed.message.contains("123-45"), "{}", scrubbed.message);
        assert!(
            scrubbed.message.ends_with("; /q: x"),
            "{}",
            scrubbed.message
        );
        assert_eq!(scrubbed.violations[1].message, "x");
    }

    #[test]
    fn short_keys_are_normalised_as_long_ones_are() {
        let keys = [
            "privateKey",
            "private-key",
            "PRIVATE_KEY",
            "__a__B",
            "userPIN",
            "x2FA",
            "a.b c",
            "AuthorName",
            "spinner",
            "",
            "_",
            "9lives",
            "ÄpiKey",
            "api_key_with_a_long_suffix_x",
        ];
        for key in keys {
            let mut buf = [0u8; 2 * SHORT_KEY];
            if let Some(short) = snake_case_short(key, &mut buf) {
                assert_eq!(short, snake_case(key).as_bytes(), "{key:?}");
            }
            let by_string = {
                let normal = snake_case(key);
                SECRET_FRAGMENTS.iter().any(|f| normal.contains(f))
                    || normal.split('_').any(|word| SECRET_WORDS.contains(&word))
            };
            assert_eq!(is_secret_key(key), by_string, "{key:?}");
        }
        let long = format!("{}Token", "x".repeat(40));
        assert!(snake_case_short(&long, &mut [0u8; 2 * SHORT_KEY]).is_none());
        assert!(is_secret_key(&long));
    }

    #[test]
    fn summaries_are_cut_on_character_boundaries() {
        assert_eq!(summarize("short", 200), "short");
        let long = "é".repeat(300);
        let s = summarize(&long, 200);
        assert_eq!(s.chars().count(), 200);
        assert!(s.ends_with('…'));
        assert_eq!(summarize(&"a".repeat(200), 200), "a".repeat(200));
    }
}
