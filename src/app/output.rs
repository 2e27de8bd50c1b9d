//! Where a run's report goes, and how it is laid out for there: stdout in the chosen format,
//! fitted to the terminal and coloured as `--color` and `NO_COLOR` say; the files of
//! `--report FORMAT=FILE`; and in GitHub Actions, annotations after the table and Markdown
//! appended to the job summary. Decided here, once, so that `report` stays pure rendering.

use std::collections::BTreeMap;
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
        append(summary, &markdown)
            .map_err(|e| OutputFailure(report::stderr::summary_unwritten(summary, &e)))?;
    }
    for file in &args.report {
        let text = report::render(report, file.format.into(), Style::PLAIN);
        write_report(&format_name(file.format), &file.path, &text)?;
    }
    Ok(())
}

/// A `--report FORMAT=FILE`, written. Replaced, never written through: a link committed where
/// the report goes is not followed, and no folder from the current one down may be a link.
pub(super) fn write_report(format: &str, path: &Path, text: &str) -> crate::error::Result<()> {
    crate::files::replace_given(path, text.as_bytes()).map_err(|e| {
        OutputFailure(report::stderr::report_file_unwritten(format, path, &e.why)).into()
    })
}

/// The performance page of `demo --ladder`: on stdout in the chosen format (the table is the
/// checks' table and the ladder's; markdown and json the whole page), in each `--report` file
/// (markdown and json the page, the other formats the checks' report), the chart where
/// `--chart` says; in GitHub Actions the page is the job summary.
pub(super) fn emit_page(
    checks: &Report,
    ladder: &report::ladder::LadderReport,
    setup: &dyn Fn(Option<&Path>) -> report::page::PageSetup,
    args: &VerdictArgs,
    chart: Option<&Path>,
) -> crate::error::Result<()> {
    let output = Output::of_process(args);
    let render = |format: FormatArg, style: Style, at: Option<&Path>| match format {
        FormatArg::Markdown => report::page::markdown(&setup(at), checks, ladder),
        FormatArg::Json => report::page::json(&setup(at), checks, ladder),
        FormatArg::Table => format!(
            "{}\n{}",
            report::render(checks, Format::Table, style),
            report::ladder::text(ladder, style)
        ),
        other => report::render(checks, other.into(), style),
    };
    if let Some(path) = chart {
        crate::files::replace_given(path, report::ladder::svg(ladder).as_bytes())
            .map_err(|e| OutputFailure(report::stderr::chart_unwritten(path, &e.why)))?;
    }
    write_stdout(&render(args.format, output.style, None))?;
    if let Some(summary) = &output.step_summary {
        append(summary, &render(FormatArg::Markdown, Style::PLAIN, None))
            .map_err(|e| OutputFailure(report::stderr::summary_unwritten(summary, &e)))?;
    }
    for file in &args.report {
        let text = render(file.format, Style::PLAIN, Some(&file.path));
        write_report(&format_name(file.format), &file.path, &text)?;
    }
    Ok(())
}

fn format_name(f: FormatArg) -> String {
    use clap::ValueEnum;
    f.to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// Appends to a file, as GitHub asks of every step writing its summary; never through a link
/// ([`crate::files::append_given`]).
fn append(path: &Path, text: &str) -> Result<(), crate::files::Why> {
    crate::files::append_given(path, text.as_bytes()).map_err(|e| e.why)
}

/// `path` as a path from `base` when it lies below it (both resolved, `..` and links, so
/// `--project ../app` is found below the repository), else as it is.
fn from_base(base: Option<&Path>, path: &str) -> String {
    let resolved = base
        .and_then(|b| std::fs::canonicalize(b).ok())
        .zip(std::fs::canonicalize(path).ok());
    match resolved {
        Some((base, file)) => match file.strip_prefix(&base) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.to_string(),
        },
        None => path.to_string(),
    }
}

/// The places errors were located at, as paths from the base folder, as [`locations`] gives
/// the expectations'.
pub(super) fn relative_spots(report: &mut Report, base: Option<&Path>) {
    let checks = report
        .checks
        .iter_mut()
        .chain(report.before.iter_mut().flatten());
    for at in checks.filter_map(|c| c.at.as_mut()) {
        at.path = from_base(base, &at.path);
    }
}

/// Where each check's expectation is written, for annotations: the file as a path from `base`
/// (the repository's root in GitHub Actions, else the current folder), and the line of the scope's table in it, found in the text the project was
/// loaded from (the file is not read again). A project not read from a folder (the built-in
/// reference project) gives no location; a scope not found in it (declared only in `plancheck.toml`)
/// gives the file without a line.
pub(super) fn locations(
    project: &Project,
    base: Option<&Path>,
) -> BTreeMap<(String, String), Location> {
    let mut out = BTreeMap::new();
    if !project.on_disk {
        return out;
    }
    for rp in &project.read_paths {
        let shown = from_base(base, &rp.expectation_path);
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

#[cfg(test)]
mod tests {
    use super::from_base;

    #[test]
    fn paths_are_given_from_the_base_folder_whatever_way_they_were_named() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        std::fs::create_dir_all(repo.join("app/expectations")).unwrap();
        std::fs::create_dir_all(repo.join("tools")).unwrap();
        let file = repo.join("app/expectations/feed.toml");
        std::fs::write(&file, "").unwrap();
        // `--project ../app` from repo/tools, as a CI step in a subfolder names it.
        let named = repo.join("tools/../app/expectations/feed.toml");
        assert_eq!(
            from_base(Some(&repo), named.to_str().unwrap()),
            "app/expectations/feed.toml"
        );
        // Outside the base, or with no base: as named.
        let elsewhere = root.path().join("other");
        std::fs::create_dir_all(&elsewhere).unwrap();
        assert_eq!(
            from_base(Some(&elsewhere), file.to_str().unwrap()),
            file.to_str().unwrap()
        );
        assert_eq!(
            from_base(None, "expectations/x.toml"),
            "expectations/x.toml"
        );
    }
}
