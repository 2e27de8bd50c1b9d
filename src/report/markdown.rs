//! Markdown for a CI job's summary (`$GITHUB_STEP_SUMMARY`) or a pull-request comment: the
//! summary line, the evidence table `| Page | Index | Used | Warm |` (a row per read path and
//! scope), the time budgets in a performance page's columns `| Page | Budget | Measured p95 | p50 | p99 |
//! Used | |` and the buffer budgets `| Page | Budget | Measured | Used |` when budgets are set,
//! and why each check that did not pass failed.

use super::{BudgetPart, Report, budget_parts, buffers, check_name, ms, ms_value, summary_line};
use crate::verdict::CheckResult;

pub(super) fn markdown(report: &Report) -> String {
    let mut out = format!("## plancheck\n\n{}\n", summary_line(report));
    out.push('\n');
    out.push_str(&evidence(report));
    let times = time_budgets(report);
    if !times.is_empty() {
        out.push('\n');
        out.push_str(&times);
    }
    let budgets: Vec<String> = report.checks.iter().flat_map(buffer_rows).collect();
    if !budgets.is_empty() {
        out.push_str("\n| Page | Budget | Measured | Used |\n|---|---|---|---|\n");
        out.push_str(&budgets.concat());
    }
    out.push_str(&why_list(report));
    if let Some(hold) = &report.migration_hold {
        out.push_str(&format!(
            "\n**Migration**: {}\n",
            text(&super::migration::hold(hold))
        ));
    }
    let applied = super::applied_lines(report);
    if !applied.is_empty() {
        out.push_str("\n**Settings applied**\n\n");
        for line in applied {
            out.push_str(&format!("- {}\n", text(&line)));
        }
    }
    let past: Vec<String> = report
        .checks
        .iter()
        .filter_map(|c| {
            Some(format!(
                "- {}: {}\n",
                text(&check_name(c)),
                text(&super::past_policies(c)?)
            ))
        })
        .collect();
    if !past.is_empty() {
        out.push_str("\n**Row-level security**\n\n");
        out.push_str(&past.concat());
    }
    if !report.lint.is_empty() {
        out.push_str("\n**Index problems**\n\n");
        for f in &report.lint {
            out.push_str(&format!("- {}: {}\n", text(&f.read_path), text(&f.problem)));
        }
    }
    out
}

/// Why each check that did not pass failed, under a `**Why**` heading; empty when all passed.
pub(super) fn why_list(report: &Report) -> String {
    let mut out = String::new();
    let why: Vec<String> = report
        .checks
        .iter()
        .filter(|c| !c.verdict.is_pass())
        .map(|c| {
            // The fix the table gives, unless the message ends with its own (a seq scan's).
            let fix = super::brief::of(c, report.require)
                .fix
                .filter(|_| !c.message.contains("Fix: "))
                .map(|fix| format!("\n  - fix: {}", text(&fix)))
                .unwrap_or_default();
            format!(
                "- {} **{}**: {}{fix}\n",
                text(&check_name(c)),
                c.verdict,
                text(&c.message)
            )
        })
        .collect();
    if !why.is_empty() {
        out.push_str("\n**Why**\n\n");
        out.push_str(&why.concat());
    }
    out
}

/// The `Used` cell: `yes` for a pass; else the verdict, `(warning)` when it does not fail the
/// run, and what was used instead; with a migration, the verdict before it first.
fn used(report: &Report, c: &CheckResult) -> String {
    let mut now = if c.verdict.is_pass() && c.required_index.is_empty() {
        "nothing read whole beyond allow_seq_scan".to_string()
    } else if c.verdict.is_pass() {
        "yes".to_string()
    } else {
        format!("**{}**", c.verdict)
    };
    if c.is_warning(report.require) {
        now.push_str(" (warning)");
    }
    if !c.instead.is_empty() {
        now.push_str(&format!(": {}", c.instead.join("; ")));
    }
    match (report.before.is_some(), report.before_of(c)) {
        (true, Some(b)) => format!("{} → {now}", b.verdict),
        (true, None) => format!("(not run) → {now}"),
        (false, _) => now,
    }
}

/// The evidence table: a row per check, the index it requires, whether it was used, the warm
/// median.
pub(super) fn evidence(report: &Report) -> String {
    let mut out = String::from("| Page | Index | Used | Warm |\n|---|---|---|---|\n");
    for c in &report.checks {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            cell(&check_name(c)),
            if c.required_index.is_empty() {
                "none".to_string()
            } else {
                code(&c.required_index)
            },
            cell(&used(report, c)),
            ms(c.warm_ms)
        ));
    }
    out
}

/// The time budgets in a performance page's columns: a row per check with a `warm_ms` budget,
/// its p95 (what the budget is judged on), p50 and p99 of the measured runs' execution time, the
/// share of the budget the p95 used, `target` or `OVER`; then the p95 of the plain statement's
/// round trip as the client saw it. Empty when no check has a time budget.
pub(super) fn time_budgets(report: &Report) -> String {
    let mut rows = String::new();
    for c in &report.checks {
        for part in budget_parts(&c.budget, c.budget_used.as_ref()) {
            let BudgetPart::WarmMs { limit, share } = part else {
                continue;
            };
            let spread = |f: fn(&crate::verdict::Spread) -> f64| {
                c.warm_ms
                    .as_ref()
                    .map(|s| ms_value(f(s)))
                    .unwrap_or_else(|| "-".into())
            };
            let round_trip = c
                .client_ms
                .as_ref()
                .map(|s| ms_value(s.p95))
                .unwrap_or_else(|| "-".into());
            rows.push_str(&format!(
                "| {} | {} ms | {} | {} | {} | {:.0}% | {} | {round_trip} |\n",
                cell(&check_name(c)),
                limit,
                spread(|s| s.p95),
                spread(|s| s.p50),
                spread(|s| s.p99),
                100.0 * share,
                if share > 1.0 { "**OVER**" } else { "target" }
            ));
        }
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "| Page | Budget | Measured p95 | p50 | p99 | Used | | Round trip p95 |\n\
         |---|---|---|---|---|---|---|---|\n{rows}"
    )
}

/// A row per buffer budget of the check (absolute, or relative to another read path's).
fn buffer_rows(c: &CheckResult) -> Vec<String> {
    budget_parts(&c.budget, c.budget_used.as_ref())
        .into_iter()
        .filter_map(|p| {
            let (budget, measured, share) = match p {
                BudgetPart::WarmMs { .. } => return None,
                BudgetPart::Buffers { limit, share } => (
                    format!("{} buf", crate::verdict::group(limit)),
                    format!("{} buf", buffers(c)),
                    share,
                ),
                BudgetPart::Relative { ratio, max, to } => {
                    (format!("{max}× {to}"), format!("{ratio:.1}×"), ratio / max)
                }
            };
            Some(format!(
                "| {} | {} | {} | {:.0}% |\n",
                cell(&check_name(c)),
                cell(&budget),
                measured,
                100.0 * share
            ))
        })
        .collect()
}

/// Text in a table cell: one line, a `|` escaped.
fn cell(s: &str) -> String {
    text(s).replace('|', "\\|")
}

/// Text in a list item: one line, nothing read as markup that plancheck did not mean.
fn text(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An identifier as code, so that `_` and `*` in it are not emphasis.
fn code(s: &str) -> String {
    if s.contains('`') {
        cell(s)
    } else {
        format!("`{}`", s.replace('|', "\\|"))
    }
}
