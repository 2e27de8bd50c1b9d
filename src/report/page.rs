//! The performance page: the checks' report and the ladder's in one document, in the seed's
//! shape. The setup table (the board's counts when it is the reference board, the iterations,
//! the machine, the PostgreSQL version, the date), the time budgets one read at a time, the ladder
//! and its per-page breakdown, the chart, the EXPLAIN evidence; as Markdown or as one JSON
//! document holding the check report's JSON and the ladder's.

use serde::Serialize;

use super::Report;
use super::ladder::LadderReport;
use crate::db::fixtures::BoardFacts;

/// What the page's setup table says beyond what the two reports carry.
#[derive(Debug, Clone, Serialize)]
pub struct PageSetup {
    /// The reference board's counts, when the database holds one.
    pub board: Option<BoardFacts>,
    /// The machine plancheck ran on (`2× …, 24 GiB`), when it can tell.
    pub machine: Option<String>,
    /// The day the page was measured, UTC (`2026-12-02`).
    pub measured: String,
    /// The chart of the ladder, as the Markdown links it (the `svg=` file), when one is written.
    #[serde(skip)]
    pub chart: Option<String>,
}

/// The runs measured and discarded per check: the most any check made (a check that failed
/// early made fewer).
fn iterations(checks: &Report) -> Option<(usize, u32)> {
    checks
        .checks
        .iter()
        .filter_map(|c| {
            c.warm_ms
                .as_ref()
                .map(|s| (s.runs, c.discarded.unwrap_or(0)))
        })
        .max()
}

fn group(n: i64) -> String {
    crate::verdict::group(n as f64)
}

/// The setup table: a row each, `| Posts | 2,343,847 |`.
fn setup_table(setup: &PageSetup, checks: &Report) -> String {
    let mut rows: Vec<(&str, String)> = Vec::new();
    if let Some(b) = &setup.board {
        rows.push(("Posts", group(b.posts)));
        rows.push(("Threads", group(b.threads)));
        rows.push((
            "Longest thread",
            format!("{} posts", group(b.longest_thread)),
        ));
        rows.push((
            "Visibility",
            format!(
                "{} deleted, {} unapproved, {} visible",
                group(b.deleted_posts),
                group(b.unapproved_posts),
                group(b.posts - b.deleted_posts - b.unapproved_posts)
            ),
        ));
        rows.push(("Scale", format!("{} of the full board", b.scale)));
    }
    if let Some((runs, discarded)) = iterations(checks) {
        rows.push((
            "Iterations",
            format!("{runs} measured per check, after {discarded} discarded"),
        ));
    }
    if let Some(m) = &setup.machine {
        rows.push(("Machine", format!("{m} (plancheck's)")));
    }
    rows.push(("Measured", setup.measured.clone()));
    let mut rows: Vec<(&str, String)> = rows
        .into_iter()
        .map(|(name, value)| (name, value.replace('|', "\\|")))
        .collect();
    // The server's words, escaped as all text plancheck did not write.
    rows.insert(
        rows.len() - 1,
        ("PostgreSQL", super::markdown::cell(&checks.server_version)),
    );
    let mut out = String::from("| | |\n|---|---|\n");
    for (name, value) in rows {
        out.push_str(&format!("| {name} | {value} |\n"));
    }
    out
}

/// The whole page as Markdown.
pub fn markdown(setup: &PageSetup, checks: &Report, ladder: &LadderReport) -> String {
    let mut out = String::from("# Performance\n\n");
    out.push_str(
        "Every figure on this page was measured by plancheck in one run, with the setup below. \
         The milliseconds belong to that machine; what travels is the shape: which pages sit \
         near their budget, and which climb first under load.\n\n",
    );
    out.push_str(&setup_table(setup, checks));
    out.push_str("\n## One read at a time\n\n");
    out.push_str(&format!("{}\n", super::markdown::summary_line(checks)));
    let times = super::markdown::time_budgets(checks);
    if times.is_empty() {
        out.push_str("\nNo check has a time budget (`budget = { warm_ms = … }`).\n");
    } else {
        out.push('\n');
        out.push_str(&times);
    }
    out.push('\n');
    out.push_str(&super::ladder::markdown(ladder));
    if let Some(chart) = &setup.chart {
        out.push_str(&format!(
            "\n![p95 and late p95 against the offered rate, a line per page]({})\n",
            chart.replace(' ', "%20").replace(')', "%29")
        ));
    }
    out.push_str("\n## EXPLAIN evidence\n\n");
    out.push_str(&super::markdown::evidence(checks));
    out.push_str(&super::markdown::why_list(checks));
    out
}

/// The whole page as one JSON document: `setup`, `checks` (the check report's JSON) and
/// `ladder` (the ladder report's).
pub fn json(setup: &PageSetup, checks: &Report, ladder: &LadderReport) -> String {
    let checks_doc: serde_json::Value = serde_json::from_str(&super::json::json(checks))
        .expect("the check report's JSON reads back");
    let mut setup_value = serde_json::to_value(setup).expect("a page setup serialises");
    if let (Some(obj), Some((runs, discarded))) = (setup_value.as_object_mut(), iterations(checks))
    {
        obj.insert("runs".into(), runs.into());
        obj.insert("discarded".into(), discarded.into());
    }
    let doc = serde_json::json!({
        "setup": setup_value,
        "checks": checks_doc,
        "ladder": ladder,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("a page serialises");
    s.push('\n');
    s
}
