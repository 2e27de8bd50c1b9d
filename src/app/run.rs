//! The run of every check of a project: measured by `db`, with a migration applied between two
//! passes when one is given, judged by `verdict`, rendered by `report`.

use super::{judging, settings, status};
use crate::cli::{RunArgs, VerdictArgs};
use crate::db::Target;
use crate::db::check::Settings;
use crate::db::check::within;
use crate::error::BadInput;
use crate::project::Project;
use crate::project::migration;
use crate::report::Report;
use crate::report::stderr::{self, asking};
use crate::term::{Progress, say};
use crate::verdict;
use crate::{db, lint, measure, saved, stop};

/// How a run treats its database, beyond the flags `check` and `demo` share.
#[derive(Debug, Default)]
pub struct RunOptions<'a> {
    /// `--migration`: check before and after it.
    pub migration: Option<&'a migration::Migration>,
    /// `--analyze`: analyse the existing tables the migration alters too.
    pub analyze: bool,
    /// `--migration-hold`: longest the migration's locks may be held, its BEGIN to its rollback.
    pub migration_hold: std::time::Duration,
    /// The server is plancheck's own throwaway: nobody else's data is on it.
    pub own_server: bool,
    /// `--strict-role`: refuse to run with a role whose rights reach outside the transaction.
    pub strict_role: bool,
    /// `--replan-without-rivals`: settle usability by dropping rival indexes in a rolled-back
    /// read-write transaction.
    pub replan_without_rivals: bool,
}

/// The rights of the connecting role that let a project's SQL act outside the rolled-back
/// transaction, said once on stderr unless `quiet` (every report carries them); with
/// `--strict-role` they stop the run (bad input, exit 2).
pub(super) async fn role_warnings(
    client: &tokio_postgres::Client,
    options: &RunOptions<'_>,
    quiet: bool,
) -> crate::error::Result<Vec<db::role::RoleRisk>> {
    if options.own_server {
        return Ok(Vec::new());
    }
    let (role, risks) = db::role::risks(client).await?;
    if risks.is_empty() {
        return Ok(risks);
    }
    if options.strict_role {
        return Err(BadInput(stderr::strict_role_refusal(&role, &risks)).into());
    }
    if !quiet {
        let width = crate::cli::settings::stderr_width();
        say!("{}", stderr::role_rights(&role, &risks, width));
    }
    Ok(risks)
}

/// An `allow_seq_scan` entry that names no relation in the database allows nothing: said on
/// stderr at the entry's line, not refused (a migration under test may create the relation, and
/// a project shared by several databases may name one some lack). Every entry of the project is
/// looked up in one query.
async fn warn_unknown_allowed(
    client: &tokio_postgres::Client,
    project: &Project,
) -> crate::error::Result<()> {
    let entries: std::collections::BTreeSet<&str> = project
        .read_paths
        .iter()
        .flat_map(|rp| rp.allow_seq_scan.iter().map(String::as_str))
        .collect();
    let unknown = db::preflight::unknown_relations(client, &entries).await?;
    for rp in &project.read_paths {
        for (i, entry) in rp.allow_seq_scan.iter().enumerate() {
            if unknown.contains(entry.as_str()) {
                say!(
                    "warning: {}",
                    rp.locate_allowed(i, &stderr::unknown_allowed(entry))
                );
            }
        }
    }
    Ok(())
}

/// How many checks run side by side: `--jobs`, else the machine's CPUs (at most 8); never more
/// than the server's free connection slots; one when `one_at_a_time` says why (a migration,
/// whose checks share one session; `--replan-without-rivals`, whose DROP would wait for the
/// other checks' locks).
pub(super) async fn jobs(
    client: &tokio_postgres::Client,
    asked: Option<usize>,
    one_at_a_time: Option<&str>,
) -> crate::error::Result<usize> {
    if let Some(why) = one_at_a_time {
        if asked.is_some_and(|j| j > 1) {
            say!("{}", stderr::jobs_not_used(why));
        }
        return Ok(1);
    }
    let wanted = asked.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8)
    });
    let room = room(client, wanted).await?;
    if let Some(free) = room.cut_from {
        say!("{}", stderr::jobs_capped(wanted, free, room.allowed));
    }
    Ok(room.allowed)
}

/// Sessions plancheck may open side by side, of those `wanted`: `check`'s jobs and the
/// ladder's pool alike.
pub(super) struct Room {
    pub allowed: usize,
    /// The server's free connection slots, when they cut what was wanted.
    pub cut_from: Option<usize>,
}

/// How many of `wanted` sessions plancheck may open side by side now, leaving room to the
/// application ([`sessions_allowed`]); `client`'s session ends before they open.
pub(super) async fn room(
    client: &tokio_postgres::Client,
    wanted: usize,
) -> crate::error::Result<Room> {
    let slots = db::preflight::free_slots(client).await?;
    // This session ends before the others open: its slot is theirs too.
    let free = usize::try_from(slots.server.saturating_add(1)).unwrap_or(0);
    let allowed = sessions_allowed(free, slots.role.map(|n| n.saturating_add(1)));
    Ok(Room {
        allowed: wanted.min(allowed),
        cut_from: (wanted > allowed).then_some(free),
    })
}

/// How many sessions plancheck may open side by side when the server has `free` connection
/// slots and the role `role_free` (None: no limit of its own): at least a quarter of the free
/// slots, and never fewer than 3, stay for the application; always 1 at least (the run needs
/// one, and the server refuses it if there is none).
fn sessions_allowed(free: usize, role_free: Option<i32>) -> usize {
    let room = (free / 4).max(3);
    let server = free.saturating_sub(room).max(1);
    match role_free {
        Some(n) => server.min(usize::try_from(n).unwrap_or(0).max(1)),
        None => server,
    }
}

/// `--replan-without-rivals` needs a server that takes DDL (rolled back after): never a standby,
/// never a server whose transactions are read-only by default.
async fn refuse_read_only(client: &tokio_postgres::Client) -> crate::error::Result<()> {
    let db::preflight::WriteState { standby, read_only } =
        db::preflight::write_state(client).await?;
    if standby || read_only {
        return Err(BadInput(stderr::no_replan_without_rivals(standby)).into());
    }
    Ok(())
}

/// What the run learnt on its first session, before any check.
struct Ready {
    settings: Settings,
    server_version: String,
    role_warnings: Vec<db::role::RoleRisk>,
    jobs: usize,
    lint: Vec<lint::Finding>,
}

/// The first session's reads, each on the client's clock (a server that stops answering after
/// the connection cannot hang the run here): the session's bounds, the server's version, the
/// role's rights, the relations allowed a seq scan, whether it takes writes (for
/// `--replan-without-rivals`), the settings the guard watches, `temp_file_limit`, how many
/// checks run side by side, and the lint (twin drift and invalid indexes, cheaply, before any
/// check; a missing index is left to the checks, whose `missing-index` says it).
async fn before_checks(
    target: &Target,
    project: &Project,
    run: &RunArgs,
    options: &RunOptions<'_>,
) -> crate::error::Result<Ready> {
    let mut settings = settings(run);
    let client = target.connect().await?;
    let limit = settings.client_limit();
    let what = asking::SESSION_TIMEOUTS;
    within(limit, what, async {
        Ok(db::check::bound_session(&client, &settings).await?)
    })
    .await?;
    let what = asking::SERVER_VERSION;
    let server_version = within(limit, what, async {
        Ok(db::server_version(&client).await?)
    })
    .await?;
    let what = asking::SERVER_VERSION_NUMBER;
    let major = within(limit, what, async { Ok(db::server_major(&client).await?) }).await?;
    settings.scratch = scratch_mode(run.no_scratch, major);
    if let Some(path) = &run.stats {
        settings.stats = Some(std::sync::Arc::new(production_statistics(
            path,
            major,
            run.no_scratch,
            run.quiet,
        )?));
    }
    let what = asking::ROLE_RIGHTS;
    let role_warnings = within(limit, what, role_warnings(&client, options, run.quiet)).await?;
    let what = asking::ALLOWED_SEQ_SCANS;
    within(limit, what, warn_unknown_allowed(&client, project)).await?;
    if options.replan_without_rivals {
        let what = asking::TAKES_WRITES;
        within(limit, what, refuse_read_only(&client)).await?;
        settings.replan_without_rivals = true;
    }
    let what = asking::SERVER_SETTINGS;
    settings.watched = within(limit, what, async {
        Ok(db::guard::Watched::read(&client, &project.custom_settings()).await?)
    })
    .await?;
    let what = asking::TRACK_COUNTS;
    settings.counting = within(limit, what, async {
        Ok(db::counts::Counting::read(&client, major).await?)
    })
    .await?;
    let what = asking::TEMP_FILE_LIMIT;
    let (temp, unbounded) = within(limit, what, async {
        Ok(db::check::temp_file_limit(&client, settings.temp_file_limit).await?)
    })
    .await?;
    settings.temp_file_limit = temp;
    if unbounded && options.strict_role {
        return Err(BadInput(stderr::STRICT_ROLE_TEMP_FILES.to_string()).into());
    }
    if unbounded {
        say!("warning: {}", stderr::TEMP_FILES_UNBOUNDED);
    }
    let one_session = (options.migration.is_some() || options.replan_without_rivals)
        .then(|| stderr::one_at_a_time(options.migration.is_some()));
    let what = asking::FREE_SLOTS;
    let jobs = within(
        limit,
        what,
        jobs(&client, run.jobs.map(usize::from), one_session),
    )
    .await?;
    let what = asking::INDEX_DEFINITIONS;
    let lint = within(limit, what, lint_findings(&client, project)).await?;
    Ok(Ready {
        settings,
        server_version,
        role_warnings,
        jobs,
        lint,
    })
}

/// Runs every check of the project, prints the report, returns the exit status. With a
/// migration, every check runs twice: as the database is, then inside one transaction that has
/// applied the migration and is rolled back at the end; the report puts the two side by side.
pub async fn run_checks(
    target: &Target,
    project: &Project,
    run: &RunArgs,
    options: &RunOptions<'_>,
    stop: stop::Stop,
) -> crate::error::Result<i32> {
    let (report, stopped) = judged_run(target, project, run, options, stop).await?;
    super::output::emit(&report, &run.verdict)?;
    Ok(stopped.unwrap_or_else(|| status(&report)))
}

/// Every check measured and judged, the report not yet written; with the exit status of a
/// stop (Ctrl-C), when the run was stopped.
// Long because it is the run in order: the first session's reads, the checks, the migration
// and the checks after it (on the clock of its locks' hold), the saved run, the report.
pub(super) async fn judged_run(
    target: &Target,
    project: &Project,
    run: &RunArgs,
    options: &RunOptions<'_>,
    mut stop: stop::Stop,
) -> crate::error::Result<(Report, Option<i32>)> {
    let migration = options.migration;
    let started = std::time::SystemTime::now();
    let Ready {
        settings,
        server_version,
        role_warnings,
        jobs,
        mut lint,
    } = before_checks(target, project, run, options).await?;

    let judging = judging(&run.verdict);
    // Each measurement is saved (--save-plans) and judged as it comes, then dropped: memory
    // stays flat in the number of checks. With a migration, the checks before it are saved
    // under before/.
    let save = run.save_plans.as_deref();
    let keep = |before: bool| {
        move |m: measure::Measurement, mut judged: verdict::CheckResult| {
            // A report shows plans only of checks that did not pass.
            if judged.verdict.is_pass() {
                judged.plans = Vec::new();
            }
            Kept {
                judged,
                saved: save.map(|dir| saved::write_check(dir, before, &m)),
            }
        }
    };
    let pace = |jobs: usize| Pace {
        jobs,
        quiet: run.quiet,
        fail_fast: run.fail_fast.then(|| run.verdict.require.into()),
        strict_role: options.strict_role,
        hold: None,
    };
    let pool = db::pool::Pool::new(target, !settings.session_per_check);
    let first = run_all(
        db::check::Session::Own(&pool),
        project,
        &settings,
        &judging,
        pace(jobs),
        &mut stop,
        &keep(migration.is_some()),
    )
    .await;
    let (mut checks, mut names) = unzip_saved(first)?;
    refuse_past_policies(project, options, &checks)?;
    let total: usize = project.read_paths.iter().map(|r| r.checks.len()).sum();
    let mut before = None;
    let mut index_changes = Vec::new();
    let mut migration_hold = None;
    // A run stopped (Ctrl-C, or --fail-fast at a failure) applies no migration.
    if let (Some(m), None, true) = (migration, stop.requested(), checks.len() == total) {
        let session = target.connect().await?;
        let m = &super::check::for_server(&session, m).await?;
        let sequences = db::migrate::sequence_values(&session).await.ok();
        let watched = project.required_indexes();
        // From here to the rollback the migration's locks are held: on plancheck's clock, no
        // longer than --migration-hold.
        let hold = db::migrate::Hold::start(options.migration_hold);
        let applying = async {
            let applied =
                db::migrate::apply(&session, m, &settings, options.analyze, &watched).await?;
            // The lint and the checks now see the migrated catalog.
            let lint = lint_findings(&session, project).await?;
            Ok::<_, crate::error::Error>((applied, lint))
        };
        let applied = db::migrate::until(&session, &hold, true, applying).await;
        let after = match applied {
            Some(applied) => {
                let (applied, migrated_lint) = match applied {
                    Ok(both) => both,
                    Err(e) => {
                        hold.release(&session, &settings).await;
                        return Err(e);
                    }
                };
                lint = migrated_lint;
                index_changes = applied.index_changes;
                for note in &m.rewritten {
                    say!("note: {note}");
                }
                for note in &applied.notes {
                    say!("note: {}", crate::report::migration::note(note));
                }
                let pace = Pace {
                    hold: Some(&hold),
                    ..pace(1)
                };
                run_all(
                    db::check::Session::Savepoint(&session),
                    project,
                    &settings,
                    &judging,
                    pace,
                    &mut stop,
                    &keep(false),
                )
                .await
            }
            // Reached while the migration was applied: no check ran after it.
            None => project
                .read_paths
                .iter()
                .flat_map(|rp| rp.checks.iter().map(move |c| (rp, c)))
                .map(|(rp, c)| {
                    let measured = hold.not_run(rp, c);
                    let judged = verdict::judge(&measured, &judging);
                    keep(false)(measured, judged)
                })
                .collect(),
        };
        hold.release(&session, &settings).await;
        drop(session);
        migration_hold = Some(hold.fact());
        let (after, after_names) = unzip_saved(after)?;
        refuse_past_policies(project, options, &after)?;
        before = Some((
            std::mem::replace(&mut checks, after),
            std::mem::replace(&mut names, after_names),
        ));
        if let Some(was) = sequences {
            super::check::warn_advanced_sequences(target, &was).await;
        }
    }
    if let (Some(dir), Some(_), None) = (save, migration, &before) {
        // Stopped before the migration ran: the checks saved under before/ are the run's own.
        saved::unnest_before(dir, &names)?;
    }
    let (before, before_names) = before.unzip();
    let facts = saved::RunFacts {
        server_version,
        role_warnings,
        lint,
        index_changes,
        migration_hold,
    };
    if let Some(dir) = save {
        saved::write_run(dir, &facts, names, before_names)?;
    }
    let not_run = total.saturating_sub(checks.len());
    let mut report = report_of(checks, before, facts, &run.verdict);
    report.not_run = not_run;
    report.started = Some(started);
    if let Some(m) = migration {
        report.migration_rewritten = m.rewritten.clone();
    }
    let base = crate::cli::settings::Output::of_process(&run.verdict).base;
    report.locations = super::output::locations(project, base.as_deref());
    super::output::relative_spots(&mut report, base.as_deref());
    Ok((report, stop.requested()))
}

/// `--strict-role`: a check whose reader (the role after its scope's setup) read past the
/// row-level security policies of a table its plans read stops the run, as bad input (exit 2,
/// no report). That is known only once the check ran: the reader is whoever the setup switched
/// to in the check's transaction, and the tables are those its plans read; [`run_all`] starts no
/// check after the first that shows it.
fn refuse_past_policies(
    project: &Project,
    options: &RunOptions<'_>,
    checks: &[verdict::CheckResult],
) -> crate::error::Result<()> {
    if !options.strict_role {
        return Ok(());
    }
    let Some(c) = checks.iter().find(|c| !c.reads_past_policies.is_empty()) else {
        return Ok(());
    };
    let file = project
        .read_paths
        .iter()
        .find(|rp| rp.name == c.read_path)
        .map_or("", |rp| rp.expectation_path.as_str());
    Err(BadInput(stderr::strict_role_past_policies(c, file)).into())
}

/// `--stats FILE`, read and checked before any check: a file of another major version than the
/// measured server's is refused (a plan is production's only on its own major), as is
/// `--no-scratch` beside it; a file older than [`crate::stats::STALE_AFTER_DAYS`] is warned of.
fn production_statistics(
    path: &std::path::Path,
    major: u32,
    no_scratch: bool,
    quiet: bool,
) -> crate::error::Result<crate::stats::File> {
    if no_scratch {
        return Err(BadInput(stderr::stats_without_scratch()).into());
    }
    let file = crate::stats::read(path)?;
    if file.server.major() != major {
        return Err(BadInput(stderr::stats_of_another_major(
            path,
            file.server.major(),
            major,
        ))
        .into());
    }
    let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
    if let Some(stale) = crate::report::stats::stale(&file, now).filter(|_| !quiet) {
        let stale = stale.strip_prefix("warning: ").unwrap_or(&stale);
        say!("warning: {}: {stale}", path.display());
    }
    Ok(file)
}

/// Whether the run re-plans on a scratch copy: never with `--no-scratch`, and only on local
/// binaries of the measured server's major version.
fn scratch_mode(off: bool, major: u32) -> db::scratch::Mode {
    if off {
        return db::scratch::Mode::Off(db::scratch::Off::NoScratch);
    }
    match db::scratch::local_binaries(major) {
        Ok(bin) => db::scratch::Mode::On { bin },
        Err(why) => db::scratch::Mode::Off(why),
    }
}

/// How the checks of a run are paced: how many side by side, whether progress is shown, with
/// `--fail-fast` the requirement a check must meet for the run to go on, and after a migration
/// the bound on how long its locks are held.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pace<'a> {
    pub(super) jobs: usize,
    pub(super) quiet: bool,
    pub(super) fail_fast: Option<verdict::Require>,
    /// `--strict-role`: no check starts after one whose reader read past row-level security.
    pub(super) strict_role: bool,
    /// `--migration-hold`: the checks after the migration stop where it is reached, and the
    /// migration is rolled back once they are measured, before any scratch re-plan.
    pub(super) hold: Option<&'a db::migrate::Hold>,
}

/// What a run keeps of a check once it is judged: the verdict, and the name of its saved
/// measurement file (none without --save-plans) or why it could not be written.
struct Kept {
    judged: verdict::CheckResult,
    saved: Option<Result<String, crate::error::OutputFailure>>,
}

/// The judged checks, and the names of their saved measurement files; the first failed write
/// is the run's failure.
fn unzip_saved(
    all: Vec<Kept>,
) -> Result<(Vec<verdict::CheckResult>, Vec<String>), crate::error::OutputFailure> {
    let mut checks = Vec::with_capacity(all.len());
    let mut names = Vec::new();
    for Kept { judged, saved } in all {
        checks.push(judged);
        if let Some(name) = saved {
            names.push(name?);
        }
    }
    Ok((checks, names))
}

/// Judges a saved run's measurements into the report.
pub(super) fn judge_run(run: saved::Run, args: &VerdictArgs) -> Report {
    let judging = judging(args);
    let judge_all = |measured: &[measure::Measurement]| -> Vec<verdict::CheckResult> {
        measured
            .iter()
            .map(|m| verdict::judge(m, &judging))
            .collect()
    };
    let checks = judge_all(&run.checks);
    let before = run.before.as_deref().map(judge_all);
    report_of(checks, before, run.facts, args)
}

/// The report of judged checks: the budgets across them, then the lint and the run's facts.
fn report_of(
    mut checks: Vec<verdict::CheckResult>,
    mut before: Option<Vec<verdict::CheckResult>>,
    facts: saved::RunFacts,
    args: &VerdictArgs,
) -> Report {
    let lint = verdict::across_checks(
        &mut checks,
        before.as_deref_mut(),
        facts.lint,
        &facts.index_changes,
    );
    Report {
        server_version: facts.server_version,
        checks,
        require: args.require.into(),
        lint,
        explain: args.explain,
        before,
        role_warnings: facts.role_warnings,
        locations: Default::default(),
        not_run: 0,
        migration_rewritten: Vec::new(),
        index_changes: facts.index_changes,
        migration_hold: facts.migration_hold,
        started: None,
    }
}

pub(super) async fn lint_findings(
    client: &tokio_postgres::Client,
    project: &Project,
) -> crate::error::Result<Vec<lint::Finding>> {
    Ok(verdict::lint_of_run(lint::lint(
        &db::catalog::required_indexes(client, project).await?,
    )))
}

/// A session for a command that plans each read path once (`accept`, `capture`): bounded, its
/// role's rights warned about, and the settings its checks run with (one run each, no warm-up).
pub(super) async fn planning_session(
    target: &Target,
    bounds: &crate::cli::PlanBounds,
) -> crate::error::Result<(tokio_postgres::Client, Settings)> {
    let mut settings = Settings {
        warmup: 0,
        iterations: 1,
        statement_timeout: bounds.statement_timeout,
        lock_timeout: bounds.lock_timeout,
        ..Settings::default()
    };
    let client = target.connect().await?;
    let limit = settings.client_limit();
    within(limit, asking::SESSION_TIMEOUTS, async {
        Ok(db::check::bound_session(&client, &settings).await?)
    })
    .await?;
    within(
        limit,
        asking::ROLE_RIGHTS,
        // No report of `accept` or `capture` carries the role's rights: said even with -q.
        role_warnings(&client, &RunOptions::default(), false),
    )
    .await?;
    settings.watched = within(limit, asking::SERVER_SETTINGS, async {
        Ok(db::guard::Watched::read(&client, &[]).await?)
    })
    .await?;
    Ok((client, settings))
}

/// Every check, measured, in the project's order whatever finished first; after a stop, the
/// ones not yet started are left out. Up to `jobs` checks run side by side, each in a session
/// of the pool; the checks after a migration share its session, one at a time. Then the checks
/// whose question the measured server left open are re-planned on the run's scratch copy, all
/// on one throwaway server. Each measurement is judged once it is whole, handed to `keep` with
/// its judgement (which returns what the caller holds on to), and its final verdict shown on the
/// progress line.
// Long because it is the two ways of running checks (side by side in pooled sessions, or one at a
// time in the migration's), then the scratch re-plans, with their progress and stop handling.
pub(super) async fn run_all<T>(
    session: db::check::Session<'_>,
    project: &Project,
    settings: &Settings,
    judging: &verdict::Judging,
    pace: Pace<'_>,
    stop: &mut stop::Stop,
    keep: &dyn Fn(measure::Measurement, verdict::CheckResult) -> T,
) -> Vec<T> {
    let Pace {
        jobs,
        quiet,
        fail_fast,
        strict_role,
        hold,
    } = pace;
    // Set once a finished check fails the run under --fail-fast, or under --strict-role reads past
    // row-level security: no check starts after it.
    let failed = std::cell::Cell::new(false);
    use futures_util::StreamExt as _;
    let total = project.read_paths.iter().map(|r| r.checks.len()).sum();
    let phase = match session {
        db::check::Session::Own(_) => "",
        db::check::Session::Savepoint(_) => stderr::AFTER_MIGRATION,
    };
    let progress = std::cell::RefCell::new(Progress::new(total, quiet, phase));
    let book = std::cell::RefCell::new(Book::new(project));
    let catalog = db::check::Catalog::default();
    let all: Vec<_> = project
        .read_paths
        .iter()
        .flat_map(|rp| rp.checks.iter().map(move |c| (rp, c)))
        .collect();
    // A check is finished once it needs nothing more: judged, kept, its line on the progress.
    let finish = |what: &str, measured: measure::Measurement| -> T {
        let judged = verdict::judge(&measured, judging);
        if let Some(require) = fail_fast
            && !judged.verdict.is_pass()
            && !judged.is_warning(require)
        {
            failed.set(true);
        }
        if strict_role && !judged.reads_past_policies.is_empty() {
            failed.set(true);
        }
        book.borrow_mut()
            .finished(&mut progress.borrow_mut(), what, &judged);
        keep(measured, judged)
    };
    let mut done: Vec<(usize, T)> = Vec::new();
    let mut pending: Vec<(usize, String, measure::Measurement, db::scratch::Request)> = Vec::new();
    let mut settle_later =
        |at: usize, what: String, checked: db::check::Checked, done: &mut Vec<(usize, T)>| {
            match checked.scratch {
                Some(request) => pending.push((at, what, checked.measurement, request)),
                None => done.push((at, finish(&what, checked.measurement))),
            }
        };
    if let db::check::Session::Own(_) = session {
        // Each check finished as it comes, so the progress line keeps up with the run.
        let mut measured = futures_util::stream::iter(all.into_iter().enumerate().map(
            |(at, (read_path, scope_check))| {
                let mut stop = stop.clone();
                let (progress, catalog, failed) = (&progress, &catalog, &failed);
                async move {
                    if stop.requested().is_some() || failed.get() {
                        return None;
                    }
                    let what = format!("{} [{}]", read_path.name, scope_check.scope);
                    progress.borrow_mut().start(&what);
                    let checked = db::check::run(
                        session,
                        read_path,
                        scope_check,
                        settings,
                        catalog,
                        &mut stop,
                    )
                    .await;
                    Some((at, what, checked))
                }
            },
        ))
        .buffer_unordered(jobs.max(1));
        while let Some(finished) = measured.next().await {
            if let Some((at, what, checked)) = finished {
                settle_later(at, what, checked, &mut done);
            }
        }
    } else if let db::check::Session::Savepoint(client) = session {
        let mut shared_lost = false;
        for (at, (read_path, scope_check)) in all.into_iter().enumerate() {
            if stop.requested().is_some() || failed.get() {
                break;
            }
            let what = format!("{} [{}]", read_path.name, scope_check.scope);
            progress.borrow_mut().start(&what);
            if shared_lost {
                let measured =
                    db::check::not_run(read_path, scope_check, stderr::MIGRATION_SESSION_LOST);
                done.push((at, finish(&what, measured)));
                continue;
            }
            if let Some(hold) = hold
                && hold.passed()
            {
                done.push((at, finish(&what, hold.not_run(read_path, scope_check))));
                continue;
            }
            let checking =
                db::check::run(session, read_path, scope_check, settings, &catalog, stop);
            let checked = match hold {
                Some(hold) => match db::migrate::until(client, hold, false, checking).await {
                    Some(checked) => checked,
                    // Stopped where it was: its statement cancelled, the rollback below.
                    None => {
                        done.push((at, finish(&what, hold.not_run(read_path, scope_check))));
                        continue;
                    }
                },
                None => checking.await,
            };
            // Every check after a migration shares its session: once that is lost (or given up
            // for not answering), nothing more is sent on it.
            shared_lost |= matches!(
                &checked.measurement.outcome,
                measure::Outcome::Failed(f) if f.connection_lost
            );
            settle_later(at, what, checked, &mut done);
        }
        // Every check after the migration is measured: its locks go now, not after the
        // scratch re-plans, which need no session.
        if let Some(hold) = hold {
            hold.release(client, settings).await;
        }
    }
    if !pending.is_empty() {
        let replans = match &settings.scratch {
            db::scratch::Mode::On { bin, .. } => {
                // Every check is measured: the definitions are the copy's alone now.
                let definitions = catalog.definitions.take();
                let requests: Vec<&db::scratch::Request> =
                    pending.iter().map(|(_, _, _, r)| r).collect();
                db::scratch::settle(
                    bin,
                    &definitions,
                    &requests,
                    settings.stats.as_deref(),
                    settings.statement_timeout,
                    stop,
                )
                .await
            }
            // A request is only made with the scratch copy on.
            db::scratch::Mode::Off(_) => db::scratch::Settled::default(),
        };
        let db::scratch::Settled {
            replans,
            production,
        } = replans;
        let production = production
            .into_iter()
            .chain(std::iter::repeat_with(|| None));
        for (((at, what, mut measured, _), made), production) in pending
            .into_iter()
            .zip(replans.into_iter().chain(std::iter::repeat_with(Vec::new)))
            .zip(production)
        {
            if let measure::Outcome::Measured(m) = &mut measured.outcome {
                m.scratch.extend(made);
                if production.is_some() {
                    m.production = production;
                }
            }
            done.push((at, finish(&what, measured)));
        }
    }
    book.borrow_mut().flush(&mut progress.borrow_mut());
    done.sort_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, kept)| kept).collect()
}

/// The progress line's verdicts, final ones: a check's budgets are judged for the line as the
/// report judges them, so a check whose relative budget compares with one not finished yet
/// waits for it.
struct Book {
    /// Shared buffers of the checks finished so far, by (read path, scope).
    buffers: std::collections::HashMap<(String, String), Option<f64>>,
    /// Every (read path, scope) of the run.
    in_run: std::collections::HashSet<(String, String)>,
    /// Finished checks waiting for the check their relative budget compares with.
    held: Vec<(String, verdict::CheckResult)>,
}

impl Book {
    fn new(project: &Project) -> Book {
        Book {
            buffers: Default::default(),
            in_run: project
                .read_paths
                .iter()
                .flat_map(|rp| rp.checks.iter().map(|c| (rp.name.clone(), c.scope.clone())))
                .collect(),
            held: Vec::new(),
        }
    }

    fn finished(&mut self, progress: &mut Progress, what: &str, judged: &verdict::CheckResult) {
        self.buffers.insert(
            (judged.read_path.clone(), judged.scope.clone()),
            judged.shared_buffers,
        );
        let mut copy = judged.clone();
        copy.plans = Vec::new();
        self.held.push((what.to_string(), copy));
        self.release(progress, false);
    }

    /// Shows every held check whose comparison is known (all of them at the end).
    fn release(&mut self, progress: &mut Progress, all: bool) {
        let held = std::mem::take(&mut self.held);
        for (what, mut c) in held {
            let waits = c.budget.relative.as_ref().is_some_and(|rel| {
                let scope = rel.scope.clone().unwrap_or_else(|| c.scope.clone());
                let key = (rel.to.clone(), scope);
                self.in_run.contains(&key) && !self.buffers.contains_key(&key)
            });
            if waits && !all {
                self.held.push((what, c));
                continue;
            }
            let buffers = &self.buffers;
            verdict::judge_budget(&mut c, &|read_path, scope| {
                buffers
                    .get(&(read_path.to_string(), scope.to_string()))
                    .copied()
                    .flatten()
            });
            progress.finish(&what, c.verdict.as_str());
        }
    }

    fn flush(&mut self, progress: &mut Progress) {
        self.release(progress, true);
    }
}

#[cfg(test)]
mod tests {
    use super::sessions_allowed;

    #[test]
    fn jobs_leave_free_slots_to_the_application() {
        // Regression: `-j 50` took every free slot, and the application got "remaining
        // connection slots are reserved".
        assert_eq!(sessions_allowed(97, None), 73);
        assert_eq!(sessions_allowed(10, None), 7);
        assert_eq!(sessions_allowed(4, None), 1);
        assert_eq!(sessions_allowed(0, None), 1);
        assert_eq!(sessions_allowed(97, Some(5)), 5);
        assert_eq!(sessions_allowed(97, Some(-3)), 1);
    }
}
