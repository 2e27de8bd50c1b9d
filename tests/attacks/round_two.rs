//! Round two of the attack corpus: settings outside the allow-list, state left in a session,
//! a migration that moves a sequence back, replaces plancheck's executor or carries its search
//! path into the checks after it, and setup that would change a verdict unseen. Each attack is
//! observed from a second session where it acts on the server.

use super::*;

/// The thread page with `extra` added to its filter.
fn page_with(extra: &str) -> String {
    format!(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible' {extra}\n\
         ORDER BY p.created_at, p.id LIMIT 20"
    )
}

/// The verdicts of a JSON report by read path, in order.
fn verdict_list(run: &Run) -> Vec<(String, String)> {
    let report = run.report();
    report["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .map(|c| {
                    (
                        c["read_path"].as_str().unwrap_or("").to_string(),
                        c["verdict"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

// A setup statement that turns on a logging, tracking, developer or file-writing setting:
// refused before anything runs, however it is spelled; a declared setting that writes files
// (`jit_dump_bitcode`, once accepted because its name starts with `jit`) and a cost setting no
// server runs with are refused too.
#[test]
fn settings_outside_the_allow_list_are_refused_before_anything_runs() {
    let db = fresh_board("attack_settings_allow_list");
    let mut failures = Vec::new();
    let setups = [
        "SET LOCAL debug_print_plan = on",
        "SET log_min_duration_statement = 0",
        "SELECT set_config('log_statement', 'all', true)",
        "SET LOCAL temp_file_limit = -1",
        "SET LOCAL zero_damaged_pages = on",
        "SET LOCAL track_functions = 'all'",
        "SET LOCAL jit_dump_bitcode = on",
    ];
    for setup in setups {
        let dir = one_read_path(PAGE, &expectation(true, &setup_line(&[setup])));
        let run = check(&db, dir.path(), &[]);
        if run.status != Some(2) || !run.stderr.contains("a project's files may") {
            failures.push(format!("setup {setup:?}: wanted exit 2\n{}", run.shown()));
        }
    }
    for settings in [
        "settings = { jit = \"on\", jit_above_cost = 0, jit_dump_bitcode = \"on\" }",
        "settings = { cpu_tuple_cost = 1000000 }",
        "settings = { random_page_cost = 0.0000001 }",
    ] {
        let dir = one_read_path(PAGE, &expectation(true, &format!("{settings}\n")));
        let run = check(&db, dir.path(), &[]);
        if run.status != Some(2) || !run.stderr.contains("settings:") {
            failures.push(format!("{settings}: wanted exit 2\n{}", run.shown()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// A setting outside the allow-list changed where no reader of the files can see it (a name
// computed at run time): the guard watches every setting a session can change, not a list of
// the planner's, so the check is an error, never a pass. Before, debug_print_plan was not
// watched: the check passed and the server log took every plan.
#[test]
fn a_logging_setting_changed_by_a_computed_name_is_an_error_not_a_pass() {
    let db = fresh_board("attack_settings_computed");
    let setup = setup_line(&["SELECT set_config('debug_print' || '_plan', 'on', true)"]);
    let dir = one_read_path(PAGE, &expectation(true, &setup));
    let run = check(&db, dir.path(), &[]);
    let (verdict, _) = only_check(&run);
    assert_eq!(verdict, "error", "{}", run.shown());
    assert!(run.stdout.contains("debug_print_plan"), "{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
}

// What a scope's setup changed is shown in every format: `SET LOCAL TIME ZONE 'UTC'` can turn
// a not-chosen into a pass where a predicate compares a timestamp with a zone-less literal, and
// nothing said it was there.
#[test]
fn what_setup_changes_is_shown_in_every_format() {
    let db = fresh_board("attack_setup_shown");
    let setup = setup_line(&["SET LOCAL TIME ZONE 'Pacific/Chatham'"]);
    let dir = one_read_path(PAGE, &expectation(true, &setup));
    let mut failures = Vec::new();
    for format in ["table", "json", "junit", "markdown", "github"] {
        let run = plancheck_run(&[
            "check",
            "--database-url",
            &db,
            "--project",
            dir.path().to_str().unwrap(),
            "--format",
            format,
            "--warmup",
            "0",
            "--iterations",
            "1",
            "--color",
            "never",
        ]);
        if run.status != Some(0) || !run.stdout.contains("Pacific/Chatham") {
            failures.push(format!("--format {format}\n{}", run.shown()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `plancheck ARGS`, run to the end.
fn plancheck_run(args: &[&str]) -> Run {
    run(args)
}

// A read path sets a session-level custom setting through `query_to_xml`, which no reader of
// its text sees as `set_config`; the rollback leaves the setting's placeholder, which a later
// check in the same session then reads as '' where a new session has none. The read path that
// reads it without `missing_ok` errors in a new session and passed in the reused one. Its
// verdict must be the one it gets with a session of its own.
#[test]
fn state_left_through_query_to_xml_does_not_reach_the_next_check() {
    let db = fresh_board("attack_session_leak");
    let expectation = expectation(false, "");
    let dir = read_paths(&[
        (
            "a",
            &page_with(
                "AND query_to_xml('SELECT set_config(''app.tenant'', ''7'', false)', \
                 false, false, '') IS NOT NULL",
            ),
            &expectation,
        ),
        (
            "b",
            &page_with("AND current_setting('app.tenant') IS NOT NULL"),
            &expectation,
        ),
    ]);
    let own = check(&db, dir.path(), &["--jobs", "1", "--session-per-check"]);
    let shared = check(&db, dir.path(), &["--jobs", "1"]);
    let b_alone = verdict_list(&own);
    assert_eq!(
        b_alone,
        vec![
            ("a".to_string(), "pass".to_string()),
            ("b".into(), "error".into())
        ],
        "the control: in a session of its own, b cannot read app.tenant\n{}",
        own.shown()
    );
    assert_eq!(verdict_list(&shared), b_alone, "{}", shared.shown());
    assert_eq!(shared.status, Some(1), "{}", shared.shown());
}

// `SELECT setval(…)` in a migration survives the rollback (sequences are not transactional):
// the application's next INSERT would take a value already used. Refused before anything
// runs; written so that no reader of the text can see it (a name built at run time in a DO
// block), it is caught after the statement, the sequence set back at once, and the run stops.
#[test]
fn a_migration_that_moves_a_sequence_back_leaves_it_where_it_was() {
    let db = fresh_board("attack_migration_setval");
    let mut failures = Vec::new();
    for sql in [
        "SELECT setval('victim_id_seq', 1, false);\n",
        "SELECT pg_catalog.setval('victim_id_seq'::regclass, 1);\n",
        "DO $$ BEGIN EXECUTE 'SELECT set' || 'val(''victim_id_seq'', 1, false)'; END $$;\n",
    ] {
        make_victim(&db);
        let run = check_migration(&db, &reference_project(), Some("thread-page-first"), sql);
        let seq = query_text(
            &db,
            "SELECT last_value || ' ' || is_called FROM victim_id_seq",
        );
        if run.status != Some(2) || seq != "5 true" {
            failures.push(format!(
                "{sql:?}: victim_id_seq is at {seq}, wanted 5 true and exit 2\n{}",
                run.shown()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// A migration replaces plancheck's own executor of its statements with one that skips DROP
// INDEX: the same migration then gave pass → pass, exit 0, instead of pass → missing-index.
#[test]
fn a_migration_cannot_replace_the_executor_of_its_statements() {
    let db = fresh_board("attack_migration_executor");
    let sql = "CREATE OR REPLACE FUNCTION pg_temp.plancheck_apply(statement pg_catalog.text) \
               RETURNS void LANGUAGE plpgsql AS $f$BEGIN \
               IF statement ILIKE 'DROP INDEX%' THEN RETURN; END IF; \
               EXECUTE statement; END$f$;\n\
               DROP INDEX posts_thread_visible_idx;\n";
    let run = check_migration(&db, &reference_project(), Some("thread-page-first"), sql);
    assert!(
        relation_exists(&db, "posts_thread_visible_idx"),
        "{}",
        run.shown()
    );
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(
        run.stderr.contains("pg_temp.plancheck_apply"),
        "{}",
        run.shown()
    );
}

// A migration drops the required index, builds a look-alike table and index in a schema of its
// own and puts that schema first on the search path: the checks after it read the look-alike
// (pass → pass). The session is put back as it was before the migration, so they read the
// application's table, whose index is gone.
#[test]
fn a_migration_search_path_does_not_reach_the_checks_after_it() {
    let db = fresh_board("attack_migration_search_path");
    let sql = "DROP INDEX posts_thread_visible_idx;\n\
               CREATE SCHEMA shadow;\n\
               CREATE TABLE shadow.posts AS SELECT * FROM public.posts;\n\
               CREATE INDEX posts_thread_visible_idx ON shadow.posts (thread_id, created_at, id) \
               WHERE visibility = 'visible';\n\
               SET search_path = shadow, public;\n";
    let run = check_migration(&db, &reference_project(), Some("thread-page-first"), sql);
    let report = run.report();
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    let member: Vec<&serde_json::Value> =
        checks.iter().filter(|c| c["scope"] == "member").collect();
    assert_eq!(member.len(), 1, "{}", run.shown());
    assert_eq!(member[0]["before"]["verdict"], "pass", "{}", run.shown());
    assert_eq!(member[0]["verdict"], "missing-index", "{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
    assert!(!relation_exists(&db, "shadow.posts"), "{}", run.shown());
}

// A read path that writes temporary files (a sort far larger than work_mem) is bounded by
// `--temp-file-limit` where the role may set it: the check is an error, not a pass that filled
// the server's disk (1.57 GiB in 6 s was seen without a limit).
#[test]
fn temporary_files_are_bounded_by_temp_file_limit() {
    let db = fresh_board("attack_temp_files");
    let plan = page_with(
        "AND (SELECT count(*) FROM (SELECT g FROM generate_series(1, 3000000) g \
         ORDER BY g DESC OFFSET 1) s) > 0",
    );
    let dir = one_read_path(&plan, &expectation(false, ""));
    let bounded = check(&db, dir.path(), &["--temp-file-limit", "1MB"]);
    let (verdict, _) = only_check(&bounded);
    assert_eq!(verdict, "error", "{}", bounded.shown());
    assert!(
        bounded.stdout.contains("temp_file_limit"),
        "{}",
        bounded.shown()
    );
    // The control: the same read path within a limit its sort fits passes.
    let roomy = check(&db, dir.path(), &["--temp-file-limit", "1GB"]);
    assert_eq!(only_check(&roomy).0, "pass", "{}", roomy.shown());
}

// A check held the locks its runs took until its end: behind a check of six 1 s runs, an
// application's ALTER TABLE waited the whole check (4.7 s measured), and with it every session
// queued behind the ALTER. Each run (and the Parse before them) now releases its locks, so the
// ALTER waits one run at most.
#[test]
fn a_check_releases_its_locks_between_runs() {
    let db = fresh_board("attack_locks_between_runs");
    let plan = page_with("AND (SELECT count(*) FROM pg_sleep(1)) = 1");
    let dir = one_read_path(&plan, &expectation(false, ""));
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
        "6",
    ])
    .spawn()
    .unwrap();
    let mut reap = Reap(Some(child));
    let seen = wait_until(within(Duration::from_secs(30)), || {
        active_backend(&db, "%pg_sleep(1)%").is_some()
    });
    assert!(seen, "the check's backend never showed");
    // The ALTER may wait 2.5 s: more than one run, much less than the five runs still to come.
    let started = Instant::now();
    let altered = try_sql(
        &db,
        "BEGIN; SET LOCAL lock_timeout = '2500ms'; \
         ALTER TABLE posts ADD COLUMN lock_probe int; ROLLBACK",
    );
    let waited = started.elapsed();
    let run = Run::finish(reap.0.take().unwrap(), started);
    assert!(
        altered.is_ok(),
        "the ALTER TABLE waited longer than 2.5 s for the check's locks: {altered:?}\n{}",
        run.shown()
    );
    assert!(
        run.took > Duration::from_secs(3),
        "the check ended before the ALTER could be seen to wait for it: {:.1?} after it\n{}",
        run.took,
        run.shown()
    );
    assert_eq!(only_check(&run).0, "pass", "{}", run.shown());
    eprintln!("the ALTER TABLE waited {waited:.2?}");
}

/// A TCP proxy in front of the test server's Unix socket (`conn`'s host and port) that forwards
/// both ways until the client sends `marker`, then forwards nothing more while keeping both
/// connections open: a server that stopped answering after the connection. The connection
/// string to it, with the rest of `conn`.
fn stalling_proxy(conn: &str, marker: &'static [u8]) -> String {
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let field = |key: &str| {
        conn.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key))
            .expect("a key=value connection string")
            .to_string()
    };
    let socket = format!("{}/.s.PGSQL.{}", field("host="), field("port="));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = std::os::unix::net::UnixStream::connect(&socket) else {
                return;
            };
            let stalled = Arc::new(AtomicBool::new(false));
            let (mut c_in, mut c_out) = (client.try_clone().unwrap(), client);
            let (mut s_in, mut s_out) = (server.try_clone().unwrap(), server);
            let flag = stalled.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = c_in.read(&mut buf) {
                    if n == 0 {
                        // plancheck is gone: end the server's session too.
                        let _ = s_out.shutdown(std::net::Shutdown::Both);
                        return;
                    }
                    if buf[..n].windows(marker.len()).any(|w| w == marker) {
                        flag.store(true, Ordering::SeqCst);
                    }
                    if flag.load(Ordering::SeqCst) || s_out.write_all(&buf[..n]).is_err() {
                        continue;
                    }
                }
            });
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = s_in.read(&mut buf) {
                    if n == 0 || stalled.load(Ordering::SeqCst) {
                        if n == 0 {
                            return;
                        }
                        continue;
                    }
                    if c_out.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    conn.split_whitespace()
        .filter(|kv| !kv.starts_with("host=") && !kv.starts_with("port="))
        .chain(["host=127.0.0.1", &format!("port={port}"), "sslmode=disable"])
        .collect::<Vec<_>>()
        .join(" ")
}

// A server that stops answering after the connection, while plancheck reads what it needs
// before the checks (here: the server's settings): those reads were not on plancheck's clock,
// and the run hung for ever. Now they are: exit 3 within the statement timeout and its grace.
#[test]
fn a_server_that_stops_answering_before_the_checks_cannot_hang_the_run() {
    let db = fresh_board("attack_stall_before_checks");
    let stalling = stalling_proxy(&db, b"FROM pg_catalog.pg_settings s WHERE");
    let dir = one_read_path(PAGE, &expectation(true, ""));
    let run = check(&stalling, dir.path(), &["--statement-timeout", "1s"]);
    assert_eq!(run.status, Some(3), "{}", run.shown());
    assert!(
        run.took < Duration::from_secs(15),
        "took {:.1?}\n{}",
        run.took,
        run.shown()
    );
    assert!(
        run.stderr.contains("could not read the server's settings")
            && run.stderr.contains("did not answer"),
        "{}",
        run.shown()
    );
}

// A read path whose run changes a planner setting through a function it calls (`query_to_xml`
// runs `set_config` for the rest of the transaction): the guard after that run stops the check,
// an `error`, never a pass on plans made under the changed setting. The first run carries the
// Parse of the runs' statements in its round trip; the guard after it must still see the change,
// without parameters (EXPLAIN of the text) and with them (EXPLAIN EXECUTE of the prepared
// statement), whether the first run is a warm-up or measured. The same read path changing
// nothing passes: the control.
#[test]
fn a_run_that_changes_a_planner_setting_is_an_error_not_a_pass() {
    let db = fresh_board("attack_run_changes_setting");
    let calls = |inner: &str| {
        format!(
            "AND query_to_xml('{inner}', false, false, '') IS NOT NULL",
            inner = inner.replace('\'', "''")
        )
    };
    let changes = calls("SELECT set_config('enable_' || 'seqscan', 'off', true)");
    let harmless = calls("SELECT 1");
    let with_param = |sql: String| sql.replace("p.thread_id = 1", "p.thread_id = $1");
    let (text, param) = (expectation(false, ""), expectation(true, ""));
    let dir = read_paths(&[
        ("text_changes", &page_with(&changes), &text),
        ("param_changes", &with_param(page_with(&changes)), &param),
        ("text_harmless", &page_with(&harmless), &text),
        ("param_harmless", &with_param(page_with(&harmless)), &param),
    ]);
    let wanted = vec![
        ("param_changes".to_string(), "error".to_string()),
        ("param_harmless".into(), "pass".into()),
        ("text_changes".into(), "error".into()),
        ("text_harmless".into(), "pass".into()),
    ];
    for runs in [&[][..], &["--warmup", "1", "--iterations", "2"][..]] {
        let mut args = vec!["--jobs", "1"];
        args.extend_from_slice(runs);
        let run = check(&db, dir.path(), &args);
        let mut got = verdict_list(&run);
        got.sort();
        assert_eq!(got, wanted, "{runs:?}\n{}", run.shown());
        assert_eq!(
            run.stdout.matches("a run of the read path").count(),
            2,
            "{runs:?}: each error says a run changed a setting\n{}",
            run.shown()
        );
        assert_eq!(run.status, Some(1), "{}", run.shown());
    }
}
