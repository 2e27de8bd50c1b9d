//! `plancheck stats export` and `plancheck stats show`.

use super::{target, write_stdout};
use crate::cli::{StatsExportArgs, StatsShowArgs};
use crate::db::check::Settings;
use crate::db::stats::{Failed, Selection};
use crate::error::{BadInput, OutputFailure};
use crate::term::say;
use crate::{db, exit_codes, report, stats};

pub(super) async fn export(args: StatsExportArgs) -> crate::error::Result<i32> {
    let redact = args
        .redact
        .iter()
        .map(|r| stats::Redact::parse(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(BadInput)?;
    // The project first: a bad file is said before any connection.
    let read_paths = match &args.project {
        Some(dir) => read_path_texts(&super::load_project(dir, &Default::default())?),
        None => Vec::new(),
    };
    let target = target(&args.connect)?;
    let client = target.connect().await?;
    let settings = Settings {
        statement_timeout: args.bounds.statement_timeout,
        lock_timeout: args.bounds.lock_timeout,
        ..Settings::default()
    };
    let selection = Selection {
        tables: args.tables.clone(),
        read_paths,
        redact,
    };
    let file = match db::stats::export(&client, &settings, &selection).await {
        Ok(file) => file,
        Err(Failed::Database(e)) => return Err(e.into()),
        Err(Failed::NoSuchTable(name)) => {
            return Err(BadInput(report::stats::no_such_table(&name)).into());
        }
        Err(Failed::RedactMatchedNothing(pattern)) => {
            return Err(BadInput(report::stats::redact_matched_nothing(&pattern)).into());
        }
    };
    // What was read is checked as a file read back would be: a value out of range is not
    // written for a later run to refuse.
    file.check()
        .map_err(|why| crate::error::DatabaseFailure(report::stats::exported_unreadable(&why)))?;
    let mut text = serde_json::to_string_pretty(&file)
        .map_err(|e| OutputFailure(format!("could not write the statistics: {e}")))?;
    text.push('\n');
    if args.output.as_os_str() == "-" {
        write_stdout(&text)?;
    } else {
        crate::files::replace_given(&args.output, text.as_bytes())
            .map_err(|e| OutputFailure(e.to_string()))?;
    }
    say!(
        "{}",
        report::stats::exported(&file, &args.output.display().to_string())
    );
    Ok(exit_codes::PASS)
}

/// Every statement a project's checks run: each scope's SQL and its setup.
fn read_path_texts(project: &crate::project::Project) -> Vec<String> {
    project
        .read_paths
        .iter()
        .flat_map(|r| &r.checks)
        .flat_map(|c| std::iter::once(c.sql.text.clone()).chain(c.setup.iter().cloned()))
        .collect()
}

pub(super) fn show(args: StatsShowArgs) -> crate::error::Result<i32> {
    let file = stats::read(&args.file)?;
    let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
    write_stdout(&report::stats::show(
        &file,
        &args.file.display().to_string(),
        now,
    ))?;
    Ok(exit_codes::PASS)
}
