//! The files a captured read path becomes: `plans/NAME.sql` (the logged statement verbatim,
//! under a comment saying where it came from) and `expectations/NAME.toml` (the logged values,
//! the index the plan uses now, the relations it reads whole left for the user to decide).

use super::group::Group;

/// `plans/NAME.sql`: a comment line, then the statement exactly as logged.
pub fn plan(group: &Group) -> String {
    let mut text = format!(
        "-- Captured by `plancheck capture` from {}:{} ({} logged statement{} of this shape).\n",
        one_line(&group.file),
        group.line,
        group.count,
        if group.count == 1 { "" } else { "s" }
    );
    text.push_str(group.text.trim_end());
    text.push('\n');
    text
}

/// `expectations/NAME.toml` for a read path seen under `scope` that requires `index`; `small`
/// relations (under `--min-rows`) are allowed the seq scan they get today, `large` ones are
/// listed for the user to decide.
pub fn expectation(
    group: &Group,
    scope: &str,
    index: &str,
    small: &[(String, f64)],
    large: &[(String, f64)],
    generic_differs: Option<&str>,
    buffers: Option<f64>,
) -> String {
    let mut text = String::from(
        "# Captured by `plancheck capture`. The required index is the one the plan uses today: a\n\
         # baseline, not a judgement. Make sure it is the index this read path needs.\n",
    );
    if !group.params.is_empty() {
        text.push_str("# The parameter values of one logged execution.\n");
        let values: Vec<String> = group.params.iter().map(|v| toml_string(v)).collect();
        text.push_str(&format!("params = [{}]\n", values.join(", ")));
    }
    if !small.is_empty() {
        text.push_str("# Small today (under --min-rows), and read whole by the plan:\n");
        let names: Vec<String> = small
            .iter()
            .map(|(relation, rows)| {
                text.push_str(&format!(
                    "#   {} (about {rows:.0} rows)\n",
                    one_line(relation)
                ));
                toml_string(relation)
            })
            .collect();
        text.push_str(&format!("allow_seq_scan = [{}]\n", names.join(", ")));
    }
    text.push('\n');
    text.push_str(&scope_table(scope, index, large, generic_differs, buffers));
    text
}

/// How much above what was measured a proposed buffers budget is set: twice, so a read path
/// fails its budget when its plan reads about twice the pages it read when it was captured.
pub const BUDGET_HEADROOM: f64 = 2.0;

/// The buffers budget proposed for a plan that read `measured` shared buffers (hit + read):
/// [`BUDGET_HEADROOM`] times that, rounded up to two significant digits; none for a plan
/// that read none.
pub fn proposed_buffers(measured: f64) -> Option<u64> {
    if measured.is_nan() || measured <= 0.0 {
        return None;
    }
    let want = (measured * BUDGET_HEADROOM).ceil();
    let step = 10f64.powi((want.log10().floor() as i32 - 1).max(0));
    Some(((want / step).ceil() * step) as u64)
}

/// A `[scopes.NAME]` table requiring `index`, with the relations the plan reads whole listed
/// above it (a check fails on them until they are allowed or the plan changes), and how the
/// generic plan reads the table instead when it does not use `index`.
pub fn scope_table(
    scope: &str,
    index: &str,
    seq_scans: &[(String, f64)],
    generic_differs: Option<&str>,
    buffers: Option<f64>,
) -> String {
    let mut text = String::new();
    if let Some(how) = generic_differs {
        text.push_str(&format!(
            "# The generic plan (what a prepared statement may switch to after five runs) does \
             not use\n# {index} today: {}. `check` reports generic-plan until it does.\n",
            one_line(how)
        ));
    }
    if !seq_scans.is_empty() {
        text.push_str(&format!(
            "# Read whole in scope {scope} today, which a check fails on; allow it\n\
             # (allow_seq_scan = [\"name\"] at the top of this file) or give it an index:\n"
        ));
        for (relation, rows) in seq_scans {
            text.push_str(&format!(
                "#   {} (about {rows:.0} rows)\n",
                one_line(relation)
            ));
        }
    }
    let budget = buffers.and_then(|measured| proposed_buffers(measured).map(|b| (measured, b)));
    if let Some((measured, _)) = budget {
        text.push_str(&format!(
            "# The plan read {measured:.0} shared buffers (hit + read) on the database it was \
             captured on;\n# the budget is {BUDGET_HEADROOM}× that, rounded up. A database of \
             another size reads another\n# number: set it from a production-like one.\n"
        ));
    }
    text.push_str(&format!(
        "[scopes.{scope}]\nindex = {}\n",
        toml_string(index)
    ));
    if let Some((_, budget)) = budget {
        text.push_str(&format!("budget = {{ buffers = {budget} }}\n"));
    }
    text
}

/// A TOML string holding `s` exactly, as the `toml` crate writes one.
pub fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `s` with line breaks and other control characters shown as `?`, for a comment line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(params: &[&str]) -> Group {
        Group {
            key: String::new(),
            text: "SELECT *\nFROM posts p\nWHERE p.thread_id = $1 AND p.visibility = 'visible'\n\n"
                .into(),
            params: params.iter().map(|p| p.to_string()).collect(),
            file: "logs/pg.csv".into(),
            line: 12,
            count: 3,
            unusable_values: 0,
        }
    }

    #[test]
    fn the_plan_is_the_statement_verbatim_under_a_comment() {
        let text = plan(&group(&["5"]));
        assert_eq!(
            text,
            "-- Captured by `plancheck capture` from logs/pg.csv:12 (3 logged statements of this \
             shape).\nSELECT *\nFROM posts p\nWHERE p.thread_id = $1 AND p.visibility = \
             'visible'\n"
        );
    }

    #[test]
    fn the_expectation_loads_with_its_values_and_index() {
        let g = group(&["5", "it's \"quoted\"\\"]);
        let small = [("members".to_string(), 1200.0)];
        let large = [("threads".to_string(), 90000.0)];
        let exp = expectation(
            &g,
            "member",
            "posts_thread_idx",
            &small,
            &large,
            None,
            Some(43.0),
        );
        let sql = "SELECT * FROM posts WHERE thread_id = $1 AND body <> $2";
        let project = crate::project::load_texts(&exp, Some(sql), None).unwrap();
        let check = &project.read_paths[0].checks[0];
        assert_eq!(check.scope, "member");
        assert_eq!(check.index.as_deref(), Some("posts_thread_idx"));
        assert_eq!(check.params, ["'5'", "'it''s \"quoted\"\\'"]);
        assert_eq!(project.read_paths[0].allow_seq_scan, ["members"]);
        assert!(exp.contains("#   members (about 1200 rows)"), "{exp}");
        assert!(exp.contains("#   threads (about 90000 rows)\n"), "{exp}");
        // The budget proposed from what was measured, with its headroom said.
        assert_eq!(check.budget.buffers, Some(86.0), "{exp}");
        assert!(exp.contains("read 43 shared buffers"), "{exp}");
    }

    #[test]
    fn a_proposed_budget_is_twice_the_measured_rounded_up_to_two_digits() {
        assert_eq!(proposed_buffers(0.0), None);
        assert_eq!(proposed_buffers(f64::NAN), None);
        assert_eq!(proposed_buffers(1.0), Some(2));
        assert_eq!(proposed_buffers(3.5), Some(7));
        assert_eq!(proposed_buffers(43.0), Some(86));
        assert_eq!(proposed_buffers(61.0), Some(130));
        assert_eq!(proposed_buffers(1234.0), Some(2500));
        assert_eq!(proposed_buffers(50_000.0), Some(100_000));
    }
}
