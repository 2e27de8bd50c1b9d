//! `plancheck stats export` against a real server: the file holds what the server's own catalog
//! says (sizes, pg_stats, extended statistics, settings, B-tree heights, end keys), leaves out
//! what --redact names, survives hostile names, and `stats show` reads it back; bad arguments
//! and bad files are refused, naming what is wrong.

mod common;

use std::fs;

use common::*;

fn export(db: &str, out: &std::path::Path, extra: &[&str]) -> Run {
    export_run(db, out, extra)
}

fn file_of(path: &std::path::Path) -> plancheck::stats::File {
    plancheck::stats::read(path).unwrap_or_else(|e| panic!("{e}"))
}

fn relation<'a>(f: &'a plancheck::stats::File, name: &str) -> &'a plancheck::stats::Relation {
    f.relation("public", name)
        .unwrap_or_else(|| panic!("no {name} in the file"))
}

#[test]
fn the_file_says_what_the_catalog_says() {
    let db = fresh_board("stats_export_catalog");
    sql(&db, "CREATE EXTENSION IF NOT EXISTS pageinspect; ANALYZE");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prod.stats.json");
    let r = export(&db, &out, &[]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    assert!(r.stderr.contains("wrote "), "{}", r.shown());
    assert!(
        r.stderr.contains("it reveals real values of"),
        "{}",
        r.shown()
    );
    let f = file_of(&out);
    assert_eq!(f.server.version_num, server_version_num(&db));
    let posts = relation(&f, "posts");
    // The sizes are pg_class's and the file's pages.
    let catalog = query_text(
        &db,
        "SELECT relpages || ' ' || reltuples::bigint || ' ' || \
                pg_relation_size('posts') / current_setting('block_size')::int \
         FROM pg_class WHERE oid = 'posts'::regclass",
    );
    assert_eq!(
        format!(
            "{} {} {}",
            posts.size.relpages, posts.size.reltuples as i64, posts.size.blocks
        ),
        catalog
    );
    // Every pg_stats row of the table, with its values.
    let columns = query_text(
        &db,
        "SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename = 'posts'",
    );
    assert_eq!(posts.columns.len().to_string(), columns);
    let visibility = posts
        .columns
        .iter()
        .find(|c| c.name == "visibility")
        .unwrap();
    assert_eq!(
        visibility.most_common_vals.as_deref(),
        Some(
            query_text(
                &db,
                "SELECT most_common_vals::text FROM pg_stats \
                 WHERE tablename = 'posts' AND attname = 'visibility'"
            )
            .as_str()
        )
    );
    assert_eq!(visibility.type_name, "text");
    // The indexes in OID order, each B-tree's height its metapage's, its end keys the
    // column's own lowest and highest (ordered as numbers: 99999 is not the highest id).
    let names: Vec<&str> = posts.indexes.iter().map(|i| i.name.as_str()).collect();
    let by_oid = query_text(
        &db,
        "SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY indexrelid) FROM pg_index \
         WHERE indrelid = 'posts'::regclass",
    );
    let names = names.join(",");
    assert_eq!(names, by_oid);
    for i in posts.indexes.iter().filter(|i| i.method == "btree") {
        let b = i.btree.as_ref().unwrap();
        assert_eq!(b.height_from, "metapage", "{}", i.name);
        let level = query_text(&db, &format!("SELECT level FROM bt_metap('{}')", i.name));
        assert_eq!(b.height.to_string(), level, "{}", i.name);
    }
    let pkey = posts
        .indexes
        .iter()
        .find(|i| i.name == "posts_pkey")
        .unwrap();
    let b = pkey.btree.as_ref().unwrap();
    assert_eq!(
        (b.lowest.clone().unwrap(), b.highest.clone().unwrap()),
        (
            query_text(&db, "SELECT min(id)::text FROM posts"),
            query_text(&db, "SELECT max(id)::text FROM posts")
        )
    );
    assert!(
        posts
            .indexes
            .iter()
            .any(|i| i.method == "gin" && i.btree.is_none())
    );
    // The planner reads no end key from a partial index: none is read from it (an ORDER BY it
    // cannot serve would read the whole table); its unfiltered twin gives them.
    let ends_of = |name: &str| {
        let b = posts
            .indexes
            .iter()
            .find(|i| i.name == name)
            .and_then(|i| i.btree.clone())
            .unwrap();
        (b.lowest, b.highest)
    };
    assert_eq!(ends_of("posts_thread_visible_idx"), (None, None));
    assert_eq!(
        ends_of("posts_thread_all_idx"),
        (
            Some(query_text(&db, "SELECT min(thread_id)::text FROM posts")),
            Some(query_text(&db, "SELECT max(thread_id)::text FROM posts"))
        )
    );
    // The planner's settings, as the session has them.
    let random = f
        .settings
        .iter()
        .find(|s| s.name == "random_page_cost")
        .unwrap();
    assert_eq!(random.setting, query_text(&db, "SHOW random_page_cost"));
    for name in [
        "work_mem",
        "max_parallel_workers_per_gather",
        "effective_cache_size",
    ] {
        assert!(f.settings.iter().any(|s| s.name == name), "{name}");
    }
    // `stats show` reads it back.
    let shown = run(&["stats", "show", out.to_str().unwrap()]);
    assert_eq!(shown.status, Some(0), "{}", shown.shown());
    assert!(
        shown.stdout.contains("public.posts (table): ")
            && shown.stdout.contains("under a minute ago")
            && shown.stdout.contains("read from its metapage"),
        "{}",
        shown.shown()
    );
    // At 80 columns every line fits.
    let narrow =
        run_command(plancheck(&["stats", "show", out.to_str().unwrap()]).env("COLUMNS", "80"));
    assert!(
        narrow.stdout.lines().all(|l| l.chars().count() <= 80),
        "{}",
        narrow.shown()
    );
    assert!(narrow.stdout.lines().count() > 8, "{}", narrow.shown());
}

#[test]
fn extended_statistics_are_named_by_their_columns() {
    let db = fresh_board("stats_export_extended");
    sql(
        &db,
        "CREATE STATISTICS posts_thread_forum (ndistinct, dependencies, mcv) \
           ON thread_id, forum_id FROM posts; \
         ANALYZE posts",
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let r = export(&db, &out, &["--table", "posts"]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    let f = file_of(&out);
    assert_eq!(f.relations.len(), 1, "--table posts: posts only");
    let e = &relation(&f, "posts").extended[0];
    assert_eq!(e.name, "posts_thread_forum");
    assert_eq!(e.keys, ["thread_id", "forum_id"]);
    let n = e.n_distinct.as_ref().unwrap();
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].keys, [0, 1]);
    let server = query_text(
        &db,
        "SELECT n_distinct::text FROM pg_stats_ext WHERE statistics_name = 'posts_thread_forum'",
    );
    assert!(
        server.contains(&format!(": {}", n[0].value)),
        "{server} vs {n:?}"
    );
    let d = e.dependencies.as_ref().unwrap();
    // thread_id decides forum_id on the board: the dependency is there, by position.
    assert!(
        d.iter()
            .any(|d| d.from == [0] && d.to == 1 && d.degree > 0.9),
        "{d:?}"
    );
    assert!(e.most_common_vals.is_some());
    // From PostgreSQL 14, statistics on expressions: their own pg_stats-shaped rows, the
    // expression a key of its own after the columns.
    if server_version_num(&db) >= 140000 {
        sql(
            &db,
            "CREATE STATISTICS posts_vis_forum ON (lower(visibility)), forum_id FROM posts; \
             ANALYZE posts",
        );
        let r = export(&db, &out, &["--table", "posts"]);
        assert_eq!(r.status, Some(0), "{}", r.shown());
        let f = file_of(&out);
        let e = relation(&f, "posts")
            .extended
            .iter()
            .find(|e| e.name == "posts_vis_forum")
            .unwrap();
        assert_eq!(e.keys, ["forum_id", "lower(visibility)"]);
        assert_eq!(e.expressions.len(), 1);
        assert_eq!(e.expressions[0].n_distinct, 3.0);
    }
}

#[test]
fn redacted_columns_leave_no_value_in_the_file() {
    let db = fresh_board("stats_export_redact");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    // The values that would give the columns away.
    let names = query_text(
        &db,
        "SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'members' \
         AND attname = 'name'",
    );
    let bounds = query_text(
        &db,
        "SELECT histogram_bounds::text FROM pg_stats WHERE tablename = 'members' \
         AND attname = 'name'",
    );
    let some_name = if names.is_empty() { &bounds } else { &names };
    let some_name = some_name
        .trim_matches(['{', '}'])
        .split(',')
        .nth(1)
        .unwrap()
        .trim_matches('"')
        .to_string();
    assert!(some_name.len() > 3, "{some_name}");
    let r = export(
        &db,
        &out,
        &["--redact", "members.*", "--redact", "public.posts.body"],
    );
    assert_eq!(r.status, Some(0), "{}", r.shown());
    let text = fs::read_to_string(&out).unwrap();
    assert!(
        !text.contains(&some_name),
        "{some_name} is in the redacted file"
    );
    let f = file_of(&out);
    let members = relation(&f, "members");
    assert!(!members.columns.is_empty());
    assert!(
        members
            .columns
            .iter()
            .all(|c| c.redacted && !c.holds_values())
    );
    // The numbers stay: the planner's equality estimates need no value.
    assert!(members.columns.iter().any(|c| c.n_distinct != 0.0));
    assert!(members.indexes.iter().all(|i| {
        i.btree
            .as_ref()
            .is_none_or(|b| b.lowest.is_none() && b.highest.is_none())
    }));
    let posts = relation(&f, "posts");
    assert!(posts.columns.iter().any(|c| c.name == "body" && c.redacted));
    assert!(
        posts
            .columns
            .iter()
            .any(|c| c.name == "visibility" && c.holds_values())
    );
    assert!(f.redacted.contains(&"public.posts.body".to_string()));
    assert!(r.stderr.contains("values left out of"), "{}", r.shown());
}

#[test]
fn hostile_names_are_identifiers_never_sql() {
    let db = fresh_board("stats_export_hostile");
    sql(
        &db,
        r#"CREATE TABLE "x""; DROP TABLE posts; --" ("a""b" int PRIMARY KEY, "c) FROM posts; --" text);
           INSERT INTO "x""; DROP TABLE posts; --" SELECT g, 'v' || g FROM generate_series(1, 500) g;
           CREATE INDEX ON "x""; DROP TABLE posts; --" ("c) FROM posts; --");
           ANALYZE "x""; DROP TABLE posts; --";"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let r = export(
        &db,
        &out,
        &["--table", r#"public."x""; DROP TABLE posts; --""#],
    );
    assert_eq!(r.status, Some(0), "{}", r.shown());
    assert!(relation_exists(&db, "posts"));
    let f = file_of(&out);
    let t = relation(&f, r#"x"; DROP TABLE posts; --"#);
    let pkey = t
        .indexes
        .iter()
        .find(|i| i.name.ends_with("_pkey"))
        .unwrap();
    let b = pkey.btree.as_ref().unwrap();
    assert_eq!(
        (b.lowest.as_deref(), b.highest.as_deref()),
        (Some("1"), Some("500"))
    );
    let other = t
        .indexes
        .iter()
        .find(|i| !i.name.ends_with("_pkey"))
        .unwrap();
    assert_eq!(
        other.btree.as_ref().unwrap().highest.as_deref(),
        Some("v99")
    );
    // An index in another operator class than the type's default does not serve ORDER BY of
    // the column: no end key is read through it.
    sql(
        &db,
        "CREATE TABLE patterns (name text); \
         INSERT INTO patterns SELECT 'n' || g FROM generate_series(1, 100) g; \
         CREATE INDEX patterns_name_idx ON patterns (name text_pattern_ops); ANALYZE patterns",
    );
    let r = export(&db, &out, &["--table", "patterns"]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    let f = file_of(&out);
    let b = relation(&f, "patterns").indexes[0].btree.clone().unwrap();
    assert_eq!((b.lowest, b.highest), (None, None));
}

#[test]
fn a_role_without_pageinspect_gets_heights_estimated_and_said_so() {
    let roles = least_privilege("stats_export_role");
    sql(&roles.admin, "CREATE EXTENSION IF NOT EXISTS pageinspect");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let r = export(&roles.check, &out, &[]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    assert!(r.stderr.contains("heights estimated"), "{}", r.shown());
    let f = file_of(&out);
    let posts = relation(&f, "posts");
    for i in posts.indexes.iter().filter(|i| i.method == "btree") {
        let b = i.btree.as_ref().unwrap();
        assert_eq!(b.height_from, "estimate", "{}", i.name);
        let level: u32 = query_text(
            &roles.admin,
            &format!("SELECT level FROM bt_metap('{}')", i.name),
        )
        .parse()
        .unwrap();
        assert!(
            b.height.abs_diff(level) <= 1,
            "{}: estimated {} for {level}",
            i.name,
            b.height
        );
    }
}

#[test]
fn bad_arguments_are_refused_and_no_file_is_written() {
    let db = fresh_board("stats_export_bad");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    for (args, said) in [
        (
            vec!["--table", "no_such_table"],
            "--table no_such_table: no table",
        ),
        (
            vec!["--redact", "posts.no_such_column"],
            "--redact posts.no_such_column: no exported column",
        ),
        (vec!["--redact", "posts"], "give TABLE.COLUMN"),
    ] {
        let r = export(&db, &out, &args);
        assert_eq!(r.status, Some(2), "{args:?}\n{}", r.shown());
        assert!(r.stderr.contains(said), "{args:?}\n{}", r.shown());
        assert!(!out.exists(), "{args:?}");
    }
}

#[test]
fn a_bad_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    for (text, said) in [
        (
            "{\"format\": \"plancheck-statistics\", \"version\": 7}",
            "version 7",
        ),
        ("[1, 2", "1:5"),
        ("{\"format\": \"other\"}", "not a plancheck statistics file"),
    ] {
        fs::write(&path, text).unwrap();
        let r = run(&["stats", "show", path.to_str().unwrap()]);
        assert_eq!(r.status, Some(2), "{text}\n{}", r.shown());
        assert!(
            r.stderr.contains(&format!("{}: ", path.display())) && r.stderr.contains(said),
            "{text}\n{}",
            r.shown()
        );
    }
}

#[test]
fn the_file_can_go_to_standard_output() {
    let db = fresh_board("stats_export_stdout");
    let r = run(&[
        "stats",
        "export",
        "--database-url",
        &db,
        "-o",
        "-",
        "--table",
        "forums",
    ]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    let f = plancheck::stats::parse(&r.stdout).unwrap();
    assert_eq!(f.relations.len(), 1);
    assert!(r.stderr.contains("wrote standard output"), "{}", r.shown());
}

#[test]
fn a_project_s_read_paths_select_every_table_they_may_read_and_no_other() {
    let db = empty_database("stats_export_project");
    sql(
        &db,
        "CREATE SCHEMA app; \
         CREATE TABLE app.orders (id int PRIMARY KEY, customer int); \
         CREATE TABLE customers (id int PRIMARY KEY, name text); \
         CREATE TABLE hidden_behind_view (id int, shown boolean); \
         CREATE VIEW shown AS SELECT id FROM hidden_behind_view WHERE shown; \
         CREATE TABLE read_by_function (id int); \
         CREATE FUNCTION counted() RETURNS bigint LANGUAGE sql STABLE \
           AS 'SELECT count(*) FROM read_by_function'; \
         CREATE TABLE events (at date, id int) PARTITION BY RANGE (at); \
         CREATE TABLE events_2026 PARTITION OF events \
           FOR VALUES FROM ('2026-01-01') TO ('2027-01-01'); \
         CREATE TABLE set_up (id int); \
         CREATE TABLE unrelated (id int); \
         CREATE TABLE app.unrelated_too (id int); \
         ANALYZE",
    );
    let project = read_paths(&[
        (
            "orders",
            "SELECT o.id, c.name, counted() FROM app.orders o JOIN customers c ON c.id = o.customer",
            "[scopes.member]\nindex = \"orders_pkey\"\nsetup = [\"SELECT 1 FROM set_up\"]\n",
        ),
        (
            "shown",
            "SELECT s.id FROM shown s, events e WHERE e.id = s.id",
            "[scopes.member]\nindex = false\n",
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prod.stats.json");
    let r = export(&db, &out, &["--project", project.path().to_str().unwrap()]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    let f = file_of(&out);
    let mut names: Vec<String> = f
        .relations
        .iter()
        .map(|r| format!("{}.{}", r.schema, r.name))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "app.orders",
            "public.customers",
            "public.events",
            "public.events_2026",
            "public.hidden_behind_view",
            "public.read_by_function",
            "public.set_up",
        ]
    );
    // With --table, both.
    let r = export(
        &db,
        &out,
        &[
            "--project",
            project.path().to_str().unwrap(),
            "--table",
            "unrelated",
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.shown());
    assert!(file_of(&out).relation("public", "unrelated").is_some());
    // A project that does not load is refused before any connection, naming its file.
    std::fs::write(
        project.path().join("expectations/shown.toml"),
        "[scopes.member\n",
    )
    .unwrap();
    let r = export(
        "postgresql://nobody@/none?host=/nonexistent",
        &dir.path().join("never.json"),
        &["--project", project.path().to_str().unwrap()],
    );
    assert_eq!(r.status, Some(2), "{}", r.shown());
    assert!(r.stderr.contains("shown.toml"), "{}", r.shown());
    assert!(!dir.path().join("never.json").exists());
}
