//! What the graph agent adds to an executor: a preview of every change a person is asked to
//! approve (computed from the graph as it is, so the person sees the actual new values), and
//! undo for every tool that changes the graph (restoring the snapshot the change wrote).

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::executor::ExecutorBuilder;
use tool_runtime::store::{InverseCall, Store};
use tool_runtime::{Tool, ToolError};

use super::analysis::{edge_confidence, node_confidence};
use super::db::GraphDb;
use super::similarity::Similarity;
use super::summary::cut;
use super::tools::{self, batch};

/// What previews read.
#[derive(Clone)]
struct Ctx {
    db: GraphDb,
    sim: Similarity,
}

type Describe<T> = fn(&Ctx, <T as Tool>::Args) -> Result<Value, ToolError>;

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

fn node_line(cx: &Ctx, id: &str) -> Result<Value, ToolError> {
    let n = cx.db.node(id)?;
    Ok(
        json!({"node_id": n.id, "node_type": n.kind, "confidence": n.confidence,
              "content_preview": cut(&n.content, 80)}),
    )
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
        let mut p = node_line(cx, &a.node_id)?;
        p["relationships_affected"] = json!(cx.db.edges_of(&a.node_id)?.len());
        Ok(p)
    });
    b = preview::<tools::update_node>(b, &cx, |cx, a| {
        let n = cx.db.node(&a.node_id)?;
        let mut p = json!({"node_id": n.id});
        if let Some(c) = a.content {
            p["content"] = json!({"before": n.content, "after": c});
        }
        if let Some(c) = a.confidence {
            p["confidence"] = json!({"before": n.confidence, "after": c});
        }
        Ok(p)
    });
    b = preview::<tools::merge_nodes>(b, &cx, |cx, a| {
        let s = cx.db.node(&a.secondary_node_id)?;
        let (moved, dropped) = cx.db.merge_moves(&a.primary_node_id, &s.id)?;
        Ok(json!({"keep": cx.db.node(&a.primary_node_id)?, "remove": s,
                  "relationships_moved": moved, "relationships_dropped": dropped,
                  "strategy": a.merge_strategy.unwrap_or_default()}))
    });
    b = preview::<tools::reclassify_node>(b, &cx, |cx, a| {
        let mut p = node_line(cx, &a.node_id)?;
        let edges = cx.db.edges_of(&a.node_id)?.len();
        p["new_type"] = json!(a.new_type.as_str());
        p["relationships_removed"] = json!(if a.preserve_relationships.unwrap_or(true) {
            0
        } else {
            edges
        });
        Ok(p)
    });
    b = preview::<tools::recalculate_node_confidence>(b, &cx, |cx, a| {
        let r = node_confidence(
            &cx.db,
            &a.node_id,
            a.factor_in_relationships.unwrap_or(true),
        )?;
        Ok(
            json!({"node_id": a.node_id, "confidence": {"before": r.old, "after": r.new},
                  "factors": r.factors_json()}),
        )
    });
    b = preview::<tools::delete_relationship>(b, &cx, |cx, a| {
        let e = cx.db.edge(a.edge_id)?;
        Ok(json!({"delete": e, "from": node_line(cx, &e.from_id)?,
                  "to": node_line(cx, &e.to_id)?}))
    });
    b = preview::<tools::update_relationship>(b, &cx, |cx, a| {
        let e = cx.db.edge(a.edge_id)?;
        let mut after = e.clone();
        if let Some(t) = a.relationship_type {
            after.rel_type = t.as_str().into();
        }
        if let Some(c) = a.confidence {
            after.confidence = c;
        }
        if let Some(n) = a.notes {
            after.notes = Some(n).filter(|n| !n.is_empty());
        }
        Ok(json!({"before": e, "after": after}))
    });
    b = preview::<tools::recalculate_edge_confidence>(b, &cx, |cx, a| {
        let r = edge_confidence(
            &cx.db,
            &cx.sim,
            a.edge_id,
            a.consider_graph_structure.unwrap_or(true),
        )?;
        Ok(
            json!({"edge_id": a.edge_id, "confidence": {"before": r.old, "after": r.new},
                  "factors": r.factors_json()}),
        )
    });
    b = preview::<tools::reclassify_relationship>(b, &cx, |cx, a| {
        let e = cx.db.edge(a.edge_id)?;
        let (target, why) = tools::edges::target_type(&cx.db, a.edge_id, a.new_type)?;
        Ok(json!({"edge_id": e.id, "from": e.from_id, "to": e.to_id,
                  "type": {"before": e.rel_type, "after": target}, "reasoning": why,
                  "notes_cleared": !a.preserve_notes.unwrap_or(true) && e.notes.is_some()}))
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
        let listed: Vec<Value> = links
            .iter()
            .map(|l| {
                json!({"from": l.from_id, "to": l.to_id, "type": l.rel_type,
                            "confidence": l.confidence})
            })
            .collect();
        Ok(json!({"create": listed}))
    });
    b = preview::<tools::apply_to_nodes>(b, &cx, |cx, a| {
        let o = batch::BatchOptions {
            operation: a.operation,
            new_type: a.new_type,
            preserve_relationships: a.preserve_relationships.unwrap_or(true),
            cascade: a.cascade.unwrap_or(false),
            factor_in_relationships: a.factor_in_relationships.unwrap_or(true),
        };
        let nodes = batch::plan(&cx.db, &a.node_ids, o)?;
        Ok(json!({"operation": a.operation.tool_name(), "count": nodes.len(), "nodes": nodes}))
    });
    b.undo::<tools::create_node>(|_, out| restore(out))
        .undo::<tools::update_node>(|_, out| restore(out))
        .undo::<tools::delete_node>(|_, out| restore(out))
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
