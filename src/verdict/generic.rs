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

/// A generic plan that cannot use the index, beside a custom plan that failed at this data
/// (not chosen, or a whole read): `generic-plan`, for the generic plan's failure does not depend
/// on the data (no parameter value reaches it) and the custom plan's does. On a small CI
/// database the custom plan is a seq scan whatever the SQL says; the generic plan's verdict is
/// the same there as on the full database. The relations either plan reads whole and large
/// stay large reads.
pub fn not_usable_whatever_the_custom_plan(
    custom: PlanVerdict,
    generic: PlanVerdict,
) -> PlanVerdict {
    let mut large_reads = generic.large_reads;
    for r in custom.large_reads {
        if !large_reads.contains(&r) {
            large_reads.push(r);
        }
    }
    PlanVerdict {
        verdict: Verdict::GenericPlan,
        message: format!(
            "the generic plan (what a prepared statement may switch to after its fifth \
             execution) cannot use it, whatever the data: {}. The custom plan, at this data: {}: \
             {}",
            generic.message.trim_end_matches('.'),
            custom.verdict,
            custom.message
        ),
        used: generic.used,
        seq_scans: generic.seq_scans,
        large_reads,
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
