//! `plancheck lint`: twin drift and invalid indexes, from the catalog alone.

use super::{target, write_stdout};
use crate::cli::LintArgs;
use crate::db::check::Settings;
use crate::project::Filter;
use crate::{db, exit_codes, lint, report};

pub(super) async fn lint(args: LintArgs) -> crate::error::Result<i32> {
    let project = super::load_project(&args.project.dir, &Filter::default())?;
    let target = target(&args.connect)?;
    let client = target.connect().await?;
    db::check::bound_session(&client, &Settings::default()).await?;
    let findings = lint::lint(&db::catalog::required_indexes(&client, &project).await?);
    let text = report::lint(&findings, project.read_paths.len(), args.format.into());
    write_stdout(&text)?;
    Ok(if !findings.iter().any(lint::Finding::fails) {
        exit_codes::PASS
    } else {
        exit_codes::CHECK_FAILED
    })
}
