//! `fixtures load` never drops what it did not create: it refuses names held by a user's
//! objects, loads over its own board only with `--replace`, and never with CASCADE. Every test
//! looks at the server from a second session afterwards, not only at the exit status.

mod common;

use common::*;

/// The smallest board `--scale` accepts a run of in well under a second (2,344 posts).
const SMALL: &str = "0.001";

/// Runs `fixtures load` into `conn` at the small scale; returns (exit status, stderr).
fn load(conn: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["fixtures", "load", "--database-url", conn, "--scale", SMALL];
    args.extend_from_slice(extra);
    let run = run(&args);
    (run.code(), run.stderr)
}

/// How many of the names the board uses are taken in the database, by any kind of object.
fn board_names_taken(conn: &str, names: &str) -> String {
    query_text(
        conn,
        &format!(
            "SELECT (SELECT count(*) FROM pg_class WHERE relname IN ({names})) \
                  + (SELECT count(*) FROM pg_proc WHERE proname = 'board_hash')"
        ),
    )
}

// Regression: a user's `posts` table was dropped with CASCADE, its view and foreign key with it.
#[test]
fn a_users_posts_table_refuses_the_load_and_keeps_its_rows_view_and_foreign_key() {
    let db = empty_database("users_posts");
    sql(
        &db,
        "CREATE TABLE posts (id integer PRIMARY KEY, body text NOT NULL);
         INSERT INTO posts SELECT g, 'mine ' || g FROM generate_series(1, 3) g;
         CREATE VIEW my_posts AS SELECT id, body FROM posts;
         CREATE TABLE likes (post_id integer NOT NULL REFERENCES posts (id));
         INSERT INTO likes VALUES (2);",
    );
    let (status, stderr) = load(&db, &[]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("table public.posts"), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    let (status, stderr) = load(&db, &["--replace"]);
    assert_eq!(status, 2, "--replace does not lift it: {stderr}");
    assert!(stderr.contains("table public.posts"), "{stderr}");

    assert_eq!(
        query_text(&db, "SELECT string_agg(body, ',' ORDER BY id) FROM posts"),
        "mine 1,mine 2,mine 3"
    );
    assert_eq!(query_text(&db, "SELECT count(*) FROM my_posts"), "3");
    assert_eq!(
        query_text(
            &db,
            "SELECT count(*) FROM pg_constraint \
             WHERE conrelid = 'likes'::regclass AND confrelid = 'posts'::regclass AND contype = 'f'"
        ),
        "1"
    );
    assert_eq!(
        board_names_taken(
            &db,
            "'threads', 'forums', 'members', 'board_params', 'board_thread_plan', \
             'board_fragments'"
        ),
        "0",
        "no board object was created"
    );
}

#[test]
fn a_board_is_loaded_again_only_with_replace() {
    let db = empty_database("reload");
    let (status, stderr) = load(&db, &[]);
    assert_eq!(status, 0, "{stderr}");
    let posts = query_text(&db, "SELECT count(*) FROM posts");
    assert_eq!(posts, "2344");
    // The control for every "no board name taken" below: the count sees the board's tables.
    assert_eq!(
        board_names_taken(&db, "'posts', 'threads', 'forums', 'members'"),
        "4"
    );
    assert_eq!(
        query_text(&db, "SELECT obj_description('posts'::regclass, 'pg_class')"),
        "plancheck reference board: posts"
    );
    // The load's scratch objects are gone.
    assert_eq!(
        board_names_taken(&db, "'board_thread_plan', 'board_fragments'"),
        "0"
    );
    let oid = query_text(&db, "SELECT 'posts'::regclass::oid");

    let (status, stderr) = load(&db, &[]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("already loaded"), "{stderr}");
    assert!(stderr.contains("(scale 0.001)"), "{stderr}");
    assert!(stderr.contains("--replace"), "{stderr}");
    assert_eq!(
        query_text(&db, "SELECT 'posts'::regclass::oid"),
        oid,
        "the board was left alone"
    );

    let (status, stderr) = load(&db, &["--replace"]);
    assert_eq!(status, 0, "{stderr}");
    assert_ne!(
        query_text(&db, "SELECT 'posts'::regclass::oid"),
        oid,
        "the board was loaded again"
    );
    assert_eq!(query_text(&db, "SELECT count(*) FROM posts"), posts);
    assert_eq!(
        query_text(
            &db,
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'posts_thread_visible_idx'"
        ),
        "1"
    );
}

#[test]
fn replace_refuses_while_a_users_objects_depend_on_the_board_and_drops_nothing() {
    let db = fresh_board("depends_on_board");
    sql(
        &db,
        "CREATE VIEW recent_posts AS SELECT id FROM posts WHERE id > 100;
         CREATE TABLE bookmarks (thread_id bigint REFERENCES threads (id));",
    );
    let posts = query_text(&db, "SELECT count(*) FROM posts");
    let objects = query_text(&db, "SELECT count(*) FROM pg_class");
    let (status, stderr) = load(&db, &["--replace"]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("view recent_posts"), "{stderr}");
    assert!(stderr.contains("on table bookmarks"), "{stderr}");
    assert!(stderr.contains("nothing was dropped"), "{stderr}");
    assert!(!stderr.contains("CASCADE"), "{stderr}");

    assert_eq!(
        query_text(&db, "SELECT count(*) > 0 FROM recent_posts"),
        "t"
    );
    assert_eq!(query_text(&db, "SELECT count(*) FROM posts"), posts);
    assert_eq!(query_text(&db, "SELECT count(*) FROM pg_class"), objects);
    assert_eq!(
        query_text(
            &db,
            "SELECT count(*) FROM pg_constraint WHERE conname = 'bookmarks_thread_id_fkey'"
        ),
        "1"
    );
}

// PostgreSQL drops a table's indexes and triggers with it, even without CASCADE.
#[test]
fn replace_refuses_to_drop_an_index_or_trigger_a_user_added_to_the_board() {
    let db = fresh_board("added_to_board");
    sql(
        &db,
        "CREATE INDEX my_posts_author_idx ON posts (author_id, id);
         CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
         CREATE TRIGGER touch_threads BEFORE UPDATE ON threads
             FOR EACH ROW EXECUTE FUNCTION touch();",
    );
    let (status, stderr) = load(&db, &["--replace"]);
    assert_eq!(status, 2, "{stderr}");
    assert!(
        stderr.contains("index my_posts_author_idx on table posts"),
        "{stderr}"
    );
    assert!(
        stderr.contains("trigger touch_threads on table threads"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was dropped"), "{stderr}");
    assert_eq!(
        query_text(
            &db,
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'my_posts_author_idx'"
        ),
        "1"
    );
    assert_eq!(
        query_text(
            &db,
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'touch_threads'"
        ),
        "1"
    );
}

#[test]
fn a_users_table_named_like_a_scratch_table_refuses_the_load() {
    let db = empty_database("users_fragments");
    sql(
        &db,
        "CREATE TABLE board_fragments (note text);
         INSERT INTO board_fragments VALUES ('keep me');",
    );
    let (status, stderr) = load(&db, &[]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("table public.board_fragments"), "{stderr}");
    assert_eq!(
        query_text(&db, "SELECT note FROM board_fragments"),
        "keep me"
    );
    assert_eq!(
        board_names_taken(
            &db,
            "'posts', 'threads', 'forums', 'members', 'board_params'"
        ),
        "0"
    );
}

#[test]
fn a_view_or_a_function_holding_a_board_name_refuses_the_load() {
    let db = empty_database("users_view");
    sql(
        &db,
        "CREATE VIEW threads AS SELECT 1 AS id;
         CREATE FUNCTION board_hash(x bigint, seed integer) RETURNS bigint
             LANGUAGE sql AS 'SELECT x + seed';",
    );
    let (status, stderr) = load(&db, &["--replace"]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("view public.threads"), "{stderr}");
    assert!(
        stderr.contains("function public.board_hash(x bigint, seed integer)"),
        "{stderr}"
    );
    assert_eq!(query_text(&db, "SELECT board_hash(1, 2)"), "3");
    assert_eq!(query_text(&db, "SELECT count(*) FROM threads"), "1");
}

#[test]
fn the_leftovers_of_a_failed_load_are_cleared_without_replace() {
    let db = empty_database("leftovers_of_a_load");
    // What a load that failed before its first table leaves: marked scratch objects.
    sql(
        &db,
        "CREATE UNLOGGED TABLE board_fragments (id integer);
         COMMENT ON TABLE board_fragments IS 'plancheck reference board: scratch';",
    );
    let (status, stderr) = load(&db, &[]);
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("public.board_fragments"), "{stderr}");
    assert_eq!(board_names_taken(&db, "'board_fragments'"), "0");
    assert_eq!(query_text(&db, "SELECT count(*) FROM posts"), "2344");
}

#[test]
fn on_a_tiny_board_every_correct_read_path_passes_under_require_usable_and_a_broken_one_fails() {
    // What a CI database looks like: the reference board at 0.001 (tens of threads, 2,344 posts,
    // 100 members), analysed as the load leaves it.
    let db = empty_database("tinyboard");
    let (status, stderr) = load(&db, &[]);
    assert_eq!(status, 0, "{stderr}");
    // Regression: loaded in under a second, the board's changes reached the statistics after its
    // ANALYZE, and every check noted that its tables "changed a lot since last analysed".
    assert_eq!(
        query_text(
            &db,
            "SELECT coalesce(string_agg(relname || ' ' || n_mod_since_analyze, ', ' ORDER BY relname), '') \
             FROM pg_stat_user_tables WHERE n_mod_since_analyze > 0 \
               AND relname IN ('members', 'forums', 'threads', 'posts')"
        ),
        "",
        "tables changed since their analyse, right after the load"
    );
    let project = reference_project();
    // Chosen: the planner rightly prefers seq scans of tables this small, and says so.
    let (status, report) = check_json(&db, &project, &[]);
    assert_eq!(status, 1, "{report:#}");
    // Usable: every read path passes, as warnings with their reasons.
    let (status, report) = check_json(&db, &project, &["--require", "usable"]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["summary"]["failed"], 0, "{report:#}");
    assert_eq!(report["summary"]["errors"], 0, "{report:#}");
    assert!(
        !report.to_string().contains("since it was last analysed"),
        "{report:#}"
    );
    // A read path broken as the seed's member page breaks (the visibility a parameter where
    // the partial index needs the constant): still a failure on the tiny board.
    let dir = one_read_path(
        "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = $2\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "params = [1, \"visible\"]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_eq!(status, 1, "{report:#}");
    let c = check_of(&report, "path", "member");
    assert_eq!(c["warning"], false, "{c:#}");
    assert!(
        matches!(c["verdict"].as_str(), Some("generic-plan" | "not-usable")),
        "{c:#}"
    );
}
