use tool_runtime::tool;

/// Logs in.
#[tool(external, sensitive = ["pasword"])]
fn login(user: String, password: String) -> bool {
    user.len() == password.len()
}

fn main() {}
