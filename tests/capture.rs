//! `plancheck capture` on a real server's log: the reference read paths sent the way a driver
//! sends them (simple protocol with literals, extended protocol with bound parameters), logged
//! in csvlog, stderr and (from PostgreSQL 15) jsonlog format, written into a project that
//! `check` then runs.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use plancheck::server::Server;

/// The member's thread page as an application sends it: the thread bound, the visibility a
/// literal (so the planner can prove the partial index's predicate).
const MEMBER_THREAD: &str = "SELECT p.id, p.author_id, m.name AS author_name, p.created_at, p.body
FROM posts p
JOIN members m ON m.id = p.author_id
WHERE p.thread_id = $1
  AND p.visibility = 'visible'
ORDER BY p.created_at, p.id
LIMIT 20";

/// A member's profile: the same SQL in every scope.
const PROFILE: &str = "SELECT m.id, m.name, m.joined_at FROM members m WHERE m.id = $1";

/// The moderator's thread page, sent with literals (an ORM without prepared statements).
fn moderator_thread(thread: i64) -> String {
    format!(
        "SELECT p.id, p.author_id, m.name AS author_name, p.created_at, p.body \
         FROM posts p JOIN members m ON m.id = p.author_id \
         WHERE p.thread_id = {thread} ORDER BY p.created_at, p.id LIMIT 20"
    )
}

/// A server that logs every statement of database `board` (csvlog, stderr and, from 15,
/// jsonlog, through the logging collector into `log/`), with the reference board loaded.
struct LoggingServer {
    server: Server,
    runtime: tokio::runtime::Runtime,
}

impl LoggingServer {
    fn start() -> LoggingServer {
        let runtime = runtime();
        let server = runtime.block_on(async {
            let bin = plancheck::server::find_bin_dir().expect("server binaries");
            // jsonlog from PostgreSQL 15.
            let destinations = if major_of(&bin) >= 15 {
                "stderr,csvlog,jsonlog"
            } else {
                "stderr,csvlog"
            };
            let settings = [
                ("logging_collector", "on"),
                ("log_destination", destinations),
                ("log_directory", "log"),
                ("log_filename", "pg"),
            ];
            let server = Server::start_with_settings(bin, None, &settings)
                .await
                .expect("start a logging server");
            let admin = server.target("postgres").connect().await.unwrap();
            admin.batch_execute("CREATE DATABASE board").await.unwrap();
            let client = server.target("board").connect().await.unwrap();
            plancheck::db::fixtures::load(&client, TEST_SCALE, true)
                .await
                .expect("load the board");
            // Logged from here on, in new sessions.
            admin
                .batch_execute("ALTER DATABASE board SET log_statement = 'all'")
                .await
                .unwrap();
            server
        });
        LoggingServer { server, runtime }
    }

    fn url(&self) -> String {
        self.server.connection_string("board")
    }

    fn log(&self, name: &str) -> PathBuf {
        self.server.data().join("log").join(name)
    }

    /// Sizes of the csv, stderr and json logs (0 when there is none) once the collector has
    /// written what it was sent.
    fn log_sizes(&self) -> (u64, u64, u64) {
        let size = |name: &str| fs::metadata(self.log(name)).map_or(0, |m| m.len());
        let mut last = (u64::MAX, u64::MAX, u64::MAX);
        loop {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let now = (size("pg.csv"), size("pg"), size("pg.json"));
            if now == last {
                return now;
            }
            last = now;
        }
    }

    /// The application's traffic, from a session named as an application names itself.
    fn send(&self, work: impl AsyncFnOnce(&tokio_postgres::Client)) {
        let url = format!("{} application_name=forum-app", self.url());
        self.runtime.block_on(async {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect as the application");
            let task = tokio::spawn(conn);
            work(&client).await;
            drop(client);
            let _ = task.await;
        });
    }
}

/// The major version of the server in `bin`, from `postgres --version`.
fn major_of(bin: &Path) -> u32 {
    let out = std::process::Command::new(bin.join("postgres"))
        .arg("--version")
        .output()
        .expect("postgres --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().nth(2).expect("a version number");
    version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .expect("a major version")
}

/// Bytes `from..to` of a log, as a log file of their own.
fn slice(log: &Path, (from, to): (u64, u64), into: &Path) {
    let bytes = fs::read(log).unwrap();
    fs::write(into, &bytes[from as usize..to as usize]).unwrap();
}

/// Every file under `dir` and its text.
fn contents(dir: &Path) -> BTreeMap<PathBuf, String> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(dir.join(&p)).unwrap();
            (p, text)
        })
        .collect()
}

/// `capture` with `--min-rows 1000` (the test board's members table has 2,500 rows).
fn capture(logs: &[&Path], url: &str, project: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "capture",
        "--database-url",
        url,
        "--project",
        project.to_str().unwrap(),
    ];
    args.extend(["--min-rows", "1000"]);
    for log in logs {
        args.extend(["--log", log.to_str().unwrap()]);
    }
    args.extend(extra);
    run(&args)
}

/// The file of the read path whose plan holds `needle`: its name.
fn read_path_with(project: &Path, needle: &str) -> String {
    let found: Vec<String> = file_names(&project.join("plans"))
        .into_iter()
        .filter(|f| {
            fs::read_to_string(project.join("plans").join(f))
                .unwrap()
                .contains(needle)
        })
        .collect();
    assert_eq!(found.len(), 1, "one plan holds {needle:?}: {found:?}");
    found[0].trim_end_matches(".sql").to_string()
}

fn expectation(project: &Path, name: &str) -> toml::Table {
    let path = project.join("expectations").join(format!("{name}.toml"));
    fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .parse()
        .unwrap()
}

fn index_of(table: &toml::Table, scope: &str) -> String {
    table["scopes"][scope]["index"]
        .as_str()
        .unwrap()
        .to_string()
}

// Long because it is one story on one logging server: the member's log and the moderator's,
// captured in two formats, checked, captured again, and checked with an index dropped.
#[test]
fn a_project_captured_from_the_log_checks_the_paths_the_application_sent() {
    let server = LoggingServer::start();
    let url = server.url();
    let start = server.log_sizes();
    server.send(async |c| {
        let thread = c.prepare(MEMBER_THREAD).await.unwrap();
        let profile = c.prepare(PROFILE).await.unwrap();
        for id in [1i64, 2, 3] {
            c.query(&thread, &[&id]).await.unwrap();
            c.query(&profile, &[&id]).await.unwrap();
        }
        // Not read paths: a write that fails, a catalog query, transaction control.
        let _ = c
            .batch_execute("INSERT INTO forums (id) VALUES (NULL)")
            .await;
        c.batch_execute("BEGIN; SELECT count(*) FROM pg_class; COMMIT")
            .await
            .unwrap();
    });
    let member_end = server.log_sizes();
    server.send(async |c| {
        for id in [1i64, 4] {
            c.simple_query(&moderator_thread(id)).await.unwrap();
        }
        let profile = c.prepare(PROFILE).await.unwrap();
        c.query(&profile, &[&2i64]).await.unwrap();
    });
    let end = server.log_sizes();
    let logs = tempfile::tempdir().unwrap();
    let log = |n: &str| logs.path().join(n);
    slice(
        &server.log("pg.csv"),
        (start.0, member_end.0),
        &log("member.csv"),
    );
    slice(
        &server.log("pg.csv"),
        (member_end.0, end.0),
        &log("moderator.csv"),
    );
    slice(
        &server.log("pg"),
        (start.1, member_end.1),
        &log("member.log"),
    );
    // From PostgreSQL 15 the server writes a jsonlog too.
    let json = server.log("pg.json").exists();
    assert_eq!(json, major_of(&server.server.bin) >= 15);
    if json {
        assert!(
            member_end.2 > start.2,
            "the member's statements are in the jsonlog"
        );
        let range = (start.2, member_end.2);
        slice(&server.log("pg.json"), range, &log("member.json"));
    }

    // The member's log, csvlog.
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let first = capture(&[&log("member.csv")], &url, p, &["--scope", "member"]);
    assert_eq!(first.code(), 0, "{}", first.shown());
    assert!(
        first.stdout.contains("2 read paths found: 2 written"),
        "{}",
        first.shown()
    );
    let thread = read_path_with(p, "p.thread_id = $1");
    let plan = fs::read_to_string(p.join("plans").join(format!("{thread}.sql"))).unwrap();
    // (a) verbatim: the literal stays a literal, the bound thread is $1 with its value.
    assert!(plan.contains(MEMBER_THREAD), "{plan}");
    let member = expectation(p, &thread);
    assert_eq!(
        member["params"].as_array().unwrap(),
        &[toml::Value::from("1")]
    );
    assert_eq!(index_of(&member, "member"), "posts_thread_visible_idx");
    let profile = read_path_with(p, "m.id = $1");
    assert_eq!(
        index_of(&expectation(p, &profile), "member"),
        "members_pkey"
    );

    // (b) check passes on the intact board.
    let checked = check(&url, p, &[]);
    assert_eq!(checked.code(), 0, "{}", checked.shown());

    // (d) a second capture adds nothing and overwrites nothing.
    let before = contents(p);
    let again = capture(&[&log("member.csv")], &url, p, &["--scope", "member"]);
    assert_eq!(again.code(), 0, "{}", again.shown());
    assert!(
        again.stdout.contains("0 written, 2 already covered"),
        "{}",
        again.shown()
    );
    assert_eq!(contents(p), before);

    // The same log in stderr format gives the same read paths.
    let from_stderr = tempfile::tempdir().unwrap();
    let s = capture(
        &[&log("member.log")],
        &url,
        from_stderr.path(),
        &["--scope", "member"],
    );
    assert_eq!(s.code(), 0, "{}", s.shown());
    assert_eq!(
        file_names(&from_stderr.path().join("plans")),
        file_names(&p.join("plans"))
    );
    assert_eq!(expectation(from_stderr.path(), &thread), member);
    if json {
        let from_json = tempfile::tempdir().unwrap();
        let dir = from_json.path();
        let j = capture(&[&log("member.json")], &url, dir, &["--scope", "member"]);
        assert_eq!(j.code(), 0, "{}", j.shown());
        assert_eq!(file_names(&dir.join("plans")), file_names(&p.join("plans")));
        assert_eq!(expectation(dir, &thread), member);
    }

    // The moderator's log: the thread page the member's without its visibility condition (and
    // sent with a literal where the member's bound $1) becomes the member's read path's
    // moderator scope, the condition a fragment; the profile, the same SQL, a scope added.
    let before = contents(p);
    let dry = capture(
        &[&log("moderator.csv")],
        &url,
        p,
        &["--scope", "moderator", "--dry-run"],
    );
    assert_eq!(dry.code(), 0, "{}", dry.shown());
    assert!(
        dry.stdout.contains("the condition a fragment:")
            && dry.stdout.contains("fragments = { visibility = \"true\" }"),
        "{}",
        dry.shown()
    );
    assert_eq!(contents(p), before, "--dry-run writes nothing");
    let moderator = capture(&[&log("moderator.csv")], &url, p, &["--scope", "moderator"]);
    assert_eq!(moderator.code(), 0, "{}", moderator.shown());
    assert!(
        moderator
            .stdout
            .contains("2 read paths found: 0 written, 2 already covered (2 given scope moderator)"),
        "{}",
        moderator.shown()
    );
    assert!(
        moderator.stdout.contains(&format!(
            "scope    {thread} [moderator] (index posts_thread_all_idx): one condition apart \
             from its plan, now {{{{visibility}}}}: p.visibility = 'visible' in the scopes it \
             had, true in moderator"
        )),
        "{}",
        moderator.shown()
    );
    let plan = fs::read_to_string(p.join("plans").join(format!("{thread}.sql"))).unwrap();
    assert!(
        plan.contains("WHERE p.thread_id = $1\n  AND {{visibility}}\nORDER BY"),
        "{plan}"
    );
    let both = expectation(p, &thread);
    assert_eq!(index_of(&both, "member"), "posts_thread_visible_idx");
    assert_eq!(index_of(&both, "moderator"), "posts_thread_all_idx");
    assert_eq!(
        both["scopes"]["member"]["fragments"]["visibility"].as_str(),
        Some("p.visibility = 'visible'")
    );
    assert_eq!(
        both["scopes"]["moderator"]["fragments"]["visibility"].as_str(),
        Some("true")
    );
    assert_eq!(file_names(&p.join("plans")).len(), 2, "no new read path");
    assert_eq!(
        index_of(&expectation(p, &profile), "moderator"),
        "members_pkey"
    );
    assert_eq!(
        index_of(&expectation(p, &profile), "member"),
        "members_pkey"
    );
    let checked = check(&url, p, &[]);
    assert_eq!(checked.code(), 0, "{}", checked.shown());
    // The twin is checked: the member's page on the partial index, the moderator's on its twin.
    assert_eq!(verdict_of(&checked.report(), &thread, "member"), "pass");
    assert_eq!(verdict_of(&checked.report(), &thread, "moderator"), "pass");

    // (c) without the partial index, the captured member thread path fails.
    sql(&url, "DROP INDEX posts_thread_visible_idx");
    let checked = check(&url, p, &[]);
    assert_eq!(checked.code(), 1, "{}", checked.shown());
    assert_eq!(
        verdict_of(&checked.report(), &thread, "member"),
        "missing-index"
    );
}

/// A log plancheck cannot read is bad input named by file and line, and nothing is written.
#[test]
fn a_log_that_cannot_be_read_writes_nothing() {
    let url = fresh_board("capture_bad");
    let dir = tempfile::tempdir().unwrap();
    let at = |n: &str| dir.path().join(n);
    let csv_line = "2026-12-01 10:00:00.000 UTC,\"app\",\"board\",42,\"[local]\",\
        6578a1b2.2a,1,\"SELECT\",2026-12-01 10:00:00 UTC,3/7,0,LOG,00000,\
        \"statement: SELECT * FROM posts WHERE thread_id = 1\",,,,,,,,,\"app\",client backend,,0\n";
    fs::write(at("good.csv"), csv_line.repeat(2)).unwrap();
    // Cut inside the second record's quoted message.
    let cut = csv_line.len() + 120;
    fs::write(at("truncated.csv"), &csv_line.repeat(2).as_bytes()[..cut]).unwrap();
    fs::write(
        at("junk.log"),
        b"2026-12-01 10:00:00.000 UTC [42] LOG:  statement: SELECT 1\n\x00\xff\xfe junk\n",
    )
    .unwrap();
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("truncated.csv", vec![], "truncated.csv:2:"),
        ("good.csv", vec!["--log-format", "stderr"], "good.csv:1:"),
        ("good.csv", vec!["--log-format", "jsonlog"], "good.csv:1:"),
        ("junk.log", vec![], "junk.log:2:"),
        (
            "good.csv",
            vec!["--log-format", "stderr", "--log-line-prefix", "%m %z "],
            "%z",
        ),
    ];
    for (file, extra, says) in cases {
        let project = tempfile::tempdir().unwrap();
        let r = capture(&[&at(file)], &url, project.path(), &extra);
        assert_eq!(r.code(), 2, "{file} {extra:?}: {}", r.shown());
        assert!(
            r.stderr.contains(says),
            "{file} {extra:?} names {says}: {}",
            r.shown()
        );
        assert!(!r.stderr.contains("panicked"), "{}", r.shown());
        assert!(
            files_under(project.path()).is_empty(),
            "{file}: nothing written"
        );
    }
    // The good log itself is read.
    let project = tempfile::tempdir().unwrap();
    let r = capture(&[&at("good.csv")], &url, project.path(), &["--dry-run"]);
    assert_eq!(r.code(), 0, "{}", r.shown());
    assert!(
        r.stdout.contains("read 2 statements from 1 log"),
        "{}",
        r.shown()
    );
    assert!(
        files_under(project.path()).is_empty(),
        "--dry-run writes nothing"
    );
    assert!(
        r.stdout.contains("would write")
            && r.stdout.contains("posts-by-thread-id.sql")
            && r.stdout.contains("SELECT * FROM posts WHERE thread_id = 1"),
        "--dry-run prints the files: {}",
        r.shown()
    );
    // Regression: `capture --dry-run … | head -1` panicked (exit 101) on the closed pipe.
    let mut child = plancheck_process(&[
        "capture",
        "--database-url",
        &url,
        "--project",
        project.path().to_str().unwrap(),
        "--min-rows",
        "1000",
        "--log",
        at("good.csv").to_str().unwrap(),
        "--dry-run",
    ])
    .spawn()
    .unwrap();
    // The reader is gone before anything is written, as `head -1` is gone after one line: each
    // write meets a closed pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{out:?}"
    );
}

/// A read path gets no expectation where there is nothing to require, and the summary says why.
#[test]
fn a_read_path_with_nothing_to_require_is_skipped_saying_why() {
    let url = fresh_board("capture_skips");
    let dir = tempfile::tempdir().unwrap();
    let line = |n: usize, sql: &str| {
        format!(
            "2026-12-01 10:00:00.000 UTC,\"app\",\"board\",42,\"[local]\",6578a1b2.2a,{n},\
             \"SELECT\",2026-12-01 10:00:00 UTC,3/7,0,LOG,00000,\"statement: {sql}\",,,,,,,,,\
             \"app\",client backend,,0\n"
        )
    };
    let log = dir.path().join("app.csv");
    let text = [
        // No index can serve a search inside the body: the posts table is read whole.
        line(1, "SELECT id FROM posts WHERE body LIKE '%zeppelin%'"),
        // The forums table is small.
        line(2, "SELECT * FROM forums WHERE id = 2"),
        // Not a table a plan file can read: it does not exist.
        line(3, "SELECT * FROM no_such_table WHERE id = 1"),
    ]
    .concat();
    fs::write(&log, text).unwrap();
    let project = tempfile::tempdir().unwrap();
    let r = capture(&[&log], &url, project.path(), &[]);
    assert_eq!(r.code(), 0, "{}", r.shown());
    let says = |what: &str| assert!(r.stdout.contains(what), "says {what:?}: {}", r.shown());
    says("3 read paths found: 0 written");
    says("skipped  posts-by-body: no index: it reads posts");
    says("skipped  forums-by-id: too small: its largest relation, forums, has about");
    says("skipped  no-such-table-by-id: could not be planned:");
    says("no_such_table");
    assert!(files_under(project.path()).is_empty(), "nothing written");
}

#[test]
fn a_partitioned_table_is_proposed_its_partitioned_index_not_a_partitions() {
    let url = fresh_board("capture_partitioned");
    sql(
        &url,
        "CREATE TABLE events (id bigint NOT NULL, kind text NOT NULL, \
                              created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at);
         CREATE TABLE events_2025 PARTITION OF events
             FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
         CREATE TABLE events_2026 PARTITION OF events
             FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
         CREATE INDEX events_kind_idx ON events (kind, created_at);
         INSERT INTO events
             SELECT g, 'k' || (g % 500), timestamptz '2025-01-01' + g * interval '10 minutes'
             FROM generate_series(1, 80000) g;
         ANALYZE events;",
    );
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.csv");
    fs::write(
        &log,
        "2026-12-01 10:00:00.000 UTC,\"app\",\"board\",42,\"[local]\",6578a1b2.2a,1,\
         \"SELECT\",2026-12-01 10:00:00 UTC,3/7,0,LOG,00000,\"statement: SELECT id FROM events \
         WHERE kind = 'k7' ORDER BY created_at LIMIT 20\",,,,,,,,,\"app\",client backend,,0\n",
    )
    .unwrap();
    let project = tempfile::tempdir().unwrap();
    let r = capture(&[&log], &url, project.path(), &[]);
    assert_eq!(r.code(), 0, "{}", r.shown());
    let name = read_path_with(project.path(), "FROM events");
    let written = expectation(project.path(), &name);
    // The plan reads both partitions through their own indexes; the file names the index on
    // the partitioned table, which stays right as partitions come and go.
    assert_eq!(
        index_of(&written, "captured"),
        "events_kind_idx",
        "{written}"
    );
    let checked = check(&url, project.path(), &[]);
    assert_eq!(
        verdict_of(&checked.report(), &name, "captured"),
        "pass",
        "{}",
        checked.shown()
    );
}
