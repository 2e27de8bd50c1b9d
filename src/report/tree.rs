//! The plan as a compact tree, for `--explain`, JUnit failure bodies and the table's sections.

use crate::plan::explain::{Explain, PlanNode};

/// The plan as a compact tree a PostgreSQL engineer reads at a glance: node, relation, index,
/// Index Cond / Recheck Cond / Filter, actual rows and rows removed by filter.
pub fn render_tree(plan: &Explain) -> String {
    let mut out = String::new();
    fn line(n: &PlanNode) -> String {
        let mut text = String::new();
        if let Some(name) = &n.subplan_name {
            text.push_str(&format!("[{name}] "));
        }
        text.push_str(&n.label());
        if let Some(index) = &n.index_name {
            text.push_str(&format!(" using {index}"));
        }
        if let Some(rel) = &n.relation {
            text.push_str(" on ");
            if let Some(schema) = n
                .schema
                .as_deref()
                .filter(|s| *s != crate::model::DEFAULT_SCHEMA)
            {
                text.push_str(&format!("{schema}."));
            }
            text.push_str(rel);
            if let Some(alias) = n.alias.as_deref().filter(|a| a != rel) {
                text.push_str(&format!(" {alias}"));
            }
        }
        let mut figures = Vec::new();
        match n.actual_rows {
            Some(rows) => {
                figures.push(format!("rows {}", trim(rows)));
                if let Some(loops) = n.actual_loops.filter(|l| *l != 1.0) {
                    figures.push(format!("loops {}", trim(loops)));
                }
            }
            None => figures.push(format!("est. rows {}", trim(n.plan_rows))),
        }
        if let Some(removed) = n.rows_removed_by_filter.filter(|r| *r > 0.0) {
            figures.push(format!("removed by filter {}", trim(removed)));
        }
        if n.disabled == Some(true) {
            figures.push("disabled".into());
        }
        text.push_str(&format!("  ({})", figures.join(", ")));
        text
    }
    fn walk(n: &PlanNode, prefix: &str, last: bool, root: bool, out: &mut String) {
        let (branch, next) = if root {
            ("", String::new())
        } else if last {
            ("└─ ", format!("{prefix}   "))
        } else {
            ("├─ ", format!("{prefix}│  "))
        };
        out.push_str(&format!("{prefix}{branch}{}\n", line(n)));
        let detail_prefix = if n.children.is_empty() {
            format!("{next}   ")
        } else {
            format!("{next}│  ")
        };
        for (label, cond) in [
            ("Index Cond", &n.index_cond),
            ("Recheck Cond", &n.recheck_cond),
            ("Filter", &n.filter),
        ] {
            if let Some(c) = cond {
                out.push_str(&format!("{detail_prefix}{label}: {c}\n"));
            }
        }
        for (i, c) in n.children.iter().enumerate() {
            walk(c, &next, i + 1 == n.children.len(), false, out);
        }
    }
    walk(&plan.root, "", true, true, &mut out);
    out
}

/// `20` for 20.0, `0.5` for 0.5: PostgreSQL 18 prints rows as fractions.
fn trim(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{}", n as i64)
    } else {
        format!("{n:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_tree_shows_nodes_conditions_and_rows() {
        let doc = json!([{ "Plan": {
            "Node Type": "Limit", "Actual Rows": 20, "Actual Loops": 1,
            "Plans": [{ "Node Type": "Index Scan", "Index Name": "posts_thread_all_idx",
                "Relation Name": "posts", "Schema": "public", "Alias": "p",
                "Index Cond": "(p.thread_id = 1)", "Filter": "(p.visibility <> 'deleted'::text)",
                "Actual Rows": 20, "Actual Loops": 1, "Rows Removed by Filter": 3 }]
        }}]);
        let tree = render_tree(&Explain::from_json(&doc).unwrap());
        assert_eq!(
            tree,
            "Limit  (rows 20)\n\
             └─ Index Scan using posts_thread_all_idx on posts p  (rows 20, removed by filter 3)\n\
             \x20     Index Cond: (p.thread_id = 1)\n\
             \x20     Filter: (p.visibility <> 'deleted'::text)\n"
        );
    }
}
