//! The pass/fail table people read, fitted to a width, and the sections under it.
//!
//! Fitting: the reference project's names alone (read path, scope, required index) take 55
//! columns, and no identifier may be broken across lines (an index name must stay copyable). So
//! the table does not squeeze cells: it tries layouts from the most detailed to the most compact
//! ([`LAYOUTS`]) and takes the first whose cells fit the width on one line each, headers wrapped
//! at spaces. What a compact layout leaves out of the cells is said under the table, in full:
//! the plan lines used instead under `why:`, the budgets and figures in a section of their own.
//! When even the most compact layout is too wide for its longest names, each check is a line
//! (`read-path [scope]  result  required index`), and no line is wider than asked unless one
//! name alone is.
//!
//! The checks come failures first, then warnings, then passes ([`super::reading_order`]); a run
//! that did not pass says the passes' figures in one line, so the first `why:` comes soon.

use comfy_table::{
    Cell, Color, ColumnConstraint, ContentArrangement, Table, Width, presets::UTF8_FULL_CONDENSED,
};
use unicode_width::UnicodeWidthStr;

use super::{
    Outcome, Report, Style, budget_used, buffers, check_name, failing_plan, ms, outcome,
    probe_plan, summary_line, wrap,
};
use crate::verdict::{CheckResult, Verdict};

/// What the table shows in its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// The access paths used instead as the plan names them (`Bitmap Index Scan using x on t`);
    /// else the index names alone, the plan lines under `why:`.
    full_instead: bool,
    /// The `budget used` column; else the budgets under the table.
    budget: bool,
    figures: Figures,
    /// Leave out the `used instead` column when no check used anything instead.
    drop_empty_instead: bool,
    /// The `used instead` column at all; else what was used instead is said under `why:`
    /// only, where only failures are.
    instead_column: bool,
}

/// How the warm time and the shared buffers are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figures {
    /// A column each.
    Columns,
    /// One column: `0.05 ms · 68`.
    Merged,
    /// Under the table, with the budgets.
    Under,
}

/// From the most detailed to the most compact. At 120 columns (a CI log) the reference project
/// gets the second; in a 100-column terminal the fourth; in 80 columns the seventh. Where a
/// check used another index and its `used instead` cell does not fit beside the figures, the
/// column goes (what was used instead is said under `why:`, where only failures are) before
/// the figures do: the last three.
const LAYOUTS: [Layout; 10] = [
    layout(true, true, Figures::Columns, false, true),
    layout(true, false, Figures::Columns, false, true),
    layout(false, false, Figures::Columns, false, true),
    layout(false, false, Figures::Columns, true, true),
    layout(false, false, Figures::Merged, false, true),
    layout(false, false, Figures::Merged, true, true),
    layout(false, false, Figures::Under, true, true),
    layout(false, false, Figures::Columns, true, false),
    layout(false, false, Figures::Merged, true, false),
    layout(false, false, Figures::Under, true, false),
];

/// A [`Layout`], its fields in their order.
const fn layout(
    full_instead: bool,
    budget: bool,
    figures: Figures,
    drop_empty_instead: bool,
    instead_column: bool,
) -> Layout {
    Layout {
        full_instead,
        budget,
        figures,
        drop_empty_instead,
        instead_column,
    }
}

/// A column of the table, as text.
struct Column {
    header: String,
    /// The header is never wrapped (`before → after migration` reads as one phrase).
    header_whole: bool,
    cells: Vec<String>,
}

impl Column {
    fn plain(header: &str, cells: impl Iterator<Item = String>) -> Column {
        Column {
            header: header.into(),
            header_whole: false,
            cells: cells.collect(),
        }
    }

    /// The parts of the header that may not be broken: its words, or all of it.
    fn header_words(&self) -> Vec<&str> {
        if self.header_whole {
            vec![self.header.as_str()]
        } else {
            self.header.split_whitespace().collect()
        }
    }

    /// Narrowest width that keeps every cell on one line, the header wrapped at spaces.
    fn min_width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.width())
            .chain(self.header_words().into_iter().map(UnicodeWidthStr::width))
            .max()
            .unwrap_or(0)
    }

    /// Its longest word, header included: narrower, a word would be broken.
    fn longest_word(&self) -> usize {
        self.cells
            .iter()
            .flat_map(|c| c.split_whitespace())
            .chain(self.header_words())
            .map(UnicodeWidthStr::width)
            .max()
            .unwrap_or(0)
    }
}

/// The width of a table of these columns at these content widths: a border and a space either
/// side of each cell.
fn table_width(widths: impl Iterator<Item = usize>) -> usize {
    widths.map(|w| w + 3).sum::<usize>() + 1
}

/// The pass/fail table and the sections under it, ending with the summary line.
pub(super) fn table(report: &Report, style: Style) -> String {
    let mut fitted = None;
    for layout in LAYOUTS {
        let columns = columns(report, layout);
        if table_width(columns.iter().map(Column::min_width)) <= style.width {
            fitted = Some((layout, fixed(&columns, report, style)));
            break;
        }
    }
    let (layout, mut t) = match fitted {
        Some(fitted) => fitted,
        None => {
            let narrowest = LAYOUTS
                .into_iter()
                .min_by_key(|l| table_width(columns(report, *l).iter().map(Column::longest_word)))
                .unwrap_or(LAYOUTS[LAYOUTS.len() - 1]);
            let columns = columns(report, narrowest);
            if table_width(columns.iter().map(Column::longest_word)) > style.width {
                return listed(report, style);
            }
            (narrowest, squeezed(&columns, report, style))
        }
    };
    t.load_preset(UTF8_FULL_CONDENSED);
    if style.color {
        // plancheck has decided (`--color`, NO_COLOR, the terminal): crossterm, which draws
        // the cells' colours, must not decide again from NO_COLOR.
        crossterm::style::Colored::set_ansi_color_disabled(false);
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    let mut out = t.to_string();
    out.push('\n');
    out.push_str(&sections(report, layout, style));
    out
}

/// For a width no table fits: a line per check, `read-path [scope]  result  required index`,
/// aligned under a heading. Where a line is too wide for the width, every check that did not
/// pass has its index on the next line, four columns in, and a pass is its name and verdict
/// alone (narrower still, a line is wrapped at spaces: a name is never broken). Under it, the
/// sections as under the most compact table: the figures and budgets, and what was used
/// instead under `why:`.
fn listed(report: &Report, style: Style) -> String {
    let heading = [
        "read path [scope]".to_string(),
        if report.before.is_some() {
            "before → after migration".to_string()
        } else {
            "result".to_string()
        },
        "required index".to_string(),
    ];
    let rows: Vec<[String; 3]> = report
        .checks
        .iter()
        .map(|c| [check_name(c), result(report, c), required(c)])
        .collect();
    let width = |i: usize| {
        rows.iter()
            .chain([&heading])
            .map(|r| r[i].width())
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let one_line = widths[0] + 2 + widths[1] + 2 + widths[2] <= style.width;
    let two_columns = widths[0] + 2 + widths[1] <= style.width;
    // `shown` is the result as printed (in its colour, which takes no columns).
    let line = |cells: &[String; 3], shown: &str, pass: bool| {
        let name = format!("{}{}", cells[0], " ".repeat(widths[0] - cells[0].width()));
        if one_line {
            let result = format!("{shown}{}", " ".repeat(widths[1] - cells[1].width()));
            format!("{name}  {result}  {}", cells[2])
        } else if two_columns && pass {
            format!("{name}  {shown}")
        } else if two_columns {
            format!("{name}  {shown}\n    {}", cells[2])
        } else if pass {
            wrap::hanging(&format!("{} {shown}", cells[0]), 0, 4, style.width)
        } else {
            wrap::hanging(
                &format!("{} {shown} {}", cells[0], cells[2]),
                0,
                4,
                style.width,
            )
        }
    };
    let mut out = String::new();
    // The heading says where the index is: on its line, or under a check that did not pass.
    out.push_str(line(&heading, &heading[1], false).trim_end());
    out.push('\n');
    for (c, cells) in report.checks.iter().zip(&rows) {
        let shown = paint(report, c, &cells[1], style.color);
        out.push_str(&line(cells, &shown, c.verdict.is_pass()));
        out.push('\n');
    }
    out.push_str(&sections(report, LAYOUTS[LAYOUTS.len() - 1], style));
    out
}

/// The columns a layout shows; the result is the fourth.
fn columns(report: &Report, layout: Layout) -> Vec<Column> {
    let checks = &report.checks;
    let migration = report.before.is_some();
    let mut cols = vec![
        Column::plain("read path", checks.iter().map(|c| c.read_path.clone())),
        Column::plain("scope", checks.iter().map(|c| c.scope.clone())),
        Column::plain("required index", checks.iter().map(required)),
        Column {
            header_whole: migration,
            ..Column::plain(
                if migration {
                    "before → after migration"
                } else {
                    "result"
                },
                checks.iter().map(|c| result(report, c)),
            )
        },
    ];
    match layout.figures {
        Figures::Columns => {
            cols.push(Column::plain(
                "warm p50",
                checks.iter().map(|c| ms(c.warm_ms)),
            ));
            cols.push(Column::plain("buffers", checks.iter().map(buffers)));
        }
        Figures::Merged => cols.push(Column::plain(
            "warm p50 · buffers",
            checks.iter().map(|c| match (c.warm_ms, c.shared_buffers) {
                (None, None) => "-".into(),
                _ => format!("{} · {}", ms(c.warm_ms), buffers(c)),
            }),
        )),
        Figures::Under => {}
    }
    let instead: Vec<String> = checks
        .iter()
        .map(|c| {
            if layout.full_instead {
                full_instead(c)
            } else {
                compact_instead(c)
            }
        })
        .collect();
    if layout.instead_column && !(layout.drop_empty_instead && instead.iter().all(String::is_empty))
    {
        cols.push(Column::plain("used instead", instead.into_iter()));
    }
    if layout.budget {
        cols.push(Column::plain("budget used", checks.iter().map(budget_used)));
    }
    cols
}

/// A table whose cells all fit on one line: each column as wide as its widest cell, what is
/// left of the width given to headers that would otherwise wrap.
fn fixed(columns: &[Column], report: &Report, style: Style) -> Table {
    let mut widths: Vec<usize> = columns.iter().map(Column::min_width).collect();
    let mut slack = style
        .width
        .saturating_sub(table_width(widths.iter().copied()));
    for (w, c) in widths.iter_mut().zip(columns) {
        let wanted = c.header.width().saturating_sub(*w).min(slack);
        *w += wanted;
        slack -= wanted;
    }
    let mut t = build(columns, report);
    t.set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(clamp(style.width));
    for (column, w) in t.column_iter_mut().zip(widths) {
        column.set_constraint(ColumnConstraint::Absolute(Width::Fixed(clamp(w + 2))));
    }
    t
}

/// A table too wide for the width: cells wrapped at spaces as far as their longest words allow.
fn squeezed(columns: &[Column], report: &Report, style: Style) -> Table {
    let mut t = build(columns, report);
    t.set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(clamp(style.width));
    for (column, c) in t.column_iter_mut().zip(columns) {
        column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(clamp(
            c.longest_word() + 2,
        ))));
    }
    t
}

fn clamp(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// The table of these columns, each check's result cell (the fourth) in its colour
/// ([`colour`]); the colour is drawn only when the table's styling is on.
fn build(columns: &[Column], report: &Report) -> Table {
    let mut t = Table::new();
    t.set_header(columns.iter().map(|c| Cell::new(&c.header)));
    for (i, check) in report.checks.iter().enumerate() {
        t.add_row(columns.iter().enumerate().map(|(n, c)| {
            let cell = Cell::new(&c.cells[i]);
            if n == RESULT_COLUMN {
                cell.fg(colour(report, check))
            } else {
                cell
            }
        }));
    }
    t
}

/// Where the result is among the columns: after read path, scope and required index.
const RESULT_COLUMN: usize = 3;

/// The required index, with the others the scope accepts.
fn required(c: &CheckResult) -> String {
    if c.accepted.is_empty() {
        return c.index_shown().to_string();
    }
    let others: Vec<&str> = c
        .accepted
        .iter()
        .filter(|a| **a != c.required_index)
        .map(String::as_str)
        .collect();
    format!("{} (or {})", c.required_index, others.join(", "))
}

/// The verdict, `(warning)` when it does not fail the run; with a migration, before → after.
fn result(report: &Report, c: &CheckResult) -> String {
    let now = if c.is_warning(report.require) {
        format!("{} (warning)", c.verdict)
    } else {
        c.verdict.to_string()
    };
    match (report.before.is_some(), report.before_of(c)) {
        (true, Some(b)) => format!("{} → {now}", b.verdict),
        (true, None) => format!("(not run) → {now}"),
        (false, _) => now,
    }
}

/// Green for a pass, yellow for a warning, red for what fails the run: the terminal's own
/// palette (its colours 2, 3 and 1), as [`paint`] gives them outside the table.
fn colour(report: &Report, c: &CheckResult) -> Color {
    match outcome(report, c) {
        Outcome::Pass => Color::DarkGreen,
        Outcome::Warning | Outcome::NoStatistics => Color::DarkYellow,
        Outcome::Failure | Outcome::Error => Color::DarkRed,
    }
}

/// Green for a pass, yellow for a warning, red for what fails the run, in the terminal's own
/// palette.
fn paint(report: &Report, c: &CheckResult, text: &str, on: bool) -> String {
    if !on {
        return text.to_string();
    }
    let colour = match outcome(report, c) {
        Outcome::Pass => anstyle::AnsiColor::Green,
        Outcome::Warning | Outcome::NoStatistics => anstyle::AnsiColor::Yellow,
        Outcome::Failure | Outcome::Error => anstyle::AnsiColor::Red,
    };
    let s = anstyle::Style::new().fg_color(Some(colour.into()));
    format!("{s}{text}{s:#}")
}

/// What was used instead, as the plan names it. Nothing for an error: it ran no plan, and its
/// message (with the source snippet) is under `why:`, where it is laid out whole.
fn full_instead(c: &CheckResult) -> String {
    match c.verdict {
        Verdict::Error => String::new(),
        _ => c.instead.join("; "),
    }
}

/// What was used instead, compactly: the index an index scan read (`posts_author_idx`), a scan
/// of no index as the plan names it (`Seq Scan on posts`). Nothing for an error, whose message
/// is under `why:`.
fn compact_instead(c: &CheckResult) -> String {
    if c.verdict == Verdict::Error {
        return String::new();
    }
    let mut shown: Vec<&str> = Vec::new();
    for line in &c.instead {
        // `Index Scan using NAME on REL` (an index's name has no space unless quoted, and a
        // quoted name is shown whole by the plan line under `why:`).
        let text = match line.split_once(" using ") {
            Some((_, rest)) => rest.split(" on ").next().unwrap_or(rest),
            None => line.split(" (").next().unwrap_or(line),
        };
        if !shown.contains(&text) {
            shown.push(text);
        }
    }
    shown.join(", ")
}

/// What follows the table: what the cells left out, notes, index problems, why each check
/// failed, plans (`--explain`), declared settings, and the summary line.
fn sections(report: &Report, layout: Layout, style: Style) -> String {
    let mut out = String::new();
    out.push_str(&under_the_table(report, layout, style));
    let notes: Vec<String> = report
        .checks
        .iter()
        .flat_map(|c| {
            c.notes
                .iter()
                .map(move |n| wrap::hanging(&format!("{}: {n}", check_name(c)), 2, 4, style.width))
        })
        .collect();
    if !notes.is_empty() {
        out.push_str("\nnotes:\n");
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
    let past: Vec<String> = report
        .checks
        .iter()
        .filter_map(|c| {
            let text = format!("{}: {}", check_name(c), super::past_policies(c)?);
            Some(wrap::hanging(&text, 2, 4, style.width))
        })
        .collect();
    if !past.is_empty() {
        out.push_str("\nrow-level security:\n");
        out.push_str(&past.join("\n"));
        out.push('\n');
    }
    if !report.lint.is_empty() {
        out.push_str("\nindexes:\n");
        out.push_str(&wrap::lines(
            &super::lint_findings(&report.lint),
            style.width,
        ));
    }
    out.push_str(&why_section(report, layout, style));
    if report.explain {
        out.push_str(&plans(report));
    }
    out.push_str(&declared_settings(report, style));
    if let Some(hold) = &report.migration_hold {
        let hold = super::migration::hold(hold);
        out.push_str(&format!(
            "\n{}\n",
            wrap::labelled("migration:", &hold, 0, style.width)
        ));
    }
    out.push_str(&format!(
        "\n{}\n",
        wrap::hanging(&summary_line(report), 0, 2, style.width)
    ));
    out
}

/// The figures a compact layout left out of the cells, a line per check: the budgets (and the
/// warm time and buffers, when they have no column either), aligned, wrapped to the width. In
/// a run where a check did not pass, the passes' lines are one line (how many passed, the range
/// of their figures, the budget one of them came nearest), so that a reader reaches `why:`
/// soon.
fn under_the_table(report: &Report, layout: Layout, style: Style) -> String {
    let figures = layout.figures == Figures::Under;
    if layout.budget && !figures {
        return String::new();
    }
    let passes: Vec<&CheckResult> = report
        .checks
        .iter()
        .filter(|c| c.verdict.is_pass())
        .collect();
    let condensed = passes.len() > 1 && passes.len() < report.checks.len();
    let mut rows: Vec<(String, String)> = report
        .checks
        .iter()
        .filter(|c| !(c.verdict.is_pass() && condensed))
        .filter_map(|c| {
            let budget = budget_used(c);
            let text = match (figures, budget.is_empty()) {
                (false, true) => return None,
                (false, false) => budget,
                (true, true) => measured(c),
                (true, false) => format!("{}; {budget}", measured(c)),
            };
            Some((format!("{}:", check_name(c)), text))
        })
        .collect();
    if condensed {
        rows.extend(passes_in_one(&passes, figures));
    }
    if rows.is_empty() {
        return String::new();
    }
    let budgets = report.checks.iter().any(|c| c.budget_used.is_some());
    let on = time_budget_basis(report);
    let heading = match (figures, budgets) {
        (true, true) => format!("warm p50, buffers; budget used{on}:"),
        (true, false) => "warm p50, buffers:".to_string(),
        (false, _) => format!("budget used{on}:"),
    };
    format!(
        "\n{}\n{}",
        wrap::hanging(&heading, 0, 2, style.width),
        aligned(&rows, style.width)
    )
}

/// A check's warm p50 and shared buffers: `0.13 ms, 191 buf`.
fn measured(c: &CheckResult) -> String {
    match (c.warm_ms, c.shared_buffers) {
        (None, None) => "not measured".to_string(),
        _ => format!("{}, {} buf", ms(c.warm_ms), buffers(c)),
    }
}

/// The passes' figures in one row: `12 passed:` with the range of their warm p50 and buffers
/// (when `figures`), and the share of a budget the nearest to one used; none when there is
/// nothing to say.
fn passes_in_one(passes: &[&CheckResult], figures: bool) -> Option<(String, String)> {
    let mut parts = Vec::new();
    if figures {
        // `0.03 to 22.7 ms`: the lowest and the highest, as the table shows each, one unit.
        let range = |values: Vec<f64>, show: &dyn Fn(f64) -> String, unit: &str| {
            let lo = show(values.iter().copied().fold(f64::INFINITY, f64::min));
            let hi = show(values.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            match values.len() {
                0 => None,
                _ if lo == hi => Some(format!("{lo} {unit}")),
                _ => Some(format!("{lo} to {hi} {unit}")),
            }
        };
        let warm = range(
            passes
                .iter()
                .filter_map(|c| c.warm_ms.map(|w| w.p50))
                .collect(),
            &|v| super::ms_value(v).trim_end_matches(" ms").to_string(),
            "ms",
        );
        let read = range(
            passes.iter().filter_map(|c| c.shared_buffers).collect(),
            &crate::verdict::group,
            "buf",
        );
        let measured: Vec<String> = warm.into_iter().chain(read).collect();
        if !measured.is_empty() {
            parts.push(measured.join(", "));
        }
    }
    // The budget a pass came nearest, by the share of it used.
    let nearest = passes
        .iter()
        .flat_map(|c| super::budget_parts(c).into_iter().map(move |p| (c, p)))
        .max_by(|(_, a), (_, b)| a.share().total_cmp(&b.share()));
    if let Some((c, part)) = nearest {
        parts.push(format!(
            "within their budgets (the nearest: {}, {})",
            check_name(c),
            part.text()
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some((format!("{} passed:", passes.len()), parts.join("; ")))
}

/// What a time budget is held to, for the heading: the warm p50, and of how many runs after how
/// many discarded when every check with a time budget ran alike. Empty when no check has one.
fn time_budget_basis(report: &Report) -> String {
    let runs: Vec<(usize, Option<u32>)> = report
        .checks
        .iter()
        .filter(|c| c.budget.warm_ms.is_some())
        .filter_map(|c| c.warm_ms.map(|w| (w.runs, c.discarded)))
        .collect();
    let Some(first) = runs.first() else {
        return String::new();
    };
    match first {
        (n, Some(d)) if runs.iter().all(|r| r == first) => {
            let of = if *n == 1 {
                "1 run".to_string()
            } else {
                format!("{n} runs")
            };
            let after = if *d == 0 {
                String::new()
            } else {
                format!(" after {d} discarded")
            };
            format!(" (time: warm p50 of {of}{after})")
        }
        _ => " (time: warm p50 of the measured runs)".to_string(),
    }
}

/// `  name:   text` lines, the texts one under the other, each wrapped at spaces to the width
/// (never inside a word) with its continuation under its first word; where that leaves the
/// texts too little room, each text follows its name and continues four columns in.
fn aligned(rows: &[(String, String)], width: usize) -> String {
    let names = rows.iter().map(|(n, _)| n.width()).max().unwrap_or(0);
    let indent = 2 + names + 2;
    let mut out = String::new();
    for (name, text) in rows {
        if width >= indent + 30 {
            let wrapped = wrap::hanging(text, indent, indent, width);
            out.push_str("  ");
            out.push_str(name);
            out.push_str(&" ".repeat(indent - 2 - name.width()));
            out.push_str(&wrapped[indent..]);
        } else {
            out.push_str(&wrap::hanging(&format!("{name} {text}"), 2, 4, width));
        }
        out.push('\n');
    }
    out
}

/// A line per check that did not pass, saying why; under it, what was used instead as the plan
/// names it when the table showed it compactly and the message does not say it already.
fn why_section(report: &Report, layout: Layout, style: Style) -> String {
    let mut lines = Vec::new();
    let mut shortened = false;
    for c in report.checks.iter().filter(|c| !c.verdict.is_pass()) {
        let verdict = paint(report, c, c.verdict.as_str(), style.color);
        // The short form, unless --explain asks for the whole reasoning.
        let brief = super::brief::of(c, report.require);
        let why = if report.explain {
            &c.message
        } else {
            shortened |= brief.why != c.message;
            &brief.why
        };
        lines.push(wrap::hanging(
            &format!("{} {verdict}: {why}", check_name(c)),
            2,
            4,
            style.width,
        ));
        // What was used instead, unless a cell showed it whole or the reason says it already.
        let full = c.instead.join("; ");
        let in_cell = layout.instead_column && (layout.full_instead || compact_instead(c) == full);
        if !in_cell
            && c.verdict != Verdict::Error
            && !full.is_empty()
            && !c.instead.iter().all(|i| why.contains(i.as_str()))
        {
            lines.push(wrap::labelled("used instead:", &full, 4, style.width));
        }

        // The plan against its baseline, as a reviewer reads a diff.
        if c.plan_changed {
            let shape = format!(
                "plan shape, {} against now:",
                crate::model::baseline_path(&c.read_path, &c.scope)
            );
            lines.push(wrap::hanging(&shape, 4, 6, style.width));
            for d in &c.plan_diff {
                // A plan line: under its own indentation when it must wrap.
                let depth = d.len() - d.trim_start_matches([' ', '-', '+']).len();
                lines.push(wrap::hanging(d, 6, 6 + depth + 2, style.width));
            }
        }
        if let Some(fix) = &brief.fix {
            lines.push(wrap::labelled("fix:", fix, 4, style.width));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    if shortened {
        lines.push(wrap::hanging(
            "(--explain: the whole reasoning, with costs and proofs, and the plans)",
            2,
            3,
            style.width,
        ));
    }
    format!("\nwhy:\n{}\n", lines.join("\n"))
}

/// `--explain`: the plan each failing verdict is about, and the re-plan through the index that
/// a `not-chosen` message quotes.
fn plans(report: &Report) -> String {
    let mut out = String::new();
    for c in report.checks.iter().filter(|c| !c.verdict.is_pass()) {
        if let Some((label, plan)) = failing_plan(c) {
            out.push_str(&format!(
                "\n{} {}, {label} plan:\n{}",
                check_name(c),
                c.verdict,
                super::tree::render_tree(plan)
            ));
        }
        if let Some((title, plan)) = probe_plan(c) {
            out.push_str(&format!(
                "\n{} {title}:\n{}",
                check_name(c),
                super::tree::render_tree(plan)
            ));
        }
    }
    out
}

/// What the checks' scopes applied (declared settings, and what their setup changed), a line
/// per scope that applied any: a reader must see what the plans were made under.
fn declared_settings(report: &Report, style: Style) -> String {
    let lines = super::applied_lines(report);
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nsettings applied (settings = {{…}}, and what setup changed):\n{}",
        lines
            .iter()
            .map(|l| format!("{}\n", wrap::hanging(l, 2, 4, style.width)))
            .collect::<String>()
    )
}

#[cfg(test)]
mod basis_tests {
    use super::*;
    use crate::verdict::test_support::measured;
    use crate::verdict::{Spread, Verdict};

    fn report(checks: Vec<CheckResult>) -> Report {
        Report {
            server_version: "15".into(),
            checks,
            require: crate::verdict::Require::Chosen,
            lint: Vec::new(),
            explain: false,
            before: None,
            role_warnings: Vec::new(),
            locations: Default::default(),
            not_run: 0,
            migration_rewritten: Vec::new(),
            index_changes: Vec::new(),
            migration_hold: None,
            started: None,
        }
    }

    fn timed(runs: usize, discarded: Option<u32>) -> CheckResult {
        let mut c = measured("page", Verdict::Pass, 1.0, 10.0);
        c.budget.warm_ms = Some(50.0);
        c.warm_ms = Spread::of(&vec![1.0; runs]);
        c.discarded = discarded;
        c
    }

    #[test]
    fn the_budget_heading_says_what_a_time_budget_is_held_to() {
        assert_eq!(
            time_budget_basis(&report(vec![timed(5, Some(2)), timed(5, Some(2))])),
            " (time: warm p50 of 5 runs after 2 discarded)"
        );
        assert_eq!(
            time_budget_basis(&report(vec![timed(1, Some(0))])),
            " (time: warm p50 of 1 run)"
        );
        // Checks that ran differently, or a saved run that kept no warm-up count.
        for checks in [
            vec![timed(5, Some(2)), timed(60, Some(8))],
            vec![timed(5, None)],
        ] {
            assert_eq!(
                time_budget_basis(&report(checks)),
                " (time: warm p50 of the measured runs)"
            );
        }
        // No time budget: nothing to say.
        let mut untimed = timed(5, Some(2));
        untimed.budget.warm_ms = None;
        assert_eq!(time_budget_basis(&report(vec![untimed])), "");
    }
}
