//! Where a run's report goes, and how it is laid out for there: stdout in the chosen format,
//! fitted to the terminal and coloured as `--color` and `NO_COLOR` say; the files of
//! `--report FORMAT=FILE`; and in GitHub Actions, annotations after the table and Markdown
//! appended to the job summary. Decided here, once, so that `report` stays pure rendering.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::write_stdout;
use crate::cli::settings::Output;
use crate::cli::{FormatArg, VerdictArgs};
use crate::error::OutputFailure;
use crate::project::Project;
use crate::report::{self, Format, Location, Report, Style};

/// Prints the report on stdout and writes every other output the run asked for. A file that
/// cannot be written is an [`OutputFailure`] (exit 4), after stdout has had the report.
pub(super) fn emit(report: &Report, args: &VerdictArgs) -> crate::error::Result<()> {
    let output = Output::of_process(args);
    let format: Format = args.format.into();
    let mut text = report::render(report, format, output.style);
    // In GitHub Actions the table is for people reading the log; the annotations put each
    // failure on the expectation file in the pull request.
    if format == Format::Table && output.github_actions {
        text.push_str(&report::annotations(report));
    }
    write_stdout(&text)?;
    if let Some(summary) = &output.step_summary {
        let markdown = report::render(report, Format::Markdown, Style::PLAIN);
        append(summary, &markdown).map_err(|e| {
            OutputFailure(format!(
                "cannot append the summary to $GITHUB_STEP_SUMMARY ({}): {e}",
                summary.display()
            ))
        })?;
    }
    for file in &args.report {
        let text = report::render(report, file.format.into(), Style::PLAIN);
        // Replaced, never written through: a link committed where the report goes is not
        // followed, and no folder from the current one down may be a link.
        crate::files::replace_given(&file.path, text.as_bytes()).map_err(|e| {
            OutputFailure(format!(
                "--report {}={}: {}",
                format_name(file.format),
                file.path.display(),
                e.why
            ))
        })?;
    }
    Ok(())
}

fn format_name(f: FormatArg) -> String {
    use clap::ValueEnum;
    f.to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// Appends to a file, as GitHub asks of every step writing its summary.
fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.flush()
}

/// `path` as a path from the current folder `here` when it lies below it, else as it is.
fn from_here(here: Option<&Path>, path: &str) -> String {
    let path = Path::new(path);
    here.and_then(|h| path.strip_prefix(h).ok())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The places errors were located at, as paths from the current folder, as [`locations`] gives
/// the expectations'.
pub(super) fn relative_spots(report: &mut Report) {
    let here = std::env::current_dir().ok();
    let checks = report
        .checks
        .iter_mut()
        .chain(report.before.iter_mut().flatten());
    for at in checks.filter_map(|c| c.at.as_mut()) {
        at.path = from_here(here.as_deref(), &at.path);
    }
}

/// Where each check's expectation is written, for annotations: the file as a path from the
/// current folder, and the line of the scope's table in it, found in the text the project was
/// loaded from (the file is not read again). A project not read from a folder (the built-in
/// reference project) gives no location; a scope not found in it (declared only in `plancheck.toml`)
/// gives the file without a line.
pub(super) fn locations(project: &Project) -> BTreeMap<(String, String), Location> {
    let mut out = BTreeMap::new();
    let here = std::env::current_dir().ok();
    if !project.on_disk {
        return out;
    }
    for rp in &project.read_paths {
        let shown = from_here(here.as_deref(), &rp.expectation_path);
        for check in &rp.checks {
            out.insert(
                (rp.name.clone(), check.scope.clone()),
                Location {
                    path: shown.clone(),
                    line: rp.scope_line(&check.scope),
                },
            );
        }
    }
    out
}
