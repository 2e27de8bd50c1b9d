//! The generic plan's verdict beside the custom plan's.

use super::Verdict;
use super::plan::PlanVerdict;

/// Combines the custom plan's verdict with the generic plan's: a read path with parameters runs
/// as a prepared statement, which switches to the generic plan after its fifth execution when
/// that plan does not look dearer. A generic plan knows no parameter values, so a partial index
/// whose predicate needs a constant (`visibility = 'visible'`) cannot be proved usable from
/// `visibility = $2`: the custom plan passes and the generic one falls to a seq scan.
/// `custom_passes` says what the passing custom plan does: `uses posts_visible_idx`.
pub fn judge_generic(
    custom: PlanVerdict,
    generic: PlanVerdict,
    custom_passes: &str,
) -> PlanVerdict {
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
            "the custom plan {custom_passes}, but the generic plan (what a prepared statement may \
             switch to after its fifth execution) is {}: {}",
            generic.verdict, generic.message
        ),
        used: generic.used,
        seq_scans: generic.seq_scans,
        large_reads: generic.large_reads,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::verdict::Verdict;
    use crate::verdict::test_support::*;

    #[test]
    fn generic_plan_failing_after_custom_pass_is_generic_plan() {
        let pass = judge(
            json!([{ "Plan": index_scan("posts_thread_visible_idx", "posts") }]),
            &[],
            &[],
        );
        let seq = judge(
            json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
                "Schema": "public" }}]),
            &[],
            &[],
        );
        let v = judge_generic(pass.clone(), seq.clone(), "uses posts_thread_visible_idx");
        assert_eq!(v.verdict, Verdict::GenericPlan);
        assert_eq!(v.seq_scans, vec!["posts".to_string()]);
        // The custom plan's failure wins over the generic plan's.
        let v = judge_generic(seq.clone(), pass.clone(), "uses posts_thread_visible_idx");
        assert_eq!(v.verdict, Verdict::NotChosen);
        let v = judge_generic(pass.clone(), pass, "uses posts_thread_visible_idx");
        assert_eq!(v.verdict, Verdict::Pass);
    }
}
