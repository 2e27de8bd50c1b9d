//! A plan's *shape*, for baselines: what a reviewer would call the plan, with everything that
//! moves between runs, machines and versions left out.
//!
//! Kept: node types (joins with their join type), relations, indexes, scan direction, join
//! order (the tree itself), sort keys, and which columns appear in each Index Cond, Recheck Cond
//! and Filter. Left out: costs, rows, timings, buffers, worker and loop counts, constants.
//!
//! Normalised, so that the same plan reads the same everywhere (decided, and documented in the
//! README): a parallel plan and its serial twin are one shape (Gather and Gather Merge are
//! dropped, `Parallel` is dropped from node names, a Finalize/Partial Aggregate pair is one
//! Aggregate); InitPlan and SubPlan labels lose their numbers and `(returns $0)` (renamed in
//! PostgreSQL 17); aliases are not kept (a renamed alias is no plan change).

use super::predicate::conjuncts;
use crate::model::Relation;
use crate::plan::explain::{Explain, PlanNode};

/// The shape of a plan: one node per line, children indented by two spaces.
pub fn of(plan: &Explain) -> String {
    let mut out = String::new();
    walk(&plan.root, 0, &mut out);
    out
}

fn walk(n: &PlanNode, depth: usize, out: &mut String) {
    // Gather nodes are the parallel machinery, not the plan: their child takes their place.
    if matches!(n.node_type.as_str(), "Gather" | "Gather Merge") && n.children.len() == 1 {
        walk(&n.children[0], depth, out);
        return;
    }
    let indent = "  ".repeat(depth);
    out.push_str(&format!("{indent}{}\n", line(n)));
    for (label, cond) in [
        ("Index Cond", &n.index_cond),
        ("Recheck Cond", &n.recheck_cond),
        ("Filter", &n.filter),
    ] {
        if let Some(c) = cond {
            let mut columns: Vec<String> = Vec::new();
            for conjunct in conjuncts(c) {
                for col in conjunct.columns() {
                    if !columns.contains(&col) {
                        columns.push(col);
                    }
                }
            }
            columns.sort();
            out.push_str(&format!("{indent}  {label}: {}\n", columns.join(", ")));
        }
    }
    if !n.sort_key.is_empty() {
        let keys: Vec<String> = n
            .sort_key
            .iter()
            .map(|k| {
                conjuncts(k)
                    .first()
                    .map(|c| c.text.clone())
                    .unwrap_or_default()
            })
            .collect();
        out.push_str(&format!("{indent}  Sort Key: {}\n", keys.join(", ")));
    }
    for c in children(n) {
        walk(c, depth + 1, out);
    }
}

/// A node's children, with a parallel aggregate's two halves made one: Finalize Aggregate over
/// (Gather over) Partial Aggregate reads as one Aggregate over what the partial one read.
fn children(n: &PlanNode) -> Vec<&PlanNode> {
    if n.node_type == "Aggregate" && n.children.len() == 1 {
        let mut below = &n.children[0];
        if matches!(below.node_type.as_str(), "Gather" | "Gather Merge")
            && below.children.len() == 1
        {
            below = &below.children[0];
        }
        if below.node_type == "Aggregate" {
            return below.children.iter().collect();
        }
    }
    n.children.iter().collect()
}

fn line(n: &PlanNode) -> String {
    let mut text = String::new();
    if let Some(name) = &n.subplan_name {
        text.push_str(&format!("[{}] ", subplan_label(name)));
    }
    let mut label = n.label();
    if let Some(rest) = label.strip_prefix("Parallel ") {
        label = rest.to_string();
    }
    text.push_str(&label);
    if let Some(index) = &n.index_name {
        text.push_str(&format!(" using {index}"));
    }
    if let Some(rel) = &n.relation {
        text.push_str(&format!(" on {}", Relation::new(n.schema.as_deref(), rel)));
    }
    text
}

/// `InitPlan 1 (returns $0)` and `InitPlan 1` (PostgreSQL 17) are both `InitPlan`; `SubPlan 2`
/// is `SubPlan`; a CTE keeps its name, which the SQL gives.
fn subplan_label(name: &str) -> String {
    for kind in ["InitPlan", "SubPlan"] {
        if name.starts_with(kind) {
            return kind.to_string();
        }
    }
    name.to_string()
}

/// The lines of `now` against `was`, as a reviewer reads a diff: `- ` for a line only in the
/// baseline, `+ ` for one only now, `  ` for one in both. Empty when they are equal.
pub fn diff(was: &str, now: &str) -> Vec<String> {
    if was == now {
        return Vec::new();
    }
    let a: Vec<&str> = was.lines().collect();
    let b: Vec<&str> = now.lines().collect();
    // Longest common subsequence, by dynamic programming: plans are a few dozen lines.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(format!("  {}", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape(doc: serde_json::Value) -> String {
        of(&Explain::from_json(&doc).unwrap())
    }

    #[test]
    fn costs_rows_constants_and_aliases_are_left_out() {
        let a = shape(json!([{ "Plan": { "Node Type": "Limit", "Total Cost": 5.0,
            "Actual Rows": 20, "Plans": [{ "Node Type": "Index Scan",
            "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
            "Schema": "public", "Alias": "p", "Index Cond": "(p.thread_id = 1)",
            "Total Cost": 4.0, "Actual Rows": 20, "Shared Hit Blocks": 9 }]}}]));
        let b = shape(json!([{ "Plan": { "Node Type": "Limit", "Total Cost": 7.0,
            "Plans": [{ "Node Type": "Index Scan", "Index Name": "posts_thread_visible_idx",
            "Relation Name": "posts", "Schema": "public", "Alias": "q",
            "Index Cond": "(q.thread_id = 42)" }]}}]));
        assert_eq!(a, b);
        assert_eq!(
            a,
            "Limit\n  Index Scan using posts_thread_visible_idx on posts\n    Index Cond: thread_id\n"
        );
    }

    #[test]
    fn a_parallel_plan_and_its_serial_twin_are_one_shape() {
        let parallel = shape(json!([{ "Plan": { "Node Type": "Aggregate", "Plans": [
            { "Node Type": "Gather", "Plans": [{ "Node Type": "Aggregate", "Plans": [
                { "Node Type": "Seq Scan", "Parallel Aware": true, "Relation Name": "posts",
                  "Schema": "public", "Filter": "(author_id = 1)" }]}]}]}}]));
        let serial = shape(json!([{ "Plan": { "Node Type": "Aggregate", "Plans": [
            { "Node Type": "Seq Scan", "Relation Name": "posts", "Schema": "public",
              "Filter": "(author_id = 1)" }]}}]));
        assert_eq!(parallel, serial);
    }

    #[test]
    fn initplan_labels_of_every_version_read_alike() {
        let pg16 = shape(json!([{ "Plan": { "Node Type": "Result", "Plans": [
            { "Node Type": "Seq Scan", "Subplan Name": "InitPlan 1 (returns $0)",
              "Relation Name": "forums", "Schema": "public" }]}}]));
        let pg17 = shape(json!([{ "Plan": { "Node Type": "Result", "Plans": [
            { "Node Type": "Seq Scan", "Subplan Name": "InitPlan 1",
              "Relation Name": "forums", "Schema": "public" }]}}]));
        assert_eq!(pg16, pg17);
    }

    #[test]
    fn what_a_reviewer_calls_a_change_is_one() {
        let index = shape(json!([{ "Plan": { "Node Type": "Index Scan",
            "Index Name": "i", "Relation Name": "posts", "Schema": "public" }}]));
        let index_only = shape(json!([{ "Plan": { "Node Type": "Index Only Scan",
            "Index Name": "i", "Relation Name": "posts", "Schema": "public" }}]));
        let backward = shape(json!([{ "Plan": { "Node Type": "Index Scan",
            "Scan Direction": "Backward", "Index Name": "i", "Relation Name": "posts",
            "Schema": "public" }}]));
        assert_ne!(index, index_only);
        assert_ne!(index, backward);
        let sorted = shape(json!([{ "Plan": { "Node Type": "Sort",
            "Sort Key": ["p.created_at DESC"], "Plans": [{ "Node Type": "Seq Scan",
            "Relation Name": "posts", "Schema": "public" }]}}]));
        assert!(sorted.contains("Sort Key: created_at DESC"), "{sorted}");
    }

    #[test]
    fn the_diff_marks_what_came_and_went() {
        let d = diff(
            "Limit\n  Index Scan using a on t\n",
            "Limit\n  Seq Scan on t\n",
        );
        assert_eq!(
            d,
            ["  Limit", "- Index Scan using a on t", "+ Seq Scan on t"]
                .iter()
                .map(|s| s.replace("- I", "-   I").replace("+ S", "+   S"))
                .collect::<Vec<_>>()
        );
        assert!(diff("x\n", "x\n").is_empty());
    }
}
