//! The rule for one plan: the required index in it, and no relation read whole beside it.

use std::collections::HashMap;

use super::{RequiredIndex, Verdict, group, keys};
use crate::explain::{Explain, Scan, ScanKind};
use crate::model::Relation;

/// What a plan must satisfy.
#[derive(Debug, Clone)]
pub struct Rules<'a> {
    pub index: &'a RequiredIndex,
    /// Relations that may be seq scanned: `name` or `schema.name`.
    pub allow_seq_scan: &'a [String],
    /// `pg_class.reltuples` of the relations in the plan, keyed `schema.name`. Used to tell a
    /// scan of another index with no Index Cond that reads the whole relation (a seq scan in
    /// all but name) from one a LIMIT stops after a few rows.
    pub reltuples: &'a HashMap<String, f64>,
}

/// What one plan was judged to be.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanVerdict {
    pub verdict: Verdict,
    /// Every access path in the plan, as a reader names it: `Index Scan using x on t`.
    pub used: Vec<String>,
    /// Relations read whole without being allowed to be: seq scans, and scans of another index
    /// with no Index Cond over (nearly) the whole relation.
    pub seq_scans: Vec<String>,
    pub message: String,
}

/// A scan that reads at least this share of a relation's rows, through an index with no Index
/// Cond, is treated as the seq scan it is.
pub(super) const WHOLE_RELATION_SHARE: f64 = 0.5;

/// The cost PostgreSQL up to 17 adds to a disabled path (`disable_cost`).
pub(super) const DISABLED_COST: f64 = 1.0e10;

/// Judges one plan against the rules.
// Long because it is the rules for one plan in their order of precedence: partitions, key-unused, not-chosen, seq-scan, pass.
pub fn judge_plan(plan: &Explain, rules: &Rules<'_>) -> PlanVerdict {
    let scans = plan.scans();
    let used = describe_access_paths(&scans);

    let uses_required = if rules.index.partitions.is_empty() {
        scans.iter().any(|s| is_required_index(s, rules.index))
    } else {
        match partitions(&scans, rules) {
            Partitions::Every => true,
            Partitions::None => false,
            Partitions::Some(verdict, message, seq_scans) => {
                return PlanVerdict {
                    verdict,
                    message,
                    seq_scans,
                    used,
                };
            }
        }
    };
    let (seq_scans, seq_details) = whole_reads(&scans, rules);
    let index = &rules.index.name;
    if uses_required && let Some(why) = keys::key_unused(plan, rules) {
        let beside = if seq_details.is_empty() {
            String::new()
        } else {
            format!(
                "; the plan also reads a whole relation: {}",
                seq_details.join("; ")
            )
        };
        return PlanVerdict {
            verdict: Verdict::KeyUnused,
            message: format!("{why}{beside}"),
            used,
            seq_scans,
        };
    }
    if !uses_required {
        let mut detailed: Vec<String> = Vec::new();
        for s in scans.iter().filter(|s| s.kind != ScanKind::BitmapHeap) {
            let text = describe_scan(s, true);
            if !detailed.contains(&text) {
                detailed.push(text);
            }
        }
        let instead = if detailed.is_empty() {
            "no scan at all".to_string()
        } else {
            detailed.join("; ")
        };
        return PlanVerdict {
            verdict: Verdict::NotChosen,
            message: format!("{index} is not in the plan; used instead: {instead}"),
            used,
            seq_scans,
        };
    }
    if !seq_scans.is_empty() {
        let allowed = if rules.allow_seq_scan.is_empty() {
            "no relation may be seq scanned here".to_string()
        } else {
            format!("only {} may be", rules.allow_seq_scan.join(", "))
        };
        return PlanVerdict {
            verdict: Verdict::SeqScan,
            message: format!(
                "{index} is used, but the plan also reads a whole relation: {} ({allowed})",
                seq_details.join("; ")
            ),
            used,
            seq_scans,
        };
    }
    let how = scans
        .iter()
        .find(|s| is_required_index(s, rules.index))
        .map(|s| describe_scan(s, false))
        .unwrap_or_default();
    PlanVerdict {
        verdict: Verdict::Pass,
        message: how,
        used,
        seq_scans,
    }
}

/// How a plan reads a partitioned index.
enum Partitions {
    /// Every partition the plan scans (pruned ones are not in it), through its leaf.
    Every,
    /// No leaf at all (or only in nodes that never ran).
    None,
    /// Some partitions through their leaf, others another way: the verdict, its message and
    /// the partitions read whole.
    Some(Verdict, String, Vec<String>),
}

/// A partitioned index: plans name the leaf indexes on the leaf partitions. Every partition the
/// plan scans must be read through its leaf of the required index; a partition read any other
/// way is named.
fn partitions(scans: &[Scan<'_>], rules: &Rules<'_>) -> Partitions {
    let mut partition_problems: Vec<(bool, String, String)> = Vec::new();
    {
        let mut any_ran = false;
        let mut any_leaf = false;
        for part in &rules.index.partitions {
            let on_part: Vec<&Scan<'_>> = scans
                .iter()
                .filter(|s| {
                    s.relation == Some(part.table.as_str())
                        && s.schema.is_none_or(|sc| sc == part.schema)
                        && s.kind != ScanKind::BitmapHeap
                })
                .collect();
            if on_part.is_empty() {
                continue;
            }
            let leaf_used: Vec<&&Scan<'_>> = on_part
                .iter()
                .filter(|s| {
                    s.kind.uses_index()
                        && part.leaf_index.is_some()
                        && s.node.index_name == part.leaf_index
                })
                .collect();
            if leaf_used.is_empty() {
                let seq = on_part.iter().any(|s| s.kind == ScanKind::Seq);
                let how: Vec<String> = on_part.iter().map(|s| describe_scan(s, true)).collect();
                let lacks = if part.leaf_index.is_none() {
                    format!(
                        " (partition {} has no leaf of {})",
                        part.table, rules.index.name
                    )
                } else {
                    String::new()
                };
                partition_problems.push((
                    seq,
                    qualified_for_display(&part.table, Some(&part.schema)),
                    format!("{}{lacks}", how.join("; ")),
                ));
            } else {
                any_leaf = true;
                // A skipped partition (a LIMIT satisfied earlier) still shows the planned path.
                any_ran |= leaf_used.iter().any(|s| s.node.actual_loops != Some(0.0));
            }
        }
        if any_leaf && any_ran && partition_problems.is_empty() {
            return Partitions::Every;
        }
        if any_leaf && any_ran {
            let index = &rules.index.name;
            let seq = partition_problems.iter().any(|(seq, _, _)| *seq);
            let detail: Vec<&str> = partition_problems
                .iter()
                .map(|(_, _, d)| d.as_str())
                .collect();
            return Partitions::Some(
                if seq {
                    Verdict::SeqScan
                } else {
                    Verdict::NotChosen
                },
                format!(
                    "{index} is used on some partitions, but not on every partition the plan \
                     scans: {}",
                    detail.join("; ")
                ),
                partition_problems
                    .iter()
                    .filter(|(seq, _, _)| *seq)
                    .map(|(_, name, _)| name.clone())
                    .collect(),
            );
        }
    }
    Partitions::None
}

/// The relations read whole without being allowed to be, and how each was read: seq scans, and
/// scans of another index with no Index Cond over (nearly) the whole relation.
fn whole_reads(scans: &[Scan<'_>], rules: &Rules<'_>) -> (Vec<String>, Vec<String>) {
    let mut seq_scans = Vec::new();
    let mut seq_details = Vec::new();
    for s in scans {
        let Some(relation) = s.relation else { continue };
        if is_allowed(relation, s.schema, rules.allow_seq_scan) {
            continue;
        }
        let whole = match s.kind {
            ScanKind::Seq => true,
            ScanKind::Index | ScanKind::IndexOnly => {
                !is_required_index(s, rules.index) && reads_whole_relation(s, rules.reltuples)
            }
            _ => false,
        };
        if whole {
            let name = qualified_for_display(relation, s.schema);
            if !seq_scans.contains(&name) {
                seq_scans.push(name);
            }
            seq_details.push(describe_scan(s, true));
        }
    }
    (seq_scans, seq_details)
}

pub(super) fn is_required_index(scan: &Scan<'_>, index: &RequiredIndex) -> bool {
    if !scan.kind.uses_index() || scan.node.index_name.as_deref() != Some(index.name.as_str()) {
        return false;
    }
    // A node that never ran (`Actual Loops: 0`: a branch the executor skipped, an InitPlan
    // never needed) did not serve the page, whatever the plan says.
    if scan.node.actual_loops == Some(0.0) {
        return false;
    }
    // The relation must be the index's table. A Bitmap Index Scan whose heap relation could not
    // be resolved is not accepted: better a false alarm than a false pass.
    if scan.relation != Some(index.table.as_str()) {
        return false;
    }
    match scan.schema {
        Some(schema) => schema == index.schema,
        None => true,
    }
}

pub(super) fn is_allowed(relation: &str, schema: Option<&str>, allowed: &[String]) -> bool {
    allowed.iter().any(|a| match a.split_once('.') {
        Some((s, r)) => r == relation && schema.is_none_or(|schema| schema == s),
        None => a == relation,
    })
}

pub(super) fn reads_whole_relation(scan: &Scan<'_>, reltuples: &HashMap<String, f64>) -> bool {
    if scan.node.index_cond.is_some() {
        return false;
    }
    let Some(visited) = scan.node.rows_visited() else {
        // Without actual rows there is no telling; a scan of an index with no condition is
        // presumed to read it all.
        return true;
    };
    let key = Relation::new(scan.schema, scan.relation.unwrap_or("")).key();
    let total = reltuples.get(&key).copied().unwrap_or(0.0).max(0.0);
    // A never-analysed table has reltuples -1 (read as 0): any row read counts as the whole.
    visited >= (total * WHOLE_RELATION_SHARE).max(1.0)
}

pub(super) fn qualified_for_display(relation: &str, schema: Option<&str>) -> String {
    Relation::new(schema, relation).to_string()
}

pub(super) fn describe_scan(scan: &Scan<'_>, with_removed: bool) -> String {
    let node = scan.node;
    let relation = scan
        .relation
        .map(|r| qualified_for_display(r, scan.schema))
        .unwrap_or_else(|| "?".into());
    let mut text = match &node.index_name {
        Some(index) => format!("{} using {index} on {relation}", node.label()),
        None => format!("{} on {relation}", node.label()),
    };
    // A path the session disabled (enable_seqscan = off, …) that won all the same: PostgreSQL
    // 18 says so; up to 17 the path carries a cost of 1e10 or more.
    if node.disabled == Some(true) || node.total_cost >= DISABLED_COST {
        text.push_str(" (disabled, chosen anyway)");
    }
    if with_removed {
        if let Some(removed) = node.rows_removed_by_filter {
            let total = removed * node.actual_loops.unwrap_or(1.0).max(1.0);
            if total > 0.0 {
                text.push_str(&format!(" ({} rows removed by filter)", group(total)));
            }
        }
        if node.index_name.is_some() && node.index_cond.is_none() {
            text.push_str(" (no Index Cond)");
        }
    }
    text
}

/// The access paths of a plan other than through the required index (or its leaves): what was
/// used instead of it.
pub(super) fn other_access_paths(plan: &Explain, index: &RequiredIndex) -> Vec<String> {
    let names = index.names();
    let scans: Vec<Scan<'_>> = plan
        .scans()
        .into_iter()
        .filter(|s| {
            !is_required_index(s, index)
                && !s
                    .node
                    .index_name
                    .as_deref()
                    .is_some_and(|n| names.contains(&n))
        })
        .collect();
    describe_access_paths(&scans)
}

pub(super) fn describe_access_paths(scans: &[Scan<'_>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scans {
        if s.kind == ScanKind::BitmapHeap {
            continue;
        }
        let text = describe_scan(s, false);
        if !out.contains(&text) {
            out.push(text);
        }
    }
    out
}
