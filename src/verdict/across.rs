//! Judgements across the checks of a run, once each check is judged: budgets that compare
//! checks, and which of the lint's findings the report keeps.

use super::{CheckResult, Verdict, judge_budgets};
use crate::lint;

/// The lint findings a run reports before its checks: a missing index is the checks'
/// `missing-index`, and a read path the lint could not read for a lock is the checks' timeout
/// `error`, so neither is said twice.
pub fn lint_of_run(findings: Vec<lint::Finding>) -> Vec<lint::Finding> {
    findings
        .into_iter()
        .filter(|f| !matches!(f.kind, lint::Kind::Missing | lint::Kind::Unchecked))
        .collect()
}

/// Judges what only the whole run shows: the budgets across checks (before and after a
/// migration alike), the twins' key direction from the read paths' plans, and an invalid index
/// a check requires said once, as that check's `invalid-index`. Returns the findings to report.
pub fn across_checks(
    checks: &mut [CheckResult],
    before: Option<&mut [CheckResult]>,
    findings: Vec<lint::Finding>,
) -> Vec<lint::Finding> {
    judge_budgets(checks);
    if let Some(before) = before {
        judge_budgets(before);
    }
    let findings = lint::settle_directions(findings, &lint::plan_facts(checks));
    findings
        .into_iter()
        .filter(|f| {
            f.kind != lint::Kind::Invalid
                || !checks
                    .iter()
                    .any(|c| c.verdict == Verdict::InvalidIndex && c.required_index == f.index)
        })
        .collect()
}
