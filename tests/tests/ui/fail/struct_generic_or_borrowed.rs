use tool_runtime::tool;

/// Generic over what it finds.
#[tool(read_only)]
struct FindAny<T> {
    /// The thing.
    thing: T,
}

/// Borrows its query.
#[tool(read_only)]
struct FindBorrowed<'a> {
    /// The text.
    query: &'a str,
}

/// Borrows for ever: still not something the model's arguments can be deserialized into.
#[tool(read_only)]
struct FindStatic {
    /// The text.
    query: &'static str,
}

fn main() {}
