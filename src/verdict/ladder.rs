//! `plancheck ladder`, judged: each rung's figures from what `db::ladder` measured, its budget
//! from `[ladder]` in plancheck.toml, and the shoulder: the first rung over its budget, or
//! where Served falls below Offered, errors appear, or the queue keeps growing.

use serde::Serialize;

use crate::measure::ladder::{Cut, Left, RungMeasured, steady_halves};
use crate::model::LadderBudgets;

/// How a rung was asked for: a rate, or members each asking every `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Asked {
    /// Members, when the rung was asked for as members.
    pub members: Option<u64>,
    /// Requests a second.
    pub rate: f64,
}

/// A page of the mix, as the report names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageName {
    pub read_path: String,
    pub scope: String,
    pub share: f64,
}

/// Milliseconds of a histogram's quantile (recorded in microseconds).
fn ms(h: &hdrhistogram::Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
}

/// Latency figures, milliseconds; `None` where nothing was measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Figures {
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub late_p95_ms: Option<f64>,
}

impl Figures {
    fn of(latency: &hdrhistogram::Histogram<u64>, late: &hdrhistogram::Histogram<u64>) -> Figures {
        Figures {
            p50_ms: ms(latency, 0.50),
            p95_ms: ms(latency, 0.95),
            p99_ms: ms(latency, 0.99),
            late_p95_ms: ms(late, 0.95),
        }
    }
}

/// One page's figures in a rung.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageResult {
    /// Requests a second scheduled, and served without an error, in the measured window.
    pub offered: f64,
    pub served: f64,
    pub offered_requests: u64,
    pub served_requests: u64,
    pub errors: u64,
    #[serde(flatten)]
    pub figures: Figures,
}

/// Why a rung is the shoulder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shoulder {
    /// Requests failed.
    Errors,
    /// Served fell below Offered (by more than 5%).
    Unserved,
    /// The queue kept growing: the window's second half much later than its first.
    Growing,
    /// The p95 is over the rung's budget.
    OverBudget,
}

/// One rung, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungResult {
    #[serde(flatten)]
    pub asked: Asked,
    /// The measured window, seconds.
    pub window_s: f64,
    pub offered: f64,
    pub served: f64,
    pub offered_requests: u64,
    pub served_requests: u64,
    pub errors: u64,
    #[serde(flatten)]
    pub figures: Figures,
    /// The p95 budget of the rung, and whether it is a limit (recorded, never failed).
    pub budget_ms: Option<f64>,
    pub limit: bool,
    pub over_budget: bool,
    pub steady: bool,
    /// What makes it the shoulder (any rung can show one; the first is the shoulder).
    pub shows: Vec<Shoulder>,
    /// The server's words for the first failed request.
    pub first_error: Option<String>,
    /// Ended before its window was whole: `stopped`, `max_seconds`, `sessions_lost`.
    pub partial: Option<&'static str>,
    /// Sessions replaced after a request that may have left something in them (the rung's
    /// warm-up included), and why the first was: `prepared`, `locks`, `cursors`,
    /// `listening`, `temporary`, `unseen`, `unread`.
    pub sessions_replaced: u64,
    pub replaced_because: Option<&'static str>,
    pub pages: Vec<PageResult>,
}

/// The whole ladder, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ladder {
    pub rungs: Vec<RungResult>,
    /// The first rung that shows a shoulder (its index in `rungs`).
    pub shoulder: Option<usize>,
    /// A rung budgeted as a target (not a limit) is over its budget, or failed requests.
    pub failed: bool,
}

/// The budget of rung `asked`: its own `[[ladder.rung]]`, else `[ladder] p95_ms`.
pub fn budget_of(budgets: &LadderBudgets, asked: &Asked) -> (Option<f64>, bool) {
    let own = budgets
        .rungs
        .iter()
        .find(|r| match (r.members, asked.members) {
            (Some(m), Some(n)) => m == n,
            _ => r.rate.is_some_and(|rate| (rate - asked.rate).abs() < 1e-9),
        });
    match own {
        Some(r) => (Some(r.p95_ms), r.limit),
        None => (budgets.p95_ms, false),
    }
}

/// Judges one rung.
pub fn rung(asked: Asked, m: &RungMeasured, budgets: &LadderBudgets) -> RungResult {
    let seconds = m.window.as_secs_f64().max(1e-9);
    let figures = Figures::of(&m.latency, &m.late);
    let (budget_ms, limit) = budget_of(budgets, &asked);
    let over_budget = match (budget_ms, figures.p95_ms) {
        (Some(b), Some(p95)) => p95 > b,
        _ => false,
    };
    let steady = steady_halves(m.late_halves.0, m.late_halves.1);
    let mut shows = Vec::new();
    if m.errors > 0 {
        shows.push(Shoulder::Errors);
    }
    if (m.served as f64) < 0.95 * m.offered as f64 {
        shows.push(Shoulder::Unserved);
    }
    if !steady {
        shows.push(Shoulder::Growing);
    }
    if over_budget {
        shows.push(Shoulder::OverBudget);
    }
    RungResult {
        asked,
        window_s: seconds,
        offered: m.offered as f64 / seconds,
        served: m.served as f64 / seconds,
        offered_requests: m.offered,
        served_requests: m.served,
        errors: m.errors,
        figures,
        budget_ms,
        limit,
        over_budget,
        steady,
        shows,
        first_error: m.first_error.clone(),
        partial: m.cut.map(|c| match c {
            Cut::Stopped => "stopped",
            Cut::MaxSeconds => "max_seconds",
            Cut::SessionsLost => "sessions_lost",
        }),
        sessions_replaced: m.replaced,
        replaced_because: m.first_left.map(|l| match l {
            Left::Prepared => "prepared",
            Left::Locks => "locks",
            Left::Cursors => "cursors",
            Left::Listening => "listening",
            Left::Temporary => "temporary",
            Left::Unseen => "unseen",
            Left::Unread => "unread",
        }),
        pages: m
            .pages
            .iter()
            .map(|p| PageResult {
                offered: p.offered as f64 / seconds,
                served: p.served as f64 / seconds,
                offered_requests: p.offered,
                served_requests: p.served,
                errors: p.errors,
                figures: Figures::of(&p.latency, &p.late),
            })
            .collect(),
    }
}

/// The ladder from its judged rungs: the shoulder, and whether it failed.
pub fn ladder(rungs: Vec<RungResult>) -> Ladder {
    let shoulder = rungs.iter().position(|r| !r.shows.is_empty());
    let failed = rungs
        .iter()
        .any(|r| r.budget_ms.is_some() && !r.limit && (r.over_budget || r.errors > 0));
    Ladder {
        rungs,
        shoulder,
        failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::ladder::{PageTally, histogram};
    use crate::model::RungBudget;
    use std::time::Duration;

    fn measured(
        latencies_ms: &[u64],
        offered: u64,
        errors: u64,
        halves: (u64, u64),
    ) -> RungMeasured {
        let mut latency = histogram();
        let mut late = histogram();
        for ms in latencies_ms {
            latency.record(ms * 1000).unwrap();
            late.record(100).unwrap();
        }
        RungMeasured {
            rate: 10.0,
            window: Duration::from_secs(10),
            offered,
            served: latencies_ms.len() as u64,
            errors,
            latency: latency.clone(),
            late: late.clone(),
            pages: vec![PageTally {
                offered,
                served: latencies_ms.len() as u64,
                errors,
                latency,
                late,
            }],
            late_halves: halves,
            first_error: (errors > 0).then(|| "boom".into()),
            cut: None,
            replaced: 0,
            first_left: None,
        }
    }

    fn asked(members: u64) -> Asked {
        Asked {
            members: Some(members),
            rate: members as f64 / 10.0,
        }
    }

    fn budgets() -> LadderBudgets {
        LadderBudgets {
            p95_ms: Some(80.0),
            rungs: vec![RungBudget {
                members: Some(5000),
                rate: None,
                p95_ms: 4000.0,
                limit: true,
            }],
        }
    }

    #[test]
    fn a_rung_within_its_budget_shows_no_shoulder() {
        // 1 to 80 ms, once each: p95 76 ms, under the 80 ms budget.
        let lat: Vec<u64> = (1..=80).collect();
        let r = rung(asked(1000), &measured(&lat, 80, 0, (500, 600)), &budgets());
        assert_eq!(r.budget_ms, Some(80.0));
        assert!((r.figures.p95_ms.unwrap() - 76.0).abs() < 0.5, "{r:?}");
        assert!(!r.over_budget && r.steady && r.shows.is_empty(), "{r:?}");
        // 1 to 100 ms: p95 95 ms, over it.
        let lat: Vec<u64> = (1..=100).collect();
        let r = rung(asked(1000), &measured(&lat, 100, 0, (500, 600)), &budgets());
        assert!(r.over_budget && r.shows == [Shoulder::OverBudget], "{r:?}");
    }

    #[test]
    fn the_shoulder_is_the_first_rung_over_budget_unserved_failing_or_growing() {
        let fast: Vec<u64> = vec![5; 100];
        let slow: Vec<u64> = vec![120; 100];
        let b = budgets();
        let ok = rung(asked(50), &measured(&fast, 100, 0, (100, 100)), &b);
        let over = rung(asked(250), &measured(&slow, 100, 0, (100, 100)), &b);
        let l = ladder(vec![ok.clone(), over.clone()]);
        assert_eq!(l.shoulder, Some(1));
        assert_eq!(l.rungs[1].shows, [Shoulder::OverBudget]);
        assert!(l.failed, "a target rung over budget fails the run");

        let unserved = rung(asked(250), &measured(&fast, 200, 0, (100, 100)), &b);
        assert_eq!(unserved.shows, [Shoulder::Unserved]);
        let errors = rung(asked(250), &measured(&fast, 100, 3, (100, 100)), &b);
        assert_eq!(errors.shows, [Shoulder::Errors]);
        let growing = rung(asked(250), &measured(&fast, 100, 0, (1_000, 50_000)), &b);
        assert_eq!(growing.shows, [Shoulder::Growing]);
        let l = ladder(vec![ok, growing]);
        assert_eq!(l.shoulder, Some(1));
        assert!(
            !l.failed,
            "growing within budget is the shoulder, not a failure"
        );
    }

    #[test]
    fn a_limit_rung_over_its_budget_is_recorded_and_does_not_fail() {
        let slow: Vec<u64> = vec![5_000; 100];
        let r = rung(
            asked(5000),
            &measured(&slow, 100, 0, (100, 100)),
            &budgets(),
        );
        assert_eq!(
            (r.budget_ms, r.limit, r.over_budget),
            (Some(4000.0), true, true)
        );
        let l = ladder(vec![r]);
        assert_eq!(l.shoulder, Some(0));
        assert!(!l.failed);
    }

    #[test]
    fn a_rung_with_no_budget_never_fails() {
        let slow: Vec<u64> = vec![5_000; 100];
        let r = rung(
            asked(100),
            &measured(&slow, 100, 0, (100, 100)),
            &LadderBudgets::default(),
        );
        assert_eq!(r.budget_ms, None);
        assert!(!ladder(vec![r]).failed);
    }
}
