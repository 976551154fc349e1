//! Loading the Berkeley Function Calling Leaderboard subset (three BFCL files) as a tool
//! catalog and a list of questions with their ground-truth functions.
//!
//! Shared by the selection benchmarks (`tool-runtime/benches/select*.rs`) and the evaluation
//! program (`examples/src/bin/bfcl_eval.rs`): both need the same pool, and BFCL's schema dialect
//! is benchmark plumbing, not something the library should offer.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use tool_runtime::definition::{Safety, ToolDefinition};

/// The three BFCL files read: single calls, a choice among several functions, parallel calls.
pub const FILES: [&str; 3] = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel_multiple.json",
];

/// One question with the functions a correct answer calls.
#[derive(Debug, Clone)]
pub struct Question {
    /// BFCL's id, e.g. `multiple_12`.
    pub id: String,
    /// The user messages joined.
    pub text: String,
    /// Distinct ground-truth function names.
    pub expected: Vec<String>,
}

/// The data directory: `$BFCL_DIR` (the folder holding [`FILES`]), else a default location beside
/// the checkout.
pub fn data_dir(manifest_dir: &str) -> PathBuf {
    match std::env::var_os("BFCL_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(manifest_dir).join("../../shared/bfcl"),
    }
}

/// Every distinct function of the three files (first definition of a name wins), converted to
/// JSON Schema and marked read-only (BFCL functions only compute or look up), plus every question.
pub fn load(dir: &Path) -> Result<(Vec<ToolDefinition>, Vec<Question>), String> {
    let mut tools = Vec::new();
    let mut seen = HashSet::new();
    let mut questions = Vec::new();
    for file in FILES {
        let cases = read_lines(&dir.join(file))?;
        let answers = read_lines(&dir.join("possible_answer").join(file))?;
        if cases.len() != answers.len() {
            return Err(format!(
                "{file}: {} cases but {} answers",
                cases.len(),
                answers.len()
            ));
        }
        for (case, answer) in cases.iter().zip(&answers) {
            for f in case["function"].as_array().into_iter().flatten() {
                let name = f["name"]
                    .as_str()
                    .ok_or(format!("{file}: a function without a name"))?;
                if seen.insert(name.to_owned()) {
                    tools.push(definition(f));
                }
            }
            let mut expected: Vec<String> = Vec::new();
            for call in answer["ground_truth"].as_array().into_iter().flatten() {
                for name in call.as_object().into_iter().flat_map(|o| o.keys()) {
                    if !expected.contains(name) {
                        expected.push(name.clone());
                    }
                }
            }
            let text = case["question"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|turn| turn.as_array().into_iter().flatten())
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            questions.push(Question {
                id: case["id"].as_str().unwrap_or_default().to_owned(),
                text,
                expected,
            });
        }
    }
    Ok((tools, questions))
}

fn read_lines(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (set BFCL_DIR to the folder holding the BFCL files)",
            path.display()
        )
    })?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

fn definition(f: &Value) -> ToolDefinition {
    let name = f["name"].as_str().unwrap_or_default().to_owned();
    let description = f["description"].as_str().unwrap_or_default().to_owned();
    let parameters = to_json_schema(&f["parameters"]);
    let mut def = ToolDefinition::new(name, description, &parameters);
    def.safety = Safety::ReadOnly;
    def
}

/// BFCL's dialect to JSON Schema: `dict` → `object`, `float` → `number`, `tuple` → `array`,
/// `any` → no type constraint; the non-standard `optional` flag is dropped (optional parameters
/// are already absent from `required`).
pub fn to_json_schema(schema: &Value) -> Value {
    let Some(obj) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        match key.as_str() {
            "optional" => {}
            "type" => match value.as_str() {
                Some("dict") => {
                    out.insert(key.clone(), "object".into());
                }
                Some("float") => {
                    out.insert(key.clone(), "number".into());
                }
                Some("tuple") => {
                    out.insert(key.clone(), "array".into());
                }
                Some("any") => {}
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            },
            "properties" => {
                let props = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(k, v)| (k.clone(), to_json_schema(v)))
                            .collect::<Map<_, _>>()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" => {
                out.insert(key.clone(), to_json_schema(value));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// A catalog of `n` tools drawn from `pool`: the pool itself, then variants of it (renamed
/// `name_vK`, description extended with a variant phrase) until `n` are reached, so large
/// catalogs keep BFCL's vocabulary and term frequencies grow as they would with more tools.
pub fn synthesize(pool: &[ToolDefinition], n: usize) -> Vec<ToolDefinition> {
    const REGIONS: [&str; 8] = [
        "for Europe",
        "for Asia",
        "for the Americas",
        "in the sandbox",
        "legacy version",
        "beta channel",
        "with caching",
        "for enterprise accounts",
    ];
    (0..n)
        .map(|i| {
            let base = &pool[i % pool.len()];
            let round = i / pool.len();
            if round == 0 {
                return base.clone();
            }
            let mut def = base.clone();
            def.name = format!("{}_v{round}", base.name).into();
            def.description =
                format!("{} ({})", base.description, REGIONS[round % REGIONS.len()]).into();
            def
        })
        .collect()
}
