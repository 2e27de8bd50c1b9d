//! `plancheck check`: every check of a project against a database, before and after a migration
//! when one is given.

use super::{RunOptions, filter, run_checks, target};
use crate::cli::CheckArgs;
use crate::db::Target;
use crate::project::migration;
use crate::report::stderr;
use crate::term::say;
use crate::{db, sql, stop};

pub(super) async fn check(args: CheckArgs, stop: stop::Stop) -> crate::error::Result<i32> {
    let project = super::load_project(&args.project.dir, &filter(&args.run))?;
    let migration = args.migration.as_deref().map(migration::read).transpose()?;
    let target = target(&args.connect)?;
    let options = RunOptions {
        migration: migration.as_ref(),
        analyze: args.analyze,
        migration_hold: crate::cli::settings::migration_hold(&args),
        own_server: false,
        strict_role: args.strict_role,
        replan_without_rivals: args.replan_without_rivals,
    };
    run_checks(&target, &project, &args.run, &options, stop).await
}

/// The migration as this server reads it: split again when its `standard_conforming_strings`
/// is off, so that a backslash in a plain string is read as the server reads it.
pub(super) async fn for_server(
    client: &tokio_postgres::Client,
    m: &migration::Migration,
) -> crate::error::Result<migration::Migration> {
    let standard_conforming_strings = db::preflight::standard_conforming_strings(client).await?;
    if standard_conforming_strings {
        return Ok(m.clone());
    }
    Ok(migration::vet_with(
        &m.path,
        &m.sql,
        sql::Dialect {
            standard_conforming_strings,
        },
    )?)
}

/// Sequences are not transactional: what the migration took from one stays taken after the
/// rollback. Says which ones moved (another session may have moved them too, so "may").
pub(super) async fn warn_advanced_sequences(target: &Target, was: &[(String, Option<i64>)]) {
    let Ok(client) = target.connect().await else {
        return;
    };
    let Ok(now) = db::migrate::sequence_values(&client).await else {
        return;
    };
    for (name, value) in now {
        if let Some((_, before)) = was.iter().find(|(n, _)| *n == name)
            && *before != value
        {
            say!("{}", stderr::sequence_moved(&name, *before, value));
        }
    }
}
