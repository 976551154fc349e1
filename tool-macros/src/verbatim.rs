//! Verbatim schemas (`parameters = r#"..."#` or `schema = "file.json"`): read at build time,
//! relative file `$ref`s inlined under `$defs`, and checked as JSON, as a JSON Schema (draft
//! 2020-12 meta-schema) and for the rules every provider needs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proc_macro2::Span;
use serde_json::{Map, Value};
use syn::LitStr;
use tool_wire::escape;

/// A verbatim schema ready to emit.
pub struct Verbatim {
    /// The schema, parsed.
    pub value: Value,
    /// The text to store: the author's bytes, or the rewritten document when files were inlined.
    pub text: String,
    /// When the stored text is a file's exact content: its absolute path (emitted as `include_str!`).
    pub include: Option<String>,
    /// Every file read, absolute; emitted as `include_str!` so cargo rebuilds when one changes.
    pub tracked: Vec<String>,
    /// The literal that named or held the schema, where errors point.
    pub span: Span,
}

/// A problem with a verbatim schema, reported at the schema's literal.
pub struct Problem(pub String);

/// Reads and checks the inline schema.
pub fn inline(lit: &LitStr) -> Result<Verbatim, Problem> {
    let text = lit.value();
    let value = parse_json(&text, "the `parameters` schema")?;
    if let Some((ptr, r)) = find_ref(&value, |r| !r.starts_with('#')) {
        let hint = if is_remote(r) {
            "remote references are never fetched; copy the referenced schema under \"$defs\" and use \"#/$defs/..\""
        } else {
            "an inline schema cannot reference files; use `schema = \"file.json\"` (its relative $refs are inlined) or move the definition under \"$defs\""
        };
        let what = if is_remote(r) { "a remote" } else { "a file" };
        return Err(Problem(format!(
            "the `parameters` schema has {what} $ref {r:?} at {ptr}: {hint}"
        )));
    }
    check_schema(&value, "the `parameters` schema")?;
    Ok(Verbatim {
        value,
        text,
        include: None,
        tracked: Vec::new(),
        span: lit.span(),
    })
}

/// Reads a schema file relative to `CARGO_MANIFEST_DIR`, inlining relative file `$ref`s.
pub fn file(lit: &LitStr) -> Result<Verbatim, Problem> {
    let rel = lit.value();
    let base = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| {
        Problem("CARGO_MANIFEST_DIR is not set; `schema = \"..\"` is resolved relative to the crate's manifest directory".into())
    })?;
    let path = Path::new(&base).join(&rel);
    let (text, value) = read(&path, &rel)?;
    let mut inliner = Inliner {
        defs: BTreeMap::new(),
        keys: BTreeMap::new(),
        tracked: vec![path.display().to_string()],
    };
    let mut rewritten = value.clone();
    inliner.rewrite(&mut rewritten, &path, None)?;
    let label = format!("schema file `{rel}`");
    let inlined = !inliner.defs.is_empty();
    let (text, value, include) = if inlined {
        let obj = rewritten
            .as_object_mut()
            .ok_or_else(|| Problem(format!("{label} must be a JSON object at the top")))?;
        let defs = obj
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(defs) = defs.as_object_mut() else {
            return Err(Problem(format!(
                "{label}: \"$defs\" must be an object, because the files it refers to are inlined under it; make it one (`\"$defs\": {{}}`)"
            )));
        };
        for (k, v) in std::mem::take(&mut inliner.defs) {
            defs.insert(k, v);
        }
        let text = serde_json::to_string_pretty(&rewritten).expect("a Value serializes");
        (text, rewritten, None)
    } else {
        (text, value, Some(path.display().to_string()))
    };
    check_schema(&value, &label)?;
    Ok(Verbatim {
        value,
        text,
        include,
        tracked: inliner.tracked,
        span: lit.span(),
    })
}

fn read(path: &Path, shown: &str) -> Result<(String, Value), Problem> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let _ = path;
        Problem(format!(
            "cannot read schema file `{shown}`: {}; the path is relative to the directory of the crate's Cargo.toml (CARGO_MANIFEST_DIR), or for a $ref, to the referring file",
            io_reason(&e)
        ))
    })?;
    let value = parse_json(&text, &format!("schema file `{shown}`"))?;
    Ok((text, value))
}

/// The error's kind without the OS error number, which differs between systems.
fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

fn parse_json(text: &str, what: &str) -> Result<Value, Problem> {
    serde_json::from_str::<Value>(text).map_err(|e| {
        Problem(format!(
            "{what} is not valid JSON: {} at line {}, column {}",
            strip_position(&e.to_string()),
            e.line(),
            e.column()
        ))
    })
}

/// serde_json appends " at line L column C"; we say it ourselves, relative to the schema text.
fn strip_position(msg: &str) -> &str {
    msg.find(" at line ").map_or(msg, |i| &msg[..i])
}

fn is_remote(r: &str) -> bool {
    let lower = r.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.contains("://")
}

/// The first `$ref` matching `pred`, with its JSON pointer.
fn find_ref(v: &Value, pred: impl Fn(&str) -> bool + Copy) -> Option<(String, &str)> {
    fn walk<'a>(v: &'a Value, at: &str, pred: &dyn Fn(&str) -> bool) -> Option<(String, &'a str)> {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref")
                    && pred(r)
                {
                    return Some((format!("{at}/$ref"), r));
                }
                m.iter()
                    .find_map(|(k, v)| walk(v, &format!("{at}/{}", escape(k)), pred))
            }
            Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, &format!("{at}/{i}"), pred)),
            _ => None,
        }
    }
    walk(v, "", &pred).map(|(p, r)| (if p.is_empty() { "/".into() } else { p }, r))
}

struct Inliner {
    /// `$defs` key to inlined document.
    defs: BTreeMap<String, Value>,
    /// Absolute file path to its `$defs` key.
    keys: BTreeMap<PathBuf, String>,
    tracked: Vec<String>,
}

impl Inliner {
    /// Rewrites every `$ref` in `v` (which lives in `file`, inlined under `prefix` when it is not
    /// the root document): file refs become `#/$defs/<key>...`, local refs of inlined files are
    /// re-rooted, remote refs are refused.
    fn rewrite(&mut self, v: &mut Value, file: &Path, prefix: Option<&str>) -> Result<(), Problem> {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get_mut("$ref") {
                    if is_remote(r) {
                        return Err(Problem(format!(
                            "remote $ref {r:?} in `{}`: remote references are never fetched; save the schema next to this file and reference it by relative path",
                            file.file_name().map_or_else(
                                || file.display().to_string(),
                                |f| f.to_string_lossy().into_owned()
                            )
                        )));
                    }
                    if let Some(frag) = r.strip_prefix('#') {
                        if let Some(p) = prefix {
                            *r = format!("#/$defs/{p}{frag}");
                        }
                    } else {
                        let (target, frag) = r.split_once('#').unwrap_or((r.as_str(), ""));
                        let dir = file.parent().unwrap_or(Path::new("."));
                        let target_path = dir.join(target);
                        let key = self.load(&target_path, target)?;
                        *r = format!("#/$defs/{key}{frag}");
                    }
                }
                for (_, child) in m.iter_mut() {
                    self.rewrite(child, file, prefix)?;
                }
                Ok(())
            }
            Value::Array(a) => a
                .iter_mut()
                .try_for_each(|child| self.rewrite(child, file, prefix)),
            _ => Ok(()),
        }
    }

    fn load(&mut self, path: &Path, shown: &str) -> Result<String, Problem> {
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if let Some(k) = self.keys.get(&canonical) {
            return Ok(k.clone());
        }
        let (_, mut value) = read(path, shown)?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("ref")
            .replace(['~', '/', '#'], "_");
        let mut key = stem.clone();
        let mut n = 2;
        while self.defs.contains_key(&key) || self.keys.values().any(|k| *k == key) {
            key = format!("{stem}_{n}");
            n += 1;
        }
        self.keys.insert(canonical, key.clone());
        self.tracked.push(path.display().to_string());
        if let Value::Object(m) = &mut value {
            // An inlined document lives inside ours: its own base URI and dialect no longer apply.
            m.remove("$id");
            m.remove("$schema");
        }
        self.rewrite(&mut value, path, Some(&key))?;
        self.defs.insert(key.clone(), value);
        Ok(key)
    }
}

/// Object at the top, and (with `schema-checks`) valid against the draft 2020-12 meta-schema.
fn check_schema(v: &Value, what: &str) -> Result<(), Problem> {
    let Some(obj) = v.as_object() else {
        return Err(Problem(format!(
            "{what} must be a JSON object at the top (`{{\"type\": \"object\", \"properties\": {{..}}}}`), found {}",
            kind(v)
        )));
    };
    meta_check(v, what)?;
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        return Err(Problem(format!(
            "{what} must describe an object: tool arguments are always a JSON object; add \"type\": \"object\" at the top"
        )));
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The property names and the `required` list of an object schema.
pub fn properties(schema: &Value) -> (Vec<String>, Vec<String>) {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let req = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    (props, req)
}

/// Whether the schema of the root property `name` may accept `null` (see
/// [`tool_wire::may_accept_null`]); a property the schema does not list takes anything.
pub fn accepts_null(schema: &Value, name: &str) -> bool {
    schema
        .get("properties")
        .and_then(|p| p.get(name))
        .is_none_or(|s| tool_wire::may_accept_null(schema, s))
}

/// Valid against the draft 2020-12 meta-schema.
#[cfg(feature = "schema-checks")]
fn meta_check(v: &Value, what: &str) -> Result<(), Problem> {
    match jsonschema::draft202012::meta::validate(v) {
        Ok(()) => Ok(()),
        Err(e) => {
            let at = e.instance_path().to_string();
            Err(Problem(format!(
                "{what} is not a valid JSON Schema (draft 2020-12): {e}{}",
                if at.is_empty() {
                    String::new()
                } else {
                    format!(" at {at}")
                }
            )))
        }
    }
}

/// Without `schema-checks`, registration checks the schema against the meta-schema.
#[cfg(not(feature = "schema-checks"))]
fn meta_check(_: &Value, _: &str) -> Result<(), Problem> {
    Ok(())
}

/// Without `schema-checks`, registration checks the examples against the schema.
#[cfg(not(feature = "schema-checks"))]
pub fn example_problems(_: &Value, _: &Value) -> Vec<String> {
    Vec::new()
}

/// Checks an example against the schema; the first few violations.
#[cfg(feature = "schema-checks")]
pub fn example_problems(schema: &Value, example: &Value) -> Vec<String> {
    match jsonschema::draft202012::new(schema) {
        Ok(v) => v
            .iter_errors(example)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect(),
        Err(e) => vec![format!("the schema does not compile: {e}")],
    }
}
