//! Summaries of nodes and relationships: written by the agent's model when one is configured,
//! extractive (the text's own sentences, cut to length) otherwise or when the model fails, so a
//! summary is always there and says how it was made.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tool_providers::agent::ChatModel;
use tool_providers::codec::ToolConfig;

/// How long one summary may wait for the model before the extractive one is used instead, so
/// a slow model leaves the tool within its own timeout.
pub const MODEL_BUDGET: Duration = Duration::from_secs(25);

/// Who writes summaries.
#[derive(Clone, Debug, Default)]
pub struct Summarizer {
    model: Option<Arc<ChatModel>>,
}

/// A summary and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The text, at most the requested length.
    pub text: String,
    /// `model`, or `extractive` (with the model's failure when it failed).
    pub method: String,
}

/// Cuts `text` to at most `max` characters, at a word boundary where one is near, with an
/// ellipsis when it was cut.
pub fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max.saturating_sub(1)).collect();
    let head = match head.rfind(' ') {
        Some(i) if i > head.len() / 2 => &head[..i],
        _ => head.as_str(),
    };
    format!("{}…", head.trim_end_matches([',', ';', ' ']))
}

/// The sentences of a text (split at `.`, `;`, `!`, `?`), trimmed.
pub fn sentences(text: &str) -> Vec<String> {
    text.split(['.', ';', '!', '?'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Summarizer {
    /// Extractive summaries only.
    pub fn extractive() -> Self {
        Summarizer::default()
    }

    /// Summaries written by `model`.
    pub fn model(model: ChatModel) -> Self {
        Summarizer {
            model: Some(Arc::new(model)),
        }
    }

    /// Whether a model writes the summaries.
    pub fn has_model(&self) -> bool {
        self.model.is_some()
    }

    /// A summary of `text` (what `subject` says) in at most `max` characters.
    pub async fn summarize(&self, subject: &str, text: &str, max: usize) -> Summary {
        let extractive = |method: String| Summary {
            text: cut(&format!("{}.", sentences(text).join(". ")), max),
            method,
        };
        let Some(model) = &self.model else {
            return extractive("extractive".into());
        };
        let asked = tokio::time::timeout(MODEL_BUDGET, self.ask(model, subject, text, max)).await;
        let answer =
            asked.unwrap_or_else(|_| Err(format!("no answer within {} s", MODEL_BUDGET.as_secs())));
        match answer {
            Ok(answer) if !answer.trim().is_empty() => Summary {
                text: cut(&answer, max),
                method: "model".into(),
            },
            Ok(_) => extractive("extractive (the model answered nothing)".into()),
            Err(e) => extractive(format!("extractive (the model failed: {e})")),
        }
    }

    async fn ask(
        &self,
        model: &ChatModel,
        subject: &str,
        text: &str,
        max: usize,
    ) -> Result<String, String> {
        let system = "You summarise entries of a research knowledge graph. Answer with the \
                      summary only, one or two sentences, no preamble.";
        let prompt = format!("Summarise {subject} in at most {max} characters:\n\n{text}");
        let mut body = model
            .request(
                Some(system),
                &[model.user_message(&prompt)],
                &[],
                &ToolConfig::default(),
            )
            .map_err(|e| e.to_string())?;
        // Room for the requested characters (about four per token) and no more.
        body.insert("max_tokens", Value::from((max / 3 + 16) as u64));
        let turn = model
            .complete(&body, &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
        Ok(turn.decoded.text)
    }
}
