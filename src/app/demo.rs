//! `plancheck demo`: a throwaway server, the reference board, every check, all removed after.

use std::path::Path;
use std::time::Duration;

use super::{RunOptions, filter, run_checks};
use crate::cli::{ArrivalsArg, DemoArgs};
use crate::project::{self, Source};
use crate::report::page::PageSetup;
use crate::report::stderr;
use crate::server::provider::Board;
use crate::term::say;
use crate::{db, exit_codes, stop};

/// The demo's default board size. At this scale (117k posts) every check passes for the same
/// reason it passes on the full board, and the whole demo takes seconds (see the README).
pub const DEMO_SCALE: f64 = 0.05;

pub(super) async fn demo(args: DemoArgs, mut stop: stop::Stop) -> crate::error::Result<i32> {
    let scale = db::fixtures::validate_scale(args.scale)?;
    let project = project::load(&Source::Embedded, &filter(&args.run))?;
    let (mut server, origin, board) = stop::unless_stopped(&mut stop, async {
        Ok(
            crate::server::provider::Throwaway::start(args.server.into(), scale, args.fresh)
                .await?,
        )
    })
    .await?;
    say!("{}", stderr::demo_started(&origin.to_string()));
    let target = server.target("postgres");
    let status = async {
        match &board {
            Board::Cached(path) => {
                say!("{}", stderr::demo_cached_board(scale, path));
            }
            Board::Load { save, not_cached } => {
                if let Some(line) = stderr::demo_building(save.is_some(), not_cached.as_deref()) {
                    say!("{line}");
                }
                stop::unless_stopped(&mut stop, async {
                    let client = target.connect().await?;
                    db::fixtures::load(&client, scale, args.run.quiet).await?;
                    Ok(())
                })
                .await?;
                if let Some(entry) = save {
                    // Saved before the checks run: the cache holds the board as loaded, not as
                    // the checks left it (statistics of their scans).
                    stop::unless_stopped(&mut stop, async { Ok(server.save_board(entry).await?) })
                        .await?;
                }
            }
        }
        let options = RunOptions {
            own_server: true,
            ..RunOptions::default()
        };
        if !args.ladder {
            return run_checks(&target, &project, &args.run, &options, stop.clone()).await;
        }
        page(&target, &project, &args, &options, stop.clone()).await
    }
    .await;
    server.stop().await;
    status
}

/// The seed's rungs: members on the board, each asking for a page every 10 seconds.
pub const DEMO_MEMBERS: [u64; 6] = [50, 250, 1000, 2500, 4250, 5000];

/// `demo --ladder`: the checks measured as the seed measures them, then the seed's ladder on the
/// same board, and the page of both.
async fn page(
    target: &db::Target,
    project: &project::Project,
    args: &DemoArgs,
    options: &RunOptions<'_>,
    stop: stop::Stop,
) -> crate::error::Result<i32> {
    let mut run = args.run.clone();
    // The seed's method, unless other values are given.
    let d = db::check::Settings::default();
    if (run.warmup, run.iterations) == (d.warmup, d.iterations) {
        (run.warmup, run.iterations) = (8, 60);
    }
    let (checks, stopped) =
        super::run::judged_run(target, project, &run, options, stop.clone()).await?;
    if let Some(code) = stopped {
        super::output::emit(&checks, &run.verdict)?;
        return Ok(code);
    }
    let window = super::ladder::Window {
        warmup_seconds: 10,
        rung_seconds: 30,
        min_requests: 400,
        max_rate: 1000.0,
    };
    let interval = Duration::from_secs(10);
    let plan = super::ladder::Plan {
        rungs: super::ladder::rungs_of(&[], &DEMO_MEMBERS, interval, &window)?,
        pool: 3,
        arrivals: ArrivalsArg::Fixed,
        seed: 1,
        interval: Some(interval),
        warmup_seconds: window.warmup_seconds,
        rung_seconds: window.rung_seconds,
        min_requests: window.min_requests,
        max_seconds: 900,
        statement_timeout: run.statement_timeout,
        quiet: run.quiet,
        own_server: true,
        strict_role: false,
    };
    let (ladder, board, stop) = super::ladder::run(target, project, &plan, stop).await?;
    let chart = args.chart.as_deref();
    let setup = |at: Option<&Path>| PageSetup {
        board: board.clone(),
        machine: crate::machine::describe(),
        measured: super::ladder::today(),
        chart: chart.map(|c| super::ladder::link(c, at)),
    };
    super::output::emit_page(&checks, &ladder, &setup, &run.verdict, chart)?;
    if let Some(code) = stop.requested() {
        return Ok(code);
    }
    let status = super::status(&checks);
    Ok(if status == exit_codes::PASS && ladder.ladder.failed {
        exit_codes::CHECK_FAILED
    } else {
        status
    })
}
