//! `check --stats FILE`: whether the index is chosen is production's planner's answer. The
//! read path planned on the scratch copy at production's sizes, column statistics and planner
//! settings ([`crate::measure::Production`]) decides the verdicts that rest on data (`pass`,
//! `not-chosen`, `seq-scan`, `no-statistics`); a verdict that holds on any data (`not-usable`,
//! `missing-index`, `invalid-index`, a `generic-plan`, `key-unused`, budgets, a changed plan,
//! an error) stands as the measured server gave it, and production's answer is said beside it.
//! A plan at production's statistics that could not be made never leaves a pass standing on the
//! CI database's data: the check is an `error` that says why.

use super::plan::is_allowed;
use super::{CheckResult, Verdict};
use crate::measure::{IndexLookup, Measured, PlanKind, Production, ProductionOutcome};
use crate::plan::explain::{Explain, ScanKind};

/// What the copy does not carry yet, said of every plan made there: its estimates may differ
/// from production's by these.
pub const APPROXIMATE: &str = "approximate where a range over an indexed expression runs \
     past production's histogram: the copy does not carry an expression index's end keys yet";

/// The index names a plan may read to serve the check: every accepted index, and the leaves of
/// a partitioned one.
fn accepted(measured: &Measured) -> Vec<String> {
    std::iter::once(&measured.index)
        .chain(measured.alternatives.iter())
        .filter_map(|l| match l {
            IndexLookup::Found(f) => Some(f),
            _ => None,
        })
        .flat_map(|f| {
            std::iter::once(f.info.name.clone())
                .chain(f.partitions.iter().filter_map(|p| p.leaf_index.clone()))
        })
        .collect()
}

/// Applies production's answer to a judged check.
pub(super) fn judge(
    r: &mut CheckResult,
    measured: &Measured,
    allow_seq_scan: &[String],
    large_rows: f64,
    now: Option<chrono::DateTime<chrono::Utc>>,
) {
    let Some(p) = &measured.production else {
        return;
    };
    let from = file_words(p, now);
    let names = accepted(measured);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let decided_here = rests_on_data(r.verdict);
    let answer = answer(
        p,
        &names,
        allow_seq_scan,
        large_rows,
        r.required_index.is_empty(),
    );
    let gaps = if p.gaps.is_empty() {
        String::new()
    } else {
        format!(" What the copy could not take: {}.", p.gaps.join("; "))
    };
    r.production = Some(format!("{from}: {}", answer.words));
    if !decided_here {
        r.message = format!(
            "{} At production's statistics ({from}): {}.{gaps}",
            r.message.trim_end(),
            answer.words
        );
        return;
    }
    let here = r.verdict;
    let here_message = std::mem::take(&mut r.message);
    r.verdict = answer.verdict;
    // Twin drift reads the sorts of the plan the verdict describes: production's.
    if let Some(keys) = production_sort_keys(p) {
        r.sort_keys = keys;
    }
    r.here = Some(here);
    let here_words = match here_message.trim_end() {
        "" => String::new(),
        words => format!(": {words}"),
    };
    r.message = format!(
        "At production's statistics ({from}): {}; {APPROXIMATE}.{gaps} On this database's own \
         statistics: {here}{here_words}",
        answer.words
    );
    if matches!(answer.verdict, Verdict::NotChosen | Verdict::SeqScan) {
        // What production's custom plan reads, as the table's "used instead".
        r.instead = production_scans(p);
    }
    if answer.verdict == Verdict::Pass {
        // Production chose the index: what this database read whole is its own small data.
        r.seq_scans.clear();
        r.large_reads.clear();
        r.instead.clear();
        r.small_reads_only = false;
        r.usable = Some(true);
    }
}

/// The scans of production's custom plan: `Seq Scan on posts`, `Index Scan using i on t`.
fn production_scans(p: &Production) -> Vec<String> {
    p.plans
        .iter()
        .find_map(|pl| match (&pl.plan, &pl.outcome) {
            (PlanKind::Custom, ProductionOutcome::Planned(d)) => Some(scan_words(d.plan())),
            _ => None,
        })
        .unwrap_or_default()
}

/// The Sort Keys of production's custom plan, if it was made.
fn production_sort_keys(p: &Production) -> Option<Vec<String>> {
    p.plans.iter().find_map(|pl| match (&pl.plan, &pl.outcome) {
        (PlanKind::Custom, ProductionOutcome::Planned(d)) => Some(super::sort_keys(d.plan())),
        _ => None,
    })
}

/// Each scan a plan runs, as the reports name it: `Index Scan using i on t`, `Seq Scan on t`.
fn scan_words(plan: &Explain) -> Vec<String> {
    plan.scans()
        .iter()
        .filter(|s| !s.skipped)
        .map(|s| match (&s.node.index_name, s.relation) {
            (Some(i), Some(r)) => format!("{} using {i} on {r}", s.node.node_type),
            (Some(i), None) => format!("{} using {i}", s.node.node_type),
            (None, Some(r)) => format!("{} on {r}", s.node.node_type),
            (None, None) => s.node.node_type.clone(),
        })
        .collect()
}

/// The verdicts production's answer replaces: those that rest on the data the planner sees.
/// Every other holds on any data and stands.
pub(super) fn rests_on_data(v: Verdict) -> bool {
    matches!(
        v,
        Verdict::Pass | Verdict::NotChosen | Verdict::SeqScan | Verdict::NoStatistics
    )
}

/// The file, as every report says it: when it was exported, its age, from which server.
fn file_words(p: &Production, now: Option<chrono::DateTime<chrono::Utc>>) -> String {
    let age = now.and_then(|now| {
        let at = chrono::DateTime::parse_from_rfc3339(&p.exported_at).ok()?;
        Some(now.signed_duration_since(at).num_days())
    });
    match age {
        Some(days) => format!(
            "exported {} ({days} day{} ago) from PostgreSQL {}",
            p.exported_at,
            if days == 1 { "" } else { "s" },
            p.server_version
        ),
        None => format!(
            "exported {} from PostgreSQL {}",
            p.exported_at, p.server_version
        ),
    }
}

/// Production's answer for one check.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Answer {
    pub verdict: Verdict,
    pub words: String,
}

// Long because it is the rules in order, each a return: a plan not made, a whole read of a large
// relation, the custom plan off the index (with the cost through it), the generic plan off it.
/// Production's verdict from its plans: an error where one was not made; `seq-scan` where a
/// plan reads whole a relation of at least `large_rows` rows by production's `reltuples` that
/// `allow_seq_scan` does not allow; `not-chosen` where the custom plan reads none of `names`;
/// `generic-plan` where only the generic plan reads none; else `pass`.
pub(super) fn answer(
    p: &Production,
    names: &[&str],
    allow_seq_scan: &[String],
    large_rows: f64,
    no_index: bool,
) -> Answer {
    let mut plans: Vec<(PlanKind, &Explain)> = Vec::new();
    let through_of = |kind: PlanKind| {
        p.plans
            .iter()
            .find(|pl| pl.plan == kind)
            .and_then(|pl| pl.through.as_ref())
    };
    for plan in &p.plans {
        match &plan.outcome {
            ProductionOutcome::Planned(d) => plans.push((plan.plan, d.plan())),
            ProductionOutcome::NotMade { why } => {
                return Answer {
                    verdict: Verdict::Error,
                    words: format!("its {} plan was not made: {why}", plan.plan.as_str()),
                };
            }
        }
    }
    let Some((_, custom)) = plans.iter().find(|(k, _)| *k == PlanKind::Custom) else {
        return Answer {
            verdict: Verdict::Error,
            words: "no custom plan was made".to_string(),
        };
    };
    for (kind, plan) in &plans {
        let whole: Vec<String> = plan
            .scans()
            .iter()
            .filter(|s| s.kind == ScanKind::Seq && !s.skipped)
            .filter_map(|s| {
                let relation = s.relation?;
                if is_allowed(relation, s.schema, allow_seq_scan) {
                    return None;
                }
                let rows = p
                    .rows
                    .iter()
                    .find(|r| r.name == relation && s.schema.is_none_or(|sc| sc == r.schema))?;
                (rows.reltuples >= large_rows)
                    .then(|| format!("{}.{relation} ({:.0} rows)", rows.schema, rows.reltuples))
            })
            .collect();
        if !whole.is_empty() {
            return Answer {
                verdict: Verdict::SeqScan,
                words: format!(
                    "the {} plan reads {} whole, at least --large-rows ({large_rows}) by \
                     production's reltuples; cost {:.2}",
                    kind.as_str(),
                    whole.join(", "),
                    plan.root.total_cost
                ),
            };
        }
    }
    let shown = |plan: &Explain| {
        let scans = scan_words(plan);
        let rows = plan.root.plan_rows;
        format!(
            "{} (cost {:.2}, {rows:.0} row{} estimated)",
            scans.join(", "),
            plan.root.total_cost,
            if rows.round() == 1.0 { "" } else { "s" }
        )
    };
    if no_index {
        return Answer {
            verdict: Verdict::Pass,
            words: format!(
                "no relation of at least --large-rows read whole: {}",
                shown(custom)
            ),
        };
    }
    let index = names.first().copied().unwrap_or("the index");
    // The cost through the index, as production's planner weighed it.
    let weighed = |kind: PlanKind, chosen: &Explain| match through_of(kind) {
        Some(ProductionOutcome::Planned(d)) if d.plan().reads_any(names) => {
            let (a, b) = (chosen.root.total_cost, d.plan().root.total_cost);
            // A plan that still reads a relation whole did so with seq scans off: its cost holds
            // the planner's penalty for a disabled path, so it is a bound, not a figure.
            let disabled = d.plan().nodes().iter().any(|n| n.disabled == Some(true))
                || d.plan().scans().iter().any(|s| s.kind == ScanKind::Seq);
            let (costs, ratio) = if disabled {
                (
                    format!(
                        "costs at most {b:.2} (an upper bound, so no ratio: a disabled path is \
                         in it)"
                    ),
                    String::new(),
                )
            } else if a > 0.0 {
                (
                    format!("costs {b:.2}"),
                    format!(", {:.1}× the chosen plan's", b / a),
                )
            } else {
                (format!("costs {b:.2}"), String::new())
            };
            format!(
                "; through {index} the cheapest plan {costs}{ratio} (re-planned on the copy at \
                 the same statistics, the table's other indexes dropped and seq scans off: {})",
                shown(d.plan())
            )
        }
        Some(ProductionOutcome::Planned(_)) => format!(
            "; no plan read {index} even with the table's other indexes dropped and seq scans off"
        ),
        Some(ProductionOutcome::NotMade { why }) => {
            format!("; the plan through {index} was not made: {why}")
        }
        None => String::new(),
    };
    if !custom.reads_any(names) {
        return Answer {
            verdict: Verdict::NotChosen,
            words: format!(
                "the planner does not choose {index}: it plans {}{}",
                shown(custom),
                weighed(PlanKind::Custom, custom)
            ),
        };
    }
    if let Some((_, generic)) = plans.iter().find(|(k, _)| *k == PlanKind::Generic)
        && !generic.reads_any(names)
    {
        return Answer {
            verdict: Verdict::GenericPlan,
            words: format!(
                "the custom plan reads {index}, and the generic plan does not: it plans {}{}",
                shown(generic),
                weighed(PlanKind::Generic, generic)
            ),
        };
    }
    Answer {
        verdict: Verdict::Pass,
        words: format!("chosen: {}", shown(custom)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Document, ProductionPlan, RowsOf};

    fn plan(json: &str) -> Box<Document> {
        Box::new(Document::from_text(format!("[{{\"Plan\": {json}}}]")).unwrap())
    }

    const INDEX: &str = r#"{"Node Type": "Index Scan", "Relation Name": "posts", "Schema": "public",
        "Index Name": "posts_thread_idx", "Total Cost": 8.5, "Plan Rows": 20}"#;
    const SEQ: &str = r#"{"Node Type": "Seq Scan", "Relation Name": "posts", "Schema": "public",
        "Total Cost": 35000.0, "Plan Rows": 20}"#;

    fn production(custom: &str, generic: Option<&str>, reltuples: f64) -> Production {
        let mut plans = vec![ProductionPlan {
            plan: PlanKind::Custom,
            outcome: ProductionOutcome::Planned(plan(custom)),
            through: None,
        }];
        if let Some(g) = generic {
            plans.push(ProductionPlan {
                plan: PlanKind::Generic,
                outcome: ProductionOutcome::Planned(plan(g)),
                through: None,
            });
        }
        Production {
            exported_at: "2026-12-01T00:00:00Z".into(),
            server_version: "15.18".into(),
            plans,
            gaps: vec![],
            rows: vec![RowsOf {
                schema: "public".into(),
                name: "posts".into(),
                reltuples,
            }],
        }
    }

    fn of(p: &Production) -> Answer {
        answer(p, &["posts_thread_idx"], &[], 10_000.0, false)
    }

    #[test]
    fn the_index_in_production_s_plans_passes() {
        let a = of(&production(INDEX, Some(INDEX), 2e6));
        assert_eq!(a.verdict, Verdict::Pass, "{}", a.words);
        assert!(a.words.contains("posts_thread_idx"), "{}", a.words);
    }

    #[test]
    fn a_large_table_read_whole_at_production_s_size_is_a_seq_scan() {
        let a = of(&production(SEQ, None, 2e6));
        assert_eq!(a.verdict, Verdict::SeqScan, "{}", a.words);
        assert!(
            a.words.contains("public.posts (2000000 rows)"),
            "{}",
            a.words
        );
        // Allowed, or small by production's count: the index is simply not chosen.
        let p = production(SEQ, None, 2e6);
        let allowed = answer(&p, &["posts_thread_idx"], &["posts".into()], 1e4, false);
        assert_eq!(allowed.verdict, Verdict::NotChosen, "{}", allowed.words);
        let small = of(&production(SEQ, None, 10.0));
        assert_eq!(small.verdict, Verdict::NotChosen, "{}", small.words);
        assert!(small.words.contains("does not choose posts_thread_idx"));
    }

    #[test]
    fn not_chosen_says_both_costs_from_the_copy() {
        let mut p = production(SEQ, None, 10.0);
        p.plans[0].through = Some(ProductionOutcome::Planned(plan(INDEX)));
        let a = of(&p);
        assert_eq!(a.verdict, Verdict::NotChosen, "{}", a.words);
        assert!(
            a.words.contains("cost 35000.00")
                && a.words
                    .contains("through posts_thread_idx the cheapest plan costs 8.50"),
            "{}",
            a.words
        );
    }

    #[test]
    fn a_cost_through_the_index_with_a_disabled_path_in_it_is_a_bound() {
        let mut p = production(SEQ, None, 10.0);
        let through = r#"{"Node Type": "Nested Loop", "Total Cost": 10000000020.0, "Plan Rows": 20,
            "Plans": [INDEX, {"Node Type": "Seq Scan", "Relation Name": "members",
            "Schema": "public", "Total Cost": 10000000001.0, "Plan Rows": 5}]}"#
            .replace("INDEX", INDEX);
        p.plans[0].through = Some(ProductionOutcome::Planned(plan(&through)));
        let a = of(&p);
        assert!(
            a.words.contains("costs at most 10000000020.00"),
            "{}",
            a.words
        );
        assert!(!a.words.contains("× the chosen plan's"), "{}", a.words);
    }

    #[test]
    fn only_the_generic_plan_off_the_index_is_a_generic_plan() {
        let other = INDEX.replace("posts_thread_idx", "posts_other_idx");
        let a = of(&production(INDEX, Some(&other), 2e6));
        assert_eq!(a.verdict, Verdict::GenericPlan, "{}", a.words);
    }

    #[test]
    fn a_plan_not_made_is_an_error_never_a_pass() {
        let mut p = production(INDEX, None, 2e6);
        p.plans.push(ProductionPlan {
            plan: PlanKind::Generic,
            outcome: ProductionOutcome::NotMade {
                why: "the copy could not take type public.t".into(),
            },
            through: None,
        });
        let a = of(&p);
        assert_eq!(a.verdict, Verdict::Error, "{}", a.words);
        assert!(a.words.contains("generic plan was not made"), "{}", a.words);
    }

    #[test]
    fn a_verdict_that_holds_on_any_data_stands() {
        for v in [
            Verdict::NotUsable,
            Verdict::MissingIndex,
            Verdict::InvalidIndex,
            Verdict::GenericPlan,
            Verdict::KeyUnused,
            Verdict::OverBudget,
            Verdict::PlanChanged,
            Verdict::Error,
        ] {
            assert!(!rests_on_data(v), "{v}");
        }
        for v in [
            Verdict::Pass,
            Verdict::NotChosen,
            Verdict::SeqScan,
            Verdict::NoStatistics,
        ] {
            assert!(rests_on_data(v), "{v}");
        }
    }

    #[test]
    fn the_file_s_age_is_said_by_the_run_s_clock() {
        let p = production(INDEX, None, 2e6);
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-09T12:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let words = file_words(&p, Some(now));
        assert!(
            words.contains("(8 days ago) from PostgreSQL 15.18"),
            "{words}"
        );
    }
}
