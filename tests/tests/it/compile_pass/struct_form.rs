use serde::Deserialize;
use tool_runtime::{CallContext, Tool, ToolError, definition::Safety, tool, tool::Run};

/// Deletes a note.
#[tool(modify, reversible)]
struct DeleteNote {
    /// The note's id
    id: u64,
    #[arg(default = 3, min = 1)]
    retries: u8,
}

impl Run for DeleteNote {
    type Output = bool;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<bool, ToolError> {
        Ok(self.id > u64::from(self.retries))
    }
}

/// Already derives Deserialize itself, and renames its fields.
#[tool(read_only)]
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct GetWeather {
    city_name: String,
}

impl Run for GetWeather {
    type Output = String;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<String, ToolError> {
        Ok(self.city_name)
    }
}

#[test]
fn runs() {
    let def = <DeleteNote as Tool>::definition();
    assert_eq!(def.name, "delete_note");
    assert_eq!(def.safety, Safety::Modify);
    assert!(def.reversible);
    assert_eq!(<GetWeather as Tool>::NAME, "get_weather");
}
