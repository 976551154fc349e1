//! `gnorm_annotate`: named entities in a passage, from GNORM.
//!
//! The service takes `POST {url}/annotate` with `{"text": ..., "entity_types": [...]}` and
//! answers `{"annotations": [...]}`, each annotation with the entity's text, its type, its
//! character offsets in the passage, the identifier it was normalised to (when it was), a
//! confidence between 0 and 1, and an epistemic indicator (`factual` for an identification the
//! service is sure of, `interpretive` for one a person should check).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{State, ToolError, tool};

use super::{Service, Services, timed};

/// What is sent to GNORM: the tool's arguments and nothing else.
#[derive(Debug, Serialize)]
struct Request<'a> {
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    entity_types: Option<&'a [String]>,
}

#[derive(Debug, Deserialize)]
struct Response {
    annotations: Vec<Annotation>,
}

/// One entity as GNORM reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    /// The entity as written in the passage.
    #[serde(alias = "text")]
    pub entity_text: String,
    /// Its type (Person, Place, Concept, ...).
    #[serde(alias = "type")]
    pub entity_type: String,
    /// Where it starts in the passage, in characters.
    pub start: usize,
    /// Where it ends (exclusive), in characters.
    pub end: usize,
    /// What it was normalised to (an authority identifier), when it was.
    #[serde(default, alias = "id")]
    pub normalized_id: Option<String>,
    /// How sure the service is, from 0 to 1.
    pub confidence: f64,
    /// `factual` or `interpretive`.
    #[serde(default)]
    pub epistemic_indicator: Option<String>,
}

/// Annotates a passage with named entities (people, places, works, concepts) using GNORM, the
/// ITSERR project's entity annotation service. External: the passage and the entity types asked
/// for are sent to the GNORM service; nothing else (no notes, no bibliography) leaves this
/// machine. Each entity comes with its offsets, the identifier it was normalised to and a
/// confidence.
#[tool(
    external,
    idempotent,
    intent = "Send the passage to GNORM for entity annotation",
    timeout = "30s"
)]
pub async fn gnorm_annotate(
    /// The passage to annotate, as the user quoted it.
    #[arg(min_length = 1, max_length = 20000)]
    text: String,
    /// Only these entity types (e.g. Person, Place, Concept); every type when absent.
    entity_types: Option<Vec<String>>,
    State(services): State<Services>,
) -> Result<Value, ToolError> {
    let service = &services.gnorm;
    let url = service.url("annotate")?;
    let body = Request {
        text: &text,
        entity_types: entity_types.as_deref(),
    };
    let (answer, execution_ms) =
        timed(service.send::<Response>(service.http.post(&url).json(&body))).await;
    let Some(response) = answer? else {
        return Err(service.malformed(format!("{url} does not exist (HTTP 404)")));
    };
    let annotations = checked(service, &text, response.annotations)?;
    Ok(json!({
        "service": "GNORM",
        "count": annotations.len(),
        "annotations": annotations,
        "execution_ms": execution_ms,
    }))
}

/// The annotations, refused when one does not describe the passage that was sent (offsets
/// outside it, a confidence that is not a probability): such an answer comes from the wrong
/// service or a broken one, and its entities cannot be trusted.
fn checked(
    service: &Service,
    text: &str,
    annotations: Vec<Annotation>,
) -> Result<Vec<Annotation>, ToolError> {
    let chars = text.chars().count();
    for (i, a) in annotations.iter().enumerate() {
        if a.start >= a.end || a.end > chars {
            return Err(service
                .malformed(format!(
                    "annotation {i} ({:?}) spans characters {}..{} of a passage of {chars}",
                    a.entity_text, a.start, a.end
                ))
                .with_detail("annotation", i));
        }
        if !(0.0..=1.0).contains(&a.confidence) {
            return Err(service
                .malformed(format!(
                    "annotation {i} ({:?}) has the confidence {}, not a value from 0 to 1",
                    a.entity_text, a.confidence
                ))
                .with_detail("annotation", i));
        }
    }
    Ok(annotations)
}
