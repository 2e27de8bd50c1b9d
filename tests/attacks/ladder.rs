//! `plancheck ladder` as an attacker, or a careless read path, would meet it: a request that
//! leaves a lock in its pool session, a ladder that must end at `--max-seconds` whatever its
//! requests are doing, and a pool that must leave the application its connections. Each is
//! looked at where it acts: a second session's lock, the server's sessions after the bound,
//! the application's own connection.

use super::*;

/// `ladder --format json -q` of `dir` on `db` with `args`, spawned.
fn ladder_process(db: &str, dir: &Path, args: &[&str]) -> std::process::Child {
    let mut all = vec![
        "ladder",
        "--database-url",
        db,
        "--project",
        dir.to_str().unwrap(),
        "--format",
        "json",
        "-q",
    ];
    all.extend(args);
    plancheck_process(&all).spawn().unwrap()
}

// A request takes a session-level advisory lock (`pg_try_advisory_lock`); the rollback does not
// release it. Before: the pool session held it for the whole ladder, and the application's own
// try failed throughout. After a request its session is read and, holding the lock, replaced:
// a second session's try succeeds while the ladder runs, between its requests.
#[test]
fn a_lock_a_ladder_request_takes_is_not_kept_by_its_session() {
    let db = fresh_board("attack_ladder_lock");
    let dir = project(&[
        (
            "plans/locking.sql",
            "SELECT p.id FROM posts p\n\
             WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
               AND pg_try_advisory_lock(4242) IS NOT NULL\n\
             ORDER BY p.created_at, p.id LIMIT 20",
        ),
        ("expectations/locking.toml", &expectation(false, "")),
    ]);
    let child = ladder_process(
        &db,
        dir.path(),
        &[
            "--pool",
            "1",
            "--rates",
            "2",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "6",
            "--min-requests",
            "12",
        ],
    );
    let mut reap = Reap(Some(child));
    let started = Instant::now();
    let ended = |reap: &mut Reap| reap.0.as_mut().unwrap().try_wait().unwrap().is_some();
    // The second session: the application's own try, every 100 ms once the ladder's session is
    // open, until the ladder ends (a lock it gets is let go at once).
    let session = Session::open(&db);
    let opened = wait_until(within(Duration::from_secs(20)), || {
        ended(&mut reap) || plancheck_sessions(&db) != "0"
    });
    assert!(opened, "the ladder never opened its session");
    // The first request is at the rung's start.
    std::thread::sleep(Duration::from_secs(1));
    let (mut tries, mut got) = (0, 0);
    while !ended(&mut reap) && started.elapsed() < Duration::from_secs(40) {
        tries += 1;
        if session.rows("SELECT pg_try_advisory_lock(4242)") == ["t"] {
            got += 1;
            session.execute("SELECT pg_advisory_unlock_all()");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let run = Run::finish(reap.0.take().unwrap(), started);
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let report = run.report();
    let rung = &report["rungs"][0];
    assert!(
        rung["served_requests"].as_u64().unwrap_or(0) >= 6,
        "{report:#}"
    );
    assert!(
        tries >= 20 && got * 10 >= tries * 8,
        "the application's try got the lock {got} times of {tries} while the ladder ran\n{}",
        run.shown()
    );
    // The report says the sessions were replaced, and why.
    assert!(
        rung["sessions_replaced"].as_u64().unwrap_or(0) >= 6,
        "{report:#}"
    );
    assert_eq!(rung["replaced_because"], "locks", "{report:#}");
}

// Requests of 6 s each under `--max-seconds 2`. Before: the ladder ran 32.6 s, both sessions
// active on the server until about 30 s. The bound ends the run, the requests in flight
// cancelled as Ctrl-C cancels them, and no session is left active on the server.
#[test]
fn max_seconds_ends_the_ladder_at_its_bound_with_no_request_left_running() {
    let db = fresh_board("attack_ladder_max_seconds");
    let dir = project(&[
        (
            "plans/slow.sql",
            "SELECT p.id FROM posts p\n\
             WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
               AND (SELECT count(*) FROM pg_sleep(6)) = 1\n\
             ORDER BY p.created_at, p.id LIMIT 1",
        ),
        ("expectations/slow.toml", &expectation(false, "")),
    ]);
    let started = Instant::now();
    let child = ladder_process(
        &db,
        dir.path(),
        &[
            "--pool",
            "2",
            "--rates",
            "2,4",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "30",
            "--max-seconds",
            "2",
        ],
    );
    let run = Run::finish(child, started);
    // Right after the run: no request of it still running on the server.
    let active = query_text(
        &db,
        "SELECT count(*) FROM pg_stat_activity \
         WHERE application_name = 'plancheck' AND state = 'active' \
           AND query LIKE '%pg_sleep(6)%' AND pid <> pg_backend_pid()",
    );
    assert_eq!(active, "0", "requests still running\n{}", run.shown());
    assert!(
        run.took < Duration::from_secs(6),
        "the ladder ran {:.1?} under --max-seconds 2\n{}",
        run.took,
        run.shown()
    );
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let report = run.report();
    let rungs = report["rungs"].as_array().unwrap();
    assert_eq!(rungs.len(), 1, "{report:#}");
    assert_eq!(rungs[0]["partial"], "max_seconds", "{report:#}");
    wait_for_sessions_to_end(&db, Duration::from_secs(5));
}

// A server of 12 connections (3 reserved for superusers), the ladder asked for a pool of 9 as a
// superuser. Before: the pool took the 9 slots left and the application's own connection was
// refused ("remaining connection slots are reserved"). The pool keeps the room `check -j`
// keeps, and says it was cut; the application connects while the ladder runs.
#[test]
fn the_ladders_pool_leaves_the_application_its_connections() {
    let rt = runtime();
    let server = rt
        .block_on(plancheck::server::Server::start_with_settings(
            plancheck::server::find_bin_dir().unwrap(),
            None,
            &[("max_connections", "12")],
        ))
        .unwrap();
    let db = server.connection_string("postgres");
    sql(
        &db,
        "CREATE ROLE app LOGIN; \
         CREATE TABLE pages (id int PRIMARY KEY, body text); \
         INSERT INTO pages SELECT g, 'page ' || g FROM generate_series(1, 1000) g; \
         ANALYZE pages",
    );
    let dir = project(&[
        (
            "plans/page.sql",
            "SELECT p.body FROM pages p WHERE p.id = 7",
        ),
        (
            "expectations/page.toml",
            "[scopes.member]\nindex = \"pages_pkey\"\n",
        ),
    ]);
    let child = ladder_process(
        &db,
        dir.path(),
        &[
            "--pool",
            "9",
            "--rates",
            "20",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "6",
            "--min-requests",
            "20",
        ],
    );
    let mut reap = Reap(Some(child));
    let started = Instant::now();
    let pool_open = wait_until(within(Duration::from_secs(20)), || {
        reap.0.as_mut().unwrap().try_wait().unwrap().is_some()
            || plancheck_sessions(&db).parse::<u32>().unwrap_or(0) >= 4
    });
    assert!(pool_open, "the pool never opened");
    // The test server's superuser is `plancheck`.
    let app = db.replace(" user=plancheck ", " user=app ");
    assert_ne!(app, db, "the connection string names its user: {db}");
    let connected = try_sql(&app, "SELECT 1");
    let ladder_ran_meanwhile = reap.0.as_mut().unwrap().try_wait().unwrap().is_none();
    let run = Run::finish(reap.0.take().unwrap(), started);
    assert!(
        ladder_ran_meanwhile,
        "the ladder ended before the application connected\n{}",
        run.shown()
    );
    assert_eq!(
        connected,
        Ok(()),
        "the application's connection, during the ladder\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let report = run.report();
    // 9 free slots (12, less 3 reserved): a quarter of them and at least 3 left, 6 at most
    // (fewer when a session of the test's own was open as the ladder counted).
    let pool = report["pool"].as_u64().unwrap_or(0);
    assert!((4..=6).contains(&pool), "{report:#}");
    assert_eq!(report["pool_cut"]["asked"], 9, "{report:#}");
    assert!(
        run.stderr.contains("--pool 9 would take too many"),
        "{}",
        run.shown()
    );
    drop(server);
}
