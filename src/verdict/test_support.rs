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
        plan_changed: false,
        plan_diff: vec![],
        strict_plans: false,
        sort_keys: vec![],
        elapsed_ms: None,
        notes: vec![],
        plans: vec![],
        settings: vec![],
        session: vec![],
        reads_past_policies: Vec::new(),
        changed_by: None,
    }
}
