//! How alike two nodes' texts are: sentence embeddings (all-MiniLM-L6-v2 on the CPU) when the
//! examples are built with the `minilm` feature and `TOOLS_MINILM_DIR` names the model, word
//! overlap otherwise. The default build carries no model.

use tool_runtime::ToolError;

#[cfg(feature = "minilm")]
use tool_runtime::select::minilm::MiniLm;

/// Scores texts against a text, 0 to 1.
#[derive(Clone, Debug, Default)]
pub struct Similarity {
    #[cfg(feature = "minilm")]
    model: Option<MiniLm>,
}

impl Similarity {
    /// Word overlap (Jaccard similarity of the texts' words).
    pub fn words() -> Self {
        Similarity::default()
    }

    /// Embeddings when the `minilm` feature is on and `TOOLS_MINILM_DIR` is set (an error when
    /// the model there cannot be loaded), word overlap otherwise.
    pub fn from_env() -> Result<Self, ToolError> {
        #[cfg(feature = "minilm")]
        {
            if let Some(model) = MiniLm::from_env() {
                return Ok(Similarity {
                    model: Some(model?),
                });
            }
        }
        Ok(Similarity::words())
    }

    /// Embeddings from the model in `dir`.
    #[cfg(feature = "minilm")]
    pub fn minilm(dir: impl AsRef<std::path::Path>) -> Result<Self, ToolError> {
        Ok(Similarity {
            model: Some(MiniLm::load(dir)?),
        })
    }

    /// How the scores are computed, for the results.
    pub fn method(&self) -> &'static str {
        #[cfg(feature = "minilm")]
        if self.model.is_some() {
            return "embeddings (all-MiniLM-L6-v2, cosine)";
        }
        "word overlap (Jaccard)"
    }

    /// The similarity of `text` to each of `others`, in order.
    pub fn scores(&self, text: &str, others: &[String]) -> Result<Vec<f64>, ToolError> {
        #[cfg(feature = "minilm")]
        if let Some(model) = &self.model {
            let mut texts = Vec::with_capacity(others.len() + 1);
            texts.push(text.to_owned());
            texts.extend(others.iter().cloned());
            let vectors = model.embed_now(&texts)?;
            let (first, rest) = vectors.split_first().expect("at least the text itself");
            // The vectors are L2-normalised: the dot product is the cosine.
            return Ok(rest
                .iter()
                .map(|v| {
                    let dot: f32 = first.iter().zip(v).map(|(a, b)| a * b).sum();
                    f64::from(dot).clamp(0.0, 1.0)
                })
                .collect());
        }
        Ok(others
            .iter()
            .map(|o| super::db::similarity(text, o))
            .collect())
    }
}
