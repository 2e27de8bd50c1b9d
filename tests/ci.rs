//! plancheck in a CI job, against a real PostgreSQL: `check` writes the JUnit file beside the
//! table, and in GitHub Actions its annotations point at the line of the failing scope's
//! `[scopes.NAME]` table in the expectation file, and the job summary gets the Markdown.

mod common;

use std::fs;

use common::*;

/// A thread page whose member scope passes and whose moderator scope requires an index the
/// board does not have (`missing-index`), its table on line 7.
const EXPECTATION: &str = "# the thread page: the partial index for a member
params = [1]

[scopes.member]
index = \"posts_thread_visible_idx\"

[scopes.moderator]
index = \"posts_thread_moderated_idx\"
";

const PLAN: &str = "SELECT p.id, p.created_at FROM posts p
WHERE p.thread_id = $1 AND {{post_visibility}}
ORDER BY p.created_at, p.id
LIMIT 20
";

const SCOPES: &str = "[scopes.member]
fragments = { post_visibility = \"p.visibility = 'visible'\" }

[scopes.moderator]
fragments = { post_visibility = \"true\" }
";

#[test]
fn a_ci_run_writes_junit_and_annotates_the_failing_scope_of_the_expectation() {
    let db = fresh_board("ci_annotations");
    let dir = project(&[
        ("plans/thread-page.sql", PLAN),
        ("expectations/thread-page.toml", EXPECTATION),
        ("plancheck.toml", SCOPES),
    ]);
    let out_dir = tempfile::tempdir().unwrap();
    let junit = out_dir.path().join("reports/plancheck.xml");
    let summary = out_dir.path().join("summary.md");
    let mut cmd = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--warmup",
        "0",
        "--iterations",
        "1",
        "--report",
        &format!("junit={}", junit.display()),
    ]);
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS");
    let out = run_command(&mut cmd);
    assert_eq!(out.code(), 1, "{}", out.shown());

    // The table, then the annotation on the moderator's table, line 7 of the expectation.
    let expectation = dir.path().join("expectations/thread-page.toml");
    let annotation = format!(
        "\n::error file={},line=7,title=plancheck%3A thread-page [moderator] missing-index::",
        expectation.display()
    );
    assert!(out.stdout.contains(&annotation), "{}", out.shown());
    assert!(out.stdout.contains("┆ missing-index "), "{}", out.shown());
    assert_eq!(
        out.stdout.matches("\n::error ").count(),
        1,
        "{}",
        out.shown()
    );

    // The JUnit file: the member passed, the moderator failed.
    let xml = fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            (
                n.attribute("classname").unwrap().to_string(),
                n.attribute("name").unwrap().to_string(),
                n.children().any(|c| c.has_tag_name("failure")),
            )
        })
        .collect();
    assert_eq!(
        cases,
        [
            (
                "thread-page".to_string(),
                "thread-page [member]".to_string(),
                false
            ),
            (
                "thread-page".to_string(),
                "thread-page [moderator]".to_string(),
                true
            ),
        ],
        "{xml}"
    );
    // Each testcase's time, file and line; the run's timestamp.
    let moderator = doc
        .descendants()
        .find(|n| n.attribute("name") == Some("thread-page [moderator]"))
        .unwrap();
    assert_eq!(
        moderator.attribute("file"),
        Some(expectation.display().to_string().as_str()),
        "{xml}"
    );
    assert_eq!(moderator.attribute("line"), Some("7"), "{xml}");
    assert!(
        moderator
            .attribute("time")
            .is_some_and(|t| t.parse::<f64>().is_ok_and(|t| t > 0.0)),
        "{xml}"
    );
    assert!(doc.root_element().attribute("timestamp").is_some(), "{xml}");

    // The job summary: the evidence table.
    let md = fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("| thread-page [member] | `posts_thread_visible_idx` | pass |"),
        "{md}"
    );
    assert!(
        md.contains("| thread-page [moderator] | `posts_thread_moderated_idx` | **missing-index**"),
        "{md}"
    );
}
