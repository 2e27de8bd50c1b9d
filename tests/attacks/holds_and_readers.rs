//! Weak bounds and who reads: how long a migration's locks are held, temporary files where the
//! role cannot bound them, and a setup that switches to a reader the table's row-level security
//! policies do not apply to. Each is observed where it acts: a second session's read waiting on
//! the migration's lock, the role's rights, what the checks report of the reader.

use super::*;

/// The thread page with a pause of `seconds` in its filter: a read path that takes time.
fn slow_page(seconds: f64) -> String {
    format!(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
           AND (SELECT count(*) FROM pg_sleep({seconds})) = 1\n\
         ORDER BY p.created_at, p.id LIMIT 20"
    )
}

/// Whether a session other than this one holds an ACCESS EXCLUSIVE lock on posts.
fn posts_locked_exclusively(db: &str) -> bool {
    query_text(
        db,
        // This database's posts only: every test's copy of the board has the same oid.
        "SELECT count(*) FROM pg_locks l \
         WHERE l.relation = 'posts'::regclass AND l.mode = 'AccessExclusiveLock' AND l.granted \
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND l.pid <> pg_backend_pid()",
    ) != "0"
}

// A migration's ALTER TABLE holds an ACCESS EXCLUSIVE lock on posts until the rollback at the
// end of the run, and the checks after it (four read paths of four 0.5 s runs each here) decide
// how long that is: an application's read of posts queued behind it for the whole of them (75 s
// seen with 2 s timeouts). --migration-hold bounds it on plancheck's clock: once reached, the
// checks still to run are not run, and the migration is rolled back.
#[test]
fn a_migration_holds_its_locks_no_longer_than_the_bound() {
    let db = fresh_board("attack_migration_hold");
    let plan = slow_page(0.5);
    let names = ["slow-a", "slow-b", "slow-c", "slow-d"];
    let mut files = Vec::new();
    for name in names {
        files.push((format!("plans/{name}.sql"), plan.clone()));
        files.push((format!("expectations/{name}.toml"), expectation(false, "")));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = project(&files);
    let migration = temp_file(
        "hold.sql",
        "ALTER TABLE posts ADD COLUMN hold_probe integer;\n",
    );
    let bound = Duration::from_secs(2);
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
        "4",
        "--migration",
        migration.arg(),
        "--migration-hold",
        "2s",
    ])
    .spawn()
    .unwrap();
    let mut reap = Reap(Some(child));
    // The checks before the migration take 8 s; then the ALTER takes its lock.
    // Seen once is enough: asking again could find it released already (the bound is short).
    let mut seen = false;
    wait_until(within(Duration::from_secs(40)), || {
        seen = posts_locked_exclusively(&db);
        seen || reap.0.as_mut().unwrap().try_wait().unwrap().is_some()
    });
    assert!(seen, "the migration's lock on posts never showed");
    // The application's read, queued behind the migration's lock.
    let started = Instant::now();
    let read = try_sql(
        &db,
        "SET statement_timeout = '30s'; SELECT count(*) FROM posts WHERE id = 1",
    );
    let waited = started.elapsed();
    let run = Run::finish(reap.0.take().unwrap(), started);
    assert!(read.is_ok(), "the read failed: {read:?}\n{}", run.shown());
    // The lock was seen after the clock started: the read waits at most the bound, plus the
    // cancel's and the rollback's round trips.
    let slack = Duration::from_millis(1500);
    assert!(
        waited <= bound + slack,
        "the read of posts waited {waited:.2?} behind the migration's lock, over the bound \
         ({bound:?}) and {slack:?}\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(1), "{}", run.shown());
    let report = run.report();
    let hold = &report["migration_hold"];
    assert_eq!(hold["reached"], true, "{}", run.shown());
    assert_eq!(hold["released"], true, "{}", run.shown());
    assert_eq!(hold["limit_ms"], 2000, "{}", run.shown());
    let held = hold["held_ms"].as_f64().unwrap_or(f64::MAX);
    assert!(
        held <= (bound + slack).as_secs_f64() * 1000.0,
        "{}",
        run.shown()
    );
    // Every check after the migration that did not run says why, and none passes unseen.
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), names.len(), "{}", run.shown());
    let stopped: Vec<&serde_json::Value> =
        checks.iter().filter(|c| c["verdict"] == "error").collect();
    assert!(!stopped.is_empty(), "{}", run.shown());
    assert_eq!(
        hold["not_run"].as_u64(),
        Some(stopped.len() as u64),
        "{}",
        run.shown()
    );
    for c in &stopped {
        let message = c["message"].as_str().unwrap_or("");
        assert!(message.contains("--migration-hold (2 s)"), "{message}");
    }
    for c in &checks {
        assert!(
            c["verdict"] == "error" || c["verdict"] == "pass",
            "{}",
            run.shown()
        );
        assert_eq!(c["before"]["verdict"], "pass", "{}", run.shown());
    }
    // The lock is gone with the rollback.
    assert!(!posts_locked_exclusively(&db), "{}", run.shown());
    eprintln!("the read of posts waited {waited:.2?}; the locks were held {held:.0} ms");
}

// The control: within the bound, every check after the migration runs, and the table and the
// JSON say how long the locks were held.
#[test]
fn a_migration_within_its_bound_runs_every_check_and_says_how_long_it_held_its_locks() {
    let db = fresh_board("attack_migration_hold_control");
    let dir = one_read_path(PAGE, &expectation(true, ""));
    let migration = temp_file(
        "hold.sql",
        "ALTER TABLE posts ADD COLUMN hold_probe integer;\n",
    );
    let run = check(
        &db,
        dir.path(),
        &["--migration", migration.arg(), "--migration-hold", "60s"],
    );
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert_eq!(only_check(&run), ("pass".into(), "pass".into()));
    let hold = &run.report()["migration_hold"];
    assert_eq!(hold["reached"], false, "{}", run.shown());
    assert_eq!(hold["not_run"], 0, "{}", run.shown());
    assert!(hold["held_ms"].as_f64().is_some_and(|ms| ms > 0.0));
    let table = run_command(&mut plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--warmup",
        "0",
        "--iterations",
        "1",
        "--migration",
        migration.arg(),
    ]));
    assert_eq!(table.status, Some(0), "{}", table.shown());
    assert!(
        table
            .stdout
            .contains("migration: the migration's locks were held ")
            && table.stdout.contains("(--migration-hold 30 s)"),
        "{}",
        table.shown()
    );
}

/// Roles of the row-level security tests (roles are the server's: each test names its own,
/// prefixed), dropped at the end whatever happens.
struct Readers<'a> {
    db: &'a str,
    prefix: &'static str,
}

impl Drop for Readers<'_> {
    fn drop(&mut self) {
        let p = self.prefix;
        let _ = try_sql(
            self.db,
            &format!(
                "DROP OWNED BY {p}_member, {p}_bypass, {p}_owner, {p}_super, {p}_login; \
                 DROP ROLE IF EXISTS {p}_member, {p}_bypass, {p}_owner, {p}_super, {p}_login"
            ),
        );
    }
}

/// posts with row-level security on, owned by `{prefix}_owner`, and a policy that lets every
/// reader it applies to see visible posts only; readers: `_member` (the policy applies),
/// `_bypass` (BYPASSRLS), `_owner` (owns posts, FORCE ROW LEVEL SECURITY off), `_super`
/// (superuser); `_login` may log in and switch to the first three, its temporary files bounded
/// (as the least-privilege roles' are: `--strict-role` refuses a role whose are not).
fn rls_board<'a>(db: &'a str, prefix: &'static str) -> Readers<'a> {
    let p = prefix;
    let _ = try_sql(
        db,
        &format!("DROP ROLE IF EXISTS {p}_member, {p}_bypass, {p}_owner, {p}_super, {p}_login"),
    );
    sql(
        db,
        &format!(
            "CREATE ROLE {p}_member; CREATE ROLE {p}_bypass BYPASSRLS; CREATE ROLE {p}_owner; \
             CREATE ROLE {p}_super SUPERUSER; \
             CREATE ROLE {p}_login LOGIN IN ROLE {p}_member, {p}_bypass, {p}_owner; \
             ALTER ROLE {p}_login SET temp_file_limit = '1GB'; \
             GRANT SELECT ON posts, members, threads, forums TO {p}_member, {p}_bypass; \
             GRANT SELECT ON members, threads, forums TO {p}_owner; \
             ALTER TABLE posts OWNER TO {p}_owner; \
             ALTER TABLE posts ENABLE ROW LEVEL SECURITY; \
             CREATE POLICY visible_only ON posts FOR SELECT \
               TO {p}_member, {p}_bypass, {p}_owner, {p}_super \
               USING (visibility = 'visible')"
        ),
    );
    Readers { db, prefix }
}

/// A thread page that filters nothing itself (the policy does), requiring the unfiltered twin
/// in every scope: under the policy the planner takes the partial index instead (a failure),
/// while a reader the policy does not apply to reads the twin (a pass). Scopes: `member`,
/// `bypass`, `owner`, `super`, each `SET LOCAL ROLE` to the role of that name, those of `only`.
fn rls_project(prefix: &str, only: &[&str]) -> tempfile::TempDir {
    let mut expectation = String::new();
    for scope in only {
        expectation.push_str(&format!(
            "[scopes.{scope}]\nindex = \"posts_thread_all_idx\"\n{}\n",
            setup_line(&[&format!("SET LOCAL ROLE {prefix}_{scope}")])
        ));
    }
    one_read_path(
        "SELECT p.id FROM posts p WHERE p.thread_id = 1\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        &expectation,
    )
}

// A scope's setup switched to a reader the table's row-level security policies do not apply
// to, and a failure under the policy became a pass, the role shown but not that it skips the
// policies. Every format now says, per check, which tables' policies the reader read past and
// why (BYPASSRLS, the owner without FORCE ROW LEVEL SECURITY, a superuser); the control reader
// the policy applies to fails as it should, and nothing is said of it.
#[test]
fn a_reader_past_row_level_security_is_said_in_every_format() {
    let db = fresh_board("attack_rls_readers");
    let _roles = rls_board(&db, "rls_said");
    let dir = rls_project("rls_said", &["member", "bypass", "owner", "super"]);
    let out = tempfile::tempdir().unwrap();
    let file = |name: &str| out.path().join(name);
    let reports: Vec<String> = [
        "junit=r.xml",
        "markdown=r.md",
        "github=r.txt",
        "table=r.table",
    ]
    .iter()
    .map(|r| {
        let (format, name) = r.split_once('=').unwrap();
        format!("{format}={}", file(name).display())
    })
    .collect();
    let mut extra = Vec::new();
    for r in &reports {
        extra.extend(["--report", r.as_str()]);
    }
    let run = check(&db, dir.path(), &extra);
    let report = run.report();
    // The control: the policy applies, and the required twin is not the index it chose.
    assert_ne!(
        verdict_of(&report, "path", "member"),
        "pass",
        "{}",
        run.shown()
    );
    assert!(
        check_of(&report, "path", "member")
            .get("reads_past_policies")
            .is_none(),
        "{}",
        run.shown()
    );
    // The same read path passes for each reader the policy does not apply to: said, with why.
    for (scope, why) in [
        ("bypass", "bypassrls"),
        ("owner", "owner"),
        ("super", "superuser"),
    ] {
        assert_eq!(
            verdict_of(&report, "path", scope),
            "pass",
            "{}",
            run.shown()
        );
        let past = &check_of(&report, "path", scope)["reads_past_policies"];
        assert_eq!(past[0]["table"], "posts", "{scope}: {}", run.shown());
        assert_eq!(past[0]["why"], why, "{scope}: {}", run.shown());
        assert_eq!(
            past[0]["reader"],
            format!("rls_said_{scope}"),
            "{scope}: {}",
            run.shown()
        );
    }
    let read = |name: &str| fs::read_to_string(file(name)).unwrap();
    let (table, markdown, github) = (read("r.table"), read("r.md"), read("r.txt"));
    // The Markdown as a reader sees it: text plancheck did not write has a backslash before its
    // punctuation, which renders as the punctuation alone.
    let markdown = markdown.replace('\\', "");
    // The JUnit property's value, unescaped as an XML reader reads it.
    let junit = read("r.xml").replace("&apos;", "'");
    for (scope, why) in [
        ("bypass", "rls_said_bypass has BYPASSRLS"),
        (
            "owner",
            "rls_said_owner has the privileges of posts's owner rls_said_owner",
        ),
        ("super", "rls_said_super is a superuser"),
    ] {
        let said = format!("path [{scope}]: reads past row-level security: the policies of posts");
        assert!(
            table.contains(&said) && table.contains(why),
            "{scope}:\n{table}"
        );
        assert!(
            markdown.contains(&said) && markdown.contains(why),
            "{scope}:\n{markdown}"
        );
        assert!(junit.contains(why), "{scope}:\n{junit}");
        assert!(
            github.contains(&format!(
                "title=plancheck%3A path [{scope}] reads past row-level security::"
            )),
            "{scope}:\n{github}"
        );
    }
    for text in [&table, &markdown, &junit, &github] {
        assert!(!text.contains("path [member]: reads past"), "{text}");
        assert!(!text.contains("role rls_said_member ("), "{text}");
    }
}

// Under --strict-role a reader past row-level security is refused: exit 2, no report, naming
// the check and why; the run connects as a role with no right --strict-role refuses, which may
// switch to each reader. The control, a reader the policy applies to, is not refused.
#[test]
fn strict_role_refuses_a_reader_past_row_level_security() {
    let db = fresh_board("attack_rls_strict");
    let _roles = rls_board(&db, "rls_strict");
    let login = as_user(&db, "rls_strict_login");
    for (scope, why) in [
        ("bypass", "rls_strict_bypass has BYPASSRLS"),
        (
            "owner",
            "rls_strict_owner has the privileges of posts's owner",
        ),
    ] {
        let dir = rls_project("rls_strict", &["member", scope]);
        let run = check(&login, dir.path(), &["--strict-role"]);
        assert_eq!(run.status, Some(2), "{scope}: {}", run.shown());
        assert!(run.stdout.is_empty(), "{scope}: {}", run.shown());
        assert!(
            run.stderr
                .contains(&format!("--strict-role: path [{scope}] ("))
                && run.stderr.contains(&format!(
                    "expectations/path.toml, scope `{scope}`) reads past row-level security"
                ))
                && run.stderr.contains(why),
            "{scope}: {}",
            run.shown()
        );
    }
    // The control: the member alone runs to its verdict (not a pass: the policy applies).
    let dir = rls_project("rls_strict", &["member"]);
    let run = check(&login, dir.path(), &["--strict-role"]);
    assert_eq!(run.status, Some(1), "{}", run.shown());
    assert_ne!(only_check(&run).0, "pass", "{}", run.shown());
}

/// Drops the role of a test, whatever happens (roles are the server's).
struct DropLogin<'a> {
    db: &'a str,
    role: &'static str,
}

impl Drop for DropLogin<'_> {
    fn drop(&mut self) {
        let r = self.role;
        let _ = try_sql(
            self.db,
            &format!("DROP OWNED BY {r}; DROP ROLE IF EXISTS {r}"),
        );
    }
}

// A role that may not set temp_file_limit (it is a superuser setting) on a server that has none:
// --temp-file-limit is not applied, and a read path sorting far beyond work_mem writes
// temporary files on the server's disk until its statement ends (passing, where a role that
// may set it gets an `error` naming temp_file_limit). The warning says so, and --strict-role
// refuses such a role before any check; the control, the same role with the limit set for it
// by the administrator (ALTER ROLE … SET temp_file_limit), is bounded.
#[test]
fn strict_role_refuses_a_role_whose_temporary_files_nothing_bounds() {
    let db = fresh_board("attack_temp_unbounded");
    let role = "temp_unbounded_reader";
    let _ = try_sql(
        &db,
        &format!("DROP OWNED BY {role}; DROP ROLE IF EXISTS {role}"),
    );
    let _drop = DropLogin { db: &db, role };
    sql(
        &db,
        &format!(
            "CREATE ROLE {role} LOGIN; \
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"
        ),
    );
    assert_eq!(query_text(&db, "SHOW temp_file_limit"), "-1");
    let reader = as_user(&db, role);
    let sorting = "AND (SELECT count(*) FROM (SELECT g FROM generate_series(1, 3000000) g \
                   ORDER BY g DESC OFFSET 1) s) > 0";
    let plan = format!(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible' {sorting}\n\
         ORDER BY p.created_at, p.id LIMIT 20"
    );
    let dir = one_read_path(&plan, &expectation(false, ""));
    // The attack works without --strict-role: the limit asked for is not applied, the sort
    // spills as far as it needs, and the check passes; the warning says what that risks.
    let unbounded = check(&reader, dir.path(), &["--temp-file-limit", "1MB"]);
    assert_eq!(only_check(&unbounded).0, "pass", "{}", unbounded.shown());
    assert!(
        unbounded
            .stderr
            .contains("--temp-file-limit is not applied")
            && unbounded
                .stderr
                .contains("a full disk stops the server for every session"),
        "{}",
        unbounded.shown()
    );
    let refused = check(
        &reader,
        dir.path(),
        &["--temp-file-limit", "1MB", "--strict-role"],
    );
    assert_eq!(refused.status, Some(2), "{}", refused.shown());
    assert!(refused.stdout.is_empty(), "{}", refused.shown());
    assert!(
        refused
            .stderr
            .contains("--strict-role: the role may not set temp_file_limit")
            && !refused.stderr.contains("[1/1]"),
        "{}",
        refused.shown()
    );
    // The control: the administrator sets the limit for the role; its sessions start bounded,
    // --strict-role runs, and the sort is stopped at the limit.
    sql(
        &db,
        &format!("ALTER ROLE {role} SET temp_file_limit = '1MB'"),
    );
    let bounded = check(
        &reader,
        dir.path(),
        &["--temp-file-limit", "1MB", "--strict-role"],
    );
    assert_eq!(only_check(&bounded).0, "error", "{}", bounded.shown());
    assert!(
        bounded.stdout.contains("temp_file_limit"),
        "{}",
        bounded.shown()
    );
    assert!(
        !bounded.stderr.contains("may not set temp_file_limit"),
        "{}",
        bounded.shown()
    );
}
