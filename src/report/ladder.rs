//! `plancheck ladder`'s report: the ladder table (the seed's columns: Active members, Offered,
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
    pub pool: usize,
    /// `fixed` or `poisson`.
    pub arrivals: &'static str,
    /// Each member's interval between requests, seconds, when rungs are members.
    pub interval_s: Option<f64>,
    pub warmup_s: f64,
    pub rung_s: f64,
    pub min_requests: u64,
    pub pages: Vec<PageName>,
}

/// The whole ladder report.
#[derive(Debug, Clone, Serialize)]
pub struct LadderReport {
    #[serde(flatten)]
    pub setup: Setup,
    #[serde(flatten)]
    pub ladder: Ladder,
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
        row.extend([
            rate(r.offered),
            rate(r.served),
            group(r.errors),
            r.budget_ms.map(ms_value).unwrap_or_else(|| "-".into()),
            ms(r.figures.p50_ms),
            ms(r.figures.p95_ms),
            ms(r.figures.p99_ms),
            ms(r.figures.late_p95_ms),
            verdict(r),
        ]);
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
                "errors at {}: {} (the first: {e})\n",
                rung_name(r),
                group(r.errors)
            ));
        }
    }
    out.push_str(&format!(
        "setup: PostgreSQL {}; a pool of {} sessions; arrivals {} ({}), latency from the \
         scheduled start; each rung's first {:.0} s discarded, then measured for at least {:.0} \
         s and {} requests, until the second half of the window is no later than twice the \
         first (late p95, plus 1 ms)\n",
        s.server_version,
        s.pool,
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

/// The report as one JSON document.
pub fn json(report: &LadderReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a ladder report serialises");
    s.push('\n');
    s
}
