//! The `tools` binary as a real process: arguments, standard streams and exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn tools(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(args)
        .output()
        .expect("the tools binary runs")
}

fn stdout_json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn list_and_schema_describe_the_demo_tools() {
    let out = tools(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("search_notes") && text.contains("get_weather"),
        "{text}"
    );
    let out = tools(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let defs = stdout_json(&out);
    assert_eq!(defs[0]["name"], "search_notes");
    assert_eq!(defs[1]["parameters"]["additionalProperties"], false);
}

#[test]
fn check_exits_0_on_valid_and_1_with_json_on_refused_arguments() {
    let out = tools(&["check", "search_notes", "--args", r#"{"query": "rust"}"#]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout_json(&out)["limit"], 10, "defaults are filled in");

    let out = tools(&[
        "check",
        "search_notes",
        "--json",
        "--args",
        r#"{"query": "", "limit": 99}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stdout_json(&out);
    assert_eq!(err["code"], "INVALID_ARGUMENTS");
    assert_eq!(err["violations"].as_array().unwrap().len(), 2);

    let out = tools(&["check", "get_wether", "--args", "{}"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("get_weather"));
}

#[test]
fn check_reads_standard_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(["check", "get_weather", "--args", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"city": "Oslo", "unit": "celsius"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout_json(&out)["city"], "Oslo");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(tools(&["nonsense"]).status.code(), Some(2));
    assert_eq!(tools(&["check"]).status.code(), Some(2));
    assert_eq!(
        tools(&["schema", "--provider", "no-such-provider"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        tools(&["--catalog", "/no/such/file.json", "list"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(tools(&["--help"]).status.code(), Some(0));
}

#[test]
fn a_catalog_file_adds_tools_that_can_be_checked() {
    let dir = std::env::temp_dir().join(format!("tools-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("catalog.json");
    std::fs::write(
        &catalog,
        r#"[{"type": "function", "name": "send_email", "description": "Send an email.",
             "parameters": {"type": "object",
               "properties": {"to": {"type": "string", "pattern": "^[^@]+@[^@]+$"}},
               "required": ["to"]},
             "safety": "external"}]"#,
    )
    .unwrap();
    let catalog = catalog.to_str().unwrap();
    let ok = tools(&[
        "--catalog",
        catalog,
        "check",
        "send_email",
        "--args",
        r#"{"to": "a@b.c"}"#,
    ]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = tools(&[
        "--catalog",
        catalog,
        "check",
        "send_email",
        "--args",
        r#"{"to": "nobody"}"#,
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A catalog whose schema nests deeper than serde_json can read (here inside an unknown `x-`
/// keyword) is refused with the structured error and exit 1, in every command that takes
/// `--catalog`, never a panic.
#[test]
fn a_catalog_nested_too_deep_is_refused_with_exit_1_not_a_panic() {
    let dir = tempfile_dir("deep");
    let catalog = dir.join("deep.json");
    let levels = 130;
    std::fs::write(
        &catalog,
        format!(
            r#"[{{"type": "function", "name": "deep", "description": "Deep.",
                 "parameters": {{"type": "object", "x-deep": {}{}}}}}]"#,
            "[".repeat(levels - 1),
            "]".repeat(levels - 1)
        ),
    )
    .unwrap();
    let catalog = catalog.to_str().unwrap();
    for args in [
        vec!["--catalog", catalog, "list"],
        vec!["--catalog", catalog, "schema", "--provider", "gemini"],
        vec![
            "--catalog",
            catalog,
            "--json",
            "check",
            "deep",
            "--args",
            "{}",
        ],
    ] {
        let out = tools(&args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}: {all}");
        assert!(all.contains("INVALID_DEFINITION"), "{args:?}: {all}");
        assert!(all.contains("130 levels deep"), "{args:?}: {all}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tools-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `tools decode` as a process: the response on standard input (`-`, also the default), exit 0
/// when every call hydrates and 1 when one does not, with the reason on stdout.
#[test]
fn decode_reads_standard_input_and_exits_1_on_an_invalid_call() {
    let decode = |args: &[&str], input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tools"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let valid = r#"{"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}]}"#;
    let out = decode(&["decode", "--provider", "openai", "-"], valid);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ok    call_1 get_weather"), "{text}");

    // a stream capture on stdin, file argument left out (it defaults to `-`)
    let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"type\":\"function\",\"function\":{\"name\":\"search_notes\",\"arguments\":\"\"}}]}}]}\n\n\
                  data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"query\\\":\\\"rust\\\"}\"}}]}}]}\n\n\
                  data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
                  data: [DONE]\n\n";
    let out = decode(&["decode", "--json", "--provider", "openai"], stream);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout_json(&out);
    assert_eq!(report["stream"], true);
    assert_eq!(report["calls"][0]["arguments"]["limit"], 10, "hydrated");

    // one valid call and one that breaks the schema: exit 1, both reported
    let mixed = r#"{"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
        "content": [
          {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}},
          {"type": "tool_use", "id": "t2", "name": "search_notes", "input": {"query": "rust", "limit": 99}}
        ]}"#;
    let out = decode(&["decode", "--json", "--provider", "anthropic", "-"], mixed);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout_json(&out);
    assert_eq!(report["calls"][0]["ok"], true);
    assert_eq!(report["calls"][1]["ok"], false);
    assert_eq!(report["calls"][1]["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(
        report["calls"][1]["error"]["violations"][0]["pointer"],
        "/limit"
    );

    // what cannot be decoded at all is refused too
    let out = decode(&["decode", "--provider", "gemini", "-"], "not json");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot decode"));
}

/// A catalog file of read-only tools (and one that is not) for `pick`, in its own directory.
fn pick_catalog(tag: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("tools-cli-pick-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("catalog.json");
    std::fs::write(
        &catalog,
        r#"[
          {"type": "function", "name": "get_stock_price",
           "description": "Latest trading price of a stock ticker.",
           "parameters": {"type": "object",
             "properties": {"ticker": {"type": "string", "description": "Symbol such as AAPL"}},
             "required": ["ticker"]},
           "safety": "read_only"},
          {"type": "function", "name": "forecast_weather",
           "description": "Weather forecast for a city: temperature, wind and precipitation.",
           "parameters": {"type": "object",
             "properties": {"city": {"type": "string"}}, "required": ["city"]},
           "safety": "read_only"},
          {"type": "function", "name": "sell_stock",
           "description": "Sell shares of a stock at the market price.",
           "parameters": {"type": "object",
             "properties": {"ticker": {"type": "string"}, "shares": {"type": "integer"}},
             "required": ["ticker", "shares"]},
           "safety": "external"}
        ]"#,
    )
    .unwrap();
    let path = catalog.to_str().unwrap().to_owned();
    (dir, path)
}

#[test]
fn pick_ranks_a_catalog_files_tools_as_json() {
    let (dir, catalog) = pick_catalog("bm25");
    let out = tools(&[
        "--catalog",
        &catalog,
        "pick",
        "price of the AAPL stock",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let picked = stdout_json(&out);
    let list = picked.as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names[0], "get_stock_price", "{picked:#}");
    // Not read-only: left out unless allowed.
    assert!(!names.contains(&"sell_stock"), "{names:?}");
    let score = list[0]["score"].as_f64().unwrap();
    assert!(score > 0.0 && score <= 1.0, "{score}");
    assert!(
        list[0]["reason"].as_str().unwrap().contains("\"stock\""),
        "{picked:#}"
    );
    assert_eq!(list[0]["provenance"]["scorer"], "bm25");
    assert_eq!(list[0]["provenance"]["rank"], 1);

    // --allow-unsafe widens the pool; --top bounds the list; the demo tools are there too.
    let out = tools(&[
        "--catalog",
        &catalog,
        "pick",
        "sell my stock shares",
        "--allow-unsafe",
        "--top",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let picked = stdout_json(&out);
    assert_eq!(picked.as_array().unwrap().len(), 1);
    assert_eq!(picked[0]["name"], "sell_stock");
    let out = tools(&["--catalog", &catalog, "pick", "search my notes"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("1. search_notes  "),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pick_with_the_semantic_scorers_uses_the_local_model_or_says_what_is_missing() {
    use tool_runtime::select::cli::LOCAL_EMBEDDER;
    let (dir, catalog) = pick_catalog("semantic");
    let model_dir = std::env::var("TOOLS_MINILM_DIR")
        .ok()
        .filter(|d| !d.is_empty());
    let run = |scorer: &str, model: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tools"));
        cmd.args([
            "--catalog",
            &catalog,
            "pick",
            "will it rain in Lisbon tomorrow?",
        ])
        .args(["--scorer", scorer, "--json"])
        .env("TOOLS_EMBEDDING_CACHE", dir.join("embeddings.sqlite3"));
        match model {
            Some(m) => cmd.env("TOOLS_MINILM_DIR", m),
            None => cmd.env_remove("TOOLS_MINILM_DIR"),
        };
        cmd.output().expect("the tools binary runs")
    };

    if !LOCAL_EMBEDDER {
        // A build without the model says so, whatever the environment.
        let out = run("embedding", Some("/anywhere"));
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("`minilm` feature"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    // The variable unset: refused, naming it.
    let out = run("hybrid", None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TOOLS_MINILM_DIR is not set"), "{err}");
    // A directory without the model: refused with the loader's reason.
    let out = run("embedding", Some(dir.to_str().unwrap()));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot load the embedding model") && err.contains("config.json"),
        "{err}"
    );

    let Some(model_dir) = model_dir else {
        assert!(
            !test_support::in_ci(),
            "CI must provide the model: TOOLS_MINILM_DIR is not set"
        );
        let _ = writeln!(
            std::io::stderr(),
            "skipped the model half: TOOLS_MINILM_DIR is not set"
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    // No word of the query is in the forecast tool's text: only meaning can find it.
    for scorer in ["embedding", "hybrid"] {
        let out = run(scorer, Some(&model_dir));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{scorer}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let picked = stdout_json(&out);
        assert_eq!(
            picked[0]["name"], "forecast_weather",
            "{scorer}: {picked:#}"
        );
        assert_eq!(picked[0]["provenance"]["scorer"], scorer);
    }
    // the embeddings of the first run were kept: the next one embeds nothing and needs no model
    let out = run("hybrid", Some(&model_dir));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("embedded 0 text(s)"), "{err}");
    assert_eq!(stdout_json(&out)[0]["name"], "forecast_weather");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pick --queries -` answers JSON lines from standard input in one process, and with the store
/// on Redis (and no `TOOLS_EMBEDDING_CACHE`) keeps the embeddings there, so the next process,
/// on any machine sharing that Redis, embeds nothing it has seen.
#[test]
fn pick_answers_queries_from_standard_input_and_shares_embeddings_through_the_stores_redis() {
    use tool_runtime::select::cli::LOCAL_EMBEDDER;
    let (Some(model_dir), Ok(redis_url)) = (
        std::env::var("TOOLS_MINILM_DIR")
            .ok()
            .filter(|d| !d.is_empty()),
        std::env::var("TOOL_RUNTIME_TEST_REDIS_URL"),
    ) else {
        assert!(
            !test_support::in_ci(),
            "CI must provide the model and Redis (TOOLS_MINILM_DIR, TOOL_RUNTIME_TEST_REDIS_URL)"
        );
        let _ = writeln!(std::io::stderr(), "skipped: no model or no Redis");
        return;
    };
    if !LOCAL_EMBEDDER {
        return;
    }
    // a database of its own, emptied, so the first run must embed
    let store = format!("{}/10", redis_url.trim_end_matches('/'));
    let mut conn = redis::Client::open(store.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("FLUSHDB").query::<()>(&mut conn).unwrap();
    let (dir, catalog) = pick_catalog("batch");
    let input = "will it rain in Lisbon tomorrow?\n\
                 {\"id\": \"stocks\", \"query\": \"how much is one share of ACME worth\"}\n";
    let run = || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tools"))
            .args([
                "--catalog",
                &catalog,
                "pick",
                "--queries",
                "-",
                "--scorer",
                "hybrid",
            ])
            .env("TOOLS_MINILM_DIR", &model_dir)
            .env("TOOLS_STORE", &store)
            .env_remove("TOOLS_EMBEDDING_CACHE")
            .env_remove("TOOLS_CONFIG")
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the tools binary runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{err}");
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (lines, err)
    };
    let (lines, err) = run();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["candidates"][0]["name"], "forecast_weather");
    assert_eq!(lines[1]["id"], "stocks");
    assert_eq!(lines[1]["candidates"][0]["name"], "get_stock_price");
    assert!(err.contains("(keys tools:embeddings:*)"), "{err}");
    assert!(!err.contains("embedded 0 text(s)"), "{err}");
    let (again, err) = run();
    assert!(err.contains("embedded 0 text(s)"), "{err}");
    assert_eq!(again, lines, "the same answers from the shared vectors");
    let _ = std::fs::remove_dir_all(&dir);
}
