//! The attack corpus: project files (plans, expectations, plancheck.toml, a migration) written
//! as an attacker would write them in a pull request, run by the real binary against a copy of
//! the reference board while connected as a superuser, as CI usually is. After each run a second
//! session looks at what is on the server: the victim table and its rows, roles, a sequence,
//! prepared transactions, locks, statistics counters, sessions. `tests/attacks/README.md` lists
//! every attempt, what it must produce and the test that holds it.

#[path = "attacks/bounded.rs"]
mod bounded;
mod common;
#[path = "attacks/copy.rs"]
mod copy;
#[path = "attacks/demo_cache.rs"]
mod demo_cache;
#[path = "attacks/files.rs"]
mod files;
#[path = "attacks/hidden_reads.rs"]
mod hidden_reads;
#[path = "attacks/ladder.rs"]
mod ladder;
#[path = "attacks/markup.rs"]
mod markup;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

#[path = "attacks/holds_and_readers.rs"]
mod holds_and_readers;
#[path = "attacks/round_two.rs"]
mod round_two;
#[path = "attacks/scratch.rs"]
mod scratch;
#[path = "attacks/secrets.rs"]
mod secrets;
#[path = "attacks/whole_reads.rs"]
mod whole_reads;
#[path = "attacks/wire.rs"]
mod wire;

/// The harmless read path: a member's thread page, off the partial index.
const PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = $1 AND p.visibility = 'visible'\n\
    ORDER BY p.created_at, p.id LIMIT 20";

const INDEX: &str = "posts_thread_visible_idx";

/// What the attacks aim at: a table with five rows and a serial id.
const VICTIM: &str = "DROP TABLE IF EXISTS victim; \
    CREATE TABLE victim (id serial PRIMARY KEY, note text); \
    INSERT INTO victim (note) SELECT 'row ' || g FROM generate_series(1, 5) g";

/// [`victim`] of an untouched victim table.
const INTACT: &str = "victim: 5 rows, ids beyond 5: none";

/// How long a run's sessions may outlive it.
const SESSIONS_END: Duration = Duration::from_secs(15);

// ----------------------------------------------------------------------------------------------
// Helpers: projects, runs, and what a second session sees.

/// An expectation requiring [`INDEX`] in scope `member`; `scope` is added to that scope's table.
fn expectation(params: bool, scope: &str) -> String {
    let params = if params { "params = [1]\n" } else { "" };
    format!("{params}[scopes.member]\nindex = \"{INDEX}\"\n{scope}")
}

/// `setup = [...]`, each statement a TOML string, escaped as TOML escapes.
fn setup_line(statements: &[&str]) -> String {
    let items: Vec<String> = statements
        .iter()
        .map(|s| toml::Value::String(s.to_string()).to_string())
        .collect();
    format!("setup = [{}]\n", items.join(", "))
}

/// `check` of the reference project's thread-page-first before and after a migration.
fn check_migration(db: &str, project: &Path, only: Option<&str>, sql: &str) -> Run {
    let migration = temp_file("attack.sql", sql);
    let mut extra = vec!["--migration", migration.arg()];
    if let Some(only) = only {
        extra.extend(["--only", only]);
    }
    check(db, project, &extra)
}

/// The verdict of the only check of a report, and the verdict it had before a migration.
fn only_check(run: &Run) -> (String, String) {
    let report = run.report();
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), 1, "{}", run.shown());
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    (
        text(&checks[0]["verdict"]),
        text(&checks[0]["before"]["verdict"]),
    )
}

fn make_victim(db: &str) {
    sql(db, VICTIM);
}

/// The victim table as a second session sees it: [`INTACT`] when nothing touched it.
fn victim(db: &str) -> String {
    if query_text(db, "SELECT to_regclass('victim') IS NULL") == "t" {
        return "victim: gone".into();
    }
    query_text(
        db,
        "SELECT format('victim: %s rows, ids beyond 5: %s', count(*), \
                coalesce(string_agg(id::text, ',' ORDER BY id) FILTER (WHERE id > 5), 'none')) \
         FROM victim",
    )
}

/// What any attack could leave on the server: the victim, prepared transactions, locks on
/// posts held by anyone but this session (a prepared transaction's have no pid), and how often
/// posts was analysed (ANALYZE reports it at once, and a rollback does not take it back).
fn server_state(db: &str) -> String {
    let rest = query_text(
        db,
        "SELECT format('prepared transactions: %s; locks on posts: %s; posts analysed %s times', \
            (SELECT count(*) FROM pg_prepared_xacts), \
            (SELECT count(*) FROM pg_locks l \
             WHERE l.relation = 'posts'::regclass \
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
               AND l.pid IS DISTINCT FROM pg_backend_pid() \
               AND NOT EXISTS (SELECT FROM pg_stat_activity a \
                               WHERE a.pid = l.pid AND a.backend_type = 'autovacuum worker')), \
            (SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'posts'))",
    );
    format!("{}; {rest}", victim(db))
}

fn role_exists(db: &str, role: &str) -> bool {
    query_text(
        db,
        &format!("SELECT count(*) FROM pg_roles WHERE rolname = '{role}'"),
    ) != "0"
}

/// Drops a role an attack may have created: roles belong to the whole server, which every test
/// of this file shares.
struct DropRole<'a> {
    db: &'a str,
    role: &'static str,
}

impl Drop for DropRole<'_> {
    fn drop(&mut self) {
        let _ = try_sql(self.db, &format!("DROP ROLE IF EXISTS {}", self.role));
    }
}

/// Rolls back a prepared transaction an attack may have left, and with it its locks.
struct RollbackPrepared<'a> {
    db: &'a str,
    gid: &'static str,
}

impl Drop for RollbackPrepared<'_> {
    fn drop(&mut self) {
        let _ = try_sql(self.db, &format!("ROLLBACK PREPARED '{}'", self.gid));
    }
}

// ----------------------------------------------------------------------------------------------
// 1. Injection through a plan file or a fragment: a plan file holds one statement.

// A parameterised plan file (sent through PREPARE) smuggles COMMIT, DROP TABLE and CREATE ROLE.
#[test]
fn injection_through_a_parameterised_plan_file_commits_nothing() {
    let db = fresh_board("attack_inject_params");
    make_victim(&db);
    let _role = DropRole {
        db: &db,
        role: "pwned_params",
    };
    let plan = "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible' \
                LIMIT 20; COMMIT; DROP TABLE victim; CREATE ROLE pwned_params SUPERUSER LOGIN";
    let dir = project(&[
        ("plans/x.sql", plan),
        ("expectations/x.toml", &expectation(true, "")),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert_eq!(victim(&db), INTACT, "{}", run.shown());
    // The control: the same look at pg_roles finds a role that exists (the test's own).
    assert!(role_exists(&db, "plancheck"));
    assert!(
        !role_exists(&db, "pwned_params"),
        "the attack created a superuser\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(2), "{}", run.shown());
}

// The same plan file without parameters (sent as it is).
#[test]
fn injection_through_a_plan_file_without_parameters_commits_nothing() {
    let db = fresh_board("attack_inject_plain");
    make_victim(&db);
    let _role = DropRole {
        db: &db,
        role: "pwned_plain",
    };
    let plan = "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND p.visibility = 'visible' \
                LIMIT 20; COMMIT; DROP TABLE victim; CREATE ROLE pwned_plain SUPERUSER LOGIN";
    let dir = project(&[
        ("plans/x.sql", plan),
        ("expectations/x.toml", &expectation(false, "")),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert_eq!(victim(&db), INTACT, "{}", run.shown());
    assert!(!role_exists(&db, "pwned_plain"), "{}", run.shown());
    assert_eq!(run.status, Some(2), "{}", run.shown());
}

// A fragment value in plancheck.toml closes the statement and commits, with and without
// parameters in the plan.
#[test]
fn injection_through_a_fragment_value_commits_nothing() {
    let db = fresh_board("attack_inject_fragment");
    let config = "[scopes.member]\n\
                  fragments = { frag = \"true; COMMIT; DROP TABLE victim; --\" }\n";
    let mut failures = Vec::new();
    // The fragment's `--` comments out the rest of its line, so the statement parses whole.
    for (params, plan) in [
        (
            false,
            "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND {{frag}} ORDER BY p.id LIMIT 20",
        ),
        (
            true,
            "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND {{frag}} ORDER BY p.id LIMIT 20",
        ),
    ] {
        make_victim(&db);
        let dir = project(&[
            ("plancheck.toml", config),
            ("plans/x.sql", plan),
            ("expectations/x.toml", &expectation(params, "")),
        ]);
        let run = check(&db, dir.path(), &[]);
        let left = victim(&db);
        if left != INTACT || run.status != Some(2) {
            failures.push(format!(
                "with parameters: {params}: {left}, wanted exit 2 and {INTACT}\n{}",
                run.shown()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// A plan file that commits, then prepares a transaction holding an exclusive lock on posts:
// on a server with prepared transactions that lock outlives the run and hangs the next reader.
#[test]
fn a_prepared_transaction_smuggled_in_a_plan_file_leaves_no_lock_and_no_hang() {
    let db = fresh_board("attack_prepare_xact");
    let _cleanup = RollbackPrepared {
        db: &db,
        gid: "attack_prepared",
    };
    // The test server allows prepared transactions (tests/common/server.rs), so the lock could
    // outlive the run if plancheck let the statements through.
    assert_ne!(query_text(&db, "SHOW max_prepared_transactions"), "0");
    let plan = "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible' \
                LIMIT 20; COMMIT; BEGIN; LOCK TABLE posts IN ACCESS EXCLUSIVE MODE; \
                PREPARE TRANSACTION 'attack_prepared'";
    let dir = project(&[
        ("plans/x.sql", plan),
        ("expectations/x.toml", &expectation(true, "")),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert!(
        run.took < Duration::from_secs(10),
        "the run took {:.1?}\n{}",
        run.took,
        run.shown()
    );
    wait_for_sessions_to_end(&db, SESSIONS_END);
    assert_eq!(
        query_text(&db, "SELECT count(*) FROM pg_prepared_xacts"),
        "0",
        "{}",
        run.shown()
    );
    assert_eq!(
        query_text(
            &db,
            // This database's posts only (every test's copy of the board has the same oid),
            // and no autovacuum worker's lock.
            "SELECT count(*) FROM pg_locks WHERE relation = 'posts'::regclass \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND pid IS DISTINCT FROM pg_backend_pid() \
             AND NOT EXISTS (SELECT FROM pg_stat_activity a \
                             WHERE a.pid = pg_locks.pid AND a.backend_type = 'autovacuum worker')"
        ),
        "0",
        "a lock on posts outlived the run\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(2), "{}", run.shown());
}

// ----------------------------------------------------------------------------------------------
// 2. Setup statements: what they may not do is refused before anything runs.

/// How a setup attempt must end.
#[derive(Clone, Copy, PartialEq)]
enum Wanted {
    /// Exit 2, refused before anything runs.
    Refused,
    /// Any exit but 0 (what PostgreSQL refuses by itself may be an `error`).
    NotAPass,
}

/// Runs each setup, given once in the expectation's scope and once in plancheck.toml's, on a
/// fresh victim; returns what went wrong.
fn attempt_setups(db: &str, cases: &[(&[&str], Wanted)]) -> Vec<String> {
    let mut failures = Vec::new();
    for (setup, wanted) in cases {
        for place in ["the expectation", "plancheck.toml"] {
            make_victim(db);
            let before = server_state(db);
            let line = setup_line(setup);
            let (scope, config) = if place == "plancheck.toml" {
                (String::new(), format!("[scopes.member]\n{line}"))
            } else {
                (line.clone(), String::new())
            };
            let exp = expectation(true, &scope);
            let mut files = vec![("plans/page.sql", PAGE), ("expectations/page.toml", &exp)];
            if !config.is_empty() {
                files.push(("plancheck.toml", &config));
            }
            let dir = project(&files);
            let run = check(db, dir.path(), &[]);
            let after = server_state(db);
            let status_ok = match wanted {
                Wanted::Refused => run.status == Some(2),
                Wanted::NotAPass => run.status.is_some_and(|s| s != 0),
            };
            let mut wrong = Vec::new();
            if !status_ok {
                let want = match wanted {
                    Wanted::Refused => "exit 2",
                    Wanted::NotAPass => "a non-zero exit",
                };
                wrong.push(format!("exit {:?}, wanted {want}", run.status));
            }
            if after != before {
                wrong.push(format!("the server changed: `{before}` became `{after}`"));
            }
            if !wrong.is_empty() {
                failures.push(format!(
                    "{} (in {place}): {}\n    stderr: {}",
                    line.trim(),
                    wrong.join("; "),
                    run.stderr.trim().replace('\n', "\n    ")
                ));
            }
        }
    }
    failures
}

fn assert_no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} attempt(s) went wrong:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// Transaction control hidden from a client-side guard (a nested comment, a comment ended by a
// carriage return), and every plain spelling of it.
#[test]
fn setup_that_hides_transaction_control_is_refused_before_anything_runs() {
    let db = fresh_board("attack_setup_control");
    let cases: &[(&[&str], Wanted)] = &[
        (
            &[
                "/* a /* b */ c */ COMMIT",
                "INSERT INTO victim VALUES (99)",
                "DROP TABLE victim",
            ],
            Wanted::Refused,
        ),
        (
            &[
                "-- x\rCOMMIT",
                "INSERT INTO victim VALUES (99)",
                "DROP TABLE victim",
            ],
            Wanted::Refused,
        ),
        (&["BEGIN"], Wanted::Refused),
        (&["START TRANSACTION"], Wanted::Refused),
        (&["END"], Wanted::Refused),
        (&["ABORT"], Wanted::Refused),
        (&["SAVEPOINT s"], Wanted::Refused),
        (&["PREPARE TRANSACTION 'x'"], Wanted::Refused),
        // PostgreSQL reads `COMMIT` and a no-break space as one identifier: a syntax error.
        (
            &["COMMIT\u{a0}", "INSERT INTO victim VALUES (99)"],
            Wanted::NotAPass,
        ),
    ];
    assert_no_failures(&attempt_setups(&db, cases));
}

// Setup that lifts the check's bounds or its read-only mode.
#[test]
fn setup_that_lifts_a_bound_is_refused_before_anything_runs() {
    let db = fresh_board("attack_setup_bounds");
    let cases: &[(&[&str], Wanted)] = &[
        (&["SET /**/ LOCAL statement_timeout = 0"], Wanted::Refused),
        (&["RESET statement_timeout"], Wanted::Refused),
        (&["RESET ALL"], Wanted::Refused),
        (
            &["SELECT set_config('statement_timeout', '0', true)"],
            Wanted::Refused,
        ),
        (&["SET LOCAL transaction_read_only = off"], Wanted::Refused),
    ];
    assert_no_failures(&attempt_setups(&db, cases));
}

// Setup that changes the plan (a planner setting), locks a table or analyses one.
#[test]
fn setup_that_changes_the_plan_locks_or_analyses_is_refused_before_anything_runs() {
    let db = fresh_board("attack_setup_planner");
    let cases: &[(&[&str], Wanted)] = &[
        (&["SET LOCAL enable_seqscan = off"], Wanted::Refused),
        (
            &["LOCK TABLE posts IN ACCESS EXCLUSIVE MODE"],
            Wanted::Refused,
        ),
        (&["ANALYZE posts"], Wanted::Refused),
    ];
    assert_no_failures(&attempt_setups(&db, cases));
}

// A setting name built at run time lifts statement_timeout: no client sees it, the read path
// must still be cut at --statement-timeout (or never run).
#[test]
fn statement_timeout_lifted_by_a_computed_set_config_still_bounds_the_read_path() {
    let db = fresh_board("attack_timeout_computed");
    let plan = "SELECT p.id FROM posts p\n\
                WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
                  AND (SELECT count(*) FROM pg_sleep(3)) = 1\n\
                ORDER BY p.created_at, p.id LIMIT 20";
    let scope = setup_line(&["SELECT set_config('statement' || '_timeout', '0', true)"]);
    let dir = project(&[
        ("plans/slow.sql", plan),
        ("expectations/slow.toml", &expectation(false, &scope)),
    ]);
    // Two runs of 3 s each had the bound been lifted.
    let run = check(
        &db,
        dir.path(),
        &[
            "--statement-timeout",
            "1s",
            "--warmup",
            "0",
            "--iterations",
            "2",
        ],
    );
    assert!(
        run.took < Duration::from_secs(3),
        "the read path ran unbounded: {:.1?}\n{}",
        run.took,
        run.shown()
    );
    assert_eq!(only_check(&run).0, "error", "{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
}

// A setting name built at run time makes the transaction read-write, then a data-modifying CTE.
#[test]
fn read_only_lifted_by_a_computed_set_config_writes_nothing() {
    let db = fresh_board("attack_readonly_computed");
    make_victim(&db);
    let plan = "WITH w AS (INSERT INTO victim VALUES (7) RETURNING 1)\n\
                SELECT p.id FROM posts p\n\
                WHERE p.thread_id = 1 AND p.visibility = 'visible' AND EXISTS (SELECT 1 FROM w)\n\
                ORDER BY p.created_at, p.id LIMIT 20";
    let scope = setup_line(&[
        "SELECT set_config('transaction_read' || '_only', 'off', true)",
        "SELECT 1",
    ]);
    let dir = project(&[
        ("plans/w.sql", plan),
        ("expectations/w.toml", &expectation(false, &scope)),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert_eq!(victim(&db), INTACT, "{}", run.shown());
    assert_eq!(only_check(&run).0, "error", "{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
}

// A planner setting built at run time (enable_seqscan off) would make any index look chosen.
#[test]
fn a_planner_setting_changed_by_a_computed_set_config_is_an_error_not_a_pass() {
    let db = fresh_board("attack_planner_computed");
    let scope = setup_line(&["SELECT set_config('enable_' || 'seqscan', 'off', true)"]);
    let dir = project(&[
        ("plans/page.sql", PAGE),
        ("expectations/page.toml", &expectation(true, &scope)),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert_eq!(only_check(&run).0, "error", "{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
}

// ----------------------------------------------------------------------------------------------
// 3. Migrations: read as PostgreSQL reads them, refused before anything runs.

// An E'' string whose \' a naive splitter takes for its end hides BEGIN … DROP INDEX … COMMIT.
#[test]
fn a_migration_hiding_a_commit_behind_an_escaped_quote_is_refused_and_drops_nothing() {
    let db = fresh_board("attack_migration_estring");
    // The board may carry a comment of its own: whatever it is, it must stay.
    let comment = || {
        query_text(
            &db,
            "SELECT coalesce(obj_description('posts'::regclass, 'pg_class'), '(none)')",
        )
    };
    let comment_before = comment();
    let run = check_migration(
        &db,
        &reference_project(),
        Some("thread-page-first"),
        "COMMENT ON TABLE posts IS E'Don\\'t touch';\n\
         BEGIN;\nDROP INDEX posts_thread_visible_idx;\nCOMMIT;\n",
    );
    assert!(
        relation_exists(&db, "posts_thread_visible_idx"),
        "the migration's DROP INDEX was committed\n{}",
        run.shown()
    );
    assert_eq!(
        comment(),
        comment_before,
        "the migration's COMMENT was committed\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(2), "{}", run.shown());
}

// A nested comment a naive guard ends at the first `*/` hides the COMMIT after it.
#[test]
fn a_migration_hiding_a_commit_behind_a_nested_comment_is_refused() {
    let db = fresh_board("attack_migration_nested");
    let mut failures = Vec::new();
    for sql in [
        "/* a /* b */ c */ COMMIT;\n",
        "/* a /* b */ c */ COMMIT;\nDROP INDEX posts_thread_visible_idx;\n",
    ] {
        let run = check_migration(&db, &reference_project(), Some("thread-page-first"), sql);
        if run.status != Some(2) || !relation_exists(&db, "posts_thread_visible_idx") {
            failures.push(format!(
                "{sql:?}: index still there: {}, wanted exit 2\n{}",
                relation_exists(&db, "posts_thread_visible_idx"),
                run.shown()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// A migration that lifts the bounds (or changes the planner) for the checks after it, pg_dump's
// header among them.
#[test]
fn a_migration_that_lifts_a_bound_or_sets_the_planner_is_refused() {
    let db = fresh_board("attack_migration_bounds");
    let pg_dump_header = "SET statement_timeout = 0;\nSET lock_timeout = 0;\n\
        SET idle_in_transaction_session_timeout = 0;\nSET client_encoding = 'UTF8';\n\
        SET standard_conforming_strings = on;\n";
    let mut failures = Vec::new();
    for sql in [
        "SET lock_timeout = 0;\n",
        "SET statement_timeout = 0;\n",
        "SET enable_seqscan = off;\n",
        pg_dump_header,
    ] {
        let run = check_migration(&db, &reference_project(), Some("thread-page-first"), sql);
        let named = run.stderr.contains("lock_timeout") || run.stderr.contains("statement_timeout");
        if run.status != Some(2) || (sql == pg_dump_header && !named) {
            failures.push(format!(
                "{sql:?}: wanted exit 2{}\n{}",
                if sql == pg_dump_header {
                    " naming lock_timeout or statement_timeout"
                } else {
                    ""
                },
                run.shown()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// COMMIT inside PL/pgSQL (a DO block, a procedure): PostgreSQL refuses it in the open
// transaction, so the migration fails and nothing after it is kept.
#[test]
fn a_commit_inside_plpgsql_fails_the_migration_and_drops_nothing() {
    let db = fresh_board("attack_migration_plpgsql");
    let mut failures = Vec::new();
    for sql in [
        "DO $$ BEGIN COMMIT; END $$;\nDROP INDEX posts_thread_visible_idx;\n",
        "CREATE PROCEDURE p() LANGUAGE plpgsql AS $$ BEGIN COMMIT; END $$;\n\
         CALL p();\nDROP INDEX posts_thread_visible_idx;\n",
    ] {
        let run = check_migration(&db, &reference_project(), Some("thread-page-first"), sql);
        let index = relation_exists(&db, "posts_thread_visible_idx");
        let procedure = query_text(
            &db,
            "SELECT count(*) FROM pg_proc \
             WHERE proname = 'p' AND pronamespace = 'public'::regnamespace",
        );
        if run.status != Some(2) || !index || procedure != "0" {
            failures.push(format!(
                "{sql:?}: index still there: {index}, procedures p: {procedure}, wanted exit 2\n{}",
                run.shown()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A project with one read path that writes, on a victim table, and a harmless migration.
fn writing_read_path(plan: &str) -> tempfile::TempDir {
    project(&[
        ("plans/w.sql", plan),
        ("expectations/w.toml", &expectation(false, "")),
    ])
}

// Under --migration the checks run in savepoints of a read-write transaction: a read path's
// data-modifying CTE must still be an error, before and after.
#[test]
fn a_read_path_that_writes_under_a_migration_is_an_error_and_writes_nothing() {
    let db = fresh_board("attack_migration_write");
    make_victim(&db);
    let dir = writing_read_path(
        "WITH w AS (INSERT INTO victim VALUES (7) RETURNING 1)\n\
         SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible' AND EXISTS (SELECT 1 FROM w)\n\
         ORDER BY p.created_at, p.id LIMIT 20",
    );
    let run = check_migration(
        &db,
        dir.path(),
        None,
        "CREATE INDEX victim_idx ON victim (id);\n",
    );
    assert_eq!(victim(&db), INTACT, "{}", run.shown());
    assert!(!relation_exists(&db, "victim_idx"), "{}", run.shown());
    let (after, before) = only_check(&run);
    assert_eq!(before, "error", "before the migration\n{}", run.shown());
    assert_eq!(after, "error", "after the migration\n{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
}

// nextval() is not undone by a rollback: a read path that calls it under --migration is an
// error and the sequence stays where it was.
#[test]
fn a_read_path_that_advances_a_sequence_under_a_migration_is_an_error_and_leaves_it() {
    let db = fresh_board("attack_migration_nextval");
    make_victim(&db);
    let last_value = || query_text(&db, "SELECT last_value FROM victim_id_seq");
    let before_run = last_value();
    let dir = writing_read_path(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
           AND (SELECT nextval('victim_id_seq')) > 0\n\
         ORDER BY p.created_at, p.id LIMIT 20",
    );
    let run = check_migration(
        &db,
        dir.path(),
        None,
        "CREATE INDEX victim_idx ON victim (id);\n",
    );
    assert_eq!(
        last_value(),
        before_run,
        "the sequence moved\n{}",
        run.shown()
    );
    let (after, before) = only_check(&run);
    assert_eq!(before, "error", "before the migration\n{}", run.shown());
    assert_eq!(after, "error", "after the migration\n{}", run.shown());
}

// ANALYZE of an existing table is not rolled back with the migration: its counters (what
// autovacuum decides on) and its analyse times must be as they were.
#[test]
fn a_migration_does_not_analyse_existing_tables() {
    let db = fresh_board("attack_migration_analyze");
    // Rows changed since the last ANALYZE, which an ANALYZE would reset.
    sql(&db, "UPDATE posts SET body = body WHERE id <= 200");
    let figures = || {
        query_text(
            &db,
            "SELECT format('n_mod_since_analyze %s, last_analyze %s, last_autoanalyze %s, \
                            analyze_count %s', \
                           n_mod_since_analyze, last_analyze, last_autoanalyze, analyze_count) \
             FROM pg_stat_user_tables WHERE relname = 'posts'",
        )
    };
    // The updating session flushes its counters as it ends.
    let shown = wait_until(within(Duration::from_secs(5)), || {
        figures().starts_with("n_mod_since_analyze 200,")
    });
    assert!(shown, "the update never showed: {}", figures());
    let before = figures();
    let run = check_migration(
        &db,
        &reference_project(),
        Some("thread-page-first"),
        "CREATE INDEX posts_extra_idx ON posts (author_id);\n",
    );
    assert!(
        matches!(run.status, Some(0 | 1)),
        "wanted exit 0 or 1\n{}",
        run.shown()
    );
    // The migration was applied: every check has its verdict from before it too.
    let report = run.report();
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), 2, "{}", run.shown());
    for c in &checks {
        assert!(c["before"]["verdict"].is_string(), "{}", run.shown());
    }
    wait_for_sessions_to_end(&db, SESSIONS_END);
    assert_eq!(figures(), before, "posts was analysed\n{}", run.shown());
    assert!(!relation_exists(&db, "posts_extra_idx"), "{}", run.shown());
}

// ----------------------------------------------------------------------------------------------
// 4. Path steering through --save-plans.

/// Runs `check --save-plans` on a project inside a workspace (`workspace/project`, the plans
/// folder its `out/`); returns the run and every file it wrote anywhere in the workspace's
/// temporary folder, relative to that folder.
fn save_plans_into(db: &str, files: &[(&str, &str)]) -> (Run, BTreeSet<String>) {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("workspace/project");
    write_files(&project, files);
    let out = project.join("out");
    fs::create_dir_all(&out).unwrap();
    let before = files_under(root.path());
    let run = check(db, &project, &["--save-plans", out.to_str().unwrap()]);
    let written = files_under(root.path())
        .into_iter()
        .filter(|p| !before.contains(p))
        .map(|p| {
            p.strip_prefix(root.path())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    (run, written)
}

// The control for the two attacks below: the listing of what a run writes sees the plans
// folder filled, so an attack's empty listing means nothing was written.
#[test]
fn save_plans_of_a_harmless_project_writes_only_into_its_folder() {
    let db = fresh_board("attack_save_plans_control");
    let (run, written) = save_plans_into(
        &db,
        &[
            ("plans/p.sql", PAGE),
            ("expectations/p.toml", &expectation(true, "")),
        ],
    );
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert_eq!(
        written,
        BTreeSet::from([
            "workspace/project/out/p.member.json".to_string(),
            "workspace/project/out/run.json".to_string(),
        ]),
        "{}",
        run.shown()
    );
}

// A scope name with `../` in it names the file --save-plans writes; the pull request also ships
// folders inside the artifact folder for the path to walk through.
#[test]
fn a_scope_name_that_walks_out_of_the_save_plans_folder_is_refused() {
    let db = fresh_board("attack_scope_path");
    let exp = format!(
        "params = [1]\n\
         [scopes.\"../../x\"]\nindex = \"{INDEX}\"\n\
         [scopes.\"a/../../../x\"]\nindex = \"{INDEX}\"\n"
    );
    let (run, written) = save_plans_into(
        &db,
        &[
            ("plancheck.toml", "[scopes.\"../../x\"]\nsetup = []\n"),
            ("plans/p.sql", PAGE),
            ("expectations/p.toml", &exp),
            ("out/p.../.keep", ""),
            ("out/p.a/.keep", ""),
        ],
    );
    // Refused before anything runs: nothing written, in the plans folder or outside it.
    assert!(
        written.is_empty(),
        "written by a refused run: {written:?}\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(2), "{}", run.shown());
}

// A read path whose file name starts with dots (plans/..evil.sql).
#[test]
fn a_read_path_named_with_leading_dots_is_refused() {
    let db = fresh_board("attack_dot_path");
    let exp = expectation(true, "");
    let (run, written) = save_plans_into(
        &db,
        &[
            ("plans/p.sql", PAGE),
            ("expectations/p.toml", &exp),
            ("plans/..evil.sql", PAGE),
            ("expectations/..evil.toml", &exp),
        ],
    );
    assert!(
        written.is_empty(),
        "written by a refused run: {written:?}\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(2), "{}", run.shown());
}

// ----------------------------------------------------------------------------------------------
// 5. Lost connection.

// A read path that terminates its own backend: the database failed underneath, exit 3.
#[test]
fn a_read_path_that_terminates_its_own_session_exits_3() {
    let db = fresh_board("attack_terminate");
    let dir = project(&[
        (
            "plans/t.sql",
            "SELECT pg_terminate_backend(pg_backend_pid())",
        ),
        ("expectations/t.toml", &expectation(false, "")),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert_eq!(run.status, Some(3), "{}", run.shown());
    assert_eq!(only_check(&run).0, "error", "{}", run.shown());
    // No plancheck session is left behind (the wait fails the test, naming them, if one is).
    wait_for_sessions_to_end(&db, SESSIONS_END);
}

// ----------------------------------------------------------------------------------------------
// 6. Whole-table reads that are neither a Seq Scan nor an index scan.

// TABLESAMPLE SYSTEM (100) reads every page of posts through a Sample Scan.
#[test]
fn a_sample_scan_of_the_whole_table_does_not_pass_as_index_use() {
    let db = fresh_board("attack_tablesample");
    let dir = project(&[
        (
            "plans/s.sql",
            "SELECT p.id FROM posts p TABLESAMPLE SYSTEM (100)\n\
             WHERE p.thread_id = 1 AND p.visibility = 'visible'",
        ),
        ("expectations/s.toml", &expectation(false, "")),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert_ne!(only_check(&run).0, "pass", "{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
}

// The required index serves the page while an InitPlan reads all of posts through a Sample
// Scan or a TID Range Scan (PostgreSQL 14+): a whole-table read beside the index.
#[test]
fn a_whole_table_read_beside_the_required_index_does_not_pass() {
    let db = fresh_board("attack_whole_beside");
    assert!(
        server_version_num(&db) >= 140000,
        "this test needs PostgreSQL 14 or later (TID Range Scans); CI runs it on 15 and 18"
    );
    let mut failures = Vec::new();
    for (node, plan) in [
        (
            "Sample Scan",
            "SELECT p.id FROM posts p\n\
             WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
               AND p.id > (SELECT count(*) FROM posts q TABLESAMPLE SYSTEM (100)) - 100000000\n\
             ORDER BY p.created_at, p.id LIMIT 20",
        ),
        (
            "Tid Range Scan",
            "SELECT p.id FROM posts p\n\
             WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
               AND p.id > (SELECT count(*) FROM posts q WHERE q.ctid >= '(0,0)'::tid) - 100000000\n\
             ORDER BY p.created_at, p.id LIMIT 20",
        ),
    ] {
        // The premise, from a second session: the plan reads posts whole beside the index.
        let tree = explain_text(&db, plan);
        assert!(
            tree.contains(node) && tree.contains(INDEX),
            "the plan is not what this test is about:\n{tree}"
        );
        let dir = project(&[
            ("plans/b.sql", plan),
            ("expectations/b.toml", &expectation(false, "")),
        ]);
        let run = check(&db, dir.path(), &[]);
        let verdict = only_check(&run).0;
        if verdict == "pass" || run.status != Some(1) {
            failures.push(format!(
                "{node}: verdict {verdict}, wanted not a pass and exit 1\n{}",
                run.shown()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ----------------------------------------------------------------------------------------------
// 7. The role plancheck connects as.

// Connected as a superuser (whose read path can reach outside the transaction through
// functions), the run warns on stderr and in the report.
#[test]
fn a_superuser_connection_is_warned_about() {
    let db = fresh_board("attack_role_warn");
    let dir = project(&[
        ("plans/page.sql", PAGE),
        ("expectations/page.toml", &expectation(true, "")),
    ]);
    let run = check(&db, dir.path(), &[]);
    assert!(run.stderr.contains("superuser"), "{}", run.shown());
    let report = run.report();
    let warnings = report["role_warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no role_warnings array\n{}", run.shown()));
    assert!(
        warnings.iter().any(|w| w["right"] == "superuser"),
        "{warnings:?}"
    );
}

// With --strict-role a superuser connection is bad input, and no check runs.
#[test]
fn strict_role_refuses_a_superuser_before_any_check_runs() {
    let db = fresh_board("attack_role_strict");
    let scans = || {
        query_text(
            &db,
            &format!("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = '{INDEX}'"),
        )
    };
    let before = scans();
    let dir = project(&[
        ("plans/page.sql", PAGE),
        ("expectations/page.toml", &expectation(true, "")),
    ]);
    let run = check(&db, dir.path(), &["--strict-role"]);
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains("superuser"), "{}", run.shown());
    assert!(!run.stdout.contains("\"checks\""), "{}", run.shown());
    // A check would have read the index, and a session flushes its counts before it leaves
    // pg_stat_activity (PostgreSQL 15+): once the run's sessions are gone, the count is final.
    wait_for_sessions_to_end(&db, SESSIONS_END);
    assert_eq!(scans(), before, "a check ran\n{}", run.shown());
    // The control: without --strict-role the same project's check runs, and the count shows it
    // at the same point. Without it, an unchanged count could mean only that it was read early.
    let run = check(&db, dir.path(), &[]);
    assert_eq!(only_check(&run).0, "pass", "{}", run.shown());
    wait_for_sessions_to_end(&db, SESSIONS_END);
    assert_ne!(
        scans(),
        before,
        "the control's check did not show in idx_scan\n{}",
        run.shown()
    );
}

// ----------------------------------------------------------------------------------------------
// 8. A server that stops answering.

/// Sends SIGCONT to a stopped backend, whatever happens to the test.
struct Continue(libc::pid_t);

impl Drop for Continue {
    fn drop(&mut self) {
        // SAFETY: signalling a process of the test's own server.
        unsafe {
            libc::kill(self.0, libc::SIGCONT);
        }
    }
}

/// Kills the run if the test ends before it does.
struct Reap(Option<std::process::Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// The check's backend is stopped (SIGSTOP) mid-statement: no server-side timeout can fire, so
// only a client-side clock ends the run: exit 3, the check an `error`.
#[test]
fn a_stopped_backend_cannot_hang_the_run() {
    let db = fresh_board("attack_hung");
    let dir = project(&[
        (
            "plans/sleepy.sql",
            "SELECT p.id FROM posts p\n\
             WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
               AND (SELECT count(*) FROM pg_sleep(0.5)) = 1\n\
             ORDER BY p.created_at, p.id LIMIT 20",
        ),
        ("expectations/sleepy.toml", &expectation(false, "")),
    ]);
    let child = plancheck_process(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
        "--statement-timeout",
        "2s",
        "--warmup",
        "0",
        "--iterations",
        "5",
    ])
    .spawn()
    .unwrap();
    let mut reap = Reap(Some(child));
    let (mut pid, mut ended) = (None, false);
    wait_until(within(Duration::from_secs(30)), || {
        pid = active_backend(&db, "%pg_sleep(0.5)%");
        ended = reap.0.as_mut().unwrap().try_wait().unwrap().is_some();
        pid.is_some() || ended
    });
    let pid = match pid {
        Some(pid) => pid,
        None if ended => panic!("the run ended before its backend was seen"),
        None => panic!("the check's backend never showed"),
    };
    // SAFETY: stopping a backend of the test's own server; `_resume` continues it.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    let _resume = Continue(pid);
    let stopped = Instant::now();
    let limit = Duration::from_secs(15);
    let mut child = reap.0.take().unwrap();
    let returned = wait_until(stopped + limit + Duration::from_secs(5), || {
        child.try_wait().unwrap().is_some()
    });
    if !returned {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the run hung on a stopped backend: killed it {limit:?} + 5 s after the stop");
    }
    let run = Run::finish(child, stopped);
    let took = run.took;
    assert!(
        took < limit,
        "returned {took:.1?} after the stop\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(3), "{}", run.shown());
    assert_eq!(only_check(&run).0, "error", "{}", run.shown());
    // A backend that answers neither a cancel nor pg_terminate_backend (as one inside a function
    // that never checks for interrupts) is named, never left silently.
    let named = format!("pid {pid}) outlived the cancel request and pg_terminate_backend");
    assert!(
        run.stdout.contains(&named) && run.stderr.contains(&named),
        "{}",
        run.shown()
    );
}
