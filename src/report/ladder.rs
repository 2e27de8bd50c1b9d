//! `plancheck ladder`'s report: the ladder table (a performance page's columns: Active members, Offered,
//! Served, Budget, p50, p95, p99, Late p95), the per-page breakdown (p95 at each rung), the
//! shoulder, and the setup the figures were measured with; as a table or as JSON.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ContentArrangement, Table};
use serde::Serialize;

use super::{Style, ms_value};

fn group(n: u64) -> String {
    crate::verdict::group(n as f64)
}
use crate::verdict::ladder::{Ladder, PageName, RungResult, Shoulder};

/// The server does not list the statement just prepared for the ladder.
pub const NOT_LISTED: &str = "the server does not list the read path's prepared statement";

/// How the rungs were measured, for the report's setup lines.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    pub server_version: String,
    /// The sessions of the pool.
    pub pool: usize,
    /// When `--pool` was cut to leave the application room: what was asked, and the server's
    /// free connection slots.
    pub pool_cut: Option<PoolCut>,
    /// `fixed` or `poisson`.
    pub arrivals: &'static str,
    /// Each member's interval between requests, seconds, when rungs are members.
    pub interval_s: Option<f64>,
    pub warmup_s: f64,
    pub rung_s: f64,
    pub min_requests: u64,
    pub pages: Vec<PageName>,
}

/// `--pool` cut to leave the application room, as `check --jobs` is.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PoolCut {
    pub asked: usize,
    pub free_slots: usize,
}

/// The whole ladder report.
#[derive(Debug, Clone, Serialize)]
pub struct LadderReport {
    #[serde(flatten)]
    pub setup: Setup,
    #[serde(flatten)]
    pub ladder: Ladder,
}

/// A budget as written: `80 ms`, `0.5 ms`.
fn budget(v: Option<f64>) -> String {
    match v {
        Some(b) if b.fract() == 0.0 => format!("{b:.0} ms"),
        Some(b) => format!("{b} ms"),
        None => "-".into(),
    }
}

fn ms(v: Option<f64>) -> String {
    v.map(ms_value).unwrap_or_else(|| "-".into())
}

fn rate(r: f64) -> String {
    if r >= 10.0 || (r - r.round()).abs() < 0.05 {
        format!("{}/s", group(r.round() as u64))
    } else {
        format!("{r:.1}/s")
    }
}

fn shows(s: Shoulder) -> &'static str {
    match s {
        Shoulder::Errors => "requests failed",
        Shoulder::Unserved => "served below offered",
        Shoulder::Growing => "the queue kept growing",
        Shoulder::OverBudget => "p95 over its budget",
    }
}

/// The rung as its column heading names it: members, or the rate.
fn rung_name(r: &RungResult) -> String {
    match r.asked.members {
        Some(m) => group(m),
        None => rate(r.asked.rate),
    }
}

fn verdict(r: &RungResult) -> String {
    let mut v = match (r.budget_ms, r.limit, r.over_budget) {
        (None, ..) => String::new(),
        (Some(_), true, _) => "limit".to_string(),
        (Some(_), false, false) => "target".to_string(),
        (Some(_), false, true) => "OVER".to_string(),
    };
    if let Some(p) = r.partial {
        if !v.is_empty() {
            v.push_str(", ");
        }
        v.push_str(match p {
            "stopped" => "partial: stopped",
            "max_seconds" => "partial: --max-seconds",
            _ => "partial: sessions lost",
        });
    }
    v
}

/// A rung's cells after its name: Offered, Served, Errors, Budget, p50, p95, p99, Late p95,
/// and what its budget is.
fn cells(r: &RungResult) -> [String; 9] {
    [
        rate(r.offered),
        rate(r.served),
        group(r.errors),
        budget(r.budget_ms),
        ms(r.figures.p50_ms),
        ms(r.figures.p95_ms),
        ms(r.figures.p99_ms),
        ms(r.figures.late_p95_ms),
        verdict(r),
    ]
}

fn table(style: Style) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(style.width).unwrap_or(u16::MAX));
    t.force_no_tty();
    t
}

/// The report as a table, with the per-page breakdown and the shoulder under it.
pub fn text(report: &LadderReport, style: Style) -> String {
    let l = &report.ladder;
    let s = &report.setup;
    let members = l.rungs.iter().any(|r| r.asked.members.is_some());
    let mut t = table(style);
    let mut header = Vec::new();
    if members {
        header.push("Active members");
    }
    header.extend([
        "Offered", "Served", "Errors", "Budget", "p50", "p95", "p99", "Late p95", "",
    ]);
    t.set_header(header);
    for r in &l.rungs {
        let mut row = Vec::new();
        if members {
            row.push(r.asked.members.map(group).unwrap_or_default());
        }
        row.extend(cells(r));
        t.add_row(row);
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        if i + 1 < if members { 10 } else { 9 } {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = t.to_string();
    out.push('\n');
    // The per-page breakdown: a row a page, its share, its p95 at each rung.
    let mut p = table(style);
    let mut header = vec!["Page".to_string(), "Share".to_string()];
    header.extend(l.rungs.iter().map(rung_name));
    p.set_header(header);
    for (i, page) in s.pages.iter().enumerate() {
        let mut row = vec![
            format!("{} [{}]", page.read_path, page.scope),
            format!("{:.0}%", page.share * 100.0),
        ];
        row.extend(
            l.rungs
                .iter()
                .map(|r| ms(r.pages.get(i).and_then(|p| p.figures.p95_ms))),
        );
        p.add_row(row);
    }
    for (i, c) in p.column_iter_mut().enumerate() {
        if i >= 1 {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    out.push_str("\np95 of each page at each rung");
    out.push_str(if members {
        " (members):\n"
    } else {
        " (requests a second):\n"
    });
    out.push_str(&p.to_string());
    out.push('\n');
    out.push('\n');
    out.push_str(&summary(report));
    out
}

/// The shoulder, the errors, and the setup, as lines.
pub fn summary(report: &LadderReport) -> String {
    summary_quoting(report, &|s: &str| s.to_string())
}

/// [`summary`], the server's words in it (its version, a request's error) as `quote` gives them.
fn summary_quoting(report: &LadderReport, quote: &dyn Fn(&str) -> String) -> String {
    let l = &report.ladder;
    let s = &report.setup;
    let mut out = String::new();
    match l.shoulder {
        Some(i) => {
            let r = &l.rungs[i];
            let why: Vec<&str> = r.shows.iter().map(|s| shows(*s)).collect();
            out.push_str(&format!(
                "shoulder: {} ({} offered): {}\n",
                match r.asked.members {
                    Some(m) => format!("{} members", group(m)),
                    None => format!("the rung at {}", rate(r.asked.rate)),
                },
                rate(r.offered),
                why.join(", ")
            ));
        }
        None => out.push_str(&format!(
            "no shoulder up to {} offered: every rung served what was offered, without an \
             error, its queue steady{}\n",
            l.rungs.last().map(|r| rate(r.offered)).unwrap_or_default(),
            if l.rungs.iter().any(|r| r.budget_ms.is_some()) {
                ", under its budget"
            } else {
                ""
            }
        )),
    }
    for r in &l.rungs {
        if let Some(e) = &r.first_error {
            out.push_str(&format!(
                "errors at {}: {} (the first: {})\n",
                rung_name(r),
                group(r.errors),
                quote(e)
            ));
        }
        if r.sessions_replaced > 0 {
            out.push_str(&format!(
                "sessions replaced at {}: {} (the first because {})\n",
                rung_name(r),
                group(r.sessions_replaced),
                replaced_because(r.replaced_because)
            ));
        }
    }
    out.push_str(&format!(
        "setup: PostgreSQL {}; a pool of {} sessions{}; arrivals {} ({}), latency from the \
         scheduled start; each rung's first {:.0} s discarded, then measured for at least {:.0} \
         s and {} requests, until the second half of the window is no later than twice the \
         first (late p95, plus 1 ms)\n",
        quote(&s.server_version),
        s.pool,
        pool_cut(s.pool_cut),
        s.arrivals,
        match s.interval_s {
            Some(i) => format!("each member every {i} s"),
            None => "at each rung's rate".to_string(),
        },
        s.warmup_s,
        s.rung_s,
        group(s.min_requests),
    ));
    if l.failed {
        out.push_str("failed: a rung over its budget (or with failed requests)\n");
    }
    out
}

/// Why a session was replaced after a request, from [`RungResult::replaced_because`].
fn replaced_because(why: Option<&str>) -> &'static str {
    match why {
        Some("prepared") => "a request left a statement prepared with PREPARE",
        Some("locks") => "a request left a lock held past its transaction (an advisory lock)",
        Some("cursors") => "a request left a cursor open",
        Some("listening") => "a request left the session listening on a channel",
        Some("temporary") => "a request left a temporary relation",
        Some("unseen") => {
            "what a request of the page leaves cannot all be seen: its read path calls functions \
             other than PostgreSQL's own, or sets custom settings plancheck cannot name"
        }
        _ => "what the session held after a request could not be read",
    }
}

/// The setup's words for a pool cut to leave the application room.
fn pool_cut(cut: Option<PoolCut>) -> String {
    match cut {
        Some(c) => format!(
            " (--pool {} cut: the server had {} free connection slots, a quarter of them and at \
             least 3 left to the application)",
            c.asked, c.free_slots
        ),
        None => String::new(),
    }
}

/// The report as one JSON document.
pub fn json(report: &LadderReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a ladder report serialises");
    s.push('\n');
    s
}

/// A Markdown cell of plancheck's own (a figure): `|` escaped. A name from the project goes
/// through [`super::markdown::cell`], as all text plancheck did not write.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The report as Markdown: the ladder and the per-page breakdown in a performance page's columns, the
/// shoulder and the setup under them.
pub fn markdown(report: &LadderReport) -> String {
    let l = &report.ladder;
    let s = &report.setup;
    let members = l.rungs.iter().any(|r| r.asked.members.is_some());
    let mut out = String::from("## Under load\n\n");
    if members {
        out.push_str("| Active members ");
    }
    out.push_str("| Offered | Served | Errors | Budget | p50 | p95 | p99 | Late p95 | |\n");
    if members {
        out.push_str("|---");
    }
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for r in &l.rungs {
        if members {
            out.push_str(&format!(
                "| {} ",
                r.asked.members.map(group).unwrap_or_default()
            ));
        }
        let row: Vec<String> = cells(r).iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out.push_str("\n| Page | Share |");
    for r in &l.rungs {
        out.push_str(&format!(" {} |", rung_name(r)));
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(l.rungs.len()));
    out.push('\n');
    for (i, page) in s.pages.iter().enumerate() {
        out.push_str(&format!(
            "| {} [{}] | {:.0}% |",
            super::markdown::text(&page.read_path),
            super::markdown::text(&page.scope),
            page.share * 100.0
        ));
        for r in &l.rungs {
            out.push_str(&format!(
                " {} |",
                ms(r.pages.get(i).and_then(|p| p.figures.p95_ms))
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\nEvery row of the second table is a p95; the column heading is the rung ({}).\n\n",
        if members {
            "members on the board"
        } else {
            "requests a second"
        }
    ));
    // The server's words in them (its version, a request's error) escaped as Markdown.
    for line in summary_quoting(report, &super::markdown::text).lines() {
        out.push_str(&format!("{line}  \n"));
    }
    out
}

/// The chart's size and margins, in SVG user units.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 220.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;

/// Colours of the pages' lines, in turn.
const COLOURS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart's scales: the offered rate on a linear axis, milliseconds on a logarithmic one
/// over whole decades.
struct Chart {
    x_max: f64,
    k_lo: i32,
    k_hi: i32,
}

impl Chart {
    fn of(l: &Ladder) -> Chart {
        let mut values: Vec<f64> = l
            .rungs
            .iter()
            .flat_map(|r| {
                r.pages
                    .iter()
                    .filter_map(|p| p.figures.p95_ms)
                    .chain(r.figures.p95_ms)
                    .chain(r.figures.late_p95_ms)
            })
            .filter(|v| *v > 0.0)
            .collect();
        values.sort_by(f64::total_cmp);
        // From the decade below the least value to the one above the most (at least one).
        let (k_lo, k_hi) = match (values.first(), values.last()) {
            (Some(lo), Some(hi)) => {
                let k_lo = lo.log10().floor() as i32;
                (k_lo, (hi.log10().ceil() as i32).max(k_lo + 1))
            }
            _ => (-1, 3),
        };
        let x_max = l
            .rungs
            .iter()
            .map(|r| r.offered)
            .fold(0.0, f64::max)
            .max(1.0)
            * 1.05;
        Chart { x_max, k_lo, k_hi }
    }

    fn x(&self, v: f64) -> f64 {
        LEFT + (WIDTH - LEFT - RIGHT) * v / self.x_max
    }

    fn y(&self, v: f64) -> f64 {
        let (lo, hi) = (f64::from(self.k_lo), f64::from(self.k_hi));
        let v = v.max(10f64.powi(self.k_lo)).log10();
        TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - (v - lo) / (hi - lo))
    }

    /// The axes, a grid line at each decade, and each rung's rate under the x axis.
    fn axes(&self, l: &Ladder) -> String {
        let (right, bottom) = (WIDTH - RIGHT, HEIGHT - BOTTOM);
        let mut out = format!(
            "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{bottom}\" stroke=\"black\"/>\n\
             <line x1=\"{LEFT}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\" stroke=\"black\"/>\n"
        );
        for k in self.k_lo..=self.k_hi {
            let decade = 10f64.powi(k);
            let shown = if k < 0 {
                format!("{:.*}", usize::try_from(-k).unwrap_or(0), decade)
            } else {
                format!("{decade:.0}")
            };
            let yy = self.y(decade);
            out.push_str(&format!(
                "<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{right:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{shown} ms</text>\n",
                LEFT - 6.0,
                yy + 4.0,
            ));
        }
        // A rung's rate under its point, unless it would overlap the last one written.
        let mut last: Option<f64> = None;
        for r in &l.rungs {
            let x = self.x(r.offered);
            if last.is_some_and(|l| x - l < 40.0) {
                continue;
            }
            last = Some(x);
            out.push_str(&format!(
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                bottom + 16.0,
                xml(&rate(r.offered))
            ));
        }
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">offered (requests a second)</text>\n",
            (LEFT + right) / 2.0,
            HEIGHT - 10.0
        ));
        out
    }

    /// One line through `points` (rate, milliseconds) with its dots, and its entry in the
    /// legend, the `n`th.
    fn series(
        &self,
        points: &[(f64, f64)],
        colour: &str,
        dash: &str,
        name: &str,
        n: usize,
    ) -> String {
        if points.is_empty() {
            return String::new();
        }
        let path: Vec<String> = points
            .iter()
            .map(|(px, py)| format!("{:.1},{:.1}", self.x(*px), self.y(*py)))
            .collect();
        let mut out = format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"{dash} points=\"{}\"/>\n",
            path.join(" ")
        );
        for (px, py) in points {
            out.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{colour}\"/>\n",
                self.x(*px),
                self.y(*py)
            ));
        }
        let ly = TOP + 14.0 * n as f64;
        out.push_str(&format!(
            "<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{colour}\" \
             stroke-width=\"1.5\"{dash}/>\n<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            WIDTH - RIGHT + 12.0,
            WIDTH - RIGHT + 32.0,
            WIDTH - RIGHT + 36.0,
            ly + 4.0,
            xml(name)
        ));
        out
    }
}

/// The chart: p95 (and the mix's late p95, dashed) against the offered rate, a line per page;
/// milliseconds on a logarithmic axis, the rate on a linear one.
pub fn svg(report: &LadderReport) -> String {
    let l = &report.ladder;
    let s = &report.setup;
    let chart = Chart::of(l);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"18\" font-size=\"13\">p95 against the offered rate \
         (PostgreSQL {}, pool of {})</text>\n",
        xml(&s.server_version),
        s.pool
    );
    out.push_str(&chart.axes(l));
    for (i, page) in s.pages.iter().enumerate() {
        let points: Vec<(f64, f64)> = l
            .rungs
            .iter()
            .filter_map(|r| Some((r.offered, r.pages.get(i)?.figures.p95_ms?)))
            .collect();
        let name = format!("{} [{}]", page.read_path, page.scope);
        out.push_str(&chart.series(&points, COLOURS[i % COLOURS.len()], "", &name, i));
    }
    let n = s.pages.len();
    let mix: Vec<(f64, f64)> = l
        .rungs
        .iter()
        .filter_map(|r| Some((r.offered, r.figures.p95_ms?)))
        .collect();
    out.push_str(&chart.series(&mix, "black", "", "the mix: p95", n));
    let late: Vec<(f64, f64)> = l
        .rungs
        .iter()
        .filter_map(|r| Some((r.offered, r.figures.late_p95_ms?)))
        .collect();
    let dashed = " stroke-dasharray=\"4 3\"";
    out.push_str(&chart.series(&late, "black", dashed, "the mix: late p95", n + 1));
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::ladder::{Asked, Figures, PageResult};

    fn figures(p95: f64) -> Figures {
        Figures {
            p50_ms: Some(p95 / 3.0),
            p95_ms: Some(p95),
            p99_ms: Some(p95 * 1.25),
            late_p95_ms: Some(p95 / 10.0),
        }
    }

    fn rung(members: u64, served: f64, p95: f64, budget: Option<f64>, limit: bool) -> RungResult {
        let rate = members as f64 / 10.0;
        let over = budget.is_some_and(|b| p95 > b);
        RungResult {
            asked: Asked {
                members: Some(members),
                rate,
            },
            window_s: 40.0,
            offered: rate,
            served,
            offered_requests: (rate * 40.0) as u64,
            served_requests: (served * 40.0) as u64,
            errors: 0,
            figures: figures(p95),
            budget_ms: budget,
            limit,
            over_budget: over,
            steady: true,
            shows: [
                (served < 0.95 * rate, Shoulder::Unserved),
                (over, Shoulder::OverBudget),
            ]
            .into_iter()
            .filter_map(|(shows, s)| shows.then_some(s))
            .collect(),
            first_error: None,
            partial: None,
            sessions_replaced: 0,
            replaced_because: None,
            pages: [0.75, 0.25]
                .iter()
                .map(|share| PageResult {
                    offered: rate * share,
                    served: served * share,
                    offered_requests: (rate * share * 40.0) as u64,
                    served_requests: (served * share * 40.0) as u64,
                    errors: 0,
                    figures: figures(p95 * (1.0 + share)),
                })
                .collect(),
        }
    }

    fn report() -> LadderReport {
        LadderReport {
            setup: Setup {
                server_version: "15.18".into(),
                pool: 3,
                pool_cut: None,
                arrivals: "fixed",
                interval_s: Some(10.0),
                warmup_s: 10.0,
                rung_s: 30.0,
                min_requests: 400,
                pages: vec![
                    PageName {
                        read_path: "thread-page-first".into(),
                        scope: "member".into(),
                        share: 0.75,
                    },
                    PageName {
                        read_path: "forum-page-first".into(),
                        scope: "member".into(),
                        share: 0.25,
                    },
                ],
            },
            ladder: crate::verdict::ladder::ladder(vec![
                rung(50, 5.0, 3.0, Some(80.0), false),
                rung(2500, 250.0, 33.5, Some(100.0), false),
                rung(5000, 400.0, 1570.0, Some(4000.0), true),
            ]),
        }
    }

    #[test]
    fn the_table_has_the_seeds_columns_the_breakdown_and_the_shoulder() {
        let text = text(&report(), Style::PLAIN);
        insta::assert_snapshot!(text);
        assert!(text.contains("Active members"), "{text}");
        assert!(
            text.contains("shoulder: 5,000 members (500/s offered): served below offered"),
            "{text}"
        );
    }

    #[test]
    fn markdown_has_both_tables_in_the_seeds_columns() {
        let md = markdown(&report());
        insta::assert_snapshot!(md);
        assert!(md.contains(
            "| Active members | Offered | Served | Errors | Budget | p50 | p95 | p99 | Late p95 | |"
        ));
        assert!(md.contains("| Page | Share | 50 | 2,500 | 5,000 |"), "{md}");
    }

    #[test]
    fn json_carries_every_figure_per_rung_and_per_page() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        insta::assert_json_snapshot!(v);
        assert_eq!(v["shoulder"], 2);
        assert_eq!(v["failed"], false, "the rung over budget is a limit");
        for key in [
            "offered",
            "served",
            "errors",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "late_p95_ms",
        ] {
            assert!(v["rungs"][0][key].is_number(), "{key}");
            assert!(v["rungs"][0]["pages"][1][key].is_number(), "{key}");
        }
    }

    #[test]
    fn the_chart_draws_a_line_per_page_and_the_mixs_p95_and_late_p95() {
        let svg = svg(&report());
        insta::assert_snapshot!(svg);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(
            svg.matches("<polyline").count(),
            4,
            "two pages, p95, late p95"
        );
        assert!(svg.contains(">thread-page-first [member]</text>"));
        assert!(svg.contains(">1000 ms</text>") && svg.contains(">10000 ms</text>"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
