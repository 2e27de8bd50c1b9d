//! Budgets: warm time, shared buffers, and buffers relative to another read path. Judged once
//! every check has run, since a relative budget needs its comparison's figures.

use std::collections::HashMap;

use serde::Serialize;

use super::{CheckResult, Verdict, group};

/// How much of each budget a check used: 1.0 is all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BudgetUsed {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffers: Option<f64>,
    /// This check's buffers over the other read path's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// Judges every check's budgets once all have run (a relative budget needs its comparison's
/// figures). Only a check that passed can go over budget: a lost index is the bigger news. A
/// comparison that did not run, or ran without figures, makes the relative budget an `error`:
/// a budget that cannot be measured is never a pass.
pub fn judge_budgets(checks: &mut [CheckResult]) {
    let buffers_of: HashMap<(String, String), Option<f64>> = checks
        .iter()
        .map(|c| ((c.read_path.clone(), c.scope.clone()), c.shared_buffers))
        .collect();
    let lookup = |read_path: &str, scope: &str| {
        buffers_of
            .get(&(read_path.to_string(), scope.to_string()))
            .copied()
            .flatten()
    };
    for c in checks.iter_mut() {
        judge_budget(c, &lookup);
    }
}

/// Judges one check's budgets, with `buffers_of(read_path, scope)` the shared buffers of the
/// check a relative budget compares with (None: not run, or no figure).
// Long because each budget kind (warm time, buffers, relative) is measured and compared in turn, then one verdict is made of all three.
pub fn judge_budget(c: &mut CheckResult, buffers_of: &dyn Fn(&str, &str) -> Option<f64>) {
    {
        if c.budget.is_empty() {
            return;
        }
        let mut used = BudgetUsed::default();
        let mut over: Vec<String> = Vec::new();
        let mut unmeasured: Vec<String> = Vec::new();
        if let Some(limit) = c.budget.warm_ms {
            match c.warm_ms {
                // A budget is for the slow runs, as the seed's p95 budgets are: of 5 runs, the
                // slowest.
                Some(w) => {
                    used.warm_ms = Some(w.p95 / limit);
                    if w.p95 > limit {
                        over.push(format!(
                            "warm p95 {:.2} ms is over the budget of {limit} ms ({:.0}%)",
                            w.p95,
                            100.0 * w.p95 / limit
                        ));
                    }
                }
                None => unmeasured.push("warm time".into()),
            }
        }
        if let Some(limit) = c.budget.buffers {
            match c.shared_buffers {
                Some(b) => {
                    used.buffers = Some(b / limit);
                    if b > limit {
                        over.push(format!(
                            "shared buffers {} are over the budget of {} ({:.0}%)",
                            group(b),
                            group(limit),
                            100.0 * b / limit
                        ));
                    }
                }
                None => unmeasured.push("shared buffers".into()),
            }
        }
        if let Some(rel) = &c.budget.relative {
            let scope = rel.scope.clone().unwrap_or_else(|| c.scope.clone());
            let theirs = buffers_of(&rel.to, &scope);
            match (c.shared_buffers, theirs) {
                (Some(mine), Some(theirs)) if theirs > 0.0 => {
                    let ratio = mine / theirs;
                    used.ratio = Some(ratio);
                    if ratio > rel.max_ratio {
                        over.push(format!(
                            "shared buffers {} are {ratio:.1}× those of {} [{}] ({}), over the \
                             limit of {}×",
                            group(mine),
                            rel.to,
                            scope,
                            group(theirs),
                            rel.max_ratio
                        ));
                    }
                }
                _ => unmeasured.push(format!("the ratio to {} [{scope}]", rel.to)),
            }
        }
        c.budget_used = Some(used);
        // A changed plan is a warning: a budget it broke is still the bigger news.
        if !c.verdict.is_pass() && c.verdict != Verdict::PlanChanged {
            return;
        }
        if !unmeasured.is_empty() {
            c.verdict = Verdict::Error;
            c.message = format!(
                "the budget could not be judged: no figure for {}",
                unmeasured.join(", ")
            );
        } else if !over.is_empty() {
            c.verdict = Verdict::OverBudget;
            c.message = format!("{}; {}", over.join("; "), c.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Relative;
    use crate::verdict::Verdict;
    use crate::verdict::test_support::*;

    #[test]
    fn budgets_pass_under_and_fail_over_each_limit() {
        let mut first = measured("first", Verdict::Pass, 2.0, 100.0);
        first.budget.warm_ms = Some(50.0);
        first.budget.buffers = Some(400.0);
        let mut deep = measured("deep", Verdict::Pass, 3.0, 250.0);
        deep.budget.relative = Some(Relative {
            scope: None,
            to: "first".into(),
            max_ratio: 2.0,
        });
        let mut slow = measured("slow", Verdict::Pass, 51.0, 10.0);
        slow.budget.warm_ms = Some(50.0);
        let mut checks = vec![first, deep, slow];
        judge_budgets(&mut checks);
        assert_eq!(checks[0].verdict, Verdict::Pass);
        assert_eq!(checks[0].budget_used.as_ref().unwrap().buffers, Some(0.25));
        assert_eq!(
            checks[1].verdict,
            Verdict::OverBudget,
            "{}",
            checks[1].message
        );
        assert!(checks[1].message.contains("2.5×"), "{}", checks[1].message);
        assert_eq!(checks[2].verdict, Verdict::OverBudget);
        assert!(checks[2].message.contains("102%"), "{}", checks[2].message);
    }

    #[test]
    fn a_warm_budget_is_judged_on_the_slow_runs_not_the_median() {
        // Four runs of 1 ms and one of 10: the median is under a 5 ms budget, the p95 over it.
        let mut c = measured("spiky", Verdict::Pass, 1.0, 10.0);
        c.warm_ms = crate::verdict::Spread::of(&[1.0, 1.0, 10.0, 1.0, 1.0]);
        c.budget.warm_ms = Some(5.0);
        let mut checks = vec![c];
        judge_budgets(&mut checks);
        assert_eq!(
            checks[0].verdict,
            Verdict::OverBudget,
            "{}",
            checks[0].message
        );
        assert!(
            checks[0].message.contains("warm p95 10.00 ms"),
            "{}",
            checks[0].message
        );
        assert_eq!(checks[0].budget_used.as_ref().unwrap().warm_ms, Some(2.0));
    }

    #[test]
    fn a_budget_that_cannot_be_measured_is_an_error_not_a_pass() {
        let mut deep = measured("deep", Verdict::Pass, 3.0, 250.0);
        deep.budget.relative = Some(Relative {
            scope: None,
            to: "first".into(),
            max_ratio: 2.0,
        });
        let mut first = measured("first", Verdict::Error, 0.0, 0.0);
        first.shared_buffers = None;
        let mut checks = vec![deep, first];
        judge_budgets(&mut checks);
        assert_eq!(checks[0].verdict, Verdict::Error, "{}", checks[0].message);
    }

    #[test]
    fn a_failing_index_verdict_is_not_hidden_by_a_budget() {
        let mut c = measured("x", Verdict::NotUsable, 500.0, 1e6);
        c.budget.buffers = Some(1.0);
        let mut checks = vec![c];
        judge_budgets(&mut checks);
        assert_eq!(checks[0].verdict, Verdict::NotUsable);
    }
}
