//! `plancheck list`: the checks a run would make, read path × scope, from the project alone.

use super::write_stdout;
use crate::cli::ListArgs;
use crate::project::Filter;
use crate::{exit_codes, report};

pub(super) fn list(args: ListArgs) -> crate::error::Result<i32> {
    let filter = Filter {
        only: args.select.only.clone(),
        scopes: args.select.scope.clone(),
    };
    let project = super::load_project(&args.project.dir, &filter)?;
    write_stdout(&report::list::list(&project, args.format.into()))?;
    Ok(exit_codes::PASS)
}
