//! `plancheck check --stats FILE` against a real server: the reference project on an empty copy
//! of the board's schema, planned at the loaded board's exported statistics, makes the loaded
//! board's own plans (the same shape, the same index on every scan node, the top row estimate
//! within 1 %) and gives the same verdicts; a file that makes production small turns a pass into
//! `not-chosen`; bad files and flags are refused; a hostile domain in the file's columns runs
//! nothing with privilege.

mod common;

use common::*;

/// The board's schema and indexes, no rows, analysed: a CI database.
fn empty_board(name: &str) -> String {
    let db = empty_database(name);
    sql(&db, include_str!("../fixtures/schema.sql"));
    for step in include_str!("../fixtures/indexes.sql").split("-- step:") {
        if !step.trim().is_empty() {
            sql(&db, &format!("-- step:{step}"));
        }
    }
    sql(&db, "ANALYZE");
    db
}

#[test]
fn the_empty_copy_at_production_s_statistics_plans_as_the_loaded_board() {
    let loaded = fresh_board("stats_check_loaded");
    sql(&loaded, "ANALYZE");
    let empty = empty_board("stats_check_empty");
    plans_as_loaded(&loaded, &empty, false);
}

#[test]
#[ignore = "loads the full-size board (2.3 million posts, about a minute and 1 GB): CI runs it on \
            PostgreSQL 13, 15 and 18 (.ci/run)"]
fn the_empty_copy_at_the_full_board_s_statistics_plans_as_the_full_board() {
    let loaded = empty_database("stats_check_full");
    let r = run(&[
        "fixtures",
        "load",
        "--database-url",
        &loaded,
        "--scale",
        "1",
    ]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    // B-tree heights and GIN metapages read as they are, not estimated.
    sql(&loaded, "CREATE EXTENSION IF NOT EXISTS pageinspect");
    let empty = empty_board("stats_check_full_empty");
    plans_as_loaded(&loaded, &empty, true);
    // The full board's gigabyte goes.
    empty_database("stats_check_full");
}

/// The reference project on `empty` at `loaded`'s exported statistics makes `loaded`'s own
/// plans ([`plans_as_loaded_for`]); with `costs`, total costs within 1 % too (a GIN index's
/// cost rests on its metapage statistics, which the copy does not carry: within 1 % still).
fn plans_as_loaded(loaded: &str, empty: &str, costs: bool) {
    // Without the budgets relative to another check: those compare this database's timings
    // and buffers, which are the measured server's, not production's.
    let copy = copy_of_reference();
    for entry in std::fs::read_dir(copy.path().join("expectations")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("relative"))
            .collect();
        std::fs::write(&path, kept.join("\n")).unwrap();
    }
    let compared = plans_as_loaded_for(loaded, empty, copy.path(), &[], costs);
    assert!(compared.plans >= 20, "{} plans compared", compared.plans);
    // And the reports say whose planner answered, and the file's age.
    let message = check_of(&compared.at_stats, "thread-page-first", "member")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("At production's statistics (exported ") && message.contains("ago"),
        "{message}"
    );
    // The heights and end keys were carried: nothing says otherwise.
    assert!(!message.contains("not carried"), "{message}");
}

#[test]
fn a_read_path_production_would_not_serve_by_its_index_fails_though_ci_chooses_it() {
    let db = fresh_board("stats_check_small");
    sql(&db, "ANALYZE");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export(&db, &file);
    // Production, says this file, holds posts in one page of 10 rows: a seq scan of it is
    // cheaper than any index.
    let mut f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for rel in f["relations"].as_array_mut().unwrap() {
        if rel["name"] == "posts" {
            rel["size"]["relpages"] = 1.into();
            rel["size"]["blocks"] = 1.into();
            rel["size"]["reltuples"] = 10.0.into();
            rel["size"]["relallvisible"] = 0.into();
            for i in rel["indexes"].as_array_mut().unwrap() {
                i["size"]["relpages"] = 2.into();
                i["size"]["blocks"] = 2.into();
                i["size"]["reltuples"] = 10.0.into();
            }
        }
    }
    // And production sorts text by ICU's root locale: the copy (C) says its text ranges may differ.
    f["server"]["locale_provider"] = "i".into();
    f["server"]["locale"] = "und".into();
    std::fs::write(&file, serde_json::to_string(&f).unwrap()).unwrap();
    let project = reference_project();
    let only = ["--only", "thread-page-first", "--scope", "member"];
    let r = check(&db, &project, &only);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    let mut args = only.to_vec();
    args.extend(["--stats", file.to_str().unwrap()]);
    let r = check(&db, &project, &args);
    assert_eq!(r.status, Some(1), "{}", r.shown());
    let report = r.report();
    assert_eq!(
        verdict_of(&report, "thread-page-first", "member"),
        "not-chosen",
        "{}",
        check_of(&report, "thread-page-first", "member")["message"]
    );
    let message = check_of(&report, "thread-page-first", "member")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("At production's statistics")
            && message.contains("does not choose posts_thread_visible_idx")
            && message.contains("through posts_thread_visible_idx the cheapest plan costs")
            && message.contains("On this database's own statistics: pass")
            && message.contains("production's database sorts text by ICU und and the copy by"),
        "{message}"
    );
}

#[test]
fn bad_files_and_flags_are_refused_naming_the_file() {
    let db = fresh_board("stats_check_bad");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export(&db, &file);
    let project = reference_project();
    let path = file.to_str().unwrap();
    // With --no-scratch there is no copy to plan on.
    let r = check(&db, &project, &["--stats", path, "--no-scratch"]);
    assert_eq!(r.status, Some(2), "{}", r.shown());
    assert!(r.stderr.contains("--no-scratch"), "{}", r.shown());
    // Another major version.
    let mut f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let num = f["server"]["version_num"].as_u64().unwrap();
    let other = if num / 10_000 == 13 { 140_005 } else { 130_005 };
    f["server"]["version_num"] = other.into();
    let wrong = dir.path().join("other-major.json");
    std::fs::write(&wrong, serde_json::to_string(&f).unwrap()).unwrap();
    let r = check(&db, &project, &["--stats", wrong.to_str().unwrap()]);
    assert_eq!(r.status, Some(2), "{}", r.shown());
    assert!(
        r.stderr.contains("other-major.json") && r.stderr.contains("major version"),
        "{}",
        r.shown()
    );
    // Not JSON, and a file that is missing.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"format\": ").unwrap();
    let r = check(&db, &project, &["--stats", broken.to_str().unwrap()]);
    assert_eq!(r.status, Some(2), "{}", r.shown());
    assert!(r.stderr.contains("broken.json: 1:"), "{}", r.shown());
    let r = check(&db, &project, &["--stats", "/nonexistent/prod.json"]);
    assert_eq!(r.status, Some(2), "{}", r.shown());
    assert!(r.stderr.contains("/nonexistent/prod.json"), "{}", r.shown());
    // A value its column's type refuses: that check's plan at production's statistics is not
    // made (an error saying what was refused), never planned without it.
    let mut f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for rel in f["relations"].as_array_mut().unwrap() {
        if rel["name"] == "posts" {
            for c in rel["columns"].as_array_mut().unwrap() {
                if c["name"] == "thread_id" {
                    c["histogram_bounds"] = "{1,not-a-number,3}".into();
                }
            }
        }
    }
    let refused = dir.path().join("refused.json");
    std::fs::write(&refused, serde_json::to_string(&f).unwrap()).unwrap();
    let r = check(
        &db,
        &project,
        &[
            "--stats",
            refused.to_str().unwrap(),
            "--only",
            "thread-page-first",
            "--scope",
            "member",
        ],
    );
    assert_eq!(r.status, Some(1), "{}", r.shown());
    let report = r.report();
    assert_eq!(verdict_of(&report, "thread-page-first", "member"), "error");
    let message = check_of(&report, "thread-page-first", "member")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("refused production's statistics") && message.contains("column thread_id"),
        "{message}"
    );
}

#[test]
fn a_hostile_domain_in_the_statistics_runs_nothing_with_privilege() {
    let db = empty_database("stats_check_hostile");
    let marker = tempfile::tempdir().unwrap();
    // Writable by the scratch server's own user, so that a write that ran would succeed.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(marker.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let target = marker.path().join("written-by-the-copy");
    // The CHECK writes a file (a superuser's right) when it runs on the copy, whose database
    // is `postgres`; on the measured server it does nothing. (A domain with a CHECK inside a
    // composite column is a definition the copy does not take at all: ALTER DOMAIN cannot add
    // a constraint to a domain a composite column uses.)
    sql(
        &db,
        &format!(
            "CREATE FUNCTION hostile(v int) RETURNS boolean LANGUAGE plpgsql AS $f$ \
             BEGIN \
               IF pg_catalog.current_database() = 'postgres' THEN \
                 EXECUTE pg_catalog.format('COPY (SELECT 1) TO %L', '{}'); \
               END IF; \
               RETURN true; \
             EXCEPTION WHEN others THEN RETURN true; \
             END $f$; \
             CREATE DOMAIN guarded AS int CHECK (hostile(VALUE)); \
             CREATE TYPE pair AS (a int, b text); \
             CREATE TABLE t (id int PRIMARY KEY, d guarded, p pair); \
             CREATE STATISTICS t_dk (mcv) ON d, id FROM t; \
             CREATE STATISTICS t_dp (mcv) ON d, p FROM t; \
             INSERT INTO t SELECT g, g % 3, ROW(g % 3, 'x')::pair FROM generate_series(1, 3000) g; \
             ANALYZE t",
            target.display()
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export(&db, &file);
    let f = plancheck::stats::read(&file).unwrap();
    let t = f.relation("public", "t").unwrap();
    assert!(
        t.columns
            .iter()
            .filter(|c| c.name != "id")
            .all(|c| c.most_common_vals.is_some()),
        "the file holds values of the domain and the composite: {t:?}"
    );
    let project = one_read_path("SELECT id FROM t WHERE id = 7", &member("t_pkey"));
    let r = check(&db, project.path(), &["--stats", file.to_str().unwrap()]);
    assert!(r.status.is_some(), "{}", r.shown());
    assert!(
        !target.exists(),
        "the domain's CHECK wrote a file on the copy: it ran as a superuser"
    );
    let report = r.report();
    let message = report["checks"][0]["message"].as_str().unwrap().to_string();
    assert!(message.contains("At production's statistics"), "{message}");
    if server_version_num(&db) < 180_000 {
        // Before 18 a composite's values are never parsed by the superuser (its fields' input
        // could be the schema's code): said as a gap.
        assert!(message.contains("column p's values"), "{message}");
    }
    // The extended statistics' most common values of the domain are parsed with its base type
    // (no CHECK runs), those of the composite are not parsed on the copy at all.
    assert!(!message.contains("extended statistics t_dk"), "{message}");
    assert!(
        message.contains(
            "the most common values of extended statistics t_dp are not written (parsing values \
             of type public.pair"
        ),
        "{message}"
    );
}

#[test]
fn a_partitioned_table_is_exported_and_planned_at_its_partitions_statistics() {
    let ddl = "CREATE TABLE ev (id bigint, at date, kind text) PARTITION BY RANGE (at); \
               CREATE TABLE ev_2025 PARTITION OF ev FOR VALUES FROM ('2025-01-01') TO ('2026-01-01'); \
               CREATE TABLE ev_2026 PARTITION OF ev FOR VALUES FROM ('2026-01-01') TO ('2027-01-01'); \
               CREATE INDEX ev_kind_idx ON ev (kind, at)";
    let loaded = empty_database("stats_check_part");
    sql(
        &loaded,
        &format!(
            "{ddl}; INSERT INTO ev SELECT g, date '2025-01-01' + (g % 700), \
             CASE WHEN g % 50 = 0 THEN 'rare' ELSE 'common' END \
             FROM generate_series(1, 100000) g; ANALYZE"
        ),
    );
    let empty = empty_database("stats_check_part_empty");
    sql(&empty, &format!("{ddl}; ANALYZE"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export(&loaded, &file);
    let project = one_read_path(
        "SELECT id FROM ev WHERE kind = 'rare' AND at >= date '2026-03-01' ORDER BY at LIMIT 10",
        &member("ev_kind_idx"),
    );
    let r = check(&empty, project.path(), &["--stats", file.to_str().unwrap()]);
    assert_eq!(r.status, Some(0), "{}", r.shown());
    let report = r.report();
    let c = &report["checks"][0];
    assert_eq!(c["verdict"], "pass", "{c}");
    // On the empty database alone the check does not pass: the planner reads the empty
    // partition whole (not-chosen), or, on PostgreSQL 13, which counts an empty partitioned
    // table as never analysed, the verdict rests on its guesses (no-statistics).
    assert!(
        matches!(c["here"].as_str(), Some("not-chosen" | "no-statistics")),
        "{c}"
    );
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("using ev_2026_kind_at_idx"),
        "{c}"
    );
    // Over every partition the planner reads the partitioned table's own statistics (its
    // inherited ones): the groups of kind are production's 2, not a default guess.
    let project = one_read_path(
        "SELECT kind, count(*) FROM ev GROUP BY kind",
        "[scopes.member]\nindex = false\n",
    );
    let (plans, _) = custom_plans(&loaded, &empty, project.path(), &file);
    let (_, predicted, own) = &plans[0];
    let (x, y) = (predicted.root.plan_rows, own.root.plan_rows);
    assert_eq!(x, y, "groups predicted {x}, on the loaded database {y}");
}

#[test]
fn extended_statistics_are_carried_by_column_name_and_what_is_not_is_said() {
    // Production dropped a column before the keys: its attribute numbers are not the CI
    // schema's, and the file's keys are carried by name.
    // The most common values are formed on the copy for every kind of key: by value (int4,
    // date), variable-length (text), with nulls; a composite's values are never parsed there.
    let tail = "city int, zip int, street text, kind text, day date, pt pair); \
                CREATE INDEX addr_street_idx ON addr (street); \
                CREATE STATISTICS addr_cz (ndistinct, dependencies) ON city, zip FROM addr; \
                CREATE STATISTICS addr_sk (mcv) ON street, kind FROM addr; \
                CREATE STATISTICS addr_kd (mcv) ON day, kind, city FROM addr; \
                CREATE STATISTICS addr_kp (mcv) ON kind, pt FROM addr";
    let loaded = empty_database("stats_check_extended");
    sql(
        &loaded,
        &format!(
            "CREATE TYPE pair AS (a int, b int); \
             CREATE TABLE addr (id int PRIMARY KEY, gone int, {tail}; \
             ALTER TABLE addr DROP COLUMN gone; \
             CREATE STATISTICS addr_zs (ndistinct) ON zip, street FROM addr; \
             INSERT INTO addr SELECT g, \
                    CASE g % 4 WHEN 0 THEN 0 WHEN 1 THEN 1 ELSE g % 1000 END, \
                    (g % 1000) * 10 + g % 3, \
                    CASE WHEN g % 4 = 0 THEN 's0' ELSE 's' || g % 5000 END, \
                    CASE g % 4 WHEN 0 THEN 'k' WHEN 1 THEN NULL ELSE 'k' || g % 7 END, \
                    date '2026-01-01' + CASE g % 4 WHEN 0 THEN 0 WHEN 1 THEN 1 ELSE g % 1000 END, \
                    ROW(g % 2, 0)::pair \
               FROM generate_series(1, 200000) g; \
             ANALYZE"
        ),
    );
    let empty = empty_database("stats_check_extended_empty");
    sql(
        &empty,
        &format!(
            "CREATE TYPE pair AS (a int, b int); CREATE TABLE addr (id int PRIMARY KEY, {tail}; ANALYZE"
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export(&loaded, &file);
    let f = plancheck::stats::read(&file).unwrap();
    let addr = f.relation("public", "addr").unwrap();
    let object = |name: &str| addr.extended.iter().find(|e| e.name == name).unwrap();
    assert!(object("addr_cz").n_distinct.is_some() && object("addr_cz").dependencies.is_some());
    assert!(object("addr_sk").most_common_vals.is_some(), "{addr:?}");
    let expect = member("addr_street_idx");
    let project = read_paths(&[
        // The groups of (city, zip): production's distinct count of the pair, not the product.
        (
            "groups",
            "SELECT city, zip, count(*) FROM addr WHERE street > 's4' GROUP BY city, zip",
            &expect,
        ),
        // zip implies city: production's dependency, not the product of two selectivities.
        (
            "pair",
            "SELECT id FROM addr WHERE city = 5 AND zip = 50 AND street > 's4'",
            &expect,
        ),
        // A quarter of the rows have both: production's most common values of (day, kind,
        // city), not the product of the three columns' own frequencies.
        (
            "common",
            "SELECT id FROM addr WHERE kind = 'k' AND day = '2026-01-01' AND city = 0 \
             AND street > 's4'",
            &expect,
        ),
        // Nulls are items of the list too.
        (
            "nulls",
            "SELECT id FROM addr WHERE kind IS NULL AND day = '2026-01-02' AND city = 1 \
             AND street > 's4'",
            &expect,
        ),
    ]);
    let (plans, report) = custom_plans(&loaded, &empty, project.path(), &file);
    assert_eq!(plans.len(), 4);
    for (name, predicted, own) in &plans {
        let (x, y) = (predicted.root.plan_rows, own.root.plan_rows);
        assert!(
            (x - y).abs() <= 0.01 * x.max(y),
            "{name}: {x} rows predicted, {y} on the loaded database"
        );
    }
    // What the copy does not take is named: the values of a composite key, and an object
    // this database's table lacks; the lists it formed are not.
    let message = check_of(&report, "groups", "member")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains(
            "the most common values of extended statistics addr_kp are not written (parsing \
             values of type public.pair would run the schema's own code"
        ),
        "{message}"
    );
    for formed in ["addr_sk", "addr_kd"] {
        assert!(
            !message.contains(&format!("extended statistics {formed} ")),
            "{message}"
        );
    }
    assert!(
        message.contains("extended statistics addr_zs are not on this database's table"),
        "{message}"
    );
    // A list the copy's server refuses, or not one row of keys per frequency, is a named gap;
    // its text reaches the server as a parameter, never as SQL.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for relation in v["relations"].as_array_mut().unwrap() {
        for e in relation["extended"].as_array_mut().into_iter().flatten() {
            let (vals, freqs) = match e["name"].as_str().unwrap() {
                "addr_kd" => ("{{\"2026-01-01'); DROP TABLE addr; --\",k,0}}", 1),
                "addr_sk" => ("{{s0},{s1}}", 2),
                _ => continue,
            };
            e["most_common_vals"] = vals.into();
            e["most_common_freqs"] = serde_json::json!(vec![0.1; freqs]);
            e["most_common_base_freqs"] = serde_json::json!(vec![0.01; freqs]);
        }
    }
    let edited = dir.path().join("edited.stats.json");
    std::fs::write(&edited, v.to_string()).unwrap();
    let (plans, report) = custom_plans(&loaded, &empty, project.path(), &edited);
    assert_eq!(plans.len(), 4);
    let message = check_of(&report, "common", "member")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains(
            "extended statistics addr_kd are not written (the copy's server refused its values \
             (SQLSTATE 22P02)"
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "extended statistics addr_sk are not written (the file's list is not one row of \
             keys per frequency"
        ),
        "{message}"
    );
}

#[test]
fn the_statistics_of_extended_statistics_on_expressions_are_carried() {
    let loaded = empty_database("stats_check_expressions");
    let ddl = "CREATE TABLE acct (id int PRIMARY KEY, email text, plan text); \
               CREATE INDEX acct_email_idx ON acct (email); \
               CREATE STATISTICS acct_lower ON (lower(email)), plan FROM acct";
    if server_version_num(&loaded) < 140_000 {
        // PostgreSQL 13 keeps no statistics on expressions (it refuses the object, and takes
        // the same on the column alone): there is nothing to carry.
        assert!(try_sql(&loaded, ddl).is_err());
        sql(&loaded, &ddl.replace("(lower(email))", "email"));
        return;
    }
    sql(
        &loaded,
        &format!(
            "{ddl}; \
             INSERT INTO acct SELECT g, \
                    CASE WHEN g % 4 = 0 THEN 'Admin@Example.org' ELSE 'u' || g || '@x.org' END, \
                    CASE WHEN g % 4 = 0 THEN 'staff' ELSE 'p' || g % 3 END \
               FROM generate_series(1, 100000) g; \
             ANALYZE"
        ),
    );
    let empty = empty_database("stats_check_expressions_empty");
    sql(&empty, &format!("{ddl}; ANALYZE"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export(&loaded, &file);
    let expect = member("acct_email_idx");
    let project = read_paths(&[
        // A quarter of the rows: the expression's own most common value, where without its
        // statistics the planner takes 0.5 % of the table.
        (
            "lowered",
            "SELECT id FROM acct WHERE lower(email) = 'admin@example.org' AND email > 'A'",
            &expect,
        ),
        // The expression and a column together: the object's most common values over both.
        (
            "both",
            "SELECT id FROM acct WHERE lower(email) = 'admin@example.org' AND plan = 'staff' \
             AND email > 'A'",
            &expect,
        ),
    ]);
    let (plans, report) = custom_plans(&loaded, &empty, project.path(), &file);
    assert_eq!(plans.len(), 2);
    for (name, predicted, own) in &plans {
        let (x, y) = (predicted.root.plan_rows, own.root.plan_rows);
        assert!(
            (x - y).abs() <= 0.01 * x.max(y),
            "{name}: {x} rows predicted, {y} on the loaded database"
        );
    }
    let message = check_of(&report, "lowered", "member")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!message.contains("acct_lower"), "{message}");
}

#[test]
fn a_gin_index_is_priced_from_production_s_metapage() {
    let ddl = "CREATE TABLE docs (id int PRIMARY KEY, tags int[]); \
               CREATE INDEX docs_tags_idx ON docs USING gin (tags)";
    let loaded = empty_database("stats_check_gin");
    sql(
        &loaded,
        "CREATE EXTENSION IF NOT EXISTS pageinspect; \
         CREATE TABLE docs (id int PRIMARY KEY, tags int[]); \
         INSERT INTO docs SELECT g, ARRAY[g % 20] FROM generate_series(1, 200000) g; \
         CREATE INDEX docs_tags_idx ON docs USING gin (tags); ANALYZE",
    );
    let empty = empty_database("stats_check_gin_empty");
    sql(&empty, &format!("{ddl}; ANALYZE"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export(&loaded, &file);
    let f = plancheck::stats::read(&file).unwrap();
    let gin = f
        .relation("public", "docs")
        .unwrap()
        .indexes
        .iter()
        .find(|i| i.name == "docs_tags_idx");
    let gin = gin
        .and_then(|i| i.gin.as_ref())
        .expect("the GIN metapage was read");
    assert!(gin.total_pages > 10 && gin.entries == 20, "{gin:?}");
    // Twenty keys, each a posting tree: the entry tree is one page, where a guess from the
    // index's size alone would make it nine tenths of the index, and a search read two.
    let project = one_read_path(
        "SELECT id FROM docs WHERE tags @> ARRAY[7]",
        &member("docs_tags_idx"),
    );
    let (plans, report) = custom_plans(&loaded, &empty, project.path(), &file);
    let message = report["checks"][0]["message"].as_str().unwrap().to_string();
    assert!(!message.contains("GIN index"), "{message}");
    let (_, predicted, own) = &plans[0];
    let (x, y) = (predicted.root.total_cost, own.root.total_cost);
    // To the cent.
    let (sx, sy) = (
        predicted.nodes().last().unwrap().total_cost,
        own.nodes().last().unwrap().total_cost,
    );
    assert!(
        (x - y).abs() < 0.005 && (sx - sy).abs() < 0.005,
        "costs {x} (index scan {sx}) predicted, {y} ({sy}) on the loaded database"
    );
}
