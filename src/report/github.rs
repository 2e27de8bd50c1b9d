//! GitHub Actions workflow commands: an `::error` annotation for each check that fails the run,
//! on the line of its `[scopes.NAME]` table in `expectations/NAME.toml` when the report knows
//! where that is; a `::warning` for each warning; an `::error` for each index problem. GitHub
//! shows them on the pull request's changed files and on the run's summary.
//!
//! Printed alone by `--format github`, and after the table when `GITHUB_ACTIONS=true`.

use super::{Outcome, Report, check_name, outcome};
use crate::verdict::CheckResult;

/// `--format github`: the annotations, then the summary line (a plain log line).
pub(super) fn github(report: &Report) -> String {
    format!("{}{}\n", annotations(report), super::summary_line(report))
}

/// GitHub shows at most this many `::error` and this many `::warning` annotations of a step;
/// the rest are dropped unseen.
const SHOWN_A_STEP: usize = 10;

/// The workflow commands alone, a line each: the first [`SHOWN_A_STEP`] errors and warnings,
/// then a line saying how many more there are and where they are (the job summary, the table).
pub fn annotations(report: &Report) -> String {
    let all = every_annotation(report);
    let mut out = String::new();
    let (mut errors, mut warnings) = (0, 0);
    for (kind, line) in &all {
        let shown = match *kind {
            "error" => &mut errors,
            "warning" => &mut warnings,
            _ => {
                out.push_str(line);
                continue;
            }
        };
        *shown += 1;
        if *shown <= SHOWN_A_STEP {
            out.push_str(line);
        }
    }
    for (kind, count) in [("error", errors), ("warning", warnings)] {
        if count > SHOWN_A_STEP {
            let more = count - SHOWN_A_STEP;
            out.push_str(&command(
                "notice",
                &[("title", format!("plancheck: {more} more {kind}s"))],
                &format!(
                    "GitHub shows {SHOWN_A_STEP} {kind} annotations a step: {more} more are not \
                     annotated; the job summary and the table in the log list every one"
                ),
            ));
        }
    }
    out
}

/// Every annotation, with its kind, in the report's order.
fn every_annotation(report: &Report) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = report
        .checks
        .iter()
        .filter_map(|c| check_annotation(report, c))
        .collect();
    for f in &report.lint {
        let mut props = Vec::new();
        if let Some(path) = report.file_of(&f.read_path) {
            props.push(("file", path.to_string()));
        }
        props.push((
            "title",
            format!("plancheck: {} index {}", f.read_paths().join(", "), f.index),
        ));
        let mut message = f.problem.clone();
        for d in &f.definitions {
            message.push_str(&format!("\n{d}"));
        }
        let kind = if f.fails() { "error" } else { "warning" };
        out.push((kind, command(kind, &props, &message)));
    }
    for c in &report.checks {
        let Some(past) = super::past_policies(c) else {
            continue;
        };
        let mut props = Vec::new();
        if let Some(at) = report.location_of(c) {
            props.push(("file", at.path.clone()));
            if let Some(line) = at.line {
                props.push(("line", line.to_string()));
            }
        }
        let title = format!("plancheck: {} reads past row-level security", check_name(c));
        props.push(("title", title));
        out.push(("warning", command("warning", &props, &past)));
    }
    for line in super::applied_lines(report) {
        out.push((
            "notice",
            command(
                "notice",
                &[("title", "plancheck: settings applied".to_string())],
                &line,
            ),
        ));
    }
    for r in &report.role_warnings {
        out.push((
            "warning",
            command(
                "warning",
                &[("title", format!("plancheck: the role has {}", r.right))],
                &r.what,
            ),
        ));
    }
    out
}

/// A check's annotation, with its kind: none for a pass, a warning for what does not fail the
/// run, an error for what does. Its message is the verdict's whole message, then what was used
/// instead unless the message says it already, then the fix the table gives.
fn check_annotation(report: &Report, c: &CheckResult) -> Option<(&'static str, String)> {
    let kind = match outcome(report, c) {
        Outcome::Pass => return None,
        Outcome::Warning | Outcome::NoStatistics => "warning",
        Outcome::Failure | Outcome::Error => "error",
    };
    let mut props = Vec::new();
    // An error the server located in a plan or expectation is shown at that line; every
    // other verdict at the scope's table in its expectation.
    if let Some(at) = &c.at {
        props.push(("file", at.path.clone()));
        props.push(("line", at.line.to_string()));
        props.push(("col", at.column.to_string()));
    } else if let Some(at) = report.location_of(c) {
        props.push(("file", at.path.clone()));
        if let Some(line) = at.line {
            props.push(("line", line.to_string()));
        }
    }
    props.push((
        "title",
        format!("plancheck: {} {}", check_name(c), c.verdict),
    ));
    let mut message = c.message.clone();
    // Each access path the message names already (`used instead: Seq Scan on posts (99 rows
    // removed by filter)`) is not said twice.
    if !c.instead.iter().all(|i| message.contains(i.as_str())) {
        message.push_str(&format!("\nused instead: {}", c.instead.join("; ")));
    }
    // The fix the table gives, unless the message ends with its own (a seq scan's).
    if let Some(fix) = super::brief::of(c, report.require).fix
        && !c.message.contains("Fix: ")
    {
        message.push_str(&format!("\nfix: {fix}"));
    }
    Some((kind, command(kind, &props, &message)))
}

/// `::kind key=value,key=value::message`, escaped as GitHub's toolkit escapes them.
fn command(kind: &str, props: &[(&str, String)], message: &str) -> String {
    let props: Vec<String> = props
        .iter()
        .map(|(k, v)| format!("{k}={}", escape_property(v)))
        .collect();
    let sep = if props.is_empty() { "" } else { " " };
    format!(
        "::{kind}{sep}{}::{}\n",
        props.join(","),
        escape_data(message)
    )
}

/// A command's message: `%`, `\r` and `\n` escaped, so that a message is one line and a `%` in
/// it is not read as an escape.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value: as a message, and `:` and `,`, which end a value.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_and_data_are_escaped_as_the_toolkit_does() {
        assert_eq!(
            escape_data("50% of a\r\nb: c, d"),
            "50%25 of a%0D%0Ab: c, d"
        );
        assert_eq!(
            escape_property("50% of a\r\nb: c, d"),
            "50%25 of a%0D%0Ab%3A c%2C d"
        );
        assert_eq!(
            command(
                "error",
                &[("file", "a,b.toml".into()), ("line", "3".into())],
                "x::y"
            ),
            "::error file=a%2Cb.toml,line=3::x::y\n"
        );
        assert_eq!(command("warning", &[], "m"), "::warning::m\n");
    }
}
