//! The scratch copy as a user and a DBA meet it: the measured server sees catalog reads only,
//! the throwaway server and its files are gone after a run, a run whose copy cannot start and an
//! interrupted run, row-level security is reproduced on the copy, and a copy is taken from the
//! cache the second time.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// 100,000 events; a partial index on account_id for kinds other than `x`, and the full index on
/// account_id that wins every re-plan on the measured server.
const EVENTS: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, account_id bigint NOT NULL, kind text NOT NULL);
INSERT INTO events SELECT i, i % 2000, (ARRAY['a', 'b', 'c', 'x'])[(i / 2000) % 4 + 1]
    FROM generate_series(1, 100000) i;
CREATE INDEX events_account ON events (account_id);
CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x';
";

/// A read path the partial index cannot serve: the IN list admits `x`.
const NOT_USABLE: &str = "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = 42";

fn events_db(name: &str) -> String {
    let db = empty_database(name);
    sql(&db, EVENTS);
    sql(&db, "VACUUM ANALYZE events");
    db
}

/// A folder the unprivileged server user can enter (a temporary folder of root's is 0700), for
/// `TMPDIR` and the cache.
fn open_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    dir
}

/// Whatever of a throwaway server is under `tmp`: its folders, and the processes whose command
/// line names `tmp` (a server's `-D` and `-k` are inside it).
fn leftovers(tmp: &Path) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .collect();
    let needle = tmp.to_str().unwrap();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            left.push(format!(
                "process {}: {cmdline}",
                entry.file_name().display()
            ));
        }
    }
    left
}

/// The arguments of `check --format json --warmup 0 --iterations 1` of `project` against `db`.
fn check_args<'a>(db: &'a str, project: &'a Path) -> Vec<&'a str> {
    vec![
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
        "1",
    ]
}

/// `check` of `project` against `db` as JSON, with `TMPDIR` and the cache folder set.
fn check_with(db: &str, project: &Path, tmp: &Path, cache: &Path, extra: &[&str]) -> Run {
    let mut args = check_args(db, project);
    args.extend_from_slice(extra);
    let mut cmd = plancheck(&args);
    cmd.env("TMPDIR", tmp).env("PLANCHECK_CACHE_DIR", cache);
    run_command(&mut cmd)
}

fn the_check<'a>(report: &'a Value, read_path: &str) -> &'a Value {
    assert_eq!(
        report["checks"].as_array().map(Vec::len),
        Some(1),
        "{report:#}"
    );
    check_of(report, read_path, "member")
}

#[test]
fn the_scratch_server_and_its_files_are_gone_after_a_run_and_the_copy_is_cached() {
    let db = events_db("scratch_cleanup");
    let dir = one_read_path(NOT_USABLE, &member("events_account_not_x"));
    let (tmp, cache) = (open_folder(), open_folder());
    let saved = tempfile::tempdir().unwrap();
    let run = check_with(
        &db,
        dir.path(),
        tmp.path(),
        cache.path(),
        &["--save-plans", saved.path().to_str().unwrap()],
    );
    assert_eq!(run.code(), 1, "{}", run.shown());
    let report = run.report();
    let c = the_check(&report, "path").clone();
    assert_eq!(c["verdict"], "not-usable", "{c:#}");
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
    // The scratch re-plan is part of the measurement: judged again with no database at all, the
    // same verdict and evidence; `--explain` prints the plan on the copy.
    assert_judged_the_same(saved.path(), &report, 1);
    let explained = plancheck(&["judge", saved.path().to_str().unwrap(), "--explain"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&explained.stdout);
    assert!(
        table.contains("the re-plan on the schema-only copy, events_account_not_x alone on its"),
        "{table}"
    );
    // The copy was kept for the next run, keyed by its definitions …
    let copies: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("copy-"))
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    // … and the next run settles the same from it, leaving nothing either.
    let again = check_with(&db, dir.path(), tmp.path(), cache.path(), &[]);
    assert_eq!(again.code(), 1, "{}", again.shown());
    let c2 = the_check(&again.report(), "path").clone();
    assert_eq!(c2["verdict"], "not-usable", "{c2:#}");
    assert_eq!(c2["settled_by"], "scratch", "{c2:#}");
    assert!(leftovers(tmp.path()).is_empty());
}

#[test]
fn a_scratch_server_that_cannot_start_leaves_nothing_and_the_check_says_why() {
    // The local binaries of the right major whose `postgres` fails to start: the copy cannot be
    // made, the check stays unsettled and says so, and no folder stays behind.
    let db = events_db("scratch_no_start");
    let real = plancheck::server::find_bin_dir().unwrap();
    let fake = open_folder();
    for tool in ["initdb", "pg_ctl"] {
        std::os::unix::fs::symlink(real.join(tool), fake.path().join(tool)).unwrap();
    }
    let version = std::process::Command::new(real.join("postgres"))
        .arg("--version")
        .output()
        .unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{}'; exit 0; fi\n\
         echo 'FATAL:  this server does not start' >&2\nexit 1\n",
        String::from_utf8_lossy(&version.stdout).trim()
    );
    std::fs::write(fake.path().join("postgres"), script).unwrap();
    std::fs::set_permissions(
        fake.path().join("postgres"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let dir = one_read_path(NOT_USABLE, &member("events_account_not_x"));
    let (tmp, cache) = (open_folder(), open_folder());
    let mut cmd = plancheck(&check_args(&db, dir.path()));
    cmd.env("TMPDIR", tmp.path())
        .env("PLANCHECK_CACHE_DIR", cache.path())
        .env("PLANCHECK_PG_BIN", fake.path());
    let run = run_command(&mut cmd);
    assert_eq!(run.code(), 1, "{}", run.shown());
    let c = the_check(&run.report(), "path").clone();
    assert_ne!(c["verdict"], "pass", "{c:#}");
    assert_ne!(c["usable"], true, "{c:#}");
    assert_ne!(c["settled_by"], "scratch", "{c:#}");
    let why = c["unsettled"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("the scratch copy could not be made"), "{c:#}");
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

#[test]
fn ctrl_c_during_a_scratch_re_plan_removes_the_server() {
    // A function folded at plan time that sleeps on the copy only (the copy's database is
    // `postgres`): the re-plan there takes long enough to be interrupted in the middle.
    let db = events_db("scratch_ctrl_c");
    sql(
        &db,
        "CREATE FUNCTION slow_on_copy(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$ \
         BEGIN IF current_database() = 'postgres' THEN PERFORM pg_sleep(25); END IF; \
         RETURN $1; END $$",
    );
    let plan = "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = slow_on_copy(42)";
    let dir = one_read_path(plan, &member("events_account_not_x"));
    let (tmp, cache) = (open_folder(), open_folder());
    let started = Instant::now();
    let mut cmd = plancheck_process(&check_args(&db, dir.path()));
    cmd.env("TMPDIR", tmp.path())
        .env("PLANCHECK_CACHE_DIR", cache.path());
    let child = cmd.spawn().unwrap();
    // The scratch server is up once a data folder under TMPDIR has its postmaster.pid; the
    // re-plan sleeps there for 25 s.
    let up = wait_until(within(Duration::from_secs(45)), || {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .any(|e| e.path().join("data/postmaster.pid").exists())
    });
    assert!(up, "no scratch server started: {:?}", leftovers(tmp.path()));
    // Into the re-plan, then Ctrl-C.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling the child this test spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let run = Run::finish(child, started);
    assert_eq!(run.code(), 130, "{}", run.shown());
    assert!(
        run.took < Duration::from_secs(20),
        "the stop waited for the re-plan: {}",
        run.shown()
    );
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
    // Interrupted, the check says so, and nothing claims what the copy never showed.
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let c = the_check(&report, "path");
    assert_ne!(c["settled_by"], "scratch", "{c:#}");
    assert!(
        c["unsettled"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted"),
        "{c:#}"
    );
}

#[test]
fn the_measured_server_sees_only_catalog_reads_while_the_copy_is_read() {
    // A second session watches every lock plancheck's sessions hold on this database, from the
    // first statement to the last: nothing stronger than ACCESS SHARE on a relation, and no
    // transaction id (which any write, DDL included, takes).
    let db = events_db("scratch_catalog_reads");
    let dir = one_read_path(NOT_USABLE, &member("events_account_not_x"));
    let (tmp, cache) = (open_folder(), open_folder());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            let session = Session::open(&db);
            let mut polls = 0usize;
            let mut seen: Vec<String> = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                polls += 1;
                for row in session.rows(
                    "SELECT l.locktype || ' ' || l.mode || ' ' || coalesce(c.relname, '') \
                     FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                     LEFT JOIN pg_class c ON c.oid = l.relation \
                     WHERE a.application_name = 'plancheck' AND a.pid <> pg_backend_pid() \
                       AND a.datname = current_database() \
                       AND (l.locktype = 'transactionid' \
                            OR (l.locktype = 'relation' AND l.mode <> 'AccessShareLock'))",
                ) {
                    if !seen.contains(&row) {
                        seen.push(row);
                    }
                }
            }
            (polls, seen)
        })
    };
    let run = check_with(&db, dir.path(), tmp.path(), cache.path(), &[]);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (polls, seen) = watcher.join().unwrap();
    assert_eq!(run.code(), 1, "{}", run.shown());
    let c = the_check(&run.report(), "path").clone();
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    assert!(polls > 10, "the watcher looked only {polls} times");
    assert!(
        seen.is_empty(),
        "plancheck took on the measured server: {seen:?}"
    );
}

#[test]
fn row_level_security_is_reproduced_on_the_copy() {
    // The read path filters nothing; the member's policy does (`visibility = 'visible'`), which
    // proves the partial index's predicate. A small rival for this one thread (its predicate
    // proved by the policy and the query together) beats the large required index in every
    // re-plan on the measured server: only a copy that carries the policy, applied to a role as
    // the measured role is, can show the required index usable. A copy without it would call it
    // not usable.
    let db = empty_database("scratch_rls");
    sql(
        &db,
        "DO $$ BEGIN CREATE ROLE scratch_rls_member; \
         EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
         CREATE TABLE notes (id bigint PRIMARY KEY, thread_id int NOT NULL, \
             visibility text NOT NULL, created_at timestamptz NOT NULL, body text NOT NULL); \
         INSERT INTO notes SELECT i, i % 500, \
             CASE WHEN i % 5 = 0 THEN 'hidden' ELSE 'visible' END, \
             timestamptz '2026-01-01' + i * interval '1 minute', repeat('b', 200) || i \
             FROM generate_series(1, 100000) i; \
         CREATE INDEX notes_thread_visible ON notes (thread_id, body) \
             WHERE visibility = 'visible'; \
         CREATE INDEX notes_thread7_created ON notes (thread_id, created_at) \
             WHERE visibility = 'visible' AND thread_id = 7; \
         GRANT SELECT ON notes TO scratch_rls_member; \
         ALTER TABLE notes ENABLE ROW LEVEL SECURITY; \
         CREATE POLICY member_sees_visible ON notes FOR SELECT TO scratch_rls_member \
             USING (visibility = 'visible')",
    );
    sql(&db, "VACUUM ANALYZE notes");
    // Before PostgreSQL 15 the statistics collector reports the analysis a moment later.
    let analysed = wait_until(within(Duration::from_secs(10)), || {
        query_text(
            &db,
            "SELECT (last_analyze IS NOT NULL)::text FROM pg_stat_all_tables \
             WHERE relname = 'notes'",
        ) == "true"
    });
    assert!(analysed, "the analysis of notes is not reported");
    let dir = one_read_path(
        "SELECT id FROM notes WHERE thread_id = 7 ORDER BY created_at LIMIT 20",
        "[scopes.member]\nindex = \"notes_thread_visible\"\n\
         setup = [\"SET LOCAL ROLE scratch_rls_member\"]\n",
    );
    let (tmp, cache) = (open_folder(), open_folder());
    let run = check_with(&db, dir.path(), tmp.path(), cache.path(), &[]);
    let report = run.report();
    let c = the_check(&report, "path");
    assert_eq!(c["verdict"], "not-chosen", "{c:#}");
    assert_eq!(c["usable"], true, "{c:#}");
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("notes_thread7_created"),
        "{c:#}"
    );
    // Analysed, though `pg_stats` hides its rows from the member: no note says otherwise.
    assert_eq!(c["notes"], serde_json::json!([]), "{c:#}");
}

#[test]
fn after_a_migration_the_copy_holds_the_migrated_definitions() {
    // The migration gives the partial index another predicate, inside its transaction only: the
    // copy for the checks after it must be read there, or it would settle the old index.
    let db = events_db("scratch_migration");
    let dir = one_read_path(
        "SELECT id FROM events WHERE kind = 'a' AND account_id = 42",
        &member("events_account_not_x"),
    );
    let migration = temp_file(
        "narrow.sql",
        "DROP INDEX events_account_not_x;\n\
         CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'a';\n",
    );
    let (tmp, cache) = (open_folder(), open_folder());
    let run = check_with(
        &db,
        dir.path(),
        tmp.path(),
        cache.path(),
        &["--migration", migration.arg()],
    );
    assert_eq!(run.code(), 1, "{}", run.shown());
    let report = run.report();
    let c = the_check(&report, "path");
    assert_eq!(c["verdict"], "not-usable", "{c:#}");
    assert_eq!(c["settled_by"], "scratch", "{c:#}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("(kind <> 'a'::text)"),
        "{c:#}"
    );
    // Before the migration the index served the read path.
    assert_ne!(c["before"]["verdict"], "not-usable", "{c:#}");
    // Rolled back: the index is as it was.
    assert_eq!(
        query_text(
            &db,
            "SELECT pg_get_expr(indpred, indrelid) FROM pg_index \
             WHERE indexrelid = 'events_account_not_x'::regclass"
        ),
        "(kind <> 'x'::text)"
    );
}

#[test]
fn a_second_accepted_index_is_re_planned_when_the_first_is_missing() {
    // Regression: with the first accepted index missing, no re-plan was made for the second,
    // and it was called not usable "even with seq scans disabled" all the same.
    let db = events_db("scratch_second_accepted");
    let dir = one_read_path(
        NOT_USABLE,
        "[scopes.member]\nindex = [\"no_such_idx\", \"events_account_not_x\"]\n",
    );
    let (tmp, cache) = (open_folder(), open_folder());
    let saved = tempfile::tempdir().unwrap();
    let run = check_with(
        &db,
        dir.path(),
        tmp.path(),
        cache.path(),
        &["--save-plans", saved.path().to_str().unwrap()],
    );
    assert_eq!(run.code(), 1, "{}", run.shown());
    let report = run.report();
    let c = the_check(&report, "path");
    assert_eq!(c["verdict"], "missing-index", "{c:#}");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("Nor events_account_not_x, also accepted: not-usable"),
        "{message}"
    );
    assert!(message.contains("schema-only copy"), "{message}");
    assert!(!message.contains("even with seq scans"), "{message}");
    // The measurement says which re-plans ran, and for which index.
    let m: Value = serde_json::from_str(
        &std::fs::read_to_string(saved.path().join("path.member.json")).unwrap(),
    )
    .unwrap();
    let measured = &m["outcome"]["measured"];
    assert!(
        !measured["probes"].as_array().unwrap().is_empty(),
        "{measured:#}"
    );
    assert_eq!(
        measured["scratch"][0]["index"], "events_account_not_x",
        "{measured:#}"
    );
}

#[test]
fn what_the_copy_cannot_hold_is_named_and_leaves_the_check_unsettled() {
    // A function in a language the copy does not take (`internal`, outside any extension) in the
    // required index's expression: no re-plan is made, the check says which definition, and
    // nothing is claimed usable or not.
    let db = events_db("scratch_cannot_hold");
    sql(
        &db,
        "CREATE FUNCTION account_abs(bigint) RETURNS bigint LANGUAGE internal IMMUTABLE STRICT \
         AS 'int8abs'; \
         CREATE INDEX events_account_abs ON events (account_abs(account_id)) WHERE kind <> 'x'",
    );
    sql(&db, "ANALYZE events");
    let not_x = member("events_account_not_x");
    let dir = read_paths(&[
        ("path", NOT_USABLE, &member("events_account_abs")),
        // The same table, another index asked: the one the copy cannot hold is a rival there,
        // dropped by the re-plan anyway, and blocks nothing.
        ("other", NOT_USABLE, &not_x),
    ]);
    let (tmp, cache) = (open_folder(), open_folder());
    let run = check_with(&db, dir.path(), tmp.path(), cache.path(), &[]);
    assert_eq!(run.code(), 1, "{}", run.shown());
    let report = run.report();
    assert_eq!(report["checks"].as_array().map(Vec::len), Some(2));
    let other = check_of(&report, "other", "member");
    assert_eq!(other["verdict"], "not-usable", "{other:#}");
    assert_eq!(other["settled_by"], "scratch", "{other:#}");
    let c = check_of(&report, "path", "member");
    assert_eq!(c["verdict"], "not-chosen", "{c:#}");
    assert_eq!(c["usable"], Value::Null, "{c:#}");
    assert_eq!(c["settled_by"], Value::Null, "{c:#}");
    let why = c["unsettled"].as_str().unwrap_or_default();
    assert!(
        why.contains("the scratch copy cannot hold function public.account_abs(bigint)")
            && why.contains("(in language internal)"),
        "{c:#}"
    );
    assert!(leftovers(tmp.path()).is_empty());
}
