//! Whether a required index is usable at all, settled by PostgreSQL's own planner on a
//! schema-only copy of the tables on a throwaway local server (every other index on the table
//! dropped, seq scans disabled), where the re-plans on the measured server cannot settle it.
//!
//! Each table has a rival index that the planner prefers in every re-plan of the probe (seq
//! scans off and, in turn, bitmap, index and index-only scans off): the probe always sees
//! another index chosen, so alone it can call the required index neither usable nor not. Each
//! verdict asserted here was first seen by hand in psql on PostgreSQL 15, on exactly these
//! fixtures: the rival winning every re-plan on the loaded table, and the plan with every other
//! index dropped (in a rolled-back transaction, seq scans and TID scans off) reading the
//! required index, or falling back to the disabled seq scan.

mod common;

use common::*;
use serde_json::Value;

/// 100,000 events of 2,000 accounts, the kinds a, b, c, x spread over every account. The rival
/// is the full index on the same key: it serves any condition on kind.
const EVENTS: &str = "
CREATE TABLE events (id bigint NOT NULL, account_id bigint NOT NULL, kind text NOT NULL);
INSERT INTO events SELECT i, i % 2000, (ARRAY['a', 'b', 'c', 'x'])[(i / 2000) % 4 + 1]
    FROM generate_series(1, 100000) i;
CREATE INDEX events_account ON events (account_id);
CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x';
";

/// 100,000 accounts, 5,000 emails (20 rows each), a tenth deleted, a third with no n; the
/// rival is the full index on email.
const ACCOUNTS: &str = "
CREATE TABLE accounts (id bigint NOT NULL, email text NOT NULL, deleted_at timestamptz, n int);
INSERT INTO accounts SELECT i, 'user' || (i % 5000),
    CASE WHEN (i / 5000) % 10 = 0 THEN timestamptz '2026-01-01' END,
    CASE WHEN (i / 5000) % 3 <> 0 THEN (i / 5000) % 7 END
    FROM generate_series(1, 100000) i;
CREATE INDEX accounts_email ON accounts (email);
CREATE INDEX accounts_live_email ON accounts (email) WHERE deleted_at IS NULL;
CREATE INDEX accounts_n_unset_email ON accounts (email) WHERE n IS NULL;
";

/// 100,000 tasks of 2,000 owners, priorities 0–4; the rival is the full index on owner_id.
const TASKS: &str = "
CREATE TABLE tasks (id bigint NOT NULL, owner_id bigint NOT NULL, priority int NOT NULL);
INSERT INTO tasks SELECT i, i % 2000, (i / 2000) % 5 FROM generate_series(1, 100000) i;
CREATE INDEX tasks_owner ON tasks (owner_id);
CREATE INDEX tasks_urgent_owner ON tasks (owner_id) WHERE priority > 1;
";

/// 200,000 items of 2,000 owners, flags 0–99 spread over every owner; partial indexes on bit
/// masks of flags, and the full index on owner_id as the rival of each.
const ITEMS: &str = "
CREATE TABLE items (id bigint NOT NULL, owner_id bigint NOT NULL, flags int NOT NULL);
INSERT INTO items SELECT i, i % 2000, (i / 2000) % 128 FROM generate_series(1, 200000) i;
CREATE INDEX items_owner ON items (owner_id);
CREATE INDEX items_owner_flags_120 ON items (owner_id) WHERE (flags & 120) <> 0;
CREATE INDEX items_owner_even ON items (owner_id) WHERE (flags & 1) = 0;
CREATE INDEX items_owner_flag2 ON items (owner_id) WHERE (flags & 2) <> 0;
";

/// 100,000 docs, 5,000 titles (20 rows each), half archived. An index on the bare title, one
/// on lower(title), and one on lower(title) over the live half only: smaller, so it wins
/// wherever both expression indexes serve.
const DOCS: &str = "
CREATE TABLE docs (id bigint NOT NULL, title text NOT NULL, archived boolean NOT NULL);
INSERT INTO docs SELECT i, 'Title' || (i % 5000), (i / 5000) % 2 = 0
    FROM generate_series(1, 100000) i;
CREATE INDEX docs_title ON docs (title);
CREATE INDEX docs_lower_title ON docs (lower(title));
CREATE INDEX docs_lower_title_live ON docs (lower(title)) WHERE NOT archived;
";

/// 100,000 tickets of 2,000 owners, states a, b, c; the rival is the full index on owner_id.
const TICKETS: &str = "
CREATE TABLE tickets (id bigint NOT NULL, owner_id bigint NOT NULL, state text NOT NULL);
INSERT INTO tickets SELECT i, i % 2000, (ARRAY['a', 'b', 'c'])[(i / 2000) % 3 + 1]
    FROM generate_series(1, 100000) i;
CREATE INDEX tickets_owner ON tickets (owner_id);
CREATE INDEX tickets_owner_state_a ON tickets (owner_id) WHERE state = 'a';
";

/// 100,000 posts of 1,000 threads, a fifth visible: the partial index is a fifth of the full
/// one, so a custom plan (which knows the visibility) prefers it; the full index on thread_id
/// is the rival a generic plan falls back on.
const POSTS: &str = "
CREATE TABLE posts (id bigint NOT NULL, thread_id int NOT NULL, visibility text NOT NULL);
INSERT INTO posts SELECT i, i % 1000,
    CASE WHEN (i / 1000) % 5 = 0 THEN 'visible' ELSE 'hidden' END
    FROM generate_series(1, 100000) i;
CREATE INDEX posts_thread ON posts (thread_id);
CREATE INDEX posts_thread_visible ON posts (thread_id) WHERE visibility = 'visible';
";

/// 100,000 orders of 50 owners (2,000 each), a third each open, pending and closed, each with a
/// long note. Partial indexes on owner_id: `status = 'open'` (the smallest), `status <>
/// 'closed'`, and the same predicate with the note as a second key (several times larger, so
/// never the cheapest).
const ORDERS: &str = "
CREATE TABLE orders (id bigint NOT NULL, owner_id bigint NOT NULL, status text NOT NULL,
    note text NOT NULL);
INSERT INTO orders SELECT i, i % 50, (ARRAY['open', 'pending', 'closed'])[(i / 50) % 3 + 1],
    repeat('n', 60) || i
    FROM generate_series(1, 100000) i;
CREATE INDEX orders_open_owner ON orders (owner_id) WHERE status = 'open';
CREATE INDEX orders_unclosed_owner ON orders (owner_id) WHERE status <> 'closed';
CREATE INDEX orders_unclosed_owner_note ON orders (owner_id, note) WHERE status <> 'closed';
";

/// A database of its own, named `name`, with `fixtures` loaded and analysed.
fn loaded(name: &str, fixtures: &[&str]) -> String {
    let db = empty_database(name);
    for fixture in fixtures {
        sql(&db, fixture);
    }
    // Alone: VACUUM refuses to run inside the implicit transaction of a batch.
    sql(&db, "VACUUM ANALYZE");
    db
}

/// A project of read paths `(name, sql, required index)`, each with the one scope `member`.
fn member_paths(paths: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let expectations: Vec<String> = paths.iter().map(|(_, _, index)| member(index)).collect();
    let files: Vec<(&str, &str, &str)> = paths
        .iter()
        .zip(&expectations)
        .map(|((name, sql, _), expectation)| (*name, *sql, expectation.as_str()))
        .collect();
    read_paths(&files)
}

/// The report holds exactly `n` checks: assertions over fewer (or none) would pass unseen.
fn assert_checks(report: &Value, n: usize) {
    let checks = report["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks array in {report:#}"));
    assert_eq!(checks.len(), n, "{report:#}");
}

fn message(check: &Value) -> &str {
    check["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message in {check:#}"))
}

/// `read_path [member]` proved not usable by the planner on the schema-only copy.
fn assert_not_usable_on_the_copy(report: &Value, read_path: &str) {
    let c = check_of(report, read_path, "member");
    assert_eq!(c["verdict"], "not-usable", "{c:#}");
    assert_eq!(c["usable"], false, "{c:#}");
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    assert_eq!(c["unsettled"], Value::Null, "{c:#}");
    assert!(message(c).contains("schema-only copy"), "{c:#}");
}

/// `read_path [member]` proved usable, yet not chosen: a rival won every re-plan on the measured
/// server, so the proof can only come from the copy (or a re-plan, should one ever show it).
fn assert_usable_not_chosen(report: &Value, read_path: &str) {
    let c = check_of(report, read_path, "member");
    assert_eq!(c["verdict"], "not-chosen", "{c:#}");
    assert_eq!(c["usable"], true, "{c:#}");
    assert_eq!(c["unsettled"], Value::Null, "{c:#}");
    let settled_by = c["settled_by"]
        .as_str()
        .unwrap_or_else(|| panic!("usable, but settled by nothing: {c:#}"));
    assert!(matches!(settled_by, "scratch" | "re-plan"), "{c:#}");
    if settled_by == "scratch" {
        assert!(message(c).contains("schema-only copy"), "{c:#}");
    }
}

/// An IN list that admits the value the predicate excludes cannot use the partial index.
#[test]
fn an_in_list_admitting_the_excluded_value_is_not_usable_by_the_planner_s_own_proof() {
    let db = loaded("scratch_in_list", &[EVENTS]);
    let dir = member_paths(&[(
        "in-list",
        "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = 42",
        "events_account_not_x",
    )]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 1);
    assert_not_usable_on_the_copy(&report, "in-list");
    assert_eq!(status, 1, "{report:#}");
}

/// `<>` another value admits the excluded one: `kind <> 'b'` cannot use `WHERE kind <> 'x'`.
#[test]
fn not_equal_to_another_value_is_not_usable_by_the_planner_s_own_proof() {
    let db = loaded("scratch_not_equal", &[EVENTS]);
    let dir = member_paths(&[(
        "not-equal",
        "SELECT id FROM events WHERE kind <> 'b' AND account_id = 42",
        "events_account_not_x",
    )]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 1);
    assert_not_usable_on_the_copy(&report, "not-equal");
    assert_eq!(status, 1, "{report:#}");
}

/// The rows a query asks for lie outside an `IS NULL` predicate: IS NOT NULL, or a comparison.
#[test]
fn is_not_null_or_a_comparison_against_an_is_null_predicate_is_not_usable() {
    let db = loaded("scratch_is_null", &[ACCOUNTS]);
    let dir = member_paths(&[
        (
            "deleted",
            "SELECT id FROM accounts WHERE deleted_at IS NOT NULL AND email = 'user42'",
            "accounts_live_email",
        ),
        (
            "n-below-3",
            "SELECT id FROM accounts WHERE n < 3 AND email = 'user42'",
            "accounts_n_unset_email",
        ),
    ]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 2);
    assert_not_usable_on_the_copy(&report, "deleted");
    assert_not_usable_on_the_copy(&report, "n-below-3");
    assert_eq!(status, 1, "{report:#}");
}

/// `!= 1` admits 0, which the range predicate `priority > 1` leaves out.
#[test]
fn not_equal_against_a_range_predicate_is_not_usable_by_the_planner_s_own_proof() {
    let db = loaded("scratch_range", &[TASKS]);
    let dir = member_paths(&[(
        "not-one",
        "SELECT id FROM tasks WHERE priority != 1 AND owner_id = 42",
        "tasks_urgent_owner",
    )]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 1);
    assert_not_usable_on_the_copy(&report, "not-one");
    assert_eq!(status, 1, "{report:#}");
}

/// A bit mask written another way (equal in meaning or not) is a different expression to the
/// planner, which compares expressions, never bits.
#[test]
fn a_bit_mask_written_another_way_is_not_usable_by_the_planner_s_own_proof() {
    let db = loaded("scratch_bits", &[ITEMS]);
    let paths = [
        // Bits 8 and 16 lie inside the mask 120, but the planner cannot know it.
        (
            "bits-or",
            "SELECT id FROM items WHERE ((flags & 8) <> 0 OR (flags & 16) <> 0) \
             AND owner_id = 42",
            "items_owner_flags_120",
        ),
        // Even, as a remainder rather than a mask.
        (
            "modulo",
            "SELECT id FROM items WHERE flags % 2 = 0 AND owner_id = 42",
            "items_owner_even",
        ),
        // The same bit, cast to boolean rather than compared with 0.
        (
            "cast-to-boolean",
            "SELECT id FROM items WHERE (flags & 2)::boolean AND owner_id = 42",
            "items_owner_flag2",
        ),
        // The predicate itself, inside a chain of casts.
        (
            "cast-chain",
            "SELECT id FROM items WHERE ((flags & 2) <> 0)::int = 1 AND owner_id = 42",
            "items_owner_flag2",
        ),
        // Another bit altogether.
        (
            "other-bit",
            "SELECT id FROM items WHERE (flags & 4) <> 0 AND owner_id = 42",
            "items_owner_flag2",
        ),
    ];
    let dir = member_paths(&paths);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, paths.len());
    for (read_path, _, _) in paths {
        assert_not_usable_on_the_copy(&report, read_path);
    }
    assert_eq!(status, 1, "{report:#}");
}

/// Equality on the bare column cannot use an index on an expression of it (`lower(title)`).
#[test]
fn equality_on_a_column_is_not_usable_with_an_index_on_an_expression_of_it() {
    let db = loaded("scratch_expression", &[DOCS]);
    let dir = member_paths(&[(
        "bare-title",
        "SELECT id FROM docs WHERE title = 'Title42'",
        "docs_lower_title",
    )]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 1);
    assert_not_usable_on_the_copy(&report, "bare-title");
    assert_eq!(status, 1, "{report:#}");
}

/// An OR of two equalities admits rows the predicate's one equality leaves out.
#[test]
fn an_or_of_two_equalities_is_not_usable_with_a_predicate_of_one_of_them() {
    let db = loaded("scratch_or", &[TICKETS]);
    let dir = member_paths(&[(
        "a-or-b",
        "SELECT id FROM tickets WHERE (state = 'a' OR state = 'b') AND owner_id = 42",
        "tickets_owner_state_a",
    )]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 1);
    assert_not_usable_on_the_copy(&report, "a-or-b");
    assert_eq!(status, 1, "{report:#}");
}

/// A parameter where the predicate needs a constant: the custom plan uses the index, the
/// generic plan cannot, and the copy proves it.
#[test]
fn a_parameter_where_the_predicate_needs_a_constant_is_a_generic_plan_proved_unusable() {
    let db = loaded("scratch_generic", &[POSTS]);
    let parameter = format!(
        "params = [\"visible\", 7]\n{}",
        member("posts_thread_visible")
    );
    let literal = format!("params = [7]\n{}", member("posts_thread_visible"));
    let dir = read_paths(&[
        (
            "parameter",
            "SELECT id FROM posts WHERE visibility = $1 AND thread_id = $2",
            &parameter,
        ),
        // The visibility written as a constant: the generic plan uses the index too.
        (
            "literal",
            "SELECT id FROM posts WHERE visibility = 'visible' AND thread_id = $1",
            &literal,
        ),
    ]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, 2);
    let c = check_of(&report, "parameter", "member");
    assert_eq!(c["verdict"], "generic-plan", "{c:#}");
    assert_eq!(c["usable"], false, "{c:#}");
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    assert_eq!(c["unsettled"], Value::Null, "{c:#}");
    assert!(message(c).contains("schema-only copy"), "{c:#}");
    let c = check_of(&report, "literal", "member");
    assert_eq!(c["verdict"], "pass", "{c:#}");
    assert_eq!(status, 1, "{report:#}");
}

/// The usable controls, each (name, SQL, required index): a rival wins every re-plan on the
/// measured server, and with the rivals gone the planner reads the required index.
const CONTROLS: [(&str, &str, &str); 3] = [
    // `status = 'open'` implies `status <> 'closed'` (the planner proves it; no text matches),
    // and the smaller index on the open orders wins.
    (
        "open-orders",
        "SELECT id FROM orders WHERE status = 'open' AND owner_id = 42",
        "orders_unclosed_owner",
    ),
    // The predicate written exactly, but a sibling with the same predicate and the same
    // leading key, without the note, is smaller and wins.
    (
        "sibling",
        "SELECT id FROM orders WHERE status <> 'closed' AND owner_id = 42",
        "orders_unclosed_owner_note",
    ),
    // The expression index used as written, but its partial twin over the live docs wins.
    (
        "lower-title",
        "SELECT id FROM docs WHERE lower(title) = 'title42' AND NOT archived",
        "docs_lower_title",
    ),
];

/// An index the planner can use, though a rival wins every re-plan, is usable and not chosen.
#[test]
fn an_index_usable_although_a_rival_wins_every_re_plan_is_not_chosen_and_usable() {
    let db = loaded("scratch_controls", &[ORDERS, DOCS]);
    let dir = member_paths(&CONTROLS);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_checks(&report, CONTROLS.len());
    for (read_path, _, _) in CONTROLS {
        assert_usable_not_chosen(&report, read_path);
    }
    // Not chosen fails under the default --require chosen.
    assert_eq!(status, 1, "{report:#}");
}

/// Under --require usable, an index proved usable on the copy only warns, and the run passes.
#[test]
fn an_index_proved_usable_on_the_copy_only_warns_under_require_usable() {
    let db = loaded("scratch_controls_usable", &[ORDERS, DOCS]);
    let dir = member_paths(&CONTROLS);
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_checks(&report, CONTROLS.len());
    for (read_path, _, _) in CONTROLS {
        assert_usable_not_chosen(&report, read_path);
        let c = check_of(&report, read_path, "member");
        assert_eq!(c["warning"], true, "{c:#}");
    }
    assert_eq!(report["summary"]["failed"], 0, "{report:#}");
    assert_eq!(status, 0, "{report:#}");
}

/// With --no-scratch, a case only the copy settles is never a pass, never called usable, and
/// never said to be settled by a copy that was not made.
#[test]
fn without_the_scratch_copy_an_unusable_index_is_never_called_usable() {
    let db = loaded("scratch_off", &[EVENTS, ITEMS, DOCS]);
    let paths = [
        (
            "not-equal",
            "SELECT id FROM events WHERE kind <> 'b' AND account_id = 42",
            "events_account_not_x",
        ),
        (
            "cast-to-boolean",
            "SELECT id FROM items WHERE (flags & 2)::boolean AND owner_id = 42",
            "items_owner_flag2",
        ),
        (
            "bare-title",
            "SELECT id FROM docs WHERE title = 'Title42'",
            "docs_lower_title",
        ),
    ];
    let dir = member_paths(&paths);
    let (status, report) = check_json(&db, dir.path(), &["--no-scratch"]);
    assert_checks(&report, paths.len());
    for (read_path, _, _) in paths {
        let c = check_of(&report, read_path, "member");
        assert_ne!(c["verdict"], "pass", "{c:#}");
        assert_ne!(c["usable"], true, "{c:#}");
        assert_ne!(c["settled_by"], "scratch", "{c:#}");
        // Left open, it says why.
        if c["usable"].is_null() {
            assert!(
                c["unsettled"].as_str().is_some_and(|why| !why.is_empty()),
                "{c:#}"
            );
        }
    }
    assert_eq!(status, 1, "{report:#}");
}
