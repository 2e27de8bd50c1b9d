//! report: the results of a run as a table (people) or JSON (machines). One free function per
//! format; the JSON has its own serialisable structs, documented in the README, so the internal
//! types can change without breaking a consumer.

use comfy_table::{Cell, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

use crate::verdict::{Budget, BudgetUsed, CheckResult, Require, Spread, Verdict, group};

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
}

impl Report {
    /// The check before the migration matching one after it.
    fn before_of(&self, c: &CheckResult) -> Option<&CheckResult> {
        self.before
            .as_ref()?
            .iter()
            .find(|b| b.read_path == c.read_path && b.scope == c.scope)
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
}

impl Report {
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            passed: 0,
            failed: 0,
            errors: 0,
            warnings: 0,
        };
        for c in &self.checks {
            match c.verdict {
                Verdict::Pass => s.passed += 1,
                Verdict::Error => s.errors += 1,
                _ if c.is_warning(self.require) => s.warnings += 1,
                _ => s.failed += 1,
            }
        }
        s
    }
}

/// Output formats of `check` and `demo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
}

/// Renders the report in the chosen format.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Table => table(report),
        Format::Json => json(report),
    }
}

fn ms(spread: Option<Spread>) -> String {
    match spread {
        Some(s) if s.p50 < 10.0 => format!("{:.2} ms", s.p50),
        Some(s) => format!("{:.1} ms", s.p50),
        None => "-".into(),
    }
}

/// The seed's "Used" column: each budget as the share of it the check used, e.g.
/// `6% of 60 ms, 21% of 400 buf, 1.0× of 2× first-page`.
fn budget_used(budget: &Budget, used: Option<&BudgetUsed>) -> String {
    let Some(used) = used else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let (Some(limit), Some(u)) = (budget.warm_ms, used.warm_ms) {
        parts.push(format!("{:.0}% of {limit} ms", 100.0 * u));
    }
    if let (Some(limit), Some(u)) = (budget.buffers, used.buffers) {
        parts.push(format!("{:.0}% of {} buf", 100.0 * u, group(limit)));
    }
    if let (Some(rel), Some(r)) = (&budget.relative, used.ratio) {
        parts.push(format!("{r:.1}× of {}× {}", rel.max_ratio, rel.to));
    }
    parts.join(", ")
}

/// The pass/fail table and a summary line.
pub fn table(report: &Report) -> String {
    let mut t = Table::new();
    let migration = report.before.is_some();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(180)
        .set_header(vec![
            "read path",
            "scope",
            "required index",
            if migration {
                "before → after migration"
            } else {
                "result"
            },
            "used instead",
            "warm p50",
            "buffers",
            "budget used",
        ]);
    for c in &report.checks {
        t.add_row(row(report, c));
    }
    let mut out = t.to_string();
    out.push('\n');
    out.push_str(&sections(report));
    out
}

/// One check's row.
fn row(report: &Report, c: &CheckResult) -> Vec<Cell> {
    let instead = match c.verdict {
        Verdict::Error => c.message.clone(),
        _ => c.instead.join("; "),
    };
    let required = if c.accepted.is_empty() {
        c.required_index.clone()
    } else {
        let others: Vec<&str> = c
            .accepted
            .iter()
            .filter(|a| **a != c.required_index)
            .map(String::as_str)
            .collect();
        format!("{} (or {})", c.required_index, others.join(", "))
    };
    let now = if c.is_warning(report.require) {
        format!("{} (warning)", c.verdict)
    } else {
        c.verdict.to_string()
    };
    let result = match (report.before.is_some(), report.before_of(c)) {
        (true, Some(b)) => format!("{} → {now}", b.verdict),
        (true, None) => format!("(not run) → {now}"),
        (false, _) => now,
    };
    vec![
        Cell::new(&c.read_path),
        Cell::new(&c.scope),
        Cell::new(required),
        Cell::new(result),
        Cell::new(instead),
        Cell::new(ms(c.warm_ms)),
        Cell::new(c.shared_buffers.map(group).unwrap_or_else(|| "-".into())),
        Cell::new(budget_used(&c.budget, c.budget_used.as_ref())),
    ]
}

/// What follows the table: why each check failed, notes, index problems, plans (`--explain`),
/// declared settings, and the summary line.
// Long because it is the sections under the table in the order a reader meets them.
fn sections(report: &Report) -> String {
    let mut out = String::new();
    let s = report.summary();
    let failing: Vec<String> = report
        .checks
        .iter()
        .filter(|c| !c.verdict.is_pass())
        .map(|c| {
            format!(
                "  {} [{}] {}: {}",
                c.read_path, c.scope, c.verdict, c.message
            )
        })
        .collect();
    let notes: Vec<String> = report
        .checks
        .iter()
        .flat_map(|c| {
            c.notes
                .iter()
                .map(move |n| format!("  {} [{}]: {n}", c.read_path, c.scope))
        })
        .collect();
    if !notes.is_empty() {
        out.push_str("\nnotes:\n");
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
    if !report.lint.is_empty() {
        out.push_str("\nindexes:\n");
        out.push_str(&lint_findings(&report.lint));
    }
    if !failing.is_empty() {
        out.push_str("\nwhy:\n");
        out.push_str(&failing.join("\n"));
        out.push('\n');
    }
    if report.explain {
        for c in report.checks.iter().filter(|c| !c.verdict.is_pass()) {
            // The plan the verdict is about: the generic one for `generic-plan`.
            let wanted = if c.verdict == Verdict::GenericPlan {
                "generic"
            } else {
                "custom"
            };
            let Some((label, plan)) = c.plans.iter().find(|(l, _)| l == wanted) else {
                continue;
            };
            if let Ok(plan) = crate::explain::Explain::from_json(plan) {
                out.push_str(&format!(
                    "\n{} [{}] {}, {label} plan:\n{}",
                    c.read_path,
                    c.scope,
                    c.verdict,
                    crate::explain::render_tree(&plan)
                ));
            }
            // The re-plan that found a way through the index, whose cost the message quotes.
            if let Some((_, probe)) = c.plans.iter().find(|(l, _)| l == "probe")
                && let Ok(plan) = crate::explain::Explain::from_json(probe)
            {
                out.push_str(&format!(
                    "\n{} [{}] the re-plan through {} (not run; scan types disabled):\n{}",
                    c.read_path,
                    c.scope,
                    c.required_index,
                    crate::explain::render_tree(&plan)
                ));
            }
        }
    }
    out.push_str(&declared_settings(report));
    out.push_str(&format!(
        "\n{} checks on PostgreSQL {}: {} passed, {} failed, {} errors{}\n",
        report.checks.len(),
        report.server_version,
        s.passed,
        s.failed,
        s.errors,
        if s.warnings > 0 {
            format!(", {} warnings (usable, not chosen)", s.warnings)
        } else {
            String::new()
        }
    ));
    if !report.lint.is_empty() {
        out.push_str(&format!(
            "{} index problem{} (see \"indexes:\" above)\n",
            report.lint.len(),
            if report.lint.len() == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The declared planner settings the checks ran with, a line per scope that has any: a reader
/// must see what the plans were made under.
fn declared_settings(report: &Report) -> String {
    let mut lines: Vec<String> = Vec::new();
    for c in report.checks.iter().filter(|c| !c.settings.is_empty()) {
        let set: Vec<String> = c
            .settings
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let line = format!("  [{}] {}\n", c.scope, set.join(", "));
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nplanner settings applied (settings = {{…}}):\n{}",
        lines.concat()
    )
}

#[derive(Serialize)]
struct JsonReport<'a> {
    server_version: &'a str,
    /// Rights of the connecting role that let SQL act outside the rolled-back transaction.
    role_warnings: &'a [crate::db::role::RoleRisk],
    checks: Vec<JsonCheck<'a>>,
    /// Twin drift and invalid indexes (`plancheck lint`), found before the checks ran.
    lint: &'a [crate::lint::Finding],
    summary: Summary,
}

#[derive(Serialize)]
struct JsonBefore<'a> {
    verdict: Verdict,
    used: &'a [String],
    message: &'a str,
}

#[derive(Serialize)]
struct JsonCheck<'a> {
    read_path: &'a str,
    scope: &'a str,
    required_index: &'a str,
    /// Every index the scope accepts, when it accepts several; `required_index` is then the
    /// one that passed, or the first.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    accepted_indexes: &'a [String],
    verdict: Verdict,
    used: &'a [String],
    seq_scans: &'a [String],
    warm_ms: Option<Spread>,
    planning_ms: Option<Spread>,
    shared_buffers: Option<f64>,
    /// Whether the index was proved usable (true: a re-plan used it, or its predicate is
    /// implied), proved not (false), or neither (null: not needed, or not settled).
    usable: Option<bool>,
    /// Relations of at least --large-rows rows the plan reads whole.
    large_reads: &'a [String],
    /// A failure reported as a warning under `--require usable`.
    warning: bool,
    /// Warnings about the planner's knowledge: relations never analysed or changed a lot since.
    notes: &'a [String],
    /// With `--migration`: the same check before the migration.
    #[serde(skip_serializing_if = "Option::is_none")]
    before: Option<JsonBefore<'a>>,
    /// The declared planner settings the check ran with (`settings = { … }`).
    settings: std::collections::BTreeMap<&'a str, &'a str>,
    /// The budgets set for the check (absent figures left out), and the share of each used.
    budget: &'a Budget,
    budget_used: Option<&'a BudgetUsed>,
    message: &'a str,
}

/// The stable JSON document described in the README.
pub fn json(report: &Report) -> String {
    let doc = JsonReport {
        server_version: &report.server_version,
        role_warnings: &report.role_warnings,
        lint: &report.lint,
        checks: report
            .checks
            .iter()
            .map(|c| JsonCheck {
                read_path: &c.read_path,
                scope: &c.scope,
                required_index: &c.required_index,
                accepted_indexes: &c.accepted,
                verdict: c.verdict,
                used: &c.used,
                seq_scans: &c.seq_scans,
                warm_ms: c.warm_ms,
                planning_ms: c.planning_ms,
                shared_buffers: c.shared_buffers,
                usable: c.usable,
                large_reads: &c.large_reads,
                warning: c.is_warning(report.require),
                notes: &c.notes,
                before: report.before_of(c).map(|b| JsonBefore {
                    verdict: b.verdict,
                    used: &b.used,
                    message: &b.message,
                }),
                settings: c
                    .settings
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
                budget: &c.budget,
                budget_used: c.budget_used.as_ref(),
                message: &c.message,
            })
            .collect(),
        summary: report.summary(),
    };
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
        // Serialising these plain structs cannot fail; say so loudly if it ever does.
        format!("{{\"error\": \"could not serialise the report: {e}\"}}")
    });
    text.push('\n');
    text
}

/// Lint findings as text: each problem, then the definitions involved one under the other.
pub fn lint_findings(findings: &[crate::lint::Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!("{}: {}\n", f.read_path, f.problem));
        for d in &f.definitions {
            out.push_str(&format!("    {d}\n"));
        }
    }
    out
}

/// What `plancheck lint` prints: the findings, or a line saying there are none.
pub fn lint(findings: &[crate::lint::Finding], read_paths: usize, format: Format) -> String {
    match format {
        Format::Json => {
            let mut t = serde_json::to_string_pretty(&serde_json::json!({ "findings": findings }))
                .unwrap_or_else(|e| format!("{{\"error\": \"could not serialise: {e}\"}}"));
            t.push('\n');
            t
        }
        Format::Table if findings.is_empty() => format!(
            "no twin drift: {read_paths} read paths, every required index present, valid and \
             ready\n"
        ),
        Format::Table => lint_findings(findings),
    }
}
