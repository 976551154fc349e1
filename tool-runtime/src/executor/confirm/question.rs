//! A tool's question in the terminal: the message, then one prompt per field of the form, each
//! saying what it takes (its choices, its bounds, its default). An answer that does not fit is
//! asked again with the reason; an empty line takes the default, or leaves an optional field out.
//! `!decline` and `!cancel` refuse to answer; a closed input cancels.

use std::io::Write;
use std::time::Instant;

use serde_json::{Map, Value};

use super::terminal::{Io, read_line_or};
use crate::display::{visible, visible_lines};
use crate::host::{Form, Reply};

/// What the person is told when the question's time runs out.
const GONE: &str = "the question is withdrawn.";

/// Runs the dialogue; `None` when the deadline passed.
pub(super) async fn ask(io: &mut Io, deadline: Instant, form: &Form) -> Option<Reply<Value>> {
    let _ = io.output.write_all(intro(form).as_bytes());
    let empty = Map::new();
    let fields = form
        .schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = form
        .schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut answer = Map::new();
    for (name, field) in fields {
        let needed = required.contains(&name.as_str());
        let prompt = prompt(name, field, needed);
        loop {
            let Some(line) = read_line_or(io, deadline, &prompt, GONE).await? else {
                return Some(Reply::Cancelled);
            };
            match line.trim() {
                "!decline" => return Some(Reply::Declined),
                "!cancel" => return Some(Reply::Cancelled),
                _ => {}
            }
            match value_of(field, &line, needed) {
                Ok(Some(value)) => {
                    answer.insert(name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(problem) => {
                    let _ = writeln!(io.output, "{problem}");
                }
            }
        }
    }
    Some(Reply::Accepted(Value::Object(answer)))
}

/// The question's heading: its message and how to answer, every part made visible (the message
/// is the tool's, and may carry what a model wrote).
fn intro(form: &Form) -> String {
    let mut out = String::from("\nA tool asks:\n");
    for line in visible_lines(&form.message).lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(about) = form.schema.get("description").and_then(Value::as_str) {
        out.push_str(&format!("  ({})\n", visible_lines(about)));
    }
    out.push_str(
        "Answer each field; an empty line takes the default. Type !decline to refuse, \
         !cancel to dismiss.\n",
    );
    out
}

/// The prompt of one field: its title, what it takes, its default.
fn prompt(name: &str, field: &Value, required: bool) -> String {
    let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
    // the description on its own line above, so the prompt ends where the answer is typed
    let mut out = match field.get("description").and_then(Value::as_str) {
        Some(about) => format!("  {}\n", visible(about)),
        None => String::new(),
    };
    out.push_str(&visible(title));
    let mut takes = Vec::new();
    let choices = choices(field);
    if !choices.is_empty() {
        let listed: Vec<String> = choices
            .iter()
            .enumerate()
            .map(|(i, (value, title))| match title {
                Some(title) => format!("{}) {} [{}]", i + 1, visible(title), visible(value)),
                None => format!("{}) {}", i + 1, visible(value)),
            })
            .collect();
        let several = field.get("type").and_then(Value::as_str) == Some("array");
        takes.push(if several {
            format!("any of {}, separated by commas", listed.join(", "))
        } else {
            format!("one of {}", listed.join(", "))
        });
    } else {
        match field.get("type").and_then(Value::as_str) {
            Some("boolean") => takes.push("yes/no".to_owned()),
            Some(kind @ ("number" | "integer")) => {
                let mut bound = kind.to_owned();
                if let Some(min) = field.get("minimum") {
                    bound.push_str(&format!(", at least {min}"));
                }
                if let Some(max) = field.get("maximum") {
                    bound.push_str(&format!(", at most {max}"));
                }
                takes.push(bound);
            }
            _ => {
                if let Some(format) = field.get("format").and_then(Value::as_str) {
                    takes.push(format.to_owned());
                }
            }
        }
    }
    if let Some(default) = field.get("default") {
        takes.push(format!("default {}", shown(default)));
    } else if !required {
        takes.push("optional".to_owned());
    }
    if !takes.is_empty() {
        out.push_str(&format!(" ({})", takes.join("; ")));
    }
    out.push_str(": ");
    out
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => visible(s).into_owned(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        other => visible(&other.to_string()).into_owned(),
    }
}

/// A field's choices as (value, title): `enum` (with `enumNames`), `oneOf` of titled constants,
/// or an array's items of either kind.
fn choices(field: &Value) -> Vec<(String, Option<String>)> {
    let field = match field.get("type").and_then(Value::as_str) {
        Some("array") => field.get("items").unwrap_or(&Value::Null),
        _ => field,
    };
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Some((v.as_str()?.to_owned(), title))
            })
            .collect();
    }
    let options = field
        .get("oneOf")
        .or_else(|| field.get("anyOf"))
        .and_then(Value::as_array);
    options
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let value = o.get("const")?.as_str()?.to_owned();
            let title = o.get("title").and_then(Value::as_str);
            Some((
                value.clone(),
                title.filter(|t| *t != value).map(str::to_owned),
            ))
        })
        .collect()
}

/// The value a line gives a field: `Ok(None)` leaves an optional field out; an error is said to
/// the person, who answers again.
fn value_of(field: &Value, line: &str, required: bool) -> Result<Option<Value>, String> {
    let text = line.trim();
    if text.is_empty() {
        return match field.get("default") {
            Some(default) => Ok(Some(default.clone())),
            None if required => Err("This field needs an answer.".to_owned()),
            None => Ok(None),
        };
    }
    let choices = choices(field);
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    if !choices.is_empty() {
        let pick = |text: &str| -> Result<Value, String> {
            let text = text.trim();
            let found = text
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| choices.get(i))
                .or_else(|| {
                    choices.iter().find(|(value, title)| {
                        value.eq_ignore_ascii_case(text)
                            || title
                                .as_deref()
                                .is_some_and(|t| t.eq_ignore_ascii_case(text))
                    })
                });
            found
                .map(|(value, _)| Value::String(value.clone()))
                .ok_or_else(|| format!("{:?} is not one of the choices.", visible(text)))
        };
        if kind == "array" {
            let picked = text.split(',').map(pick).collect::<Result<Vec<_>, _>>()?;
            return bounded_count(field, picked.len()).map(|()| Some(Value::Array(picked)));
        }
        return pick(text).map(Some);
    }
    match kind {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
            "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
            _ => Err("Please answer yes or no.".to_owned()),
        },
        "integer" => {
            let n: i64 = text
                .parse()
                .map_err(|_| "Please answer a whole number.".to_owned())?;
            within(field, n as f64).map(|()| Some(Value::from(n)))
        }
        "number" => {
            let n: f64 = text
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite())
                .ok_or_else(|| "Please answer a number.".to_owned())?;
            within(field, n)?;
            Ok(serde_json::Number::from_f64(n).map(Value::Number))
        }
        _ => {
            let chars = line.chars().count() as u64;
            let min = field.get("minLength").and_then(Value::as_u64);
            let max = field.get("maxLength").and_then(Value::as_u64);
            if min.is_some_and(|m| chars < m) || max.is_some_and(|m| chars > m) {
                return Err(format!(
                    "Please answer with {} to {} characters.",
                    min.unwrap_or(0),
                    max.map_or("any number of".to_owned(), |m| m.to_string())
                ));
            }
            Ok(Some(Value::String(line.to_owned())))
        }
    }
}

fn within(field: &Value, n: f64) -> Result<(), String> {
    let min = field.get("minimum").and_then(Value::as_f64);
    let max = field.get("maximum").and_then(Value::as_f64);
    if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
        return Err(format!(
            "Please answer between {} and {}.",
            min.map_or("any".to_owned(), |m| m.to_string()),
            max.map_or("any".to_owned(), |m| m.to_string())
        ));
    }
    Ok(())
}

fn bounded_count(field: &Value, n: usize) -> Result<(), String> {
    let min = field.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = field.get("maxItems").and_then(Value::as_u64);
    if n < min || max.is_some_and(|m| n as u64 > m) {
        return Err(format!(
            "Please pick {} to {} choices.",
            min,
            max.map_or("any number of".to_owned(), |m| m.to_string())
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_line_becomes_the_fields_value_or_a_reason_to_ask_again() {
        let size = json!({"type": "string", "enum": ["small", "large"], "default": "large"});
        assert_eq!(value_of(&size, "", true), Ok(Some(json!("large"))));
        assert_eq!(value_of(&size, "2", true), Ok(Some(json!("large"))));
        assert_eq!(value_of(&size, " Small ", true), Ok(Some(json!("small"))));
        assert!(value_of(&size, "huge", true).is_err());

        let titled = json!({"type": "string",
                            "oneOf": [{"const": "S", "title": "Small cup"},
                                      {"const": "L", "title": "Large cup"}]});
        assert_eq!(value_of(&titled, "large cup", true), Ok(Some(json!("L"))));

        let name = json!({"type": "string", "minLength": 1, "maxLength": 5});
        assert!(value_of(&name, "", true).is_err(), "required, no default");
        assert_eq!(value_of(&name, "", false), Ok(None), "optional: left out");
        assert_eq!(value_of(&name, "Ada", true), Ok(Some(json!("Ada"))));
        assert!(value_of(&name, "Adalbert", true).is_err());

        let sugar = json!({"type": "boolean", "default": false});
        assert_eq!(value_of(&sugar, "", true), Ok(Some(json!(false))));
        assert_eq!(value_of(&sugar, "Y", true), Ok(Some(json!(true))));
        assert!(value_of(&sugar, "maybe", true).is_err());

        let cups = json!({"type": "integer", "minimum": 1, "maximum": 4});
        assert_eq!(value_of(&cups, "3", true), Ok(Some(json!(3))));
        assert!(value_of(&cups, "5", true).is_err());
        assert!(value_of(&cups, "2.5", true).is_err());
        let price = json!({"type": "number"});
        assert_eq!(value_of(&price, "2.5", true), Ok(Some(json!(2.5))));
        assert!(value_of(&price, "NaN", true).is_err());

        let extras = json!({"type": "array", "maxItems": 2,
                            "items": {"type": "string", "enum": ["milk", "honey", "ice"]}});
        assert_eq!(
            value_of(&extras, "milk, 2", true),
            Ok(Some(json!(["milk", "honey"])))
        );
        assert!(value_of(&extras, "milk, honey, ice", true).is_err());
    }

    #[test]
    fn the_prompt_says_what_a_field_takes_and_shows_hidden_characters() {
        let size = json!({"type": "string", "title": "Size",
                          "enum": ["small", "large"], "default": "large"});
        assert_eq!(
            prompt("size", &size, true),
            "Size (one of 1) small, 2) large; default large): "
        );
        let note = json!({"type": "string", "description": "for \u{202e}you"});
        assert_eq!(
            prompt("note", &note, false),
            "  for \\u{202e}you\nnote (optional): "
        );
    }
}
