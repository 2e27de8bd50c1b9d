//! JUnit XML, for the test reporters of CI systems (GitLab's `artifacts:reports:junit`, a GitHub
//! Actions test-report action): one testsuite, a testcase per read path and scope whose
//! classname is the read path and whose name is the scope.
//!
//! A failing verdict is a `failure` whose message is the `why:` line and whose body is the plan
//! the verdict is about, as the compact tree `--explain` prints; an `error` is an `error`; a
//! warning (`--require usable`, a changed plan without `--strict-plans`) passes, and says so in
//! the testcase's system-out. An index problem `lint` found fails the run, so it is a failing
//! testcase too, named after the index.

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use super::{Outcome, Report, budget_used, buffers, failing_plan, ms, outcome, probe_plan, why};
use crate::verdict::{CheckResult, Require};

// Long because it is the document in order: a testcase per check with its properties, then the
// lint's findings and the role's warnings.
pub(super) fn junit(report: &Report) -> String {
    let mut suite = TestSuite::new("plancheck");
    suite.add_property(Property::new("postgresql", &report.server_version));
    suite.add_property(Property::new(
        "require",
        match report.require {
            Require::Chosen => "chosen",
            Require::Usable => "usable",
        },
    ));
    for c in &report.checks {
        let status = match outcome(report, c) {
            Outcome::Pass | Outcome::Warning => TestCaseStatus::success(),
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
        let mut case = TestCase::new(&c.scope, status);
        case.set_classname(&c.read_path)
            .set_system_out(system_out(report, c));
        for (name, value) in &c.settings {
            case.add_property(Property::new(format!("setting {name}"), value));
        }
        for (name, value) in &c.session {
            case.add_property(Property::new(format!("setup {name}"), value));
        }
        suite.add_test_case(case);
    }
    for f in &report.lint {
        let kind = serde_json::to_value(f.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "lint".into());
        let s = if f.fails() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("{}: {}", f.read_path, f.problem))
                .set_type(kind);
            if !f.definitions.is_empty() {
                s.set_description(f.definitions.join("\n"));
            }
            s
        } else {
            TestCaseStatus::success()
        };
        let mut case = TestCase::new(format!("index {}", f.index), s);
        if !f.fails() {
            case.set_system_out(format!("{}: {}", f.read_path, f.problem));
        }
        case.set_classname(&f.read_path);
        suite.add_test_case(case);
    }
    if !report.role_warnings.is_empty() {
        let lines: Vec<String> = report
            .role_warnings
            .iter()
            .map(|r| format!("warning: the role has {}: {}", r.right, r.what))
            .collect();
        suite.set_system_out(lines.join("\n"));
    }
    let mut doc = quick_junit::Report::new("plancheck");
    doc.add_test_suite(suite);
    let mut text = doc.to_string().unwrap_or_else(|e| {
        // Writing XML into memory cannot fail; say so loudly if it ever does.
        format!("<!-- could not write the JUnit report: {e} -->")
    });
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
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
    let mut lines = vec![format!("required index: {}", c.required_index)];
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
    let budget = budget_used(&c.budget, c.budget_used.as_ref());
    if !budget.is_empty() {
        lines.push(format!("budget used: {budget}"));
    }
    for n in &c.notes {
        lines.push(format!("note: {n}"));
    }
    lines.join("\n") + "\n"
}
