//! Prompt-based tools for models without native function calling: same hydration as native calls.

use crate::common;

use tool_providers::codec::hydrate_call;
use tool_providers::codec::prompt::{parse_calls, system_prompt};

#[test]
fn calls_in_text_hydrate_like_native_ones() {
    let set = common::fixture_toolset();
    let defs: Vec<_> = set.definitions().collect();
    let prompt = system_prompt(&defs);
    assert!(
        prompt.contains(
            "- get_weather(city: string, unit?: \"c\"|\"f\"): Current weather for a city"
        ),
        "{prompt}"
    );

    let reply = "I'll check both cities.\n\
        <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}</tool_call>\n\
        <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"kelvin\"}}</tool_call>";
    let decoded = parse_calls(reply);
    assert_eq!(decoded.text, "I'll check both cities.");
    assert!(decoded.errors.is_empty());
    let paris = hydrate_call(&set, &decoded.calls[0]).unwrap();
    assert_eq!(
        paris.args::<common::WeatherArgs>().unwrap().unit,
        Some(common::Unit::C)
    );
    let err = hydrate_call(&set, &decoded.calls[1]).unwrap_err();
    assert_eq!(err.code.as_str(), "INVALID_ARGUMENTS");
    assert_eq!(err.violations[0].pointer, "/unit");
}

#[test]
fn plain_answers_have_no_calls() {
    let d = parse_calls("The weather in Paris is mild. Example: ```json\n{\"temp\": 15}\n```");
    assert!(d.calls.is_empty());
    assert!(d.errors.is_empty());
    assert!(d.text.contains("{\"temp\": 15}"));
}
