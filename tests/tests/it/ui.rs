//! Compile-fail tests of `#[tool]`, `#[derive(ToolArgs)]` and `toolset!`: every error the macros
//! emit, with the exact message and span. Regenerate the expected errors with
//! `TRYBUILD=overwrite cargo test -p tests --test it ui::`, then read every `.stderr`. The programs
//! that must compile are ordinary modules (`compile_pass`), so trybuild only type-checks
//! (`cargo check`) and builds no binaries of its own.

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn ui() {
    mirror_schema_files();
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}

/// `schema = "..."` is resolved relative to `CARGO_MANIFEST_DIR`, and trybuild compiles each case
/// in a crate of its own under `<target dir>/tests/trybuild/tests/`. Copying `tests/schemas` there
/// lets the cases name the files exactly as this crate's own tests do (`tests/schemas/note.json`),
/// wherever the target directory is: it is found the way trybuild finds it, with `cargo metadata`.
fn mirror_schema_files() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(manifest_dir)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let target = PathBuf::from(
        meta["target_directory"]
            .as_str()
            .expect("metadata names the target directory"),
    );
    let project = target
        .join("tests")
        .join("trybuild")
        .join(env!("CARGO_PKG_NAME"));
    let from = manifest_dir.join("tests").join("schemas");
    let to = project.join("tests").join("schemas");
    std::fs::create_dir_all(&to).expect("the trybuild project directory can be created");
    for entry in std::fs::read_dir(&from).expect("tests/schemas exists") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let dest = to.join(path.file_name().expect("a file name"));
            std::fs::copy(&path, &dest).expect("the schema file copies");
        }
    }
}
