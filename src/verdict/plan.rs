//! The rule for one plan: the required index in it, and no relation read whole beside it.

use std::collections::HashMap;

use super::{RequiredIndex, Verdict, group, keys};
use crate::model::Relation;
use crate::plan::explain::{Explain, PlanNode, Scan, ScanKind};

/// What a plan must satisfy.
#[derive(Debug, Clone)]
pub struct Rules<'a> {
    pub index: &'a RequiredIndex,
    /// Relations that may be seq scanned: `name` or `schema.name`.
    pub allow_seq_scan: &'a [String],
    /// `pg_class.reltuples` of the relations in the plan, keyed `schema.name`: the size a
    /// node's rows read are held against ([`whole_read`]).
    pub reltuples: &'a HashMap<String, f64>,
    /// `--large-rows`: a relation of at least this many rows is large, and a node that read
    /// most of it read it whole, whatever its index and Index Cond.
    pub large_rows: f64,
}

/// What one plan was judged to be.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanVerdict {
    pub verdict: Verdict,
    /// Every access path in the plan, as a reader names it: `Index Scan using x on t`.
    pub used: Vec<String>,
    /// Relations read whole without being allowed to be ([`whole_read`]).
    pub seq_scans: Vec<String>,
    /// Those of [`Self::seq_scans`] that are large (at least `--large-rows` rows): no
    /// `--require` forgives them.
    pub large_reads: Vec<String>,
    pub message: String,
}

/// "Most of" a relation: a node that read at least this share of its rows read it whole.
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
                let large_reads = seq_scans
                    .iter()
                    .filter(|shown| {
                        // As shown: `name` in the default schema, `schema.name` elsewhere.
                        let r = match shown.split_once('.') {
                            Some((schema, name)) => Relation::new(Some(schema), name),
                            None => Relation::new(None, shown),
                        };
                        rules
                            .reltuples
                            .get(&r.key())
                            .is_some_and(|n| *n >= rules.large_rows)
                    })
                    .cloned()
                    .collect();
                return PlanVerdict {
                    verdict,
                    message,
                    seq_scans,
                    large_reads,
                    used,
                };
            }
        }
    };
    let whole = whole_reads(&scans, rules);
    let seq_details: Vec<String> = whole.iter().map(|w| w.detail.clone()).collect();
    let mut seq_scans: Vec<String> = Vec::new();
    let mut large_reads: Vec<String> = Vec::new();
    for w in &whole {
        if !seq_scans.contains(&w.relation) {
            seq_scans.push(w.relation.clone());
        }
        if w.large && !large_reads.contains(&w.relation) {
            large_reads.push(w.relation.clone());
        }
    }
    let index = &rules.index.name;
    if uses_required && let Some(why) = keys::key_unused(plan, rules) {
        // A whole read through the required index is what the key-unused message is about.
        let others: Vec<&str> = whole
            .iter()
            .filter(|w| !w.through_required)
            .map(|w| w.detail.as_str())
            .collect();
        let beside = if others.is_empty() {
            String::new()
        } else {
            format!(
                "; the plan also reads a whole relation: {}",
                others.join("; ")
            )
        };
        return PlanVerdict {
            verdict: Verdict::KeyUnused,
            message: format!("{why}{beside}"),
            used,
            seq_scans,
            large_reads,
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
        // A whole read that is not a seq scan is not plain from its name: say what it read.
        let by_rows: Vec<&str> = whole
            .iter()
            .filter(|w| w.by_rows)
            .map(|w| w.detail.as_str())
            .collect();
        let read = if by_rows.is_empty() {
            String::new()
        } else {
            format!("; it reads a whole relation: {}", by_rows.join("; "))
        };
        return PlanVerdict {
            verdict: Verdict::NotChosen,
            message: format!("{index} is not in the plan; used instead: {instead}{read}"),
            used,
            seq_scans,
            large_reads,
        };
    }
    if !seq_scans.is_empty() {
        let allowed = if rules.allow_seq_scan.is_empty() {
            "no relation may be seq scanned here".to_string()
        } else {
            format!("only {} may be", rules.allow_seq_scan.join(", "))
        };
        // The required index itself may be the whole read (a trivially true Index Cond).
        let what = if whole.iter().all(|w| w.through_required) {
            "but it reads a whole relation"
        } else {
            "but the plan also reads a whole relation"
        };
        return PlanVerdict {
            verdict: Verdict::SeqScan,
            message: format!(
                "{index} is used, {what}: {} ({allowed})",
                seq_details.join("; ")
            ),
            used,
            seq_scans,
            large_reads,
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
        large_reads,
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

/// One relation read whole by one scan, as a reader of the plan is told it.
struct WholeRead {
    /// The relation, as shown: `name` in the default schema, `schema.name` elsewhere.
    relation: String,
    /// At least `--large-rows` rows.
    large: bool,
    /// Judged by the rows the node read (not a seq scan, whose name says it all).
    by_rows: bool,
    /// Through the required index itself.
    through_required: bool,
    /// By a Bitmap Heap Scan.
    heap: bool,
    /// The node, and for a read judged by rows: rows read, the relation's size and the rule.
    detail: String,
}

/// Every scan of the plan that read its relation whole, where the relation is not allowed a
/// seq scan ([`whole_read`]).
fn whole_reads(scans: &[Scan<'_>], rules: &Rules<'_>) -> Vec<WholeRead> {
    let mut out: Vec<WholeRead> = Vec::new();
    for s in scans {
        if s.relation
            .is_none_or(|r| is_allowed(r, s.schema, rules.allow_seq_scan))
        {
            continue;
        }
        let Some(w) = whole_read(s, rules) else {
            continue;
        };
        // A Bitmap Index Scan feeds the Bitmap Heap Scan above it (walked first): when the heap
        // scan already read the relation whole, the index scan says nothing more.
        if s.kind == ScanKind::BitmapIndex && out.iter().any(|o| o.heap && o.relation == w.relation)
        {
            continue;
        }
        out.push(w);
    }
    read_between_them(scans, rules, &mut out);
    out
}

/// Rule 2 over the whole plan: scans of one large relation that each read less than half of it
/// can read all of it between them (three range scans of a third each, in three InitPlans).
fn read_between_them(scans: &[Scan<'_>], rules: &Rules<'_>, out: &mut Vec<WholeRead>) {
    let mut groups: Vec<(String, Vec<&Scan<'_>>)> = Vec::new();
    for s in scans {
        // A Bitmap Index Scan's rows are those its Bitmap Heap Scan fetched again.
        if matches!(s.kind, ScanKind::Seq | ScanKind::BitmapIndex)
            || s.node.rows_visited().is_none()
        {
            continue;
        }
        let Some(relation) = s.relation else { continue };
        if is_allowed(relation, s.schema, rules.allow_seq_scan) {
            continue;
        }
        let shown = qualified_for_display(relation, s.schema);
        if out.iter().any(|o| o.relation == shown) {
            continue;
        }
        match groups.iter_mut().find(|(r, _)| *r == shown) {
            Some((_, members)) => members.push(s),
            None => groups.push((shown, vec![s])),
        }
    }
    for (shown, members) in groups {
        if members.len() < 2 {
            continue;
        }
        let read = |s: &Scan<'_>| s.node.rows_visited_at_most().unwrap_or(0.0);
        let size = members
            .iter()
            .map(|s| s.node.rows_in_one_pass().unwrap_or(0.0))
            .fold(catalog_rows(members[0], rules), f64::max);
        let total: f64 = members.iter().map(|s| read(s)).sum();
        if size < rules.large_rows || total < (size * WHOLE_RELATION_SHARE).max(1.0) {
            continue;
        }
        let each: Vec<String> = members
            .iter()
            .map(|s| format!("{} ({})", describe_scan(s, false), group(read(s))))
            .collect();
        out.push(WholeRead {
            detail: format!(
                "{} scans of {shown} read {} of its {} rows between them: {} (at least half of \
                 a relation of at least --large-rows {} rows is a whole read, however many \
                 scans read it)",
                members.len(),
                group(total),
                group(size),
                each.join(", "),
                group(rules.large_rows)
            ),
            through_required: members.iter().all(|s| is_required_index(s, rules.index)),
            relation: shown,
            large: true,
            by_rows: true,
            heap: false,
        });
    }
}

/// `pg_class.reltuples` of a scan's relation; 0 for one never analysed (-1) or not known.
fn catalog_rows(scan: &Scan<'_>, rules: &Rules<'_>) -> f64 {
    scan.relation
        .and_then(|r| rules.reltuples.get(&Relation::new(scan.schema, r).key()))
        .copied()
        .unwrap_or(0.0)
        .max(0.0)
}

/// Whether one scan read its relation whole. The rule, written once (the README's verdict
/// section says the same):
///
/// 1. A sequential scan (Seq Scan, parallel or not, Sample Scan, Tid Range Scan) reads the
///    relation's pages in order: a whole read, whatever it returned.
/// 2. Any other scan (Index, Index Only, Bitmap Heap, Bitmap Index, Tid, …) reads a relation
///    whole when its node read at least half its rows ([`WHOLE_RELATION_SHARE`]) and the
///    relation is large (at least `--large-rows` rows), whatever the index — the required one
///    too — and whatever its Index Cond: `thread_id >= 0` bounds nothing, and a LIMIT walk
///    whose Filter matches nothing reads to the end. A LIMIT walk that really stops early reads
///    a few rows and is not one. Scans of one relation that read less each are added up
///    ([`read_between_them`]): three range scans of a third each read it all.
/// 3. On a relation of any size, a scan of an index other than the required one with no Index
///    Cond that read at least half of it is the seq scan it is in all but name.
///
/// Rows read are (Actual Rows + Rows Removed by Filter + Rows Removed by Index Recheck) ×
/// Actual Loops ([`crate::plan::explain::PlanNode::rows_visited`]): every loop of a nested loop's
/// inner side, every participant of a parallel scan, every row a Bitmap Heap Scan fetched.
/// EXPLAIN prints a loop's figures rounded (whole numbers, and `Actual Rows` to two decimals on
/// 18), so over several loops the most they can stand for is what is held to the rule
/// ([`crate::plan::explain::PlanNode::rows_visited_at_most`]). The relation's size is its
/// `reltuples`, or the rows one pass of the node read where that is more (a table never
/// analysed, or grown since): a pass cannot read more rows than there are.
fn whole_read(scan: &Scan<'_>, rules: &Rules<'_>) -> Option<WholeRead> {
    let relation = scan.relation?;
    let shown = qualified_for_display(relation, scan.schema);
    let catalog = catalog_rows(scan, rules);
    // A Bitmap Heap Scan reads through the Bitmap Index Scans below it.
    let through_required = is_required_index(scan, rules.index)
        || (scan.kind == ScanKind::BitmapHeap && bitmap_reads(scan.node, &rules.index.name));
    if scan.kind == ScanKind::Seq {
        return Some(WholeRead {
            large: catalog.max(scan.node.rows_in_one_pass().unwrap_or(0.0)) >= rules.large_rows,
            relation: shown,
            by_rows: false,
            through_required,
            heap: false,
            detail: describe_scan(scan, true),
        });
    }
    let no_cond_elsewhere = matches!(scan.kind, ScanKind::Index | ScanKind::IndexOnly)
        && !through_required
        && scan.node.index_cond.is_none();
    let Some(read) = scan.node.rows_visited() else {
        // Without actual rows there is no telling how much a scan read; a scan of another index
        // with no condition is presumed to read it all (rule 3).
        return no_cond_elsewhere.then(|| WholeRead {
            large: catalog >= rules.large_rows,
            relation: shown.clone(),
            by_rows: false,
            through_required,
            heap: false,
            detail: describe_scan(scan, true),
        });
    };
    // A loop's figures are printed rounded: what the node may have read is held to the rule,
    // so rounding cannot hide a read (0 rows a loop, looped past the relation's size).
    let at_most = scan.node.rows_visited_at_most().unwrap_or(read);
    let size = catalog.max(scan.node.rows_in_one_pass().unwrap_or(0.0));
    let large = size >= rules.large_rows;
    // `max(1)`: a relation the catalog calls empty is read whole by any row (rule 3).
    let most = at_most >= (size * WHOLE_RELATION_SHARE).max(1.0);
    if !most || !(large || no_cond_elsewhere) {
        return None;
    }
    let rule = if large {
        format!(
            "at least half of a relation of at least --large-rows {} rows is a whole read, \
             whatever the index and its Index Cond",
            group(rules.large_rows)
        )
    } else {
        "at least half of a relation through another index with no Index Cond is a seq scan \
         in all but name"
            .to_string()
    };
    let cond = match (&scan.node.index_cond, scan.kind) {
        (Some(c), _) => format!("Index Cond: {c}; "),
        (None, ScanKind::Index | ScanKind::IndexOnly | ScanKind::BitmapIndex) => {
            "no Index Cond; ".to_string()
        }
        _ => String::new(),
    };
    let loops = match scan.node.actual_loops {
        Some(l) if l > 1.0 => format!(" in {} loops", group(l)),
        _ => String::new(),
    };
    let rows = if at_most - read >= 1.0 {
        format!(
            "up to {} ({} as printed; EXPLAIN rounds each loop's figures)",
            group(at_most),
            group(read)
        )
    } else {
        group(read)
    };
    Some(WholeRead {
        detail: format!(
            "{} read {rows} of the {} rows of {shown}{loops} ({cond}{rule})",
            describe_scan(scan, false),
            group(size),
        ),
        relation: shown,
        large,
        by_rows: true,
        through_required,
        heap: scan.kind == ScanKind::BitmapHeap,
    })
}

/// Whether a Bitmap Heap Scan's bitmap comes (directly or through BitmapAnd / BitmapOr) from a
/// Bitmap Index Scan of `index`.
fn bitmap_reads(heap: &PlanNode, index: &str) -> bool {
    heap.children.iter().any(|c| match c.node_type.as_str() {
        "Bitmap Index Scan" => c.index_name.as_deref() == Some(index),
        "BitmapAnd" | "BitmapOr" => bitmap_reads(c, index),
        _ => false,
    })
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
