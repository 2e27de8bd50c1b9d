//! Checks side by side (`--jobs`): the same report as one at a time, a stop that leaves no
//! session, and a migration that keeps to one session.

mod common;

use std::time::{Duration, Instant};

use common::*;

const SLOW_PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
      AND (SELECT count(*) FROM pg_sleep(1)) = 1\n\
    ORDER BY p.created_at, p.id LIMIT 20";

/// Sends Ctrl-C (SIGINT) to a running `check` once `sleeping` of its sessions are inside
/// [`SLOW_PAGE`]'s sleep, and waits for it to end; kills it and fails when they never are.
fn interrupt_when_sleeping(child: std::process::Child, db: &str, sleeping: usize) -> Run {
    let running = wait_until(within(Duration::from_secs(30)), || {
        query_text(
            db,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'plancheck' \
             AND datname = current_database() AND pid <> pg_backend_pid() \
             AND state = 'active' AND query LIKE '%pg_sleep(1)%'",
        ) == sleeping.to_string()
    });
    let signal = if running { libc::SIGINT } else { libc::SIGKILL };
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    let run = Run::finish(child, Instant::now());
    assert!(
        running,
        "{sleeping} checks never ran side by side\n{}",
        run.shown()
    );
    run
}

/// `check --format json --warmup 0 --iterations 5` of `project` on `db`, with `extra`, started
/// and left running (a project of [`SLOW_PAGE`]s, for [`interrupt_when_sleeping`]).
fn slow_check(db: &str, project: &std::path::Path, extra: &[&str]) -> std::process::Child {
    let mut args = vec![
        "check",
        "--database-url",
        db,
        "--project",
        project.to_str().unwrap(),
        "--format",
        "json",
        "--warmup",
        "0",
        "--iterations",
        "5",
    ];
    args.extend(extra);
    plancheck_process(&args).spawn().unwrap()
}

/// A report with the figures that move between runs taken out.
fn without_timings(mut report: serde_json::Value) -> serde_json::Value {
    for c in report["checks"].as_array_mut().unwrap() {
        let c = c.as_object_mut().unwrap();
        for figure in [
            "warm_ms",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "client_p50_ms",
            "client_p95_ms",
            "client_p99_ms",
            "planning_ms",
            "budget_used",
            "shared_buffers",
        ] {
            c.remove(figure);
        }
    }
    report
}

#[test]
fn four_jobs_give_the_report_one_job_gives_in_the_same_order() {
    let db = fresh_board("jobs_same");
    let (status1, one) = check_json(&db, &reference_project(), &["--jobs", "1"]);
    let (status4, four) = check_json(&db, &reference_project(), &["--jobs", "4"]);
    assert_eq!(status1, status4);
    assert_eq!(verdicts(&one).len(), REFERENCE_CHECKS);
    assert_eq!(verdicts(&one), verdicts(&four));
    assert_eq!(without_timings(one), without_timings(four));
}

#[test]
fn ctrl_c_with_four_jobs_leaves_no_session() {
    let db = fresh_board("jobs_interrupt");
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[
        ("a-slow", SLOW_PAGE, &index),
        ("b-slow", SLOW_PAGE, &index),
        ("c-slow", SLOW_PAGE, &index),
        ("d-slow", SLOW_PAGE, &index),
    ]);
    let child = slow_check(&db, dir.path(), &["--jobs", "4"]);
    // Four sessions sleeping side by side.
    let run = interrupt_when_sleeping(child, &db, 4);
    assert_eq!(run.status, Some(130), "{}", run.shown());
    assert!(
        run.took < Duration::from_secs(5),
        "did not stop promptly\n{}",
        run.shown()
    );
    for (_, _, verdict) in verdicts(&run.report()) {
        assert_eq!(verdict, "error", "{}", run.shown());
    }
    wait_for_sessions_to_end(&db, Duration::from_secs(15));
}

#[test]
fn a_migration_run_keeps_to_one_session_and_says_so() {
    let db = fresh_board("jobs_migration");
    let migration = temp_file(
        "m.sql",
        "CREATE INDEX posts_extra_idx ON posts (author_id);",
    );
    let out = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--only",
        "thread-page-first",
        "--migration",
        migration.path().to_str().unwrap(),
        "--jobs",
        "4",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("with --migration the checks run one at a time, in one session"),
        "{stderr}"
    );
}

/// A run that was to apply a migration, stopped before it did: what it saved is a run `judge`
/// reads back, with no before/ half of it left behind.
#[test]
fn a_migration_run_stopped_before_the_migration_saves_a_whole_run() {
    let db = fresh_board("jobs_migration_stop");
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[("a-slow", SLOW_PAGE, &index)]);
    let saved = tempfile::tempdir().unwrap();
    let migration = temp_file("m.sql", "CREATE INDEX posts_more_idx ON posts (author_id);");
    let child = slow_check(
        &db,
        dir.path(),
        &[
            "--migration",
            migration.arg(),
            "--save-plans",
            saved.path().to_str().unwrap(),
        ],
    );
    let run = interrupt_when_sleeping(child, &db, 1);
    assert_eq!(run.status, Some(130), "{}", run.shown());
    assert!(
        !relation_exists(&db, "posts_more_idx"),
        "the migration never ran"
    );
    assert!(!saved.path().join("before").exists(), "{}", run.shown());
    assert_eq!(file_names(saved.path()), ["a-slow.member.json", "run.json"]);
    let out = plancheck(&["judge", saved.path().to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let judged: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("judge reads the run ({e}): {out:?}"));
    assert_eq!(judged["checks"], run.report()["checks"]);
    wait_for_sessions_to_end(&db, Duration::from_secs(15));
}
