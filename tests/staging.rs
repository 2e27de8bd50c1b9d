//! Safe on a shared database: a run that is bounded, leaves nothing behind, survives faults,
//! stops in order on Ctrl-C, checks a migration without keeping it, and never shows a password.

mod common;

use std::fs;
use std::time::{Duration, Instant};

use common::*;

/// A thread page that also sleeps a second, once (an InitPlan).
const SLOW_PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
      AND (SELECT count(*) FROM pg_sleep(1)) = 1\n\
    ORDER BY p.created_at, p.id LIMIT 20";

const FAST_PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
    ORDER BY p.created_at, p.id LIMIT 20";

#[test]
fn a_check_blocked_by_a_lock_times_out_and_the_rest_go_on() {
    let db = fresh_board("locked");
    // Another session holds an exclusive lock on threads for the whole run.
    let holder = Session::open(&db);
    holder.execute("BEGIN; LOCK TABLE threads IN ACCESS EXCLUSIVE MODE");
    let dir = read_paths(&[
        (
            "a-listing",
            "SELECT t.id FROM threads t WHERE t.forum_id = 2 AND t.visibility = 'visible'\n\
             ORDER BY t.sticky DESC, t.last_post_at DESC, t.id DESC LIMIT 20",
            &member("threads_forum_listing_idx"),
        ),
        (
            "b-thread",
            "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
             ORDER BY p.created_at, p.id LIMIT 20",
            &member("posts_thread_visible_idx"),
        ),
    ]);
    let started = Instant::now();
    let (status, report) = check_json(&db, dir.path(), &["--lock-timeout", "300ms"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the run waited on the lock"
    );
    assert_eq!(status, 1, "{report:#}");
    assert_eq!(verdict_of(&report, "a-listing", "member"), "error");
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(message.contains("lock_timeout (300 ms)"), "{message}");
    assert_eq!(
        verdict_of(&report, "b-thread", "member"),
        "pass",
        "{report:#}"
    );
    drop(holder);
}

#[test]
fn a_run_leaves_no_session_setting_or_object_behind() {
    let db = fresh_board("leftovers");
    let settings_before = query_text(&db, "SELECT count(*) FROM pg_db_role_setting");
    let objects_before = query_text(&db, "SELECT count(*) FROM pg_class");
    let (status, _) = check_json(&db, &reference_project(), &[]);
    assert_eq!(status, 0);
    // Seen from a second session once the run is over (a backend outlives its client by a
    // moment, the more so with checks side by side).
    wait_for_sessions_to_end(&db, Duration::from_secs(15));
    assert_eq!(
        query_text(&db, "SELECT count(*) FROM pg_prepared_xacts"),
        "0"
    );
    assert_eq!(
        query_text(
            &db,
            "SELECT count(*) FROM pg_class WHERE relpersistence = 't'"
        ),
        "0"
    );
    assert_eq!(
        query_text(&db, "SELECT count(*) FROM pg_db_role_setting"),
        settings_before
    );
    assert_eq!(
        query_text(&db, "SELECT count(*) FROM pg_class"),
        objects_before
    );
}

#[test]
fn ctrl_c_rolls_back_the_running_check_reports_what_finished_and_exits_130() {
    let db = fresh_board("interrupt");
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[
        ("a-fast", FAST_PAGE, &index),
        ("b-slow", SLOW_PAGE, &index),
        ("c-slow", SLOW_PAGE, &index),
    ]);
    let child = plancheck_process(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
        "--warmup",
        "0",
        "--iterations",
        "3",
        // One at a time, so that the interrupt finds b-slow running and c-slow not begun.
        "--jobs",
        "1",
    ])
    .spawn()
    .unwrap();
    // a-fast finishes at once; the interrupt comes while b-slow is inside its 3 × 1 s.
    let slow_started = wait_until(within(Duration::from_secs(30)), || {
        active_backend(&db, "%pg_sleep(1)%").is_some()
    });
    assert!(slow_started, "the slow check never started");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let run = Run::finish(child, Instant::now());
    assert!(
        run.took < Duration::from_secs(5),
        "did not stop promptly\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(130), "{}", run.shown());
    let report = run.report();
    let v = verdicts(&report);
    assert_eq!(v.len(), 2, "{}", run.shown());
    assert_eq!(verdict_of(&report, "a-fast", "member"), "pass");
    assert_eq!(verdict_of(&report, "b-slow", "member"), "error");
    assert!(
        report["checks"][1]["message"]
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "{report:#}"
    );
    // The cancelled check's session is gone, its transaction with it.
    wait_for_sessions_to_end(&db, Duration::from_secs(5));
}

#[test]
fn a_server_killed_mid_run_gives_errors_a_report_and_exit_3() {
    // A server of the test's own, since it is killed.
    let rt = runtime();
    let mut server = rt.block_on(plancheck::server::Server::start()).unwrap();
    let conn = server.connection_string("postgres");
    sql(
        &conn,
        "CREATE TABLE t (id int PRIMARY KEY, v text); \
         INSERT INTO t SELECT g, 'x' FROM generate_series(1, 10000) g; ANALYZE t",
    );
    let slow = "SELECT t.v FROM t WHERE t.id = 7 AND (SELECT count(*) FROM pg_sleep(1)) = 1";
    let index = member("t_pkey");
    let dir = read_paths(&[
        ("a", slow, &index),
        ("b", slow, &index),
        ("c", slow, &index),
    ]);
    let child = plancheck_process(&[
        "check",
        "--database-url",
        &conn,
        "--project",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
        "--warmup",
        "0",
        "--iterations",
        "1",
    ])
    .spawn()
    .unwrap();
    // Mid-run: a check's statement is running on the server.
    let running = wait_until(within(Duration::from_secs(30)), || {
        active_backend(&conn, "%pg_sleep(1)%").is_some()
    });
    assert!(running, "no check ever ran");
    // SAFETY: killing the test's own server.
    unsafe {
        libc::kill(server.pid().unwrap() as libc::pid_t, libc::SIGKILL);
    }
    let run = Run::finish(child, Instant::now());
    assert!(
        run.took < Duration::from_secs(30),
        "hung after the server died\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(3), "{}", run.shown());
    let report = run.report();
    let v = verdicts(&report);
    assert_eq!(v.len(), 3, "{report:#}");
    // The checks that did not finish are errors, never passes.
    assert!(
        v.iter().filter(|(_, _, v)| v == "error").count() >= 2,
        "{report:#}"
    );
    server.stop();
    drop(rt);
}

/// The forum listing's twin is as the board loaded it: a migration that changed it was rolled
/// back.
fn assert_twin_as_loaded(db: &str) {
    let twin = query_text(
        db,
        "SELECT pg_get_indexdef('threads_forum_listing_all_idx'::regclass)",
    );
    assert!(
        twin.contains("(forum_id, sticky, last_post_at, id)"),
        "{twin}"
    );
}

#[test]
fn a_migration_is_checked_before_and_after_and_rolled_back() {
    let db = fresh_board("migration");
    let migration = temp_file(
        "drop-twin.sql",
        "-- the moderator's forum listing loses its twin\n\
         DROP INDEX threads_forum_listing_all_idx;\n\
         CREATE INDEX threads_forum_listing_all_idx ON threads (forum_id);\n",
    );
    let (status, report) = check_json(
        &db,
        &reference_project(),
        &["--only", "forum-page-first", "--migration", migration.arg()],
    );
    assert_eq!(status, 1, "{report:#}");
    let moderator = check_of(&report, "forum-page-first", "moderator");
    assert_eq!(moderator["before"]["verdict"], "pass", "{moderator:#}");
    assert_ne!(moderator["verdict"], "pass", "{moderator:#}");
    let member = check_of(&report, "forum-page-first", "member");
    assert_eq!(member["before"]["verdict"], "pass", "{member:#}");
    assert_eq!(member["verdict"], "pass", "{member:#}");
    // Rolled back: the original twin is there, as it was.
    assert_twin_as_loaded(&db);

    // The table shows the pair side by side.
    let run = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--only",
        "forum-page-first",
        "--migration",
        migration.arg(),
    ]);
    assert!(
        run.stdout.contains("before → after migration"),
        "{}",
        run.shown()
    );
    assert!(run.stdout.contains("pass → "), "{}", run.shown());
}

#[test]
fn a_migration_as_rails_writes_it_is_checked_without_concurrently() {
    // A Rails migration with `disable_ddl_transaction!` and `algorithm: :concurrently`, as
    // `rails db:migrate` prints its SQL: the twin dropped and rebuilt on other columns.
    let db = fresh_board("railsmigration");
    let migration = temp_file(
        "20261202_rebuild_listing.sql",
        "DROP INDEX CONCURRENTLY IF EXISTS \"threads_forum_listing_all_idx\";\n\
         CREATE INDEX CONCURRENTLY \"threads_forum_listing_all_idx\" ON \"threads\" (\"forum_id\");\n",
    );
    let run = check(
        &db,
        &reference_project(),
        &["--only", "forum-page-first", "--migration", migration.arg()],
    );
    assert_eq!(run.status, Some(1), "{}", run.shown());
    // Said on stderr and in the JSON, with the file and line of each.
    for line in [1, 2] {
        assert!(
            run.stderr
                .contains(&format!("20261202_rebuild_listing.sql:{line}: ")),
            "{}",
            run.shown()
        );
    }
    assert!(
        run.stderr
            .contains("DROP INDEX CONCURRENTLY is checked as DROP INDEX"),
        "{}",
        run.shown()
    );
    let report = run.report();
    let rewritten = report["migration_rewritten"].as_array().unwrap();
    assert_eq!(rewritten.len(), 2, "{report:#}");
    // Applied for real: the moderator's listing lost its twin after the migration.
    let moderator = check_of(&report, "forum-page-first", "moderator");
    assert_eq!(moderator["before"]["verdict"], "pass", "{moderator:#}");
    assert_ne!(moderator["verdict"], "pass", "{moderator:#}");
    // And rolled back.
    assert_twin_as_loaded(&db);
}

#[test]
fn a_migration_that_cannot_run_in_a_transaction_is_refused_with_the_form_to_use() {
    let migration = temp_file(
        "m.sql",
        "ALTER TABLE posts DETACH PARTITION posts_2026 CONCURRENTLY;\n",
    );
    let run = run(&[
        "check",
        "--database-url",
        "host=/nonexistent",
        "--project",
        reference_project().to_str().unwrap(),
        "--migration",
        migration.arg(),
    ]);
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(
        run.stderr
            .contains("m.sql:1:1: ALTER TABLE … DETACH PARTITION CONCURRENTLY"),
        "{}",
        run.shown()
    );
    assert!(
        run.stderr.contains("without CONCURRENTLY"),
        "{}",
        run.shown()
    );
}

#[test]
fn a_failing_migration_is_reported_and_leaves_nothing() {
    let db = fresh_board("badmigration");
    let migration = temp_file(
        "m.sql",
        "CREATE TABLE gone (id int);\nALTER TABLE nowhere ADD COLUMN x int;\n",
    );
    let run = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--only",
        "thread-page-first",
        "--migration",
        migration.arg(),
    ]);
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(
        run.stderr.contains("the migration failed"),
        "{}",
        run.shown()
    );
    assert!(run.stderr.contains("nowhere"), "{}", run.shown());
    assert_eq!(
        query_text(&db, "SELECT count(*) FROM pg_class WHERE relname = 'gone'"),
        "0"
    );
}

#[test]
fn no_password_appears_in_any_output() {
    const SECRET: &str = "Sekr3t-Passw0rd-4711";
    let db = fresh_board("secrets");
    let with_password = db.replace(
        "user=plancheck",
        &format!("user=plancheck password={SECRET}"),
    );
    // The premise: the connection string does hold the password (the test server trusts every
    // local connection, so a password changes nothing else).
    assert!(with_password.contains(SECRET), "{with_password}");
    let elsewhere = format!("postgresql://plancheck:{SECRET}@127.0.0.1:1/db");
    let saved = tempfile::tempdir().unwrap();
    let bad_project = one_read_path("SELECT nope FROM nowhere", &member("posts_pkey"));
    let reference = reference_project();
    let reference = reference.to_str().unwrap();
    let no_such_db = with_password.replace("dbname=secrets", "dbname=nosuchdb");
    let malformed = format!("postgresql://plancheck:{SECRET}@127.0.0.1:notaport/db");
    // Each run with the exit status that shows it got as far as it should: a run that failed
    // earlier would show no password for the wrong reason.
    let runs: Vec<(i32, Vec<&str>)> = vec![
        (
            0,
            vec![
                "check",
                "--database-url",
                &with_password,
                "--project",
                reference,
                "--only",
                "thread-page-first",
                "--save-plans",
                saved.path().to_str().unwrap(),
                "--explain",
            ],
        ),
        (
            1,
            vec![
                "check",
                "--database-url",
                &with_password,
                "--project",
                bad_project.path().to_str().unwrap(),
                "--format",
                "json",
            ],
        ),
        (
            0,
            vec![
                "lint",
                "--database-url",
                &with_password,
                "--project",
                reference,
            ],
        ),
        // A database that does not exist: the server's error message.
        (
            3,
            vec![
                "check",
                "--database-url",
                &no_such_db,
                "--project",
                reference,
            ],
        ),
        // Nothing listening, as a URL.
        (
            3,
            vec![
                "check",
                "--database-url",
                &elsewhere,
                "--project",
                reference,
            ],
        ),
        // A malformed URL.
        (
            2,
            vec![
                "check",
                "--database-url",
                &malformed,
                "--project",
                reference,
            ],
        ),
        (
            3,
            vec![
                "fixtures",
                "load",
                "--database-url",
                &elsewhere,
                "--scale",
                "0.01",
            ],
        ),
    ];
    for (status, args) in runs {
        let run = run(&args);
        assert_eq!(run.status, Some(status), "{args:?}\n{}", run.shown());
        for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !text.contains(SECRET),
                "{stream} of {:?} shows the password:\n{text}",
                args[0]
            );
        }
    }
    // Through the environment too.
    let env_run =
        run_command(plancheck(&["check", "--project", reference]).env("DATABASE_URL", &elsewhere));
    assert_eq!(env_run.status, Some(3), "{}", env_run.shown());
    assert!(!env_run.stderr.contains(SECRET), "{}", env_run.shown());
    assert!(!env_run.stdout.contains(SECRET), "{}", env_run.shown());
    let help = run_command(plancheck(&["check", "--help"]).env("DATABASE_URL", &elsewhere));
    assert_eq!(help.status, Some(0), "{}", help.shown());
    // The help does name the variable it reads (where clap would show its value).
    assert!(help.stdout.contains("DATABASE_URL"), "{}", help.shown());
    assert!(!help.stdout.contains(SECRET), "{}", help.shown());
    // The saved plans are the ones the first run wrote: every one of them is read.
    assert_eq!(
        file_names(saved.path()),
        [
            "run.json",
            "thread-page-first.member.json",
            "thread-page-first.moderator.json"
        ]
    );
    for name in file_names(saved.path()) {
        let text = fs::read_to_string(saved.path().join(&name)).unwrap();
        assert!(!text.contains(SECRET), "{name} shows the password");
    }
}
