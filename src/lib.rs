//! plancheck makes one planner decision a test: that each read path, in each scope, still uses
//! the index it needs. The stages, in the order data flows through them:
//!
//! `cli` → `project` → `db` → `explain` → `verdict` → `report`
//!
//! This module holds the orchestration: it runs the stages and maps failures to exit statuses.

/// Writes a line to stderr. A closed stderr (`plancheck demo 2>&1 | head`) is not worth a
/// panic: progress and diagnostics are dropped, the run goes on and still cleans up.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Like [`say!`], without the newline, flushed.
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut err = std::io::stderr();
        let _ = write!(err, $($arg)*);
        let _ = err.flush();
    }};
}

pub mod cli;
pub mod db;
pub mod errors;
pub mod exit_codes;
pub mod explain;
pub mod lint;
pub mod project;
pub mod report;
pub mod verdict;

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Context;

use crate::cli::{CheckArgs, Cli, Command, DemoArgs, FixturesCommand, LintArgs, LoadArgs, RunArgs};
use crate::db::Target;
use crate::db::check::Settings;
use crate::errors::{BadInput, DatabaseFailure};
use crate::project::{Filter, Project, Source};
use crate::report::Report;
use crate::verdict::Verdict;

/// The demo's default board size. At this scale (117k posts) every check passes for the same
/// reason it passes on the full board, and the whole demo takes seconds (see the README).
pub const DEMO_SCALE: f64 = 0.05;

/// Runs the parsed command line and returns the exit status. Ctrl-C ends the run (dropping the
/// throwaway server, which stops it and removes its files) with status 130.
pub fn main_with(cli: Cli) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            say!("error: cannot start the async runtime: {e}");
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
            say!("error: cannot install the signal handlers");
            return exit_codes::DATABASE;
        };
        // When a signal wins, `run` is dropped: its throwaway server (if any) is stopped and
        // removed, and its open transactions end with their sessions.
        tokio::select! {
            status = run(cli) => match status {
                Ok(status) => status,
                Err(e) => report_error(&e),
            },
            _ = interrupt.recv() => {
                say!("interrupted");
                exit_codes::INTERRUPTED
            }
            _ = terminate.recv() => {
                say!("terminated");
                exit_codes::TERMINATED
            }
        }
    })
}

fn report_error(e: &anyhow::Error) -> i32 {
    say!("error: {e:#}");
    if e.downcast_ref::<BadInput>().is_some() {
        exit_codes::BAD_INPUT
    } else {
        exit_codes::DATABASE
    }
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Check(args) => check(args).await,
        Command::Lint(args) => lint_command(args).await,
        Command::Demo(args) => demo(args).await,
        Command::Fixtures(FixturesCommand::Load(args)) => fixtures_load(args).await,
    }
}

fn target(url: Option<String>) -> anyhow::Result<Target> {
    let url = url.ok_or_else(|| {
        BadInput(
            "no database: give --database-url URL or set DATABASE_URL (or run `plancheck demo` \
             for a throwaway one)"
                .into(),
        )
    })?;
    Ok(Target::parse(&url)?)
}

fn settings(run: &RunArgs) -> Settings {
    Settings {
        warmup: run.warmup,
        iterations: run.iterations,
        ..Settings::default()
    }
}

fn filter(run: &RunArgs) -> Filter {
    Filter {
        only: run.only.clone(),
        scopes: run.scope.clone(),
    }
}

async fn check(args: CheckArgs) -> anyhow::Result<i32> {
    let project = project::load(&Source::Dir(args.project.clone()), &filter(&args.run))?;
    let target = target(args.database_url)?;
    run_checks(&target, &project, &args.run).await
}

async fn lint_command(args: LintArgs) -> anyhow::Result<i32> {
    let project = project::load(&Source::Dir(args.project.clone()), &Filter::default())?;
    let target = target(args.database_url)?;
    let client = target.connect().await?;
    let findings = lint::lint(&db::catalog::required_indexes(&client, &project).await?);
    let text = match args.format {
        report::Format::Json => {
            let mut t = serde_json::to_string_pretty(&serde_json::json!({ "findings": findings }))
                .context("serialising the findings")?;
            t.push('\n');
            t
        }
        report::Format::Table if findings.is_empty() => format!(
            "no twin drift: {} read paths, every required index present, valid and ready\n",
            project.read_paths.len()
        ),
        report::Format::Table => lint::render(&findings),
    };
    write_stdout(&text)?;
    Ok(if findings.is_empty() {
        exit_codes::PASS
    } else {
        exit_codes::CHECK_FAILED
    })
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        // A closed pipe (`plancheck check | head`) is not an error.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(DatabaseFailure(format!("cannot write the report: {e}")).into());
        }
    }
    Ok(())
}

async fn fixtures_load(args: LoadArgs) -> anyhow::Result<i32> {
    let scale = db::fixtures::validate_scale(args.scale)?;
    let target = target(args.database_url)?;
    let client = target.connect().await?;
    db::fixtures::load(&client, scale, false).await?;
    Ok(exit_codes::PASS)
}

async fn demo(args: DemoArgs) -> anyhow::Result<i32> {
    let scale = db::fixtures::validate_scale(args.scale)?;
    let project = project::load(&Source::Embedded, &filter(&args.run))?;
    let (server, origin) = db::provider::Throwaway::start(args.server).await?;
    say!("started {origin} (removed when done)");
    let target = server.target("postgres");
    let status = async {
        let client = target.connect().await?;
        db::fixtures::load(&client, scale, false).await?;
        drop(client);
        run_checks(&target, &project, &args.run).await
    }
    .await;
    server.stop().await;
    status
}

/// Runs every check of the project, prints the report, returns the exit status.
pub async fn run_checks(target: &Target, project: &Project, run: &RunArgs) -> anyhow::Result<i32> {
    let client = target.connect().await?;
    let server_version = db::server_version(&client).await?;
    // Twin drift and invalid indexes, cheaply, before any check. A missing index is left to the
    // checks, whose `missing-index` verdict says it.
    let lint: Vec<lint::Finding> =
        lint::lint(&db::catalog::required_indexes(&client, project).await?)
            .into_iter()
            .filter(|f| f.kind != lint::Kind::Missing)
            .collect();
    drop(client);
    let settings = settings(run);
    let progress = std::io::stderr().is_terminal();
    let mut checks = Vec::new();
    for read_path in &project.read_paths {
        for scope_check in &read_path.checks {
            if progress {
                say_part!("checking {} [{}] …", read_path.name, scope_check.scope);
            }
            let result = db::check::run(target, read_path, scope_check, &settings).await;
            if progress {
                say!(" {}", result.verdict);
            }
            checks.push(result);
        }
    }
    verdict::judge_budgets(&mut checks);
    if let Some(dir) = &run.save_plans {
        save_plans(dir, &checks)?;
    }
    let report = Report {
        server_version,
        checks,
        require: run.require,
        lint,
        explain: run.explain,
    };
    write_stdout(&report::render(&report, run.format))?;
    Ok(status(&report))
}

/// The exit status a report stands for.
pub fn status(report: &Report) -> i32 {
    if report.checks.iter().any(|c| c.connection_lost) {
        exit_codes::DATABASE
    } else if report.lint.is_empty()
        && report
            .checks
            .iter()
            .all(|c| c.verdict == Verdict::Pass || c.is_warning(report.require))
    {
        exit_codes::PASS
    } else {
        exit_codes::CHECK_FAILED
    }
}

fn save_plans(dir: &Path, checks: &[verdict::CheckResult]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| BadInput(format!("--save-plans {}: {e}", dir.display())))?;
    for c in checks {
        for (label, plan) in &c.plans {
            let path = dir.join(format!("{}.{}.{label}.json", c.read_path, c.scope));
            let text = serde_json::to_string_pretty(plan).context("serialising a plan")?;
            std::fs::write(&path, text)
                .map_err(|e| BadInput(format!("--save-plans {}: {e}", path.display())))?;
        }
    }
    Ok(())
}
