//! report: the results of a run, rendered. Pure: a [`Report`] and a [`Style`] in, text out; the
//! app decides the width, the colour and where the text goes.
//!
//! One free function per format, chosen by one `match` in [`render`]:
//!
//! - `table.rs`: the pass/fail table people read, fitted to the terminal's width, and the
//!   sections under it (`why:`, notes, plans, the summary line);
//! - `json.rs`: the stable JSON document (its own serialisable structs, documented in the
//!   README, so the internal types can change without breaking a consumer);
//! - `junit.rs`: JUnit XML, a testcase per read path and scope, for CI test reporters;
//! - `github.rs`: GitHub Actions workflow commands, an annotation on the expectation file of each
//!   failing check;
//! - `markdown.rs`: the evidence table and the budget tables, for a job summary;
//! - `page.rs`: the performance page, the checks' report and the ladder's in one document;
//! - `lint.rs`: what `plancheck lint` prints.

pub mod brief;
pub mod capture;
pub mod connect;
pub mod failure;
pub mod fixtures;
mod github;
mod json;
mod junit;
pub mod ladder;
mod lint;
pub mod list;
mod markdown;
pub mod migration;
pub mod page;
pub mod scratch;
pub mod server;
pub mod sqlstate;
pub mod stats;
pub mod stderr;
mod table;
mod tree;
mod wrap;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::explain::Explain;
use crate::verdict::{CheckResult, Require, Spread, Verdict, WarmStanding, group};

pub use github::annotations;
pub use lint::{LintFormat, lint, lint_findings};

/// The results of a run, in a stable order (as the project lists them).
#[derive(Debug, Clone)]
pub struct Report {
    pub server_version: String,
    pub checks: Vec<CheckResult>,
    /// What a check must show to pass (`--require`).
    pub require: Require,
    /// Twin drift and invalid indexes found before the checks ran.
    pub lint: Vec<crate::lint::Finding>,
    /// `--explain`: the table ends with the plan of every failing check.
    pub explain: bool,
    /// With `--migration`: the checks as the database was before it (`checks` are after).
    pub before: Option<Vec<CheckResult>>,
    /// Rights of the connecting role that let a project's SQL act outside the rolled-back
    /// transaction (empty on plancheck's own throwaway server).
    pub role_warnings: Vec<crate::db::role::RoleRisk>,
    /// Where each check's expectation is written, by read path and scope, for annotations that
    /// point at it. Empty when the files are not at hand (`judge`, the built-in project).
    pub locations: BTreeMap<(String, String), Location>,
    /// Checks of the run that were not run: stopped (Ctrl-C, SIGTERM) or `--fail-fast`.
    pub not_run: usize,
    /// With `--migration`: its statements checked in another form than written.
    pub migration_rewritten: Vec<String>,
    /// With `--migration`: what it did to the indexes the checks require.
    pub index_changes: Vec<crate::model::IndexChange>,
    /// With `--migration`: how long its locks were held, against `--migration-hold`.
    pub migration_hold: Option<crate::model::MigrationHold>,
    /// When the run started (JUnit's `timestamp`); none for a saved run judged again.
    pub started: Option<std::time::SystemTime>,
}

/// Where a check's expectation is written: the file, as a path from the folder plancheck ran in
/// (`expectations/NAME.toml`), and the line of the scope's table (`[scopes.NAME]`) in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub line: Option<usize>,
}

impl Report {
    /// The check before the migration matching one after it.
    fn before_of(&self, c: &CheckResult) -> Option<&CheckResult> {
        self.before
            .as_ref()?
            .iter()
            .find(|b| b.read_path == c.read_path && b.scope == c.scope)
    }

    /// Where the check's expectation is written, when known.
    fn location_of(&self, c: &CheckResult) -> Option<&Location> {
        self.locations.get(&(c.read_path.clone(), c.scope.clone()))
    }

    /// The expectation file of a read path (any of its scopes'), when known.
    fn file_of(&self, read_path: &str) -> Option<&str> {
        self.locations
            .iter()
            .find(|((rp, _), _)| rp == read_path)
            .map(|(_, l)| l.path.as_str())
    }
}

/// The order people read checks in (the table, the Markdown report): what failed the run
/// first (failures and errors), then what was reported without failing it (warnings, verdicts
/// without statistics), then the passes, each group in the report's own order. Machines get
/// the report's order (JSON, JUnit, the annotations), which a consumer may rely on.
fn reading_order(report: &Report) -> Report {
    let rank = |c: &CheckResult| match outcome(report, c) {
        Outcome::Failure | Outcome::Error => 0,
        Outcome::Warning | Outcome::NoStatistics => 1,
        Outcome::Pass => 2,
    };
    let mut checks = report.checks.clone();
    // Stable: within a group, the report's order.
    checks.sort_by_key(rank);
    Report {
        checks,
        ..report.clone()
    }
}

/// Counts for the summary line and the JSON summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// Not chosen but usable, under `--require usable`: reported, not failed.
    pub warnings: usize,
    /// Verdicts the data decides on plans over relations never analysed: neither passed nor
    /// failed.
    #[serde(skip_serializing_if = "is_zero")]
    pub no_statistics: usize,
    /// Checks not run: the run was stopped, or `--fail-fast` stopped it at a failure.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_run: usize,
    /// Index problems the lint found that fail the run (twin drift, an invalid index).
    #[serde(skip_serializing_if = "is_zero")]
    pub index_problems: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Report {
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            passed: 0,
            failed: 0,
            errors: 0,
            warnings: 0,
            no_statistics: 0,
            not_run: self.not_run,
            index_problems: self.lint.iter().filter(|f| f.fails()).count(),
        };
        for c in &self.checks {
            match outcome(self, c) {
                Outcome::Pass => s.passed += 1,
                Outcome::Error => s.errors += 1,
                Outcome::Warning => s.warnings += 1,
                Outcome::NoStatistics => s.no_statistics += 1,
                Outcome::Failure => s.failed += 1,
            }
        }
        s
    }
}

/// What a check's verdict means for the run: every format sorts checks into these four, the
/// same way the summary counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    /// Reported, not failed (`--require usable`, a changed plan without `--strict-plans`).
    Warning,
    Failure,
    /// Neither a pass nor a failure: the verdict the data decides, with no statistics to decide
    /// it (exit status 5 when nothing fails).
    NoStatistics,
    /// Not a verdict on the plan at all: the check could not run.
    Error,
}

fn outcome(report: &Report, c: &CheckResult) -> Outcome {
    match c.verdict {
        Verdict::Pass => Outcome::Pass,
        Verdict::Error => Outcome::Error,
        Verdict::NoStatistics => Outcome::NoStatistics,
        _ if c.is_warning(report.require) => Outcome::Warning,
        _ => Outcome::Failure,
    }
}

/// Output formats of `check`, `demo` and `judge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Junit,
    Github,
    Markdown,
}

/// How the text is laid out for where it goes: decided once by the app (the terminal's width,
/// `--color`, `NO_COLOR`), so that rendering stays pure and tests can choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Columns the table may take (it keeps identifiers whole, so it may take more when they
    /// cannot fit).
    pub width: usize,
    /// ANSI colour on the verdicts (the table only).
    pub color: bool,
}

impl Style {
    /// What a file or a pipe gets: 120 columns, no colour.
    pub const PLAIN: Style = Style {
        width: 120,
        color: false,
    };
}

impl Default for Style {
    fn default() -> Self {
        Style::PLAIN
    }
}

/// Renders the report in the chosen format.
pub fn render(report: &Report, format: Format, style: Style) -> String {
    match format {
        Format::Table => table::table(&reading_order(report), style),
        Format::Json => json::json(report),
        Format::Junit => junit::junit(report),
        Format::Github => github::github(report),
        Format::Markdown => markdown::markdown(&reading_order(report)),
    }
}

/// A warm time as the table shows it: two decimals under 10 ms, one above.
fn ms(spread: Option<Spread>) -> String {
    match spread {
        Some(s) => ms_value(s.p50),
        None => "-".into(),
    }
}

fn ms_value(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// Shared buffers as the table shows them: `1,234`, `-` when not measured.
fn buffers(c: &CheckResult) -> String {
    c.shared_buffers.map(group).unwrap_or_else(|| "-".into())
}

/// Each budget as the share of it the check used, e.g.
/// `6% of 60 ms, 21% of 400 buf, 1.0× of 2× first-page`.
fn budget_used(c: &CheckResult) -> String {
    budget_parts(c)
        .iter()
        .map(|p| p.text())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One budget of a check and how much of it was used.
enum BudgetPart<'a> {
    /// `standing`: over, within the budget, or over only within noise (not over budget).
    WarmMs {
        limit: f64,
        share: f64,
        standing: WarmStanding,
    },
    Buffers {
        limit: f64,
        share: f64,
    },
    Relative {
        ratio: f64,
        max: f64,
        to: &'a str,
    },
}

impl BudgetPart<'_> {
    /// The share of the budget used: 1.0 is all of it.
    fn share(&self) -> f64 {
        match self {
            BudgetPart::WarmMs { share, .. } | BudgetPart::Buffers { share, .. } => *share,
            BudgetPart::Relative { ratio, max, .. } => ratio / max,
        }
    }

    fn text(&self) -> String {
        match self {
            BudgetPart::WarmMs {
                limit,
                share,
                standing,
            } => {
                let noise = if *standing == WarmStanding::WithinNoise {
                    " (within noise)"
                } else {
                    ""
                };
                format!("{:.0}% of {limit} ms{noise}", 100.0 * share)
            }
            BudgetPart::Buffers { limit, share } => {
                format!("{:.0}% of {} buf", 100.0 * share, group(*limit))
            }
            BudgetPart::Relative { ratio, max, to } => format!("{ratio:.1}× of {max}× {to}"),
        }
    }
}

/// Each budget of the check and how much of it was used; a time budget's standing as the judge
/// has it (`BudgetUsed::warm`).
fn budget_parts(c: &CheckResult) -> Vec<BudgetPart<'_>> {
    let (budget, Some(used)) = (&c.budget, c.budget_used.as_ref()) else {
        return Vec::new();
    };
    let mut parts = Vec::new();
    if let (Some(limit), Some(share)) = (budget.warm_ms, used.warm_ms) {
        // As the judge had it; a saved share from before the standing was kept reads as over.
        let standing = used.warm.unwrap_or(if share > 1.0 {
            WarmStanding::Over
        } else {
            WarmStanding::Under
        });
        parts.push(BudgetPart::WarmMs {
            limit,
            share,
            standing,
        });
    }
    if let (Some(limit), Some(share)) = (budget.buffers, used.buffers) {
        parts.push(BudgetPart::Buffers { limit, share });
    }
    if let (Some(rel), Some(ratio)) = (&budget.relative, used.ratio) {
        parts.push(BudgetPart::Relative {
            ratio,
            max: rel.max_ratio,
            to: &rel.to,
        });
    }
    parts
}

/// `read-path [scope]`, as every format names a check.
fn check_name(c: &CheckResult) -> String {
    format!("{} [{}]", c.read_path, c.scope)
}

/// The `why:` line of a check that did not pass: `read-path [scope] verdict: message`.
fn why(c: &CheckResult) -> String {
    format!("{} {}: {}", check_name(c), c.verdict, c.message)
}

/// The plan a failing verdict is about (the generic one for `generic-plan`), labelled, parsed;
/// `None` when the check has no such plan (it did not run).
fn failing_plan(c: &CheckResult) -> Option<(&'static str, &Explain)> {
    let wanted = if c.verdict == Verdict::GenericPlan {
        "generic"
    } else {
        "custom"
    };
    let (_, doc) = c.plans.iter().find(|(l, _)| l == wanted)?;
    Some((wanted, doc.plan()))
}

/// The re-plan behind a usability verdict, parsed, with its title: the one on the measured server
/// that found a way through the required index (the `probe`: the cost a `not-chosen` message
/// quotes comes from it), or the one on the scratch copy.
fn probe_plan(c: &CheckResult) -> Option<(String, &Explain)> {
    let (label, doc) = c
        .plans
        .iter()
        .find(|(l, _)| l == "probe" || l == "scratch")?;
    let title = if label == "probe" {
        format!(
            "the re-plan through {} (not run; scan types disabled)",
            c.required_index
        )
    } else {
        format!(
            "the re-plan on the schema-only copy, {} alone on its table (not run; seq scans \
             disabled)",
            c.required_index
        )
    };
    Some((title, doc.plan()))
}

/// The summary line: `12 checks on PostgreSQL 15.8: 11 passed, 1 failed, 0 errors`.
fn summary_line(report: &Report) -> String {
    summary_line_quoting(report, &|s: &str| s.to_string())
}

/// [`summary_line`], the server's version (the server's words) as `quote` gives it.
fn summary_line_quoting(report: &Report, quote: &dyn Fn(&str) -> String) -> String {
    let s = report.summary();
    let count = |n: usize, one: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    format!(
        "{} on PostgreSQL {}: {} passed, {} failed, {}{}",
        count(report.checks.len(), "check"),
        quote(&report.server_version),
        s.passed,
        s.failed,
        count(s.errors, "error"),
        if s.warnings > 0 {
            format!(", {}", count(s.warnings, "warning"))
        } else {
            String::new()
        }
    ) + &if s.no_statistics > 0 {
        format!(", {} without statistics", s.no_statistics)
    } else {
        String::new()
    } + &if s.not_run > 0 {
        format!(", {} not run", s.not_run)
    } else {
        String::new()
    } + &if s.index_problems > 0 {
        // They fail the run as a failed check does: the last line says why the status is 1.
        format!(", {}", count(s.index_problems, "index problem"))
    } else {
        String::new()
    }
}

/// Everything the check's scope applied to its session, a `name = value` each: the declared
/// planner settings, then what its setup changed as the server read it back. Every format shows
/// it, since a setting can turn a failure into a pass.
pub(crate) fn applied(c: &CheckResult) -> Vec<String> {
    c.settings
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .chain(c.session.iter().map(|(k, v)| format!("{k} = {v} (setup)")))
        .collect()
}

/// A line per scope that applied anything ([`applied`]), `[scope] a = 1, b = 2 (setup)`, each
/// scope once.
pub(crate) fn applied_lines(report: &Report) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for c in &report.checks {
        let set = applied(c);
        if set.is_empty() {
            continue;
        }
        let line = format!("[{}] {}", c.scope, set.join(", "));
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// What the check's reader read past: the tables whose row-level security policies did not
/// apply to it, and why, in one sentence; None when it read past none. Every format says it,
/// since a reader the policies do not apply to can turn a failure into a pass.
pub(crate) fn past_policies(c: &CheckResult) -> Option<String> {
    use crate::verdict::readers::Past;
    let first = c.reads_past_policies.first()?;
    let tables: Vec<&str> = c
        .reads_past_policies
        .iter()
        .map(|p| p.table.as_str())
        .collect();
    let why: Vec<String> = c
        .reads_past_policies
        .iter()
        .map(|p| match &p.why {
            Past::Superuser => format!("{} is a superuser", p.reader),
            Past::Bypassrls => format!("{} has BYPASSRLS", p.reader),
            Past::Owner { owner } => format!(
                "{} has the privileges of {}'s owner {owner}, and {} does not FORCE ROW LEVEL \
                 SECURITY",
                p.reader, p.table, p.table
            ),
            Past::NotSettled => format!(
                "row_security_active({}) says they do not apply to {}, and the catalog's facts \
                 read do not say why",
                p.table, p.reader
            ),
        })
        .fold(Vec::new(), |mut all, w| {
            if !all.contains(&w) {
                all.push(w);
            }
            all
        });
    Some(format!(
        "reads past row-level security: the policies of {} do not apply to its reader, role {} \
         ({}), so its plans show none of their conditions: they are not the plans of a reader \
         the policies apply to (the scope's setup should SET ROLE to one)",
        tables.join(", "),
        first.reader,
        why.join("; ")
    ))
}
