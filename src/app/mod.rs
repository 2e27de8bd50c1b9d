//! The commands, one file each, and what they share: the runtime and its signals, the target
//! database, the run of every check (`run`), the exit status a report stands for.

mod accept;
mod capture;
mod check;
mod completions;
mod demo;
mod fixtures;
mod init;
mod judge;
mod ladder;
mod lint;
mod list;
mod output;
mod run;
mod scratch_binaries;
mod stats;

use std::io::Write;

use crate::cli::settings::{check_settings as settings, filter, judging};
use crate::cli::{Cli, Command, FixturesCommand, StatsCommand};
use crate::db::Target;
use crate::error::{self, OutputFailure};
use crate::report::Report;
use crate::report::stderr;
use crate::term::say;
use crate::verdict::Verdict;
use crate::{exit_codes, stop};

pub use completions::COMPLETE_VAR;
pub use demo::DEMO_SCALE;
pub use run::{RunOptions, run_checks};

/// Runs the parsed command line and returns the exit status. Ctrl-C ends the run (dropping the
/// throwaway server, which stops it and removes its files) with status 130.
pub fn main_with(cli: Cli) -> i32 {
    // The environment's credentials are hidden from the first word said.
    crate::secrets::keep_environment();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            say!("{}", crate::report::stderr::no_runtime(&e));
            return exit_codes::DATABASE;
        }
    };
    // A current-thread runtime keeps every child process (the throwaway server) tied to the main
    // thread, whose exit is the process's.
    runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        // Registered before anything runs: a signal that arrives while a blocking step (initdb)
        // holds the thread is kept and acted on at the next await, instead of killing the process
        // with the server's folder still on disk.
        let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            say!("{}", crate::report::stderr::NO_SIGNAL_HANDLERS);
            return exit_codes::DATABASE;
        };
        // The first signal asks the run to stop in order: the running check is cancelled and
        // rolled back, what finished is reported, a throwaway server is removed. A second one
        // stops at once (dropping the run still removes the server and closes the sessions).
        let (stopper, stop) = stop::Stop::new();
        let run = run(cli, stop);
        tokio::pin!(run);
        let mut asked: Option<i32> = None;
        loop {
            tokio::select! {
                status = &mut run => {
                    return match status {
                        Ok(status) => asked.unwrap_or(status),
                        Err(e) => report_error(&e),
                    };
                }
                _ = interrupt.recv() => {
                    if asked.is_some() {
                        say!("{}", stderr::STOPPING_NOW);
                        return exit_codes::INTERRUPTED;
                    }
                    say!("{}", stderr::stopping(false));
                    asked = Some(exit_codes::INTERRUPTED);
                    stopper.send(exit_codes::INTERRUPTED);
                }
                _ = terminate.recv() => {
                    if asked.is_some() {
                        return exit_codes::TERMINATED;
                    }
                    say!("{}", stderr::stopping(true));
                    asked = Some(exit_codes::TERMINATED);
                    stopper.send(exit_codes::TERMINATED);
                }
            }
        }
    })
}

fn report_error(e: &error::Error) -> i32 {
    if !matches!(e, error::Error::Stopped(_)) {
        say!("{}", stderr::error(e));
    }
    e.exit_status()
}

async fn run(cli: Cli, mut stop: stop::Stop) -> crate::error::Result<i32> {
    match cli.command {
        Command::Check(args) => check::check(args, stop).await,
        Command::Lint(args) => stop::unless_stopped(&mut stop, lint::lint(args)).await,
        Command::List(args) => list::list(args),
        Command::Judge(args) => judge::judge(args),
        Command::Accept(args) => accept::accept(args, stop).await,
        Command::Init(args) => init::init(args),
        Command::Capture(args) => capture::capture(args, stop).await,
        Command::Completions(args) => completions::completions(args),
        Command::Demo(args) => demo::demo(args, stop).await,
        Command::Ladder(args) => ladder::ladder(args, stop).await,
        Command::Fixtures(FixturesCommand::Load(args)) => {
            stop::unless_stopped(&mut stop, fixtures::load(args)).await
        }
        Command::Stats(StatsCommand::Export(args)) => {
            stop::unless_stopped(&mut stop, stats::export(args)).await
        }
        Command::Stats(StatsCommand::Show(args)) => stats::show(args),
        Command::ScratchBinaries(args) => {
            stop::unless_stopped(&mut stop, scratch_binaries::scratch_binaries(args)).await
        }
    }
}

/// The project in folder `dir`, narrowed to `filter`; the files it holds that plancheck does
/// not read are said as warnings.
fn load_project(
    dir: &std::path::Path,
    filter: &crate::project::Filter,
) -> crate::error::Result<crate::project::Project> {
    let project = crate::project::load(&crate::project::Source::Dir(dir.to_path_buf()), filter)?;
    for unread in &project.unread {
        say!("warning: {unread}");
    }
    Ok(project)
}

/// The database to check: `--database-url` (or `DATABASE_URL`), completed from the libpq
/// environment (`PGHOST`, `PGUSER`, …) and its defaults, as every PostgreSQL tool does.
/// Its secrets (the connection string that holds a password, each server's password) are
/// hidden from everything written from then on.
fn target(connect: &crate::cli::ConnectOpts) -> crate::error::Result<Target> {
    let given = connect.database_url.as_deref();
    let target = Target::resolve(given)?;
    let mut too_short = false;
    for secret in target.secrets(given) {
        too_short |= crate::secrets::keep(secret) == crate::secrets::Kept::TooShort;
    }
    if too_short {
        say!("{}", stderr::password_too_short());
    }
    Ok(target)
}

/// Writes to stdout, every secret hidden ([`crate::secrets`]).
fn write_stdout(text: &str) -> crate::error::Result<()> {
    let text = crate::secrets::redact(text);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        // A closed pipe (`plancheck check | head`) is not an error.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(OutputFailure(crate::report::stderr::report_unwritten(&e)).into());
        }
    }
    Ok(())
}

/// The exit status a report stands for.
pub fn status(report: &Report) -> i32 {
    if report.checks.iter().any(|c| c.connection_lost) {
        exit_codes::DATABASE
    } else if report.lint.iter().any(|f| f.fails())
        || report.checks.iter().any(|c| {
            !matches!(c.verdict, Verdict::Pass | Verdict::NoStatistics)
                && !c.is_warning(report.require)
        })
    {
        exit_codes::CHECK_FAILED
    } else if report
        .checks
        .iter()
        .any(|c| c.verdict == Verdict::NoStatistics)
    {
        exit_codes::NO_STATISTICS
    } else {
        exit_codes::PASS
    }
}
