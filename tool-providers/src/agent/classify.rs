//! The LLM-classifier scorer over the provider clients: a [`ChatModel`] rates a shortlist of
//! tools for a request, so [`tool_runtime::select::LlmScorer`] works against any provider.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use tool_providers::agent::ChatModel;
//! # use tool_providers::http::{HttpClient, Provider};
//! # use tool_runtime::select::{Catalog, LlmScorer, PickOptions};
//! # async fn demo(catalog: Catalog) -> Result<(), Box<dyn std::error::Error>> {
//! let judge = ChatModel::new(HttpClient::from_env(Provider::Anthropic)?);
//! let options = PickOptions::new().scorer(Arc::new(LlmScorer::new(Arc::new(judge))));
//! let picked = catalog.pick("book a table for two tonight", &options).await?;
//! # Ok(()) }
//! ```

use futures::FutureExt;
use futures::future::BoxFuture;
use tool_runtime::select::{RelevanceClassifier, classification_prompt, parse_relevance};
use tool_runtime::{ErrorCode, ToolError, definition::ToolDefinition};

use super::AgentError;
use super::model::ChatModel;
use crate::codec::ToolConfig;

/// The system prompt of a classification request.
const JUDGE: &str = "You judge which tools fit a user's request. You never call tools and never \
                     explain: you answer with the JSON array you are asked for, nothing else.";

impl RelevanceClassifier for ChatModel {
    fn model(&self) -> &str {
        self.model_name()
    }

    /// One plain request (no tools declared) with [`classification_prompt`], the answer read
    /// with [`parse_relevance`]. Transport failures become retryable errors when the provider
    /// said to retry (429, 5xx); an answer without the array is an `INVALID_JSON` error.
    fn classify<'a>(
        &'a self,
        query: &'a str,
        tools: &'a [&'a ToolDefinition],
    ) -> BoxFuture<'a, Result<Vec<f64>, ToolError>> {
        async move {
            let prompt = classification_prompt(query, tools);
            let conversation = [self.user_message(&prompt)];
            let body = self
                .request(Some(JUDGE), &conversation, &[], &ToolConfig::default())
                .map_err(|e| failed(self, e))?;
            let turn = self
                .complete(&body, &mut |_| {})
                .await
                .map_err(|e| failed(self, e))?;
            relevance_in(&turn.decoded.text, tools.len())
        }
        .boxed()
    }
}

/// The first JSON array of `expected` numbers in `text`. Models sometimes put bracketed words
/// before the array (`[Answer] [0.2, 0.9]`), which `parse_relevance` alone, reading from the
/// first `[`, would reject; so each `[` is tried in turn.
// ToolError is the error every layer hands back to a model; its size is the project's choice.
#[allow(clippy::result_large_err)]
fn relevance_in(text: &str, expected: usize) -> Result<Vec<f64>, ToolError> {
    let mut first_err = None;
    for (at, _) in text.match_indices('[') {
        match parse_relevance(&text[at..], expected) {
            Ok(scores) => return Ok(scores),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| {
        parse_relevance(text, expected).expect_err("a text without '[' holds no array")
    }))
}

fn failed(model: &ChatModel, e: AgentError) -> ToolError {
    let retryable = match &e {
        AgentError::Http(h) => h.is_retryable(),
        _ => false,
    };
    ToolError::new(
        ErrorCode::EXECUTION_FAILED,
        format!("the classifier model {:?} failed: {e}", model.model_name()),
    )
    .retryable(retryable)
    .recover("pick with another scorer (the default BM25 needs no model)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_array_is_found_after_bracketed_words() {
        assert_eq!(
            relevance_in("[Answer] here: [0.2, 0.9]", 2).unwrap(),
            vec![0.2, 0.9]
        );
        assert_eq!(relevance_in("[1, 2] [0.5]", 1).unwrap(), vec![0.5]);
        let e = relevance_in("[note] none", 2).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_JSON);
        let e = relevance_in("no array at all", 2).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_JSON);
    }
}
