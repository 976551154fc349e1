use tool_runtime::{
    CallContext, State, Tool, ToolError, tool,
    tool::{CorrelationId, Session},
};

#[derive(Clone)]
struct Db;

/// Loads a note.
#[tool(read_only)]
async fn load_note(
    id: u64,
    State(_db): State<Db>,
    _corr: CorrelationId,
    _session: Session,
    _cx: &CallContext,
) -> Result<String, ToolError> {
    Ok(id.to_string())
}

/// A body whose error is an `io::Error`, which converts into ToolError.
#[tool(read_only)]
fn read_file(path: String) -> Result<String, std::io::Error> {
    std::fs::read_to_string(path)
}

#[test]
fn runs() {
    assert_eq!(<load_note as Tool>::required_state().len(), 1);
    assert!(<read_file as Tool>::required_state().is_empty());
}
