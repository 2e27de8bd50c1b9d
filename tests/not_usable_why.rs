//! Every `not-usable` settled on the scratch copy says the one condition that fails and why, in
//! words a developer acts on: a bare column against an expression key, a case-insensitive
//! match against a btree key, a boolean test against a predicate's `= false`.

mod common;

use common::*;
use serde_json::Value;

/// A social network's accounts: a key on lower(username), and a partial index of the
/// accounts not filtered.
const ACCOUNTS: &str = "
CREATE TABLE accounts (id bigint PRIMARY KEY, username text NOT NULL,
    filtered boolean NOT NULL DEFAULT false);
INSERT INTO accounts SELECT i, 'User' || i, i % 10 = 0 FROM generate_series(1, 20000) i;
CREATE INDEX accounts_lower_username ON accounts (lower(username));
CREATE INDEX accounts_username_unfiltered ON accounts (username) WHERE filtered = false;
";

/// The message of the one check of a run of `sql` requiring `index`, which must be
/// `not-usable`, settled on the copy.
fn not_usable(name: &str, sql_text: &str, index: &str) -> String {
    let db = empty_database(name);
    sql(&db, ACCOUNTS);
    sql(&db, "VACUUM ANALYZE");
    let dir = read_paths(&[("path", sql_text, &member(index))]);
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    let c: &Value = check_of(&report, "path", "member");
    assert_eq!(c["verdict"], "not-usable", "{c:#}");
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    assert_eq!(status, 1, "{report:#}");
    c["message"].as_str().expect("a message").to_string()
}

#[test]
fn a_bare_column_against_an_expression_key_is_said_as_the_condition_that_fails() {
    let m = not_usable(
        "why_expression",
        "SELECT id FROM accounts WHERE username = 'User42'",
        "accounts_lower_username",
    );
    assert!(
        m.contains(
            "The condition that fails: the query compares the bare column username \
             (`username = 'User42'`), and the index's leading key is the expression \
             lower(username)"
        ),
        "{m}"
    );
}

#[test]
fn ilike_against_a_btree_key_is_said_as_the_condition_that_fails() {
    let m = not_usable(
        "why_ilike",
        "SELECT id FROM accounts WHERE lower(username) ILIKE 'user42'",
        "accounts_lower_username",
    );
    assert!(
        m.contains(
            "The condition that fails: the query matches lower(username) case-insensitively \
             (`lower(username) ~~* 'user42'`): a btree operator class has no such operator"
        ),
        "{m}"
    );
}

#[test]
fn is_false_against_a_predicate_of_equals_false_is_said_as_the_condition_that_fails() {
    let m = not_usable(
        "why_is_false",
        "SELECT id FROM accounts WHERE username = 'User42' AND filtered IS FALSE",
        "accounts_username_unfiltered",
    );
    assert!(
        m.contains("The condition that fails: the query tests filtered IS FALSE"),
        "{m}"
    );
    assert!(m.contains("never a boolean test"), "{m}");
}

/// The control: the same conditions written as the index needs are usable, so the causes
/// above are the conditions, not the fixture.
#[test]
fn the_same_read_paths_written_as_the_indexes_need_are_not_not_usable() {
    let db = empty_database("why_control");
    sql(&db, ACCOUNTS);
    sql(&db, "VACUUM ANALYZE");
    let dir = read_paths(&[
        (
            "lower",
            "SELECT id FROM accounts WHERE lower(username) = 'user42'",
            &member("accounts_lower_username"),
        ),
        (
            "equals-false",
            "SELECT id FROM accounts WHERE username = 'User42' AND filtered = false",
            &member("accounts_username_unfiltered"),
        ),
    ]);
    let (_, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    for read_path in ["lower", "equals-false"] {
        let c = check_of(&report, read_path, "member");
        assert_eq!(c["verdict"], "pass", "{c:#}");
    }
}
