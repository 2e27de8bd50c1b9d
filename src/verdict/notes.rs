//! Notes on what the planner knew: a relation never analysed, or changed a lot since, makes the
//! planner's choice mean little. Not verdicts: said beside them.

use super::group;
use super::plan::{describe_scan, is_lookup_loop};
use crate::measure::RelationFacts;
use crate::model::Relation;
use crate::plan::explain::Explain;

/// One note per relation whose statistics are missing or stale.
pub fn of(relations: &[RelationFacts]) -> Vec<String> {
    relations.iter().filter_map(note).collect()
}

fn note(r: &RelationFacts) -> Option<String> {
    let name = Relation::new(Some(&r.schema), &r.name);
    if !r.has_statistics && r.bytes > 0 {
        return Some(format!(
            "{name} has never been analysed: the planner guessed its statistics, so its choice \
             means little (run ANALYZE {name})"
        ));
    }
    let modified = r.modified_since_analyze? as f64;
    if modified > (r.reltuples.max(0.0) * 0.2).max(1000.0) {
        return Some(format!(
            "{name} changed a lot since it was last analysed ({} rows modified, about {} rows \
             in all): the planner's choice may not hold (run ANALYZE {name})",
            group(modified),
            group(r.reltuples.max(0.0))
        ));
    }
    None
}

/// What the generic plan costs beside the custom plan, when it reads at least twice the shared
/// buffers (and at least [`MORE_BUFFERS`] more): a prepared statement switches to it after its
/// fifth execution, so its reads are the page's from then on, whatever verdict both plans have.
/// Said only with its cause: its loops of lookups that run at least twice as often as the
/// custom plan's, named with both counts.
/// `custom_buffers`: the custom plan's median over the measured runs.
pub fn generic_reads_more(
    custom: &Explain,
    custom_buffers: f64,
    generic: &Explain,
) -> Option<String> {
    let buffers = generic.shared_buffers();
    if generic.execution_ms.is_none()
        || buffers < custom_buffers * 2.0
        || buffers - custom_buffers < MORE_BUFFERS
    {
        return None;
    }
    let custom_scans = custom.scans();
    let loops: Vec<String> = generic
        .scans()
        .iter()
        .filter(|s| is_lookup_loop(s))
        .filter_map(|s| {
            let described = describe_scan(s, false);
            let n = s.node.actual_loops?;
            let before = custom_scans
                .iter()
                .find(|c| describe_scan(c, false) == described)
                .and_then(|c| c.node.actual_loops)
                .unwrap_or(0.0);
            (n >= before * 2.0).then(|| {
                format!(
                    "{described} runs {} times (the custom plan's: {})",
                    group(n),
                    if before > 0.0 {
                        group(before)
                    } else {
                        "none".into()
                    }
                )
            })
        })
        .collect();
    // Said where the lookups show why: a generic plan reading more for another reason (a bitmap
    // scan for an index scan) is the plan's shape, for a baseline or a budget to judge.
    if loops.is_empty() {
        return None;
    }
    Some(format!(
        "the generic plan (what a prepared statement may switch to after its fifth execution) \
         reads {}× the shared buffers of the custom plan ({} against {}): {}",
        {
            let ratio = buffers / custom_buffers.max(1.0);
            if ratio >= 10.0 {
                group(ratio.round())
            } else {
                format!("{ratio:.1}")
            }
        },
        group(buffers),
        group(custom_buffers),
        loops.join("; ")
    ))
}

/// The fewest more shared buffers a generic plan reads before [`generic_reads_more`] says so.
const MORE_BUFFERS: f64 = 10.0;

#[cfg(test)]
mod generic_tests {
    use serde_json::json;

    use super::*;

    /// A top-N page joining `users` by key: `loops` lookups, `buffers` shared buffers in all.
    fn page(loops: f64, buffers: f64) -> Explain {
        Explain::from_json(&json!([{ "Plan": {
            "Node Type": "Nested Loop", "Shared Hit Blocks": buffers, "Shared Read Blocks": 0,
            "Plans": [
                { "Node Type": "Index Scan", "Index Name": "votes_idx", "Relation Name": "votes",
                  "Schema": "public", "Actual Rows": loops, "Actual Loops": 1 },
                { "Node Type": "Index Scan", "Index Name": "users_pkey", "Relation Name": "users",
                  "Schema": "public", "Index Cond": "(id = v.user_id)",
                  "Actual Rows": 1, "Actual Loops": loops }]}, "Execution Time": 1.0 }]))
        .unwrap()
    }

    #[test]
    fn the_generic_plan_reading_n_times_the_custom_plan_is_said_with_its_lookups() {
        let custom = page(20.0, 80.0);
        let note = generic_reads_more(&custom, 80.0, &page(26_501.0, 106_004.0)).unwrap();
        assert_eq!(
            note,
            "the generic plan (what a prepared statement may switch to after its fifth \
             execution) reads 1,325× the shared buffers of the custom plan (106,004 against \
             80): Index Scan using users_pkey on users runs 26,501 times (the custom plan's: 20)"
        );
        // Under twice, or a handful of buffers more: nothing to say.
        assert!(generic_reads_more(&custom, 80.0, &page(30.0, 150.0)).is_none());
        assert!(generic_reads_more(&page(1.0, 4.0), 4.0, &page(2.0, 9.0)).is_none());
        // More buffers, but the lookups loop as often: no cause to name, nothing said.
        assert!(generic_reads_more(&custom, 80.0, &page(20.0, 400.0)).is_none());
    }
}
