//! Where CI runs: a database with the application's schema and a few rows. A verdict whose truth
//! does not depend on the data (the generic plan cannot use the index, the SQL cannot use it)
//! must be the same there as on the full database; one that does (the planner's choice) must
//! not pass or fail on statistics that do not exist. Each test would fail if its verdict were
//! wrong.

mod common;

use std::fs;

use common::*;

/// A helpdesk's tickets: a partial index for the open queue and its unfiltered twin.
const TICKETS: &str = "
CREATE TABLE tickets (id bigint PRIMARY KEY, account_id bigint NOT NULL, status text NOT NULL,
    subject text NOT NULL, updated_at timestamptz NOT NULL);
CREATE INDEX tickets_open_idx ON tickets (account_id, updated_at DESC)
    WHERE status IN ('open', 'pending');
CREATE INDEX tickets_account_idx ON tickets (account_id, updated_at DESC);
";

/// Five tickets: the CI database.
const FIVE: &str = "
INSERT INTO tickets SELECT i, i % 2, (ARRAY['open','pending','closed','solved','open'])[i],
    'subject ' || i, timestamp '2026-01-01' + i * interval '1 hour'
    FROM generate_series(1, 5) i;
";

fn project(paths: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("plans")).unwrap();
    fs::create_dir(dir.path().join("expectations")).unwrap();
    for (name, sql, expectation) in paths {
        fs::write(dir.path().join(format!("plans/{name}.sql")), sql).unwrap();
        fs::write(
            dir.path().join(format!("expectations/{name}.toml")),
            expectation,
        )
        .unwrap();
    }
    dir
}

const QUEUE: &str = "SELECT t.id, t.subject FROM tickets t \
     WHERE t.account_id = $1 AND t.status IN ('open', 'pending') \
     ORDER BY t.updated_at DESC LIMIT 20";
const QUEUE_ANY: &str = "SELECT t.id, t.subject FROM tickets t \
     WHERE t.account_id = $1 AND t.status = ANY($2) \
     ORDER BY t.updated_at DESC LIMIT 20";

fn queue_project() -> tempfile::TempDir {
    project(&[
        (
            "queue",
            QUEUE,
            "params = [1]\n[scopes.member]\nindex = \"tickets_open_idx\"\n",
        ),
        (
            "queue_any",
            QUEUE_ANY,
            "params = [1, \"{open,pending}\"]\n[scopes.member]\nindex = \"tickets_open_idx\"\n",
        ),
    ])
}

#[test]
fn a_literal_turned_into_a_parameter_is_generic_plan_on_five_analysed_rows() {
    let db = empty_database("ci_five_analysed");
    sql(&db, TICKETS);
    sql(&db, FIVE);
    sql(&db, "ANALYZE tickets");
    let dir = queue_project();
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    // The regression: the generic plan cannot prove `status = ANY($2)` implies the predicate,
    // whatever the data; the custom plan is a seq scan of five rows, which says nothing.
    let c = check_of(&report, "queue_any", "member");
    assert_eq!(c["verdict"], "generic-plan", "{c:#}");
    assert_eq!(c["usable"], false, "{c:#}");
    assert_eq!(c["warning"], false, "{c:#}");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("cannot use it, whatever the data"),
        "{message}"
    );
    // The control: the same page with the literal list is usable by both plans, merely not
    // chosen at five rows, a warning under --require usable.
    let c = check_of(&report, "queue", "member");
    assert_ne!(c["verdict"], "generic-plan", "{c:#}");
    assert!(
        c["verdict"] == "pass" || c["warning"] == true,
        "the good page fails on five rows: {c:#}"
    );
    assert_eq!(status, 1, "{report:#}");
}

#[test]
fn the_required_index_under_a_join_whose_outer_side_found_no_rows_passes() {
    // Issue 34: on a CI database the outer side of a Nested Loop often finds no rows, so the
    // inner Index Scan through the required index never runs (`never executed`, loops 0). It is
    // the plan's choice all the same; it was counted as absent and the check failed.
    let db = empty_database("ci_loops_zero");
    sql(&db, TICKETS);
    sql(
        &db,
        "CREATE TABLE accounts (id bigint PRIMARY KEY, slug text NOT NULL UNIQUE);
         INSERT INTO accounts SELECT i, 'acct' || i FROM generate_series(1, 1000) i;
         INSERT INTO tickets SELECT i, i % 1000 + 1,
             (ARRAY['open','pending','closed','solved','solved','solved','solved','solved'])[i % 8 + 1],
             's', timestamp '2026-01-01' + i * interval '1 minute'
             FROM generate_series(1, 1000) i;
         ANALYZE",
    );
    let dir = project(&[(
        "account_queue",
        "SELECT t.id, t.subject FROM accounts a JOIN tickets t ON t.account_id = a.id \
         WHERE a.slug = $1 AND t.status IN ('open', 'pending') \
         ORDER BY t.updated_at DESC LIMIT 20",
        "params = [\"nobody\"]\n[scopes.member]\nindex = \"tickets_open_idx\"\n",
    )]);
    // The premise, in PostgreSQL's own words: the index is in the plan and never ran.
    let plan = query_rows(
        &db,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT t.id FROM accounts a \
         JOIN tickets t ON t.account_id = a.id \
         WHERE a.slug = 'nobody' AND t.status IN ('open', 'pending') \
         ORDER BY t.updated_at DESC LIMIT 20",
    )
    .join("\n");
    assert!(
        plan.contains("Index Scan using tickets_open_idx on tickets t (never executed)"),
        "{plan}"
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    let c = check_of(&report, "account_queue", "member");
    assert_eq!(c["verdict"], "pass", "{c:#}");
    assert_eq!(status, 0, "{report:#}");
}

#[test]
fn a_ci_database_never_analysed_is_neither_green_nor_red_for_what_the_data_decides() {
    // Issue 34: on five tickets never analysed the planner guesses the table's size, and the
    // guesses favour the index: the good page passed, and after ANALYZE it did not. What the
    // data decides is `no-statistics` (exit 5, its own status); what it does not decide (the
    // generic plan cannot use the index) still fails.
    let db = empty_database("ci_five_never_analysed");
    sql(&db, TICKETS);
    sql(&db, FIVE);
    let dir = queue_project();
    let (status, report) = check_json(&db, dir.path(), &[]);
    let c = check_of(&report, "queue", "member");
    assert_eq!(c["verdict"], "no-statistics", "{c:#}");
    assert_eq!(c["unanalysed"], serde_json::json!(["tickets"]), "{c:#}");
    assert!(c["at_guesses"].is_string(), "{c:#}");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.starts_with("tickets never analysed: the planner guessed its size"),
        "{message}"
    );
    let c = check_of(&report, "queue_any", "member");
    assert_eq!(c["verdict"], "generic-plan", "{c:#}");
    assert_eq!(c["usable"], false, "{c:#}");
    assert_eq!(status, 1, "a data-independent failure fails: {report:#}");
    assert_eq!(report["summary"]["no_statistics"], 1, "{report:#}");

    // Only the good page: neither green nor red.
    let good = project(&[(
        "queue",
        QUEUE,
        "params = [1]\n[scopes.member]\nindex = \"tickets_open_idx\"\n",
    )]);
    let run = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        good.path().to_str().unwrap(),
        "--warmup",
        "1",
        "--iterations",
        "2",
    ]);
    assert_eq!(run.code(), 5, "{}", run.shown());
    let table = &run.stdout;
    assert!(table.contains("no-statistics"), "{table}");
    assert!(table.contains("1 without statistics"), "{table}");
    assert!(table.contains("ANALYZE tickets"), "{table}");

    // Asked for, the guesses are judged as statistics: the verdict they gave.
    let (_, judged) = check_json(&db, good.path(), &["--unanalysed", "judge"]);
    let c = check_of(&judged, "queue", "member");
    assert_ne!(c["verdict"], "no-statistics", "{c:#}");

    // Analysed, the data decides again.
    sql(&db, "ANALYZE tickets");
    let (_, analysed) = check_json(&db, good.path(), &[]);
    let c = check_of(&analysed, "queue", "member");
    assert_ne!(c["verdict"], "no-statistics", "{c:#}");
    assert_eq!(c["unanalysed"], serde_json::json!([]), "{c:#}");
}
