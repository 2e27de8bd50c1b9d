//! The pure stages (plan walk and verdict) over EXPLAIN documents captured from real servers,
//! PostgreSQL 15 and 18, whose JSON differs (fractional `Actual Rows`, `Disabled`,
//! `Index Searches`, InitPlan labels). One folder per expected verdict under `tests/plans/`;
//! `tests/plans/capture.py` recaptures them.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use plancheck::explain::Explain;
use plancheck::verdict::{PlanVerdict, RequiredIndex, Rules, Verdict, judge_generic, judge_plan};
use serde::Deserialize;

#[derive(Deserialize)]
struct Case {
    index: String,
    table: String,
    #[serde(default)]
    allow_seq_scan: Vec<String>,
}

fn cases() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans");
    let mut out = Vec::new();
    for verdict in fs::read_dir(&root).unwrap().flatten() {
        if !verdict.path().is_dir() {
            continue;
        }
        for case in fs::read_dir(verdict.path()).unwrap().flatten() {
            let name = format!(
                "{}/{}",
                verdict.file_name().to_string_lossy(),
                case.file_name().to_string_lossy()
            );
            out.push((name, case.path()));
        }
    }
    out.sort();
    out
}

fn load(path: &Path) -> Explain {
    Explain::parse(&fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Judges one captured case as PostgreSQL `label` produced it.
fn judge(dir: &Path, label: &str) -> Option<PlanVerdict> {
    let custom = dir.join(format!("{label}.custom.json"));
    if !custom.exists() {
        return None;
    }
    let case: Case = toml::from_str(&fs::read_to_string(dir.join("case.toml")).unwrap()).unwrap();
    let reltuples: HashMap<String, f64> = serde_json::from_str(
        &fs::read_to_string(dir.join(format!("{label}.reltuples.json"))).unwrap(),
    )
    .unwrap();
    let index = RequiredIndex {
        schema: "public".into(),
        name: case.index.clone(),
        table: case.table.clone(),
        predicate: None,
        keys: vec![],
        orders: vec![],
        siblings: vec![],
        columns: vec![],
        partitions: vec![],
    };
    let rules = Rules {
        index: &index,
        allow_seq_scan: &case.allow_seq_scan,
        reltuples: &reltuples,
    };
    let mut v = judge_plan(&load(&custom), &rules);
    let generic = dir.join(format!("{label}.generic.json"));
    if generic.exists() {
        v = judge_generic(v, judge_plan(&load(&generic), &rules), &case.index);
    }
    Some(v)
}

fn expected(folder: &str) -> Verdict {
    let kind = folder.split('/').next().unwrap();
    serde_json::from_value(serde_json::Value::String(kind.into()))
        .unwrap_or_else(|_| panic!("{folder}: not a verdict folder"))
}

#[test]
fn every_captured_plan_gets_its_folders_verdict_on_15_and_18() {
    let mut report = String::new();
    let mut judged = 0;
    for (name, dir) in cases() {
        let want = expected(&name);
        for label in ["pg15", "pg18"] {
            let v = judge(&dir, label).unwrap_or_else(|| {
                panic!("{name}: no {label} capture (run tests/plans/capture.py)")
            });
            assert_eq!(v.verdict, want, "{label} {name}: {v:?}");
            report.push_str(&format!("{label} {name}: {}: {}\n", v.verdict, v.message));
            judged += 1;
        }
    }
    assert!(judged >= 20, "only {judged} captured plans");
    insta::assert_snapshot!(report);
}

#[test]
fn postgresql_18_marks_the_disabled_seq_scan_and_15_prices_it_out() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plans/not-chosen/disabled-seq-scan-still-won");
    let pg15 = load(&dir.join("pg15.custom.json"));
    let pg18 = load(&dir.join("pg18.custom.json"));
    let seq15 = pg15
        .nodes()
        .into_iter()
        .find(|n| n.node_type == "Seq Scan")
        .unwrap();
    let seq18 = pg18
        .nodes()
        .into_iter()
        .find(|n| n.node_type == "Seq Scan")
        .unwrap();
    assert!(seq15.total_cost >= 1e10, "{}", seq15.total_cost);
    assert_eq!(seq15.disabled, None);
    assert_eq!(seq18.disabled, Some(true));
    assert!(seq18.total_cost < 1e10);
}

#[test]
fn every_verdict_a_plan_alone_can_give_has_captured_cases() {
    let folders: Vec<String> = cases()
        .into_iter()
        .map(|(n, _)| n.split('/').next().unwrap().to_string())
        .collect();
    for kind in ["pass", "not-chosen", "seq-scan", "generic-plan"] {
        assert!(
            folders.iter().any(|f| f == kind),
            "no captured case for {kind}"
        );
    }
}
