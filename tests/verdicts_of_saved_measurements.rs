//! The judge, with no database, over measurements captured from real servers, PostgreSQL 15 and
//! 18, whose EXPLAIN JSON differs (fractional `Actual Rows`, `Disabled`, `Index Searches`,
//! InitPlan labels). One folder per expected verdict under `tests/plans/`, each case a
//! `case.toml` (how it was captured) and `pg15.measurement.json` / `pg18.measurement.json`
//! (what `check --save-plans` wrote); `tests/plans/capture.py` recaptures them.

use std::fs;
use std::path::{Path, PathBuf};

use plancheck::measure::{Measurement, Outcome};
use plancheck::verdict::{CheckResult, Judging, Verdict, judge};

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

fn measurement(dir: &Path, label: &str) -> Measurement {
    let path = dir.join(format!("{label}.measurement.json"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run tests/plans/capture.py {label})",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Judges one captured case as PostgreSQL `label` measured it.
fn judged(dir: &Path, label: &str) -> CheckResult {
    judge(&measurement(dir, label), &Judging::default())
}

fn expected(folder: &str) -> Verdict {
    let kind = folder.split('/').next().unwrap();
    serde_json::from_value(serde_json::Value::String(kind.into()))
        .unwrap_or_else(|_| panic!("{folder}: not a verdict folder"))
}

#[test]
fn every_captured_measurement_gets_its_folders_verdict_on_15_and_18() {
    let mut report = String::new();
    let mut judged_count = 0;
    for (name, dir) in cases() {
        let want = expected(&name);
        for label in ["pg15", "pg18"] {
            let v = judged(&dir, label);
            assert_eq!(v.verdict, want, "{label} {name}: {}", v.message);
            report.push_str(&format!("{label} {name}: {}: {}\n", v.verdict, v.message));
            judged_count += 1;
        }
    }
    assert!(
        judged_count >= 20,
        "only {judged_count} captured measurements"
    );
    insta::assert_snapshot!(report);
}

#[test]
fn postgresql_18_marks_the_disabled_seq_scan_and_15_prices_it_out() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plans/not-usable/disabled-seq-scan-still-won");
    let first_plan = |label: &str| {
        let Outcome::Measured(m) = measurement(&dir, label).outcome else {
            panic!("{label}: not measured")
        };
        m.custom[0].plan().clone()
    };
    let (pg15, pg18) = (first_plan("pg15"), first_plan("pg18"));
    let seq15 = pg15
        .nodes()
        .into_iter()
        .find(|n| n.node_type == "Seq Scan")
        .cloned()
        .unwrap();
    let seq18 = pg18
        .nodes()
        .into_iter()
        .find(|n| n.node_type == "Seq Scan")
        .cloned()
        .unwrap();
    assert!(seq15.total_cost >= 1e10, "{}", seq15.total_cost);
    assert_eq!(seq15.disabled, None);
    assert_eq!(seq18.disabled, Some(true));
    assert!(seq18.total_cost < 1e10);
}

#[test]
fn every_verdict_a_measurement_alone_can_give_has_captured_cases() {
    let folders: Vec<String> = cases()
        .into_iter()
        .map(|(n, _)| n.split('/').next().unwrap().to_string())
        .collect();
    for kind in [
        "pass",
        "not-chosen",
        "not-usable",
        "seq-scan",
        "generic-plan",
        "key-unused",
        "missing-index",
        "invalid-index",
    ] {
        assert!(
            folders.iter().any(|f| f == kind),
            "no captured case for {kind}"
        );
    }
}

#[test]
fn a_saved_measurement_judged_again_is_the_same_check() {
    // What `plancheck judge` relies on: the saved form reads back into what was written.
    for (name, dir) in cases() {
        for label in ["pg15", "pg18"] {
            let m = measurement(&dir, label);
            let again: Measurement =
                serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
            let (a, b) = (
                judge(&m, &Judging::default()),
                judge(&again, &Judging::default()),
            );
            assert_eq!(
                (a.verdict, &a.message),
                (b.verdict, &b.message),
                "{label} {name}"
            );
        }
    }
}

#[test]
fn a_plan_accepted_on_15_is_the_same_shape_on_18() {
    // The baseline normalisation holds across versions: every captured case's pg15 plans,
    // recorded as a baseline, compare equal with the same case measured on 18.
    let mut compared = 0;
    for (name, dir) in cases() {
        let (pg15, pg18) = (measurement(&dir, "pg15"), measurement(&dir, "pg18"));
        let Some(baseline) = plancheck::verdict::baseline::record(&pg15) else {
            continue;
        };
        let Outcome::Measured(on18) = &pg18.outcome else {
            continue;
        };
        let diff = plancheck::verdict::baseline::compare(on18, &baseline);
        assert!(diff.is_empty(), "{name}: {}", diff.join("\n"));
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} cases compared");
}

/// The copy's answer counts only where it planned the statement the server measured: the same
/// captured measurement, its copy's conditions changed (a constant folded otherwise there), or
/// the comparison taken out (a measurement saved before plancheck made it), settles nothing.
#[test]
fn a_copy_that_planned_another_statement_settles_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans");
    for (case, verdict) in [
        ("not-usable/in-list-admits-deleted", Verdict::NotUsable),
        ("not-chosen/usable-on-the-copy", Verdict::NotChosen),
    ] {
        for label in ["pg15", "pg18"] {
            let dir = root.join(case);
            let as_captured = judged(&dir, label);
            assert_eq!(as_captured.verdict, verdict, "{case} {label}");
            assert!(
                as_captured.settled_by.is_some(),
                "{case} {label}: {}",
                as_captured.message
            );
            let path = dir.join(format!("{label}.measurement.json"));
            let text = fs::read_to_string(&path).unwrap();
            for (how, edit) in [
                (
                    "changed",
                    r#""copy":["Filter: (p.visibility = 'other'::text)"]"#,
                ),
                ("absent", ""),
            ] {
                let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
                let mut edited = 0;
                edit_same_statement(&mut value, &mut |same| {
                    edited += 1;
                    match how {
                        "changed" => {
                            let v: serde_json::Value =
                                serde_json::from_str(&format!("{{{edit}}}")).unwrap();
                            same["copy"] = v["copy"].clone();
                            true
                        }
                        _ => false,
                    }
                });
                assert!(edited > 0, "{case} {label}: no copy's re-plan in it");
                let m: Measurement = serde_json::from_value(value).unwrap();
                let c = judge(&m, &Judging::default());
                assert_ne!(
                    c.settled_by,
                    Some(plancheck::verdict::Settled::Scratch),
                    "{case} {label} {how}: {}",
                    c.message
                );
                let said = format!("{} {:?}", c.message, c.unsettled);
                let expected = match how {
                    "changed" => "the copy planned another statement",
                    _ => "does not show that the copy planned the statement",
                };
                assert!(said.contains(expected), "{case} {label} {how}: {said}");
            }
        }
    }
}

/// Calls `edit` on every `same_statement` object of a saved measurement; where it answers false
/// the object is removed.
fn edit_same_statement(
    v: &mut serde_json::Value,
    edit: &mut dyn FnMut(&mut serde_json::Value) -> bool,
) {
    match v {
        serde_json::Value::Object(map) => {
            if let Some(same) = map.get_mut("same_statement")
                && !edit(same)
            {
                map.remove("same_statement");
            }
            for (_, child) in map.iter_mut() {
                edit_same_statement(child, edit);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                edit_same_statement(item, edit);
            }
        }
        _ => {}
    }
}

#[test]
fn a_read_inside_a_function_call_is_judged_from_the_counts_saved_with_the_measurement() {
    // Saved with the counts, the measurement fails as judged where it was measured; the same
    // measurement without them (as an older plancheck saved it) is judged by its plan alone,
    // which shows a page of 20 rows through the required index: the counts are what fail it.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plans/seq-scan/read-inside-a-function-call");
    for label in ["pg15", "pg18"] {
        let m = measurement(&dir, label);
        let r = judge(&m, &Judging::default());
        assert_eq!(r.verdict, Verdict::SeqScan, "{label}: {}", r.message);
        assert_eq!(r.read_in_calls, vec!["posts".to_string()], "{label}");
        for part in ["PostgreSQL counted", "rows of posts", "app_post_count()"] {
            assert!(
                r.message.contains(part),
                "{label}: no {part:?} in {}",
                r.message
            );
        }
        let mut json: serde_json::Value = serde_json::to_value(&m).unwrap();
        let measured = &mut json["outcome"]["measured"];
        assert!(
            measured["counted"]["runs"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        );
        measured.as_object_mut().unwrap().remove("counted");
        let older: Measurement = serde_json::from_value(json).unwrap();
        let r = judge(&older, &Judging::default());
        assert_eq!(r.verdict, Verdict::Pass, "{label}: {}", r.message);
    }
}
