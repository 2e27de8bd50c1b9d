//! Sessions handed from check to check: only when nothing one check did can reach the next.
//! Each test runs a check that leaves something in its session, then one that fails (division by
//! zero) if it runs in a session where that is still there. The tests that count the sessions a
//! run opens are in `tests/sessions_counted.rs` (PostgreSQL 15 and later).

mod common;

use common::*;

/// The member page, failing with a division by zero when `left_behind` (an SQL condition) holds
/// in its session.
fn page_failing_when(left_behind: &str) -> String {
    format!(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
           AND 1 / (CASE WHEN {left_behind} THEN 0 ELSE 1 END) = 1\n\
         ORDER BY p.created_at, p.id LIMIT 20"
    )
}

const PAGE: &str = "SELECT p.id FROM posts p\n\
    WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
    ORDER BY p.created_at, p.id LIMIT 20";

/// Runs `check --jobs 1` on `dir` and asserts that both its read paths, `first` then `second`
/// (the one that fails if it meets what the first left), pass in the member scope.
fn both_pass(db: &str, dir: &std::path::Path, first: &str, second: &str) {
    let (status, report) = check_json(db, dir, &["--jobs", "1"]);
    for read_path in [first, second] {
        assert_eq!(
            verdict_of(&report, read_path, "member"),
            "pass",
            "{report:#}"
        );
    }
    assert_eq!(status, 0);
}

#[test]
fn a_custom_setting_one_check_set_is_not_seen_by_the_next() {
    let db = fresh_board("sessions_placeholder");
    // What the next check would meet in a session the first one used: the rollback undoes the
    // value, not the placeholder.
    let page = page_failing_when("current_setting('app.user_id', true) IS NOT NULL");
    let session = Session::open(&db);
    session.execute("BEGIN; SET app.user_id = '5'; ROLLBACK");
    assert_eq!(
        session.rows("SELECT current_setting('app.user_id', true) IS NOT NULL"),
        ["t"]
    );
    drop(session);

    for setup in [
        "SET app.user_id = '5'",
        "SELECT set_config('app.user_id', '5', true)",
    ] {
        let sets = format!(
            "[scopes.member]\nindex = \"posts_thread_visible_idx\"\nsetup = [\"{setup}\"]\n"
        );
        let dir = read_paths(&[
            ("a-sets-a-custom-setting", PAGE, &sets),
            ("b-after", &page, &member("posts_thread_visible_idx")),
        ]);
        both_pass(&db, dir.path(), "a-sets-a-custom-setting", "b-after");
    }
}

#[test]
fn a_library_a_check_loaded_does_not_reach_the_next() {
    let db = fresh_board("sessions_library");
    assert!(
        try_sql(&db, "LOAD 'auto_explain'").is_ok(),
        "this server has no auto_explain library: install PostgreSQL's contrib modules"
    );
    // An SQL function, not PL/pgSQL: loading the language would change the session by itself.
    sql(
        &db,
        "CREATE FUNCTION load_a_library() RETURNS int LANGUAGE sql \
         AS $$ LOAD 'auto_explain'; SELECT 1 $$",
    );
    let loads = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = 1 AND p.visibility = 'visible' AND load_a_library() = 1\n\
        ORDER BY p.created_at, p.id LIMIT 20";
    let page =
        page_failing_when("current_setting('auto_explain.log_min_duration', true) IS NOT NULL");
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[("a-loads", loads, &index), ("b-after", &page, &index)]);
    both_pass(&db, dir.path(), "a-loads", "b-after");
}

#[test]
fn a_session_lock_a_failed_check_left_is_not_carried_on() {
    let db = fresh_board("sessions_lock");
    let locks = "SELECT p.id FROM posts p\n\
        WHERE p.thread_id = 1 AND p.visibility = 'visible' AND pg_try_advisory_lock(7)\n\
        ORDER BY p.created_at, p.id LIMIT 20";
    let page = page_failing_when(
        "EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' \
                 AND pid = pg_backend_pid())",
    );
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[("a-locks", locks, &index), ("b-after", &page, &index)]);
    let (_, report) = check_json(&db, dir.path(), &["--jobs", "1"]);
    let locked = check_of(&report, "a-locks", "member");
    assert_ne!(locked["verdict"], "pass", "{locked:#}");
    assert_eq!(
        verdict_of(&report, "b-after", "member"),
        "pass",
        "{report:#}"
    );
}

#[test]
fn the_guard_compares_answers_byte_for_byte_and_still_sees_each_change() {
    use plancheck::db::guard::{self, Span, Watched};
    let db = empty_database("sessions_guard_bytes");
    let session = Session::open(&db);
    let c = session.client();
    session.block_on(async {
        // A custom setting that is unset reads as NULL: the answer's null flag is set.
        let watched = Watched::read(c, &["app.user_id".to_string()])
            .await
            .unwrap();
        c.batch_execute("BEGIN READ ONLY").await.unwrap();
        let mut before = guard::snapshot(c, &watched).await.unwrap();
        let again = guard::snapshot(c, &watched).await.unwrap();
        assert!(again.same_answer(&before));
        assert_eq!(
            guard::changed(&watched, &before, &again, Span::All, true),
            None
        );

        // plancheck's own SET LOCAL, whose snapshot it derives without reading: the server's
        // answer after it is the derived one, byte for byte.
        for (name, value) in [
            ("plan_cache_mode", "force_generic_plan"),
            ("search_path", "\"$user\", public, \"we,ird {x}\""),
            ("app.user_id", "NULL"),
        ] {
            c.batch_execute(&format!(
                "SELECT pg_catalog.set_config('{name}', '{}', true)",
                value.replace('\'', "''")
            ))
            .await
            .unwrap();
            let derived = before.with_setting(&watched, name, value).unwrap();
            let now = guard::snapshot(c, &watched).await.unwrap();
            assert!(now.same_answer(&derived), "{name} = {value}");
            assert_eq!(
                guard::changed(&watched, &derived, &now, Span::All, true),
                None
            );
            // And the snapshot from before it sees the change.
            let change = guard::changed(&watched, &before, &now, Span::All, true)
                .unwrap()
                .to_string();
            assert!(change.contains(name), "{change}");
            c.batch_execute("ROLLBACK; BEGIN READ ONLY").await.unwrap();
            let before_again = guard::snapshot(c, &watched).await.unwrap();
            // A new transaction: everything else the same.
            assert!(matches!(
                guard::changed(&watched, &before, &before_again, Span::All, true),
                Some(guard::Change::EndedTransaction)
            ));
            before = before_again;
        }
        c.batch_execute("ROLLBACK").await.unwrap();
    });
}
