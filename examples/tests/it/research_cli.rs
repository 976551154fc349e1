//! The `research` binary, run as a user runs it, against a scripted OpenAI-compatible server on
//! 127.0.0.1 standing in for the local llama.cpp server (`TOOLS_LLAMA_URL`): one turn from an
//! argument or from stdin, confirmations answered on stdin, `--undo` from a second process, a
//! malformed call asked again, `fetch_doi` behind its first-time gate, GNORM's annotations
//! shown with their confidences and the service's execution time, and the SQLite state checked
//! after each run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::support::peer::{Peer, answer, tool_call};
use crate::support::serve;
use examples::research::{self, Db};

/// One user's machine: a home, the database paths, and the environment the binary sees.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        Machine {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn db_path(&self) -> PathBuf {
        self.dir.path().join("research.sqlite")
    }

    fn db(&self) -> Db {
        Db::open(self.db_path()).unwrap()
    }

    /// Runs `research ARGS` with `stdin` piped in, against `model` (and `doi`, if given).
    fn run(&self, model: &str, doi: Option<&str>, args: &[&str], stdin: &str) -> Output {
        let doi = doi.unwrap_or("http://127.0.0.1:9");
        self.run_with(model, &[("TOOLS_DOI_URL", doi)], args, stdin)
    }

    /// Runs `research ARGS` with `stdin` piped in, against `model`, with `env` set; the external
    /// services it does not set point nowhere.
    fn run_with(&self, model: &str, env: &[(&str, &str)], args: &[&str], stdin: &str) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_research"));
        cmd.args(args)
            .env("TOOLS_LLAMA_URL", model)
            .env("TOOLS_RESEARCH_DB", self.db_path());
        for key in [
            "TOOLS_DOI_URL",
            "TOOLS_GNORM_URL",
            "TOOLS_CITATIONS_URL",
            "TOOLS_CATALOGUE_URL",
        ] {
            cmd.env(key, "http://127.0.0.1:9");
        }
        cmd.envs(env.iter().copied())
            .env("HOME", self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Whatever the developer has set must not reach a real provider or another config.
        for key in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "OPENAI_BASE_URL",
            "TOOLS_LLAMA_SCRIPT",
        ] {
            cmd.env_remove(key);
        }
        let mut child = cmd.spawn().expect("the research binary starts");
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).unwrap();
        drop(input);
        child.wait_with_output().unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn titles(db: &Db) -> Vec<String> {
    db.all_notes()
        .unwrap()
        .into_iter()
        .map(|n| n.title)
        .collect()
}

fn declared(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|d| d["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The first message with `role` in a chat request the model server received.
fn first_message<'a>(request: &'a Value, role: &str) -> &'a Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == role)
        .unwrap_or_else(|| panic!("no {role} message in {request}"))
}

const CREATE: &str = r#"{"title":"Llamas","body":"Llamas are camelids."}"#;

#[test]
fn one_turn_from_an_argument_creates_the_note_and_answers() {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("I created the note Llamas."),
    ]);
    let m = Machine::new();
    let out = m.run(
        &peer.url,
        None,
        &[
            "--yes",
            "Create a note titled Llamas saying that llamas are camelids",
        ],
        "",
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "I created the note Llamas.");
    assert!(stderr.contains("→ create_note"), "{stderr}");
    assert!(
        stderr.contains("[2 model requests, 400 input + 40 output tokens"),
        "{stderr}"
    );

    let db = m.db();
    let note = db.all_notes().unwrap().pop().unwrap();
    assert_eq!(
        (note.title.as_str(), note.body.as_str()),
        ("Llamas", "Llamas are camelids.")
    );

    // The local-model configuration: a forced call among the tools `pick` found relevant, then
    // the result back with tool_choice none, so the model answers instead of calling again.
    let requests = peer.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["tool_choice"], "required");
    let tools = declared(&requests[0]);
    assert!(
        tools.contains(&"create_note".to_owned()) && tools.len() <= 2,
        "{tools:?}"
    );
    assert_eq!(requests[1]["tool_choice"], "none");
    let messages = requests[1]["messages"].as_array().unwrap();
    let result = messages.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(result["content"].as_str().unwrap().contains("\"Llamas\""));

    // A second process undoes the call by its id: the note is gone, the seeded ones remain.
    let undo = m.run(&peer.url, None, &["--undo", "call_1"], "");
    assert!(undo.status.success(), "{}", text(&undo.stderr));
    assert!(
        text(&undo.stdout).contains("\"success\""),
        "{}",
        text(&undo.stdout)
    );
    assert_eq!(titles(&m.db()), ["Tool use survey", "Transformers"]);
    // Undone once only.
    let again = m.run(&peer.url, None, &["--undo", "call_1"], "");
    assert!(!again.status.success());
    assert_eq!(peer.unused(), 0);
}

#[test]
fn a_question_on_stdin_with_the_confirmation_answered_on_the_next_line() {
    let peer = Peer::start(vec![
        tool_call("call_1", "create_note", CREATE),
        answer("Done."),
    ]);
    let m = Machine::new();
    let out = m.run(
        &peer.url,
        None,
        &[],
        "Create a note titled Llamas saying that llamas are camelids\ny\n",
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The confirmation box was drawn, with the intent, and the typed "y" answered it.
    assert!(
        stderr.contains("Create a note titled \u{201c}Llamas\u{201d}"),
        "{stderr}"
    );
    assert!(stderr.contains("Proceed? [Y/n/e]"), "{stderr}");
    assert_eq!(text(&out.stdout).trim(), "Done.");
    assert_eq!(titles(&m.db()).last().unwrap(), "Llamas");
}

/// The README's main command where nobody can type a question (a CI job, `< /dev/null`): the
/// agent still runs a turn, on the read-only demo question, and says so.
#[test]
fn an_input_that_ends_before_any_line_runs_the_demo_question() {
    let peer = Peer::start(vec![
        tool_call("call_1", "search_bibliography", r#"{"query":"ReAct"}"#),
        answer("ReAct interleaves reasoning with acting."),
    ]);
    let m = Machine::new();
    let out = m.run(&peer.url, None, &[], "");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("asking \"{}\"", research::DEMO_QUESTION)),
        "{stderr}"
    );
    let requests = peer.requests();
    let user = first_message(&requests[0], "user");
    assert_eq!(user["content"], research::DEMO_QUESTION);
    // the search ran and its result went back to the model
    let result = first_message(&requests[1], "tool");
    assert!(
        result["content"].as_str().unwrap().contains("ReAct"),
        "{result}"
    );
    assert_eq!(
        text(&out.stdout).trim(),
        "ReAct interleaves reasoning with acting."
    );
    assert_eq!(peer.unused(), 0);
}

/// A first line that is blank is a question left out, not a request for the demo.
#[test]
fn a_blank_first_line_is_refused_without_asking_the_model() {
    let peer = Peer::start(vec![answer("unused")]);
    let m = Machine::new();
    let out = m.run(&peer.url, None, &[], "\nsearch the bibliography\n");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the first line of the input is empty"),
        "{stderr}"
    );
    assert!(peer.requests().is_empty());
}

#[test]
fn a_denial_on_stdin_goes_back_to_the_model_and_nothing_is_written() {
    let peer = Peer::start(vec![
        tool_call("call_1", "delete_note", r#"{"id":1}"#),
        answer("I left the note alone."),
    ]);
    let m = Machine::new();
    let out = m.run(&peer.url, None, &[], "Delete note 1\nn\nI still need it\n");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The box previewed the note that would be deleted.
    assert!(stderr.contains("Tool use survey"), "{stderr}");
    assert!(stderr.contains("[denied]"), "{stderr}");
    assert_eq!(titles(&m.db()), ["Tool use survey", "Transformers"]);
    let requests = peer.requests();
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("denied") && content.contains("I still need it"),
        "{content}"
    );
}

#[test]
fn a_turn_whose_only_call_was_malformed_is_asked_once_more() {
    let peer = Peer::start(vec![
        // A 135M model's typical failure: a string never closed.
        tool_call(
            "call_1",
            "create_note",
            r#"{"title":"Llamas","body":"Llamas are"#,
        ),
        answer("Sorry, something went wrong."),
        tool_call("call_2", "create_note", CREATE),
        answer("Created."),
    ]);
    let m = Machine::new();
    let out = m.run(
        &peer.url,
        None,
        &["--yes", "Create a note about llamas"],
        "",
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout.trim(),
        "Created.",
        "only the final answer is printed"
    );
    assert!(stderr.contains("INVALID_JSON"), "{stderr}");
    assert!(stderr.contains("asking the model again"), "{stderr}");
    assert_eq!(
        titles(&m.db()),
        ["Tool use survey", "Transformers", "Llamas"]
    );
    let requests = peer.requests();
    assert_eq!(requests.len(), 4);
    // The second attempt starts over from the question, forced to call again.
    assert_eq!(requests[2]["tool_choice"], "required");
    assert_eq!(
        requests[2]["messages"].as_array().unwrap().len(),
        requests[0]["messages"].as_array().unwrap().len()
    );
}

#[test]
fn fetch_doi_asks_at_first_use_and_reaches_the_configured_service() {
    let hits: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = hits.clone();
    let doi = serve(axum::Router::new().route(
        "/works/{*doi}",
        get(
            move |axum::extract::Path(doi): axum::extract::Path<String>| {
                log.lock().unwrap().push(doi);
                async {
                    axum::Json(json!({"message": {"title": ["ReAct"], "publisher": "arXiv",
                                              "author": [{"family": "Yao"}]}}))
                }
            },
        ),
    ));
    let peer = Peer::start(vec![
        tool_call(
            "call_1",
            "fetch_doi",
            r#"{"doi":"10.48550/arXiv.2210.03629"}"#,
        ),
        answer("It is ReAct, published on arXiv."),
    ]);
    let m = Machine::new();
    let out = m.run(
        &peer.url,
        Some(&format!("{doi}/works")),
        &["Look up DOI 10.48550/arXiv.2210.03629"],
        "y\n",
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("first time"),
        "the first-use notice: {stderr}"
    );
    assert_eq!(*hits.lock().unwrap(), ["10.48550/arXiv.2210.03629"]);
    let requests = peer.requests();
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(result["content"].as_str().unwrap().contains("Yao"));
    assert_eq!(text(&out.stdout).trim(), "It is ReAct, published on arXiv.");
}

#[test]
fn a_dead_server_is_an_error_and_the_database_is_still_created() {
    let m = Machine::new();
    // Nothing listens there: the run fails with the provider's error, exit code 1.
    let out = m.run("http://127.0.0.1:9", None, &["--yes", "hello"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("error:"),
        "{}",
        text(&out.stderr)
    );
    // The database was still created and seeded on first run.
    assert!(Path::new(&m.db_path()).exists());
}

#[test]
fn gnorm_annotations_are_shown_with_confidence_and_execution_time() {
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = bodies.clone();
    let gnorm = serve(axum::Router::new().route(
        "/annotate",
        post(move |axum::Json(body): axum::Json<Value>| {
            log.lock().unwrap().push(body);
            async {
                axum::Json(json!({"annotations": [
                    {"entity_text": "Augustine of Hippo", "entity_type": "Person", "start": 0,
                     "end": 18, "normalized_id": "wikidata:Q8018", "confidence": 0.94,
                     "epistemic_indicator": "factual"},
                    {"entity_text": "illumination", "entity_type": "Concept", "start": 29,
                     "end": 41, "confidence": 0.62, "epistemic_indicator": "interpretive"}]}))
            }
        }),
    ));
    let passage = "Augustine of Hippo on divine illumination";
    let peer = Peer::start(vec![
        tool_call(
            "call_1",
            "gnorm_annotate",
            &json!({"text": passage}).to_string(),
        ),
        answer("GNORM found Augustine of Hippo."),
    ]);
    let m = Machine::new();
    // "?" asks what GNORM is and what leaves, "y" opens the gate.
    let out = m.run_with(
        &peer.url,
        &[("TOOLS_GNORM_URL", &gnorm)],
        &[&format!("Annotate this passage: {passage}")],
        "?\ny\n",
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("About gnorm_annotate:"), "{stderr}");
    assert!(stderr.contains(&format!("text: {passage}")), "{stderr}");
    assert_eq!(*bodies.lock().unwrap(), [json!({"text": passage})]);
    assert!(
        stderr.contains("GNORM annotation results: 2 entities"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[FACTUAL] \"Augustine of Hippo\" - Person (94% confidence)"),
        "{stderr}"
    );
    assert!(stderr.contains("(62% confidence)"), "{stderr}");
    assert!(stderr.contains("verify this identification"), "{stderr}");
    let ms = stderr
        .split("Execution time: ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .unwrap_or_else(|| panic!("no execution time: {stderr}"));
    assert!(ms.parse::<u64>().is_ok(), "{ms}");
    // The model got the annotations, execution time included.
    let requests = peer.requests();
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("wikidata:Q8018") && content.contains("execution_ms"),
        "{content}"
    );
}
