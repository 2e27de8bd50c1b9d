//! `plancheck judge DIR`: the measurements a run saved, judged again with no database.

use super::{status, write_stdout};
use crate::cli::JudgeArgs;
use crate::{report, saved};

/// `plancheck judge DIR`: the saved run judged again, as the live run would have been.
pub(super) fn judge(args: JudgeArgs) -> anyhow::Result<i32> {
    let run = saved::read(&args.dir)?;
    let report = super::run::judge_run(run, &args.verdict);
    write_stdout(&report::render(&report, args.verdict.format.into()))?;
    Ok(status(&report))
}
