//! Compile-pass and compile-fail tests of `#[tool]` and `toolset!`. Regenerate the expected
//! errors with `TRYBUILD=overwrite cargo test -p tests --test ui`, then read every `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
