//! The corpus of malformed projects in `tests/bad_input/`: each folder `NN-name/` is a project
//! (`plans/`, `expectations/`, maybe `plancheck.toml`) and an `expect.toml` saying what the real
//! binary must do with it. `tests/bad_input/README.md` lists the cases and describes
//! `expect.toml`.
//!
//! Bad input exits 2 before any connection (`--database-url host=/nonexistent`), naming the file,
//! line and column with the line shown; what only the server can judge (and what must work)
//! runs against a fresh copy of the reference board. Nothing may panic.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// What a case must produce.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// The exit status.
    status: i32,
    /// Substrings stderr must hold (for a verdict case: stderr and the checks' messages).
    #[serde(default)]
    message: Vec<String>,
    /// Arguments added to `check --project DIR --database-url URL`.
    #[serde(default)]
    args: Vec<String>,
    /// The verdict every check must get: the case runs against a fresh reference board.
    verdict: Option<String>,
    /// SQL run on that fresh board before the check.
    sql: Option<String>,
    /// The most stderr may hold, in bytes.
    max_stderr: Option<usize>,
    /// A known bug, not fixed yet: the case is run and reported, and fails the test only once
    /// it passes (then remove `pending`).
    pending: Option<String>,
    /// Files written into the case's copy when the test runs (too big to keep in git).
    #[serde(default)]
    write: Vec<Write>,
    /// Symbolic links made in the case's copy when the test runs.
    #[serde(default)]
    symlink: Vec<Symlink>,
}

/// `prefix`, then `repeat` `times` times, then `suffix`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Write {
    path: String,
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    repeat: String,
    #[serde(default)]
    times: usize,
    #[serde(default)]
    suffix: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Symlink {
    path: String,
    target: String,
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input")
}

/// Every case folder, sorted, with its expectations.
fn cases() -> Vec<(String, PathBuf, Expect)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(corpus()).expect("tests/bad_input/") {
        let entry = entry.unwrap();
        if !entry.path().is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let text = fs::read_to_string(entry.path().join("expect.toml"))
            .unwrap_or_else(|e| panic!("{name}/expect.toml: {e}"));
        let expect: Expect =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{name}/expect.toml: {e}"));
        out.push((name, entry.path(), expect));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The case's project in a temporary folder, with its generated files.
fn prepare(dir: &Path, expect: &Expect) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_dir(dir, tmp.path());
    fs::remove_file(tmp.path().join("expect.toml")).unwrap();
    for w in &expect.write {
        let mut text = String::with_capacity(w.prefix.len() + w.repeat.len() * w.times);
        text.push_str(&w.prefix);
        for _ in 0..w.times {
            text.push_str(&w.repeat);
        }
        text.push_str(&w.suffix);
        // Git keeps no empty folders: make the generated file's folder here.
        let path = tmp.path().join(&w.path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    for l in &expect.symlink {
        let path = tmp.path().join(&l.path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&l.target, path).unwrap();
    }
    tmp
}

/// Runs `check` on a case (killed after [`common::HANG`]); returns (status, stdout, stderr, how
/// long it took).
fn run(project: &Path, url: &str, args: &[String]) -> (Option<i32>, String, String, Duration) {
    let mut all = vec![
        "check",
        "--project",
        project.to_str().unwrap(),
        "--database-url",
        url,
    ];
    all.extend(args.iter().map(String::as_str));
    let run = common::run(&all);
    (run.status, run.stdout, run.stderr, run.took)
}

/// What is wrong with a run, against what its case expects.
fn problems(
    expect: &Expect,
    status: Option<i32>,
    stderr: &str,
    messages: &str,
    took: Duration,
) -> Vec<String> {
    let mut out = Vec::new();
    if status != Some(expect.status) {
        out.push(format!(
            "exit status {status:?} (after {took:?}), wanted {}",
            expect.status
        ));
    }
    if stderr.contains("panicked") {
        out.push("a panic".into());
    }
    for wanted in &expect.message {
        if !stderr.contains(wanted.as_str()) && !messages.contains(wanted.as_str()) {
            out.push(format!("no {wanted:?}"));
        }
    }
    if let Some(max) = expect.max_stderr
        && stderr.len() > max
    {
        out.push(format!("{} bytes of stderr, more than {max}", stderr.len()));
    }
    out
}

fn report(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn bad_input_exits_2_naming_file_line_and_column() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for (name, dir, expect) in cases().into_iter().filter(|c| c.2.verdict.is_none()) {
        let project = prepare(&dir, &expect);
        let (status, stdout, stderr, took) = run(project.path(), "host=/nonexistent", &expect.args);
        let mut found = problems(&expect, status, &stderr, "", took);
        if !stdout.is_empty() {
            found.push(format!("stdout is not empty: {stdout}"));
        }
        match (&expect.pending, found.is_empty()) {
            (Some(why), true) => {
                failures.push(format!("{name}: passes now: remove its `pending` ({why})"))
            }
            (Some(why), false) => eprintln!("{name}: pending ({why}): {}", found.join("; ")),
            (None, true) => {}
            (None, false) => {
                failures.push(format!("{name}: {}\nstderr:\n{stderr}", found.join("; ")))
            }
        }
        ran += 1;
    }
    assert!(ran >= 30, "only {ran} bad-input cases");
    report(&failures);
}

#[test]
fn what_only_the_server_can_judge_gets_its_verdict() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for (name, dir, expect) in cases().into_iter().filter(|c| c.2.verdict.is_some()) {
        ran += 1;
        let wanted = expect.verdict.as_deref().unwrap();
        let project = prepare(&dir, &expect);
        let db = common::fresh_board(&format!("bad_input_{}", &name[..2]));
        if let Some(sql) = &expect.sql {
            common::sql(&db, sql);
        }
        let mut args = expect.args.clone();
        args.extend(["--format", "json", "--warmup", "0", "--iterations", "1"].map(String::from));
        let (status, stdout, stderr, took) = run(project.path(), &db, &args);
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_default();
        let checks = report["checks"].as_array().cloned().unwrap_or_default();
        let messages: Vec<&str> = checks
            .iter()
            .filter_map(|c| c["message"].as_str())
            .collect();
        let mut found = problems(&expect, status, &stderr, &messages.join("\n"), took);
        if checks.is_empty() {
            found.push("no checks in the report".into());
        }
        for c in &checks {
            if c["verdict"] != wanted {
                found.push(format!(
                    "{} [{}] is {}, wanted {wanted}",
                    c["read_path"], c["scope"], c["verdict"]
                ));
            }
        }
        match (&expect.pending, found.is_empty()) {
            (Some(why), true) => {
                failures.push(format!("{name}: passes now: remove its `pending` ({why})"))
            }
            (Some(why), false) => {
                eprintln!("{name}: pending ({why}): {}", found.join("; "));
            }
            (None, true) => {}
            (None, false) => failures.push(format!(
                "{name}: {}\nstderr:\n{stderr}\nmessages:\n{}",
                found.join("; "),
                messages.join("\n")
            )),
        }
    }
    // A filter that matched nothing (a renamed field) would pass with nothing run.
    assert!(ran >= 10, "only {ran} cases judged by the server");
    report(&failures);
}

#[test]
fn the_readme_lists_every_case() {
    let readme = fs::read_to_string(corpus().join("README.md")).expect("tests/bad_input/README.md");
    let names: Vec<String> = cases().into_iter().map(|c| c.0).collect();
    assert!(names.len() >= 40, "only {} cases", names.len());
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(missing.is_empty(), "not in README.md: {missing:?}");
}
