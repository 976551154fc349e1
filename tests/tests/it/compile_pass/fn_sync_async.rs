use tool_runtime::{Tool, definition::Safety, tool};

/// Adds two numbers.
#[tool(read_only)]
fn add(
    /// First
    a: i64,
    /// Second
    b: i64,
) -> i64 {
    a + b
}

/// Waits, then answers.
#[tool(read_only, name = "wait-then-answer")]
async fn wait_then_answer(text: String) -> String {
    text
}

/// Does nothing and returns nothing.
#[tool(create)]
fn nothing() {}

#[test]
fn runs() {
    assert_eq!(add(1, 2), 3);
    assert_eq!(<add as Tool>::definition().safety, Safety::ReadOnly);
    assert_eq!(<wait_then_answer as Tool>::NAME, "wait-then-answer");
    let _future = wait_then_answer("x".into());
    nothing();
    assert!(<nothing as Tool>::definition().output_schema.is_none());
}
