//! An index that serves a statement only beside another index of its table (one arm of a
//! BitmapOr) is usable: on the schema-only copy, where the index alone serves no plan, plancheck
//! keeps it beside each other index of the table in turn and asks the planner again. An index
//! that serves the statement beside no other stays `not-usable`.
//!
//! The fixture is a link aggregator's history: `read_at IS NOT NULL OR hidden_at IS NOT NULL`,
//! a partial index per arm, and the full index on user_id, which the planner prefers in every
//! re-plan on the loaded table (most rows are read, half are hidden: the two partial indexes
//! together hold more entries than the full one), so the measured server's re-plans never show
//! the pair and only the copy settles it.

mod common;

use common::*;
use serde_json::Value;

/// 100,000 links of 2,000 users: 95 in 100 read, one in two hidden, each with a title.
const LINKS: &str = "
CREATE TABLE links (id bigint PRIMARY KEY, user_id bigint NOT NULL, read_at timestamptz,
    hidden_at timestamptz, title text NOT NULL);
INSERT INTO links SELECT i, i % 2000,
    CASE WHEN (i / 2000) % 20 <> 0 THEN timestamptz '2026-01-01' END,
    CASE WHEN (i / 2000) % 2 = 0 THEN timestamptz '2026-02-01' END,
    'title ' || i
    FROM generate_series(1, 100000) i;
CREATE INDEX links_user ON links (user_id);
CREATE INDEX links_user_read ON links (user_id) WHERE read_at IS NOT NULL;
CREATE INDEX links_user_hidden ON links (user_id) WHERE hidden_at IS NOT NULL;
";

const HISTORY: &str =
    "SELECT id FROM links WHERE user_id = 42 AND (read_at IS NOT NULL OR hidden_at IS NOT NULL)";

fn loaded(name: &str) -> String {
    let db = empty_database(name);
    sql(&db, LINKS);
    // Alone: VACUUM refuses to run inside the implicit transaction of a batch.
    sql(&db, "VACUUM ANALYZE");
    db
}

fn message(check: &Value) -> &str {
    check["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message in {check:#}"))
}

fn assert_checks(report: &Value, n: usize) {
    let checks = report["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks array in {report:#}"));
    assert_eq!(checks.len(), n, "{report:#}");
}

/// The BitmapOr pair: each partial index serves one arm of the OR and neither serves it alone.
/// Usable (settled on the copy, together with its sibling), not chosen at this data.
#[test]
fn an_index_usable_only_beside_its_sibling_in_a_bitmap_or_is_usable_not_not_usable() {
    let db = loaded("together_pair");
    let dir = read_paths(&[
        ("history-read", HISTORY, &member("links_user_read")),
        ("history-hidden", HISTORY, &member("links_user_hidden")),
    ]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 2);
    for (read_path, with) in [
        ("history-read", "links_user_hidden"),
        ("history-hidden", "links_user_read"),
    ] {
        let c = check_of(&report, read_path, "member");
        assert_eq!(c["verdict"], "not-chosen", "{c:#}");
        assert_eq!(c["usable"], true, "{c:#}");
        assert_eq!(c["settled_by"], "scratch", "{c:#}");
        let m = message(c);
        assert!(
            m.contains(&format!("usable together with {with} in a BitmapOr")),
            "{c:#}"
        );
    }
    // Not chosen fails under the default --require chosen, as any usable index not chosen.
    assert_eq!(status, 1, "{report:#}");
}

/// Under --require usable the pair is a warning, and the run passes.
#[test]
fn the_bitmap_or_pair_passes_a_gate_that_requires_usable() {
    let db = loaded("together_usable");
    let dir = read_paths(&[("history", HISTORY, &member("links_user_read"))]);
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_checks(&report, 1);
    let c = check_of(&report, "history", "member");
    assert_eq!(c["usable"], true, "{c:#}");
    assert_eq!(c["warning"], true, "{c:#}");
    assert_eq!(status, 0, "{report:#}");
}

/// An arm of the OR that no index of the table serves (a condition on the title, which no index
/// has): the partial index cannot serve the statement alone nor beside any other. Still
/// `not-usable`: no false pass.
#[test]
fn an_index_that_serves_the_statement_beside_no_other_is_still_not_usable() {
    let db = loaded("together_none");
    let dir = read_paths(&[(
        "read-or-titled",
        "SELECT id FROM links WHERE user_id = 42 AND (read_at IS NOT NULL OR title = 'title 7')",
        &member("links_user_read"),
    )]);
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_checks(&report, 1);
    let c = check_of(&report, "read-or-titled", "member");
    assert_eq!(c["verdict"], "not-usable", "{c:#}");
    assert_eq!(c["usable"], false, "{c:#}");
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    let m = message(c);
    assert!(
        m.contains("Nor does it serve it beside another index"),
        "{c:#}"
    );
    for other in ["links_pkey", "links_user", "links_user_hidden"] {
        assert!(m.contains(other), "{other} not tried: {c:#}");
    }
    assert_eq!(status, 1, "{report:#}");
}

/// Few links read and few hidden: the two partial indexes are small and the planner reads the
/// user's history through both, in a BitmapOr.
const FEW_READ: &str = "
CREATE TABLE links (id bigint PRIMARY KEY, user_id bigint NOT NULL, read_at timestamptz,
    hidden_at timestamptz, title text NOT NULL);
INSERT INTO links SELECT i, i % 2000,
    CASE WHEN (i / 2000) % 20 = 0 THEN timestamptz '2026-01-01' END,
    CASE WHEN (i / 2000) % 20 = 1 THEN timestamptz '2026-02-01' END,
    'title ' || i
    FROM generate_series(1, 100000) i;
CREATE INDEX links_user ON links (user_id);
CREATE INDEX links_user_read ON links (user_id) WHERE read_at IS NOT NULL;
CREATE INDEX links_user_hidden ON links (user_id) WHERE hidden_at IS NOT NULL;
";

/// "Both": one expectation per index, each for the same plan (`plan = "history"`); both pass
/// where the plan reads the two in a BitmapOr, and the one whose index is dropped fails, so
/// the pair is required whole. "Either": `index = [a, b]`.
#[test]
fn both_indexes_of_a_bitmap_or_are_required_by_one_expectation_each_for_the_same_plan() {
    let db = empty_database("together_both");
    sql(&db, FEW_READ);
    sql(&db, "VACUUM ANALYZE");
    let dir = project(&[
        ("plans/history.sql", HISTORY),
        (
            "expectations/history.toml",
            "[scopes.member]\nindex = \"links_user_read\"\n",
        ),
        (
            "expectations/history-hidden.toml",
            "plan = \"history\"\n[scopes.member]\nindex = \"links_user_hidden\"\n",
        ),
        (
            "expectations/history-either.toml",
            "plan = \"history\"\n[scopes.member]\nindex = [\"links_user_read\", \"links_user_hidden\"]\n",
        ),
    ]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 3);
    for read_path in ["history", "history-hidden", "history-either"] {
        let c = check_of(&report, read_path, "member");
        assert_eq!(c["verdict"], "pass", "{c:#}");
    }
    assert_eq!(status, 0, "{report:#}");

    // One arm dropped: the expectation that requires it is missing-index, and the other arm
    // alone (nor beside links_user or links_pkey) serves the OR no longer: not-usable. Neither
    // expectation nor the "either" one passes.
    sql(&db, "DROP INDEX links_user_hidden");
    let (status, report) = check_json(&db, dir.path(), &[]);
    let c = check_of(&report, "history-hidden", "member");
    assert_eq!(c["verdict"], "missing-index", "{c:#}");
    let c = check_of(&report, "history", "member");
    assert_eq!(c["verdict"], "not-usable", "{c:#}");
    let c = check_of(&report, "history-either", "member");
    assert_ne!(c["verdict"], "pass", "{c:#}");
    assert_eq!(status, 1, "{report:#}");
}
