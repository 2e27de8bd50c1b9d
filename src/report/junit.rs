//! JUnit XML, for the test reporters of CI systems (GitLab's `artifacts:reports:junit`, a GitHub
//! Actions test-report action): a testsuite per read path, a testcase per scope named
//! `read-path [scope]` (classname the read path), with its `time` (the check's wall time) and
//! the `file` and `line` of the scope's table in its expectation where the report knows them;
//! the report and each suite carry the run's `timestamp` and their total `time`.
//!
//! A failing verdict is a `failure` whose message is the `why:` line and whose body is the plan
//! the verdict is about, as the compact tree `--explain` prints; an `error` is an `error`. An
//! index problem `lint` found fails the run, so it is a failing testcase too, named after the
//! index, in its first read path's suite.
//!
//! A warning (`--require usable`, a changed plan without `--strict-plans`, a `key-direction`
//! finding no plan settled) and a `no-statistics` are `skipped`, the message starting with what
//! it is (`warning: …`, the `why:` line), the plan in its body, the whole reason in system-out.
//! Why `skipped`: JUnit has no warning status, and what CI test views show is the status alone.
//! GitLab's merge-request test report, the GitHub test-report actions (dorny/test-reporter,
//! mikepenz/action-junit-report) and Jenkins' JUnit plugin each show a case as passed, failed
//! (failure or error) or skipped, and nothing else: a warning in a passed case's system-out is a
//! green tick nobody opens. `skipped` is the one state they all show apart from passed that does
//! not fail the job or mark the build unstable, so it is a warning's honest place; its message
//! says it ran and was reported, not that it was left out.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use super::{
    Outcome, Report, budget_used, buffers, check_name, failing_plan, ms, outcome, probe_plan, why,
};
use crate::verdict::{CheckResult, Require};

/// The suites in the report's order of read paths, made on first use.
struct Suites<'a> {
    report: &'a Report,
    suites: Vec<(String, TestSuite)>,
}

impl<'a> Suites<'a> {
    fn of(&mut self, read_path: &str) -> &mut TestSuite {
        let at = match self.suites.iter().position(|(n, _)| n == read_path) {
            Some(at) => at,
            None => {
                let mut suite = TestSuite::new(read_path);
                suite.add_property(Property::new("postgresql", &self.report.server_version));
                suite.add_property(Property::new(
                    "require",
                    match self.report.require {
                        Require::Chosen => "chosen",
                        Require::Usable => "usable",
                    },
                ));
                if let Some(started) = self.report.started {
                    suite.set_timestamp(chrono::DateTime::<chrono::Utc>::from(started));
                }
                self.suites.push((read_path.to_string(), suite));
                self.suites.len() - 1
            }
        };
        &mut self.suites[at].1
    }
}

fn seconds(ms: f64) -> Duration {
    Duration::from_secs_f64((ms / 1000.0).max(0.0))
}

pub(super) fn junit(report: &Report) -> String {
    let mut suites = Suites {
        report,
        suites: Vec::new(),
    };
    // Times only where the checks' were measured (a saved run from before they were kept has
    // none): no `time="0"` that was never measured.
    let mut total: Option<Duration> = None;
    for c in &report.checks {
        let case = testcase(report, c);
        let suite = suites.of(&c.read_path);
        if let Some(ms) = c.elapsed_ms {
            total = Some(total.unwrap_or_default() + seconds(ms));
            let time = suite.time.unwrap_or_default() + seconds(ms);
            suite.set_time(time);
        }
        suite.add_test_case(case);
    }
    for f in &report.lint {
        let kind = serde_json::to_value(f.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "lint".into());
        let said = format!("{}: {}", f.read_paths().join(", "), f.problem);
        // A finding that fails nothing is a warning: skipped, as a check's warning is.
        let mut s = if f.fails() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(&said);
            s
        } else {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("warning: {said}"));
            s
        };
        s.set_type(kind);
        if !f.definitions.is_empty() {
            s.set_description(f.definitions.join("\n"));
        }
        let mut case = TestCase::new(format!("index {}", f.index), s);
        if !f.fails() {
            case.set_system_out(&said);
        }
        case.set_classname(&f.read_path);
        if let Some(path) = report.file_of(&f.read_path) {
            case.extra.insert("file".into(), path.into());
        }
        suites.of(&f.read_path).add_test_case(case);
    }
    if suites.suites.is_empty() {
        suites.of("plancheck");
    }
    if !report.role_warnings.is_empty() {
        let lines: Vec<String> = report
            .role_warnings
            .iter()
            .map(|r| format!("warning: the role has {}: {}", r.right, r.what))
            .collect();
        suites.suites[0].1.set_system_out(lines.join("\n"));
    }
    let mut doc = quick_junit::Report::new("plancheck");
    if let Some(total) = total {
        doc.set_time(total);
    }
    if let Some(started) = report.started {
        doc.set_timestamp(chrono::DateTime::<chrono::Utc>::from(started));
    }
    doc.add_test_suites(suites.suites.into_iter().map(|(_, s)| s));
    let mut text = doc.to_string().unwrap_or_else(|e| {
        // Writing XML into memory cannot fail; say so loudly if it ever does.
        format!("<!-- could not write the JUnit report: {e} -->")
    });
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// One check's testcase: `read-path [scope]`, its status, time, file and line, properties.
fn testcase(report: &Report, c: &CheckResult) -> TestCase {
    let status = match outcome(report, c) {
        Outcome::Pass => TestCaseStatus::success(),
        // Reported, not failed: JUnit's skipped (the module's opening says why), its message
        // saying it is a warning, the plan in its body.
        Outcome::Warning => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("warning: {}", why(c)))
                .set_type(c.verdict.as_str())
                .set_description(plan_body(c));
            s
        }
        // Neither passed nor failed: JUnit's skipped, with the reason.
        Outcome::NoStatistics => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(why(c)).set_type(c.verdict.as_str());
            s
        }
        Outcome::Failure => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(why(c))
                .set_type(c.verdict.as_str())
                .set_description(plan_body(c));
            s
        }
        Outcome::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(why(c))
                .set_type(c.verdict.as_str())
                .set_description(&c.message);
            s
        }
    };
    let mut case = TestCase::new(check_name(c), status);
    case.set_classname(&c.read_path)
        .set_system_out(system_out(report, c));
    if let Some(ms) = c.elapsed_ms {
        case.set_time(seconds(ms));
    }
    // Where the check is written: an error the server located, else the scope's table.
    match (&c.at, report.location_of(c)) {
        (Some(at), _) => {
            case.extra.insert("file".into(), at.path.as_str().into());
            case.extra.insert("line".into(), at.line.to_string().into());
        }
        (None, Some(at)) => {
            case.extra.insert("file".into(), at.path.as_str().into());
            if let Some(line) = at.line {
                case.extra.insert("line".into(), line.to_string().into());
            }
        }
        (None, None) => {}
    }
    for (name, value) in &c.settings {
        case.add_property(Property::new(format!("setting {name}"), value));
    }
    for (name, value) in &c.session {
        case.add_property(Property::new(format!("setup {name}"), value));
    }
    if let Some(past) = super::past_policies(c) {
        case.add_property(Property::new("row-level security", past));
    }
    case
}

/// The body of a failure: the plan the verdict is about, and the re-plan through the index a
/// `not-chosen` message quotes; the access paths when no plan was kept.
fn plan_body(c: &CheckResult) -> String {
    let mut out = String::new();
    if let Some((label, plan)) = failing_plan(c) {
        out.push_str(&format!(
            "{label} plan:\n{}",
            super::tree::render_tree(plan)
        ));
    } else if !c.used.is_empty() {
        out.push_str(&format!("used: {}\n", c.used.join("; ")));
    }
    if let Some((title, plan)) = probe_plan(c) {
        out.push_str(&format!("\n{title}:\n{}", super::tree::render_tree(plan)));
    }
    out
}

/// What a reader of the testcase wants beside its status: the figures, the budgets, what was
/// used instead, the notes, and a warning's reason.
fn system_out(report: &Report, c: &CheckResult) -> String {
    let mut lines = vec![format!("required index: {}", c.index_shown())];
    if outcome(report, c) == Outcome::Warning {
        lines.push(format!("warning (does not fail the run): {}", why(c)));
    }
    if let Some(b) = report.before_of(c) {
        lines.push(format!("before the migration: {}", b.verdict));
    } else if report.before.is_some() {
        lines.push("before the migration: not run".into());
    }
    if !c.instead.is_empty() {
        lines.push(format!("used instead: {}", c.instead.join("; ")));
    }
    if c.warm_ms.is_some() || c.shared_buffers.is_some() {
        lines.push(format!(
            "warm p50: {}, shared buffers: {}",
            ms(c.warm_ms),
            buffers(c)
        ));
    }
    let budget = budget_used(c);
    if !budget.is_empty() {
        lines.push(format!("budget used: {budget}"));
    }
    for n in &c.notes {
        lines.push(format!("note: {n}"));
    }
    lines.extend(super::past_policies(c));
    lines.join("\n") + "\n"
}
