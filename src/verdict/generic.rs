//! The generic plan's verdict beside the custom plan's.

use super::Verdict;
use super::plan::PlanVerdict;

/// Combines the custom plan's verdict with the generic plan's: a read path with parameters runs
/// as a prepared statement, which switches to the generic plan after its fifth execution when
/// that plan does not look dearer. A generic plan knows no parameter values, so a partial index
/// whose predicate needs a constant (`visibility = 'visible'`) cannot be proved usable from
/// `visibility = $2`: the custom plan passes and the generic one falls to a seq scan.
pub fn judge_generic(custom: PlanVerdict, generic: PlanVerdict, index: &str) -> PlanVerdict {
    if !custom.verdict.is_pass() {
        return PlanVerdict {
            message: format!("custom plan: {}", custom.message),
            ..custom
        };
    }
    if generic.verdict.is_pass() {
        return PlanVerdict {
            message: format!("{} (custom and generic plans)", custom.message),
            ..custom
        };
    }
    PlanVerdict {
        verdict: Verdict::GenericPlan,
        message: format!(
            "the custom plan uses {index}, but the generic plan (what a prepared statement may \
             switch to after its fifth execution) is {}: {}",
            generic.verdict, generic.message
        ),
        used: generic.used,
        seq_scans: generic.seq_scans,
        large_reads: generic.large_reads,
    }
}
