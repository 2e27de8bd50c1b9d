//! `check --stats` against what it predicts: a loaded database's statistics exported, a project
//! run on a CI database at them, and each plan compared with the loaded database's own.

use std::path::Path;

use super::run::*;

/// `stats export` of `db` into `out`, with `extra` arguments (`--project DIR`), run to the end.
pub fn export_run(db: &str, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "stats",
        "export",
        "--database-url",
        db,
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// The same, which must succeed.
pub fn export_with(db: &str, out: &Path, extra: &[&str]) {
    let r = export_run(db, out, extra);
    assert_eq!(r.status, Some(0), "{}", r.shown());
}

pub fn export(db: &str, out: &Path) {
    export_with(db, out, &[]);
}

/// Every check's measurement saved by `--save-plans` into `dir`, by file name.
pub fn saved(dir: &Path) -> Vec<(String, plancheck::measure::Measurement)> {
    let mut out: Vec<(String, plancheck::measure::Measurement)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            // run.json is the run's own record; every other file one check's measurement.
            (p.extension()? == "json" && p.file_name()? != "run.json").then(|| {
                let text = std::fs::read_to_string(&p).unwrap();
                let m = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{p:?}: {e}"));
                (p.file_name().unwrap().to_string_lossy().to_string(), m)
            })
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

pub fn measured(m: &plancheck::measure::Measurement) -> &plancheck::measure::Measured {
    match &m.outcome {
        plancheck::measure::Outcome::Measured(m) => m,
        plancheck::measure::Outcome::Failed(f) => panic!("{}", f.message),
    }
}

/// (node type, relation, index) of every scan node, in order.
pub fn scans(
    plan: &plancheck::plan::explain::Explain,
) -> Vec<(String, Option<String>, Option<String>)> {
    plan.scans()
        .iter()
        .map(|s| {
            (
                s.node.node_type.clone(),
                s.relation.map(str::to_string),
                s.node.index_name.clone(),
            )
        })
        .collect()
}

/// Each check's custom plan of `project`, by saved file name: (name, at production's
/// statistics on `ci` with the statistics `file`, on `loaded` itself); and the JSON report of
/// the run at production's statistics.
pub fn custom_plans(
    loaded: &str,
    ci: &str,
    project: &Path,
    file: &Path,
) -> (
    Vec<(
        String,
        plancheck::plan::explain::Explain,
        plancheck::plan::explain::Explain,
    )>,
    serde_json::Value,
) {
    let dir = tempfile::tempdir().unwrap();
    let (at_loaded, predicted) = (dir.path().join("loaded"), dir.path().join("predicted"));
    let r = check(
        loaded,
        project,
        &["--save-plans", at_loaded.to_str().unwrap()],
    );
    assert!(r.status.is_some(), "{}", r.shown());
    let r = check(
        ci,
        project,
        &[
            "--stats",
            file.to_str().unwrap(),
            "--save-plans",
            predicted.to_str().unwrap(),
        ],
    );
    assert!(r.status.is_some(), "{}", r.shown());
    let (truth, predicted) = (saved(&at_loaded), saved(&predicted));
    assert_eq!(truth.len(), predicted.len());
    let plans = predicted
        .iter()
        .zip(&truth)
        .map(|((name, p), (_, t))| {
            let production = measured(p).production.as_ref().unwrap();
            let plancheck::measure::ProductionOutcome::Planned(doc) = &production.plans[0].outcome
            else {
                panic!("{name}: {:?}", production.plans[0].outcome)
            };
            (
                name.clone(),
                doc.plan().clone(),
                measured(t).custom[0].plan().clone(),
            )
        })
        .collect();
    (plans, r.report())
}

/// What [`plans_as_loaded_for`] compared.
pub struct Compared {
    /// The JSON report of the run at production's statistics.
    pub at_stats: serde_json::Value,
    /// How many plans (custom and generic) were compared.
    pub plans: usize,
}

/// The project at `project` on `ci` at `loaded`'s exported statistics (`export_extra` given to
/// the export) makes `loaded`'s own plans: the same verdicts, the same index on every scan
/// node, the same shape (every node's type and index, in order), the top row estimate within
/// 1 % and, with `costs`, the total cost within 1 %.
pub fn plans_as_loaded_for(
    loaded: &str,
    ci: &str,
    project: &Path,
    export_extra: &[&str],
    costs: bool,
) -> Compared {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.stats.json");
    export_with(loaded, &file, export_extra);
    let (at_ci, at_prod) = (dir.path().join("ci"), dir.path().join("prod"));
    let r = check(
        loaded,
        project,
        &["--save-plans", at_prod.to_str().unwrap()],
    );
    assert!(r.status.is_some(), "{}", r.shown());
    let at_loaded = r.report();
    let r = check(
        ci,
        project,
        &[
            "--stats",
            file.to_str().unwrap(),
            "--save-plans",
            at_ci.to_str().unwrap(),
        ],
    );
    let at_stats = r.report();
    // Every verdict at production's statistics is the loaded database's own, and so is every
    // finding about the project's indexes (twin drift is settled from the plans' sorts).
    assert_eq!(verdicts(&at_stats), verdicts(&at_loaded), "{}", r.shown());
    let lint = at_stats["lint"].to_string().replace(
        "'s plan at production's statistics through",
        "'s plan through",
    );
    assert_eq!(lint, at_loaded["lint"].to_string(), "{}", r.shown());
    let predicted = saved(&at_ci);
    let truth = saved(&at_prod);
    assert_eq!(predicted.len(), truth.len());
    let mut plans = 0;
    for ((name, p), (_, t)) in predicted.iter().zip(&truth) {
        let production = measured(p)
            .production
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no plan at production's statistics"));
        assert!(!production.exported_at.is_empty());
        let t = measured(t);
        for plan in &production.plans {
            let doc = match &plan.outcome {
                plancheck::measure::ProductionOutcome::Planned(d) => d,
                plancheck::measure::ProductionOutcome::NotMade { why } => {
                    panic!("{name} {:?}: not made: {why}", plan.plan)
                }
            };
            let own = match plan.plan {
                plancheck::measure::PlanKind::Custom => &t.custom[0],
                plancheck::measure::PlanKind::Generic => t.generic.as_ref().unwrap(),
            };
            let (a, b) = (doc.plan(), own.plan());
            // The chosen index on every scan node.
            let index_of = |s: Vec<(String, Option<String>, Option<String>)>| {
                s.into_iter().map(|(_, r, i)| (r, i)).collect::<Vec<_>>()
            };
            assert_eq!(
                index_of(scans(a)),
                index_of(scans(b)),
                "{name} {:?}",
                plan.plan
            );
            // The plan's shape: every node's type and index, in order.
            let shape = |p: &plancheck::plan::explain::Explain| {
                p.nodes()
                    .iter()
                    .map(|n| (n.node_type.clone(), n.index_name.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(shape(a), shape(b), "{name} {:?}", plan.plan);
            // The top node's row estimate within 1 %.
            let (x, y) = (a.root.plan_rows, b.root.plan_rows);
            assert!(
                (x - y).abs() <= 0.01 * x.max(y),
                "{name} {:?}: {x} rows predicted, {y} on the loaded database",
                plan.plan
            );
            if costs {
                let (x, y) = (a.root.total_cost, b.root.total_cost);
                assert!(
                    (x - y).abs() <= 0.01 * x.max(y),
                    "{name} {:?}: cost {x} predicted, {y} on the loaded database",
                    plan.plan
                );
            }
            plans += 1;
        }
    }
    Compared { at_stats, plans }
}
