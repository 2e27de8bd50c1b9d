//! Judgements across the checks of a run, once each check is judged: budgets that compare
//! checks, and which of the lint's findings the report keeps.

use super::{CheckResult, Verdict, judge_budgets};
use crate::lint;
use crate::model::{Change, IndexChange};

/// Names, in each check that does not pass after a migration, the migration's statement that
/// dropped, renamed or redefined the index it requires (or one it accepts): a dropped index is
/// the migration's doing, not a typo in the expectation, so a `missing-index` says so instead of
/// suggesting names.
fn blame_migration(checks: &mut [CheckResult], changes: &[IndexChange]) {
    for c in checks.iter_mut().filter(|c| !c.verdict.is_pass()) {
        let Some(change) = changes
            .iter()
            .find(|ch| ch.index == c.required_index || c.accepted.contains(&ch.index))
        else {
            continue;
        };
        let what = match &change.change {
            Change::Dropped => "dropped it".to_string(),
            Change::Renamed { to } => format!("renamed it to {to}"),
            Change::Redefined { definition } => format!("redefined it: {definition}"),
        };
        let by = format!(
            "{}:{} {what} (`{}`)",
            change.path, change.line, change.statement
        );
        if c.verdict == Verdict::MissingIndex && change.index == c.required_index {
            // "index X does not exist in the database; did you mean …?; the read path uses now: …"
            let now = c
                .message
                .find("; the read path uses now")
                .map_or("", |i| &c.message[i..]);
            c.message = format!(
                "index {} does not exist after the migration: {by}{now}",
                change.index
            );
        } else {
            c.message = format!(
                "{}. The migration changed {}: {by}",
                c.message.trim_end_matches('.'),
                change.index
            );
        }
        c.changed_by = Some(change.clone());
    }
}

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
    index_changes: &[IndexChange],
) -> Vec<lint::Finding> {
    judge_budgets(checks);
    blame_migration(checks, index_changes);
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
