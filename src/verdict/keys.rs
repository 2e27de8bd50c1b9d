//! The required index's keys against the query: `key-unused` (the index is in the plan, but its
//! leading key serves nothing and a Filter throws most of what it reads away).

use super::group;
use super::plan::{Rules, WHOLE_RELATION_SHARE, is_required_index};
use super::predicate::{Conjunct, Form, conjuncts, mentions};
use crate::model::Relation;
use crate::plan::explain::{Explain, PlanNode, ScanKind};

/// A scan whose leading key is not in its Index Cond is `key-unused` when its Filter removed at
/// least this many rows …
pub const KEY_UNUSED_MIN_REMOVED: f64 = 1000.0;
/// … and at least this many times the rows it returned: two thirds of what it read, thrown
/// away. A scan that returns what it reads (a count through an index-only scan) and a walk a
/// LIMIT stops early are not `key-unused`.
pub const KEY_UNUSED_RATIO: f64 = 2.0;

/// Where a node sits: the Bitmap Heap Scan above a Bitmap Index Scan, and whether a Limit
/// above it can stop it early (no Sort, Hash or aggregate in between reads it all first).
struct Place<'a> {
    heap: Option<&'a PlanNode>,
    under_limit: bool,
}

fn places(plan: &Explain) -> Vec<(&PlanNode, Place<'_>)> {
    fn walk<'a>(
        n: &'a PlanNode,
        heap: Option<&'a PlanNode>,
        under_limit: bool,
        out: &mut Vec<(&'a PlanNode, Place<'a>)>,
    ) {
        out.push((n, Place { heap, under_limit }));
        let streams = matches!(
            n.node_type.as_str(),
            "Limit"
                | "Nested Loop"
                | "Merge Join"
                | "Subquery Scan"
                | "Result"
                | "Unique"
                | "Gather Merge"
                | "Append"
                | "Merge Append"
                | "Incremental Sort"
                | "ProjectSet"
        );
        let limit = n.node_type == "Limit" || (under_limit && streams);
        let below_heap = match n.node_type.as_str() {
            "Bitmap Heap Scan" => Some(n),
            "BitmapAnd" | "BitmapOr" => heap,
            _ => None,
        };
        for c in &n.children {
            walk(c, below_heap, limit, out);
        }
    }
    let mut out = Vec::new();
    walk(&plan.root, None, false, &mut out);
    out
}

/// The `key-unused` message for the first scan of the required index in `plan` whose leading
/// key serves nothing, or `None`.
pub fn key_unused(plan: &Explain, rules: &Rules<'_>) -> Option<String> {
    let index = rules.index;
    let key = index.keys.first()?;
    let places = places(plan);
    for scan in plan.scans() {
        if !is_required_index(&scan, index) {
            continue;
        }
        let node = scan.node;
        let cond = node
            .index_cond
            .as_deref()
            .map(conjuncts)
            .unwrap_or_default();
        if mentions(&cond, key) {
            continue;
        }
        let place = places
            .iter()
            .find(|(n, _)| std::ptr::eq(*n, node))
            .map(|(_, p)| p)?;
        // A Bitmap Index Scan returns a bitmap: what it read is filtered at its heap scan. In a
        // BitmapAnd another index narrows the rows; that is not this rule's to judge.
        let counted = if scan.kind == ScanKind::BitmapIndex {
            let heap = place.heap?;
            if heap.children.iter().any(|c| c.node_type == "BitmapAnd") {
                continue;
            }
            heap
        } else {
            node
        };
        let loops = counted.actual_loops.unwrap_or(1.0).max(1.0);
        let returned = counted.actual_rows? * loops;
        let removed = counted.rows_removed_by_filter.unwrap_or(0.0) * loops;
        let read = returned + removed;
        if place.under_limit && scan.kind != ScanKind::BitmapIndex {
            let total = scan
                .relation
                .and_then(|r| rules.reltuples.get(&Relation::new(scan.schema, r).key()))
                .copied()
                .unwrap_or(0.0);
            if read < total * WHOLE_RELATION_SHARE {
                // A walk in index order that a LIMIT stops: the index serves the ORDER BY.
                continue;
            }
        }
        if removed < KEY_UNUSED_MIN_REMOVED || removed < KEY_UNUSED_RATIO * returned {
            continue;
        }
        let filter: Vec<Conjunct> = [&counted.filter, &counted.recheck_cond, &node.filter]
            .into_iter()
            .flatten()
            .flat_map(|f| index.conjuncts(f))
            .collect();
        let cond_text = match &node.index_cond {
            Some(c) => format!(" (its Index Cond, {c}, constrains only later keys)"),
            None => " (it has no Index Cond)".into(),
        };
        return Some(format!(
            "{} is in the plan, but its leading key {key} is not in its Index Cond{cond_text}: \
             the scan read {} rows and its Filter threw {} of them away ({} returned), {}{}",
            index.name,
            group(read),
            group(removed),
            group(returned),
            super::KEY_CAUSE,
            how_the_query_uses(key, &filter)
        ));
    }
    None
}

/// One sentence on what the query does with `key`, from its conditions on the table.
fn how_the_query_uses(key: &str, conditions: &[Conjunct]) -> String {
    match use_of(key, conditions) {
        KeyUse::Direct(c) => format!("The query compares {key} directly (`{c}`)."),
        KeyUse::Wrapped(how, c) => format!(
            "The query wraps {key} in {how} (`{c}`): a condition on the wrapped value cannot \
             use the index's key; compare {key} itself (cast the other side instead)."
        ),
        KeyUse::Other(column, c) => format!(
            "The index holds {key}, but the query compares {column} (`{c}`): write the \
             condition on {key}, or index {column}."
        ),
        KeyUse::Elsewhere(c) => format!(
            "The query names {key} in `{c}`, which this scan applies as a Filter, not as its \
             Index Cond."
        ),
        KeyUse::None => format!("The query puts no condition on {key}."),
    }
}

/// What the query's conditions do with one key of the index.
enum KeyUse {
    /// Compared as it is: an Index Cond candidate.
    Direct(String),
    /// Only inside a cast or a function: (how, the condition).
    Wrapped(String, String),
    /// An expression key (`lower(email)`) whose column the query compares otherwise.
    Other(String, String),
    /// Named only where an index cannot use it: beside another column, in an OR.
    Elsewhere(String),
    None,
}

fn use_of(key: &str, conditions: &[Conjunct]) -> KeyUse {
    let key_parts = conjuncts(key);
    let Some(key_conjunct) = key_parts.first() else {
        return KeyUse::None;
    };
    let plain = matches!(key_conjunct.form(), Some(Form::Bool(_, true)));
    if plain {
        let column = key_conjunct.text.clone();
        let mut wrapped = None;
        let mut elsewhere = None;
        for c in conditions {
            if !mentions(std::slice::from_ref(c), &column) {
                continue;
            }
            // An index can use a comparison of the key itself with a constant or a parameter
            // (the planner's Index Cond); a comparison with another column, or an arm of an OR,
            // it cannot.
            if c.form().is_some_and(|f| f.column() == column) {
                return KeyUse::Direct(c.text.clone());
            }
            match c.wraps(&column) {
                Some(how) => {
                    wrapped = wrapped.or(Some(KeyUse::Wrapped(how, c.text.clone())));
                }
                None => elsewhere = elsewhere.or(Some(KeyUse::Elsewhere(c.text.clone()))),
            }
        }
        return wrapped.or(elsewhere).unwrap_or(KeyUse::None);
    }
    // An expression key: used when a condition holds the whole expression.
    if let Some(c) = conditions
        .iter()
        .find(|c| mentions(std::slice::from_ref(*c), key))
    {
        return KeyUse::Direct(c.text.clone());
    }
    for column in key_conjunct.columns() {
        if let Some(c) = conditions
            .iter()
            .find(|c| mentions(std::slice::from_ref(*c), &column))
        {
            return KeyUse::Other(column, c.text.clone());
        }
    }
    KeyUse::None
}
