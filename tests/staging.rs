//! Safe on a shared database: a run that is bounded, leaves nothing behind, survives faults,
//! stops in order on Ctrl-C, checks a migration without keeping it, and never shows a password.

mod common;

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// A project of several read paths in one folder: (name, sql, index).
fn project_of(paths: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("plans")).unwrap();
    fs::create_dir(dir.path().join("expectations")).unwrap();
    for (name, sql, index) in paths {
        fs::write(dir.path().join(format!("plans/{name}.sql")), sql).unwrap();
        fs::write(
            dir.path().join(format!("expectations/{name}.toml")),
            format!("[scopes.member]\nindex = \"{index}\"\n"),
        )
        .unwrap();
    }
    dir
}

/// A thread page that also sleeps a second, once (an InitPlan).
const SLOW_PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
      AND (SELECT count(*) FROM pg_sleep(1)) = 1\n\
    ORDER BY p.created_at, p.id LIMIT 20";

const FAST_PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
    ORDER BY p.created_at, p.id LIMIT 20";

fn plancheck_sessions(conn: &str) -> String {
    query_text(
        conn,
        "SELECT count(*) FROM pg_stat_activity \
         WHERE application_name = 'plancheck' AND pid <> pg_backend_pid() \
           AND datname = current_database()",
    )
}

#[test]
fn a_check_blocked_by_a_lock_times_out_and_the_rest_go_on() {
    let db = fresh_board("locked");
    // Another session holds an exclusive lock on threads for the whole run.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let holder = rt.block_on(async {
        let client = plancheck::db::Target::parse(&db)
            .unwrap()
            .connect()
            .await
            .unwrap();
        client
            .batch_execute("BEGIN; LOCK TABLE threads IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        client
    });
    let dir = project_of(&[
        (
            "a-listing",
            "SELECT t.id FROM threads t WHERE t.forum_id = 2 AND t.visibility = 'visible'\n\
             ORDER BY t.sticky DESC, t.last_post_at DESC, t.id DESC LIMIT 20",
            "threads_forum_listing_idx",
        ),
        (
            "b-thread",
            "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
             ORDER BY p.created_at, p.id LIMIT 20",
            "posts_thread_visible_idx",
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
    drop(rt);
}

#[test]
fn a_run_leaves_no_session_setting_or_object_behind() {
    let db = fresh_board("leftovers");
    let settings_before = query_text(&db, "SELECT count(*) FROM pg_db_role_setting");
    let objects_before = query_text(&db, "SELECT count(*) FROM pg_class");
    let (status, _) = check_json(&db, &reference_project(), &[]);
    assert_eq!(status, 0);
    // Seen from a second session once the run is over.
    assert_eq!(plancheck_sessions(&db), "0");
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
    let dir = project_of(&[
        ("a-fast", FAST_PAGE, "posts_thread_visible_idx"),
        ("b-slow", SLOW_PAGE, "posts_thread_visible_idx"),
        ("c-slow", SLOW_PAGE, "posts_thread_visible_idx"),
    ]);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_plancheck"))
        .args([
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
        ])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // a-fast finishes at once; the interrupt comes while b-slow is inside its 3 × 1 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    while query_text(
        &db,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'plancheck' \
         AND datname = current_database() AND state = 'active' AND query LIKE '%pg_sleep(1)%' \
         AND pid <> pg_backend_pid()",
    ) == "0"
    {
        assert!(Instant::now() < deadline, "the slow check never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "did not stop promptly"
    );
    assert_eq!(out.status.code(), Some(130));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let v = verdicts(&report);
    assert_eq!(
        v.len(),
        2,
        "{report:#}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(verdict_of(&report, "a-fast", "member"), "pass");
    assert_eq!(verdict_of(&report, "b-slow", "member"), "error");
    assert!(
        report["checks"][1]["message"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    // The cancelled check's session is gone, its transaction with it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while plancheck_sessions(&db) != "0" {
        assert!(
            Instant::now() < deadline,
            "a plancheck session outlived the run"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_server_killed_mid_run_gives_errors_a_report_and_exit_3() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut server = rt
        .block_on(plancheck::db::ephemeral::Server::start())
        .unwrap();
    let conn = server.connection_string("postgres");
    sql(
        &conn,
        "CREATE TABLE t (id int PRIMARY KEY, v text); \
         INSERT INTO t SELECT g, 'x' FROM generate_series(1, 10000) g; ANALYZE t",
    );
    let slow = "SELECT t.v FROM t WHERE t.id = 7 AND (SELECT count(*) FROM pg_sleep(1)) = 1";
    let dir = project_of(&[
        ("a", slow, "t_pkey"),
        ("b", slow, "t_pkey"),
        ("c", slow, "t_pkey"),
    ]);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_plancheck"))
        .args([
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
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: killing the test's own server.
    unsafe {
        libc::kill(server.pid().unwrap() as libc::pid_t, libc::SIGKILL);
    }
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "hung after the server died"
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a report");
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

#[test]
fn a_migration_is_checked_before_and_after_and_rolled_back() {
    let db = fresh_board("migration");
    let dir = tempfile::tempdir().unwrap();
    let migration = dir.path().join("drop-twin.sql");
    fs::write(
        &migration,
        "-- the moderator's forum listing loses its twin\n\
         DROP INDEX threads_forum_listing_all_idx;\n\
         CREATE INDEX threads_forum_listing_all_idx ON threads (forum_id);\n",
    )
    .unwrap();
    let (status, report) = check_json(
        &db,
        &reference_project(),
        &[
            "--only",
            "forum-page-first",
            "--migration",
            migration.to_str().unwrap(),
        ],
    );
    assert_eq!(status, 1, "{report:#}");
    let moderator = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scope"] == "moderator")
        .unwrap();
    assert_eq!(moderator["before"]["verdict"], "pass", "{moderator:#}");
    assert_ne!(moderator["verdict"], "pass", "{moderator:#}");
    let member = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scope"] == "member")
        .unwrap();
    assert_eq!(member["before"]["verdict"], "pass");
    assert_eq!(member["verdict"], "pass");
    // Rolled back: the original twin is there, as it was.
    assert!(
        query_text(
            &db,
            "SELECT pg_get_indexdef('threads_forum_listing_all_idx'::regclass)"
        )
        .contains("(forum_id, sticky, last_post_at, id)")
    );

    // The table shows the pair side by side.
    let out = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--only",
        "forum-page-first",
        "--migration",
        migration.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("before → after migration"), "{stdout}");
    assert!(stdout.contains("pass → "), "{stdout}");
}

#[test]
fn a_migration_that_cannot_run_in_a_transaction_is_refused_with_the_form_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let migration = dir.path().join("m.sql");
    fs::write(
        &migration,
        "CREATE INDEX CONCURRENTLY x ON posts (author_id);\n",
    )
    .unwrap();
    let out = plancheck(&[
        "check",
        "--database-url",
        "host=/nonexistent",
        "--project",
        reference_project().to_str().unwrap(),
        "--migration",
        migration.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("m.sql:1:1: CREATE INDEX CONCURRENTLY"),
        "{stderr}"
    );
    assert!(stderr.contains("without CONCURRENTLY"), "{stderr}");
}

#[test]
fn a_failing_migration_is_reported_and_leaves_nothing() {
    let db = fresh_board("badmigration");
    let dir = tempfile::tempdir().unwrap();
    let migration = dir.path().join("m.sql");
    fs::write(
        &migration,
        "CREATE TABLE gone (id int);\nALTER TABLE nowhere ADD COLUMN x int;\n",
    )
    .unwrap();
    let out = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--only",
        "thread-page-first",
        "--migration",
        migration.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the migration failed"), "{stderr}");
    assert!(stderr.contains("nowhere"), "{stderr}");
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
    let saved = tempfile::tempdir().unwrap();
    let bad_project = project_of(&[("p", "SELECT nope FROM nowhere", "posts_pkey")]);
    let runs: Vec<Vec<String>> = vec![
        vec![
            "check".into(),
            "--database-url".into(),
            with_password.clone(),
            "--project".into(),
            reference_project().to_str().unwrap().into(),
            "--only".into(),
            "thread-page-first".into(),
            "--save-plans".into(),
            saved.path().to_str().unwrap().into(),
            "--explain".into(),
        ],
        vec![
            "check".into(),
            "--database-url".into(),
            with_password.clone(),
            "--project".into(),
            bad_project.path().to_str().unwrap().into(),
            "--format".into(),
            "json".into(),
        ],
        vec![
            "lint".into(),
            "--database-url".into(),
            with_password.clone(),
            "--project".into(),
            reference_project().to_str().unwrap().into(),
        ],
        // A database that does not exist: the server's error message.
        vec![
            "check".into(),
            "--database-url".into(),
            with_password.replace("dbname=secrets", "dbname=nosuchdb"),
            "--project".into(),
            reference_project().to_str().unwrap().into(),
        ],
        // Nothing listening, as a URL.
        vec![
            "check".into(),
            "--database-url".into(),
            format!("postgresql://plancheck:{SECRET}@127.0.0.1:1/db"),
            "--project".into(),
            reference_project().to_str().unwrap().into(),
        ],
        // A malformed URL.
        vec![
            "check".into(),
            "--database-url".into(),
            format!("postgresql://plancheck:{SECRET}@127.0.0.1:notaport/db"),
            "--project".into(),
            reference_project().to_str().unwrap().into(),
        ],
        vec![
            "fixtures".into(),
            "load".into(),
            "--database-url".into(),
            format!("postgresql://plancheck:{SECRET}@127.0.0.1:1/db"),
            "--scale".into(),
            "0.01".into(),
        ],
    ];
    for args in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = plancheck(&args).output().unwrap();
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text.contains(SECRET),
                "{stream} of {:?} shows the password:\n{text}",
                args[0]
            );
        }
    }
    // Through the environment too.
    let out = plancheck(&["check", "--project", reference_project().to_str().unwrap()])
        .env(
            "DATABASE_URL",
            format!("postgresql://plancheck:{SECRET}@127.0.0.1:1/db"),
        )
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains(SECRET));
    let help = plancheck(&["check", "--help"])
        .env(
            "DATABASE_URL",
            format!("postgresql://plancheck:{SECRET}@127.0.0.1:1/db"),
        )
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains(SECRET));
    for entry in fs::read_dir(saved.path()).unwrap().flatten() {
        let text = fs::read_to_string(entry.path()).unwrap();
        assert!(
            !text.contains(SECRET),
            "{} shows the password",
            entry.path().display()
        );
    }
}
