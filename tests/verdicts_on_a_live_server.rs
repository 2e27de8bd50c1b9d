//! Verdicts that claim no more than the plans show, on a schema that is not the reference
//! board: an `events` table with several partial indexes, some sharing a predicate. Each test
//! would fail if its verdict were wrong; `judge` on the saved measurements must agree with the
//! live run.

mod common;

use std::fs;

use common::*;

/// 200,000 events: 10% deleted, 2% flagged, kinds 0–19; partial indexes sharing the
/// `deleted_at IS NULL` predicate, one on `flagged`, one on a kind IN list.
const EVENTS: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, account_id bigint NOT NULL, room text NOT NULL,
    kind int NOT NULL, flagged boolean NOT NULL, deleted_at timestamptz,
    created_at timestamptz NOT NULL);
INSERT INTO events SELECT i, i % 5000, 'room' || (i % 100), i % 20, i % 50 = 0,
    CASE WHEN i % 10 = 0 THEN now() END, timestamp '2026-01-01' + i * interval '1 second'
    FROM generate_series(1, 200000) i;
CREATE INDEX events_live_account ON events (account_id) WHERE deleted_at IS NULL;
CREATE INDEX events_live_room ON events (room) WHERE deleted_at IS NULL;
CREATE INDEX events_flagged_account ON events (account_id) WHERE flagged;
CREATE INDEX events_created ON events (created_at);
CREATE INDEX events_kind_small ON events (account_id) WHERE kind IN (0, 4, 5);
";

fn events_db(name: &str) -> String {
    let db = fresh_board(name);
    sql(&db, EVENTS);
    // Alone: VACUUM refuses to run inside the implicit transaction of a batch.
    sql(&db, "VACUUM ANALYZE events");
    db
}

/// A project of read paths, each `(name, sql, expectation)`.
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

fn member(index: &str) -> String {
    format!("[scopes.member]\nindex = \"{index}\"\n")
}

fn check_of<'a>(report: &'a serde_json::Value, read_path: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["read_path"] == read_path)
        .unwrap_or_else(|| panic!("no {read_path} in {report:#}"))
}

#[test]
fn verdicts_on_a_schema_with_sibling_partial_indexes() {
    let db = events_db("judgement_events");
    let by_room = member("events_live_room");
    let flagged = member("events_flagged_account");
    let created = member("events_created");
    let kinds = member("events_kind_small");
    let dir = project(&[
        // The predicate is implied, but a sibling with the same predicate serves the query.
        (
            "sibling",
            "SELECT id FROM events WHERE deleted_at IS NULL AND account_id = 42",
            &by_room,
        ),
        // The key wrapped in a cast: the partial index read whole, its key thrown away.
        (
            "cast",
            "SELECT id FROM events WHERE flagged AND account_id::text = '42'",
            &flagged,
        ),
        // Latest N: a walk in index order that a LIMIT stops.
        (
            "latest",
            "SELECT id FROM events WHERE kind = 3 ORDER BY created_at DESC LIMIT 20",
            &created,
        ),
        // A count through the partial index: it returns what it reads.
        (
            "count",
            "SELECT count(*) FROM events WHERE flagged",
            &flagged,
        ),
        // An IN list wider than the predicate's.
        (
            "kinds",
            "SELECT id FROM events WHERE kind IN (0, 4, 5, 15, 17) AND account_id = 42",
            &kinds,
        ),
    ]);
    let saved = tempfile::tempdir().unwrap();
    let (status, report) = check_json(
        &db,
        dir.path(),
        &["--save-plans", saved.path().to_str().unwrap()],
    );
    assert_eq!(status, 1, "{report:#}");

    let sibling = check_of(&report, "sibling");
    assert_eq!(sibling["verdict"], "not-chosen", "{sibling:#}");
    assert_eq!(sibling["usable"], true, "{sibling:#}");
    let message = sibling["message"].as_str().unwrap();
    assert!(
        message.contains("events_live_account (same predicate) was chosen instead"),
        "{message}"
    );
    assert!(!message.contains("not implied"), "{message}");

    let cast = check_of(&report, "cast");
    assert_eq!(cast["verdict"], "key-unused", "{cast:#}");
    let message = cast["message"].as_str().unwrap();
    assert!(
        message.contains("leading key account_id") && message.contains("a cast to text"),
        "{message}"
    );

    for passing in ["latest", "count"] {
        let c = check_of(&report, passing);
        assert_eq!(c["verdict"], "pass", "{c:#}");
    }

    let kinds = check_of(&report, "kinds");
    assert_eq!(kinds["verdict"], "not-usable", "{kinds:#}");
    assert_eq!(kinds["usable"], false, "{kinds:#}");
    assert!(
        kinds["message"].as_str().unwrap().contains("15, 17"),
        "{kinds:#}"
    );

    // The saved measurements judged with no database: the same report and status.
    assert_judged_the_same(saved.path(), &report, 1);
}

#[test]
fn an_invalid_required_index_is_invalid_index_not_the_sql_s_fault() {
    let db = events_db("judgement_invalid");
    // What a cancelled CREATE INDEX CONCURRENTLY leaves behind.
    sql(
        &db,
        "UPDATE pg_index SET indisvalid = false \
         WHERE indexrelid = 'events_live_room'::regclass",
    );
    let dir = project(&[(
        "room",
        "SELECT id FROM events WHERE deleted_at IS NULL AND room = 'room7'",
        &member("events_live_room"),
    )]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1, "{report:#}");
    let c = check_of(&report, "room");
    assert_eq!(c["verdict"], "invalid-index", "{c:#}");
    assert_eq!(c["usable"], serde_json::Value::Null, "{c:#}");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("REINDEX INDEX CONCURRENTLY events_live_room"),
        "{message}"
    );
    assert!(!message.contains("not implied"), "{message}");
}

#[test]
fn a_seq_scan_of_a_large_table_fails_even_under_require_usable() {
    let db = events_db("judgement_large");
    // The planner told random reads are dear: a seq scan wins, the index stays usable.
    let expectation = "[scopes.member]\nindex = \"events_live_room\"\n\
                       settings = { random_page_cost = \"100\" }\n";
    let dir = project(&[(
        "room",
        "SELECT id FROM events WHERE deleted_at IS NULL AND room = 'room7'",
        expectation,
    )]);
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    let c = check_of(&report, "room");
    assert_eq!(c["verdict"], "not-chosen", "{c:#}");
    assert_eq!(c["usable"], true, "{c:#}");
    assert_eq!(c["large_reads"], serde_json::json!(["events"]), "{c:#}");
    assert_eq!(c["warning"], false, "{c:#}");
    assert_eq!(status, 1, "{report:#}");
    // Above --large-rows, the planner's choice is forgiven as before.
    let (status, report) = check_json(
        &db,
        dir.path(),
        &["--require", "usable", "--large-rows", "1000000"],
    );
    let c = check_of(&report, "room");
    assert_eq!(c["warning"], true, "{c:#}");
    assert_eq!(status, 0, "{report:#}");
}

#[test]
fn a_misspelt_index_names_the_nearest_and_a_table_qualified_one_is_called_so() {
    let db = events_db("judgement_typo");
    let dir = project(&[
        (
            "typo",
            "SELECT id FROM events WHERE deleted_at IS NULL AND account_id = 42",
            &member("events_live_acount"),
        ),
        (
            "qualified",
            "SELECT id FROM events WHERE deleted_at IS NULL AND account_id = 42",
            &member("events.events_live_account"),
        ),
    ]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    let typo = check_of(&report, "typo");
    assert_eq!(typo["verdict"], "missing-index");
    assert!(
        typo["message"]
            .as_str()
            .unwrap()
            .contains("did you mean events_live_account (on events)"),
        "{typo:#}"
    );
    // What the read path uses now, in its own field.
    assert!(
        typo["used"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u.as_str().unwrap().contains("events_live_account")),
        "{typo:#}"
    );
    let qualified = check_of(&report, "qualified");
    assert_eq!(qualified["verdict"], "missing-index");
    assert!(
        qualified["message"]
            .as_str()
            .unwrap()
            .contains("`events` is not a schema but a table"),
        "{qualified:#}"
    );
}

#[test]
fn a_scope_accepting_two_indexes_passes_with_either_and_names_the_one_used() {
    let db = events_db("judgement_either");
    let sql_text = "SELECT id FROM events WHERE deleted_at IS NULL AND account_id = 42";
    let dir = project(&[
        (
            "either",
            sql_text,
            "[scopes.member]\nindex = [\"events_live_room\", \"events_live_account\"]\n",
        ),
        (
            "neither",
            sql_text,
            "[scopes.member]\nindex = [\"events_live_room\", \"events_created\"]\n",
        ),
    ]);
    let (status, report) = check_json(&db, dir.path(), &[]);
    let either = check_of(&report, "either");
    assert_eq!(either["verdict"], "pass", "{either:#}");
    assert_eq!(
        either["required_index"], "events_live_account",
        "{either:#}"
    );
    assert_eq!(
        either["accepted_indexes"],
        serde_json::json!(["events_live_room", "events_live_account"])
    );
    let neither = check_of(&report, "neither");
    assert_eq!(neither["verdict"], "not-chosen", "{neither:#}");
    assert_eq!(neither["required_index"], "events_live_room", "{neither:#}");
    assert!(
        neither["message"]
            .as_str()
            .unwrap()
            .contains("Nor events_created, also accepted: not-"),
        "{neither:#}"
    );
    assert_eq!(status, 1);
}

#[test]
fn lint_pairs_a_partial_index_with_the_unfiltered_index_of_another_scope_unless_told_not_to() {
    let db = events_db("judgement_twins");
    let plan = "SELECT id FROM events WHERE deleted_at IS NULL AND account_id = 42";
    let lint = |expectation: &str| {
        let dir = project(&[("pair", plan, expectation)]);
        let out = plancheck(&[
            "lint",
            "--database-url",
            &db,
            "--project",
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // The admin scope's unfiltered index has other keys: drift, reported once.
    let (status, stdout) = lint(
        "[scopes.member]\nindex = \"events_live_account\"\n\
         [scopes.admin]\nindex = \"events_created\"\n",
    );
    assert_eq!(status, Some(1), "{stdout}");
    assert_eq!(stdout.matches("drifted").count(), 1, "{stdout}");
    assert!(stdout.contains("events_created"), "{stdout}");
    // Two partial indexes are not twins.
    let (status, stdout) = lint(
        "[scopes.member]\nindex = \"events_live_account\"\n\
         [scopes.admin]\nindex = \"events_flagged_account\"\n",
    );
    assert_eq!(status, Some(0), "{stdout}");
    // Told it has no twin on purpose: no pairing.
    let (status, stdout) = lint(
        "[scopes.member]\nindex = \"events_live_account\"\ntwin = false\n\
         [scopes.admin]\nindex = \"events_created\"\n",
    );
    assert_eq!(status, Some(0), "{stdout}");
    assert!(stdout.starts_with("no twin drift"), "{stdout}");
}

fn index_count(db: &str) -> String {
    query_text(
        db,
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'events'",
    )
}

#[test]
fn replan_without_rivals_gives_the_planner_s_own_figure_and_leaves_every_index() {
    let db = events_db("judgement_rivals");
    let before = index_count(&db);
    let dir = project(&[(
        "sibling",
        "SELECT id FROM events WHERE deleted_at IS NULL AND account_id = 42",
        &member("events_live_room"),
    )]);
    let (status, report) = check_json(&db, dir.path(), &["--replan-without-rivals"]);
    assert_eq!(status, 1, "{report:#}");
    let c = check_of(&report, "sibling");
    assert_eq!(c["verdict"], "not-chosen", "{c:#}");
    assert_eq!(c["usable"], true, "{c:#}");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("with events_live_account set aside")
            && message.contains("the planner's own plan through events_live_room costs"),
        "{message}"
    );
    // Dropped in a transaction that was rolled back: every index is still there.
    assert_eq!(index_count(&db), before);
    // Without the flag, the message says what would measure the cost.
    let (_, report) = check_json(&db, dir.path(), &[]);
    let message = check_of(&report, "sibling")["message"].as_str().unwrap();
    assert!(
        message.contains("its cost was not measured (--replan-without-rivals measures it")
            && !message.contains("the planner's own plan through"),
        "{message}"
    );
}

#[test]
fn replan_without_rivals_is_refused_on_a_read_only_server_and_with_a_migration() {
    let db = events_db("judgement_rivals_ro");
    let dir = project(&[(
        "sibling",
        "SELECT id FROM events WHERE deleted_at IS NULL AND account_id = 42",
        &member("events_live_room"),
    )]);
    sql(
        &db,
        "ALTER DATABASE judgement_rivals_ro SET default_transaction_read_only = on",
    );
    let out = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--replan-without-rivals",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("read-only by default"), "{stderr}");
    let migration = dir.path().join("m.sql");
    fs::write(&migration, "CREATE INDEX ON events (room);").unwrap();
    let out = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--replan-without-rivals",
        "--migration",
        migration.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn an_allow_seq_scan_entry_naming_no_relation_is_warned_about() {
    let db = events_db("judgement_allow");
    // The stderr and status of `check` on one read path of events allowing `allowed`.
    let check_allowing = |allowed: &str| {
        let dir = project(&[(
            "latest",
            "SELECT id FROM events ORDER BY created_at DESC LIMIT 20",
            &format!("allow_seq_scan = {allowed}\n[scopes.member]\nindex = \"events_created\"\n"),
        )]);
        let out = plancheck(&[
            "check",
            "--database-url",
            &db,
            "--project",
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code(),
        )
    };
    let (stderr, status) = check_allowing("[\"evnts\", \"public.events\"]");
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("allow_seq_scan names `evnts`, which is no relation in the database"),
        "{stderr}"
    );
    // At the entry itself: line 1, column 19 (the opening quote of "evnts").
    assert!(
        stderr.contains("expectations/latest.toml:1:19: allow_seq_scan names `evnts`"),
        "{stderr}"
    );
    assert!(!stderr.contains("`public.events`"), "{stderr}");
    // A schema that does not hold the relation allows nothing either.
    let (stderr, _) = check_allowing("[\"elsewhere.events\"]");
    assert!(
        stderr.contains("allow_seq_scan names `elsewhere.events`, which is no relation"),
        "{stderr}"
    );
}

#[test]
fn usability_is_probed_for_a_partitioned_index_too() {
    let db = fresh_board("judgement_partitioned");
    sql(
        &db,
        "CREATE TABLE pe (id int NOT NULL, flagged boolean NOT NULL) PARTITION BY RANGE (id);
         CREATE TABLE pe_a PARTITION OF pe FOR VALUES FROM (0) TO (100);
         CREATE TABLE pe_b PARTITION OF pe FOR VALUES FROM (100) TO (200);
         INSERT INTO pe SELECT i, i % 7 = 0 FROM generate_series(0, 199) i;
         CREATE INDEX pe_id ON pe (id);
         CREATE INDEX pe_flagged_id ON pe (id) WHERE flagged;",
    );
    sql(&db, "ANALYZE pe");
    let dir = project(&[
        // Tiny partitions: a seq scan is cheaper, a re-plan uses the leaves.
        ("tiny", "SELECT id FROM pe WHERE id = 5", &member("pe_id")),
        // No condition on flagged: no plan can use the partial index's leaves.
        (
            "unflagged",
            "SELECT id FROM pe WHERE id = 5",
            &member("pe_flagged_id"),
        ),
    ]);
    let (_, report) = check_json(&db, dir.path(), &[]);
    let tiny = check_of(&report, "tiny");
    assert_eq!(tiny["verdict"], "not-chosen", "{tiny:#}");
    assert_eq!(tiny["usable"], true, "{tiny:#}");
    assert!(
        tiny["message"]
            .as_str()
            .unwrap()
            .contains("pe_id is usable (a re-plan with"),
        "{tiny:#}"
    );
    let unflagged = check_of(&report, "unflagged");
    assert_eq!(unflagged["verdict"], "not-usable", "{unflagged:#}");
    assert!(
        unflagged["message"]
            .as_str()
            .unwrap()
            .contains("the query puts no condition on flagged"),
        "{unflagged:#}"
    );
}

#[test]
fn judge_refuses_what_it_cannot_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let judge = |path: &std::path::Path| {
        let out = plancheck(&["judge", path.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // No run.json.
    let (status, stderr) = judge(dir.path());
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("no run.json here"), "{stderr}");
    // A newer saved form.
    let run = dir.path().join("run.json");
    fs::write(
        &run,
        r#"{"format": "plancheck-run", "version": 99, "server_version": "18", "checks": []}"#,
    )
    .unwrap();
    let (status, stderr) = judge(dir.path());
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("saved form version 99"), "{stderr}");
    // A listed name that would leave the folder.
    fs::write(
        &run,
        r#"{"format": "plancheck-run", "version": 1, "server_version": "18",
            "checks": ["../outside.json"]}"#,
    )
    .unwrap();
    let (status, stderr) = judge(dir.path());
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        stderr.contains("is not the name of a measurement file"),
        "{stderr}"
    );
    // Broken JSON, located.
    fs::write(&run, "{\n  \"format\": \n").unwrap();
    let (status, stderr) = judge(dir.path());
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("run.json:3:"), "{stderr}");
}

#[test]
fn accept_records_the_plan_and_check_reports_a_changed_shape() {
    let db = events_db("judgement_baseline");
    sql(
        &db,
        "CREATE TABLE accts (id bigint PRIMARY KEY, name text NOT NULL);
         INSERT INTO accts SELECT i, 'a' || i FROM generate_series(0, 49999) i;",
    );
    sql(&db, "ANALYZE accts");
    let dir = project(&[(
        "feed",
        "SELECT e.id, a.name FROM events e JOIN accts a ON a.id = e.account_id\n\
         WHERE e.deleted_at IS NULL AND e.account_id = 42",
        "allow_seq_scan = [\"accts\"]\n[scopes.member]\nindex = \"events_live_account\"\n",
    )]);
    let out = plancheck(&[
        "accept",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let recorded = fs::read_to_string(dir.path().join("baselines/feed.member.plan")).unwrap();
    assert!(
        recorded.contains("Index Scan using accts_pkey on accts")
            && recorded.contains("Bitmap Index Scan using events_live_account"),
        "{recorded}"
    );
    // Nothing changed: a pass.
    let (status, report) = check_json(&db, dir.path(), &[]);
    let c = check_of(&report, "feed");
    assert_eq!(c["verdict"], "pass", "{c:#}");
    assert_eq!(status, 0);
    // The join's other side loses its index: the required index is still used, the plan is not
    // the one accepted.
    sql(&db, "ALTER TABLE accts DROP CONSTRAINT accts_pkey");
    let (status, report) = check_json(&db, dir.path(), &[]);
    let c = check_of(&report, "feed");
    assert_eq!(c["verdict"], "plan-changed", "{c:#}");
    assert_eq!(c["warning"], true, "{c:#}");
    assert_eq!(status, 0, "a changed plan warns: {report:#}");
    let diff: Vec<&str> = c["plan_diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        diff.iter()
            .any(|l| l.starts_with("- ") && l.contains("Index Scan using accts_pkey on accts")),
        "{diff:?}"
    );
    assert!(
        diff.iter()
            .any(|l| l.starts_with("+ ") && l.contains("Seq Scan on accts")),
        "{diff:?}"
    );
    let (status, report) = check_json(&db, dir.path(), &["--strict-plans"]);
    assert_eq!(check_of(&report, "feed")["verdict"], "plan-changed");
    assert_eq!(status, 1, "--strict-plans fails the run: {report:#}");
}

#[test]
// Long because it is one database and one project through every way such a check is judged:
// check, --require usable, judge of the saved run, accept and a changed plan.
fn a_read_path_requiring_no_index_is_held_to_the_whole_read_rule_and_its_budget() {
    let db = events_db("judgement_no_index");
    let none = "[scopes.member]\nindex = false\n";
    let dir = project(&[
        // Rows fetched by key: whatever index the planner takes, nothing is read whole.
        (
            "by-key",
            "SELECT id, room FROM events WHERE id IN (1, 2, 3)",
            none,
        ),
        // A count over every event: events read whole, and no index is required to forgive it.
        ("whole", "SELECT count(*) FROM events WHERE kind = 3", none),
        // Allowed to read events whole: passes the rule, and its budget is what holds it.
        (
            "allowed",
            "SELECT count(*) FROM events WHERE kind = 3",
            "allow_seq_scan = [\"events\"]\nbudget = { buffers = 10 }\n[scopes.member]\n\
             index = false\n",
        ),
    ]);
    let saved = tempfile::tempdir().unwrap();
    let (status, report) = check_json(
        &db,
        dir.path(),
        &["--save-plans", saved.path().to_str().unwrap()],
    );
    assert_eq!(status, 1, "{report:#}");

    let by_key = check_of(&report, "by-key");
    assert_eq!(by_key["verdict"], "pass", "{by_key:#}");
    assert_eq!(
        by_key["required_index"],
        serde_json::Value::Null,
        "{by_key:#}"
    );
    assert_eq!(by_key["seq_scans"], serde_json::json!([]), "{by_key:#}");
    assert!(
        by_key["message"]
            .as_str()
            .unwrap()
            .starts_with("no index is required (index = false)"),
        "{by_key:#}"
    );

    let whole = check_of(&report, "whole");
    assert_eq!(whole["verdict"], "seq-scan", "{whole:#}");
    assert_eq!(
        whole["large_reads"],
        serde_json::json!(["events"]),
        "{whole:#}"
    );
    assert!(
        whole["message"]
            .as_str()
            .unwrap()
            .contains("allow_seq_scan = [\"events\"]"),
        "{whole:#}"
    );

    let allowed = check_of(&report, "allowed");
    assert_eq!(allowed["verdict"], "over-budget", "{allowed:#}");

    // `--require usable` forgives no large whole read, index or none.
    let (_, usable) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_eq!(check_of(&usable, "whole")["verdict"], "seq-scan");
    assert_eq!(check_of(&usable, "whole")["warning"], false);

    // The saved measurements judged with no database: the same report and status.
    assert_judged_the_same(saved.path(), &report, 1);

    // A baseline holds a plan with no required index as any other.
    let out = plancheck(&[
        "accept",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--only",
        "by-key",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    fs::write(
        dir.path().join("plans/by-key.sql"),
        "SELECT id, room FROM events WHERE id IN (1, 2, 3) ORDER BY room",
    )
    .unwrap();
    let (_, report) = check_json(&db, dir.path(), &["--only", "by-key"]);
    let by_key = check_of(&report, "by-key");
    assert_eq!(by_key["verdict"], "plan-changed", "{by_key:#}");
    assert!(
        by_key["message"]
            .as_str()
            .unwrap()
            .contains("still reading nothing whole but what allow_seq_scan allows"),
        "{by_key:#}"
    );
}
