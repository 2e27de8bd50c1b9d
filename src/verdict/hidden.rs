//! The rule for reads the plan does not show: a whole read inside a function call. A plan shows
//! `query_to_xml('SELECT … FROM posts', …)` or an application's function as a call in a Filter or
//! an Output, never the table the call reads; PostgreSQL's own counters count every read a
//! statement makes, in functions too ([`crate::measure::Counted`]). So a whole read is judged by
//! those counts as well as by the plan's nodes ([`super::plan`]), and a pass needs both.
//!
//! The rule, for each table PostgreSQL counted a read of and `allow_seq_scan` does not allow, in
//! each run of the read path (the worst run stands):
//!
//! 1. Rows: what the run read of the table is what the counters show, or what the plan's nodes
//!    show where that is more (the counters of the check's own session miss what its parallel
//!    workers read; a Tid Scan is counted by neither and is added). It is a whole read when it
//!    is at least half the table's rows ([`super::plan::WHOLE_RELATION_SHARE`]) and the table is
//!    large (at least `--large-rows` rows by the catalog, or, never analysed, that many rows
//!    read), and the counters show more than the plan's nodes account for: that much was read
//!    where the plan does not show it. The same line as the plan's own whole-read rule, so a
//!    `LIMIT 1` walk inside a function that stops early reads a few rows and is not one.
//! 2. Sequential scans: PostgreSQL counted a sequential scan of the table and the plan has no
//!    Seq Scan of it: a seq scan inside a call, a whole read whatever the table's size, as a
//!    Seq Scan node is (rule 1 of [`super::plan`]'s whole reads).
//!
//! What other processes read (parallel workers, counted server-wide from PostgreSQL 15) is
//! counted as the fewest rows and scans any run of the check saw of the table: another
//! session's counts that reached the server during one run are not taken for the check's, and
//! a function that reads in parallel workers in every run is counted in every run.

use std::collections::HashMap;

use serde_json::Value;

use super::group;
use super::plan::{WHOLE_RELATION_SHARE, is_allowed, qualified_for_display};
use crate::measure::{Counted, Measured, RunKind, RunReads};
use crate::plan::explain::{Explain, ScanKind};

/// What the counters say of a measurement's reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Hidden {
    /// Nothing read whole where the plan does not show it.
    Nothing,
    /// Tables read whole inside calls.
    Found(Vec<HiddenRead>),
    /// `track_counts` is off on the server: PostgreSQL counted nothing, so what calls read is not
    /// known.
    Untracked,
    /// Measured before plancheck counted reads (a saved measurement of an older version): judged
    /// by its plans alone, as when it was saved.
    NotCounted,
}

/// One table read whole where the plan does not show it.
#[derive(Debug, Clone, PartialEq)]
pub struct HiddenRead {
    /// The table, as shown: `name` in the default schema, `schema.name` elsewhere.
    pub relation: String,
    /// At least `--large-rows` rows.
    pub large: bool,
    /// What PostgreSQL counted, against what, and the calls the plan shows that could have read
    /// it.
    pub detail: String,
}

/// What the rule needs beyond the measurement.
pub struct Rules<'a> {
    pub allow_seq_scan: &'a [String],
    /// `pg_class.reltuples` by `schema.name`.
    pub reltuples: &'a HashMap<String, f64>,
    pub large_rows: f64,
}

/// What one plan shows of one table.
#[derive(Debug, Default, Clone, Copy)]
struct Shown {
    /// Rows its nodes read that PostgreSQL counts: sequential, sample and TID range scans,
    /// index, index-only and bitmap index scans, bitmap heap scans.
    counted: f64,
    /// Rows its Tid Scans read, which PostgreSQL does not count.
    uncounted: f64,
    /// It has a Seq Scan (or a sample or TID range scan) of the table.
    seq: bool,
}

fn shown(plan: &Explain, schema: &str, name: &str) -> Shown {
    let mut out = Shown::default();
    for s in plan.scans() {
        if s.relation != Some(name) || s.schema.is_some_and(|sc| sc != schema) {
            continue;
        }
        let rows = s.node.rows_visited().unwrap_or(0.0);
        match s.kind {
            ScanKind::Tid => out.uncounted += rows,
            ScanKind::Other => {}
            kind => {
                out.counted += rows;
                out.seq |= kind == ScanKind::Seq;
            }
        }
    }
    out
}

/// How a run is named in a message.
fn run_label(run: &RunReads, measured_index: Option<usize>) -> String {
    match (run.kind, run.warmup, measured_index) {
        (RunKind::Explain, false, Some(i)) => format!("measured run {}", i + 1),
        (RunKind::Explain, _, _) => "a warm-up run".to_string(),
        (RunKind::Plain, true, _) => "a warm-up run of the plain statement".to_string(),
        (RunKind::Plain, false, _) => {
            "a run of the plain statement (as the application sends it)".to_string()
        }
        (RunKind::Generic, _, _) => "the generic plan's run".to_string(),
    }
}

/// Judges what the counters say of `measured`'s runs.
// Long because it is the rule over every table and run: the plan each run is held to, the
// fewest rows other processes read, then the two rules in order.
pub fn judge(measured: &Measured, rules: &Rules<'_>) -> Hidden {
    let Some(counted) = &measured.counted else {
        return Hidden::NotCounted;
    };
    if !counted.tracked {
        return Hidden::Untracked;
    }
    let Some(first) = measured.custom.first().map(|d| d.plan()) else {
        return Hidden::Nothing;
    };
    // The plan each run is held to: its own where it was kept, else the first measured one
    // (the same statement's).
    let mut measured_runs = 0;
    let plans: Vec<(&Explain, Option<usize>)> = counted
        .runs
        .iter()
        .map(|run| match (run.kind, run.warmup) {
            (RunKind::Explain, false) => {
                let i = measured_runs;
                measured_runs += 1;
                let plan = measured.custom.get(i).map_or(first, |d| d.plan());
                (plan, Some(i))
            }
            (RunKind::Generic, _) => (measured.generic.as_ref().map_or(first, |d| d.plan()), None),
            _ => (first, None),
        })
        .collect();
    let mut found: Vec<HiddenRead> = Vec::new();
    for (schema, name) in tables(counted) {
        if is_allowed(&name, Some(&schema), rules.allow_seq_scan) {
            continue;
        }
        let shown_name = qualified_for_display(&name, Some(&schema));
        let (others_rows, others_seq) = fewest_of_others(counted, &schema, &name);
        let size = rules
            .reltuples
            .get(&format!("{schema}.{name}"))
            .copied()
            .unwrap_or(0.0)
            .max(0.0);
        // The worst run: the most rows read beyond the plan; its message, whether the table is
        // large, whether it is a measured run.
        let mut worst: Option<(f64, String, bool, bool)> = None;
        for (run, (plan, index)) in counted.runs.iter().zip(&plans) {
            let own = run
                .tables
                .iter()
                .find(|t| t.schema == schema && t.name == name);
            let (own_rows, own_seq) = own.map_or((0, 0), |t| (t.rows, t.seq_scans));
            let rows = (own_rows + others_rows) as f64;
            let seqs = own_seq + others_seq;
            let plan_shows = shown(plan, &schema, &name);
            let read = plan_shows.uncounted + plan_shows.counted.max(rows);
            let beyond = rows - plan_shows.counted;
            let large = size >= rules.large_rows || (size == 0.0 && read >= rules.large_rows);
            let whole = large && beyond >= 1.0 && read >= (size * WHOLE_RELATION_SHARE).max(1.0);
            let scanned = seqs > 0 && !plan_shows.seq;
            if !whole && !scanned {
                continue;
            }
            let label = run_label(run, *index);
            // What other processes read: rows for the rule on rows, scans for the rule on scans.
            let others_of = |count: u64, what: &str| {
                if count == 0 {
                    return String::new();
                }
                format!(
                    " ({} {what} of them by other processes: the check's parallel workers, or \
                     another session whose counts reached the server meanwhile; the fewest any \
                     run of the check saw)",
                    group(count as f64)
                )
            };
            let text = if whole {
                let size = if size > 0.0 {
                    format!("{shown_name} has {} rows", group(size))
                } else {
                    format!("{shown_name} was never analysed: its size is not known")
                };
                format!(
                    "PostgreSQL counted {} rows of {shown_name} read in {label}{}, and the \
                     plan's nodes account for {}: {} rows were read where the plan does not \
                     show them, and {size} (at least half of a relation of at least \
                     --large-rows {} rows is a whole read, wherever it is read)",
                    group(rows),
                    others_of(others_rows, "rows"),
                    group(plan_shows.counted),
                    group(beyond),
                    group(rules.large_rows)
                )
            } else {
                format!(
                    "PostgreSQL counted {seqs} sequential scan{} of {shown_name} in {label}{}, \
                     and the plan has no Seq Scan of it: a seq scan where the plan does not show \
                     it (a sequential scan is a whole read, whatever the relation's size)",
                    if seqs == 1 { "" } else { "s" },
                    others_of(others_seq, "scans")
                )
            };
            // A measured run is named before a warm-up or a plain run that read as much.
            let measured_run = index.is_some();
            if worst
                .as_ref()
                .is_none_or(|(b, _, _, m)| beyond > *b || (beyond == *b && measured_run && !m))
            {
                worst = Some((beyond, text, large, measured_run));
            }
        }
        if let Some((_, text, large, _)) = worst {
            found.push(HiddenRead {
                large,
                detail: format!("{text}; {}", calls_shown(measured, &name)),
                relation: shown_name,
            });
        }
    }
    if found.is_empty() {
        Hidden::Nothing
    } else {
        Hidden::Found(found)
    }
}

/// Every table a run counted a read of, in the order first met.
fn tables(counted: &Counted) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for t in counted.runs.iter().flat_map(|r| &r.tables) {
        if !out.iter().any(|(s, n)| *s == t.schema && *n == t.name) {
            out.push((t.schema.clone(), t.name.clone()));
        }
    }
    out
}

/// The fewest rows and sequential scans of a table any run counted as read by other processes
/// (0 where they are not counted, or a run counted none).
fn fewest_of_others(counted: &Counted, schema: &str, name: &str) -> (u64, u64) {
    if !counted.others || counted.runs.is_empty() {
        return (0, 0);
    }
    counted
        .runs
        .iter()
        .map(|run| {
            run.tables
                .iter()
                .find(|t| t.schema == schema && t.name == name)
                .map_or((0, 0), |t| (t.other_rows, t.other_seq_scans))
        })
        .fold((u64::MAX, u64::MAX), |(r, s), (tr, ts)| {
            (r.min(tr), s.min(ts))
        })
}

/// Words that take parentheses in a printed expression and are no function call.
const NOT_CALLS: [&str; 17] = [
    "any", "all", "some", "array", "row", "in", "exists", "coalesce", "nullif", "greatest",
    "least", "cast", "values", "filter", "over", "within", "and",
];

/// A plan's function calls, each once, with where the first is: (name, where, whether the
/// expression that calls it names `table`).
fn calls_in(plan: &Value, table: &str) -> Vec<(String, String, bool)> {
    fn label(node: &serde_json::Map<String, Value>) -> String {
        let s = |k: &str| node.get(k).and_then(Value::as_str);
        let mut text = String::new();
        if node.get("Parallel Aware").and_then(Value::as_bool) == Some(true) {
            text.push_str("Parallel ");
        }
        text.push_str(s("Node Type").unwrap_or("?"));
        if let Some(index) = s("Index Name") {
            text.push_str(&format!(" using {index}"));
        }
        if let Some(relation) = s("Relation Name") {
            text.push_str(&format!(" on {relation}"));
        }
        if let Some(function) = s("Function Name") {
            text.push_str(&format!(" on {function}"));
        }
        text
    }
    fn walk(v: &Value, table: &str, out: &mut Vec<(String, String, bool)>) {
        let Some(node) = v.as_object() else { return };
        const KEYS: [&str; 16] = [
            "Output",
            "Filter",
            "Join Filter",
            "Hash Cond",
            "Merge Cond",
            "Index Cond",
            "Recheck Cond",
            "One-Time Filter",
            "TID Cond",
            "Function Call",
            "Table Function Call",
            "Group Key",
            "Sort Key",
            "Order By",
            "Cache Key",
            "Sampling",
        ];
        for key in KEYS {
            let texts: Vec<&str> = match node.get(key) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            for text in texts {
                for (name, own) in calls_of(text) {
                    if NOT_CALLS.contains(&name.as_str()) {
                        continue;
                    }
                    let names_table = names_word(&own, table);
                    match out.iter_mut().find(|(n, _, _)| *n == name) {
                        Some(known) => known.2 |= names_table,
                        None => out.push((name, format!("{key} of {}", label(node)), names_table)),
                    }
                }
            }
        }
        for child in node
            .get("Plans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(child, table, out);
        }
    }
    let mut out = Vec::new();
    for doc in plan.as_array().into_iter().flatten() {
        if let Some(root) = doc.get("Plan") {
            walk(root, table, &mut out);
        }
    }
    out
}

/// Every function call in a printed expression, read with the one SQL lexer: its name (as
/// PostgreSQL folds it) and its own text, from its name to its closing parenthesis, with the
/// calls nested in it left out (so that `length(query_to_xml('… FROM posts'))` names posts in
/// `query_to_xml`'s text only).
fn calls_of(text: &str) -> Vec<(String, String)> {
    let tokens = crate::sql::significant(text, crate::sql::Dialect::default());
    let punct = |i: usize, p: &str| {
        tokens
            .get(i)
            .is_some_and(|t| t.kind == crate::sql::TokenKind::Punct && t.text == p)
    };
    let mut spans: Vec<(String, usize, usize)> = Vec::new();
    for i in 0..tokens.len() {
        let Some(name) = tokens[i].identifier().filter(|_| punct(i + 1, "(")) else {
            continue;
        };
        let mut depth = 0usize;
        let mut end = text.len();
        for (j, t) in tokens.iter().enumerate().skip(i + 1) {
            if punct(j, "(") {
                depth += 1;
            } else if punct(j, ")") {
                depth -= 1;
                if depth == 0 {
                    end = t.start + 1;
                    break;
                }
            }
        }
        spans.push((name, tokens[i].start, end));
    }
    spans
        .iter()
        .map(|(name, start, end)| {
            let mut own = String::new();
            let mut at = *start;
            for (_, s, e) in spans.iter().filter(|(_, s, e)| s > start && e <= end) {
                if *s >= at {
                    own.push_str(&text[at..*s]);
                    at = *e;
                }
            }
            own.push_str(&text[at.min(*end)..*end]);
            (name.clone(), own)
        })
        .collect()
}

/// Whether `text` has `word` as a word of its own (case aside), as in `FROM posts q`.
fn names_word(text: &str, word: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let word = word.to_ascii_lowercase();
    let is_part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    lower.match_indices(&word).any(|(i, _)| {
        !is_part(lower[..i].chars().next_back()) && !is_part(lower[i + word.len()..].chars().next())
    })
}

/// The calls the first measured plan shows that could have read `table`, those whose text names
/// it first; or that it shows none.
fn calls_shown(measured: &Measured, table: &str) -> String {
    let doc = measured.custom.first().and_then(|d| d.json().ok());
    let mut calls = doc.map(|d| calls_in(&d, table)).unwrap_or_default();
    if calls.is_empty() {
        return "the plan shows no function call: the read is in a function that an operator, a \
                cast or a type calls, or was made while planning (a function folded into a \
                constant)"
            .to_string();
    }
    calls.sort_by_key(|(_, _, names)| !names);
    const SHOWN: usize = 5;
    let mut listed: Vec<String> = calls
        .iter()
        .take(SHOWN)
        .map(|(name, place, names)| {
            let names = if *names {
                format!(", whose text names {table}")
            } else {
                String::new()
            };
            format!("{name}() (in the {place}{names})")
        })
        .collect();
    if calls.len() > SHOWN {
        listed.push(format!("{} more", calls.len() - SHOWN));
    }
    let named = if calls.iter().any(|(_, _, names)| *names) {
        String::new()
    } else {
        format!("; no call in the plan names {table}: a function one of them calls reads it")
    };
    format!(
        "the calls the plan shows, any of which could have read it: {}{named}",
        listed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::measure::RunKind::{Explain, Generic, Plain};
    use crate::measure::{Counted, Outcome};
    use crate::verdict::Verdict;
    use crate::verdict::test_support::*;

    /// The thread page through the required index (20 rows), its Filter calling `call`.
    fn page_calling(call: &str) -> Value {
        let mut scan = index_scan("posts_thread_visible_idx", "posts");
        scan["Filter"] = json!(call);
        scan["Output"] = json!(["p.id"]);
        json!([{ "Plan": { "Node Type": "Limit", "Output": ["p.id"], "Plans": [scan] } }])
    }

    const QUERY_TO_XML: &str = "(length((query_to_xml(('SELECT count(*) FROM posts q WHERE q.id \
        <> '::text || (p.id)::text), true, false, ''::text))::text) > 0)";

    /// The runs of a check with one warm-up and one measured EXPLAIN run and as many plain runs,
    /// each counting `tables`.
    fn every_run(tables: &[(&str, u64, u64, u64, u64)]) -> Vec<crate::measure::RunReads> {
        vec![
            run_reads(Explain, true, tables),
            run_reads(Explain, false, tables),
            run_reads(Plain, true, tables),
            run_reads(Plain, false, tables),
        ]
    }

    #[test]
    fn a_call_that_reads_most_of_a_large_table_is_a_whole_read_and_is_named() {
        // Regression: query_to_xml counting posts for each of the page's 20 rows passed.
        let m = counted_check(
            page_calling(QUERY_TO_XML),
            Some(every_run(&[("posts", 2_343_860, 0, 0, 0)])),
            &[],
        );
        let r = check_fails(&m);
        assert_eq!(r.verdict, Verdict::SeqScan, "{}", r.message);
        assert_eq!(r.seq_scans, vec!["posts".to_string()]);
        assert_eq!(r.large_reads, vec!["posts".to_string()]);
        assert_eq!(r.read_in_calls, vec!["posts".to_string()]);
        for part in [
            "posts_thread_visible_idx is used, but a function call in the plan reads a whole \
             relation",
            "PostgreSQL counted 2,343,860 rows of posts read in measured run 1, and the plan's \
             nodes account for 20: 2,343,840 rows were read where the plan does not show them, \
             and posts has 117,192 rows",
            // The call whose own text names posts, first; `length` wraps it and names nothing.
            "the calls the plan shows, any of which could have read it: query_to_xml() (in the \
             Filter of Index Scan using posts_thread_visible_idx on posts, whose text names \
             posts), length() (in the Filter",
            "allow_seq_scan = [\"posts\"]",
        ] {
            assert!(r.message.contains(part), "no {part:?} in: {}", r.message);
        }
    }

    #[test]
    fn a_limit_walk_inside_a_call_that_stops_early_passes() {
        // 20 calls, each reading one row of posts_pkey, and the page's own 20 rows.
        let m = counted_check(
            page_calling("(app_first_post(p.id) IS NOT NULL)"),
            Some(every_run(&[("posts", 40, 0, 0, 0)])),
            &[],
        );
        let r = check_passes(&m);
        assert!(r.read_in_calls.is_empty());
    }

    #[test]
    fn what_the_plan_reads_and_what_calls_read_count_together() {
        // The plan reads 40,000 rows of posts itself (under half: the plan's rule passes it);
        // a call reads 20,000 more: 60,000 of 117,192 is a whole read.
        let mut scan = index_scan("posts_thread_visible_idx", "posts");
        scan["Actual Rows"] = json!(40_000);
        scan["Filter"] = json!("(app_some_posts() > 0)");
        let doc = json!([{ "Plan": scan }]);
        let r = check_fails(&counted_check(
            doc.clone(),
            Some(every_run(&[("posts", 60_000, 0, 0, 0)])),
            &[],
        ));
        assert!(
            r.message
                .contains("the plan's nodes account for 40,000: 20,000 rows were read"),
            "{}",
            r.message
        );
        // The counts agree with the plan: nothing read where the plan does not show it.
        check_passes(&counted_check(
            doc,
            Some(every_run(&[("posts", 40_012, 0, 0, 0)])),
            &[],
        ));
    }

    #[test]
    fn a_sequential_scan_inside_a_call_is_a_whole_read_whatever_the_table_s_size() {
        // A function reads the 30 forums by a seq scan for each row: the plan shows no scan of
        // forums at all.
        let doc = page_calling("(app_forum_name(p.forum_id) IS NOT NULL)");
        let runs = every_run(&[("posts", 20, 0, 0, 0), ("forums", 600, 20, 0, 0)]);
        let r = check_fails(&counted_check(doc.clone(), Some(runs.clone()), &[]));
        assert_eq!(r.verdict, Verdict::SeqScan, "{}", r.message);
        assert_eq!(r.seq_scans, vec!["forums".to_string()]);
        assert!(r.large_reads.is_empty(), "{:?}", r.large_reads);
        assert!(
            r.message.contains(
                "PostgreSQL counted 20 sequential scans of forums in measured run 1, and the \
                 plan has no Seq Scan of it"
            ),
            "{}",
            r.message
        );
        assert!(
            r.message.contains(
                "app_forum_name() (in the Filter of Index Scan using posts_thread_visible_idx \
                 on posts); no call in the plan names forums"
            ),
            "{}",
            r.message
        );
        // A relation allowed a seq scan stays allowed, by plain or qualified name.
        check_passes(&counted_check(doc.clone(), Some(runs.clone()), &["forums"]));
        check_passes(&counted_check(doc, Some(runs), &["public.forums"]));
    }

    #[test]
    fn what_other_processes_read_counts_as_the_fewest_any_run_saw() {
        // Parallel workers counted posts in every run (the session itself read the page only).
        let doc = page_calling("(app_worker_count(p.id) > 0)");
        let workers = every_run(&[("posts", 20, 0, 2_343_840, 0)]);
        let r = check_fails(&counted_check(doc.clone(), Some(workers), &[]));
        assert!(
            r.message
                .contains("(2,343,840 rows of them by other processes: the check's parallel"),
            "{}",
            r.message
        );
        // Another session's counts that reached the server during one run only are not the
        // check's.
        let mut runs = every_run(&[("posts", 20, 0, 0, 0)]);
        runs[1] = run_reads(Explain, false, &[("posts", 20, 0, 500_000, 3)]);
        check_passes(&counted_check(doc, Some(runs), &[]));
    }

    #[test]
    fn the_workers_of_a_parallel_plan_are_not_a_read_the_plan_does_not_show() {
        // A Parallel Index Scan read 45,000 rows in three participants: the session counted its
        // own 15,000, the server its two workers' 30,000.
        let doc = json!([{ "Plan": { "Node Type": "Gather", "Plans": [
            { "Node Type": "Index Scan", "Parallel Aware": true,
              "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
              "Schema": "public", "Index Cond": "(thread_id < 900)", "Actual Rows": 15_000,
              "Actual Loops": 3 }]}}]);
        check_passes(&counted_check(
            doc,
            Some(every_run(&[("posts", 15_000, 0, 30_000, 0)])),
            &[],
        ));
    }

    #[test]
    fn a_read_in_one_run_only_is_a_whole_read() {
        // A function that reads posts whole in the warm-up run only (it can tell, from the
        // counters that survive the rollback between runs).
        let doc = page_calling("(app_once() > 0)");
        let mut runs = every_run(&[("posts", 20, 0, 0, 0)]);
        runs[0] = run_reads(Explain, true, &[("posts", 117_212, 1, 0, 0)]);
        let r = check_fails(&counted_check(doc.clone(), Some(runs.clone()), &[]));
        assert!(r.message.contains("read in a warm-up run"), "{}", r.message);
        // The generic plan's run is held to the generic plan.
        runs[0] = run_reads(Explain, true, &[("posts", 20, 0, 0, 0)]);
        runs.push(run_reads(Generic, false, &[("posts", 117_212, 1, 0, 0)]));
        let r = check_fails(&counted_check(doc, Some(runs), &[]));
        assert!(
            r.message.contains("the generic plan's run"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_tid_scan_the_counters_miss_is_added_to_what_they_count() {
        // The plan reads 40,000 rows of posts by their ctids (counted by no counter); a call
        // reads 20,000 more through an index.
        let doc = json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            index_scan("posts_thread_visible_idx", "posts"),
            { "Node Type": "Tid Scan", "Relation Name": "posts", "Schema": "public",
              "TID Cond": "(ctid = ANY ($0))", "Actual Rows": 40_000, "Actual Loops": 1,
              "Filter": "(app_check(id) > 0)" }]}}]);
        check_fails(&counted_check(
            doc,
            Some(every_run(&[("posts", 20_020, 0, 0, 0)])),
            &[],
        ));
    }

    #[test]
    fn a_plan_with_no_call_says_so() {
        let doc = json!([{ "Plan": index_scan("posts_thread_visible_idx", "posts") }]);
        let r = check_fails(&counted_check(
            doc,
            Some(every_run(&[("posts", 117_212, 0, 0, 0)])),
            &[],
        ));
        assert!(
            r.message
                .contains("the plan shows no function call: the read is in a function"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_check_that_requires_no_index_is_held_to_the_counts_too() {
        let doc = page_calling("(app_post_count(p.id) > 0)");
        let mut m = counted_check(doc, Some(every_run(&[("posts", 2_343_860, 0, 0, 0)])), &[]);
        m.requires.index = None;
        if let Outcome::Measured(measured) = &mut m.outcome {
            measured.index = crate::measure::IndexLookup::NotRequired;
        }
        let r = check_fails(&m);
        assert_eq!(r.verdict, Verdict::SeqScan, "{}", r.message);
        assert!(
            r.message.starts_with(
                "no index is required (index = false), but a function call in the plan reads a \
                 whole relation"
            ),
            "{}",
            r.message
        );
    }

    #[test]
    fn with_track_counts_off_a_pass_is_not_settled() {
        let doc = json!([{ "Plan": index_scan("posts_thread_visible_idx", "posts") }]);
        let mut m = counted_check(doc, Some(vec![]), &[]);
        if let Outcome::Measured(measured) = &mut m.outcome {
            measured.counted = Some(Counted {
                tracked: false,
                others: false,
                runs: vec![],
            });
        }
        let r = check_fails(&m);
        assert_eq!(r.verdict, Verdict::Error, "{}", r.message);
        assert!(r.message.contains("track_counts is off"), "{}", r.message);
    }

    #[test]
    fn a_measurement_saved_before_reads_were_counted_is_judged_by_its_plans() {
        // What it holds is all `judge` can go by: the verdict it had when saved.
        let doc = json!([{ "Plan": index_scan("posts_thread_visible_idx", "posts") }]);
        check_passes(&counted_check(doc.clone(), None, &[]));
        let mut whole = index_scan("posts_thread_visible_idx", "posts");
        whole["Rows Removed by Filter"] = json!(100_000);
        let r = check_fails(&counted_check(json!([{ "Plan": whole }]), None, &[]));
        assert_eq!(r.verdict, Verdict::SeqScan, "{}", r.message);
        assert!(r.read_in_calls.is_empty());
    }

    #[test]
    fn a_whole_read_the_plan_shows_keeps_its_message_and_the_call_s_read_is_added() {
        // The plan itself seq scans members (not allowed), and a call reads posts whole.
        let doc = json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            { "Node Type": "Index Scan", "Index Name": "posts_thread_visible_idx",
              "Relation Name": "posts", "Schema": "public", "Index Cond": "(thread_id = 1)",
              "Filter": "(app_count() > 0)", "Actual Rows": 20, "Actual Loops": 1 },
            { "Node Type": "Seq Scan", "Relation Name": "members", "Schema": "public",
              "Actual Rows": 1, "Actual Loops": 20, "Rows Removed by Filter": 2_000 }]}}]);
        let r = check_fails(&counted_check(
            doc,
            Some(every_run(&[
                ("posts", 117_212, 1, 0, 0),
                ("members", 40_000, 20, 0, 0),
            ])),
            &[],
        ));
        assert_eq!(r.verdict, Verdict::SeqScan, "{}", r.message);
        assert_eq!(
            r.seq_scans,
            vec!["members".to_string(), "posts".to_string()]
        );
        assert_eq!(r.read_in_calls, vec!["posts".to_string()]);
        assert!(
            r.message
                .contains("Beside that, a function call in the plan reads a whole relation"),
            "{}",
            r.message
        );
    }
}
