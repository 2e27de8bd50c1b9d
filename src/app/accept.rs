//! `plancheck accept`: records the shape of each check's plans as its baseline
//! (`baselines/NAME.SCOPE.plan`), for `check` to compare with.

use super::run::{Pace, planning_session, run_all};
use super::target;
use crate::cli::AcceptArgs;
use crate::db::check::Session;
use crate::measure::Outcome;
use crate::project;
use crate::report::stderr;
use crate::term::say;
use crate::verdict::{self, Judging, baseline};
use crate::{exit_codes, stop};

pub(super) async fn accept(args: AcceptArgs, mut stop: stop::Stop) -> crate::error::Result<i32> {
    let filter = crate::cli::settings::select(&args.select);
    let project = super::load_project(&args.project.dir, &filter)?;
    let target = target(&args.connect)?;
    let (client, settings) = planning_session(&target, &args.bounds).await?;
    drop(client);
    let judging = Judging::default();
    let pool = crate::db::pool::Pool::new(&target, true);
    let measured = run_all(
        Session::Own(&pool),
        &project,
        &settings,
        &judging,
        Pace {
            jobs: 1,
            quiet: args.quiet,
            fail_fast: None,
            strict_role: false,
            hold: None,
        },
        &mut stop,
        &|m, _| m,
    )
    .await;
    let baselines = project::Baselines::open(&args.project.dir)?;
    let (mut recorded, mut missed, mut lost) = (0, 0, false);
    for m in &measured {
        let Some(text) = baseline::record(m) else {
            if let Outcome::Failed(f) = &m.outcome {
                say!(
                    "{}",
                    stderr::not_recorded(&m.read_path, &m.scope, &f.message)
                );
                lost |= f.connection_lost;
            }
            missed += 1;
            continue;
        };
        baselines.write(&m.read_path, &m.scope, &text)?;
        recorded += 1;
        let v = verdict::judge(m, &judging);
        if !v.verdict.is_pass() {
            say!(
                "{}",
                stderr::recorded_anyway(&m.read_path, &m.scope, v.verdict)
            );
        }
    }
    say!("{}", stderr::recorded(recorded, &baselines.shown));
    if let Some(code) = stop.requested() {
        return Ok(code);
    }
    Ok(if lost {
        exit_codes::DATABASE
    } else if missed > 0 {
        exit_codes::CHECK_FAILED
    } else {
        exit_codes::PASS
    })
}
