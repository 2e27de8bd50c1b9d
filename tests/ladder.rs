//! `plancheck ladder` against a real PostgreSQL: arrivals on a schedule that slow responses do
//! not delay (the queue shows in the latency), the figures and the shoulder, budgets from
//! plancheck.toml, a stop that reports what was measured, and the inputs refused.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// About a millisecond on the test board.
const FAST: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
    ORDER BY p.created_at, p.id LIMIT 20";

/// 200 ms a request, whatever the load: one session serves 5 a second.
const SLOW: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
      AND (SELECT count(*) FROM pg_sleep(0.2)) = 1\n\
    ORDER BY p.created_at, p.id LIMIT 1";

/// About 2 ms a request: over a 1 ms time budget in every run, beyond the 0.5 ms noise floor.
const TWO_MS: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
      AND (SELECT count(*) FROM pg_sleep(0.002)) = 1\n\
    ORDER BY p.created_at, p.id LIMIT 20";

fn expectation(share: Option<f64>) -> String {
    let share = share.map(|s| format!("share = {s}\n")).unwrap_or_default();
    format!("{share}{}", member("posts_thread_visible_idx"))
}

/// `ladder --format json` of `project` on `db` with `args`, to the end.
fn ladder(db: &str, project: &std::path::Path, args: &[&str]) -> Run {
    let mut all = vec![
        "ladder",
        "--database-url",
        db,
        "--project",
        project.to_str().unwrap(),
        "--format",
        "json",
        "-q",
    ];
    all.extend(args);
    run(&all)
}

fn rung(report: &serde_json::Value, i: usize) -> &serde_json::Value {
    &report["rungs"][i]
}

fn f(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number `{key}` in {v:#}"))
}

#[test]
fn arrivals_are_not_delayed_by_slow_responses_so_the_queue_shows_in_the_latency() {
    // One session, 200 ms a request: it serves 5 a second. Offered 10 a second, the arrivals
    // keep coming on schedule and wait for the session: a request-then-sleep loop would
    // report 200 ms; the ladder reports the queue.
    let db = fresh_board("ladder_queue");
    let dir = one_read_path(SLOW, &expectation(None));
    let out = ladder(
        &db,
        dir.path(),
        &[
            "--pool",
            "1",
            "--rates",
            "10",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "3",
            "--min-requests",
            "1",
        ],
    );
    assert_eq!(
        out.code(),
        0,
        "no budget: a shoulder alone does not fail\n{}",
        out.shown()
    );
    let report = out.report();
    let r = rung(&report, 0);
    let (offered, served) = (f(r, "offered"), f(r, "served"));
    assert!(
        (offered - 10.0).abs() < 1.0,
        "offered {offered}/s\n{report:#}"
    );
    assert!(
        served < 6.5,
        "one session cannot serve more than 5/s: {served}\n{report:#}"
    );
    let (p95, late) = (f(r, "p95_ms"), f(r, "late_p95_ms"));
    assert!(
        p95 > 1_000.0,
        "the queue is not in the latency: p95 {p95} ms\n{report:#}"
    );
    assert!(
        late > 800.0,
        "the wait is not in the lateness: {late} ms\n{report:#}"
    );
    assert_eq!(report["shoulder"], 0, "{report:#}");
    let shows: Vec<&str> = r["shows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(shows.contains(&"unserved"), "{shows:?}");
    wait_for_sessions_to_end(&db, Duration::from_secs(15));
}

#[test]
fn under_capacity_what_is_offered_is_served_and_every_figure_is_reported() {
    let db = fresh_board("ladder_fast");
    let dir = read_paths(&[
        ("first", FAST, &expectation(Some(0.75))),
        ("second", FAST, &expectation(Some(0.25))),
    ]);
    let out = ladder(
        &db,
        dir.path(),
        &[
            "--rates",
            "20,40",
            "--warmup-seconds",
            "1",
            "--rung-seconds",
            "2",
            "--min-requests",
            "20",
        ],
    );
    assert_eq!(out.code(), 0, "{}", out.shown());
    let report = out.report();
    assert_eq!(report["pool"], 3);
    assert_eq!(report["arrivals"], "fixed");
    assert_eq!(report["pages"][0]["share"], 0.75, "{report:#}");
    assert_eq!(report["rungs"].as_array().unwrap().len(), 2);
    for i in 0..2 {
        let r = rung(&report, i);
        assert_eq!(r["errors"], 0, "{r:#}");
        // A read path of PostgreSQL's own functions leaves nothing: its sessions are kept.
        assert_eq!(r["sessions_replaced"], 0, "{r:#}");
        let (offered, served) = (f(r, "offered"), f(r, "served"));
        assert!(
            served >= 0.9 * offered,
            "served {served} of {offered}\n{r:#}"
        );
        for key in [
            "offered",
            "served",
            "errors",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "late_p95_ms",
        ] {
            assert!(r[key].is_number(), "rung without `{key}`: {r:#}");
            for page in r["pages"].as_array().unwrap() {
                assert!(page[key].is_number(), "page without `{key}`: {page:#}");
            }
        }
        assert!(f(r, "p50_ms") <= f(r, "p95_ms") && f(r, "p95_ms") <= f(r, "p99_ms"));
        // The mix keeps the shares: three requests of `first` to one of `second`.
        let pages = r["pages"].as_array().unwrap();
        let (a, b) = (
            f(&pages[0], "offered_requests"),
            f(&pages[1], "offered_requests"),
        );
        let part = a / (a + b);
        assert!(
            (0.6..0.9).contains(&part),
            "first took {part} of the requests\n{r:#}"
        );
    }
    assert!(report["shoulder"].is_null(), "{report:#}");
    assert_eq!(report["failed"], false);
}

#[test]
fn a_rung_over_the_projects_budget_fails_and_a_limit_rung_is_only_recorded() {
    let db = fresh_board("ladder_budget");
    let slow = expectation(None);
    let files = |toml: &str| {
        project(&[
            ("plancheck.toml", toml),
            ("plans/slow.sql", SLOW),
            ("expectations/slow.toml", &slow),
        ])
    };
    let args = [
        "--rates",
        "2",
        "--warmup-seconds",
        "0",
        "--rung-seconds",
        "2",
        "--min-requests",
        "2",
    ];
    let over = files("[ladder]\np95_ms = 50\n");
    let out = ladder(&db, over.path(), &args);
    assert_eq!(
        out.code(),
        1,
        "200 ms requests under a 50 ms budget\n{}",
        out.shown()
    );
    let report = out.report();
    assert_eq!(rung(&report, 0)["budget_ms"], 50.0);
    assert_eq!(rung(&report, 0)["over_budget"], true);
    assert_eq!(report["failed"], true);

    let limit =
        files("[ladder]\np95_ms = 50\n[[ladder.rung]]\nrate = 2\np95_ms = 60\nlimit = true\n");
    let out = ladder(&db, limit.path(), &args);
    assert_eq!(
        out.code(),
        0,
        "a limit is recorded, not failed\n{}",
        out.shown()
    );
    let report = out.report();
    assert_eq!(rung(&report, 0)["limit"], true);
    assert_eq!(rung(&report, 0)["over_budget"], true);
    assert_eq!(report["shoulder"], 0);

    // The table says it too.
    let out = run(&[
        "ladder",
        "--database-url",
        &db,
        "--project",
        over.path().to_str().unwrap(),
        "--rates",
        "2",
        "--warmup-seconds",
        "0",
        "--rung-seconds",
        "2",
        "--min-requests",
        "2",
    ]);
    assert_eq!(out.code(), 1, "{}", out.shown());
    assert!(out.stdout.contains("OVER"), "{}", out.shown());
    assert!(
        out.stdout.contains("shoulder: the rung at 2/s"),
        "{}",
        out.shown()
    );
    assert!(
        out.stdout.contains("p95 over its budget"),
        "{}",
        out.shown()
    );
}

#[test]
fn ctrl_c_ends_the_rung_and_reports_what_was_measured_as_partial() {
    let db = fresh_board("ladder_stop");
    // 200 ms requests, and one of 60 s in the mix: a stop cancels it rather than waiting.
    const MINUTE: &str = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
          AND (SELECT count(*) FROM pg_sleep(60)) = 1\n\
        ORDER BY p.created_at, p.id LIMIT 1";
    let dir = read_paths(&[
        ("slow", SLOW, &expectation(Some(0.9))),
        ("stuck", MINUTE, &expectation(Some(0.1))),
    ]);
    let child = plancheck_process(&[
        "ladder",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
        "--rates",
        "4,8",
        "--warmup-seconds",
        "0",
        "--rung-seconds",
        "60",
    ])
    .spawn()
    .unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = Run::finish(child, started);
    assert_eq!(out.status, Some(130), "{}", out.shown());
    assert!(
        out.took < Duration::from_secs(10),
        "did not stop promptly\n{}",
        out.shown()
    );
    let report = out.report();
    let rungs = report["rungs"].as_array().unwrap();
    assert_eq!(rungs.len(), 1, "the next rung must not start\n{report:#}");
    assert_eq!(rungs[0]["partial"], "stopped");
    assert!(f(&rungs[0], "served_requests") >= 4.0, "{report:#}");
    assert_eq!(
        rungs[0]["errors"], 0,
        "a cancelled request is not a failed one\n{report:#}"
    );
    wait_for_sessions_to_end(&db, Duration::from_secs(15));
}

#[test]
fn bad_rungs_and_shares_are_refused_before_anything_runs() {
    let db = fresh_board("ladder_refusals");
    let dir = one_read_path(FAST, &expectation(None));
    let p = dir.path().to_str().unwrap();
    let refused = |args: &[&str], says: &str| {
        let mut all = vec!["ladder", "--database-url", &db, "--project", p];
        all.extend(args);
        let out = run(&all);
        assert_eq!(out.code(), 2, "{}", out.shown());
        assert!(out.stderr.contains(says), "not `{says}`:\n{}", out.shown());
    };
    refused(&["--rates", "5000"], "over --max-rate 1000");
    refused(&["--rates", "0"], "a rate must be above 0");
    refused(&[], "--rates");
    refused(&["--rates", "5", "--members", "50"], "cannot be used with");

    let over = read_paths(&[
        ("first", FAST, &expectation(Some(0.75))),
        ("second", FAST, &expectation(Some(0.5))),
    ]);
    let out = run(&[
        "ladder",
        "--database-url",
        &db,
        "--project",
        over.path().to_str().unwrap(),
        "--rates",
        "5",
    ]);
    assert_eq!(out.code(), 2, "{}", out.shown());
    assert!(out.stderr.contains("add up to 1.250"), "{}", out.shown());

    let zero = one_read_path(FAST, &expectation(Some(0.0)));
    let out = run(&[
        "ladder",
        "--database-url",
        &db,
        "--project",
        zero.path().to_str().unwrap(),
        "--rates",
        "5",
    ]);
    assert_eq!(out.code(), 2, "{}", out.shown());
    assert!(
        out.stderr
            .contains("expectations/path.toml:1:9: `share` must be above 0"),
        "{}",
        out.shown()
    );
}

#[test]
fn rungs_given_as_members_are_their_rate_and_are_named_by_members() {
    let db = fresh_board("ladder_members");
    let dir = one_read_path(FAST, &expectation(None));
    let out = ladder(
        &db,
        dir.path(),
        &[
            "--members",
            "100",
            "--interval",
            "5s",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "1",
            "--min-requests",
            "10",
        ],
    );
    assert_eq!(out.code(), 0, "{}", out.shown());
    let report = out.report();
    let r = rung(&report, 0);
    assert_eq!(r["members"], 100, "{r:#}");
    assert_eq!(r["rate"], 20.0, "{r:#}");
    assert_eq!(report["interval_s"], 5.0);
}

#[test]
fn the_page_puts_the_checks_one_read_at_a_time_beside_the_ladder() {
    let db = fresh_board("ladder_page");
    let budget = |ms: &str| format!("budget = {{ warm_ms = {ms} }}\n{}", expectation(Some(0.5)));
    let dir = read_paths(&[
        ("fast", FAST, &budget("50")),
        // A time budget is over only beyond the noise floor and in every run: a read path of
        // 2 ms against 1 ms.
        ("over", TWO_MS, &budget("1")),
    ]);
    let p = dir.path().to_str().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let run_dir = saved.path().join("run");
    let checked = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        p,
        "--iterations",
        "3",
        "--warmup",
        "1",
        "--save-plans",
        run_dir.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(
        checked.code(),
        1,
        "the tiny budget is over: {}",
        checked.shown()
    );
    let chart = saved.path().join("chart.svg");
    let page = saved.path().join("page.md");
    let args = |format: &'static str| {
        [
            "ladder",
            "--database-url",
            &db,
            "--project",
            p,
            "-q",
            "--rates",
            "20",
            "--warmup-seconds",
            "1",
            "--rung-seconds",
            "2",
            "--min-requests",
            "20",
            "--checks",
            run_dir.to_str().unwrap(),
            "--format",
            format,
        ]
    };
    let mut md_args = args("markdown").to_vec();
    let (svg_arg, page_arg) = (
        format!("svg={}", chart.display()),
        format!("markdown={}", page.display()),
    );
    md_args.extend(["--report", &svg_arg, "--report", &page_arg]);
    let out = run(&md_args);
    // A check over its budget fails the page as it fails the check.
    assert_eq!(out.code(), 1, "{}", out.shown());
    let md = &out.stdout;
    for part in [
        "# Performance",
        "| Posts | ",
        "| Iterations | 3 measured per check, after 1 discarded |",
        "| PostgreSQL | ",
        "| Read path [scope] | Time budget | Warm p50 | Fastest | Slowest | p95 | p99 | Runs | Budget used | p50 against the budget | Round trip p50 |",
        "\nWarm p50, Fastest, Slowest, p95, p99: the server's execution time (EXPLAIN ANALYZE)",
        "| Offered | Served | Errors | Budget | p50 | p95 | p99 | Late p95 | |",
        "| Page | Share | 20/s |",
        "## EXPLAIN evidence",
        "| fast [member] | `posts_thread_visible_idx` | pass |",
        "| over [member] | `posts_thread_visible_idx` | **over-budget** |",
    ] {
        assert!(md.contains(part), "no `{part}` in:\n{md}");
    }
    let row = |name: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| {name} [member] | ")) && l.contains(" ms | "))
            .unwrap_or_else(|| panic!("no budget row of {name}:\n{md}"))
            .to_string()
    };
    // Read path, budget, p50, fastest, slowest, p95, p99 (`-`: 3 runs are too few for either),
    // runs, budget used, the p50 against the budget, the round trip.
    let cells = |name: &str| -> Vec<String> {
        row(name)
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_string())
            .collect()
    };
    let (fast, over) = (cells("fast"), cells("over"));
    assert_eq!(fast.len(), 11, "{fast:?}");
    assert_eq!(
        (fast[1].as_str(), fast[7].as_str(), fast[9].as_str()),
        ("50 ms", "3", "within"),
        "{fast:?}"
    );
    assert_eq!((fast[5].as_str(), fast[6].as_str()), ("-", "-"), "{fast:?}");
    assert_eq!(over[9], "**OVER**", "{over:?}");
    assert!(fast[10].ends_with(" ms"), "a round trip: {fast:?}");
    let written = std::fs::read_to_string(&page).unwrap();
    assert!(written.contains("](chart.svg)"), "{written}");
    assert!(
        md.contains(&format!("]({})", chart.display())),
        "stdout gives the path as given"
    );
    assert!(std::fs::read_to_string(&chart).unwrap().starts_with("<svg"));

    let out = run(&args("json"));
    assert_eq!(out.code(), 1, "{}", out.shown());
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v["setup"]["board"]["posts"].as_i64().unwrap() > 0, "{v:#}");
    assert_eq!(v["setup"]["runs"], 3);
    assert_eq!(v["setup"]["discarded"], 1);
    let checks = v["checks"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    for c in checks {
        for key in ["p50_ms", "p95_ms", "p99_ms"] {
            assert!(c[key].is_number(), "{key} of {c:#}");
        }
    }
    assert!(v["ladder"]["rungs"][0]["p95_ms"].is_number(), "{v:#}");

    // A folder that holds no saved run is refused before any load is put on the server.
    let started = Instant::now();
    let mut missing = args("markdown").to_vec();
    missing[15] = "/nonexistent/run";
    let out = run(&missing);
    assert_eq!(out.code(), 2, "{}", out.shown());
    assert!(out.stderr.contains("/nonexistent/run"), "{}", out.shown());
    assert!(started.elapsed() < Duration::from_secs(3), "no rung ran");
}

/// The ladder runs the project's SQL as `check` does, so it says what the role's rights reach
/// outside the rolled-back transaction, and `--strict-role` refuses before any request is sent.
#[test]
fn the_roles_rights_are_said_and_strict_role_refuses_before_any_request() {
    let db = fresh_board("ladder_role");
    let dir = one_read_path(FAST, &expectation(None));
    let scans = || {
        query_text(
            &db,
            "SELECT idx_scan FROM pg_stat_user_indexes \
             WHERE indexrelname = 'posts_thread_visible_idx'",
        )
    };
    let before = scans();
    let rungs = [
        "--rates",
        "20",
        "--warmup-seconds",
        "1",
        "--rung-seconds",
        "1",
        "--min-requests",
        "5",
    ];
    let mut strict = rungs.to_vec();
    strict.push("--strict-role");
    let out = ladder(&db, dir.path(), &strict);
    assert_eq!(out.code(), 2, "{}", out.shown());
    assert!(out.stderr.contains("superuser"), "{}", out.shown());
    assert!(out.stdout.is_empty(), "no report: {}", out.shown());
    wait_for_sessions_to_end(&db, Duration::from_secs(10));
    assert_eq!(scans(), before, "a request ran\n{}", out.shown());
    // The control: without it the same ladder runs, saying the role's rights first, and the
    // index's count shows its requests.
    let out = ladder(&db, dir.path(), &rungs);
    assert_eq!(out.code(), 0, "{}", out.shown());
    assert!(
        out.stderr.contains("warning: role") && out.stderr.contains("superuser"),
        "{}",
        out.shown()
    );
    wait_for_sessions_to_end(&db, Duration::from_secs(10));
    assert_ne!(
        scans(),
        before,
        "the control's requests did not show\n{}",
        out.shown()
    );
}

/// A read path calling the application's own function may leave anything in its session that
/// no read sees: its session is replaced after every request, as `check` closes such a check's
/// session, and the report says so.
#[test]
fn a_read_path_calling_an_applications_function_gets_a_new_session_after_each_request() {
    let db = fresh_board("ladder_unseen");
    sql(
        &db,
        "CREATE FUNCTION thread_of(int) RETURNS int LANGUAGE sql STABLE AS 'SELECT $1'",
    );
    let calls = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = thread_of(1) AND p.visibility = 'visible'\n\
        ORDER BY p.created_at, p.id LIMIT 20";
    let dir = one_read_path(calls, &expectation(None));
    let out = ladder(
        &db,
        dir.path(),
        &[
            "--pool",
            "1",
            "--rates",
            "5",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "2",
            "--min-requests",
            "5",
        ],
    );
    assert_eq!(out.code(), 0, "{}", out.shown());
    let report = out.report();
    let r = rung(&report, 0);
    assert_eq!(r["errors"], 0, "{r:#}");
    let served = f(r, "served_requests");
    assert!(served >= 5.0, "{r:#}");
    assert!(f(r, "sessions_replaced") >= served, "{r:#}");
    assert_eq!(r["replaced_because"], "unseen", "{r:#}");
    wait_for_sessions_to_end(&db, Duration::from_secs(15));
}

/// A read path whose text search loads the server's own dictionary library (snowball, for
/// `english`) keeps its session, as an application's pooled session keeps the library: what the
/// ladder reads after a request does not count libraries. Before, on PostgreSQL 18 (which
/// lists them), every request of it replaced its session.
#[test]
fn a_text_search_dictionary_loaded_by_a_request_does_not_replace_its_session() {
    let db = fresh_board("ladder_dictionary");
    let dir = one_read_path(
        "SELECT plainto_tsquery('english', 'replies and threads')",
        &expectation(None),
    );
    let out = ladder(
        &db,
        dir.path(),
        &[
            "--pool",
            "1",
            "--rates",
            "5",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "2",
            "--min-requests",
            "5",
        ],
    );
    assert_eq!(out.code(), 0, "{}", out.shown());
    let report = out.report();
    let r = rung(&report, 0);
    assert!(f(r, "served_requests") >= 5.0, "{r:#}");
    assert_eq!(r["sessions_replaced"], 0, "{r:#}");
}
