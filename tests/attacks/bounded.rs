//! Memory bounds on what plancheck reads: one EXPLAIN document (a constant folded into the plan
//! and printed by VERBOSE makes one of any size) and one logged statement for `capture`. Each
//! attack is paired with the same input under the cap, so that the verdict turns on the size
//! alone.

use std::fs;

use crate::common::*;

/// The thread page with a constant of `size` bytes folded into its Filter.
fn page_with_constant(size: usize) -> String {
    format!(
        "SELECT p.id FROM posts p\n\
         WHERE p.thread_id = 1 AND p.visibility = 'visible' AND p.body <> repeat('a', {size})"
    )
}

/// The verdict and message of the only check of a run.
fn the_check(run: &Run) -> (String, String) {
    let report = run.report();
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), 1, "{}", run.shown());
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    (text(&checks[0]["verdict"]), text(&checks[0]["message"]))
}

#[test]
fn an_explain_document_over_the_cap_is_an_error_that_names_the_cap_and_the_size() {
    let db = fresh_board("bounded_plan_document");
    let expectation = member("posts_thread_visible_idx");

    let small = one_read_path(&page_with_constant(1000), &expectation);
    let run = check(&db, small.path(), &[]);
    assert_eq!(the_check(&run).0, "pass", "{}", run.shown());

    // 8.7 MB of constant: the document is over 8 MiB, its row under the 9 MiB plancheck takes
    // of one message, so it is read and refused by its size.
    let over = one_read_path(&page_with_constant(8_700_000), &expectation);
    let run = check(&db, over.path(), &[]);
    let (verdict, message) = the_check(&run);
    assert_eq!(verdict, "error", "{}", run.shown());
    assert!(
        message.contains("over plancheck's cap of 8 MiB on one plan document"),
        "{message}"
    );
    let size = regex::Regex::new(r"\((\d+) bytes\)").unwrap();
    let bytes: usize = size
        .captures(&message)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or_else(|| panic!("the message names the size: {message}"));
    assert!(bytes > 8_700_000, "{message}");
    assert_eq!(run.code(), 1, "{}", run.shown());
    assert!(
        run.stdout.len() < 100_000,
        "the document is not in the report: {} bytes of stdout",
        run.stdout.len()
    );

    // 40 MB of constant: the row is over the 9 MiB plancheck takes of one message from the
    // server, refused from its length before it is read; the session is over (exit 3).
    let huge = one_read_path(&page_with_constant(40_000_000), &expectation);
    let run = check(&db, huge.path(), &[]);
    let (verdict, message) = the_check(&run);
    assert_eq!(verdict, "error", "{}", run.shown());
    assert!(
        message.contains("over plancheck's cap of 9 MiB on one message from the server"),
        "{message}"
    );
    let size = regex::Regex::new(r"a row \('D'\) of ([\d,]+) bytes").unwrap();
    let bytes: usize = size
        .captures(&message)
        .and_then(|c| c[1].replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("the message names the length: {message}"));
    assert!(bytes > 40_000_000, "{message}");
    assert_eq!(run.code(), 3, "{}", run.shown());
    assert!(
        run.stdout.len() < 100_000,
        "the document is not in the report: {} bytes of stdout",
        run.stdout.len()
    );
}

/// A csvlog record of a statement.
fn csv_statement(session: &str, sql: &str) -> String {
    format!(
        "2026-12-01 03:13:04.505 UTC,\"app\",\"board\",25558,\"[local]\",{session},1,\"idle\",\
         2026-12-01 03:13:04 UTC,3/2,0,LOG,00000,\"statement: {}\",,,,,,,,,\"my app\",\
         \"client backend\",,0\n",
        sql.replace('"', "\"\"")
    )
}

#[test]
fn capture_leaves_out_a_statement_over_the_cap_and_says_so() {
    let db = fresh_board("bounded_capture");
    let page = "SELECT p.id FROM posts p WHERE p.thread_id = 7 AND p.visibility = 'visible' \
                ORDER BY p.created_at, p.id LIMIT 20";
    let huge = format!(
        "SELECT p.id FROM posts p WHERE p.thread_id = 8 AND p.body <> '{}'",
        "a".repeat(3 << 20)
    );
    let log = temp_file(
        "postgresql.csv",
        &format!(
            "{}{}{}",
            csv_statement("s.1", page),
            csv_statement("s.2", &huge),
            csv_statement("s.3", page)
        ),
    );
    let project = tempfile::tempdir().unwrap();
    let run = run(&[
        "capture",
        "--log",
        log.arg(),
        "--database-url",
        &db,
        "--project",
        project.path().to_str().unwrap(),
    ]);
    assert_eq!(run.code(), 0, "{}", run.shown());
    assert!(
        run.stderr
            .contains("left out 1 logged statement over 1 MiB"),
        "{}",
        run.shown()
    );
    assert!(run.stdout.contains("read 2 statements"), "{}", run.shown());
    let plans: Vec<_> = fs::read_dir(project.path().join("plans"))
        .unwrap()
        .flatten()
        .map(|e| fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert!(plans[0].contains("thread_id = 7"), "{}", plans[0]);
}
