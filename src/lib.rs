//! plancheck makes one planner decision a test: that each read path, in each scope, still uses
//! the index it needs. The stages, in the order data flows through them:
//!
//! `cli` → `project` → `db` → [`measure::Measurement`] → `verdict` (over `explain`) → `report`
//!
//! `project` reads the files people write into the checks to run. `db` runs each check in its
//! own bounded, read-only, rolled-back transaction and returns a measurement: plain data (the
//! EXPLAIN documents, re-plans, catalog facts), no verdict. `verdict` is pure: a measurement and
//! what the expectation requires in, the check's result out. `report` renders. `saved` writes
//! and reads measurements, so `plancheck judge` re-judges a run with no database.
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
pub mod measure;
pub mod migration;
pub mod model;
pub mod project;
pub mod report;
pub mod safety;
pub mod saved;
pub mod sql;
pub mod stop;
pub mod verdict;

use std::io::{IsTerminal, Write};

use anyhow::Context;

use crate::cli::{
    CheckArgs, Cli, Command, DemoArgs, FixturesCommand, JudgeArgs, LintArgs, LoadArgs, RunArgs,
    VerdictArgs,
};
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
                        say!("interrupted again: stopping now");
                        return exit_codes::INTERRUPTED;
                    }
                    say!("interrupted: stopping after the running check (Ctrl-C again to stop now)");
                    asked = Some(exit_codes::INTERRUPTED);
                    stopper.send(exit_codes::INTERRUPTED);
                }
                _ = terminate.recv() => {
                    if asked.is_some() {
                        return exit_codes::TERMINATED;
                    }
                    say!("terminated: stopping after the running check");
                    asked = Some(exit_codes::TERMINATED);
                    stopper.send(exit_codes::TERMINATED);
                }
            }
        }
    })
}

fn report_error(e: &anyhow::Error) -> i32 {
    if let Some(stop::Interrupted(code)) = e.downcast_ref::<stop::Interrupted>() {
        return *code;
    }
    say!("error: {e:#}");
    if e.downcast_ref::<BadInput>().is_some() {
        exit_codes::BAD_INPUT
    } else {
        exit_codes::DATABASE
    }
}

async fn run(cli: Cli, mut stop: stop::Stop) -> anyhow::Result<i32> {
    match cli.command {
        Command::Check(args) => check(args, stop).await,
        Command::Lint(args) => stop::unless_stopped(&mut stop, lint_command(args)).await,
        Command::Judge(args) => judge_command(args),
        Command::Demo(args) => demo(args, stop).await,
        Command::Fixtures(FixturesCommand::Load(args)) => {
            stop::unless_stopped(&mut stop, fixtures_load(args)).await
        }
    }
}

/// The database to check: `--database-url` (or `DATABASE_URL`), completed from the libpq
/// environment (`PGHOST`, `PGUSER`, …) and its defaults, as every PostgreSQL tool does.
fn target(url: Option<String>) -> anyhow::Result<Target> {
    Ok(Target::resolve(url.as_deref())?)
}

fn settings(run: &RunArgs) -> Settings {
    Settings {
        warmup: run.warmup,
        iterations: run.iterations,
        statement_timeout: run.statement_timeout,
        lock_timeout: run.lock_timeout,
        idle_in_transaction_timeout: run.idle_in_transaction_timeout,
        watched: db::guard::Watched::default(),
    }
}

fn filter(run: &RunArgs) -> Filter {
    Filter {
        only: run.only.clone(),
        scopes: run.scope.clone(),
    }
}

async fn check(args: CheckArgs, stop: stop::Stop) -> anyhow::Result<i32> {
    let project = project::load(&Source::Dir(args.project.clone()), &filter(&args.run))?;
    let migration = match &args.migration {
        Some(path) => {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| BadInput(format!("--migration {shown}: {e}")))?;
            Some(migration::vet(&shown, &text)?)
        }
        None => None,
    };
    let target = target(args.database_url)?;
    let options = RunOptions {
        migration: migration.as_ref(),
        analyze: args.analyze,
        own_server: false,
        strict_role: args.strict_role,
    };
    run_checks(&target, &project, &args.run, &options, stop).await
}

async fn lint_command(args: LintArgs) -> anyhow::Result<i32> {
    let project = project::load(&Source::Dir(args.project.clone()), &Filter::default())?;
    let target = target(args.database_url)?;
    let client = target.connect().await?;
    db::check::bound_session(&client, &Settings::default()).await?;
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
    db::fixtures::load_into(&client, scale, false, args.replace).await?;
    Ok(exit_codes::PASS)
}

async fn demo(args: DemoArgs, mut stop: stop::Stop) -> anyhow::Result<i32> {
    let scale = db::fixtures::validate_scale(args.scale)?;
    let project = project::load(&Source::Embedded, &filter(&args.run))?;
    let (server, origin) = stop::unless_stopped(&mut stop, async {
        Ok(db::provider::Throwaway::start(args.server).await?)
    })
    .await?;
    say!("started {origin} (removed when done)");
    let target = server.target("postgres");
    let status = async {
        stop::unless_stopped(&mut stop, async {
            let client = target.connect().await?;
            db::fixtures::load(&client, scale, false).await?;
            Ok(())
        })
        .await?;
        let options = RunOptions {
            own_server: true,
            ..RunOptions::default()
        };
        run_checks(&target, &project, &args.run, &options, stop.clone()).await
    }
    .await;
    server.stop().await;
    status
}

/// How a run treats its database, beyond the flags `check` and `demo` share.
#[derive(Debug, Default)]
pub struct RunOptions<'a> {
    /// `--migration`: check before and after it.
    pub migration: Option<&'a migration::Migration>,
    /// `--analyze`: analyse the existing tables the migration alters too.
    pub analyze: bool,
    /// The server is plancheck's own throwaway: nobody else's data is on it.
    pub own_server: bool,
    /// `--strict-role`: refuse to run with a role whose rights reach outside the transaction.
    pub strict_role: bool,
}

/// The rights of the connecting role that let a project's SQL act outside the rolled-back
/// transaction, said on stderr; with `--strict-role` they stop the run (bad input, exit 2).
async fn role_warnings(
    client: &tokio_postgres::Client,
    options: &RunOptions<'_>,
) -> anyhow::Result<Vec<db::role::RoleRisk>> {
    if options.own_server {
        return Ok(Vec::new());
    }
    let (role, risks) = db::role::risks(client).await?;
    if risks.is_empty() {
        return Ok(risks);
    }
    let rights: Vec<&str> = risks.iter().map(|r| r.right.as_str()).collect();
    if options.strict_role {
        return Err(BadInput(format!(
            "--strict-role: role {role} has rights that reach outside the rolled-back \
             transaction ({}); connect as a least-privilege role (see the README)",
            rights.join(", ")
        ))
        .into());
    }
    for r in &risks {
        say!("warning: role {role} has {}: {}", r.right, r.what);
    }
    say!(
        "warning: the project's files run with these rights; connect as a least-privilege role \
         (see the README), or --strict-role to refuse"
    );
    Ok(risks)
}

/// Runs every check of the project, prints the report, returns the exit status. With a
/// migration, every check runs twice: as the database is, then inside one transaction that has
/// applied the migration and is rolled back at the end; the report puts the two side by side.
pub async fn run_checks(
    target: &Target,
    project: &Project,
    run: &RunArgs,
    options: &RunOptions<'_>,
    mut stop: stop::Stop,
) -> anyhow::Result<i32> {
    let migration = options.migration;
    let mut settings = settings(run);
    let client = target.connect().await?;
    db::check::bound_session(&client, &settings).await?;
    let server_version = db::server_version(&client).await?;
    let role_warnings = role_warnings(&client, options).await?;
    settings.watched = db::guard::Watched::read(&client).await.map_err(|e| {
        DatabaseFailure(format!(
            "could not read the server's planner settings: {}",
            db::cause(&e)
        ))
    })?;
    // Twin drift and invalid indexes, cheaply, before any check. A missing index is left to the
    // checks, whose `missing-index` verdict says it.
    let mut lint = lint_findings(&client, project).await?;
    drop(client);

    let judging = judging(&run.verdict);
    let mut measured = run_all(
        db::check::Session::Own(target),
        project,
        &settings,
        &judging,
        &mut stop,
    )
    .await;
    let mut before = None;
    if let (Some(m), None) = (migration, stop.requested()) {
        let session = target.connect().await?;
        let m = &for_server(&session, m).await?;
        let sequences = db::migrate::sequence_values(&session).await.ok();
        let applied = db::migrate::apply(&session, m, &settings, options.analyze).await?;
        for note in &applied.notes {
            say!("note: {note}");
        }
        // The lint and the checks now see the migrated catalog.
        lint = lint_findings(&session, project).await?;
        let after = run_all(
            db::check::Session::Savepoint(&session),
            project,
            &settings,
            &judging,
            &mut stop,
        )
        .await;
        let _ = session.batch_execute("ROLLBACK").await;
        before = Some(std::mem::replace(&mut measured, after));
        if let Some(was) = sequences {
            warn_advanced_sequences(target, &was).await;
        }
    }
    let saved = saved::Run {
        format: saved::RUN_FORMAT.into(),
        version: measure::VERSION,
        server_version,
        role_warnings,
        lint,
        checks: measured,
        before,
    };
    if let Some(dir) = &run.save_plans {
        saved::write(dir, &saved)?;
    }
    let report = judge_run(saved, &run.verdict);
    write_stdout(&report::render(&report, run.verdict.format))?;
    Ok(stop.requested().unwrap_or_else(|| status(&report)))
}

fn judging(args: &VerdictArgs) -> verdict::Judging {
    verdict::Judging {
        large_rows: args.large_rows,
    }
}

/// Judges a run's measurements into the report: every check, then the budgets across them.
fn judge_run(run: saved::Run, args: &VerdictArgs) -> Report {
    let judging = judging(args);
    let judge_all = |measured: &[measure::Measurement]| {
        let mut checks: Vec<verdict::CheckResult> = measured
            .iter()
            .map(|m| verdict::judge(m, &judging))
            .collect();
        verdict::judge_budgets(&mut checks);
        checks
    };
    let checks = judge_all(&run.checks);
    // Said once: an invalid index a check requires is that check's `invalid-index`.
    let lint = run
        .lint
        .into_iter()
        .filter(|f| {
            f.kind != lint::Kind::Invalid
                || !checks
                    .iter()
                    .any(|c| c.verdict == Verdict::InvalidIndex && c.required_index == f.index)
        })
        .collect();
    Report {
        server_version: run.server_version,
        checks,
        require: args.require.into(),
        lint,
        explain: args.explain,
        before: run.before.as_deref().map(judge_all),
        role_warnings: run.role_warnings,
    }
}

/// `plancheck judge DIR`: the saved run judged again, as the live run would have been.
fn judge_command(args: JudgeArgs) -> anyhow::Result<i32> {
    let run = saved::read(&args.dir)?;
    let report = judge_run(run, &args.verdict);
    write_stdout(&report::render(&report, args.verdict.format))?;
    Ok(status(&report))
}

async fn lint_findings(
    client: &tokio_postgres::Client,
    project: &Project,
) -> anyhow::Result<Vec<lint::Finding>> {
    Ok(
        lint::lint(&db::catalog::required_indexes(client, project).await?)
            .into_iter()
            // A missing index is the checks' `missing-index`; a read path the lint could not
            // read for a lock is the checks' timeout `error`.
            .filter(|f| !matches!(f.kind, lint::Kind::Missing | lint::Kind::Unchecked))
            .collect(),
    )
}

/// The migration as this server reads it: split again when its `standard_conforming_strings`
/// is off, so that a backslash in a plain string is read as the server reads it.
async fn for_server(
    client: &tokio_postgres::Client,
    m: &migration::Migration,
) -> anyhow::Result<migration::Migration> {
    let row = client
        .query_one(
            "SELECT pg_catalog.current_setting('standard_conforming_strings')",
            &[],
        )
        .await
        .map_err(|e| {
            DatabaseFailure(format!(
                "could not read the server's settings: {}",
                db::cause(&e)
            ))
        })?;
    let standard_conforming_strings = row.get::<_, String>(0) != "off";
    if standard_conforming_strings {
        return Ok(m.clone());
    }
    Ok(migration::vet_with(
        &m.path,
        &m.sql,
        sql::Dialect {
            standard_conforming_strings,
        },
    )?)
}

/// Sequences are not transactional: what the migration took from one stays taken after the
/// rollback. Says which ones moved (another session may have moved them too, so "may").
async fn warn_advanced_sequences(target: &Target, was: &[(String, Option<i64>)]) {
    let Ok(client) = target.connect().await else {
        return;
    };
    let Ok(now) = db::migrate::sequence_values(&client).await else {
        return;
    };
    for (name, value) in now {
        if let Some((_, before)) = was.iter().find(|(n, _)| *n == name)
            && *before != value
        {
            let show = |v: Option<i64>| v.map_or("unused".to_string(), |v| v.to_string());
            say!(
                "warning: sequence {name} moved from {} to {} during the run (a migration's \
                 INSERT or nextval takes values a rollback does not give back)",
                show(*before),
                show(value)
            );
        }
    }
}

/// Every check in order, measured; after a stop, the ones not yet run are left out.
async fn run_all(
    session: db::check::Session<'_>,
    project: &Project,
    settings: &Settings,
    judging: &verdict::Judging,
    stop: &mut stop::Stop,
) -> Vec<measure::Measurement> {
    let progress = std::io::stderr().is_terminal();
    let mut checks = Vec::new();
    let mut shared_lost = false;
    for read_path in &project.read_paths {
        for scope_check in &read_path.checks {
            if stop.requested().is_some() {
                return checks;
            }
            if progress {
                say_part!("checking {} [{}] …", read_path.name, scope_check.scope);
            }
            if shared_lost {
                checks.push(db::check::not_run(
                    read_path,
                    scope_check,
                    "not run: the migration's session was lost before this check",
                ));
                continue;
            }
            let measured = db::check::run(session, read_path, scope_check, settings, stop).await;
            if progress {
                say!(" {}", verdict::judge(&measured, judging).verdict);
            }
            // Every check after a migration shares its session: once that is lost (or given up
            // for not answering), nothing more is sent on it.
            let lost =
                matches!(&measured.outcome, measure::Outcome::Failed(f) if f.connection_lost);
            shared_lost |= lost && matches!(session, db::check::Session::Savepoint(_));
            checks.push(measured);
        }
    }
    checks
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
