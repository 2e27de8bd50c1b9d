//! What `plancheck list` prints: every check a run would make, read path × scope, with the
//! index each requires and where its expectation says so.

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

use super::LintFormat;
use crate::project::Project;

/// One check of the list.
#[derive(Debug, Serialize)]
struct Listed<'a> {
    read_path: &'a str,
    scope: &'a str,
    /// The required index, as written; `null` for `index = false`.
    index: Option<&'a str>,
    /// With `index = ["a", "b"]`: every index the scope accepts, the required one first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    accepted: Vec<&'a str>,
    plan: &'a str,
    expectation: &'a str,
    /// The line of the scope's table in the expectation; none when it is declared only in
    /// plancheck.toml.
    line: Option<usize>,
}

fn listed(project: &Project) -> Vec<Listed<'_>> {
    let mut out = Vec::new();
    for rp in &project.read_paths {
        for c in &rp.checks {
            let accepted = if c.also.is_empty() {
                Vec::new()
            } else {
                c.index.iter().chain(&c.also).map(String::as_str).collect()
            };
            out.push(Listed {
                read_path: &rp.name,
                scope: &c.scope,
                index: c.index.as_deref(),
                accepted,
                plan: &rp.plan_path,
                expectation: &rp.expectation_path,
                line: rp.scope_line(&c.scope),
            });
        }
    }
    out
}

/// The list in `format`: a table ending with how many checks, or JSON (`{"checks": [...]}`).
pub fn list(project: &Project, format: LintFormat) -> String {
    let checks = listed(project);
    match format {
        LintFormat::Json => {
            #[derive(Serialize)]
            struct Document<'a> {
                checks: Vec<Listed<'a>>,
            }
            let mut text = serde_json::to_string_pretty(&Document { checks })
                .unwrap_or_else(|e| format!("{{\"error\": \"could not serialise: {e}\"}}"));
            text.push('\n');
            text
        }
        LintFormat::Table => {
            let mut t = Table::new();
            t.load_preset(UTF8_FULL_CONDENSED).force_no_tty();
            t.set_header(["read path", "scope", "required index", "expectation"]);
            for c in &checks {
                let index = if c.index.is_none() {
                    crate::verdict::NO_INDEX.to_string()
                } else if c.accepted.is_empty() {
                    c.index.unwrap_or_default().to_string()
                } else {
                    format!("{} (or {})", c.accepted[0], c.accepted[1..].join(", "))
                };
                let at = match c.line {
                    Some(line) => format!("{}:{line}", c.expectation),
                    None => c.expectation.to_string(),
                };
                t.add_row([c.read_path, c.scope, &index, &at]);
            }
            let read_paths = project.read_paths.len();
            format!(
                "{t}\n{} check{} ({} read path{} × their scopes)\n",
                checks.len(),
                if checks.len() == 1 { "" } else { "s" },
                read_paths,
                if read_paths == 1 { "" } else { "s" },
            )
        }
    }
}
