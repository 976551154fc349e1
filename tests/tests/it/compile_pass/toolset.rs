use tool_runtime::{ToolSet, tool, toolset};

/// One.
#[tool(read_only)]
fn one() -> u8 {
    1
}

/// Two.
#[tool(read_only)]
fn two() -> u8 {
    2
}

mod nested {
    use tool_runtime::tool;

    /// Three, from a module.
    #[tool(read_only)]
    pub fn three() -> u8 {
        3
    }
}

#[test]
fn runs() {
    let set: ToolSet = toolset![one, two, nested::three].expect("unique names");
    assert_eq!(set.len(), 3);
    let empty = toolset![].unwrap();
    assert!(empty.is_empty());
}
