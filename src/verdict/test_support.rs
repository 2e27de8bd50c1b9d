//! What the rules' tests share: the required index they judge against, plans judged by the
//! plan rules with [`passes`] and [`fails`] (each fails the test loudly when the verdict is the
//! other), re-plans, and a judged check for the rules across checks.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::plan::{PlanVerdict, Rules, judge_plan};
use super::*;

pub(crate) fn required() -> RequiredIndex {
    RequiredIndex {
        schema: "public".into(),
        name: "posts_thread_visible_idx".into(),
        table: "posts".into(),
        predicate: Some("(visibility = 'visible'::text)".into()),
        keys: vec!["thread_id".into()],
        orders: vec![String::new()],
        siblings: vec![],
        columns: vec![],
        partitions: vec![],
    }
}

pub(crate) fn judge(doc: Value, allow: &[&str], tuples: &[(&str, f64)]) -> PlanVerdict {
    let plan = Explain::from_json(&doc).unwrap();
    let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
    let reltuples: HashMap<String, f64> = tuples.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let index = required();
    judge_plan(
        &plan,
        &Rules {
            index: &index,
            allow_seq_scan: &allow,
            reltuples: &reltuples,
            large_rows: Judging::default().large_rows,
        },
    )
}

/// Fails loudly unless the plan passes.
pub(crate) fn passes(doc: Value, allow: &[&str], tuples: &[(&str, f64)]) {
    let v = judge(doc, allow, tuples);
    assert_eq!(v.verdict, Verdict::Pass, "expected a pass, got {v:?}");
}

/// Fails loudly when the plan passes; returns the verdict for the caller to assert on.
pub(crate) fn fails(doc: Value, allow: &[&str], tuples: &[(&str, f64)]) -> PlanVerdict {
    let v = judge(doc, allow, tuples);
    assert_ne!(
        v.verdict,
        Verdict::Pass,
        "expected a failure, got a pass: {v:?}"
    );
    v
}

pub(crate) fn index_scan(index: &str, relation: &str) -> Value {
    json!({ "Node Type": "Index Scan", "Index Name": index, "Relation Name": relation,
            "Schema": "public", "Index Cond": "(thread_id = 1)",
            "Actual Rows": 20, "Actual Loops": 1 })
}

pub(crate) fn probe(doc: Value) -> ProbePlan {
    ProbePlan {
        disabled: vec!["enable_seqscan".into()],
        dropped: vec![],
        plan: Explain::from_json(&doc).unwrap(),
    }
}

pub(crate) fn judge_with_probes(doc: Value, probes: Vec<ProbePlan>) -> PlanVerdict {
    let plan = Explain::from_json(&doc).unwrap();
    let index = required();
    let reltuples = HashMap::new();
    let rules = Rules {
        index: &index,
        allow_seq_scan: &[],
        reltuples: &reltuples,
        large_rows: Judging::default().large_rows,
    };
    judge_usability(
        judge_plan(&plan, &rules),
        &plan,
        &probes,
        Scratch::Absent,
        &rules,
        &[],
    )
    .verdict
}

pub(crate) fn seq_scan_plan(cost: f64) -> Value {
    json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
        "Schema": "public", "Total Cost": cost }}])
}

pub(crate) fn measured(read_path: &str, verdict: Verdict, warm: f64, buffers: f64) -> CheckResult {
    CheckResult {
        read_path: read_path.into(),
        scope: "member".into(),
        required_index: "i".into(),
        accepted: vec![],
        verdict,
        used: vec![],
        instead: vec![],
        seq_scans: vec![],
        message: "ok".into(),
        warm_ms: Spread::of(&[warm]),
        discarded: None,
        client_ms: None,
        planning_ms: None,
        shared_buffers: Some(buffers),
        connection_lost: false,
        at: None,
        budget: Budget::default(),
        budget_used: None,
        usable: None,
        settled_by: None,
        unsettled: None,
        large_reads: vec![],
        small_reads_only: false,
        read_in_calls: vec![],
        plan_changed: false,
        plan_diff: vec![],
        strict_plans: false,
        production: None,
        here: None,
        sort_keys: vec![],
        elapsed_ms: None,
        notes: vec![],
        plans: vec![],
        settings: vec![],
        session: vec![],
        reads_past_policies: Vec::new(),
        changed_by: None,
        custom_verdict: None,
        unanalysed: Vec::new(),
        at_guesses: None,
    }
}

/// A check of read path `p` in scope `member` requiring [`required`], measured: `doc` its one
/// measured EXPLAIN run, PostgreSQL's counts of every run `runs` (none: measured before reads
/// were counted), `allow` its `allow_seq_scan`; posts of 117,192 rows and forums of 30, both
/// analysed.
pub(crate) fn counted_check(
    doc: Value,
    runs: Option<Vec<crate::measure::RunReads>>,
    allow: &[&str],
) -> crate::measure::Measurement {
    use crate::measure::{
        Counted, Document, IndexFacts, IndexLookup, Measurement, Outcome, RelationFacts,
    };
    let index = required();
    let info = IndexInfo {
        schema: index.schema.clone(),
        name: index.name.clone(),
        table: index.table.clone(),
        method: "btree".into(),
        keys: index.keys.clone(),
        orders: index.orders.clone(),
        predicate: index.predicate.clone(),
        valid: true,
        ready: true,
        definition: String::new(),
    };
    let lookup = IndexLookup::Found(Box::new(IndexFacts {
        info,
        partitions: vec![],
        siblings: vec![],
        columns: vec![],
    }));
    let mut m = Measurement::of_plans(lookup, vec![Document::new(doc).unwrap()], None, 0);
    m.requires.index = Some(index.name.clone());
    m.requires.allow_seq_scan = allow.iter().map(|a| a.to_string()).collect();
    if let Outcome::Measured(measured) = &mut m.outcome {
        let table = |name: &str, reltuples: f64| RelationFacts {
            schema: "public".into(),
            name: name.into(),
            reltuples,
            has_statistics: true,
            bytes: 8192,
            modified_since_analyze: Some(0),
        };
        measured.relations = vec![table("posts", 117_192.0), table("forums", 30.0)];
        measured.counted = runs.map(|runs| Counted {
            tracked: true,
            others: true,
            runs,
        });
    }
    m
}

/// One run's counts: each table as (name, rows the session read, its sequential scans, rows
/// other processes read, their sequential scans), in schema `public`.
pub(crate) fn run_reads(
    kind: crate::measure::RunKind,
    warmup: bool,
    tables: &[(&str, u64, u64, u64, u64)],
) -> crate::measure::RunReads {
    crate::measure::RunReads {
        kind,
        warmup,
        tables: tables
            .iter()
            .map(|(name, rows, seq_scans, other_rows, other_seq_scans)| {
                crate::measure::TableReads {
                    schema: "public".into(),
                    name: (*name).into(),
                    seq_scans: *seq_scans,
                    rows: *rows,
                    other_seq_scans: *other_seq_scans,
                    other_rows: *other_rows,
                }
            })
            .collect(),
    }
}

/// Judges a measurement as `check` does, failing loudly unless it passes.
pub(crate) fn check_passes(m: &crate::measure::Measurement) -> CheckResult {
    let r = super::judge(m, &Judging::default());
    assert_eq!(
        r.verdict,
        Verdict::Pass,
        "expected a pass, got: {}",
        r.message
    );
    r
}

/// Judges a measurement as `check` does, failing loudly when it passes.
pub(crate) fn check_fails(m: &crate::measure::Measurement) -> CheckResult {
    let r = super::judge(m, &Judging::default());
    assert_ne!(
        r.verdict,
        Verdict::Pass,
        "expected a failure, got a pass: {r:?}"
    );
    r
}
