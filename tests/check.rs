//! The binary against a real PostgreSQL holding the reference board: exit statuses and
//! verdicts, the mutations each check exists to catch, and the safety of the read-only run.

mod common;

use std::fs;

use common::*;

/// The checks that did not pass, sorted.
fn failing(verdicts: &[(String, String, String)]) -> Vec<(&str, &str, &str)> {
    let mut out: Vec<(&str, &str, &str)> = verdicts
        .iter()
        .filter(|(_, _, v)| v != "pass")
        .map(|(r, s, v)| (r.as_str(), s.as_str(), v.as_str()))
        .collect();
    out.sort();
    out
}

#[test]
fn every_expectation_passes_on_the_intact_board() {
    let db = fresh_board("intact");
    let (status, report) = check_json(&db, &reference_project(), &[]);
    let all = verdicts(&report);
    let not_passing = failing(&all);
    assert!(
        not_passing.is_empty(),
        "not passing: {not_passing:?}\n{report:#}"
    );
    assert_eq!(all.len(), REFERENCE_CHECKS);
    assert_eq!(status, 0);
    assert_eq!(report["summary"]["passed"], REFERENCE_CHECKS);
    // Every check measured something.
    for c in report["checks"].as_array().unwrap() {
        assert_eq!(c["notes"], serde_json::json!([]), "{c:#}");
        assert!(c["warm_ms"]["p50"].as_f64().is_some(), "{c:#}");
        assert!(c["shared_buffers"].as_f64().unwrap() > 0.0, "{c:#}");
    }
}

#[test]
fn dropping_posts_thread_visible_idx_fails_the_member_thread_checks_only() {
    let db = fresh_board("no_thread_visible");
    sql(&db, "DROP INDEX posts_thread_visible_idx");
    let (status, report) = check_json(&db, &reference_project(), &[]);
    assert_eq!(status, 1, "{report:#}");
    // Every check ran, and exactly the two member thread pages found the index missing: a loop
    // over fewer checks (or none) would pass without saying so.
    let all = verdicts(&report);
    assert_eq!(all.len(), REFERENCE_CHECKS, "{report:#}");
    assert_eq!(
        failing(&all),
        [
            ("thread-page-deep", "member", "missing-index"),
            ("thread-page-first", "member", "missing-index"),
        ],
        "{report:#}"
    );
    for (read_path, scope, verdict) in &all {
        let is_member_thread = read_path.starts_with("thread-page") && scope == "member";
        if is_member_thread {
            assert_eq!(verdict, "missing-index", "{read_path} [{scope}]");
        } else {
            assert_eq!(verdict, "pass", "{read_path} [{scope}] should be untouched");
        }
    }
    assert_eq!(
        verdict_of(&report, "thread-page-first", "moderator"),
        "pass"
    );
}

#[test]
fn dropping_threads_forum_listing_all_idx_fails_only_the_moderator_forum_listing() {
    let db = fresh_board("no_listing_twin");
    sql(&db, "DROP INDEX threads_forum_listing_all_idx");
    let (status, report) = check_json(&db, &reference_project(), &[]);
    assert_eq!(status, 1, "{report:#}");
    let all = verdicts(&report);
    assert_eq!(all.len(), REFERENCE_CHECKS, "{report:#}");
    assert_eq!(
        failing(&all),
        [
            ("forum-page-deep", "moderator", "missing-index"),
            ("forum-page-first", "moderator", "missing-index"),
        ],
        "{report:#}"
    );
    for (read_path, scope, verdict) in all {
        if read_path.starts_with("forum-page") && scope == "moderator" {
            assert_eq!(verdict, "missing-index", "{read_path} [{scope}]");
        } else {
            assert_eq!(verdict, "pass", "{read_path} [{scope}] should be untouched");
        }
    }
}

#[test]
fn moderator_listing_without_its_twin_cannot_use_the_partial_index() {
    // Regression guard for the case the tool exists for: the moderator's forum listing without
    // its twin is a scan of the whole threads table, and the member's partial index cannot
    // serve it whatever the data: the moderator's query does not imply its predicate.
    let db = fresh_board("moderator_without_twin");
    sql(&db, "DROP INDEX threads_forum_listing_all_idx");
    let dir = one_read_path(
        "SELECT t.id FROM threads t WHERE t.forum_id = 2 ORDER BY t.sticky DESC, \
         t.last_post_at DESC, t.id DESC LIMIT 20",
        "[scopes.moderator]\nindex = \"threads_forum_listing_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(verdict_of(&report, "path", "moderator"), "not-usable");
    let used = report["checks"][0]["used"].to_string();
    assert!(!used.contains("threads_forum_listing_idx"), "{used}");
    assert!(used.contains("Seq Scan on threads"), "{used}");
}

#[test]
fn visibility_literal_turned_into_a_parameter_is_generic_plan() {
    let db = fresh_board("generic");
    let plan = "SELECT p.id, p.created_at FROM posts p\n\
                WHERE p.thread_id = $1 AND p.visibility = $2\n\
                ORDER BY p.created_at, p.id LIMIT 20\n";
    let dir = one_read_path(
        plan,
        "params = [1, \"visible\"]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1, "{report:#}");
    assert_eq!(verdict_of(&report, "path", "member"), "generic-plan");
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(message.contains("generic plan"), "{message}");

    // The same read path with the literal passes: the verdict is about the parameter.
    let dir = one_read_path(
        &plan.replace("$2", "'visible'"),
        "params = [1]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(verdict_of(&report, "path", "member"), "pass", "{report:#}");
    assert_eq!(status, 0);
}

#[test]
fn seq_scan_beside_the_required_index_fails_unless_allowed() {
    let db = fresh_board("seqscan");
    let plan = "SELECT p.id, (SELECT count(*) FROM forums) AS forums FROM posts p\n\
                WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
                ORDER BY p.created_at, p.id LIMIT 20\n";
    let dir = one_read_path(plan, &member("posts_thread_visible_idx"));
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(
        verdict_of(&report, "path", "member"),
        "seq-scan",
        "{report:#}"
    );
    assert_eq!(
        report["checks"][0]["seq_scans"],
        serde_json::json!(["forums"])
    );
    assert_eq!(status, 1);

    let dir = one_read_path(
        plan,
        "allow_seq_scan = [\"forums\"]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(verdict_of(&report, "path", "member"), "pass", "{report:#}");
    assert_eq!(status, 0);
}

#[test]
fn member_requiring_the_twin_is_not_chosen_and_names_the_partial_index_used() {
    let db = fresh_board("notchosen");
    let dir = one_read_path(
        "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "[scopes.member]\nindex = \"posts_thread_all_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(verdict_of(&report, "path", "member"), "not-chosen");
    let used = report["checks"][0]["used"].to_string();
    assert!(used.contains("posts_thread_visible_idx"), "{used}");
}

#[test]
fn a_write_in_a_read_path_is_an_error_and_persists_nothing() {
    let db = fresh_board("writes");
    let before = query_text(&db, "SELECT count(*) FROM posts");
    let dir = one_read_path(
        "WITH gone AS (DELETE FROM posts WHERE thread_id = 1 RETURNING id)\n\
         SELECT count(*) FROM gone",
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(verdict_of(&report, "path", "member"), "error", "{report:#}");
    assert_eq!(status, 1);
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(message.contains("read-only"), "{message}");
    assert_eq!(query_text(&db, "SELECT count(*) FROM posts"), before);

    // Two statements cannot smuggle a COMMIT past the read-only transaction: the plan file is
    // refused before anything runs (exit 2), naming where the second statement starts.
    let dir = one_read_path(
        "SELECT 1; COMMIT; DELETE FROM posts WHERE thread_id = 1",
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let out = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = out.stderr.as_str();
    assert_eq!(out.status, Some(2), "{stderr}");
    assert!(stderr.contains("plans/path.sql:1:11:"), "{stderr}");
    assert!(stderr.contains("one statement"), "{stderr}");
    assert_eq!(query_text(&db, "SELECT count(*) FROM posts"), before);

    // Nothing is left behind in the session or the server: no prepared statement of ours.
    assert_eq!(
        query_text(&db, "SELECT count(*) FROM pg_prepared_xacts"),
        "0"
    );
}

#[test]
fn an_sql_error_names_the_plan_file_line_and_column() {
    let db = fresh_board("sqlerror");
    let dir = one_read_path(
        "SELECT p.id\nFROM posts p\nWHERE p.thred_id = 1",
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(verdict_of(&report, "path", "member"), "error");
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(message.contains("plans/path.sql:3:7:"), "{message}");
    assert!(message.contains("thred_id"), "{message}");
    // The place travels as data too: JSON's `at`, and GitHub's annotation on the SQL line (not
    // on the expectation's scope table).
    let at = &report["checks"][0]["at"];
    assert!(
        at["path"].as_str().unwrap().ends_with("plans/path.sql"),
        "{at}"
    );
    assert_eq!(
        (at["line"].as_u64(), at["column"].as_u64()),
        (Some(3), Some(7))
    );
    let github = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--format",
        "github",
    ]);
    let line = github
        .stdout
        .lines()
        .find(|l| l.starts_with("::error "))
        .unwrap_or_else(|| panic!("{}", github.stdout));
    assert!(
        line.contains("plans/path.sql,line=3,col=7,title=plancheck%3A path [member] error::"),
        "{line}"
    );
}

#[test]
fn a_parameter_the_server_cannot_convert_is_an_error() {
    let db = fresh_board("badparam");
    let dir = one_read_path(
        "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = 'visible'\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "params = [\"not a number\"]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(verdict_of(&report, "path", "member"), "error", "{report:#}");
    // Located where the value is written: line 1 of the expectation.
    let at = &report["checks"][0]["at"];
    assert!(
        at["path"]
            .as_str()
            .unwrap()
            .ends_with("expectations/path.toml"),
        "{report:#}"
    );
    assert_eq!(at["line"].as_u64(), Some(1), "{report:#}");
}

#[test]
fn missing_index_exits_1_and_says_so() {
    let db = fresh_board("missing");
    let dir = one_read_path("SELECT 1", "[scopes.member]\nindex = \"no_such_idx\"\n");
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(verdict_of(&report, "path", "member"), "missing-index");
}

#[test]
fn unreachable_database_exits_3_naming_host_and_port() {
    let dir = one_read_path("SELECT 1", "[scopes.member]\nindex = \"x\"\n");
    let out = run(&[
        "check",
        "--database-url",
        "postgresql://someone:s3cret@127.0.0.1:1/db",
        "--project",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status, Some(3));
    let stderr = out.stderr.as_str();
    assert!(stderr.contains("127.0.0.1:1"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "SELECT 1",
            "[scopes.member]\nindx = \"x\"\n",
            "expectations/path.toml:2:1",
        ),
        (
            "SELECT {{nope}}",
            "[scopes.member]\nindex = \"x\"\n",
            "plans/path.sql:1:8",
        ),
        (
            "SELECT $1",
            "[scopes.member]\nindex = \"x\"\n",
            "uses 1 parameter",
        ),
        (
            "SELECT 1",
            "params = [1]\n[scopes.member]\nindex = \"x\"\n",
            "gives 1 value",
        ),
        (
            "SELECT 1",
            "plan = \"../etc\"\n[scopes.member]\nindex = \"x\"\n",
            "not a path",
        ),
        (
            "SELECT 1",
            "plan = \"other\"\n[scopes.member]\nindex = \"x\"\n",
            "does not exist",
        ),
        ("SELECT 1", "[scopes.member\n", "expectations/path.toml:1"),
        ("SELECT 1", "", "declares no scope"),
        ("", "[scopes.member]\nindex = \"x\"\n", "empty"),
    ];
    for (plan, expectation, wanted) in cases {
        let dir = one_read_path(plan, expectation);
        let out = run(&[
            "check",
            "--database-url",
            "host=/nonexistent",
            "--project",
            dir.path().to_str().unwrap(),
        ]);
        let stderr = out.stderr.as_str();
        assert_eq!(out.status, Some(2), "{expectation:?}: {stderr}");
        assert!(
            stderr.contains(wanted),
            "{expectation:?}: wanted {wanted:?} in {stderr}"
        );
    }
    // No database given at all: libpq's defaults, then a clear failure to connect when nothing
    // listens there.
    let dir = one_read_path("SELECT 1", "[scopes.member]\nindex = \"x\"\n");
    let out = run_command(
        plancheck(&["check", "--project", dir.path().to_str().unwrap()])
            .env("PGHOST", "127.0.0.1")
            .env("PGPORT", "1"),
    );
    assert_eq!(out.status, Some(3), "{}", out.shown());
    assert!(out.stderr.contains("127.0.0.1:1"), "{}", out.shown());
    // An unknown scope or read path on the command line.
    for flag in ["--scope", "--only"] {
        let out = run(&[
            "check",
            "--database-url",
            "host=/nonexistent",
            "--project",
            dir.path().to_str().unwrap(),
            flag,
            "nobody",
        ]);
        assert_eq!(out.status, Some(2), "{flag}: {}", out.shown());
    }
}

#[test]
fn only_and_scope_narrow_the_run() {
    let db = fresh_board("narrow");
    let (status, report) = check_json(
        &db,
        &reference_project(),
        &["--only", "thread-page-first", "--scope", "moderator"],
    );
    assert_eq!(status, 0);
    assert_eq!(
        verdicts(&report),
        vec![(
            "thread-page-first".to_string(),
            "moderator".to_string(),
            "pass".to_string()
        )]
    );
}

#[test]
fn json_report_shape_is_stable() {
    let db = fresh_board("snapshot");
    let (_, report) = check_json(&db, &reference_project(), &["--only", "thread-page-first"]);
    insta::assert_json_snapshot!(report, {
        ".server_version" => "[version]",
        ".checks[].warm_ms" => "[ms]",
        ".checks[].p50_ms" => "[ms]",
        ".checks[].p95_ms" => "[ms]",
        ".checks[].p99_ms" => "[ms]",
        ".checks[].client_p50_ms" => "[ms]",
        ".checks[].client_p95_ms" => "[ms]",
        ".checks[].client_p99_ms" => "[ms]",
        ".checks[].planning_ms" => "[ms]",
        ".checks[].shared_buffers" => "[buffers]",
        ".checks[].budget_used" => "[used]",
    });
}

/// Besides the server's execution time of the EXPLAIN runs, a check times the plain statement
/// as the client sees it: as many runs, each at least what the read path makes the server wait,
/// with or without parameters.
#[test]
fn the_plain_statements_round_trip_is_timed_as_many_times() {
    let db = fresh_board("round_trip");
    let sleepy = |param: &str| {
        format!(
            "SELECT p.id FROM posts p\n\
             WHERE p.thread_id = {param} AND p.visibility = 'visible'\n\
               AND (SELECT count(*) FROM pg_sleep(0.02)) = 1\n\
             ORDER BY p.created_at, p.id LIMIT 20"
        )
    };
    let with_param = format!("params = [1]\n{}", member("posts_thread_visible_idx"));
    let dir = read_paths(&[
        ("plain", &sleepy("1"), &member("posts_thread_visible_idx")),
        ("bound", &sleepy("$1"), &with_param),
    ]);
    let out = check(&db, dir.path(), &["--iterations", "3", "--warmup", "1"]);
    let (status, report) = (out.code(), out.report());
    assert_eq!(status, 0, "{report:#}");
    for name in ["plain", "bound"] {
        let c = check_of(&report, name, "member");
        assert_eq!(c["runs"], 3, "{c:#}");
        for key in ["client_p50_ms", "client_p95_ms", "client_p99_ms"] {
            let ms = c[key].as_f64().unwrap_or_else(|| panic!("no {key}: {c:#}"));
            assert!(
                ms >= 20.0,
                "{key} {ms} is under the 20 ms the server sleeps: {c:#}"
            );
        }
        assert!(c["p50_ms"].as_f64().unwrap() >= 20.0, "{c:#}");
    }
}

/// A migration run saves the checks before it under before/ as they finish, and `judge` reads
/// the run back into the same report, before and after side by side.
#[test]
fn a_saved_migration_run_is_judged_the_same_with_no_database() {
    let db = fresh_board("saveplans_migration");
    let out_dir = tempfile::tempdir().unwrap();
    let migration = temp_file("drop.sql", "DROP INDEX posts_thread_visible_idx;\n");
    let (status, report) = check_json(
        &db,
        &reference_project(),
        &[
            "--only",
            "thread-page-first",
            "--migration",
            migration.arg(),
            "--save-plans",
            out_dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(status, 1, "{report:#}");
    let member = check_of(&report, "thread-page-first", "member");
    assert_eq!(member["verdict"], "missing-index", "{member:#}");
    assert_eq!(member["before"]["verdict"], "pass", "{member:#}");
    // The migration dropped it: its file and line, not a typo's "did you mean".
    let message = member["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "index posts_thread_visible_idx does not exist after the migration: {}:1 dropped it \
             (`DROP INDEX posts_thread_visible_idx;`)",
            migration.arg()
        )),
        "{message}"
    );
    assert!(!message.contains("did you mean"), "{message}");
    assert_eq!(member["changed_by"]["line"], 1, "{member:#}");
    assert_eq!(report["migration_index_changes"][0]["change"], "dropped");
    assert_eq!(
        file_names(&out_dir.path().join("before")),
        [
            "thread-page-first.member.json",
            "thread-page-first.moderator.json"
        ]
    );
    assert_judged_the_same(out_dir.path(), &report, 1);
}

/// A migration that renames one required index and redefines another names the statement that
/// did it, as the catalog read between its statements shows; a statement that touches neither is
/// never blamed.
#[test]
fn a_migration_names_the_statement_that_renamed_or_redefined_a_required_index() {
    let db = fresh_board("migration_blame");
    let migration = temp_file(
        "0007_reindex.sql",
        "CREATE INDEX posts_created_idx ON posts (created_at);\n\
         ALTER INDEX posts_thread_visible_idx RENAME TO posts_thread_visible_old;\n\
         DO $$BEGIN\n\
           DROP INDEX posts_thread_all_idx;\n\
           CREATE INDEX posts_thread_all_idx ON posts (author_id) WHERE visibility = 'deleted';\n\
         END$$;\n",
    );
    let (status, report) = check_json(
        &db,
        &reference_project(),
        &[
            "--only",
            "thread-page-first",
            "--migration",
            migration.arg(),
        ],
    );
    assert_eq!(status, 1, "{report:#}");
    let changes = report["migration_index_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{report:#}");
    assert_eq!(changes[0]["index"], "posts_thread_visible_idx");
    assert_eq!(changes[0]["line"], 2);
    assert_eq!(changes[0]["change"], "renamed");
    assert_eq!(changes[0]["to"], "posts_thread_visible_old");
    assert_eq!(changes[1]["index"], "posts_thread_all_idx");
    assert_eq!(changes[1]["line"], 3);
    assert_eq!(changes[1]["statement"], "DO $$BEGIN");
    assert_eq!(changes[1]["change"], "redefined");
    assert!(
        changes[1]["definition"]
            .as_str()
            .unwrap()
            .contains("(author_id) WHERE (visibility = 'deleted'::text)"),
        "{report:#}"
    );
    let member = check_of(&report, "thread-page-first", "member");
    assert_eq!(member["verdict"], "missing-index", "{member:#}");
    assert!(
        member["message"]
            .as_str()
            .unwrap()
            .contains(":2 renamed it to posts_thread_visible_old"),
        "{member:#}"
    );
    let moderator = check_of(&report, "thread-page-first", "moderator");
    assert_ne!(moderator["verdict"], "pass", "{moderator:#}");
    assert_eq!(moderator["changed_by"]["line"], 3, "{moderator:#}");
    assert!(
        moderator["message"]
            .as_str()
            .unwrap()
            .contains("The migration changed posts_thread_all_idx: "),
        "{moderator:#}"
    );
    // The table's short form names the statement, and the fix is there.
    let out = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--only",
        "thread-page-first",
        "--migration",
        migration.arg(),
        "--iterations",
        "1",
        "--warmup",
        "0",
    ])
    .env("COLUMNS", "200")
    .output()
    .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!(
            "    fix: the statement at {}:3 changes posts_thread_all_idx",
            migration.arg()
        )),
        "{table}"
    );
}

#[test]
fn saved_plans_are_the_measurements_with_the_explain_documents() {
    let db = fresh_board("saveplans");
    let out_dir = tempfile::tempdir().unwrap();
    let (status, _) = check_json(
        &db,
        &reference_project(),
        &[
            "--only",
            "thread-page-first",
            "--save-plans",
            out_dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(status, 0);
    for scope in ["member", "moderator"] {
        let path = out_dir
            .path()
            .join(format!("thread-page-first.{scope}.json"));
        let text = fs::read_to_string(&path).unwrap();
        let m: plancheck::measure::Measurement = serde_json::from_str(&text).unwrap();
        assert_eq!(m.version, plancheck::measure::VERSION);
        let plancheck::measure::Outcome::Measured(measured) = m.outcome else {
            panic!("{scope}: not measured: {text}")
        };
        // The custom plan of every measured run (check_json asks for two), and the generic plan.
        assert_eq!(measured.custom.len(), 2, "{scope}");
        for doc in measured.custom.iter().chain(measured.generic.iter()) {
            assert!(!doc.plan().scans().is_empty());
        }
        assert!(measured.generic.is_some(), "{scope}");
    }
    let run = fs::read_to_string(out_dir.path().join("run.json")).unwrap();
    assert!(run.contains("\"thread-page-first.member.json\""), "{run}");
    // Exactly the files of the checks that ran, and the run's own.
    assert_eq!(
        file_names(out_dir.path()),
        [
            "run.json",
            "thread-page-first.member.json",
            "thread-page-first.moderator.json"
        ]
    );
}

#[test]
fn table_report_shape_is_stable() {
    let db = fresh_board("tablesnapshot");
    let out = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--only",
        "thread-page-first",
        "--only",
        "moderation-queue",
        "--warmup",
        "0",
        "--iterations",
        "1",
    ]);
    assert_eq!(out.status, Some(0));
    let text = out.stdout;
    let text = regex::Regex::new(r"\d+\.\d+ ms")
        .unwrap()
        .replace_all(&text, "[ms]");
    let text = regex::Regex::new(r"┆ [\d,]+ +┆")
        .unwrap()
        .replace_all(&text, "┆ [buffers] ┆");
    let text = regex::Regex::new(r"\d+% of")
        .unwrap()
        .replace_all(&text, "[%] of");
    let text = regex::Regex::new(r"[\d.]+× of")
        .unwrap()
        .replace_all(&text, "[×] of");
    // Column widths follow the redacted figures' lengths, which differ between machines and
    // versions: collapse padding and rules so only the shape is pinned.
    let text = regex::Regex::new(r" {2,}").unwrap().replace_all(&text, " ");
    let text = regex::Regex::new(r"─+").unwrap().replace_all(&text, "─");
    let text = regex::Regex::new(r"═+").unwrap().replace_all(&text, "═");
    let text = regex::Regex::new(r"on PostgreSQL [^:]+:")
        .unwrap()
        .replace_all(&text, "on PostgreSQL [version]:");
    insta::assert_snapshot!(text);
}

#[test]
fn setup_that_ends_the_transaction_or_makes_it_read_write_is_refused_and_nothing_persists() {
    let db = fresh_board("setupescape");
    let before = query_text(&db, "SELECT count(*) FROM posts");
    let writer = "WITH gone AS (DELETE FROM posts WHERE thread_id = 1 RETURNING id)\n\
                  SELECT count(*) FROM gone";
    // What the vetting can read is refused before anything runs: exit 2, at the setup's line.
    for setup in [
        "[\"COMMIT\"]",
        "[\"SET TRANSACTION READ WRITE\"]",
        "[\"SET ROLE plancheck; COMMIT\"]",
        "[\"SET LOCAL transaction_read_only = off\"]",
    ] {
        let dir = one_read_path(
            writer,
            &format!("[scopes.member]\nindex = \"posts_thread_visible_idx\"\nsetup = {setup}\n"),
        );
        let out = run(&[
            "check",
            "--database-url",
            &db,
            "--project",
            dir.path().to_str().unwrap(),
        ]);
        let stderr = out.stderr.as_str();
        assert_eq!(out.status, Some(2), "{setup}: {stderr}");
        assert!(
            stderr.contains("expectations/path.toml:3:"),
            "{setup}: {stderr}"
        );
        assert_eq!(
            query_text(&db, "SELECT count(*) FROM posts"),
            before,
            "{setup}"
        );
    }
    // What only the server can see fails safe: a computed setting name cannot make the
    // transaction read-write (PostgreSQL refuses once the first query ran), and the check is an
    // error.
    let dir = one_read_path(
        writer,
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n\
         setup = [\"SELECT set_config('transaction_read' || '_only', 'off', true)\"]\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(verdict_of(&report, "path", "member"), "error", "{report:#}");
    assert_eq!(status, 1);
    assert_eq!(query_text(&db, "SELECT count(*) FROM posts"), before);
}

#[test]
fn a_widened_member_predicate_is_not_usable_and_shows_the_index_predicate() {
    let db = fresh_board("notusable");
    let dir = one_read_path(
        "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND p.visibility <> 'deleted'\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(
        verdict_of(&report, "path", "member"),
        "not-usable",
        "{report:#}"
    );
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(message.contains("visibility = 'visible'"), "{message}");
    assert!(
        message.contains("Filter: (p.visibility <> 'deleted'::text)"),
        "{message}"
    );
    assert!(message.contains("widened predicate"), "{message}");
    assert_eq!(report["checks"][0]["usable"], false);
    // Not usable is a code regression: --require usable still fails it.
    let (status, _) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_eq!(status, 1);

    // --explain ends the table with the failing plan as a tree.
    let out = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--explain",
    ]);
    let stdout = out.stdout.as_str();
    assert!(
        stdout.contains("path [member] not-usable, custom plan:\nLimit"),
        "{stdout}"
    );
    assert!(
        stdout.contains("└─ Index Scan using posts_thread_all_idx on posts p"),
        "{stdout}"
    );
    assert!(
        stdout.contains("      Filter: (p.visibility <> 'deleted'::text)"),
        "{stdout}"
    );
}

#[test]
fn a_visibility_taken_from_current_setting_is_not_usable() {
    let db = fresh_board("currentsetting");
    let dir = one_read_path(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = current_setting('app.visibility')\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n\
         setup = [\"SELECT set_config('app.visibility', 'visible', true)\"]\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(
        verdict_of(&report, "path", "member"),
        "not-usable",
        "{report:#}"
    );
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("current_setting() is not IMMUTABLE")
            && message.contains("computed at run time"),
        "{message}"
    );
}

#[test]
fn an_index_on_a_tiny_table_is_not_chosen_with_both_costs_and_warns_under_require_usable() {
    let db = fresh_board("tinytable");
    let dir = one_read_path(
        "SELECT f.id, f.name FROM forums f WHERE f.id = 2",
        "[scopes.member]\nindex = \"forums_pkey\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(
        verdict_of(&report, "path", "member"),
        "not-chosen",
        "{report:#}"
    );
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("the chosen plan costs")
            && message.contains("a plan using forums_pkey costs"),
        "{message}"
    );
    assert_eq!(report["checks"][0]["usable"], true);

    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["checks"][0]["warning"], true);
    assert_eq!(report["summary"]["warnings"], 1);
    assert_eq!(report["summary"]["failed"], 0);
}

#[test]
fn a_generic_plan_that_cannot_use_the_index_fails_even_under_require_usable() {
    let db = fresh_board("genericusable");
    let dir = one_read_path(
        "SELECT p.id FROM posts p WHERE p.thread_id = $1 AND p.visibility = $2\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "params = [1, \"visible\"]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    assert_eq!(
        verdict_of(&report, "path", "member"),
        "generic-plan",
        "{report:#}"
    );
    assert_eq!(report["checks"][0]["usable"], false);
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(message.contains("Filter: (p.visibility = $2)"), "{message}");
    assert!(
        message.contains("only match a partial index against constants"),
        "{message}"
    );
    assert_eq!(status, 1);
}

#[test]
fn a_deep_page_written_with_offset_is_over_budget_against_its_first_page() {
    let db = fresh_board("offsetpage");
    let page = "SELECT p.id, p.created_at, p.body FROM posts p\n\
                WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
                ORDER BY p.created_at, p.id\n";
    let index = member("posts_thread_visible_idx");
    let dir = read_paths(&[
        ("first", &format!("{page}LIMIT 20"), &index),
        (
            "offset",
            &format!("{page}LIMIT 20 OFFSET 500"),
            &format!("relative = {{ to = \"first\", max_ratio = 2 }}\n{index}"),
        ),
    ]);
    // --only offset still runs `first`: the ratio needs both sides.
    let (status, report) = check_json(&db, dir.path(), &["--only", "offset"]);
    assert_eq!(status, 1, "{report:#}");
    assert_eq!(verdict_of(&report, "first", "member"), "pass");
    assert_eq!(verdict_of(&report, "offset", "member"), "over-budget");
    let offset = check_of(&report, "offset", "member");
    let message = offset["message"].as_str().unwrap();
    assert!(
        message.contains("those of first [member]") && message.contains("over the limit of 2×"),
        "{message}"
    );
    assert!(
        offset["budget_used"]["ratio"].as_f64().unwrap() > 2.0,
        "{offset:#}"
    );

    // An absolute buffer budget the first page meets and a tiny one it does not.
    fs::write(
        dir.path().join("expectations/first.toml"),
        "budget = { buffers = 1 }\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    )
    .unwrap();
    let (status, report) = check_json(&db, dir.path(), &["--only", "first"]);
    assert_eq!(status, 1);
    assert_eq!(
        verdict_of(&report, "first", "member"),
        "over-budget",
        "{report:#}"
    );
    fs::write(
        dir.path().join("expectations/first.toml"),
        "budget = { buffers = 100000, warm_ms = 10000 }\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    )
    .unwrap();
    let (status, report) = check_json(&db, dir.path(), &["--only", "first"]);
    assert_eq!(verdict_of(&report, "first", "member"), "pass", "{report:#}");
    assert_eq!(status, 0);
}

#[test]
fn a_relative_budget_naming_no_read_path_is_bad_input() {
    let dir = one_read_path(
        "SELECT 1",
        "relative = { to = \"nowhere\", max_ratio = 2 }\n[scopes.member]\nindex = \"x\"\n",
    );
    let out = run(&[
        "check",
        "--database-url",
        "host=/nonexistent",
        "--project",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = out.stderr.as_str();
    assert_eq!(out.status, Some(2), "{stderr}");
    assert!(
        stderr.contains("expectations/path.toml:1:12: relative budget: no read path `nowhere`"),
        "{stderr}"
    );
}

#[test]
fn lint_is_clean_on_the_intact_board() {
    let db = fresh_board("lintclean");
    let out = run(&[
        "lint",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
    ]);
    let stdout = out.stdout.as_str();
    assert_eq!(out.status, Some(0), "{stdout}");
    assert!(stdout.starts_with("no twin drift"), "{stdout}");
}

#[test]
fn a_twin_whose_key_order_drifted_is_reported_by_lint_and_fails_check() {
    let db = fresh_board("lintdrift");
    sql(
        &db,
        "DROP INDEX posts_thread_all_idx; \
         CREATE INDEX posts_thread_all_idx ON posts (created_at, thread_id, id)",
    );
    let out = run(&[
        "lint",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
    ]);
    let stdout = out.stdout.as_str();
    assert_eq!(out.status, Some(1), "{stdout}");
    assert!(
        stdout.contains("posts_thread_visible_idx and its twin posts_thread_all_idx drifted: key columns in a different order: (thread_id, created_at, id) and (created_at, thread_id, id)"),
        "{stdout}"
    );
    // Both definitions, one under the other.
    assert!(
        stdout.contains("CREATE INDEX posts_thread_visible_idx ON public.posts"),
        "{stdout}"
    );
    assert!(stdout.contains("CREATE INDEX posts_thread_all_idx ON public.posts USING btree (created_at, thread_id, id)"), "{stdout}");
    // Regression: said once per read path that requires the pair; now once, naming both.
    assert_eq!(stdout.matches(" drifted: ").count(), 1, "{stdout}");
    assert!(
        stdout.starts_with(
            "thread-page-deep, thread-page-first: posts_thread_visible_idx and its twin \
             posts_thread_all_idx drifted: "
        ),
        "{stdout}"
    );
    let out = run(&[
        "lint",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{doc:#}");
    assert_eq!(findings[0]["read_path"], "thread-page-deep", "{doc:#}");
    assert_eq!(
        findings[0]["read_paths"],
        serde_json::json!(["thread-page-deep", "thread-page-first"]),
        "{doc:#}"
    );
    // check sees it once too, with every read path.
    let (status, report) = check_json(&db, &reference_project(), &[]);
    assert_eq!(status, 1, "{report:#}");
    assert_eq!(report["lint"].as_array().unwrap().len(), 1, "{report:#}");
    assert_eq!(report["summary"]["index_problems"], 1, "{report:#}");

    // check runs the same lint and fails on it.
    let (status, report) = check_json(&db, &reference_project(), &["--only", "thread-page-first"]);
    assert_eq!(status, 1, "{report:#}");
    assert_eq!(report["lint"][0]["kind"], "twin-drift", "{report:#}");
}

#[test]
fn an_invalid_index_is_reported_by_lint() {
    let db = fresh_board("lintinvalid");
    sql(
        &db,
        "UPDATE pg_index SET indisvalid = false \
         WHERE indexrelid = 'threads_forum_listing_all_idx'::regclass",
    );
    let out = run(&[
        "lint",
        "--database-url",
        &db,
        "--project",
        reference_project().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.status, Some(1));
    let findings: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let problems = findings["findings"].to_string();
    assert!(
        problems.contains("threads_forum_listing_all_idx is not valid"),
        "{problems}"
    );
}

#[test]
fn a_relation_never_analysed_is_noted_and_an_analysed_one_is_not() {
    let db = fresh_board("neveranalysed");
    sql(
        &db,
        "CREATE TABLE scratch (id int, v text) WITH (autovacuum_enabled = false); \
         INSERT INTO scratch SELECT g, 'x' FROM generate_series(1, 20000) g; \
         CREATE INDEX scratch_id ON scratch (id)",
    );
    let dir = one_read_path(
        "SELECT v FROM scratch WHERE id = 7",
        "[scopes.member]\nindex = \"scratch_id\"\n",
    );
    let (_, report) = check_json(&db, dir.path(), &[]);
    let notes = report["checks"][0]["notes"].to_string();
    assert!(
        notes.contains("scratch has never been analysed"),
        "{report:#}"
    );

    sql(&db, "ANALYZE scratch");
    let (_, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(
        report["checks"][0]["notes"],
        serde_json::json!([]),
        "{report:#}"
    );
}

/// A partitioned variant of posts: the partial index and its twin created on the parent, but
/// the middle partition lacks its leaf of the partial index.
const PARTITIONED_POSTS: &str = "\
    CREATE TABLE posts_part (LIKE posts INCLUDING DEFAULTS) PARTITION BY RANGE (created_at); \
    CREATE TABLE posts_part_old PARTITION OF posts_part FOR VALUES FROM ('2000-01-01') TO ('2020-01-01'); \
    CREATE TABLE posts_part_mid PARTITION OF posts_part FOR VALUES FROM ('2020-01-01') TO ('2024-01-01'); \
    CREATE TABLE posts_part_new PARTITION OF posts_part FOR VALUES FROM ('2024-01-01') TO ('2100-01-01'); \
    INSERT INTO posts_part SELECT * FROM posts; \
    CREATE INDEX posts_part_thread_all_idx ON posts_part (thread_id, created_at, id); \
    CREATE INDEX posts_part_thread_visible_idx ON ONLY posts_part (thread_id, created_at, id) \
        WHERE visibility = 'visible'; \
    CREATE INDEX posts_part_old_visible ON posts_part_old (thread_id, created_at, id) \
        WHERE visibility = 'visible'; \
    CREATE INDEX posts_part_new_visible ON posts_part_new (thread_id, created_at, id) \
        WHERE visibility = 'visible'; \
    ALTER INDEX posts_part_thread_visible_idx ATTACH PARTITION posts_part_old_visible; \
    ALTER INDEX posts_part_thread_visible_idx ATTACH PARTITION posts_part_new_visible";

#[test]
fn a_partitioned_index_passes_through_its_leaves_and_names_a_partition_without_one() {
    let db = fresh_board("partitioned");
    sql(&db, PARTITIONED_POSTS);
    // Analysed after the load's transaction, so the rows it wrote count as analysed.
    sql(&db, "ANALYZE posts_part");
    let member = "[scopes.member]\nindex = \"posts_part_thread_visible_idx\"\n";

    // Pruned to the newest partition, which has its leaf: a pass.
    let dir = one_read_path(
        "SELECT p.id, p.body FROM posts_part p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible' AND p.created_at > '2024-06-01'\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        member,
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(verdict_of(&report, "path", "member"), "pass", "{report:#}");
    // The parent index is not valid while a partition lacks its leaf: lint says so, and that
    // alone fails the run.
    assert_eq!(report["lint"][0]["kind"], "invalid", "{report:#}");
    assert_eq!(status, 1);

    // The whole thread reaches the middle partition, which has no leaf: named.
    let dir = one_read_path(
        "SELECT p.id, p.body FROM posts_part p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        member,
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    let verdict = verdict_of(&report, "path", "member");
    assert!(
        verdict == "seq-scan" || verdict == "not-chosen",
        "{report:#}"
    );
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("partition posts_part_mid has no leaf of posts_part_thread_visible_idx"),
        "{message}"
    );
    assert_eq!(status, 1);

    // The twin has a leaf on every partition: the moderator's whole thread passes.
    let dir = one_read_path(
        "SELECT p.id, p.body FROM posts_part p WHERE p.thread_id = 1\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "[scopes.moderator]\nindex = \"posts_part_thread_all_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(
        verdict_of(&report, "path", "moderator"),
        "pass",
        "{report:#}"
    );
    assert_eq!(status, 0);
}

#[test]
fn row_level_security_scopes_member_policy_and_moderator_policy() {
    let db = fresh_board("rls");
    sql(
        &db,
        "DO $$ BEGIN \
           CREATE ROLE board_member; CREATE ROLE board_moderator; CREATE ROLE board_guest; \
         EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
         GRANT SELECT ON posts, members, threads, forums \
           TO board_member, board_moderator, board_guest; \
         ALTER TABLE posts ENABLE ROW LEVEL SECURITY; \
         CREATE POLICY member_sees_visible ON posts FOR SELECT TO board_member \
           USING (visibility = 'visible'); \
         CREATE POLICY moderator_sees_all ON posts FOR SELECT TO board_moderator USING (true); \
         CREATE POLICY guest_by_setting ON posts FOR SELECT TO board_guest \
           USING (visibility = current_setting('board.visibility'))",
    );
    // The read path filters nothing itself: the policy does.
    let plan = "SELECT p.id, p.body FROM posts p WHERE p.thread_id = 1\n\
                ORDER BY p.created_at, p.id LIMIT 20";
    let dir = one_read_path(
        plan,
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n\
         setup = [\"SET LOCAL ROLE board_member\"]\n\
         [scopes.moderator]\nindex = \"posts_thread_all_idx\"\n\
         setup = [\"SET LOCAL ROLE board_moderator\"]\n\
         [scopes.guest]\nindex = \"posts_thread_visible_idx\"\n\
         setup = [\"SELECT set_config('board.visibility', 'visible', true)\", \
                  \"SET LOCAL ROLE board_guest\"]\n",
    );
    let (_, report) = check_json(&db, dir.path(), &[]);
    // A policy `USING (visibility = 'visible')` is a qual like any other: the planner proves
    // the partial index's predicate from it, and the member's page uses the partial index.
    assert_eq!(verdict_of(&report, "path", "member"), "pass", "{report:#}");
    assert_eq!(
        verdict_of(&report, "path", "moderator"),
        "pass",
        "{report:#}"
    );
    // A policy comparing with current_setting() proves nothing: the planner needs a constant.
    assert_eq!(
        verdict_of(&report, "path", "guest"),
        "not-usable",
        "{report:#}"
    );
    let guest = check_of(&report, "path", "guest");
    assert!(
        guest["message"]
            .as_str()
            .unwrap()
            .contains("current_setting"),
        "{guest:#}"
    );
}

#[test]
fn a_visibility_from_a_stable_function_is_not_usable_and_the_function_is_named() {
    let db = fresh_board("stablefn");
    sql(
        &db,
        "CREATE FUNCTION current_visibility() RETURNS text STABLE LANGUAGE plpgsql \
         AS $$ BEGIN RETURN 'visible'; END $$",
    );
    let dir = one_read_path(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = current_visibility()\n\
         ORDER BY p.created_at, p.id LIMIT 20",
        "[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(status, 1);
    assert_eq!(
        verdict_of(&report, "path", "member"),
        "not-usable",
        "{report:#}"
    );
    let message = report["checks"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("current_visibility() is not IMMUTABLE"),
        "{message}"
    );
}

#[test]
fn fail_fast_starts_no_check_after_the_first_failure_and_counts_the_rest_not_run() {
    let db = fresh_board("failfast");
    let pass = "SELECT p.id FROM posts p WHERE p.thread_id = 1 AND p.visibility = 'visible'\n\
                ORDER BY p.created_at, p.id LIMIT 20";
    let good = member("posts_thread_visible_idx");
    let dir = read_paths(&[
        ("a-missing", "SELECT 1", &member("no_such_idx")),
        ("b-fine", pass, &good),
        ("c-fine", pass, &good),
    ]);
    // Without --fail-fast every check runs.
    let (status, report) = check_json(&db, dir.path(), &["--jobs", "1"]);
    assert_eq!(status, 1);
    assert_eq!(verdicts(&report).len(), 3, "{report:#}");
    assert!(report["summary"].get("not_run").is_none(), "{report:#}");
    // With it, the first failure is the last check started.
    let (status, report) = check_json(&db, dir.path(), &["--jobs", "1", "--fail-fast"]);
    assert_eq!(status, 1, "{report:#}");
    let all = verdicts(&report);
    assert_eq!(
        all,
        [(
            "a-missing".to_string(),
            "member".to_string(),
            "missing-index".to_string()
        )],
        "{report:#}"
    );
    assert_eq!(report["summary"]["not_run"], 2, "{report:#}");
    // The table says so on its last line.
    let table = run(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--jobs",
        "1",
        "--fail-fast",
        "--iterations",
        "1",
        "--warmup",
        "0",
    ]);
    assert_eq!(table.status, Some(1));
    assert!(
        table
            .stdout
            .trim_end()
            .ends_with("0 passed, 1 failed, 0 errors, 2 not run"),
        "{}",
        table.stdout
    );
    // A run that passes is not cut short.
    let dir = read_paths(&[("b-fine", pass, &good), ("c-fine", pass, &good)]);
    let (status, report) = check_json(&db, dir.path(), &["--fail-fast"]);
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(verdicts(&report).len(), 2);
}

#[test]
fn a_seq_scan_of_a_relation_small_by_the_catalog_is_a_warning_under_require_usable() {
    // A small CI database: the required partial index on the large side, and a 20-row table
    // joined to it that no index serves (the planner reads it whole, as it should at 20 rows).
    let db = empty_database("smallci");
    sql(
        &db,
        "CREATE TABLE users (id int, name text);
         INSERT INTO users SELECT i, 'u' || i FROM generate_series(1, 20) i;
         CREATE TABLE items (id int PRIMARY KEY, user_id int, deleted boolean NOT NULL);
         INSERT INTO items SELECT i, i % 20 + 1, i % 10 = 0 FROM generate_series(1, 50000) i;
         CREATE INDEX items_live_user ON items (user_id) WHERE NOT deleted;
         ANALYZE users; ANALYZE items;",
    );
    let dir = one_read_path(
        "SELECT i.id, u.name FROM items i JOIN users u ON u.id = i.user_id\n\
         WHERE i.user_id = 7 AND NOT i.deleted",
        &member("items_live_user"),
    );
    // --require chosen: a seq scan fails, and the message says how to allow it.
    let (status, report) = check_json(&db, dir.path(), &[]);
    let c = check_of(&report, "path", "member");
    assert_eq!(c["verdict"], "seq-scan", "{c:#}");
    assert_eq!(status, 1);
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains("allow_seq_scan = [\"users\"]") && message.contains("under --large-rows"),
        "{message}"
    );
    // --require usable: a warning, and the run passes.
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    let c = check_of(&report, "path", "member");
    assert_eq!(
        (c["verdict"].as_str(), c["warning"].as_bool()),
        (Some("seq-scan"), Some(true)),
        "{c:#}"
    );
    assert_eq!(status, 0, "{report:#}");
    // The same 20 rows are large for --large-rows 10: no --require forgives that.
    let (status, report) = check_json(
        &db,
        dir.path(),
        &["--require", "usable", "--large-rows", "10"],
    );
    let c = check_of(&report, "path", "member");
    assert_eq!(c["warning"], false, "{c:#}");
    assert_eq!(status, 1, "{report:#}");
    // A relation never analysed has no estimate, but one page of it holds 291 rows at most:
    // small by its size on disk, a warning under --require usable; under --require chosen the
    // seq scan is the planner's guess, neither a pass nor a failure (no-statistics, exit 5).
    sql(
        &db,
        "CREATE TABLE fresh_users (id int, name text);
         INSERT INTO fresh_users SELECT i, 'u' || i FROM generate_series(1, 20) i;",
    );
    let dir = one_read_path(
        "SELECT i.id, u.name FROM items i JOIN fresh_users u ON u.id = i.user_id\n\
         WHERE i.user_id = 7 AND NOT i.deleted",
        &member("items_live_user"),
    );
    let (status, report) = check_json(&db, dir.path(), &["--require", "usable"]);
    let c = check_of(&report, "path", "member");
    assert_eq!(
        (c["verdict"].as_str(), c["warning"].as_bool()),
        (Some("seq-scan"), Some(true)),
        "{c:#}"
    );
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("or, for fresh_users (8,192 bytes), by its size on disk"),
        "{c:#}"
    );
    assert_eq!(status, 0, "{report:#}");
    let (status, report) = check_json(&db, dir.path(), &[]);
    let c = check_of(&report, "path", "member");
    assert_eq!(c["verdict"], "no-statistics", "{c:#}");
    assert_eq!(c["at_guesses"], "seq-scan", "{c:#}");
    assert_eq!(status, 5, "{report:#}");
}

#[test]
fn at_columns_80_no_line_of_a_failing_run_is_wider_than_80() {
    // Regression: `why:`/`fix:` lines and the summary line went past the terminal's width; an
    // error's message filled a table cell, and its snippet's SQL line went past it under `why:`;
    // the role's rights were two long lines on stderr.
    let db = fresh_board("columns80");
    sql(
        &db,
        "DROP INDEX posts_thread_visible_idx; DROP INDEX threads_forum_listing_all_idx",
    );
    // The member's profile with a type error on a line of 150 columns.
    let dir = copy_of_reference();
    let long_line = format!(
        "  FROM members m WHERE m.id = $1 AND m.name IS NOT NULL AND m.joined_at IS NOT NULL \
         AND {} AND 'x'::no_such_type IS NOT NULL",
        "m.id > 0 AND m.id < 1000000000"
    );
    assert!(long_line.len() > 140, "{}", long_line.len());
    fs::write(
        dir.path().join("plans/member-profile.sql"),
        format!("SELECT m.id, m.name\n{long_line}\n"),
    )
    .unwrap();
    let out = run_command(
        plancheck(&[
            "check",
            "--database-url",
            &db,
            "--project",
            dir.path().to_str().unwrap(),
            "--warmup",
            "0",
            "--iterations",
            "1",
        ])
        .env("COLUMNS", "80"),
    );
    assert_eq!(out.code(), 1, "{}", out.shown());
    // Every check ran and the four that lost their index failed, each explained under `why:`,
    // with the error.
    assert!(
        out.stdout
            .contains(&format!("{REFERENCE_CHECKS} checks on PostgreSQL")),
        "{}",
        out.shown()
    );
    let why = out.stdout.split("\nwhy:\n").nth(1).unwrap_or_default();
    assert_eq!(
        why.matches(" missing-index: ").count(),
        4,
        "{}",
        out.shown()
    );
    assert!(why.contains("\n    fix: "), "{}", out.shown());
    // The error under `why:` with its source line cut to a window around the caret, which
    // stays under the unknown type's name; not in the table.
    assert!(
        why.contains(&format!(
            "  member-profile [member] error: {}/plans/member-profile.sql:2:",
            dir.path().display()
        )),
        "{}",
        out.shown()
    );
    let lines: Vec<&str> = why.lines().collect();
    let caret = lines
        .iter()
        .position(|l| l.trim_start().starts_with("| ") && l.ends_with('^'))
        .unwrap_or_else(|| panic!("no caret under why:\n{}", out.shown()));
    let source = lines[caret - 1];
    assert!(source.starts_with("    2 | …"), "{}", out.shown());
    let column = lines[caret].chars().count() - 1;
    assert_eq!(
        source.chars().skip(column).take(12).collect::<String>(),
        "no_such_type",
        "{}",
        out.shown()
    );
    // The checks (a list: `missing-index` beside threads_forum_listing_all_idx is wider than a
    // table at 80 allows), a line each, what failed first; the error's text is not among them.
    let list = out.stdout.split("\n\n").next().unwrap();
    assert!(!list.contains("no_such_type"), "{}", out.shown());
    let results: Vec<&str> = list
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with(' '))
        .map(|l| {
            l.split("  ")
                .filter(|c| !c.is_empty())
                .nth(1)
                .unwrap_or_default()
                .trim()
        })
        .collect();
    assert_eq!(results.len(), REFERENCE_CHECKS, "{}", out.shown());
    // The failures and the error by name (the forum pages, the profile, the thread pages),
    // then the passes.
    assert_eq!(
        results,
        [
            ["missing-index"; 2].as_slice(),
            &["error"],
            &["missing-index"; 2],
            &["pass"; 10]
        ]
        .concat(),
        "{}",
        out.shown()
    );
    // The role's rights (the test's server is connected to as a superuser): one warning.
    assert_eq!(
        out.stderr.matches("warning: role ").count(),
        1,
        "{}",
        out.shown()
    );
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "{stream}: {} columns: {line:?}\n{}",
                line.chars().count(),
                out.shown()
            );
        }
    }
}
