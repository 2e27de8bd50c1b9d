//! `plancheck ladder`: the mix from the project's shares, the rungs from the command line, a
//! pool of sessions, each rung measured (`db::ladder`) and judged (`verdict::ladder`), the
//! report written (`report::ladder`).

use std::time::Duration;

use super::{target, write_stdout};
use crate::cli::{ArrivalsArg, LadderArgs, LadderFormat};
use crate::db::ladder::{self as load, Arrivals, Page, Rung};
use crate::error::{BadInput, OutputFailure};
use crate::report::ladder::{LadderReport, Setup};
use crate::report::{Style, stderr};
use crate::term::say;
use crate::verdict::ladder::{self as judged, Asked, PageName};
use crate::{db, exit_codes, stop};

// Long because it is the command in order: the mix, the rungs, the pool, each rung measured and
// judged with its progress line, then the report and its files.
pub(super) async fn ladder(args: LadderArgs, mut stop: stop::Stop) -> crate::error::Result<i32> {
    let filter = crate::cli::settings::select(&args.select);
    let project = super::load_project(&args.project.dir, &filter)?;
    let (pages, note) = mix(&project)?;
    if let Some(note) = note
        && !args.quiet
    {
        say!("note: {note}");
    }
    let rungs = rungs(&args)?;
    let target = target(&args.connect)?;
    let settings = db::check::Settings {
        statement_timeout: args.statement_timeout,
        ..db::check::Settings::default()
    };
    let client = target.connect().await?;
    let server_version = db::preflight::server_version(&client).await?;
    drop(client);
    let pool = usize::from(args.pool);
    let mut sessions = load::open(&target, &settings, &pages, pool).await?;
    let shares: Vec<f64> = pages.iter().map(|p| p.share).collect();
    let arrivals = match args.arrivals {
        ArrivalsArg::Fixed => Arrivals::Fixed { seed: args.seed },
        ArrivalsArg::Poisson => Arrivals::Poisson { seed: args.seed },
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.max_seconds);
    let mut results = Vec::new();
    for (i, (asked, rung)) in rungs.iter().enumerate() {
        if sessions.len() < pool {
            let more = load::open(&target, &settings, &pages, pool - sessions.len()).await?;
            sessions.extend(more);
        }
        if !args.quiet {
            crate::term::say_part!("{}", stderr::ladder_rung(i + 1, rungs.len(), asked));
        }
        let (kept, measured) = load::run(
            sessions, &settings, rung, arrivals, &shares, &mut stop, deadline,
        )
        .await;
        sessions = kept;
        let result = judged::rung(*asked, &measured, &project.ladder);
        if !args.quiet {
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
            pool,
            arrivals: match args.arrivals {
                ArrivalsArg::Fixed => "fixed",
                ArrivalsArg::Poisson => "poisson",
            },
            interval_s: (!args.members.is_empty()).then_some(args.interval.as_secs_f64()),
            warmup_s: args.warmup_seconds as f64,
            rung_s: args.rung_seconds as f64,
            min_requests: args.min_requests,
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
    let render = |format: LadderFormat, style: Style| match format {
        LadderFormat::Table => crate::report::ladder::text(&report, style),
        LadderFormat::Json => crate::report::ladder::json(&report),
        LadderFormat::Markdown => crate::report::ladder::markdown(&report),
        LadderFormat::Svg => crate::report::ladder::svg(&report),
    };
    write_stdout(&render(
        args.format,
        crate::cli::settings::plain_style_of_process(),
    ))?;
    for (format, path) in &args.report {
        crate::files::replace_given(path, render(*format, Style::PLAIN).as_bytes()).map_err(
            |e| {
                OutputFailure(stderr::report_file_unwritten(
                    &format!("{format:?}").to_lowercase(),
                    path,
                    &e.why,
                ))
            },
        )?;
    }
    if let Some(code) = stop.requested() {
        return Ok(code);
    }
    Ok(if report.ladder.failed {
        exit_codes::CHECK_FAILED
    } else {
        exit_codes::PASS
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
    let asked: Vec<Asked> = if args.members.is_empty() {
        args.rates
            .iter()
            .map(|&rate| Asked {
                members: None,
                rate,
            })
            .collect()
    } else {
        let every = args.interval.as_secs_f64();
        if every <= 0.0 {
            return Err(BadInput(stderr::LADDER_NO_INTERVAL.into()));
        }
        args.members
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
        if a.rate > args.max_rate {
            return Err(BadInput(stderr::ladder_over_max_rate(
                a.rate,
                args.max_rate,
            )));
        }
        out.push((
            a,
            Rung {
                rate: a.rate,
                warmup: Duration::from_secs(args.warmup_seconds),
                measure: Duration::from_secs(args.rung_seconds),
                longest: Duration::from_secs(args.rung_seconds * 4),
                min_requests: args.min_requests,
            },
        ));
    }
    Ok(out)
}
