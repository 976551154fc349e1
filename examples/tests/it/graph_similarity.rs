//! How `find_related_nodes` scores similarity: word overlap in the default build, sentence
//! embeddings (all-MiniLM-L6-v2) with the `minilm` feature and `TOOLS_MINILM_DIR`
//! (`cargo test --workspace` turns the feature on through the `tests` crate; alone:
//! `cargo test -p examples --features minilm --test it graph_similarity`).

use serde_json::json;
use tool_runtime::executor::ExecutorConfig;

use examples::graph::{self, GraphDb, SearchService, Services, Similarity, Summarizer};

use crate::graph_tools::{run, value};

async fn related(similarity: Similarity, node: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let services = Services {
        similarity,
        summarizer: Summarizer::extractive(),
        search: SearchService::none(),
    };
    let exec = graph::executor_with(
        db,
        services,
        &dir.path().join("store.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap();
    value(&run(&exec, "r1", "find_related_nodes", json!({"node_id": node})).await)
}

#[tokio::test]
async fn word_overlap_finds_the_duplicate_observation() {
    let v = related(Similarity::words(), "obs-2").await;
    assert_eq!(v["method"], "word overlap (Jaccard)");
    let unlinked: Vec<&str> = v["related_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["linked"] == false)
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(unlinked.first(), Some(&"obs-1"), "{v}");
    // A text sharing no word with anything is related to nothing unlinked.
    let words = Similarity::words();
    let scores = words
        .scores("zebra", &["Coffee and hours".to_owned()])
        .unwrap();
    assert_eq!(scores, [0.0]);
}

#[cfg(feature = "minilm")]
#[tokio::test]
async fn embeddings_rank_by_meaning_when_the_model_is_there() {
    let Some(dir) = test_support::service(
        "TOOLS_MINILM_DIR",
        "the all-MiniLM-L6-v2 model directory, as .ci/run downloads it",
    ) else {
        return;
    };
    let sim = Similarity::minilm(&dir).unwrap();
    assert!(sim.method().starts_with("embeddings"), "{}", sim.method());
    // No shared word, same meaning: embeddings see it, word overlap cannot.
    let texts = [
        "People who have a cup of java put in more time at the office.".to_owned(),
        "Fatigue: the loss of capacity to work after sustained effort.".to_owned(),
        "Sleep quality drops when caffeine is consumed after 4 pm.".to_owned(),
    ];
    let query = "Coffee drinkers work longer days.";
    let scores = sim.scores(query, &texts).unwrap();
    assert!(scores[0] > scores[1] && scores[0] > scores[2], "{scores:?}");
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
    assert_eq!(
        Similarity::words().scores(query, &texts[..1]).unwrap(),
        [0.0]
    );

    let v = related(sim, "obs-2").await;
    assert!(
        v["method"].as_str().unwrap().starts_with("embeddings"),
        "{v}"
    );
    let first_unlinked = v["related_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["linked"] == false)
        .unwrap();
    assert_eq!(first_unlinked["id"], "obs-1", "{v}");
}
