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
    let (seq_scans, large_reads) = tallied(&whole);
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
        return PlanVerdict {
            verdict: Verdict::SeqScan,
            message: seq_scan_message(index, &whole, rules),
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

/// The `seq-scan` message: what is read whole and what may be, and the `allow_seq_scan` entry
/// that would allow the relations read whole not through the required index (a whole read
/// through it is the SQL's condition to fix, not a relation to allow).
fn seq_scan_message(index: &str, whole: &[WholeRead], rules: &Rules<'_>) -> String {
    // The required index itself may be the whole read (a trivially true Index Cond).
    let lead = if whole.iter().all(|w| w.through_required) {
        format!("{index} is used, but it reads a whole relation")
    } else {
        format!("{index} is used, but the plan also reads a whole relation")
    };
    whole_read_message(&lead, whole, rules)
}

/// What is read whole and what may be, after `lead`, and the `allow_seq_scan` entry that would
/// allow the relations read whole not through the required index.
fn whole_read_message(lead: &str, whole: &[WholeRead], rules: &Rules<'_>) -> String {
    let seq_details: Vec<&str> = whole.iter().map(|w| w.detail.as_str()).collect();
    let allowed = if rules.allow_seq_scan.is_empty() {
        "no relation may be seq scanned here".to_string()
    } else {
        format!("only {} may be", rules.allow_seq_scan.join(", "))
    };
    let mut others: Vec<&str> = Vec::new();
    for w in whole.iter().filter(|w| !w.through_required) {
        if !others.contains(&w.relation.as_str()) {
            others.push(&w.relation);
        }
    }
    let fix = if others.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = others.iter().map(|r| format!("\"{r}\"")).collect();
        format!(
            ". Fix: where reading {} whole is expected, allow it in the expectation, \
             allow_seq_scan = [{}] (it allows it on every database the project is checked \
             against, a production-sized one too)",
            others.join(", "),
            quoted.join(", ")
        )
    };
    format!("{lead}: {} ({allowed}){fix}", seq_details.join("; "))
}

/// The relations read whole, and those of them that are large, each once.
fn tallied(whole: &[WholeRead]) -> (Vec<String>, Vec<String>) {
    let mut seq_scans: Vec<String> = Vec::new();
    let mut large_reads: Vec<String> = Vec::new();
    for w in whole {
        if !seq_scans.contains(&w.relation) {
            seq_scans.push(w.relation.clone());
        }
        if w.large && !large_reads.contains(&w.relation) {
            large_reads.push(w.relation.clone());
        }
    }
    (seq_scans, large_reads)
}

/// Judges one plan of a check that requires no index (`index = false`: a read path no one index
/// serves): only the whole-read rule ([`whole_read`]) holds it, with its `allow_seq_scan`.
pub fn judge_whole_reads(plan: &Explain, rules: &Rules<'_>) -> PlanVerdict {
    let scans = plan.scans();
    let used = describe_access_paths(&scans);
    let whole = whole_reads(&scans, rules);
    let (seq_scans, large_reads) = tallied(&whole);
    if !seq_scans.is_empty() {
        return PlanVerdict {
            verdict: Verdict::SeqScan,
            message: whole_read_message(
                "no index is required (index = false), but the plan reads a whole relation",
                &whole,
                rules,
            ),
            used,
            seq_scans,
            large_reads,
        };
    }
    let read = if used.is_empty() {
        "no relation at all".to_string()
    } else {
        used.join("; ")
    };
    PlanVerdict {
        verdict: Verdict::Pass,
        message: format!(
            "no index is required (index = false), and nothing is read whole but what \
             allow_seq_scan allows: {read}"
        ),
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
                // A partition that never ran because its join's outer side found no rows still
                // shows the planned path; one a LIMIT or the parameters skipped does not.
                any_ran |= leaf_used.iter().any(|s| !s.skipped);
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
        // A loop of lookups reads a relation whole only when it reaches as many rows as it
        // holds (rule 4 of `whole_read`): its rows count half against the half a scan needs.
        let weight = |s: &Scan<'_>| {
            if is_lookup_loop(s) {
                WHOLE_RELATION_SHARE
            } else {
                1.0
            }
        };
        let size = members
            .iter()
            .map(|s| s.node.rows_in_one_pass().unwrap_or(0.0))
            .fold(catalog_rows(members[0], rules), f64::max);
        let total: f64 = members.iter().map(|s| read(s)).sum();
        let counted: f64 = members.iter().map(|s| read(s) * weight(s)).sum();
        if size < rules.large_rows || counted < (size * WHOLE_RELATION_SHARE).max(1.0) {
            continue;
        }
        let any_lookups = members.iter().any(|s| is_lookup_loop(s));
        let each: Vec<String> = members
            .iter()
            .map(|s| {
                let loops = match s.node.actual_loops {
                    Some(l) if is_lookup_loop(s) => format!(" in {} lookups", group(l)),
                    _ => String::new(),
                };
                format!("{} ({}{loops})", describe_scan(s, false), group(read(s)))
            })
            .collect();
        out.push(WholeRead {
            detail: format!(
                "{} scans of {shown} read {} of its {} rows between them: {} (at least half of \
                 a relation of at least --large-rows {} rows is a whole read, however many \
                 scans read it{})",
                members.len(),
                group(total),
                group(size),
                each.join(", "),
                group(rules.large_rows),
                if any_lookups {
                    "; rows a loop of lookups reached count half, as such a loop reads it whole \
                     only by reaching as many rows as it holds"
                } else {
                    ""
                }
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
/// 4. A loop of lookups ([`is_lookup_loop`]: a node run once per outer row, a Nested Loop's inner
///    side or a correlated subplan) reaches its rows by repeated descents, often the same rows
///    again: it reads its relation whole when one pass reads at least half of it (rule 2 or 3
///    each time round), or when all its loops together reach as many rows as the relation holds
///    (every row, or as many reads as every row would take). Below that it is lookups, judged by
///    what they cost (buffers, a budget), not as a whole read.
///
/// Rows read are (Actual Rows + Rows Removed by Filter + Rows Removed by Index Recheck) ×
/// Actual Loops ([`crate::plan::explain::PlanNode::rows_visited`]): every loop of a nested loop's
/// inner side, every participant of a parallel scan, every row a Bitmap Heap Scan fetched.
/// EXPLAIN prints a loop's figures rounded (whole numbers, and `Actual Rows` to two decimals on
/// 18), so over several loops the most they can stand for is what is held to the rule
/// ([`crate::plan::explain::PlanNode::rows_visited_at_most`]). The relation's size is its
/// `reltuples`, or the rows one pass of the node read where that is more (a table never
/// analysed, or grown since): a pass cannot read more rows than there are.
// Long because each scan kind counts its rows differently, and each branch says why.
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
    let half = (size * WHOLE_RELATION_SHARE).max(1.0);
    let lookups = is_lookup_loop(scan);
    let most = if lookups {
        let loops = scan.node.actual_loops.unwrap_or(1.0).max(1.0);
        at_most / loops >= half || at_most >= size.max(1.0)
    } else {
        at_most >= half
    };
    if !most || !(large || no_cond_elsewhere) {
        return None;
    }
    let rule = if lookups {
        format!(
            "a loop of lookups reads a relation whole when one pass reads at least half of it, \
             or all its loops reach as many rows as it holds{}",
            if large {
                format!(
                    " (a relation of at least --large-rows {})",
                    group(rules.large_rows)
                )
            } else {
                " (through another index with no Index Cond)".to_string()
            }
        )
    } else if large {
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

/// Whether a scan is a loop of lookups: run more than once (once per row of a Nested Loop's
/// outer side, or per call of a correlated subplan), each time from the top of its index or
/// relation. A parallel-aware node's loops are its participants sharing one scan, not lookups.
pub(super) fn is_lookup_loop(scan: &Scan<'_>) -> bool {
    !scan.node.parallel_aware && scan.node.actual_loops.is_some_and(|l| l > 1.0)
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
    // A node that never ran (`Actual Loops: 0`) is the plan's choice all the same when its join's
    // outer side found no rows: on a CI database of a few rows that is most inner sides. One
    // skipped otherwise (a branch a LIMIT never reached, a `One-Time Filter` switched off, a
    // subplan never needed) did not serve the page, whatever the plan says.
    if scan.skipped {
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::model::Partition;
    use crate::plan::explain::Explain;
    use crate::verdict::test_support::*;
    use crate::verdict::{Judging, RequiredIndex, Verdict};

    /// `judge_whole_reads` with no required index, as `index = false` judges.
    fn judge_none(doc: Value, allow: &[&str], tuples: &[(&str, f64)]) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
        let reltuples: HashMap<String, f64> =
            tuples.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let none = RequiredIndex::none();
        judge_whole_reads(
            &plan,
            &Rules {
                index: &none,
                allow_seq_scan: &allow,
                reltuples: &reltuples,
                large_rows: Judging::default().large_rows,
            },
        )
    }

    /// The board index's shape: the forums read whole (allowed), each forum's last post fetched
    /// by key in a loop.
    fn forums_then_posts_by_key(posts_rows_per_loop: u64, loops: u64) -> Value {
        json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            { "Node Type": "Seq Scan", "Relation Name": "forums", "Schema": "public",
              "Actual Rows": loops, "Actual Loops": 1 },
            { "Node Type": "Index Scan", "Index Name": "posts_pkey", "Relation Name": "posts",
              "Schema": "public", "Index Cond": "(id = f.last_post_id)",
              "Actual Rows": posts_rows_per_loop, "Actual Loops": loops }
        ]}}])
    }

    #[test]
    fn an_index_scan_that_never_ran_for_want_of_outer_rows_is_the_plan_s_choice() {
        // Regression: on a CI database the outer side of a Nested Loop often finds no rows, so
        // the inner Index Scan through the required index never runs (`loops 0`); it was
        // counted as absent and the check failed `not-chosen`, naming the index as used instead.
        let doc = |inner_loops: u64, one_time: Option<&str>| {
            let inner = json!({ "Node Type": "Index Scan",
                "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
                "Schema": "public", "Index Cond": "(thread_id = t.id)",
                "Actual Rows": 0, "Actual Loops": inner_loops });
            let mut join = json!({ "Node Type": "Nested Loop", "Actual Rows": 0,
                "Actual Loops": 1, "Plans": [
                    { "Node Type": "Index Scan", "Index Name": "threads_pkey",
                      "Relation Name": "threads", "Schema": "public",
                      "Index Cond": "(id = 7)", "Actual Rows": 0, "Actual Loops": 1 },
                    inner ] });
            if let Some(f) = one_time {
                join = json!({ "Node Type": "Result", "One-Time Filter": f,
                    "Actual Rows": 0, "Actual Loops": 1,
                    "Plans": [ { "Node Type": "Nested Loop", "Actual Loops": 0,
                        "Plans": join["Plans"].clone() } ] });
                join["Plans"][0]["Plans"][0]["Actual Loops"] = json!(0);
            }
            json!([{ "Plan": join }])
        };
        passes(doc(0, None), &[], &[]);
        passes(doc(1, None), &[], &[]);
        // A branch a One-Time Filter (the parameters alone) switched off is not read for these
        // parameters: the index is not the plan's way to the page.
        let v = fails(doc(0, Some("($1 = 'member'::text)")), &[], &[]);
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
    }

    #[test]
    fn no_required_index_passes_a_plan_that_reads_nothing_whole_but_what_is_allowed() {
        let v = judge_none(
            forums_then_posts_by_key(1, 40),
            &["forums"],
            &[("public.forums", 40.0), ("public.posts", 2_000_000.0)],
        );
        assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
        assert!(v.seq_scans.is_empty());
        assert!(
            v.message.contains("Index Scan using posts_pkey on posts"),
            "{}",
            v.message
        );
    }

    #[test]
    fn no_required_index_fails_a_relation_read_whole_that_is_not_allowed() {
        // The forums are read whole and not allowed: a seq scan, whatever their size.
        let v = judge_none(
            forums_then_posts_by_key(1, 40),
            &[],
            &[("public.forums", 40.0), ("public.posts", 2_000_000.0)],
        );
        assert_eq!(v.verdict, Verdict::SeqScan, "{v:?}");
        assert_eq!(v.seq_scans, vec!["forums".to_string()]);
        assert!(v.large_reads.is_empty());
        assert!(
            v.message.contains("allow_seq_scan = [\"forums\"]"),
            "{}",
            v.message
        );
        // The posts read whole through an index, loop by loop: a large whole read (rule 2),
        // though no Seq Scan is in the plan and no index is required.
        let v = judge_none(
            forums_then_posts_by_key(50_000, 40),
            &["forums"],
            &[("public.forums", 40.0), ("public.posts", 2_000_000.0)],
        );
        assert_eq!(v.verdict, Verdict::SeqScan, "{v:?}");
        assert_eq!(v.large_reads, vec!["posts".to_string()]);
        // A plain Seq Scan of a large table.
        let v = judge_none(
            json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
                "Schema": "public", "Actual Rows": 20, "Actual Loops": 1,
                "Rows Removed by Filter": 1_999_980 }}]),
            &[],
            &[("public.posts", 2_000_000.0)],
        );
        assert_eq!(v.verdict, Verdict::SeqScan, "{v:?}");
        assert_eq!(v.large_reads, vec!["posts".to_string()]);
    }

    #[test]
    fn required_index_under_limit_passes() {
        passes(
            json!([{ "Plan": { "Node Type": "Limit",
                "Plans": [index_scan("posts_thread_visible_idx", "posts")] } }]),
            &[],
            &[("public.posts", 1e6)],
        );
    }

    #[test]
    fn the_twin_is_not_the_required_index() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Limit",
                "Plans": [index_scan("posts_thread_all_idx", "posts")] } }]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
        assert!(v.message.contains("posts_thread_all_idx"), "{}", v.message);
    }

    #[test]
    fn required_index_in_a_node_that_never_ran_is_not_a_pass() {
        // A skipped branch uses the index; the page itself was served by another one.
        let mut never = index_scan("posts_thread_visible_idx", "posts");
        never["Actual Loops"] = json!(0);
        never["Actual Rows"] = json!(0);
        let v = fails(
            json!([{ "Plan": { "Node Type": "Append", "Plans": [
                never, index_scan("posts_thread_all_idx", "posts")]}}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn same_index_name_on_another_relation_is_not_a_pass() {
        let v = fails(
            json!([{ "Plan": index_scan("posts_thread_visible_idx", "archived_posts") }]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn same_index_name_in_another_schema_is_not_a_pass() {
        let mut scan = index_scan("posts_thread_visible_idx", "posts");
        scan["Schema"] = json!("archive");
        let v = fails(json!([{ "Plan": scan }]), &[], &[]);
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn parallel_seq_scan_instead_of_the_index_is_not_chosen() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Gather", "Plans": [
                { "Node Type": "Seq Scan", "Parallel Aware": true, "Relation Name": "posts",
                  "Schema": "public", "Actual Rows": 7, "Actual Loops": 3,
                  "Rows Removed by Filter": 700000 }]}}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
        assert_eq!(v.seq_scans, vec!["posts".to_string()]);
        assert!(
            v.message.contains("Parallel Seq Scan on posts"),
            "{}",
            v.message
        );
    }

    #[test]
    fn seq_scan_of_another_relation_beside_the_index_fails() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Hash Join", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Hash", "Plans": [{ "Node Type": "Seq Scan",
                  "Relation Name": "members", "Schema": "public", "Actual Rows": 10,
                  "Actual Loops": 1, "Rows Removed by Filter": 5000 }]}]}}]),
            &["forums"],
            &[],
        );
        assert_eq!(v.verdict, Verdict::SeqScan);
        assert_eq!(v.seq_scans, vec!["members".to_string()]);
        assert!(v.message.contains("5,000 rows removed"), "{}", v.message);
    }

    #[test]
    fn tablesample_and_tid_range_scans_beside_the_index_are_seq_scans() {
        // Regression: a whole-table read through TABLESAMPLE or a ctid range passed.
        for node in ["Sample Scan", "Tid Range Scan"] {
            let v = fails(
                json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                    index_scan("posts_thread_visible_idx", "posts"),
                    { "Node Type": node, "Relation Name": "members", "Schema": "public",
                      "Actual Rows": 5000, "Actual Loops": 1 }]}}]),
                &[],
                &[],
            );
            assert_eq!(v.verdict, Verdict::SeqScan, "{node}");
            assert_eq!(v.seq_scans, vec!["members".to_string()], "{node}");
            assert!(v.message.contains(node), "{}", v.message);
        }
    }

    #[test]
    fn allowed_seq_scan_passes_by_plain_or_qualified_name() {
        let doc = json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            { "Node Type": "Seq Scan", "Relation Name": "forums", "Schema": "public",
              "Actual Rows": 30, "Actual Loops": 1 },
            index_scan("posts_thread_visible_idx", "posts")]}}]);
        passes(doc.clone(), &["forums"], &[]);
        passes(doc.clone(), &["public.forums"], &[]);
        let v = fails(doc, &["archive.forums"], &[]);
        assert_eq!(v.verdict, Verdict::SeqScan);
    }

    #[test]
    fn seq_scan_inside_an_initplan_is_found() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Limit", "Plans": [
                { "Node Type": "Result", "Parent Relationship": "InitPlan",
                  "Subplan Name": "InitPlan 1", "Plans": [{ "Node Type": "Seq Scan",
                  "Relation Name": "threads", "Schema": "public" }]},
                index_scan("posts_thread_visible_idx", "posts")]}}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::SeqScan);
        assert_eq!(v.seq_scans, vec!["threads".to_string()]);
    }

    #[test]
    fn required_index_in_an_append_member_passes() {
        passes(
            json!([{ "Plan": { "Node Type": "Append", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Result" }]}}]),
            &[],
            &[],
        );
    }

    #[test]
    fn required_index_through_bitmap_and_passes() {
        passes(
            json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "posts",
                "Schema": "public", "Plans": [{ "Node Type": "BitmapAnd", "Plans": [
                    { "Node Type": "Bitmap Index Scan", "Index Name": "posts_thread_visible_idx",
                      "Index Cond": "(thread_id = 1)" },
                    { "Node Type": "Bitmap Index Scan", "Index Name": "other_idx",
                      "Index Cond": "(x = 1)" }]}]}}]),
            &[],
            &[],
        );
    }

    #[test]
    fn bitmap_index_scan_without_a_heap_scan_is_not_a_pass() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Bitmap Index Scan",
                "Index Name": "posts_thread_visible_idx", "Index Cond": "(thread_id = 1)" }}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn whole_relation_scan_of_another_index_counts_as_a_seq_scan() {
        // Seen with enable_seqscan = off: posts_pkey read end to end with a Filter.
        let v = fails(
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "members_pkey",
                  "Relation Name": "members", "Schema": "public", "Actual Rows": 900,
                  "Actual Loops": 1, "Rows Removed by Filter": 100 }]}}]),
            &[],
            &[("public.members", 1000.0), ("public.posts", 1e6)],
        );
        assert_eq!(v.verdict, Verdict::SeqScan);
        assert!(v.message.contains("no Index Cond"), "{}", v.message);
    }

    #[test]
    fn limit_stopped_scan_of_another_index_without_cond_is_not_a_seq_scan() {
        passes(
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "members_pkey",
                  "Relation Name": "members", "Schema": "public", "Actual Rows": 20,
                  "Actual Loops": 1 }]}}]),
            &[],
            &[("public.members", 50000.0)],
        );
    }

    /// [`judge`] with `--large-rows` set.
    fn judge_large(doc: Value, tuples: &[(&str, f64)], large_rows: f64) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let reltuples: HashMap<String, f64> =
            tuples.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let index = required();
        judge_plan(
            &plan,
            &Rules {
                index: &index,
                allow_seq_scan: &[],
                reltuples: &reltuples,
                large_rows,
            },
        )
    }

    /// The required index read through `cond`, having returned `rows` and filtered `removed`.
    fn required_read(cond: &str, rows: f64, removed: f64) -> Value {
        json!({ "Node Type": "Index Scan", "Index Name": "posts_thread_visible_idx",
                "Relation Name": "posts", "Schema": "public", "Index Cond": cond,
                "Filter": "(length(body) < 0)", "Actual Rows": rows, "Actual Loops": 1,
                "Rows Removed by Filter": removed })
    }

    #[test]
    fn a_trivially_true_index_cond_reading_most_of_a_large_relation_is_a_whole_read() {
        // Regression: `thread_id >= 0` walked the whole of the required index and passed.
        let doc = json!([{ "Plan": { "Node Type": "Limit", "Plans": [
            required_read("(thread_id >= 0)", 0.0, 96_000.0)]}}]);
        let v = fails(doc, &[], &[("public.posts", 100_000.0)]);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert_eq!(v.seq_scans, vec!["posts".to_string()]);
        assert_eq!(v.large_reads, vec!["posts".to_string()]);
        for part in [
            "Index Scan using posts_thread_visible_idx on posts",
            "read 96,000 of the 100,000 rows of posts",
            "Index Cond: (thread_id >= 0)",
            "at least half of a relation of at least --large-rows 10,000 rows",
            "but it reads a whole relation",
        ] {
            assert!(v.message.contains(part), "no {part:?} in: {}", v.message);
        }
    }

    #[test]
    fn the_required_index_reading_less_than_half_of_a_large_relation_passes() {
        // Half is the line: 49,999 rows of 100,000 pass, 50,000 do not.
        let tuples = [("public.posts", 100_000.0)];
        passes(
            json!([{ "Plan": required_read("(thread_id >= 0)", 20.0, 49_979.0) }]),
            &[],
            &tuples,
        );
        let v = fails(
            json!([{ "Plan": required_read("(thread_id >= 0)", 20.0, 49_980.0) }]),
            &[],
            &tuples,
        );
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
    }

    #[test]
    fn most_of_a_relation_below_large_rows_through_the_required_index_passes() {
        // A small relation is no whole read through an index with a condition; the same read
        // fails once --large-rows says the relation is large.
        let doc = json!([{ "Plan": required_read("(thread_id >= 0)", 900.0, 0.0) }]);
        let tuples = [("public.posts", 1_000.0)];
        assert_eq!(
            judge_large(doc.clone(), &tuples, 10_000.0).verdict,
            Verdict::Pass
        );
        let v = judge_large(doc, &tuples, 1_000.0);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(v.message.contains("--large-rows 1,000"), "{}", v.message);
    }

    fn pkey_walk(rows: f64, removed: f64) -> Value {
        json!([{ "Plan": { "Node Type": "Limit", "Plans": [
            { "Node Type": "Limit", "Parent Relationship": "InitPlan",
              "Subplan Name": "InitPlan 1", "Plans": [
                { "Node Type": "Index Scan", "Index Name": "posts_pkey",
                  "Relation Name": "posts", "Schema": "public", "Index Cond": "(id > 0)",
                  "Filter": "(length(body) < 0)", "Actual Rows": rows, "Actual Loops": 1,
                  "Rows Removed by Filter": removed }]},
            index_scan("posts_thread_visible_idx", "posts")]}}])
    }

    #[test]
    fn a_limit_walk_of_another_index_that_reads_everything_is_a_whole_read() {
        // Regression: `LIMIT 1` from `id > 0` in an InitPlan read all of posts and passed.
        let v = fails(
            pkey_walk(0.0, 100_000.0),
            &[],
            &[("public.posts", 100_000.0)],
        );
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(
            v.message.contains(
                "Index Scan using posts_pkey on posts read 100,000 of the 100,000 rows of posts \
                 (Index Cond: (id > 0)"
            ),
            "{}",
            v.message
        );
        assert!(
            v.message.contains("also reads a whole relation"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_limit_walk_of_another_index_that_stops_early_passes() {
        passes(pkey_walk(1.0, 3.0), &[], &[("public.posts", 100_000.0)]);
    }

    #[test]
    fn scans_of_one_relation_that_read_it_all_between_them_are_a_whole_read() {
        // Regression: three InitPlans each read a third of posts through posts_pkey and passed.
        let thirds = |removed: f64| {
            let third = |cond: &str| {
                json!({ "Node Type": "Index Scan", "Index Name": "posts_pkey",
                        "Parent Relationship": "InitPlan", "Relation Name": "posts",
                        "Schema": "public", "Index Cond": cond, "Filter": "(length(body) < 0)",
                        "Actual Rows": 0, "Actual Loops": 1, "Rows Removed by Filter": removed })
            };
            json!([{ "Plan": { "Node Type": "Limit", "Plans": [
                third("(id < 40000)"), third("((id >= 40000) AND (id < 80000))"),
                third("(id >= 80000)"), index_scan("posts_thread_visible_idx", "posts")]}}])
        };
        let tuples = [("public.posts", 120_000.0)];
        let v = fails(thirds(40_000.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert_eq!(v.large_reads, vec!["posts".to_string()]);
        assert!(
            v.message.contains(
                "4 scans of posts read 120,020 of its 120,000 rows between them: Index Scan \
                 using posts_pkey on posts (40,000)"
            ),
            "{}",
            v.message
        );
        // A few hundred rows each, with the page's 20: far from half.
        passes(thirds(300.0), &[], &tuples);
    }

    #[test]
    fn rows_read_count_every_loop_of_a_nested_loop() {
        // One row a lookup, looped over every post: the whole of posts, a row at a time.
        let lookups = |loops: f64| {
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "posts_pkey",
                  "Relation Name": "posts", "Schema": "public", "Index Cond": "(id = g.g)",
                  "Actual Rows": 1, "Actual Loops": loops }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        let v = fails(lookups(100_000.0), &[], &tuples);
        assert!(v.message.contains("in 100,000 loops"), "{}", v.message);
        passes(lookups(20.0), &[], &tuples);
    }

    #[test]
    fn rows_rounded_to_nothing_a_loop_cannot_hide_a_whole_read() {
        // Up to 17: a lookup by every id up to 300,000 finds 0.39 rows a loop, printed `0`;
        // 117,192 posts were read. 0 a loop over 300,000 loops is anything under 150,000.
        let lookups = |rows: Value, loops: f64| {
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "posts_pkey",
                  "Relation Name": "posts", "Schema": "public", "Index Cond": "(id = g.g)",
                  "Actual Rows": rows, "Actual Loops": loops }]}}])
        };
        let tuples = [("public.posts", 117_192.0)];
        let v = fails(lookups(json!(0), 300_000.0), &[], &tuples);
        assert!(
            v.message
                .contains("read up to 150,000 (0 as printed; EXPLAIN rounds each loop's figures)"),
            "{}",
            v.message
        );
        // Twenty lookups: rounding cannot make them most of posts.
        passes(lookups(json!(0), 20.0), &[], &tuples);
        // 18 prints two decimals: 0.01 a loop over 300,000 loops is about 3,000 rows, a pass.
        passes(lookups(json!(0.01), 300_000.0), &[], &tuples);
    }

    #[test]
    fn fractional_rows_of_postgresql_18_are_multiplied_by_their_loops() {
        // 18 prints 0.5 rows a loop where 17 printed 0 or 1.
        let doc = json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            index_scan("posts_thread_visible_idx", "posts"),
            { "Node Type": "Index Only Scan", "Index Name": "posts_pkey",
              "Relation Name": "posts", "Schema": "public", "Index Cond": "(id = g.g)",
              "Actual Rows": 0.85, "Actual Loops": 120_000 }]}}]);
        let v = fails(doc, &[], &[("public.posts", 100_000.0)]);
        assert!(
            v.message
                .contains("read up to 102,600 (102,000 as printed; EXPLAIN rounds each loop's"),
            "{}",
            v.message
        );
    }

    /// A Nested Loop's inner side looked up by its primary key, `loops` times, `rows` a loop, on
    /// a `users` of 50,000 rows; the page's own rows through the required index.
    fn lookups_of_users(rows: f64, loops: f64) -> serde_json::Value {
        json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            index_scan("posts_thread_visible_idx", "posts"),
            { "Node Type": "Index Scan", "Index Name": "users_pkey",
              "Relation Name": "users", "Schema": "public", "Index Cond": "(id = p.user_id)",
              "Actual Rows": rows, "Actual Loops": loops }]}}])
    }

    #[test]
    fn a_loop_of_lookups_is_not_a_whole_read_until_it_reaches_every_row() {
        let tuples = [("public.posts", 100_000.0), ("public.users", 50_000.0)];
        // Issue 34: a generic plan joins users by its key 26,501 times, once per row before
        // the top-N sort. 26,501 rows of 50,000 (up to 39,751 as printed up to 17): lookups,
        // not a scan of users.
        passes(lookups_of_users(1.0, 26_501.0), &[], &tuples);
        // As many reads as users holds: a whole read, however it was reached.
        let v = fails(lookups_of_users(1.0, 50_000.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert_eq!(v.large_reads, vec!["users".to_string()]);
        assert!(
            v.message.contains(
                "Index Scan using users_pkey on users read up to 50,250 (50,000 as printed; \
                 EXPLAIN rounds each loop's figures) of the 50,000 rows of users in 50,000 loops"
            ) && v.message.contains(
                "a loop of lookups reads a relation whole when one pass reads at least half of \
                 it, or all its loops reach as many rows as it holds"
            ),
            "{}",
            v.message
        );
        // One pass that reads most of users is a whole read each time round.
        let v = fails(lookups_of_users(30_000.0, 2.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
    }

    #[test]
    fn lookups_count_half_beside_real_scans_of_the_same_relation() {
        let tuples = [("public.posts", 100_000.0), ("public.users", 50_000.0)];
        // A range scan of 20,000 users (under half) and 20,000 lookups (up to 20,100 as
        // printed): 20,000 + 10,050 counted, more than half of 50,000 between them.
        let range = json!({ "Node Type": "Index Scan", "Index Name": "users_created_idx",
            "Relation Name": "users", "Schema": "public",
            "Index Cond": "(created_at > now() - '1 year'::interval)",
            "Actual Rows": 20_000, "Actual Loops": 1 });
        let doc = |lookup_rows: f64| {
            let mut d = lookups_of_users(1.0, lookup_rows);
            d[0]["Plan"]["Plans"]
                .as_array_mut()
                .unwrap()
                .push(range.clone());
            d
        };
        let v = fails(doc(20_000.0), &[], &tuples);
        assert!(
            v.message
                .contains("2 scans of users read 40,100 of its 50,000 rows between them")
                && v.message
                    .contains("rows a loop of lookups reached count half"),
            "{}",
            v.message
        );
        // 20,000 + 2,010 counted (4,000 lookups, up to 4,020 as printed): under half.
        passes(doc(4_000.0), &[], &tuples);
    }

    #[test]
    fn a_parallel_index_scan_is_read_by_all_its_participants_together() {
        let parallel = |rows: f64| {
            json!([{ "Plan": { "Node Type": "Gather", "Plans": [
                { "Node Type": "Index Scan", "Parallel Aware": true,
                  "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
                  "Schema": "public", "Index Cond": "(thread_id >= 0)",
                  "Actual Rows": rows, "Actual Loops": 3 }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        // 3 × 20,000: more than half, though each participant read a fifth.
        let v = fails(parallel(20_000.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        passes(parallel(10_000.0), &[], &tuples);
    }

    #[test]
    fn a_bitmap_heap_scan_is_judged_by_every_row_it_fetched() {
        // Lossy pages: the recheck threw most of what the heap scan fetched away.
        let bitmap = |recheck: f64| {
            json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "posts",
                "Schema": "public", "Recheck Cond": "(thread_id >= 0)", "Actual Rows": 20,
                "Actual Loops": 1, "Rows Removed by Index Recheck": recheck, "Plans": [
                { "Node Type": "Bitmap Index Scan", "Index Name": "posts_thread_visible_idx",
                  "Index Cond": "(thread_id >= 0)", "Actual Rows": 20, "Actual Loops": 1 }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        let v = fails(bitmap(60_000.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(
            v.message
                .contains("Bitmap Heap Scan on posts read 60,020 of the 100,000 rows of posts"),
            "{}",
            v.message
        );
        assert!(
            v.message.contains("but it reads a whole relation"),
            "{}",
            v.message
        );
        passes(bitmap(100.0), &[], &tuples);
    }

    #[test]
    fn a_bitmap_index_scan_that_returned_most_of_a_relation_is_a_whole_read() {
        // In a BitmapAnd the required index returned every visible post; another index chose
        // the 20 rows the heap scan fetched.
        let doc = json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "posts",
            "Schema": "public", "Actual Rows": 20, "Actual Loops": 1, "Plans": [
            { "Node Type": "BitmapAnd", "Plans": [
                { "Node Type": "Bitmap Index Scan", "Index Name": "posts_thread_visible_idx",
                  "Index Cond": "(thread_id >= 0)", "Actual Rows": 96_000, "Actual Loops": 1 },
                { "Node Type": "Bitmap Index Scan", "Index Name": "posts_author_visible_idx",
                  "Index Cond": "(author_id = 7)", "Actual Rows": 20, "Actual Loops": 1 }]}]}}]);
        let v = fails(doc, &[], &[("public.posts", 100_000.0)]);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(
            v.message
                .contains("Bitmap Index Scan using posts_thread_visible_idx"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_tid_scan_of_every_row_is_a_whole_read() {
        let tid = |rows: f64| {
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Tid Scan", "Relation Name": "posts", "Schema": "public",
                  "TID Cond": "(ctid = ANY ($0))", "Actual Rows": rows, "Actual Loops": 1 }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        let v = fails(tid(100_000.0), &[], &tuples);
        assert!(
            v.message.contains("Tid Scan on posts read 100,000"),
            "{}",
            v.message
        );
        passes(tid(1.0), &[], &tuples);
    }

    #[test]
    fn a_relation_never_analysed_is_as_large_as_one_pass_read() {
        // reltuples -1: the rows one pass read are all the catalog can be sure of.
        let tuples = [("public.posts", -1.0)];
        let v = fails(
            json!([{ "Plan": required_read("(thread_id >= 0)", 0.0, 50_000.0) }]),
            &[],
            &tuples,
        );
        assert_eq!(v.large_reads, vec!["posts".to_string()], "{}", v.message);
        passes(
            json!([{ "Plan": required_read("(thread_id = 1)", 20.0, 0.0) }]),
            &[],
            &tuples,
        );
    }

    #[test]
    fn a_relation_allowed_a_seq_scan_may_be_read_whole_through_an_index() {
        let doc = json!([{ "Plan": required_read("(thread_id >= 0)", 0.0, 96_000.0) }]);
        passes(doc, &["posts"], &[("public.posts", 100_000.0)]);
    }

    fn partitioned_judge(doc: Value) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let index = RequiredIndex {
            schema: "public".into(),
            name: "pp_visible".into(),
            table: "pp".into(),
            predicate: None,
            keys: vec![],
            orders: vec![],
            siblings: vec![],
            columns: vec![],
            partitions: vec![
                Partition {
                    schema: "public".into(),
                    table: "pp_a".into(),
                    leaf_index: Some("pp_a_visible".into()),
                },
                Partition {
                    schema: "public".into(),
                    table: "pp_b".into(),
                    leaf_index: None,
                },
                Partition {
                    schema: "public".into(),
                    table: "pp_c".into(),
                    leaf_index: Some("pp_c_visible".into()),
                },
            ],
        };
        let reltuples = HashMap::new();
        judge_plan(
            &plan,
            &Rules {
                index: &index,
                allow_seq_scan: &[],
                reltuples: &reltuples,
                large_rows: Judging::default().large_rows,
            },
        )
    }

    #[test]
    fn partitioned_index_passes_when_every_scanned_partition_uses_its_leaf() {
        // pp_b (no leaf) was pruned: it is not in the plan and does not count.
        let v = partitioned_judge(json!([{ "Plan": { "Node Type": "Append", "Plans": [
            index_scan("pp_a_visible", "pp_a"), index_scan("pp_c_visible", "pp_c")]}}]));
        assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    }

    #[test]
    fn partitioned_index_names_the_partition_seq_scanned() {
        let v = partitioned_judge(json!([{ "Plan": { "Node Type": "Append", "Plans": [
            index_scan("pp_a_visible", "pp_a"),
            { "Node Type": "Seq Scan", "Relation Name": "pp_b", "Schema": "public",
              "Actual Rows": 5, "Actual Loops": 1 }]}}]));
        assert_eq!(v.verdict, Verdict::SeqScan, "{v:?}");
        assert_eq!(v.seq_scans, vec!["pp_b".to_string()]);
        assert!(
            v.message
                .contains("partition pp_b has no leaf of pp_visible"),
            "{}",
            v.message
        );
    }

    #[test]
    fn partitioned_index_with_no_leaf_used_is_not_chosen() {
        let v = partitioned_judge(json!([{ "Plan": { "Node Type": "Append", "Plans": [
            { "Node Type": "Seq Scan", "Relation Name": "pp_a", "Schema": "public" }]}}]));
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
    }
}
