//! Reads hidden in function calls: the thread page served by the required index, while a call
//! in its plan (`query_to_xml`, `table_to_xml`, `ts_stat`, an application's PL/pgSQL function)
//! reads all of posts. The plan shows the call, not the table it reads. Each test first counts,
//! in a session of its own, how many rows of posts the statement really read, calls included.

use super::*;

/// Rows of posts a statement read, its calls included, as PostgreSQL counts them in the test's
/// own session: the rows its sequential scans returned, those its bitmap scans fetched and the
/// entries its index scans read, run in a transaction rolled back after. Parallel workers are
/// kept from starting (`max_parallel_workers = 0`), so that the session's own counters see every
/// read, a function's parallel query's too.
fn rows_of_posts_read(db: &str, statement: &str) -> f64 {
    let session = Session::open(db);
    session.execute("SET max_parallel_workers = 0; BEGIN READ ONLY");
    session.rows(statement);
    let read = session.rows(
        "SELECT pg_stat_get_xact_tuples_returned(t.oid) + pg_stat_get_xact_tuples_fetched(t.oid) \
                + (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0) \
                   FROM pg_index i WHERE i.indrelid = t.oid) \
         FROM pg_class t WHERE t.oid = 'posts'::regclass",
    );
    session.execute("ROLLBACK");
    read[0].parse().expect("a count")
}

/// `reltuples` of posts on the test's board.
fn posts_size(db: &str) -> f64 {
    query_text(
        db,
        "SELECT reltuples FROM pg_class WHERE oid = 'posts'::regclass",
    )
    .parse()
    .expect("reltuples is a number")
}

/// The thread page with `also` added to its conditions: served by [`INDEX`], which the test
/// checks with EXPLAIN.
fn page_with(also: &str) -> String {
    format!(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible'\n  AND {also}\n\
         ORDER BY p.created_at, p.id LIMIT 20"
    )
}

/// Checks the premise (the statement reads most of posts, its page through [`INDEX`]), then
/// runs `check` of it as the connection `as_role` (the superuser's or the least-privilege
/// role's), requiring [`INDEX`] for the member: the verdict, the check's message and the run.
fn check_hidden(admin: &str, as_role: &str, plan: &str) -> (String, String, Run) {
    let read = rows_of_posts_read(admin, plan);
    let size = posts_size(admin);
    let tree = explain_text(admin, plan);
    assert!(
        read >= size / 2.0 && size >= 10_000.0 && tree.contains(INDEX),
        "the premise does not hold: {read} rows of posts' {size} read, the page through \
         {INDEX}?\n{tree}"
    );
    let dir = project(&[
        ("plans/h.sql", plan),
        ("expectations/h.toml", &expectation(false, "")),
    ]);
    let run = check(as_role, dir.path(), &["--warmup", "1", "--iterations", "2"]);
    let (verdict, _) = only_check(&run);
    let message = check_of(&run.report(), "h", "member")["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (verdict, message, run)
}

/// What a check of a hidden read must say: not a pass (`seq-scan`), exit 1, and a message that
/// names posts, the rows PostgreSQL counted and the call.
fn assert_caught(verdict: &str, message: &str, run: &Run, call: &str) {
    assert_eq!(verdict, "seq-scan", "{}", run.shown());
    assert_eq!(run.status, Some(1), "{}", run.shown());
    for part in ["posts", "PostgreSQL counted", call] {
        assert!(message.contains(part), "no {part:?} in: {message}");
    }
}

// `query_to_xml` in a per-row filter of the thread page: every row the index scan reads runs a
// count of posts (a seq scan or a parallel one, as the planner likes) inside the call. Before:
// pass, exit 0.
#[test]
fn query_to_xml_reading_posts_in_a_per_row_filter_does_not_pass() {
    let db = fresh_board("attack_hidden_query_to_xml");
    let plan = page_with(
        "length(query_to_xml('SELECT count(*) FROM posts q WHERE q.id <> ' || p.id, \
         true, false, '')::text) > 0",
    );
    let (verdict, message, run) = check_hidden(&db, &db, &plan);
    assert_caught(&verdict, &message, &run, "query_to_xml");
}

// `table_to_xml('posts', …)` once a run, in an InitPlan of the thread page. Before: pass.
#[test]
fn table_to_xml_of_posts_does_not_pass() {
    let db = fresh_board("attack_hidden_table_to_xml");
    let plan = page_with("(SELECT length(table_to_xml('posts', true, false, '')::text)) > 0");
    let (verdict, message, run) = check_hidden(&db, &db, &plan);
    assert_caught(&verdict, &message, &run, "table_to_xml");
}

// `ts_stat('SELECT … FROM posts …')` once a run: its query reads every post and keeps none.
// Before: pass.
#[test]
fn ts_stat_over_posts_does_not_pass() {
    let db = fresh_board("attack_hidden_ts_stat");
    let plan = page_with(
        "(SELECT count(*) FROM ts_stat('SELECT body_tsv FROM posts WHERE length(body) < 0')) = 0",
    );
    let (verdict, message, run) = check_hidden(&db, &db, &plan);
    assert_caught(&verdict, &message, &run, "ts_stat");
}

// An application's PL/pgSQL function that counts posts, called in a per-row filter, checked as
// the README's least-privilege role (no right beyond SELECT): the count runs as a parallel
// query where the planner likes, its workers' reads counted in no session's own counters.
// Before: pass.
#[test]
fn an_application_function_counting_posts_does_not_pass_as_the_least_privilege_role() {
    let roles = least_privilege("attack_hidden_app_fn");
    sql(
        &roles.admin,
        "CREATE FUNCTION app_post_count(keep bigint) RETURNS bigint LANGUAGE plpgsql AS \
         $$ BEGIN RETURN (SELECT count(*) FROM posts q WHERE q.id <> keep); END $$",
    );
    let plan = page_with("app_post_count(p.id) > 0");
    let (verdict, message, run) = check_hidden(&roles.admin, &roles.check, &plan);
    assert_caught(&verdict, &message, &run, "app_post_count");
}

// The same count run by parallel workers only: the function's own settings (applied while it
// runs and taken back after, so no guard sees them) make its query parallel and keep the
// session out of it. The session's own counters then hold only the page's 20 rows; the
// workers' reads reach the server-wide counters as each worker exits. Before: pass.
#[test]
fn a_function_reading_posts_in_parallel_workers_only_does_not_pass() {
    let db = fresh_board("attack_hidden_workers");
    assert!(
        server_version_num(&db) >= 150000,
        "this test needs PostgreSQL 15 or later: before it, what parallel workers read is not \
         counted (docs/src/security.md, \"Reads hidden in function calls\"); CI runs it on 15 \
         and 18"
    );
    sql(
        &db,
        "CREATE FUNCTION app_worker_count(keep bigint) RETURNS bigint LANGUAGE plpgsql \
         SET parallel_leader_participation = off SET parallel_setup_cost = 0 \
         SET parallel_tuple_cost = 0 SET min_parallel_table_scan_size = 0 \
         SET min_parallel_index_scan_size = 0 AS \
         $$ BEGIN RETURN (SELECT count(*) FROM posts q WHERE q.id <> keep); END $$",
    );
    // The premise's other half: run with workers, the session's own counters see the page only.
    let session = Session::open(&db);
    session.execute("BEGIN READ ONLY");
    let plan = page_with("app_worker_count(p.id) > 0");
    session.rows(&plan);
    let own: f64 = session.rows(
        "SELECT pg_stat_get_xact_tuples_returned(t.oid) + pg_stat_get_xact_tuples_fetched(t.oid) \
                + (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0) \
                   FROM pg_index i WHERE i.indrelid = t.oid) \
         FROM pg_class t WHERE t.oid = 'posts'::regclass",
    )[0]
    .parse()
    .unwrap();
    session.execute("ROLLBACK");
    assert!(
        own < 1_000.0,
        "the session itself read {own} rows of posts: the workers are not alone in reading"
    );
    let (verdict, message, run) = check_hidden(&db, &db, &plan);
    assert_caught(&verdict, &message, &run, "app_worker_count");
    assert!(message.contains("by other processes"), "{message}");
}

// The controls. The thread page alone passes; so does the thread page with a PL/pgSQL function
// called for every row whose own read of posts is a `LIMIT 1` walk of posts_pkey that stops
// after one row (20 rows of posts a run, where the attacks read all of it), as the
// least-privilege role. Without them the attacks above could fail for a rule that fails every
// call, or every read of posts.
#[test]
fn the_thread_page_and_a_function_whose_limit_walk_stops_early_pass() {
    let roles = least_privilege("attack_hidden_control");
    sql(
        &roles.admin,
        "CREATE FUNCTION app_first_post(after bigint) RETURNS bigint LANGUAGE plpgsql AS \
         $$ BEGIN RETURN (SELECT q.id FROM posts q WHERE q.id > after ORDER BY q.id LIMIT 1); \
         END $$",
    );
    let dir = project(&[
        ("plans/page.sql", PAGE),
        ("expectations/page.toml", &expectation(true, "")),
    ]);
    let run = check(
        &roles.check,
        dir.path(),
        &["--warmup", "1", "--iterations", "2"],
    );
    assert_eq!(only_check(&run).0, "pass", "{}", run.shown());
    assert_eq!(run.status, Some(0), "{}", run.shown());

    let walk = page_with("app_first_post(p.id) IS NOT NULL");
    let read = rows_of_posts_read(&roles.admin, &walk);
    assert!(
        (20.0..200.0).contains(&read),
        "the walk does not stop early: {read} rows of posts read\n{}",
        explain_text(&roles.admin, &walk)
    );
    let dir = project(&[
        ("plans/walk.sql", walk.as_str()),
        ("expectations/walk.toml", &expectation(false, "")),
    ]);
    let run = check(
        &roles.check,
        dir.path(),
        &["--warmup", "1", "--iterations", "2"],
    );
    assert_eq!(only_check(&run).0, "pass", "{}", run.shown());
    assert_eq!(run.status, Some(0), "{}", run.shown());
}
