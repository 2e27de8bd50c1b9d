//! Links, devices and FIFOs committed into a project: a baseline or a plan file that is a link
//! to a password file or to `/proc/self/cmdline`, a link where `--save-plans`, `--report`,
//! `accept` or `capture` write, a plan that is a link to `/dev/zero` or a FIFO. What a run reads
//! is a regular file of the project, never through a link; what it writes replaces a link
//! instead of writing through it; nothing it could not parse is ever printed.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use super::*;

/// The password of the fake password file the links point at.
const SECRET: &str = "s3cret-pw-9f1";

/// A password file in libpq's `.pgpass` form, outside any project.
const PGPASS_LINE: &str = "localhost:5432:*:u:s3cret-pw-9f1\n";

/// What the files outside the project hold before a run; a run must leave them so.
const OUTSIDE_BYTES: &str = "# a file outside the project, not plancheck's\n[scopes.member]\n\
                             index = \"outside\"\n";

/// A run that must refuse what it read is over within this (a FIFO or /dev/zero must not hang).
const PROMPT: Duration = Duration::from_secs(20);

/// The address space a run reading `/dev/zero` may take before the kernel refuses it more:
/// far more than a run needs, far less than the machine has.
const MEMORY_LIMIT: libc::rlim_t = 2 << 30;

/// A folder outside every project: the fake password file, a file and a folder an attacker's
/// link points at.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("pgpass"), PGPASS_LINE).unwrap();
        fs::write(dir.path().join("victim.toml"), OUTSIDE_BYTES).unwrap();
        fs::write(dir.path().join("victim-2.toml"), OUTSIDE_BYTES).unwrap();
        fs::create_dir(dir.path().join("folder")).unwrap();
        Outside { dir }
    }

    fn secret(&self) -> PathBuf {
        self.dir.path().join("pgpass")
    }

    fn victim(&self) -> PathBuf {
        self.dir.path().join("victim.toml")
    }

    fn victim_2(&self) -> PathBuf {
        self.dir.path().join("victim-2.toml")
    }

    fn folder(&self) -> PathBuf {
        self.dir.path().join("folder")
    }

    /// The outside files are as they were and the outside folder is empty.
    fn assert_untouched(&self, run: &Run) {
        for victim in [self.victim(), self.victim_2()] {
            assert_eq!(
                fs::read_to_string(&victim).unwrap(),
                OUTSIDE_BYTES,
                "{} was written through a link\n{}",
                victim.display(),
                run.shown()
            );
        }
        assert_eq!(fs::read_to_string(self.secret()).unwrap(), PGPASS_LINE);
        assert!(
            file_names(&self.folder()).is_empty(),
            "written into the folder outside: {:?}\n{}",
            file_names(&self.folder()),
            run.shown()
        );
    }
}

/// The harmless read path's project, with `files` added.
fn page_project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let exp = expectation(true, "");
    let mut all = vec![("plans/x.sql", PAGE), ("expectations/x.toml", exp.as_str())];
    all.extend_from_slice(files);
    project(&all)
}

/// `--report FORMAT=FILE` for every format, into `dir`.
fn every_report(dir: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for (format, name) in [
        ("table", "report.txt"),
        ("json", "report.json"),
        ("junit", "report.xml"),
        ("markdown", "report.md"),
        ("github", "report.github"),
    ] {
        args.push("--report".to_string());
        args.push(format!("{format}={}", dir.join(name).display()));
    }
    args
}

/// `needle` is nowhere in what the run printed or in any file under `reports`.
fn assert_not_shown(needle: &str, run: &Run, reports: &Path) {
    assert!(!run.stdout.contains(needle), "on stdout\n{}", run.shown());
    assert!(!run.stderr.contains(needle), "on stderr\n{}", run.shown());
    for file in files_under(reports) {
        let text = String::from_utf8_lossy(&fs::read(&file).unwrap()).into_owned();
        assert!(
            !text.contains(needle),
            "in {}:\n{text}\n{}",
            file.display(),
            run.shown()
        );
    }
}

/// `check` with a report in every format into `reports`.
fn check_reporting(db: &str, dir: &Path, reports: &Path) -> Run {
    let args = every_report(reports);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    check(db, dir, &args)
}

/// [`crate::common::run_bounded`] with this file's bounds.
fn run_bounded(args: &[&str]) -> (Run, u64) {
    crate::common::run_bounded(args, MEMORY_LIMIT, PROMPT)
}

/// Asserts that a run of [`run_bounded`] was refused promptly, holding little memory, saying
/// which file.
fn assert_refused_promptly(run: &Run, peak_mib: u64, file: &str) {
    assert!(
        peak_mib < 256,
        "the run held {peak_mib} MiB: it read what it should have refused\n{}",
        run.shown()
    );
    assert!(
        run.took < PROMPT,
        "killed after {:.1?}\n{}",
        run.took,
        run.shown()
    );
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains(file), "names {file}\n{}", run.shown());
}

/// A FIFO at `path`.
fn make_fifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path that lives across the call.
    let status = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(status, 0, "mkfifo {}", path.display());
}

/// A saved run (what `--save-plans` writes) listing one measurement file, `x.member.json`,
/// which the caller makes.
fn saved_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = serde_json::json!({
        "format": plancheck::saved::RUN_FORMAT,
        "version": plancheck::measure::VERSION,
        "server_version": "15.0",
        "checks": ["x.member.json"],
    });
    fs::write(dir.path().join("run.json"), run.to_string()).unwrap();
    dir
}

// ----------------------------------------------------------------------------------------------
// Reads: a link to a secret is never followed, nothing unparsed is shown.

// A baseline that is a link to a password file: the plan diff (a warning, so the run stayed
// green) printed the password in the table and in the JSON's plan_diff.
#[test]
fn a_baseline_linked_to_a_password_file_is_refused_and_not_shown() {
    let db = fresh_board("attack_files_baseline_secret");
    let outside = Outside::new();
    let dir = page_project(&[]);
    fs::create_dir(dir.path().join("baselines")).unwrap();
    symlink(outside.secret(), dir.path().join("baselines/x.member.plan")).unwrap();
    let reports = tempfile::tempdir().unwrap();
    let run = check_reporting(&db, dir.path(), reports.path());
    assert_not_shown(SECRET, &run, reports.path());
    assert_not_shown("localhost:5432", &run, reports.path());
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(
        run.stderr.contains("x.member.plan") && run.stderr.contains("symbolic link"),
        "the refusal names the file and why\n{}",
        run.shown()
    );
}

// A plan file that is a link to a password file: the exit-2 error quoted its line.
#[test]
fn a_plan_file_linked_to_a_password_file_is_refused_and_not_shown() {
    let db = fresh_board("attack_files_plan_secret");
    let outside = Outside::new();
    let dir = project(&[("expectations/x.toml", &expectation(true, ""))]);
    fs::create_dir(dir.path().join("plans")).unwrap();
    symlink(outside.secret(), dir.path().join("plans/x.sql")).unwrap();
    let reports = tempfile::tempdir().unwrap();
    let run = check_reporting(&db, dir.path(), reports.path());
    assert_not_shown(SECRET, &run, reports.path());
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(
        run.stderr.contains("plans/x.sql") && run.stderr.contains("symbolic link"),
        "{}",
        run.shown()
    );
}

// A baseline that is a link to /proc/self/cmdline: the error about its NUL characters quoted
// plancheck's own command line, --database-url and its password with it.
#[test]
fn a_baseline_linked_to_the_command_line_does_not_show_the_database_password() {
    const URL_PASSWORD: &str = "url-pw-5b7e0c";
    // First in the connection string, where an error quoting the command line shows it.
    let db = format!(
        "password={URL_PASSWORD} {}",
        fresh_board("attack_files_cmdline")
    );
    let dir = page_project(&[]);
    fs::create_dir(dir.path().join("baselines")).unwrap();
    symlink(
        "/proc/self/cmdline",
        dir.path().join("baselines/x.member.plan"),
    )
    .unwrap();
    let reports = tempfile::tempdir().unwrap();
    let run = check(&db, dir.path(), &[]);
    assert_not_shown(URL_PASSWORD, &run, reports.path());
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains("x.member.plan"), "{}", run.shown());
}

// A baseline that is a regular file but not a plan shape (a password line copied in): an error
// naming the file and line, never the line itself.
#[test]
fn a_baseline_that_is_not_a_plan_shape_is_refused_without_quoting_it() {
    let db = fresh_board("attack_files_baseline_text");
    let dir = page_project(&[("baselines/x.member.plan", PGPASS_LINE)]);
    let reports = tempfile::tempdir().unwrap();
    let run = check_reporting(&db, dir.path(), reports.path());
    assert_not_shown(SECRET, &run, reports.path());
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(
        run.stderr.contains("baselines/x.member.plan:1"),
        "{}",
        run.shown()
    );
}

// A saved run (a CI artifact) whose measurement carries a password line as its baseline:
// `judge` showed it in the plan diff.
#[test]
fn judge_of_a_saved_baseline_that_is_not_a_plan_shape_does_not_show_it() {
    let db = fresh_board("attack_files_judge_baseline");
    let dir = page_project(&[]);
    let accepted = run(&[
        "accept",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(accepted.status, Some(0), "{}", accepted.shown());
    let saved = tempfile::tempdir().unwrap();
    let checked = check(
        &db,
        dir.path(),
        &["--save-plans", saved.path().to_str().unwrap()],
    );
    assert_eq!(checked.status, Some(0), "{}", checked.shown());
    let file = saved.path().join("x.member.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert!(m["requires"]["baseline"].is_string(), "{m:#}");
    m["requires"]["baseline"] = serde_json::Value::String(PGPASS_LINE.into());
    fs::write(&file, m.to_string()).unwrap();
    let reports = tempfile::tempdir().unwrap();
    let mut args = vec![
        "judge".to_string(),
        saved.path().to_str().unwrap().to_string(),
        "--format".to_string(),
        "json".to_string(),
    ];
    args.extend(every_report(reports.path()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run(&args);
    assert_not_shown(SECRET, &run, reports.path());
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains("x.member.json"), "{}", run.shown());
}

// ----------------------------------------------------------------------------------------------
// Writes: a link placed in the checkout is replaced, never written through.

// `--save-plans DIR` where DIR/run.json and DIR/x.member.json are links to files outside.
#[test]
fn save_plans_through_links_leaves_the_files_outside_unchanged() {
    let db = fresh_board("attack_files_save_plans");
    let outside = Outside::new();
    let dir = page_project(&[]);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    symlink(outside.victim(), out.join("run.json")).unwrap();
    symlink(outside.victim_2(), out.join("x.member.json")).unwrap();
    let run = check(&db, dir.path(), &["--save-plans", out.to_str().unwrap()]);
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(0), "{}", run.shown());
    // The run was saved all the same, into files of its own where the links were.
    for name in ["run.json", "x.member.json"] {
        let meta = fs::symlink_metadata(out.join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name}: {meta:?}");
    }
    assert_judged_the_same(&out, &run.report(), 0);
}

// `--save-plans DIR` with a migration, where DIR/before is a link to a folder outside.
#[test]
fn save_plans_through_a_linked_folder_writes_nothing_outside() {
    let db = fresh_board("attack_files_save_plans_folder");
    let outside = Outside::new();
    let dir = page_project(&[]);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    symlink(outside.folder(), out.join("before")).unwrap();
    let migration = temp_file("m.sql", "CREATE INDEX attack_files_idx ON forums (id)");
    let run = check(
        &db,
        dir.path(),
        &[
            "--save-plans",
            out.to_str().unwrap(),
            "--migration",
            migration.arg(),
        ],
    );
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(4), "{}", run.shown());
    assert!(run.stderr.contains("before"), "{}", run.shown());
}

// `--report FORMAT=FILE` where FILE is a link to a file outside.
#[test]
fn a_report_through_a_link_leaves_the_file_outside_unchanged() {
    let db = fresh_board("attack_files_report");
    let outside = Outside::new();
    let dir = page_project(&[]);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    symlink(outside.victim(), out.join("report.xml")).unwrap();
    symlink(outside.victim_2(), out.join("report.md")).unwrap();
    let junit = format!("junit={}", out.join("report.xml").display());
    let markdown = format!("markdown={}", out.join("report.md").display());
    let run = check(
        &db,
        dir.path(),
        &["--report", &junit, "--report", &markdown],
    );
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let written = fs::read_to_string(out.join("report.xml")).unwrap();
    assert!(written.contains("<testsuite"), "{written}");
}

/// `check` run inside the checkout `dir`, as CI runs it, with `--report REPORT` (a path
/// relative to the checkout).
fn check_in_checkout(db: &str, dir: &Path, report: &str) -> Run {
    let mut cmd = plancheck(&[
        "check",
        "--database-url",
        db,
        "--warmup",
        "0",
        "--iterations",
        "1",
        "--report",
        report,
    ]);
    cmd.current_dir(dir);
    run_command(&mut cmd)
}

// The same from inside the checkout: `--report junit=out/report.xml`, out/report.xml a link.
#[test]
fn a_report_inside_the_checkout_through_a_link_leaves_the_file_outside_unchanged() {
    let db = fresh_board("attack_files_report_checkout");
    let outside = Outside::new();
    let dir = page_project(&[]);
    fs::create_dir(dir.path().join("out")).unwrap();
    symlink(outside.victim(), dir.path().join("out/report.xml")).unwrap();
    let run = check_in_checkout(&db, dir.path(), "junit=out/report.xml");
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let written = fs::read_to_string(dir.path().join("out/report.xml")).unwrap();
    assert!(written.contains("<testsuite"), "{written}");
}

// `--report junit=linked/report.xml` inside the checkout, linked/ a link to a folder outside.
#[test]
fn a_report_inside_the_checkout_into_a_linked_folder_writes_nothing_outside() {
    let db = fresh_board("attack_files_report_folder");
    let outside = Outside::new();
    let dir = page_project(&[]);
    symlink(outside.folder(), dir.path().join("linked")).unwrap();
    let run = check_in_checkout(&db, dir.path(), "junit=linked/report.xml");
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(4), "{}", run.shown());
    assert!(run.stderr.contains("linked/report.xml"), "{}", run.shown());
}

/// `accept` of project `dir`.
fn accept(db: &str, dir: &Path) -> Run {
    run(&[
        "accept",
        "--database-url",
        db,
        "--project",
        dir.to_str().unwrap(),
    ])
}

// `accept` where the baseline it records is a link to a file outside: it wrote the plan into
// that file.
#[test]
fn accept_through_a_linked_baseline_leaves_the_file_outside_unchanged() {
    let db = fresh_board("attack_files_accept");
    let outside = Outside::new();
    let dir = page_project(&[]);
    fs::create_dir(dir.path().join("baselines")).unwrap();
    symlink(outside.victim(), dir.path().join("baselines/x.member.plan")).unwrap();
    let run = accept(&db, dir.path());
    outside.assert_untouched(&run);
    // A link where a baseline is read is refused before anything runs.
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains("x.member.plan"), "{}", run.shown());

    // The control: the same project with no link records its baseline.
    let dir = page_project(&[]);
    let run = accept(&db, dir.path());
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let recorded = fs::read_to_string(dir.path().join("baselines/x.member.plan")).unwrap();
    assert!(
        recorded.contains("using posts_thread_visible_idx on posts"),
        "{recorded}"
    );
}

// `accept` where baselines/ is a link to a folder outside: it recorded the plan there.
#[test]
fn accept_into_a_linked_baselines_folder_writes_nothing_outside() {
    let db = fresh_board("attack_files_accept_folder");
    let outside = Outside::new();
    let dir = page_project(&[]);
    symlink(outside.folder(), dir.path().join("baselines")).unwrap();
    let run = accept(&db, dir.path());
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains("baselines"), "{}", run.shown());
}

/// A csvlog line of the application sending `sql`.
fn log_line(sql: &str) -> String {
    format!(
        "2026-12-01 10:00:00.000 UTC,\"app\",\"board\",42,\"[local]\",6578a1b2.2a,1,\
         \"SELECT\",2026-12-01 10:00:00 UTC,3/7,0,LOG,00000,\"statement: {sql}\",,,,,,,,,\
         \"app\",client backend,,0\n"
    )
}

/// A member's thread page as an application sends it, with literals.
const LOGGED: &str = "SELECT p.id FROM posts p WHERE p.thread_id = 7 AND p.visibility = 'visible' \
                      ORDER BY p.created_at, p.id LIMIT 20";

/// `capture` of a log holding [`LOGGED`] into project `dir`.
fn capture_into(db: &str, dir: &Path) -> Run {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("app.csv");
    fs::write(&log, log_line(LOGGED)).unwrap();
    run(&[
        "capture",
        "--database-url",
        db,
        "--project",
        dir.to_str().unwrap(),
        "--min-rows",
        "1000",
        "--log",
        log.to_str().unwrap(),
    ])
}

// `capture` where the expectation it adds a scope to is a link to a file outside: it appended
// the scope's table to that file.
#[test]
fn capture_adding_a_scope_through_a_linked_expectation_leaves_the_file_outside_unchanged() {
    let db = fresh_board("attack_files_capture_scope");
    let outside = Outside::new();
    // The read path exists; its expectation, a link, lacks the captured scope.
    let dir = project(&[("plans/x.sql", LOGGED)]);
    fs::create_dir(dir.path().join("expectations")).unwrap();
    symlink(outside.victim(), dir.path().join("expectations/x.toml")).unwrap();
    let run = capture_into(&db, dir.path());
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains("x.toml"), "{}", run.shown());

    // The control: the same expectation as a file of the project is given the scope.
    let dir = project(&[
        ("plans/x.sql", LOGGED),
        ("expectations/x.toml", OUTSIDE_BYTES),
    ]);
    let run = capture_into(&db, dir.path());
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let written = fs::read_to_string(dir.path().join("expectations/x.toml")).unwrap();
    assert!(
        written.starts_with(OUTSIDE_BYTES) && written.contains("[scopes.captured]"),
        "{written}\n{}",
        run.shown()
    );
}

// `capture` where plans/ is a link to a folder outside: it wrote the new read path there.
#[test]
fn capture_of_a_new_read_path_into_a_linked_folder_writes_nothing_outside() {
    let db = fresh_board("attack_files_capture_new");
    let outside = Outside::new();
    let dir = project(&[("expectations/.keep", "")]);
    symlink(outside.folder(), dir.path().join("plans")).unwrap();
    let run = capture_into(&db, dir.path());
    outside.assert_untouched(&run);
    assert_eq!(run.status, Some(2), "{}", run.shown());
    assert!(run.stderr.contains("plans"), "{}", run.shown());

    // The control: with a real plans folder the read path is written there.
    let dir = project(&[("expectations/.keep", "")]);
    fs::create_dir(dir.path().join("plans")).unwrap();
    let run = capture_into(&db, dir.path());
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert_eq!(
        file_names(&dir.path().join("plans")).len(),
        1,
        "{}",
        run.shown()
    );
}

// `init` into a project whose plans/ and expectations/ are links to a folder outside: named
// from another folder, it wrote its example plan and expectation there.
#[test]
fn init_into_linked_folders_writes_nothing_outside() {
    let outside = Outside::new();
    for from_inside in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        symlink(outside.folder(), dir.path().join("plans")).unwrap();
        symlink(outside.folder(), dir.path().join("expectations")).unwrap();
        let run = if from_inside {
            run_command(plancheck(&["init"]).current_dir(dir.path()))
        } else {
            common::run(&["init", dir.path().to_str().unwrap()])
        };
        outside.assert_untouched(&run);
        assert_eq!(run.status, Some(2), "{}", run.shown());
        assert!(
            run.stderr.contains("plans/example.sql") && run.stderr.contains("symbolic link"),
            "{}",
            run.shown()
        );
        // Refused before anything is written: not even plancheck.toml.
        assert_eq!(
            file_names(dir.path()),
            ["expectations", "plans"],
            "{}",
            run.shown()
        );
    }

    // plancheck.toml a link to a file outside: refused, the file outside unchanged.
    let dir = tempfile::tempdir().unwrap();
    symlink(outside.victim(), dir.path().join("plancheck.toml")).unwrap();
    let linked = run(&["init", dir.path().to_str().unwrap()]);
    outside.assert_untouched(&linked);
    assert_eq!(linked.status, Some(2), "{}", linked.shown());
    assert!(
        linked.stderr.contains("plancheck.toml"),
        "{}",
        linked.shown()
    );
    assert_eq!(
        file_names(dir.path()),
        ["plancheck.toml"],
        "{}",
        linked.shown()
    );

    // The control: an empty folder is given the starter project.
    let dir = tempfile::tempdir().unwrap();
    let control = run(&["init", dir.path().to_str().unwrap()]);
    assert_eq!(control.status, Some(0), "{}", control.shown());
    assert_eq!(
        files_under(dir.path()).len(),
        3,
        "{:?}\n{}",
        files_under(dir.path()),
        control.shown()
    );
}

// ----------------------------------------------------------------------------------------------
// Devices and FIFOs: refused at once, never read.

// A plan file that is a link to /dev/zero was read until memory ran out.
#[test]
fn a_plan_linked_to_dev_zero_is_refused_at_once() {
    let db = fresh_board("attack_files_dev_zero");
    let dir = project(&[("expectations/x.toml", &expectation(true, ""))]);
    fs::create_dir(dir.path().join("plans")).unwrap();
    symlink("/dev/zero", dir.path().join("plans/x.sql")).unwrap();
    let project = dir.path().to_str().unwrap();
    let (run, peak) = run_bounded(&["check", "--database-url", &db, "--project", project]);
    assert_refused_promptly(&run, peak, "plans/x.sql");
}

// judge: a saved measurement that is a link to /dev/zero.
#[test]
fn a_saved_measurement_linked_to_dev_zero_is_refused_at_once() {
    let saved = saved_run();
    symlink("/dev/zero", saved.path().join("x.member.json")).unwrap();
    let (run, peak) = run_bounded(&["judge", saved.path().to_str().unwrap()]);
    assert_refused_promptly(&run, peak, "x.member.json");
}

// A plan file that is a FIFO hung `check` on its open.
#[test]
fn a_plan_that_is_a_fifo_is_refused_at_once() {
    let db = fresh_board("attack_files_fifo");
    let dir = project(&[("expectations/x.toml", &expectation(true, ""))]);
    fs::create_dir(dir.path().join("plans")).unwrap();
    make_fifo(&dir.path().join("plans/x.sql"));
    let project = dir.path().to_str().unwrap();
    let (run, peak) = run_bounded(&["check", "--database-url", &db, "--project", project]);
    assert_refused_promptly(&run, peak, "plans/x.sql");
}

// A saved measurement that is a FIFO hung `judge`.
#[test]
fn a_saved_measurement_that_is_a_fifo_is_refused_at_once() {
    let saved = saved_run();
    make_fifo(&saved.path().join("x.member.json"));
    let (run, peak) = run_bounded(&["judge", saved.path().to_str().unwrap()]);
    assert_refused_promptly(&run, peak, "x.member.json");
}
