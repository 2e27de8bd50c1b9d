//! `plancheck ladder`: the mix from the project's shares, the rungs from the command line, a
//! pool of sessions, each rung measured (`db::ladder`) and judged (`verdict::ladder`), the
//! report written (`report::ladder`).

use std::path::Path;
use std::time::Duration;

use super::{target, write_stdout};
use crate::cli::{ArrivalsArg, LadderArgs, LadderFormat};
use crate::db::Target;
use crate::db::check::within;
use crate::db::fixtures::BoardFacts;
use crate::db::ladder::{self as load, Arrivals, Page, Rung};
use crate::error::BadInput;
use crate::report::ladder::{LadderReport, PoolCut, Setup};
use crate::report::page::PageSetup;
use crate::report::stderr::asking;
use crate::report::{self, Style, stderr};
use crate::term::say;
use crate::verdict::ladder::{self as judged, Asked, PageName};
use crate::{db, exit_codes, stop};

/// How a ladder runs, from `plancheck ladder`'s flags or the demo's.
pub(super) struct Plan {
    pub rungs: Vec<(Asked, Rung)>,
    pub pool: usize,
    pub arrivals: ArrivalsArg,
    pub seed: u64,
    /// Each member's interval, when the rungs are members.
    pub interval: Option<Duration>,
    pub warmup_seconds: u64,
    pub rung_seconds: u64,
    pub min_requests: u64,
    pub max_seconds: u64,
    pub statement_timeout: Duration,
    pub quiet: bool,
    /// The server is plancheck's own throwaway (the demo's): no role to warn about.
    pub own_server: bool,
    /// `--strict-role`.
    pub strict_role: bool,
}

pub(super) async fn ladder(args: LadderArgs, stop: stop::Stop) -> crate::error::Result<i32> {
    let filter = crate::cli::settings::select(&args.select);
    let project = super::load_project(&args.project.dir, &filter)?;
    // The checks of the page, read before any load is put on the server: a bad folder is found
    // first.
    let checks = match &args.checks {
        Some(dir) => Some(super::run::judge_run(
            crate::saved::read(dir)?,
            &crate::cli::VerdictArgs::default(),
        )),
        None => None,
    };
    let plan = Plan {
        rungs: rungs(&args)?,
        pool: usize::from(args.pool),
        arrivals: args.arrivals,
        seed: args.seed,
        interval: (!args.members.is_empty()).then_some(args.interval),
        warmup_seconds: args.warmup_seconds,
        rung_seconds: args.rung_seconds,
        min_requests: args.min_requests,
        max_seconds: args.max_seconds,
        statement_timeout: args.statement_timeout,
        quiet: args.quiet,
        own_server: false,
        strict_role: args.strict_role,
    };
    let target = target(&args.connect)?;
    let (report, board, stop) = run(&target, &project, &plan, stop).await?;
    let svg = args
        .report
        .iter()
        .find(|(f, _)| *f == LadderFormat::Svg)
        .map(|(_, p)| p.clone());
    let page = |markdown_at: Option<&Path>| PageSetup {
        board: board.clone(),
        machine: crate::machine::describe(),
        measured: today(),
        chart: svg.as_deref().map(|svg| link(svg, markdown_at)),
    };
    let render = |format: LadderFormat, style: Style, at: Option<&Path>| match (format, &checks) {
        (LadderFormat::Markdown, Some(checks)) => {
            report::page::markdown(&page(at), checks, &report)
        }
        (LadderFormat::Json, Some(checks)) => report::page::json(&page(at), checks, &report),
        (LadderFormat::Table, _) => report::ladder::text(&report, style),
        (LadderFormat::Json, None) => report::ladder::json(&report),
        (LadderFormat::Markdown, None) => report::ladder::markdown(&report),
        (LadderFormat::Svg, _) => report::ladder::svg(&report),
    };
    write_stdout(&render(
        args.format,
        crate::cli::settings::plain_style_of_process(),
        None,
    ))?;
    for (format, path) in &args.report {
        let text = render(*format, Style::PLAIN, Some(path));
        super::output::write_report(&format!("{format:?}").to_lowercase(), path, &text)?;
    }
    if let Some(code) = stop.requested() {
        return Ok(code);
    }
    let checks_failed = checks
        .as_ref()
        .is_some_and(|c| super::status(c) != exit_codes::PASS);
    Ok(if report.ladder.failed || checks_failed {
        exit_codes::CHECK_FAILED
    } else {
        exit_codes::PASS
    })
}

/// The day, UTC, as a page's setup states it: `2026-12-02`.
pub(super) fn today() -> String {
    chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
        .format("%Y-%m-%d")
        .to_string()
}

/// The chart as a page written to `markdown_at` links it: by its name when both are in one
/// folder, else as given.
pub(super) fn link(svg: &Path, markdown_at: Option<&Path>) -> String {
    let folder = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
    match (markdown_at, svg.file_name()) {
        (Some(md), Some(name)) if folder(md) == folder(svg) => name.to_string_lossy().into_owned(),
        _ => svg.to_string_lossy().into_owned(),
    }
}

/// The ladder on `target`: the mix, the pool, each rung measured and judged with its progress
/// line; the report, the reference board's counts when the database holds one (for a page's
/// setup), and the stop handle (which says whether it was stopped).
// Long because it is the ladder in order: the mix, the server's facts, the pool, then each rung
// measured and judged with its progress lines, then the report.
pub(super) async fn run(
    target: &Target,
    project: &crate::project::Project,
    plan: &Plan,
    mut stop: stop::Stop,
) -> crate::error::Result<(LadderReport, Option<BoardFacts>, stop::Stop)> {
    let (pages, note) = mix(project)?;
    if let Some(note) = note
        && !plan.quiet
    {
        say!("note: {note}");
    }
    // `--max-seconds` bounds the whole ladder, from here.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(plan.max_seconds);
    let settings = db::check::Settings {
        statement_timeout: plan.statement_timeout,
        ..db::check::Settings::default()
    };
    let Before {
        server_version,
        board,
        mix,
        pool,
    } = before_rungs(target, &pages, plan, &settings).await?;
    let mut sessions = load::open(&mix, pool.allowed).await?;
    let shares: Vec<f64> = pages.iter().map(|p| p.share).collect();
    let arrivals = match plan.arrivals {
        ArrivalsArg::Fixed => Arrivals::Fixed { seed: plan.seed },
        ArrivalsArg::Poisson => Arrivals::Poisson { seed: plan.seed },
    };
    let mut results = Vec::new();
    for (i, (asked, rung)) in plan.rungs.iter().enumerate() {
        if sessions.len() < pool.allowed {
            let more = load::open(&mix, pool.allowed - sessions.len()).await?;
            sessions.extend(more);
        }
        if !plan.quiet {
            crate::term::say_part!("{}", stderr::ladder_rung(i + 1, plan.rungs.len(), asked));
        }
        let (kept, measured) =
            load::run(sessions, &mix, rung, arrivals, &shares, &mut stop, deadline).await;
        sessions = kept;
        let result = judged::rung(*asked, &measured, &project.ladder);
        if !plan.quiet {
            say!("{}", stderr::ladder_rung_done(&result));
        }
        let cut = result.partial.is_some();
        results.push(result);
        if cut {
            break;
        }
    }
    let report = LadderReport {
        setup: Setup {
            server_version,
            pool: pool.allowed,
            pool_cut: pool.cut_from.map(|free| PoolCut {
                asked: plan.pool,
                free_slots: free,
            }),
            arrivals: match plan.arrivals {
                ArrivalsArg::Fixed => "fixed",
                ArrivalsArg::Poisson => "poisson",
            },
            interval_s: plan.interval.map(|i| i.as_secs_f64()),
            warmup_s: plan.warmup_seconds as f64,
            rung_s: plan.rung_seconds as f64,
            min_requests: plan.min_requests,
            pages: pages
                .iter()
                .map(|p| PageName {
                    read_path: p.read_path.name.clone(),
                    scope: p.check.scope.clone(),
                    share: p.share,
                })
                .collect(),
        },
        ladder: judged::ladder(results),
    };
    Ok((report, board, stop))
}

/// What the ladder learns on its first session, before any load.
struct Before {
    server_version: String,
    board: Option<BoardFacts>,
    mix: std::sync::Arc<load::Mix>,
    pool: super::run::Room,
}

/// The first session's reads, each on the client's clock (a server that stops answering cannot
/// hang the ladder before its first rung): the role's rights (as in `check`: the same warnings,
/// the same refusal under --strict-role), the server's version, the reference board's counts,
/// the functions the read paths call, and how large the pool may be (the room `check -j` leaves
/// the application, said when it cuts `--pool`).
async fn before_rungs(
    target: &Target,
    pages: &[Page<'_>],
    plan: &Plan,
    settings: &db::check::Settings,
) -> crate::error::Result<Before> {
    let client = target.connect().await?;
    let limit = settings.client_limit();
    let options = super::RunOptions {
        own_server: plan.own_server,
        strict_role: plan.strict_role,
        ..super::RunOptions::default()
    };
    within(
        limit,
        asking::ROLE_RIGHTS,
        // No ladder report carries the role's rights: said even with -q.
        super::run::role_warnings(&client, &options, false),
    )
    .await?;
    let server_version = within(limit, asking::SERVER_VERSION, async {
        Ok(db::preflight::server_version(&client).await?)
    })
    .await?;
    let board = within(limit, asking::CATALOG, async {
        Ok(db::fixtures::board_facts(&client).await)
    })
    .await?;
    let mix = within(limit, asking::CATALOG, async {
        Ok(load::Mix::new(&client, target, settings, pages).await?)
    })
    .await?;
    let pool = within(
        limit,
        asking::FREE_SLOTS,
        super::run::room(&client, plan.pool),
    )
    .await?;
    if let Some(free) = pool.cut_from {
        say!("{}", stderr::pool_capped(plan.pool, free, pool.allowed));
    }
    Ok(Before {
        server_version,
        board,
        mix,
        pool,
    })
}

/// The pages of the mix and their shares: the checks that give a `share`, or, when none does,
/// every check alike. The shares sum to 1 (a sum under 1 is taken as the whole mix; over 1 is
/// refused); a note says what was left out or scaled.
fn mix(project: &crate::project::Project) -> Result<(Vec<Page<'_>>, Option<String>), BadInput> {
    let all: Vec<Page<'_>> = project
        .read_paths
        .iter()
        .flat_map(|rp| {
            rp.checks.iter().map(move |c| Page {
                read_path: rp,
                check: c,
                share: c.share.unwrap_or(0.0),
            })
        })
        .collect();
    if all.is_empty() {
        return Err(BadInput(stderr::LADDER_NOTHING.into()));
    }
    let given: Vec<Page<'_>> = all.iter().copied().filter(|p| p.share > 0.0).collect();
    if given.is_empty() {
        let n = all.len() as f64;
        let pages = all
            .into_iter()
            .map(|p| Page {
                share: 1.0 / n,
                ..p
            })
            .collect();
        return Ok((pages, Some(stderr::LADDER_EVEN.into())));
    }
    let total: f64 = given.iter().map(|p| p.share).sum();
    if total > 1.0 + 1e-9 {
        return Err(BadInput(stderr::ladder_shares_over(total)));
    }
    let left_out: Vec<String> = all
        .iter()
        .filter(|p| p.share <= 0.0)
        .map(|p| format!("{} [{}]", p.read_path.name, p.check.scope))
        .collect();
    let note = stderr::ladder_mix(total, &left_out);
    let pages = given
        .into_iter()
        .map(|p| Page {
            share: p.share / total,
            ..p
        })
        .collect();
    Ok((pages, note))
}

/// The rungs as asked: rates, or members each asking every --interval; each under --max-rate.
fn rungs(args: &LadderArgs) -> Result<Vec<(Asked, Rung)>, BadInput> {
    let window = Window {
        warmup_seconds: args.warmup_seconds,
        rung_seconds: args.rung_seconds,
        min_requests: args.min_requests,
        max_rate: args.max_rate,
    };
    rungs_of(&args.rates, &args.members, args.interval, &window)
}

/// Each rung's warm-up and measured window, and the highest rate one may offer.
pub(super) struct Window {
    pub warmup_seconds: u64,
    pub rung_seconds: u64,
    pub min_requests: u64,
    pub max_rate: f64,
}

/// The rungs of `rates`, or of `members` each asking every `interval`; each under the window's
/// highest rate.
pub(super) fn rungs_of(
    rates: &[f64],
    members: &[u64],
    interval: Duration,
    w: &Window,
) -> Result<Vec<(Asked, Rung)>, BadInput> {
    let asked: Vec<Asked> = if members.is_empty() {
        rates
            .iter()
            .map(|&rate| Asked {
                members: None,
                rate,
            })
            .collect()
    } else {
        let every = interval.as_secs_f64();
        if every <= 0.0 {
            return Err(BadInput(stderr::LADDER_NO_INTERVAL.into()));
        }
        members
            .iter()
            .map(|&m| Asked {
                members: Some(m),
                rate: m as f64 / every,
            })
            .collect()
    };
    let mut out = Vec::new();
    for a in asked {
        if !(a.rate.is_finite() && a.rate > 0.0) {
            return Err(BadInput(stderr::ladder_bad_rate(a.rate)));
        }
        if a.rate > w.max_rate {
            return Err(BadInput(stderr::ladder_over_max_rate(a.rate, w.max_rate)));
        }
        out.push((
            a,
            Rung {
                rate: a.rate,
                warmup: Duration::from_secs(w.warmup_seconds),
                measure: Duration::from_secs(w.rung_seconds),
                longest: Duration::from_secs(w.rung_seconds * 4),
                min_requests: w.min_requests,
            },
        ));
    }
    Ok(out)
}
