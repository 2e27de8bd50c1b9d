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
    text.push_str(&scope_table(scope, index, large, generic_differs));
    text
}

/// A `[scopes.NAME]` table requiring `index`, with the relations the plan reads whole listed
/// above it (a check fails on them until they are allowed or the plan changes), and how the
/// generic plan reads the table instead when it does not use `index`.
pub fn scope_table(
    scope: &str,
    index: &str,
    seq_scans: &[(String, f64)],
    generic_differs: Option<&str>,
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
    text.push_str(&format!(
        "[scopes.{scope}]\nindex = {}\n",
        toml_string(index)
    ));
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
        let exp = expectation(&g, "member", "posts_thread_idx", &small, &large, None);
        let sql = "SELECT * FROM posts WHERE thread_id = $1 AND body <> $2";
        let project = crate::project::load_texts(&exp, Some(sql), None).unwrap();
        let check = &project.read_paths[0].checks[0];
        assert_eq!(check.scope, "member");
        assert_eq!(check.index, "posts_thread_idx");
        assert_eq!(check.params, ["'5'", "'it''s \"quoted\"\\'"]);
        assert_eq!(project.read_paths[0].allow_seq_scan, ["members"]);
        assert!(exp.contains("#   members (about 1200 rows)"), "{exp}");
        assert!(
            exp.contains("#   threads (about 90000 rows)\n[scopes.member]"),
            "{exp}"
        );
    }
}
