//! What the graph agent adds to an executor: a preview of every change a person is asked to
//! approve (computed from the graph as it is, so the person sees the actual new values), and
//! undo for every tool that changes the graph (restoring the snapshot the change wrote).

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::executor::{Change, ExecutorBuilder};
use tool_runtime::store::{InverseCall, Store};
use tool_runtime::{Tool, ToolError};

use super::analysis::{edge_confidence, node_confidence};
use super::db::{Edge, GraphDb};
use super::similarity::Similarity;
use super::summary::cut;
use super::tools::{self, batch};

/// What previews read.
#[derive(Clone)]
struct Ctx {
    db: GraphDb,
    sim: Similarity,
}

type Describe<T> = fn(&Ctx, <T as Tool>::Args) -> Result<Change, ToolError>;

fn preview<T: Tool>(b: ExecutorBuilder, cx: &Ctx, f: Describe<T>) -> ExecutorBuilder
where
    T::Args: Send + 'static,
{
    let cx = cx.clone();
    b.preview::<T>(move |args, _| {
        let cx = cx.clone();
        async move { f(&cx, args) }.boxed()
    })
}

/// The undo of a change that returned `snapshot_id` (or `snapshot_ids`).
fn restore(out: &Value) -> Option<InverseCall> {
    let ids = match (&out["snapshot_id"], &out["snapshot_ids"]) {
        (Value::Number(n), _) => vec![n.as_i64()?],
        (_, Value::Array(a)) => a.iter().filter_map(Value::as_i64).collect(),
        _ => return None,
    };
    Some(InverseCall::to::<tools::restore_snapshot>(
        json!({"snapshot_ids": ids}),
    ))
}

/// How a relationship is named in a change: `obs-1 SUPPORTS hyp-2`.
fn edge_label(e: &Edge) -> String {
    format!(
        "relationship {} ({} {} {})",
        e.id, e.from_id, e.rel_type, e.to_id
    )
}

/// The reasons behind a computed confidence, one note each.
fn factors(mut change: Change, factors: &[(String, String)]) -> Change {
    for (factor, impact) in factors {
        change = change.note(format!("{factor}: {impact}"));
    }
    change
}

/// Adds `store`, the previews and the undo planners to `builder`. The configuration and the
/// confirmation handler stay the builder's.
pub fn configure(
    builder: ExecutorBuilder,
    db: GraphDb,
    sim: Similarity,
    store: Arc<dyn Store>,
) -> ExecutorBuilder {
    let cx = Ctx { db, sim };
    let mut b = builder.store(store);
    b = preview::<tools::delete_node>(b, &cx, |cx, a| {
        let n = cx.db.node(&a.node_id)?;
        let edges = cx.db.edges_of(&a.node_id)?.len();
        Ok(Change::new()
            .removed(format!("{} {}", n.kind, n.id), cut(&n.content, 160))
            .touches(edges, "relationships will be removed with it"))
    });
    b = preview::<tools::update_node>(b, &cx, |cx, a| {
        let n = cx.db.node(&a.node_id)?;
        let mut change = Change::new();
        if let Some(c) = a.content {
            change = change.replaced("content", n.content, c);
        }
        if let Some(c) = a.confidence {
            change = change.replaced("confidence", n.confidence, c);
        }
        Ok(change)
    });
    b = preview::<tools::merge_nodes>(b, &cx, |cx, a| {
        let p = cx.db.node(&a.primary_node_id)?;
        let s = cx.db.node(&a.secondary_node_id)?;
        let (moved, dropped) = cx.db.merge_moves(&p.id, &s.id)?;
        let content = a.merge_strategy.unwrap_or_default().content(&p, &s);
        Ok(Change::new()
            .replaced(format!("{} content", p.id), p.content.as_str(), content)
            .replaced(
                format!("{} confidence", p.id),
                p.confidence,
                p.confidence.max(s.confidence),
            )
            .removed(format!("{} {}", s.kind, s.id), cut(&s.content, 160))
            .touches(
                moved,
                format!("relationships move from {} to {}", s.id, p.id),
            )
            .touches(
                dropped,
                "relationships will be removed (repeats or self-links)",
            ))
    });
    b = preview::<tools::reclassify_node>(b, &cx, |cx, a| {
        let n = cx.db.node(&a.node_id)?;
        let edges = cx.db.edges_of(&a.node_id)?.len();
        let lost = if a.preserve_relationships.unwrap_or(true) {
            0
        } else {
            edges
        };
        Ok(Change::new()
            .replaced("type", n.kind, a.new_type.as_str())
            .touches(lost, "relationships will be removed"))
    });
    b = preview::<tools::recalculate_node_confidence>(b, &cx, |cx, a| {
        let r = node_confidence(
            &cx.db,
            &a.node_id,
            a.factor_in_relationships.unwrap_or(true),
        )?;
        let change = Change::new().replaced("confidence", r.old, r.new);
        Ok(factors(change, &r.factors))
    });
    b = preview::<tools::delete_relationship>(b, &cx, |cx, a| {
        let e = cx.db.edge(a.edge_id)?;
        let mut change = Change::new().removed(edge_label(&e), e.confidence);
        if let Some(notes) = &e.notes {
            change = change.removed("its notes", notes.as_str());
        }
        Ok(change)
    });
    b = preview::<tools::update_relationship>(b, &cx, |cx, a| {
        let e = cx.db.edge(a.edge_id)?;
        let mut change = Change::new();
        if let Some(t) = a.relationship_type {
            change = change.replaced("type", e.rel_type.as_str(), t.as_str());
        }
        if let Some(c) = a.confidence {
            change = change.replaced("confidence", e.confidence, c);
        }
        if let Some(n) = a.notes {
            // an empty text removes the notes
            change = change.replaced("notes", e.notes.clone(), Some(n).filter(|n| !n.is_empty()));
        }
        Ok(change)
    });
    b = preview::<tools::recalculate_edge_confidence>(b, &cx, |cx, a| {
        let r = edge_confidence(
            &cx.db,
            &cx.sim,
            a.edge_id,
            a.consider_graph_structure.unwrap_or(true),
        )?;
        let change = Change::new().replaced("confidence", r.old, r.new);
        Ok(factors(change, &r.factors))
    });
    b = preview::<tools::reclassify_relationship>(b, &cx, |cx, a| {
        let e = cx.db.edge(a.edge_id)?;
        let (target, why) = tools::edges::target_type(&cx.db, a.edge_id, a.new_type)?;
        let mut change = Change::new().replaced(edge_label(&e), e.rel_type.as_str(), target);
        if !a.preserve_notes.unwrap_or(true)
            && let Some(notes) = &e.notes
        {
            change = change.removed("its notes", notes.as_str());
        }
        Ok(change.note(why))
    });
    b = preview::<tools::link_related_nodes>(b, &cx, |cx, a| {
        let node = cx.db.node(&a.node_id)?;
        let links = tools::analysis::planned_links(
            &cx.db,
            &cx.sim,
            &node,
            a.limit.unwrap_or(10) as usize,
            a.min_similarity,
        )?;
        let mut change = Change::new();
        for l in &links {
            change = change.added(
                format!("relationship {} {} {}", l.from_id, l.rel_type, l.to_id),
                l.confidence,
            );
        }
        if links.is_empty() {
            change = change.note("No new relationships: every related node is linked already.");
        }
        Ok(change)
    });
    b = preview::<tools::apply_to_nodes>(b, &cx, |cx, a| {
        let o = batch::BatchOptions {
            operation: a.operation,
            new_type: a.new_type,
            preserve_relationships: a.preserve_relationships.unwrap_or(true),
            cascade: a.cascade.unwrap_or(false),
            factor_in_relationships: a.factor_in_relationships.unwrap_or(true),
        };
        let change = batch::plan(&cx.db, &a.node_ids, o)?;
        Ok(change.note(format!(
            "{} on {} nodes, all or none.",
            a.operation.tool_name(),
            a.node_ids.len()
        )))
    });
    b.undo::<tools::create_node>(|_, out| restore(out))
        .undo::<tools::update_node>(|_, out| restore(out))
        .undo::<tools::delete_node>(|_, out| {
            Some(InverseCall::to::<tools::restore_snapshot>(
                json!({"snapshot_ids": [out.snapshot_id]}),
            ))
        })
        .undo::<tools::merge_nodes>(|_, out| restore(out))
        .undo::<tools::reclassify_node>(|_, out| restore(out))
        .undo::<tools::recalculate_node_confidence>(|_, out| restore(out))
        .undo::<tools::create_relationship>(|_, out| restore(out))
        .undo::<tools::link_related_nodes>(|_, out| restore(out))
        .undo::<tools::update_relationship>(|_, out| restore(out))
        .undo::<tools::delete_relationship>(|_, out| restore(out))
        .undo::<tools::recalculate_edge_confidence>(|_, out| restore(out))
        .undo::<tools::reclassify_relationship>(|_, out| restore(out))
        .undo::<tools::apply_to_nodes>(|_, out| restore(out))
        .undo::<tools::search_web_for_evidence>(|_, out| restore(out))
}
