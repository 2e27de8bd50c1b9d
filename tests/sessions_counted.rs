//! Sessions handed from check to check, counted: how many sessions a run opened, read from the
//! server's own count (`pg_stat_database.sessions`), which is up to date at once from PostgreSQL
//! 15. The tests that need no count are in `tests/sessions.rs`, run on every version.

mod common;

use std::time::Duration;

use common::*;

const PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
    ORDER BY p.created_at, p.id LIMIT 20";

/// Fails the test unless the server's count of sessions is up to date once a session has ended:
/// from PostgreSQL 15 (statistics in shared memory; 14 counts them through its statistics
/// collector, some time later, and 13 not at all). CI runs these tests on 15 to 18.
fn require_counts_at_once(db: &str) {
    assert!(
        server_version_num(db) >= 150000,
        "these tests count sessions, which the server does at once from PostgreSQL 15"
    );
}

/// Asserts that the `checks` checks of `project`, run by `check --jobs 1` connecting with `conn`
/// to the database of `db`, share one session: `--session-per-check` opens `checks - 1` more
/// (the run's other sessions, the one reading the catalog, are the same in both).
fn assert_one_session(db: &str, conn: &str, project: &std::path::Path, checks: u64) {
    let reused = sessions_opened_as(db, conn, project, &["--jobs", "1"]);
    let each = sessions_opened_as(db, conn, project, &["--jobs", "1", "--session-per-check"]);
    assert_eq!(
        each - reused,
        checks - 1,
        "{reused} sessions reused, {each} one per check"
    );
}

/// Sessions `check` opened on `project` with `extra` arguments, connecting with `conn`, read
/// from the server's count once they have all ended. Asked on one session of the test's own
/// to the database of `db`, whose opening is counted before the first reading.
fn sessions_opened_as(db: &str, conn: &str, project: &std::path::Path, extra: &[&str]) -> u64 {
    let asking = Session::open(db);
    let count = || -> u64 {
        asking.rows("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")[0]
            .parse()
            .unwrap()
    };
    let running = || {
        asking.rows(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = 'plancheck' AND pid <> pg_backend_pid() \
               AND datname = current_database()",
        ) != ["0"]
    };
    // The asking session's own opening is counted once its statistics are flushed: forced at
    // the end of this query, not left to a later moment during the run.
    asking.rows("SELECT pg_stat_force_next_flush()");
    let before = count();
    let (status, report) = check_json(conn, project, extra);
    assert_eq!(status, 0, "{report:#}");
    assert!(
        wait_until(within(Duration::from_secs(10)), || !running()),
        "plancheck's sessions did not end"
    );
    count() - before
}

#[test]
fn a_session_goes_on_to_the_next_check_unless_session_per_check_says_otherwise() {
    let db = fresh_board("sessions_reused");
    require_counts_at_once(&db);
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[
        ("a", PAGE, &index),
        ("b", PAGE, &index),
        ("c", PAGE, &index),
        ("d", PAGE, &index),
        ("e", PAGE, &index),
    ]);
    assert_one_session(&db, &db, dir.path(), 5);
}

// An application's function may set a custom setting plancheck cannot name (its placeholder
// outlives the rollback and reads '' instead of NULL in the next check): a read path that calls
// one does not hand its session on, whatever the language. One that calls only PostgreSQL's own
// functions keeps it.
#[test]
fn a_read_path_calling_an_application_function_does_not_hand_its_session_on() {
    let db = fresh_board("sessions_plpgsql");
    require_counts_at_once(&db);
    sql(
        &db,
        "CREATE FUNCTION the_thread() RETURNS bigint LANGUAGE plpgsql STABLE \
         AS $$ BEGIN RETURN 1; END $$",
    );
    let calls = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = the_thread() AND p.visibility = 'visible'\n\
        ORDER BY p.created_at, p.id LIMIT 20";
    let builtins = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = abs(-1) AND p.visibility = lower('VISIBLE')\n\
        ORDER BY p.created_at, p.id LIMIT 20";
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[
        ("a", calls, &index),
        ("b", calls, &index),
        ("c", calls, &index),
    ]);
    let reused = sessions_opened_as(&db, &db, dir.path(), &["--jobs", "1"]);
    let each = sessions_opened_as(
        &db,
        &db,
        dir.path(),
        &["--jobs", "1", "--session-per-check"],
    );
    assert_eq!(
        reused, each,
        "{reused} sessions without --session-per-check, {each} with it"
    );
    let dir = read_paths(&[
        ("a", builtins, &index),
        ("b", builtins, &index),
        ("c", builtins, &index),
    ]);
    assert_one_session(&db, &db, dir.path(), 3);
}

#[test]
fn a_role_with_no_right_beyond_reading_hands_its_sessions_on_too() {
    let db = fresh_board("sessions_reader");
    require_counts_at_once(&db);
    // Roles are the server's, not the database's: dropped first in case of an earlier run.
    sql(
        &db,
        "DROP ROLE IF EXISTS sessions_reader; CREATE ROLE sessions_reader LOGIN; \
         GRANT SELECT ON ALL TABLES IN SCHEMA public TO sessions_reader",
    );
    let reader: String = db
        .split_whitespace()
        .map(|kv| match kv.strip_prefix("user=") {
            Some(_) => "user=sessions_reader".to_string(),
            None => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[
        ("a", PAGE, &index),
        ("b", PAGE, &index),
        ("c", PAGE, &index),
    ]);
    assert_one_session(&db, &reader, dir.path(), 3);
}

#[test]
fn checks_that_set_the_same_custom_setting_share_a_session() {
    let db = fresh_board("sessions_tenant");
    require_counts_at_once(&db);
    // What an application with row-level security sets per request, in either form.
    let tenant = |setup: &str| {
        format!(
            "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n\
             setup = [\"{setup}\"]\n"
        )
    };
    let (one, two, three) = (
        tenant("SET app.user_id = '1'"),
        tenant("SELECT set_config('app.user_id', '2', true)"),
        tenant("SET app.user_id = '3'"),
    );
    let dir = read_paths(&[("a", PAGE, &one), ("b", PAGE, &two), ("c", PAGE, &three)]);
    assert_one_session(&db, &db, dir.path(), 3);
}
