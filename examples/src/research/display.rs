//! How the assistant shows the results of its external tools in the terminal: what was found,
//! each annotation's confidence (with a warning where a person should check it), and how long
//! the service took.

use serde_json::Value;
use tool_runtime::display::visible;

/// Below this confidence an annotation is flagged for the person to verify.
pub const LOW_CONFIDENCE: f64 = 0.75;

/// The text block for a successful result of `tool`, or `None` when the tool's results are not
/// shown this way (they are on the event line already).
pub fn render(tool: &str, result: &Value) -> Option<String> {
    let ms = result.get("execution_ms")?.as_u64()?;
    let mut out = match tool {
        "gnorm_annotate" => annotations(result),
        "citation_graph" => citations(result),
        "search_catalogue" => catalogue(result),
        _ => String::new(),
    };
    if let Some(c) = result.get("confidence").and_then(Value::as_f64) {
        out.push_str(&format!("Confidence: {}%\n", percent(c)));
    }
    out.push_str(&format!("Execution time: {ms} ms\n"));
    Some(out)
}

fn percent(c: f64) -> i64 {
    (c * 100.0).round() as i64
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => visible(s).into_owned(),
        Value::Null => "?".to_owned(),
        v => visible(&v.to_string()).into_owned(),
    }
}

fn annotations(result: &Value) -> String {
    let list = result["annotations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = format!(
        "GNORM annotation results: {} entit{}\n",
        list.len(),
        if list.len() == 1 { "y" } else { "ies" }
    );
    for a in &list {
        let indicator = a["epistemic_indicator"]
            .as_str()
            .map(|i| format!("[{}] ", visible(&i.to_uppercase())))
            .unwrap_or_default();
        let confidence = a["confidence"].as_f64().unwrap_or(0.0);
        let id = a["normalized_id"]
            .as_str()
            .map(|id| format!(" -> {}", visible(id)))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {indicator}\"{}\" - {} ({}% confidence){id}\n",
            text(&a["entity_text"]),
            text(&a["entity_type"]),
            percent(confidence),
        ));
        if confidence < LOW_CONFIDENCE {
            out.push_str("     lower confidence: verify this identification\n");
        }
    }
    out
}

fn papers(out: &mut String, label: &str, list: &Value) {
    let Some(list) = list.as_array() else { return };
    for p in list {
        let authors: Vec<String> = p["authors"]
            .as_array()
            .map(|a| a.iter().map(text).collect())
            .unwrap_or_default();
        out.push_str(&format!(
            "  {label} ({}) {} - {}\n",
            text(&p["year"]),
            text(&p["title"]),
            authors.join(", ")
        ));
    }
}

fn citations(result: &Value) -> String {
    let count = |k: &str| result[k].as_array().map(Vec::len);
    let mut sides = Vec::new();
    if let Some(n) = count("citing") {
        sides.push(format!("{n} citing it"));
    }
    if let Some(n) = count("cited") {
        sides.push(format!("{n} cited by it"));
    }
    let mut out = format!(
        "Citation graph of {}: {}\n",
        text(&result["paper_id"]),
        sides.join(", ")
    );
    papers(&mut out, "cites it:", &result["citing"]);
    papers(&mut out, "cited by it:", &result["cited"]);
    out
}

fn catalogue(result: &Value) -> String {
    let list = result["records"].as_array().cloned().unwrap_or_default();
    let mut out = format!(
        "Library catalogue: {} of {} records for \"{}\"\n",
        list.len(),
        text(&result["total"]),
        text(&result["query"])
    );
    for r in &list {
        let authors: Vec<String> = r["authors"]
            .as_array()
            .map(|a| a.iter().map(text).collect())
            .unwrap_or_default();
        out.push_str(&format!(
            "  ({}) {} - {} [{}]\n",
            text(&r["year"]),
            text(&r["title"]),
            authors.join(", "),
            text(&r["id"])
        ));
    }
    out
}
