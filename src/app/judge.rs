//! `plancheck judge DIR`: the measurements a run saved, judged again with no database.

use super::status;
use crate::cli::JudgeArgs;
use crate::saved;

/// `plancheck judge DIR`: the saved run judged again, as the live run would have been.
pub(super) fn judge(args: JudgeArgs) -> crate::error::Result<i32> {
    let run = saved::read(&args.dir)?;
    let report = super::run::judge_run(run, &args.verdict);
    super::output::emit(&report, &args.verdict)?;
    Ok(status(&report))
}
