//! The settings a command runs with, merged once from its flags and the environment. The
//! precedence, highest first:
//!
//! 1. a flag (`--color`, `--iterations`, `--database-url`, …);
//! 2. an environment variable the flag names (`DATABASE_URL` for `--database-url`), or one every
//!    tool of its kind reads: `NO_COLOR` and `TERM=dumb` (no colour unless `--color always`),
//!    `COLUMNS` (the table's width), `GITHUB_ACTIONS` and `GITHUB_STEP_SUMMARY` (annotations and
//!    the job summary), libpq's `PG*` variables and password file (read where the connection
//!    string is resolved, [`crate::db::conninfo`]), `PLANCHECK_PG_BIN` and friends (where the
//!    throwaway servers find their binaries, [`crate::server`]);
//! 3. what the machine says: whether stdout is a terminal, and its width (stderr's, for what is
//!    said there);
//! 4. the defaults written on the flags.
//!
//! `plancheck.toml` holds the project's scopes and fragments, never a run setting, so it takes
//! no part here. Nor does the environment take part in a run's bounds (`--statement-timeout`,
//! `--lock-timeout`, `--temp-file-limit`, `--migration-hold`, …): each is the flag or its
//! default, so the command line a CI job's log shows is the whole of what bounded the run.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use super::{ColorArg, RunArgs, VerdictArgs};
use crate::db;
use crate::db::check::Settings;
use crate::project::Filter;
use crate::report::Style;
use crate::verdict;

/// Columns the table takes where stdout is no terminal (a CI log, a file, a pipe).
pub const DEFAULT_WIDTH: usize = 120;

/// How a check runs: the flags, before the server's own facts are read.
pub fn check_settings(run: &RunArgs) -> Settings {
    Settings {
        warmup: run.warmup,
        iterations: run.iterations,
        statement_timeout: run.statement_timeout,
        lock_timeout: run.lock_timeout,
        idle_in_transaction_timeout: run.idle_in_transaction_timeout,
        temp_file_limit: Some(run.temp_file_limit),
        watched: db::guard::Watched::default(),
        replan_without_rivals: false,
        session_per_check: run.session_per_check,
        scratch: db::scratch::Mode::default(),
        stats: None,
        counting: db::counts::Counting::default(),
    }
}

/// How long a `--migration` run may hold the migration's locks, from its `BEGIN` to its
/// rollback: `--migration-hold`, else its default (30 s: an application read queued behind the
/// migration's ACCESS EXCLUSIVE lock waits no longer than one of plancheck's own statements may
/// run at the default `--statement-timeout`).
pub fn migration_hold(args: &super::CheckArgs) -> std::time::Duration {
    args.migration_hold
}

/// Which read paths and scopes run: `--only`, `--scope`.
pub fn filter(run: &RunArgs) -> Filter {
    select(&run.select)
}

/// The read paths and scopes `--only` and `--scope` name.
pub fn select(select: &crate::cli::SelectOpts) -> Filter {
    Filter {
        only: select.only.clone(),
        scopes: select.scope.clone(),
        partition: select.partition,
    }
}

/// How the judge judges: `--large-rows`, `--strict-plans`.
pub fn judging(args: &VerdictArgs) -> verdict::Judging {
    verdict::Judging {
        large_rows: args.large_rows,
        strict_plans: args.strict_plans,
        require: args.require.into(),
        judge_unanalysed: args.unanalysed == crate::cli::UnanalysedArg::Judge,
        now: Some(chrono::DateTime::<chrono::Utc>::from(
            std::time::SystemTime::now(),
        )),
    }
}

/// Where the report goes and how it is laid out there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The table's width and whether stdout gets colour.
    pub style: Style,
    /// In GitHub Actions (`GITHUB_ACTIONS=true`): annotations follow the table.
    pub github_actions: bool,
    /// `GITHUB_STEP_SUMMARY`: the file the run's Markdown is appended to.
    pub step_summary: Option<PathBuf>,
    /// The folder file paths in reports are given from: `GITHUB_WORKSPACE` (the repository's
    /// root, which GitHub resolves annotations against), else the current folder.
    pub base: Option<PathBuf>,
}

impl Output {
    /// The output settings of this process: its flags, environment and stdout.
    pub fn of_process(args: &VerdictArgs) -> Output {
        let stdout = std::io::stdout();
        let terminal = stdout.is_terminal();
        let width = terminal.then(terminal_width).flatten();
        let mut output = Output::merge(args, &|name| std::env::var_os(name), terminal, width);
        if output.base.is_none() {
            output.base = std::env::current_dir().ok();
        }
        output
    }

    /// The merge itself, of flags, an environment (`env`), whether stdout is a terminal, and
    /// the terminal's width.
    pub fn merge(
        args: &VerdictArgs,
        env: &dyn Fn(&str) -> Option<OsString>,
        terminal: bool,
        terminal_width: Option<usize>,
    ) -> Output {
        let set = |name: &str| env(name).filter(|v| !v.is_empty());
        let columns = set("COLUMNS")
            .and_then(|v| v.to_str()?.trim().parse::<usize>().ok())
            .filter(|n| *n > 0);
        // `--color always|never` as said; `auto` only on a terminal that is not `TERM=dumb`,
        // and never when `NO_COLOR` is set to anything but the empty string
        // (<https://no-color.org>: a command-line flag overrides it, so `always` still colours).
        let color = match args.color {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto => {
                terminal && set("NO_COLOR").is_none() && env("TERM").is_none_or(|t| t != "dumb")
            }
        };
        Output {
            style: Style {
                // `COLUMNS` when set (as most tools read it; tests set it), else the terminal's.
                width: columns.or(terminal_width).unwrap_or(DEFAULT_WIDTH),
                color,
            },
            github_actions: env("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
            step_summary: set("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            base: set("GITHUB_WORKSPACE").map(PathBuf::from),
        }
    }
}

/// The width a table without colour may take on stdout (`plancheck ladder`'s): `COLUMNS`,
/// else the terminal's, else the default.
pub fn plain_style_of_process() -> Style {
    use std::io::IsTerminal;
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0);
    let terminal = std::io::stdout().is_terminal();
    Style {
        width: columns
            .or(terminal.then(terminal_width).flatten())
            .unwrap_or(DEFAULT_WIDTH),
        color: false,
    }
}

/// The columns a warning on stderr is wrapped to: `COLUMNS`, else the width of the terminal
/// stderr is, else the default (a CI log).
pub fn stderr_width() -> usize {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0);
    columns
        .or_else(|| {
            let (terminal_size::Width(columns), _) =
                terminal_size::terminal_size_of(std::io::stderr())?;
            (columns > 0).then_some(usize::from(columns))
        })
        .unwrap_or(DEFAULT_WIDTH)
}

/// The width of the terminal stdout is, as the kernel knows it.
fn terminal_width() -> Option<usize> {
    let (terminal_size::Width(columns), _) = terminal_size::terminal_size_of(std::io::stdout())?;
    (columns > 0).then_some(usize::from(columns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn verdict_args(flags: &[&str]) -> VerdictArgs {
        let mut argv = vec!["plancheck", "judge", "DIR"];
        argv.extend_from_slice(flags);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Judge(args) => args.verdict,
            _ => unreachable!(),
        }
    }

    fn merged(flags: &[&str], env: &[(&str, &str)], terminal: Option<usize>) -> Output {
        let env: Vec<(String, OsString)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Output::merge(&verdict_args(flags), &lookup, terminal.is_some(), terminal)
    }

    #[test]
    fn flags_then_environment_then_the_terminal_then_defaults() {
        // Nothing said, no terminal: the defaults.
        let o = merged(&[], &[], None);
        assert_eq!(
            (o.style.width, o.style.color, o.github_actions),
            (DEFAULT_WIDTH, false, false)
        );
        // A terminal: its width, and colour.
        let o = merged(&[], &[], Some(90));
        assert_eq!((o.style.width, o.style.color), (90, true));
        // COLUMNS over the terminal; NO_COLOR and TERM=dumb take the colour away…
        let o = merged(&[], &[("COLUMNS", "70"), ("NO_COLOR", "1")], Some(90));
        assert_eq!((o.style.width, o.style.color), (70, false));
        assert!(!merged(&[], &[("TERM", "dumb")], Some(90)).style.color);
        // …an empty NO_COLOR does not, and --color always wins over it and over a pipe.
        assert!(merged(&[], &[("NO_COLOR", "")], Some(90)).style.color);
        assert!(
            merged(&["--color", "always"], &[("NO_COLOR", "1")], None)
                .style
                .color
        );
        assert!(!merged(&["--color", "never"], &[], Some(90)).style.color);
        // A COLUMNS that is no width is not one.
        assert_eq!(
            merged(&[], &[("COLUMNS", "wide")], None).style.width,
            DEFAULT_WIDTH
        );
        // GitHub Actions.
        let o = merged(
            &[],
            &[("GITHUB_ACTIONS", "true"), ("GITHUB_STEP_SUMMARY", "/s.md")],
            None,
        );
        assert!(o.github_actions);
        assert_eq!(o.step_summary, Some(PathBuf::from("/s.md")));
        assert_eq!(
            merged(&[], &[("GITHUB_WORKSPACE", "/repo")], None).base,
            Some(PathBuf::from("/repo"))
        );
        assert_eq!(merged(&[], &[], None).base, None);
        assert_eq!(
            merged(&[], &[("GITHUB_STEP_SUMMARY", "")], None).step_summary,
            None
        );
    }
}
