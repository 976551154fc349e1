//! The suite's fixtures for what a tool asks of the client while it runs: log entries
//! (`notifications/message`), sampling (`sampling/createMessage`) and questions
//! (`elicitation/create`, with defaults and every kind of choice), each a plain `#[tool]`
//! through `CallContext`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tool_runtime::host::{LogLevel, Reply, SampleRequest};
use tool_runtime::{CallContext, ToolError, ToolSet, tool};

/// `set` with these fixtures.
pub(super) fn register(set: ToolSet) -> Result<ToolSet, Box<dyn std::error::Error + Send + Sync>> {
    Ok(set
        .with::<test_tool_with_logging>()?
        .with::<test_sampling>()?
        .with::<test_elicitation>()?
        .with::<test_elicitation_sep1034_defaults>()?
        .with::<test_elicitation_sep1330_enums>()?)
}

/// Tests tool that sends log messages during execution: three at info, 50 ms apart.
#[tool(read_only)]
pub async fn test_tool_with_logging(cx: &CallContext) -> String {
    cx.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LogLevel::Info, "Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully".to_owned()
}

/// Tests LLM sampling: asks the client's model the prompt.
#[tool(read_only)]
pub async fn test_sampling(
    cx: &CallContext,
    /// The prompt to send to the LLM.
    prompt: String,
) -> Result<String, ToolError> {
    let sampled = cx
        .sample(SampleRequest::new(prompt).max_tokens(100))
        .await?;
    Ok(format!("LLM response: {}", sampled.text))
}

/// The person's details [`test_elicitation`] asks for.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UserInfo {
    /// User's response
    pub username: String,
    /// User's email address
    pub email: String,
}

/// Tests elicitation: asks the person for a name and an email address.
#[tool(read_only)]
pub async fn test_elicitation(
    cx: &CallContext,
    /// The message to show the user.
    message: String,
) -> Result<String, ToolError> {
    let reply = cx.ask::<UserInfo>(message).await?;
    Ok(format!("User response: {}", described(reply)))
}

/// A single choice of [`Defaults`].
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Inactive,
    Pending,
}

fn john_doe() -> String {
    "John Doe".to_owned()
}
fn thirty() -> i64 {
    30
}
fn ninety_five_and_a_half() -> f64 {
    95.5
}
fn active() -> Status {
    Status::Active
}
fn yes() -> bool {
    true
}

/// A form whose every field has a default (SEP-1034).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Defaults {
    #[serde(default = "john_doe")]
    pub name: String,
    #[serde(default = "thirty")]
    pub age: i64,
    #[serde(default = "ninety_five_and_a_half")]
    pub score: f64,
    #[serde(default = "active")]
    pub status: Status,
    #[serde(default = "yes")]
    pub verified: bool,
}

/// Tests elicitation with a default for every primitive type.
#[tool(read_only)]
pub async fn test_elicitation_sep1034_defaults(cx: &CallContext) -> Result<String, ToolError> {
    let reply = cx.ask::<Defaults>("Please review your details").await?;
    Ok(format!("Elicitation completed: {}", described(reply)))
}

/// A choice without titles.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Untitled {
    Option1,
    Option2,
    Option3,
}

/// A choice whose values have titles.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Titled {
    #[schemars(title = "First Option")]
    Value1,
    #[schemars(title = "Second Option")]
    Value2,
    #[schemars(title = "Third Option")]
    Value3,
}

/// A choice with titles in the older `enumNames` form.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
pub enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

/// A multiple choice whose values have titles.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TitledChoice {
    #[schemars(title = "First Choice")]
    Value1,
    #[schemars(title = "Second Choice")]
    Value2,
    #[schemars(title = "Third Choice")]
    Value3,
}

/// A form with every kind of choice (SEP-1330).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Choices {
    pub untitled_single: Untitled,
    pub titled_single: Titled,
    pub legacy_enum: Legacy,
    pub untitled_multi: Vec<Untitled>,
    pub titled_multi: Vec<TitledChoice>,
}

/// Tests elicitation with single and multiple choices, titled and not.
#[tool(read_only)]
pub async fn test_elicitation_sep1330_enums(cx: &CallContext) -> Result<String, ToolError> {
    let reply = cx.ask::<Choices>("Please make your choices").await?;
    Ok(format!("Elicitation completed: {}", described(reply)))
}

/// `action=..., content={...}`, as the suite's fixtures answer.
fn described<Q: Serialize>(reply: Reply<Q>) -> String {
    let action = match &reply {
        Reply::Accepted(_) => "accept",
        Reply::Declined => "decline",
        Reply::Cancelled => "cancel",
        Reply::TimedOut => "timeout",
    };
    let content = match &reply {
        Reply::Accepted(q) => serde_json::to_string(q).unwrap_or_default(),
        _ => "{}".to_owned(),
    };
    format!("action={action}, content={content}")
}
