use tool_runtime::{State, tool};

#[derive(Clone)]
struct Db;

/// `#[arg]` shapes what the model sends; state is not sent.
#[tool(read_only)]
fn count(
    /// The text.
    query: String,
    #[arg(default)] State(db): State<Db>,
) -> usize {
    let _ = db;
    query.len()
}

fn main() {}
