//! Sessions handed from check to check: only when nothing one check did can reach the next.
//! Each test runs a check that leaves something in its session, then one that fails (division by
//! zero) if it runs in a session where that is still there.

mod common;

use std::time::Duration;

use common::*;

/// The member page, failing with a division by zero when `left_behind` (an SQL condition) holds
/// in its session.
fn page_failing_when(left_behind: &str) -> String {
    format!(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
           AND 1 / (CASE WHEN {left_behind} THEN 0 ELSE 1 END) = 1\n\
         ORDER BY p.created_at, p.id LIMIT 20"
    )
}

const PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
    ORDER BY p.created_at, p.id LIMIT 20";

/// Runs `check --jobs 1` on `dir` and asserts that both its read paths, `first` then `second`
/// (the one that fails if it meets what the first left), pass in the member scope.
fn both_pass(db: &str, dir: &std::path::Path, first: &str, second: &str) {
    let (status, report) = check_json(db, dir, &["--jobs", "1"]);
    for read_path in [first, second] {
        assert_eq!(
            verdict_of(&report, read_path, "member"),
            "pass",
            "{report:#}"
        );
    }
    assert_eq!(status, 0);
}

/// Whether the server's count of sessions is up to date once a session has ended: from
/// PostgreSQL 15 (statistics in shared memory); 14 counts them too, through its statistics
/// collector, some time later.
fn counts_sessions_at_once(db: &str) -> bool {
    let at_once = server_version_num(db) >= 150000;
    if !at_once {
        eprintln!("skipped: the count of sessions is up to date at once from PostgreSQL 15");
    }
    at_once
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
    if !counts_sessions_at_once(&db) {
        return;
    }
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
    if !counts_sessions_at_once(&db) {
        return;
    }
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
    if !counts_sessions_at_once(&db) {
        return;
    }
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
fn a_custom_setting_one_check_set_is_not_seen_by_the_next() {
    let db = fresh_board("sessions_placeholder");
    // What the next check would meet in a session the first one used: the rollback undoes the
    // value, not the placeholder.
    let page = page_failing_when("current_setting('app.user_id', true) IS NOT NULL");
    let session = Session::open(&db);
    session.execute("BEGIN; SET app.user_id = '5'; ROLLBACK");
    assert_eq!(
        session.rows("SELECT current_setting('app.user_id', true) IS NOT NULL"),
        ["t"]
    );
    drop(session);

    for setup in [
        "SET app.user_id = '5'",
        "SELECT set_config('app.user_id', '5', true)",
    ] {
        let sets = format!(
            "[scopes.member]\nindex = \"posts_thread_visible_idx\"\nsetup = [\"{setup}\"]\n"
        );
        let dir = read_paths(&[
            ("a-sets-a-custom-setting", PAGE, &sets),
            ("b-after", &page, &member("posts_thread_visible_idx")),
        ]);
        both_pass(&db, dir.path(), "a-sets-a-custom-setting", "b-after");
    }
}

#[test]
fn checks_that_set_the_same_custom_setting_share_a_session() {
    let db = fresh_board("sessions_tenant");
    if !counts_sessions_at_once(&db) {
        return;
    }
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

#[test]
fn a_library_a_check_loaded_does_not_reach_the_next() {
    let db = fresh_board("sessions_library");
    if try_sql(&db, "LOAD 'auto_explain'").is_err() {
        eprintln!("skipped: this server has no auto_explain library");
        return;
    }
    // An SQL function, not PL/pgSQL: loading the language would change the session by itself.
    sql(
        &db,
        "CREATE FUNCTION load_a_library() RETURNS int LANGUAGE sql \
         AS $$ LOAD 'auto_explain'; SELECT 1 $$",
    );
    let loads = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = 1 AND p.visibility = 'visible' AND load_a_library() = 1\n\
        ORDER BY p.created_at, p.id LIMIT 20";
    let page =
        page_failing_when("current_setting('auto_explain.log_min_duration', true) IS NOT NULL");
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[("a-loads", loads, &index), ("b-after", &page, &index)]);
    both_pass(&db, dir.path(), "a-loads", "b-after");
}

#[test]
fn a_session_lock_a_failed_check_left_is_not_carried_on() {
    let db = fresh_board("sessions_lock");
    let locks = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = 1 AND p.visibility = 'visible' AND pg_try_advisory_lock(7)\n\
        ORDER BY p.created_at, p.id LIMIT 20";
    let page = page_failing_when(
        "EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' \
                 AND pid = pg_backend_pid())",
    );
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[("a-locks", locks, &index), ("b-after", &page, &index)]);
    let (_, report) = check_json(&db, dir.path(), &["--jobs", "1"]);
    let locked = check_of(&report, "a-locks", "member");
    assert_ne!(locked["verdict"], "pass", "{locked:#}");
    assert_eq!(
        verdict_of(&report, "b-after", "member"),
        "pass",
        "{report:#}"
    );
}
