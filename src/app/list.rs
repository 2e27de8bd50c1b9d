//! `plancheck list`: the checks a run would make, read path × scope, from the project alone.

use super::write_stdout;
use crate::cli::ListArgs;
use crate::{exit_codes, report};

pub(super) fn list(args: ListArgs) -> crate::error::Result<i32> {
    let filter = crate::cli::settings::select(&args.select);
    let project = super::load_project(&args.project.dir, &filter)?;
    write_stdout(&report::list::list(&project, args.format.into()))?;
    Ok(exit_codes::PASS)
}
