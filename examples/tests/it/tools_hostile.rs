//! The `tools` command line against hostile input, class by class: every refusal is exit 1 with
//! the structured error on standard output (`--json`), never a panic (exit 101) or a hang.
//!
//! Each case's time is printed. To time the release binary against the same inputs:
//! `TOOLS_HOSTILE_BIN=target/release/tools cargo test -p examples --test it tools_hostile -- --nocapture`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A command that is not done after this long is hung (debug builds under a loaded CI machine
/// take far less; this is a guard, not a timing).
const HANG: Duration = Duration::from_secs(120);

struct Case {
    class: &'static str,
    args: Vec<OsString>,
    stdin: Option<Vec<u8>>,
    exit: i32,
    /// The error code on standard output, for a refusal.
    code: Option<&'static str>,
}

fn case(class: &'static str, args: &[&str], exit: i32, code: Option<&'static str>) -> Case {
    Case {
        class,
        args: args.iter().map(OsString::from).collect(),
        stdin: None,
        exit,
        code,
    }
}

fn binary() -> PathBuf {
    std::env::var_os("TOOLS_HOSTILE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tools")))
}

/// Runs one case; returns its exit code, its standard output and how long it took.
fn run(case: &Case) -> (i32, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(binary())
        .args(&case.args)
        .stdin(if case.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tools binary starts");
    let feeder = case.stdin.clone().map(|bytes| {
        let mut pipe = child.stdin.take().expect("piped");
        // the command may stop reading early (a limit): a broken pipe is expected then
        std::thread::spawn(move || drop(pipe.write_all(&bytes)))
    });
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            panic!("{}: no answer after {HANG:?}", case.class);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    let out = reader.join().unwrap_or_default();
    (status.code().unwrap_or(-1), out, elapsed)
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_string_lossy().into_owned()
}

fn catalog(parameters: Value) -> Value {
    json!([{"name": "t", "description": "d", "parameters": parameters}])
}

fn cases(dir: &Path) -> Vec<Case> {
    let with_limit = |n: &str| format!(r#"{{"query": "rust", "limit": {n}}}"#);
    let bad_utf8 = write(dir, "bad_utf8.json", b"{\"query\": \"\xff\xfe rust\"}");
    let huge = write(
        dir,
        "fifty_mb.json",
        format!(
            r#"{{"query": "rust", "tags": ["{}"]}}"#,
            "a".repeat(50 << 20)
        ),
    );
    let million_keys = write(
        dir,
        "million_keys.json",
        format!(
            "{{{}}}",
            (0..1_000_000)
                .map(|i| format!("\"k{i}\": 1"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    );
    let deep = format!(
        r#"{{"query": "rust", "tags": {}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let once = with_limit("5");
    let thrice = serde_json::to_string(&serde_json::to_string(&once).unwrap()).unwrap();
    let long_name = "x".repeat(10_000);

    let remote = write(
        dir,
        "remote.json",
        catalog(
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}),
        )
        .to_string(),
    );
    let file_ref = write(
        dir,
        "file_ref.json",
        catalog(json!({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}))
            .to_string(),
    );
    let cycle = write(
        dir,
        "cycle.json",
        catalog(
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}},
                       "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}}),
        )
        .to_string(),
    );
    let dangling = write(
        dir,
        "dangling.json",
        catalog(json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}))
            .to_string(),
    );
    let control_name = write(
        dir,
        "control_name.json",
        json!([{"name": "t\u{7}\n", "description": "d", "parameters": {"type": "object"}}])
            .to_string(),
    );
    let control_property = write(
        dir,
        "control_property.json",
        catalog(json!({"type": "object", "properties": {"a\u{1b}[2J": {"type": "string"}}}))
            .to_string(),
    );
    let deep_schema = write(
        dir,
        "deep_schema.json",
        format!(
            r#"[{{"name": "t", "description": "d", "parameters": {{"type": "object", "properties": {{"a": {}{{}}{}}}}}}}]"#,
            r#"{"type": "array", "items": "#.repeat(100_000),
            "}".repeat(100_000)
        ),
    );
    let not_utf8_catalog = write(dir, "not_utf8_catalog.json", b"[\xff]");
    let many: Vec<Value> = (0..100_000)
        .map(|i| json!({"name": format!("t{i}"), "description": "d", "parameters": {"type": "object"}}))
        .collect();
    let hundred_thousand = write(dir, "hundred_thousand.json", Value::Array(many).to_string());
    let values: Vec<String> = (0..1_000_000).map(|i| format!("v{i}")).collect();
    let huge_enum = write(
        dir,
        "huge_enum.json",
        catalog(json!({"type": "object", "properties": {"a": {"enum": values}}})).to_string(),
    );
    let catastrophic = write(
        dir,
        "catastrophic.json",
        catalog(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}))
            .to_string(),
    );
    let backtracking_value = format!(r#"{{"a": "{}!"}}"#, "a".repeat(100_000));

    let check = |args: &str| -> Vec<String> {
        ["--json", "check", "search_notes", "--args", args]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let owned = |class, args: Vec<String>, exit, code| Case {
        class,
        args: args.into_iter().map(OsString::from).collect(),
        stdin: None,
        exit,
        code,
    };
    let refused = Some;

    let mut all = vec![
        owned(
            "invalid UTF-8 (file)",
            check(&format!("@{bad_utf8}")),
            1,
            refused("INVALID_JSON"),
        ),
        Case {
            class: "invalid UTF-8 (standard input)",
            stdin: Some(b"{\"query\": \"\xc3\x28\"}".to_vec()),
            ..owned("", check("-"), 1, refused("INVALID_JSON"))
        },
        owned(
            "lone leading surrogate",
            check(r#"{"query": "\ud800 rust"}"#),
            1,
            refused("INVALID_JSON"),
        ),
        owned(
            "lone trailing surrogate",
            check(r#"{"query": "\udc00"}"#),
            1,
            refused("INVALID_JSON"),
        ),
        owned(
            "integer beyond u64",
            check(&with_limit("18446744073709551616")),
            1,
            refused("INVALID_ARGUMENTS"),
        ),
        owned(
            "integer of 10,000 digits",
            check(&with_limit(&"9".repeat(10_000))),
            1,
            refused("INVALID_ARGUMENTS"),
        ),
        owned(
            "number beyond f64",
            check(&with_limit("1e400")),
            1,
            refused("INVALID_JSON"),
        ),
        owned(
            "duplicate key, last invalid",
            check(r#"{"query": "rust", "limit": 5, "limit": 99}"#),
            1,
            refused("INVALID_ARGUMENTS"),
        ),
        owned(
            "escaped key equal to a property, invalid",
            check(r#"{"query": "rust", "limit": 5, "\u006cimit": 99}"#),
            1,
            refused("INVALID_ARGUMENTS"),
        ),
        Case {
            class: "100,000-level nesting",
            stdin: Some(deep.into_bytes()),
            ..owned("", check("-"), 1, refused("NESTING_TOO_DEEP"))
        },
        owned(
            "50 MB arguments",
            check(&format!("@{huge}")),
            1,
            refused("PAYLOAD_TOO_LARGE"),
        ),
        owned(
            "endless arguments (/dev/zero)",
            check("@/dev/zero"),
            1,
            refused("PAYLOAD_TOO_LARGE"),
        ),
        owned(
            "a million keys",
            check(&format!("@{million_keys}")),
            1,
            refused("PAYLOAD_TOO_LARGE"),
        ),
        owned(
            "arguments string-encoded three times",
            check(&thrice),
            1,
            refused("INVALID_ARGUMENTS"),
        ),
        owned(
            "unknown tool, 10,000-character name",
            vec![
                "--json".into(),
                "check".into(),
                long_name,
                "--args".into(),
                "{}".into(),
            ],
            1,
            refused("UNKNOWN_TOOL"),
        ),
        case(
            "catalog: remote $ref",
            &["--json", "--catalog", &remote, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: file: $ref",
            &["--json", "--catalog", &file_ref, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: $ref cycle",
            &["--json", "--catalog", &cycle, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: dangling $ref",
            &["--json", "--catalog", &dangling, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: control characters in a name",
            &["--json", "--catalog", &control_name, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: control characters in a property",
            &["--json", "--catalog", &control_property, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: 100,000-level schema",
            &["--json", "--catalog", &deep_schema, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: not UTF-8",
            &["--json", "--catalog", &not_utf8_catalog, "list"],
            1,
            refused("INVALID_DEFINITION"),
        ),
        case(
            "catalog: 100,000 tools, unknown one called",
            &[
                "--json",
                "--catalog",
                &hundred_thousand,
                "check",
                "t",
                "--args",
                "{}",
            ],
            1,
            refused("UNKNOWN_TOOL"),
        ),
        case(
            "catalog: 100,000 tools, last one called",
            &[
                "--json",
                "--catalog",
                &hundred_thousand,
                "check",
                "t99999",
                "--args",
                "{}",
            ],
            0,
            None,
        ),
        case(
            "catalog: enum of a million values",
            &[
                "--json",
                "--catalog",
                &huge_enum,
                "check",
                "t",
                "--args",
                r#"{"a": "nope"}"#,
            ],
            1,
            refused("INVALID_ARGUMENTS"),
        ),
        Case {
            class: "catalog: catastrophic pattern",
            stdin: Some(backtracking_value.into_bytes()),
            ..case(
                "",
                &[
                    "--json",
                    "--catalog",
                    &catastrophic,
                    "check",
                    "t",
                    "--args",
                    "-",
                ],
                1,
                refused("INVALID_ARGUMENTS"),
            )
        },
        Case {
            class: "decode: response body not UTF-8",
            stdin: Some(b"{\"choices\": [\xff]}".to_vec()),
            ..case(
                "",
                &["--json", "decode", "--provider", "openai"],
                1,
                refused("MALFORMED_RESPONSE"),
            )
        },
        Case {
            class: "decode: 100,000-level response body",
            stdin: Some(format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes()),
            ..case(
                "",
                &["--json", "decode", "--provider", "anthropic"],
                1,
                refused("MALFORMED_RESPONSE"),
            )
        },
    ];
    // invalid UTF-8 on the command line itself (Unix: arguments are bytes)
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        let mut args = check("");
        args.pop();
        let mut c = owned(
            "invalid UTF-8 (command line)",
            args,
            1,
            refused("INVALID_JSON"),
        );
        c.args
            .push(OsString::from_vec(b"{\"query\": \"\xff\"}".to_vec()));
        all.push(c);
    }
    all
}

fn code_of(stdout: &str) -> Option<String> {
    let v: Value = serde_json::from_str(stdout.lines().last()?).ok()?;
    let error = v.get("error").unwrap_or(&v);
    error.get("code")?.as_str().map(str::to_owned)
}

#[test]
fn every_hostile_input_class_is_answered_with_a_structured_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    println!("{:<48} {:>4} {:<20} {:>9}", "class", "exit", "code", "ms");
    for case in cases(dir.path()) {
        let (exit, stdout, took) = run(&case);
        let code = code_of(&stdout);
        println!(
            "{:<48} {:>4} {:<20} {:>9.1}",
            case.class,
            exit,
            code.as_deref().unwrap_or("-"),
            took.as_secs_f64() * 1e3
        );
        assert_ne!(exit, 101, "{}: the command panicked", case.class);
        if exit != case.exit || (case.code.is_some() && code.as_deref() != case.code) {
            failures.push(format!(
                "{}: exit {exit} code {code:?}, expected exit {} code {:?}; stdout {:.300}",
                case.class, case.exit, case.code, stdout
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A repeated key is read as the validator read it: the value printed is the last one sent,
/// the one that was checked.
#[test]
fn a_repeated_key_is_read_as_it_was_validated() {
    let (exit, stdout, _) = run(&case(
        "duplicate key, last valid",
        &[
            "--json",
            "check",
            "search_notes",
            "--args",
            r#"{"query": "rust", "limit": 99, "\u006cimit": 5}"#,
        ],
        0,
        None,
    ));
    assert_eq!(exit, 0, "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["limit"], 5);
}
