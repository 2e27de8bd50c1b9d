//! Whether the scratch copy re-planned the statement the measured server measured. The copy is
//! made from the measured catalog, but what the planner folds there (an IMMUTABLE function that
//! tells the copy from the server, a definition that changed while the copy loaded) can make
//! the copy plan another statement: its `usable` or `not-usable` would then speak of SQL the
//! application never sends. Both servers planned the read path with every index scan off, where
//! every condition on the index's table stays in its scan's filter, constants folded; the copy's
//! answer counts only when those conditions are the same.

use crate::measure::SameStatement;

/// `Ok` when the copy planned the same conditions on `table` as the measured server; else why
/// its re-plan does not count, in words.
pub fn held(same: Option<&SameStatement>, table: &str) -> Result<(), String> {
    let Some(same) = same else {
        return Err(
            "this measurement does not show that the copy planned the statement the server \
             measured (it was saved before plancheck compared them)"
                .to_string(),
        );
    };
    let (mut measured, mut copy) = (same.measured.clone(), same.copy.clone());
    measured.sort();
    copy.sort();
    if measured == copy {
        return Ok(());
    }
    let shown = |c: &[String]| match c {
        [] => "none".to_string(),
        c => c.join(", "),
    };
    Err(format!(
        "the copy planned another statement than the measured server: with every index scan \
         off, the conditions on {table} were {} on the measured server and {} on the copy, so its \
         re-plan settles nothing (why they differ is not settled: a function the planner folds \
         can answer otherwise there, or a definition can differ)",
        shown(&same.measured),
        shown(&same.copy)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(measured: &[&str], copy: &[&str]) -> SameStatement {
        SameStatement {
            measured: measured.iter().map(|s| s.to_string()).collect(),
            copy: copy.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_same_conditions_in_any_order_hold() {
        let s = same(
            &["Filter: (p.a = 1)", "Filter: (q.b = 2)"],
            &["Filter: (q.b = 2)", "Filter: (p.a = 1)"],
        );
        assert_eq!(held(Some(&s), "posts"), Ok(()));
    }

    #[test]
    fn a_constant_folded_otherwise_on_the_copy_does_not_hold_and_says_both() {
        let s = same(
            &["Filter: ((visibility = 'hidden'::text) AND (thread_id = 7))"],
            &["Filter: ((visibility = 'visible'::text) AND (thread_id = 7))"],
        );
        let why = held(Some(&s), "posts").unwrap_err();
        assert!(why.contains("another statement"), "{why}");
        assert!(
            why.contains("'hidden'") && why.contains("'visible'"),
            "{why}"
        );
    }

    #[test]
    fn a_scan_one_side_folded_away_does_not_hold() {
        let s = same(&["Filter: (kind = 'a'::text)"], &[]);
        let why = held(Some(&s), "events").unwrap_err();
        assert!(why.contains("and none on the copy"), "{why}");
    }

    #[test]
    fn a_measurement_without_the_comparison_does_not_hold() {
        let why = held(None, "posts").unwrap_err();
        assert!(why.contains("does not show"), "{why}");
    }
}
