//! The embedding and hybrid scorers on small catalogs, with embedders that need no model: a
//! bag of words over a fixed vocabulary, and one that counts what it embedded (the cache).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use serde_json::json;
use tool_runtime::select::{
    Embedder, EmbeddingScorer, Fusion, HybridScorer, LlmScorer, PickOptions, RelevanceClassifier,
    classification_prompt, parse_relevance,
};
use tool_runtime::{ToolError, definition::ToolDefinition};

use crate::select_pick::{catalog, read_only};

/// A bag-of-words embedder over a fixed vocabulary, so the embedding machinery is tested without
/// a model: vectors count vocabulary words.
pub(crate) struct Bow;

const VOCAB: [&str; 8] = [
    "weather",
    "city",
    "factorial",
    "number",
    "notes",
    "search",
    "money",
    "stock",
];

impl Embedder for Bow {
    fn model(&self) -> &str {
        "bow-test"
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> futures::future::BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>> {
        let out = texts
            .iter()
            .map(|t| {
                let t = t.to_lowercase();
                let mut v: Vec<f32> = VOCAB.iter().map(|w| t.matches(w).count() as f32).collect();
                v.push(0.01); // never the zero vector
                v
            })
            .collect();
        futures::future::ready(Ok(out)).boxed()
    }
}

/// Counts how many texts it embedded, to check the cache.
struct Counting(AtomicUsize);

impl Embedder for Counting {
    fn model(&self) -> &str {
        "counting"
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> futures::future::BoxFuture<'a, Result<Vec<Vec<f32>>, ToolError>> {
        self.0.fetch_add(texts.len(), Ordering::SeqCst);
        Bow.embed(texts)
    }
}

#[tokio::test]
async fn embedding_scorer_caches_tool_embeddings_and_ranks_by_similarity() {
    let counting = Arc::new(Counting(AtomicUsize::new(0)));
    let scorer = Arc::new(EmbeddingScorer::new(counting.clone()));
    let mut cat = catalog();
    scorer.warm(&cat).await.unwrap();
    assert_eq!(counting.0.load(Ordering::SeqCst), 6);
    let opts = PickOptions::new().scorer(scorer.clone()).allow_unsafe(true);
    let picked = cat.pick("stock", &opts).await.unwrap();
    assert_eq!(picked[0].name(), "get_stock_price");
    assert!(picked[0].reason.starts_with("semantic similarity"));
    // Only the query was embedded: tool embeddings come from the cache.
    assert_eq!(counting.0.load(Ordering::SeqCst), 7);

    // A changed description is re-embedded; unchanged tools are not.
    cat.remove("get_weather");
    cat.insert(read_only("get_weather", "Stock weather"))
        .unwrap();
    cat.pick("stock", &opts).await.unwrap();
    assert_eq!(counting.0.load(Ordering::SeqCst), 9);
    assert_eq!(scorer.cached(), 6);
}

#[tokio::test]
async fn hybrid_combines_both_signals_with_configurable_weights() {
    let semantic = Arc::new(EmbeddingScorer::new(Arc::new(Bow)));
    let cat = catalog();
    let lexical_only = HybridScorer::new(semantic.clone()).weights(1.0, 0.0);
    let bm25 = cat
        .pick("factorial of a number", &PickOptions::new())
        .await
        .unwrap();
    let hybrid = cat
        .pick(
            "factorial of a number",
            &PickOptions::new().scorer(Arc::new(lexical_only)),
        )
        .await
        .unwrap();
    assert_eq!(hybrid[0].name(), "math.factorial");
    assert!((hybrid[0].score - bm25[0].score).abs() < 1e-6);

    let default = HybridScorer::new(semantic);
    let picked = cat
        .pick(
            "money",
            &PickOptions::new().scorer(Arc::new(default)).debug(true),
        )
        .await
        .unwrap();
    assert_eq!(picked[0].name(), "convert_currency");
    assert_eq!(picked[0].provenance.scorer, "hybrid");
    let d = picked[0].provenance.details.as_ref().unwrap();
    assert_eq!(d["weights"], json!([0.5, 0.5]));
}

#[tokio::test]
async fn reciprocal_rank_fusion_ranks_by_both_orders_and_stays_within_0_and_1() {
    let semantic = Arc::new(EmbeddingScorer::new(Arc::new(Bow)));
    let cat = catalog();
    let rrf = HybridScorer::new(semantic).fusion(Fusion::reciprocal_rank(60.0));
    let picked = cat
        .pick(
            "stock price",
            &PickOptions::new()
                .scorer(Arc::new(rrf))
                .allow_unsafe(true)
                .min_score(0.0)
                .max_candidates(10)
                .debug(true),
        )
        .await
        .unwrap();
    // first in both rankings: the top fused score, 1.0 exactly
    assert_eq!(picked[0].name(), "get_stock_price");
    assert!((picked[0].score - 1.0).abs() < 1e-9, "{}", picked[0].score);
    let d = picked[0].provenance.details.as_ref().unwrap();
    assert_eq!(d["reciprocal_rank_k"], json!(60.0));
    assert!(picked.iter().all(|c| (0.0..=1.0).contains(&c.score)));
    assert!(picked.windows(2).all(|w| w[0].score >= w[1].score));
    // k below 1 would divide by zero at rank 0: it is raised to 1
    assert_eq!(
        Fusion::reciprocal_rank(0.0),
        Fusion::ReciprocalRank { k: 1.0 }
    );
    assert_eq!(
        Fusion::weighted(-1.0, 0.0),
        Fusion::Weighted {
            lexical: 0.5,
            semantic: 0.5
        }
    );
}

struct Judge;

impl RelevanceClassifier for Judge {
    fn model(&self) -> &str {
        "judge-test"
    }

    fn classify<'a>(
        &'a self,
        query: &'a str,
        tools: &'a [&'a ToolDefinition],
    ) -> futures::future::BoxFuture<'a, Result<Vec<f64>, ToolError>> {
        // What a provider client does: send the prompt, parse the answer.
        let prompt = classification_prompt(query, tools);
        let answer = format!(
            "Sure: [{}]",
            tools
                .iter()
                .map(|t| if t.name.contains("stock") {
                    "0.95"
                } else {
                    "0.05"
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(prompt.contains("1. "));
        futures::future::ready(parse_relevance(&answer, tools.len())).boxed()
    }
}

#[tokio::test]
async fn llm_scorer_rates_a_shortlist_through_the_classifier_trait() {
    let scorer = LlmScorer::new(Arc::new(Judge)).shortlist(3);
    let picked = catalog()
        .pick(
            "what does AAPL trade at",
            &PickOptions::new().scorer(Arc::new(scorer)),
        )
        .await
        .unwrap();
    assert_eq!(picked[0].name(), "get_stock_price");
    assert_eq!(picked[0].reason, "rated 0.95 by judge-test");
    assert!(parse_relevance("no idea", 2).is_err());
    assert!(
        parse_relevance("[0.1]", 2)
            .unwrap_err()
            .message
            .contains("rates 1 tools")
    );
    assert_eq!(parse_relevance("[2, -1]", 2).unwrap(), [1.0, 0.0]);
}
