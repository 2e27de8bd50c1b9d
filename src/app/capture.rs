//! `plancheck capture`: plans and expectations written from the server's own log of what the
//! application sent. The logs are read whole before anything is planned, and everything is
//! planned before anything is written: a bad log writes nothing.

use std::collections::BTreeMap;

use super::run::{Pace, jobs, planning_session, run_all};
use super::target;
use crate::capture::files::{self, Found};
use crate::capture::group::Grouper;
use crate::capture::log::Format;
use crate::capture::propose::{Proposal, Roots, Skip, propose};
use crate::capture::{self, write};
use crate::cli::{CaptureArgs, LogFormatArg};
use crate::db::check::Session;
use crate::error::{BadInput, DatabaseFailure};
use crate::project::{self, Filter, Source};
use crate::report::{self, stderr};
use crate::term::say;
use crate::{db, stop, verdict};

/// The index the in-memory expectations name while their plans are measured: none is required
/// yet, the plan says which it uses.
const NO_INDEX_YET: &str = "plancheck_capture_no_index_yet";

// Long because it is the command in order: the logs read, the project read, the statements
// planned, the proposals written, the summary said.
pub(super) async fn capture(args: CaptureArgs, mut stop: stop::Stop) -> crate::error::Result<i32> {
    if !project::is_safe_name(&args.scope) {
        return Err(BadInput(stderr::bad_scope_name(&args.scope)).into());
    }
    // Every log opened and its format known before the database is asked anything.
    let chosen = match args.log_format {
        Some(LogFormatArg::Csvlog) => Some(Format::Csv),
        Some(LogFormatArg::Jsonlog) => Some(Format::Json),
        Some(LogFormatArg::Stderr) => Some(stderr_format(&args)?),
        None => None,
    };
    let logs = files::open_logs(&args.log, chosen, &|| stderr_format(&args))?;
    let target = target(&args.connect)?;
    let (client, settings) = planning_session(&target, &args.bounds).await?;
    let read = |e: tokio_postgres::Error| {
        DatabaseFailure(stderr::asked(stderr::asking::CATALOG, &db::cause(&e)))
    };
    let predicates = db::catalog::partial_index_predicates(&client)
        .await
        .map_err(read)?;

    let mut grouper = Grouper::new(capture::predicate_columns(&predicates));
    let (mut unreadable, mut oversized) = (0, 0);
    let mut meter = crate::term::Meter::new(args.quiet);
    for (path, format, file) in logs {
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut progress = |so_far: files::ReadSoFar| {
            if meter.due() {
                meter.show(&stderr::capture_reading(
                    &path,
                    so_far.bytes,
                    size,
                    so_far.statements,
                    so_far.read_paths,
                ));
            }
        };
        let (bad, long) = files::read_log(&path, format, file, &mut grouper, &mut progress)?;
        unreadable += bad;
        oversized += long;
    }
    meter.clear();
    if oversized > 0 {
        say!(
            "{}",
            stderr::left_out_oversized(oversized, capture::log::MAX_RECORD >> 20)
        );
    }
    let (statements, skipped) = (grouper.statements, std::mem::take(&mut grouper.skipped));
    let groups = grouper.groups();
    let found = files::existing(&args.project.dir, &grouper, &args.scope, groups)?;

    // Every new read path, and every covered one the scope is new to, planned as `check` plans.
    let to_plan: Vec<&Found> = found
        .iter()
        .filter(|f| !f.group.text.is_empty() && f.covered.as_ref().is_none_or(|c| !c.has_scope))
        .collect();
    let mut proposals: BTreeMap<String, Proposal> = BTreeMap::new();
    // Each read path as the files it would become, loaded as `check` loads them: one that
    // cannot be (a statement plancheck refuses to run) is skipped, saying why.
    let mut read_paths = Vec::new();
    for f in to_plan {
        let files = vec![
            (
                format!("plans/{}.sql", f.name),
                write::plan(&f.group).into_bytes(),
            ),
            (
                format!("expectations/{}.toml", f.name),
                write::expectation(&f.group, &args.scope, NO_INDEX_YET, &[], &[], None, None)
                    .into_bytes(),
            ),
        ];
        match project::load(&Source::Memory(files), &Filter::default()) {
            Ok(one) => read_paths.extend(one.read_paths),
            Err(e) => {
                let why = stderr::would_not_run(&e.0);
                proposals.insert(f.name.clone(), Proposal::Skip(Skip::Failed(why)));
            }
        }
    }
    if !read_paths.is_empty() {
        let planned = project::Project {
            on_disk: false,
            read_paths,
            scope_names: vec![args.scope.clone()],
            unread: Vec::new(),
            ladder: Default::default(),
        };
        let jobs = jobs(&client, None, None).await?;
        let pool = crate::db::pool::Pool::new(&target, true);
        let measured = run_all(
            Session::Own(&pool),
            &planned,
            &settings,
            &verdict::Judging::default(),
            // The progress would show verdicts against no index yet.
            Pace {
                jobs,
                quiet: true,
                fail_fast: None,
                strict_role: false,
                hold: None,
            },
            &mut stop,
            &|m, _| m,
        )
        .await;
        if let Some(status) = stop.requested() {
            return Ok(status);
        }
        // A plan names partitions; the proposal names the partitioned table and index.
        let roots = crate::db::catalog::partition_roots(&client)
            .await
            .map_err(|e| {
                DatabaseFailure(stderr::asked(
                    stderr::asking::PARTITIONS,
                    &crate::db::cause(&e),
                ))
            })?;
        let roots = Roots::new(roots);
        for m in &measured {
            proposals.insert(
                m.read_path.clone(),
                propose(m, args.min_rows as f64, &roots),
            );
        }
    }
    drop(client);

    let destination = files::Destination {
        dir: &args.project.dir,
        scope: &args.scope,
        dry_run: args.dry_run,
    };
    let summary = files::write_all(&destination, &found, &proposals)?;
    let text = report::capture::summary(&report::capture::Summary {
        logs: args.log.len(),
        statements,
        unreadable,
        skipped: &skipped,
        found: &found,
        proposals: &proposals,
        written: &summary,
        scope: &args.scope,
        dry_run: args.dry_run,
    });
    // Through the writer that takes a closed pipe (`capture --dry-run | head`) for what it is.
    super::write_stdout(&format!("{}{text}", summary.would))?;
    if !args.dry_run && summary.files.len() / 2 > 0 {
        say!("{}", stderr::review_captured(&args.project.dir));
    }
    Ok(crate::exit_codes::PASS)
}

fn stderr_format(args: &CaptureArgs) -> Result<Format, BadInput> {
    Format::parse("stderr", &args.log_line_prefix)
        .map_err(|e| BadInput(stderr::bad_log_line_prefix(&e)))
}
