//! Markdown for a CI job's summary (`$GITHUB_STEP_SUMMARY`) or a pull-request comment: the
//! summary line, the evidence table `| Page | Index | Used | Warm |` (a row per read path and
//! scope), the budgets table `| Page | Budget | p50 | Used |` when budgets are set (a row per
//! budget), and why each check that did not pass failed.

use super::{BudgetPart, Report, budget_parts, buffers, check_name, ms, summary_line};
use crate::verdict::CheckResult;

pub(super) fn markdown(report: &Report) -> String {
    let mut out = format!("## plancheck\n\n{}\n", summary_line(report));
    out.push_str("\n| Page | Index | Used | Warm |\n|---|---|---|---|\n");
    for c in &report.checks {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            cell(&check_name(c)),
            code(&c.required_index),
            cell(&used(report, c)),
            ms(c.warm_ms)
        ));
    }
    let budgets: Vec<String> = report.checks.iter().flat_map(budget_rows).collect();
    if !budgets.is_empty() {
        out.push_str("\n| Page | Budget | p50 | Used |\n|---|---|---|---|\n");
        out.push_str(&budgets.concat());
    }
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
    let applied = super::applied_lines(report);
    if !applied.is_empty() {
        out.push_str("\n**Settings applied**\n\n");
        for line in applied {
            out.push_str(&format!("- {}\n", text(&line)));
        }
    }
    if !report.lint.is_empty() {
        out.push_str("\n**Index problems**\n\n");
        for f in &report.lint {
            out.push_str(&format!("- {}: {}\n", text(&f.read_path), text(&f.problem)));
        }
    }
    out
}

/// The `Used` cell: `yes` for a pass; else the verdict, `(warning)` when it does not fail the
/// run, and what was used instead; with a migration, the verdict before it first.
fn used(report: &Report, c: &CheckResult) -> String {
    let mut now = if c.verdict.is_pass() {
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

/// A row per budget of the check: the limit, the measured median, and the share used.
fn budget_rows(c: &CheckResult) -> Vec<String> {
    budget_parts(&c.budget, c.budget_used.as_ref())
        .into_iter()
        .map(|p| {
            let (budget, p50, share) = match p {
                BudgetPart::WarmMs { limit, share } => {
                    (format!("{limit} ms"), ms(c.warm_ms), share)
                }
                BudgetPart::Buffers { limit, share } => (
                    format!("{} buf", crate::verdict::group(limit)),
                    format!("{} buf", buffers(c)),
                    share,
                ),
                BudgetPart::Relative { ratio, max, to } => {
                    (format!("{max}× {to}"), format!("{ratio:.1}×"), ratio / max)
                }
            };
            format!(
                "| {} | {} | {} | {:.0}% |\n",
                cell(&check_name(c)),
                cell(&budget),
                p50,
                100.0 * share
            )
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
