//! Plan baselines: the shape of each plan of a check (custom, and generic where there is one),
//! recorded by `plancheck accept` under `baselines/NAME.SCOPE.plan`, and compared by `check`. A
//! plan that changed shape but still uses the required index (a new join order, a Sort that
//! appeared, an index-only scan that became an index scan) is `plan-changed`: a warning, or a
//! failure with `--strict-plans`.

use super::shape;
use crate::explain::Explain;
use crate::measure::{Measured, Measurement, Outcome};

/// The first lines of every baseline file: what it is, and how to renew it.
fn header(m: &Measurement) -> String {
    format!(
        "# plancheck plan shape of {} [{}]: recorded by `plancheck accept`, compared by \
         `plancheck check`.\n# Costs, rows, timings, buffers, workers and constants are not part \
         of it; see the README (Plan baselines).\n",
        m.read_path, m.scope
    )
}

pub use crate::model::baseline_path as path;

/// The shapes of a measured check's plans, as the file holds them, without the header.
fn shapes(measured: &Measured) -> Option<String> {
    let custom = measured.custom.last()?;
    let mut out = format!("[custom]\n{}", shape::of(&Explain::from_json(custom).ok()?));
    if let Some(generic) = &measured.generic {
        out.push_str(&format!(
            "[generic]\n{}",
            shape::of(&Explain::from_json(generic).ok()?)
        ));
    }
    Some(out)
}

/// The baseline file `plancheck accept` writes for a check, or `None` when it was not measured.
pub fn record(m: &Measurement) -> Option<String> {
    match &m.outcome {
        Outcome::Measured(measured) => Some(format!("{}{}", header(m), shapes(measured)?)),
        Outcome::Failed(_) => None,
    }
}

/// The file's shapes, comments and blank lines set aside.
fn body(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

/// The diff of the measured plans against `baseline` (the file's text): empty when the shapes
/// are the same.
pub fn compare(measured: &Measured, baseline: &str) -> Vec<String> {
    let Some(now) = shapes(measured) else {
        return Vec::new();
    };
    shape::diff(&body(baseline), &body(&now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{IndexLookup, Requirement};
    use serde_json::json;

    fn measured(node: &str) -> Measurement {
        Measurement {
            format: crate::measure::FORMAT.into(),
            version: crate::measure::VERSION,
            read_path: "p".into(),
            scope: "member".into(),
            requires: Requirement::default(),
            settings: vec![],
            parameters: 0,
            outcome: Outcome::Measured(Box::new(Measured {
                index: IndexLookup::Missing {
                    nearest: vec![],
                    schemas: vec![],
                },
                alternatives: vec![],
                custom: vec![json!([{ "Plan": { "Node Type": "Limit", "Plans": [
                    { "Node Type": node, "Index Name": "i", "Relation Name": "posts",
                      "Schema": "public", "Index Cond": "(p.thread_id = 1)",
                      "Total Cost": 3.0 }]}}])],
                generic: None,
                probes: vec![],
                relations: vec![],
                non_immutable: vec![],
                replan_skipped: None,
                session: Vec::new(),
            })),
        }
    }

    fn inner(m: &Measurement) -> &Measured {
        match &m.outcome {
            Outcome::Measured(x) => x,
            Outcome::Failed(_) => unreachable!(),
        }
    }

    #[test]
    fn a_recorded_baseline_compares_equal_and_a_changed_scan_does_not() {
        let m = measured("Index Scan");
        let file = record(&m).unwrap();
        assert!(
            file.starts_with("# plancheck plan shape of p [member]"),
            "{file}"
        );
        assert!(compare(inner(&m), &file).is_empty());
        let d = compare(inner(&measured("Index Only Scan")), &file);
        assert!(
            d.contains(&"-   Index Scan using i on posts".to_string()),
            "{d:?}"
        );
        assert!(
            d.contains(&"+   Index Only Scan using i on posts".to_string()),
            "{d:?}"
        );
    }

    #[test]
    fn comments_and_blank_lines_in_a_baseline_do_not_count() {
        let m = measured("Index Scan");
        let file = record(&m)
            .unwrap()
            .replace("[custom]\n", "\n# a note\n[custom]\n\n");
        assert!(compare(inner(&m), &file).is_empty());
    }
}
