//! Plan baselines: the shape of each plan of a check (custom, and generic where there is one),
//! recorded by `plancheck accept` under `baselines/NAME.SCOPE.plan`, and compared by `check`. A
//! plan that changed shape but still uses the required index (a new join order, a Sort that
//! appeared, an index-only scan that became an index scan) is `plan-changed`: a warning, or a
//! failure with `--strict-plans`.

use super::shape;
use crate::measure::{Measured, Measurement, Outcome};

/// The first lines of every baseline file: what it is, and how to renew it.
fn header(m: &Measurement) -> String {
    format!(
        "# plancheck plan shape of {} [{}]: recorded by `plancheck accept`, compared by \
         `plancheck check`.\n# Costs, rows, timings, buffers, workers and constants are not part \
         of it; see \"Plan baselines\" in plancheck's documentation.\n",
        m.read_path, m.scope
    )
}

pub use crate::model::baseline_path as path;

/// The shapes of a measured check's plans, as the file holds them, without the header.
fn shapes(measured: &Measured) -> Option<String> {
    let custom = measured.custom.last()?;
    let mut out = format!("[custom]\n{}", shape::of(custom.plan()));
    if let Some(generic) = &measured.generic {
        out.push_str(&format!("[generic]\n{}", shape::of(generic.plan())));
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

/// The baseline file `text` as plancheck reads it: its shapes (`[custom]`, then `[generic]`
/// where there is one) with comments and blank lines set aside, every line one that
/// [`record`] writes: a node (indented two spaces a level, an optional `[InitPlan] `-style
/// label, a node name of capitalised words, then ` using INDEX` and ` on RELATION`) or a detail
/// of the node above it (`Index Cond:`, `Recheck Cond:`, `Filter:`, `Sort Key:`). Anything else
/// is the number of the first line that is not a plan shape: a file linked or copied from
/// elsewhere is refused, and its lines are never shown in a diff.
pub fn parse(text: &str) -> Result<String, usize> {
    const DETAILS: [&str; 4] = ["Index Cond:", "Recheck Cond:", "Filter:", "Sort Key:"];
    let mut out = String::new();
    // The depth of the last node, or None before the first node of a section.
    let mut node: Option<usize> = None;
    let mut sections = 0;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let bad = || n + 1;
        if line.chars().any(char::is_control) {
            return Err(bad());
        }
        if line == "[custom]" && sections == 0 || line == "[generic]" && sections == 1 {
            sections += 1;
            node = None;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if sections == 0 {
            return Err(bad());
        }
        let rest = line.trim_start_matches(' ');
        let indent = line.len() - rest.len();
        if indent % 2 != 0 {
            return Err(bad());
        }
        let depth = indent / 2;
        if DETAILS.iter().any(|d| rest.starts_with(d)) {
            // A detail belongs to the node just above it, one level in.
            if node.is_none_or(|d| d + 1 != depth) {
                return Err(bad());
            }
        } else {
            let deeper_than_allowed = match node {
                None => depth != 0,
                Some(d) => depth > d + 1,
            };
            if deeper_than_allowed || !is_node_line(rest) {
                return Err(bad());
            }
            node = Some(depth);
        }
        out.push_str(line);
        out.push('\n');
    }
    if sections == 0 {
        return Err(text.lines().count().max(1));
    }
    Ok(out)
}

/// A node's line without its indent: `[label] ` (optional), a name of capitalised ASCII words
/// (`Index Only Scan`, `Nested Loop Anti Join`, `WindowAgg`), then nothing or ` using …` / ` on …`.
fn is_node_line(line: &str) -> bool {
    let line = match line.strip_prefix('[') {
        Some(labelled) => match labelled.split_once("] ") {
            Some((label, rest)) if !label.is_empty() => rest,
            _ => return false,
        },
        None => line,
    };
    let name_end = [" using ", " on "]
        .iter()
        .filter_map(|k| line.find(k))
        .min()
        .unwrap_or(line.len());
    let name = &line[..name_end];
    !name.is_empty()
        && name.split(' ').all(|word| {
            word.starts_with(|c: char| c.is_ascii_uppercase())
                && word.chars().all(|c| c.is_ascii_alphabetic())
        })
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
    use crate::measure::{Document, IndexLookup};
    use serde_json::json;

    fn measured(node: &str) -> Measurement {
        let index = IndexLookup::Missing {
            nearest: vec![],
            schemas: vec![],
        };
        let custom = Document::new(json!([{ "Plan": { "Node Type": "Limit", "Plans": [
            { "Node Type": node, "Index Name": "i", "Relation Name": "posts",
              "Schema": "public", "Index Cond": "(p.thread_id = 1)",
              "Total Cost": 3.0 }]}}]))
        .unwrap();
        Measurement::of_plans(index, vec![custom], None, 0)
    }

    fn inner(m: &Measurement) -> &Measured {
        match &m.outcome {
            Outcome::Measured(x) => x,
            Outcome::Failed(_) => unreachable!(),
        }
    }

    #[test]
    fn a_recorded_baseline_parses_as_itself_and_other_text_is_refused_by_line() {
        let mut m = measured("Index Scan");
        if let Outcome::Measured(x) = &mut m.outcome {
            x.generic = Some(x.custom[0].clone());
        }
        let file = record(&m).unwrap();
        assert_eq!(parse(&file).unwrap(), body(&file));
        let shape = "[custom]\nLimit\n  Nested Loop Anti Join\n    [InitPlan] Seq Scan on forums\n      \
                     Filter: id\n    Index Scan Backward using i on s.t\n      Index Cond: a, b\n      \
                     Sort Key: created_at DESC\n";
        assert!(parse(shape).is_ok(), "{:?}", parse(shape));
        for (text, line) in [
            ("localhost:5432:*:u:s3cret-pw-9f1\n", 1),
            (
                "# comment\n\n[custom]\nLimit\nlocalhost:5432:*:u:s3cret\n",
                5,
            ),
            ("[custom]\n  Limit\n", 2),
            ("[custom]\nLimit\n      Seq Scan on t\n", 3),
            ("[custom]\nFilter: id\n", 2),
            ("[custom]\nLimit\n Seq Scan on t\n", 3),
            ("[custom]\nseq scan on t\n", 2),
            ("[custom]\nLimit\x00\n", 2),
            ("[generic]\nLimit\n", 1),
            ("[custom]\n[custom]\n", 2),
            ("", 1),
            ("# only a comment\n", 1),
        ] {
            assert_eq!(parse(text), Err(line), "{text:?}");
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
