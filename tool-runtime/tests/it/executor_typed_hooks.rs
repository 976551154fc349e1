//! Undo planners and previewers registered for typed tools: each gets the tool's own argument and
//! output types, and names the tool (and the inverse) by its type rather than by a string.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_runtime::executor::{Answer, Executor, ExecutorConfig};
use tool_runtime::store::{InverseCall, MemoryStore};
use tool_runtime::{CallContext, State, ToolCall, ToolError, tool, toolset};

use crate::executor_support::{Person, quick};

#[derive(Clone, Default)]
struct Notes(Arc<Mutex<BTreeMap<u32, String>>>);

/// What `create_note` returns, read back by the undo planner.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Created {
    id: u32,
    title: String,
}

/// Creates a note.
#[tool(create, reversible)]
fn create_note(
    /// The title.
    title: String,
    State(notes): State<Notes>,
) -> Created {
    let mut map = notes.0.lock().unwrap();
    let id = map.len() as u32 + 1;
    map.insert(id, title.clone());
    Created { id, title }
}

/// Deletes a note.
#[tool(modify)]
fn delete_note(
    /// The note.
    id: u32,
    State(notes): State<Notes>,
) -> Result<String, ToolError> {
    notes
        .0
        .lock()
        .unwrap()
        .remove(&id)
        .ok_or_else(|| ToolError::execution(format!("no note {id}")))
}

fn executor(notes: &Notes, person: &Person) -> Executor {
    let set = toolset![create_note, delete_note]
        .unwrap()
        .with_state(notes.clone());
    let for_preview = notes.clone();
    Executor::builder(set)
        .config(ExecutorConfig {
            auto_confirm_create: true,
            ..quick()
        })
        .store(Arc::new(MemoryStore::new()))
        .confirmation(person.clone())
        .undo::<create_note>(|args, created| {
            // the planner reads the typed output; a title it refuses plans no undo
            (args.title != "keep")
                .then(|| InverseCall::to::<delete_note>(json!({"id": created.id})))
        })
        .preview::<delete_note>(move |args, _cx| {
            let notes = for_preview.clone();
            async move {
                let title = notes.0.lock().unwrap().get(&args.id).cloned();
                Ok(tool_runtime::executor::Change::new()
                    .removed(format!("note {}", args.id), title))
            }
            .boxed()
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_typed_planner_reads_the_output_and_names_the_inverse_by_type() {
    let notes = Notes::default();
    let person = Person::default();
    let exec = executor(&notes, &person);
    let created = exec
        .call(
            &ToolCall::new("c1", "create_note", json!({"title": "Gadamer"})),
            CallContext::new(""),
        )
        .await;
    assert_eq!(created.value(), Some(&json!({"id": 1, "title": "Gadamer"})));
    assert!(created.undo_id().is_some(), "{created:?}");

    let undone = exec.undo("c1", CallContext::new("")).await;
    assert_eq!(undone.tool, "delete_note");
    assert_eq!(undone.value(), Some(&json!("Gadamer")));
    assert!(notes.0.lock().unwrap().is_empty());

    // the planner said no for this one: the call ran, and no undo was journaled
    let kept = exec
        .call(
            &ToolCall::new("c2", "create_note", json!({"title": "keep"})),
            CallContext::new(""),
        )
        .await;
    assert!(kept.value().is_some());
    assert!(kept.undo_id().is_none(), "{kept:?}");
}

#[tokio::test]
async fn a_typed_previewer_gets_the_tools_own_arguments() {
    let notes = Notes::default();
    notes.0.lock().unwrap().insert(7, "Ricoeur".into());
    let person = Person::answering([Answer::No { reason: None }]);
    let exec = executor(&notes, &person);
    let denied = exec
        .call(
            &ToolCall::new("d1", "delete_note", json!({"id": 7})),
            CallContext::new(""),
        )
        .await;
    assert!(denied.value().is_none());
    let asked = person.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].preview.change,
        Some(tool_runtime::executor::Change::new().removed("note 7", "Ricoeur"))
    );
    assert_eq!(notes.0.lock().unwrap().len(), 1, "denied: nothing deleted");
}
