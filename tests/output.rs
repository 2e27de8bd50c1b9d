//! Where the report goes, through the real binary and no database: `plancheck judge DIR` on a
//! run saved by hand from captured measurements. Colour only on a terminal and never under
//! `NO_COLOR`; `--report FORMAT=FILE` files written in the same run; a file that cannot be
//! written is exit 4; in GitHub Actions, annotations after the table and Markdown appended to the
//! job summary; `COLUMNS` sets the table's width.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

/// A saved run of two checks, from measurements captured on PostgreSQL 15: a pass, and a
/// moderator whose read path cannot use its partial index (`not-usable`).
fn saved_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans");
    let mut names = Vec::new();
    for (case, read_path, scope) in [
        ("pass/thread-page-member", "thread-page-first", "member"),
        (
            "not-usable/moderator-requires-partial",
            "thread-page-first",
            "moderator",
        ),
    ] {
        let text = fs::read_to_string(plans.join(case).join("pg15.measurement.json")).unwrap();
        let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
        m["read_path"] = read_path.into();
        m["scope"] = scope.into();
        let name = format!("{read_path}.{scope}.json");
        fs::write(dir.path().join(&name), m.to_string()).unwrap();
        names.push(name);
    }
    let run = serde_json::json!({
        "format": "plancheck-run",
        "version": plancheck::measure::VERSION,
        "server_version": "15.18",
        "checks": names,
    });
    fs::write(dir.path().join("run.json"), run.to_string()).unwrap();
    dir
}

/// `plancheck judge DIR …` with none of the environment that changes the output inherited.
fn judge(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("plancheck").unwrap();
    cmd.arg("judge").arg(dir).args(args);
    for var in [
        "NO_COLOR",
        "COLUMNS",
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "TERM",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

struct Out {
    status: i32,
    stdout: String,
    stderr: String,
}

fn run(mut cmd: impl std::borrow::BorrowMut<Command>) -> Out {
    let out = cmd.borrow_mut().output().unwrap();
    Out {
        status: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

#[test]
fn no_escape_codes_under_no_color_or_when_stdout_is_not_a_terminal() {
    let dir = saved_run();
    // stdout is a pipe here: `auto` gives no colour, with or without NO_COLOR.
    for env in [None, Some("1")] {
        let mut cmd = judge(dir.path(), &[]);
        if let Some(v) = env {
            cmd.env("NO_COLOR", v);
        }
        let out = run(&mut cmd);
        assert_eq!(out.status, 1, "{}", out.stderr);
        assert!(out.stdout.contains("not-usable"), "{}", out.stdout);
        assert!(
            !out.stdout.contains('\x1b'),
            "NO_COLOR={env:?}: {:?}",
            out.stdout
        );
        assert!(!out.stderr.contains('\x1b'), "{:?}", out.stderr);
    }
    // `--color never` under a forced terminal-free run: none either.
    let out = run(judge(dir.path(), &["--color", "never"]).env("NO_COLOR", "1"));
    assert!(!out.stdout.contains('\x1b'), "{:?}", out.stdout);
    // `--color always` is the user's word: it wins over NO_COLOR (no-color.org) and a pipe.
    let out = run(judge(dir.path(), &["--color", "always"]).env("NO_COLOR", "1"));
    assert!(
        out.stdout.contains("┆\x1b[38;5;2m pass "),
        "{:?}",
        out.stdout
    );
    assert!(
        out.stdout.contains("┆\x1b[38;5;1m not-usable "),
        "{:?}",
        out.stdout
    );
}

#[test]
fn report_files_are_written_in_the_same_run_as_stdout() {
    let dir = saved_run();
    let out_dir = tempfile::tempdir().unwrap();
    let junit = out_dir.path().join("out/plancheck.xml");
    let markdown = out_dir.path().join("out/summary.md");
    let out = run(judge(
        dir.path(),
        &[
            "--format",
            "json",
            "--report",
            &format!("junit={}", junit.display()),
            "--report",
            &format!("markdown={}", markdown.display()),
        ],
    ));
    // The run's own status: a check failed.
    assert_eq!(out.status, 1, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["failed"], 1);
    // The folders are made on the way.
    let xml = fs::read_to_string(&junit).unwrap();
    let parsed = roxmltree::Document::parse(&xml).unwrap();
    let cases = parsed
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .count();
    assert_eq!(cases, 2, "{xml}");
    assert_eq!(
        parsed
            .descendants()
            .filter(|n| n.has_tag_name("failure"))
            .count(),
        1,
        "{xml}"
    );
    let md = fs::read_to_string(&markdown).unwrap();
    assert!(
        md.contains("| Read path [scope] | Required index | Verdict (used instead) | Warm p50 |\n"),
        "{md}"
    );
    assert!(
        md.contains(
            "| thread-page-first [moderator] | `posts_thread_visible_idx` | **not-usable**"
        ),
        "{md}"
    );
}

#[test]
fn a_report_file_that_cannot_be_written_exits_4() {
    let dir = saved_run();
    let blocker = tempfile::NamedTempFile::new().unwrap();
    // A file where a folder should be.
    let path = blocker.path().join("plancheck.xml");
    let out = run(judge(
        dir.path(),
        &["--report", &format!("junit={}", path.display())],
    ));
    assert_eq!(out.status, 4, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("--report junit={}", path.display())),
        "{}",
        out.stderr
    );
    // stdout had the report first.
    assert!(out.stdout.contains("not-usable"), "{}", out.stdout);
    // A malformed --report is bad input, before anything runs.
    let out = run(judge(dir.path(), &["--report", "xml=out.xml"]));
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown format `xml`"),
        "{}",
        out.stderr
    );
}

#[test]
fn in_github_actions_the_table_is_followed_by_annotations_and_the_summary_is_appended() {
    let dir = saved_run();
    let summary = tempfile::NamedTempFile::new().unwrap();
    fs::write(summary.path(), "earlier step\n").unwrap();
    let out = run(judge(dir.path(), &[])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", summary.path()));
    assert_eq!(out.status, 1, "{}", out.stderr);
    let (table, annotations) = out
        .stdout
        .split_once("\n::error ")
        .unwrap_or_else(|| panic!("no annotation after the table:\n{}", out.stdout));
    assert!(table.contains("┆ not-usable "), "{table}");
    // `judge` has no project at hand: no file to point at.
    assert!(
        annotations.starts_with("title=plancheck%3A thread-page-first [moderator] not-usable::"),
        "{annotations}"
    );
    let md = fs::read_to_string(summary.path()).unwrap();
    assert!(md.starts_with("earlier step\n## plancheck\n"), "{md}");

    // An explicit format is printed alone.
    let out = run(judge(dir.path(), &["--format", "json"]).env("GITHUB_ACTIONS", "true"));
    assert!(!out.stdout.contains("::error"), "{}", out.stdout);
    serde_json::from_str::<serde_json::Value>(&out.stdout).unwrap();
    // Outside GitHub Actions, the table alone.
    let out = run(judge(dir.path(), &[]));
    assert!(!out.stdout.contains("::error"), "{}", out.stdout);
}

#[test]
fn the_table_takes_the_width_columns_gives_it() {
    let dir = saved_run();
    let widest = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
            .map(|l| l.chars().count())
            .max()
            .unwrap()
    };
    for width in [100usize, 120, 200] {
        let out = run(judge(dir.path(), &[]).env("COLUMNS", width.to_string()));
        assert!(
            widest(&out.stdout) <= width,
            "{} at {width}:\n{}",
            widest(&out.stdout),
            out.stdout
        );
        if width >= 120 {
            assert!(
                out.stdout.contains("┆ warm p50 ┆ buffers ┆"),
                "{}",
                out.stdout
            );
        }
    }
    // Narrower than any table of these names: a line per check (its name and result), the
    // required index indented under a failure, no name broken, no line of the run wider than
    // asked.
    let out = run(judge(dir.path(), &[]).env("COLUMNS", "60"));
    assert!(
        out.stdout.starts_with(
            "read path [scope]              result\n    required index\n\
             thread-page-first [moderator]  not-usable\n    posts_thread_visible_idx\n\
             thread-page-first [member]     pass\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "\n    used instead: Index Only Scan using posts_thread_all_idx\n                  on posts\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .lines()
            .chain(out.stderr.lines())
            .all(|l| l.chars().count() <= 60),
        "{}{}",
        out.stdout,
        out.stderr
    );
    // Not a terminal, no COLUMNS: 120.
    let out = run(judge(dir.path(), &[]));
    let plain = run(judge(dir.path(), &[]).env("COLUMNS", "120"));
    assert_eq!(out.stdout, plain.stdout);
}

#[test]
fn a_saved_plan_that_is_no_plan_is_refused_whole_never_dropped() {
    // Every document of a measurement is read as a plan when the file is loaded: a re-plan that
    // is no plan stops `judge` (exit 2, naming the file), where it was once left out unseen and
    // the check judged without it.
    let dir = saved_run();
    let path = dir.path().join("thread-page-first.moderator.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let probes = m["outcome"]["measured"]["probes"].as_array_mut().unwrap();
    assert!(!probes.is_empty(), "the case has re-plans to break");
    probes[0]["document"] = serde_json::json!([{ "Planned": "nothing" }]);
    fs::write(&path, m.to_string()).unwrap();
    let out = run(judge(dir.path(), &[]));
    assert_eq!(out.status, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("thread-page-first.moderator.json")
            && out
                .stderr
                .contains("unreadable EXPLAIN output: no \"Plan\" key"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "nothing judged: {}", out.stdout);
}
