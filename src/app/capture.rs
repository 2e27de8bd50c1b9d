//! `plancheck capture`: plans and expectations written from the server's own log of what the
//! application sent. The logs are read whole before anything is planned, and everything is
//! planned before anything is written: a bad log writes nothing.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::run::{jobs, planning_session, run_all};
use super::target;
use crate::capture::group::{Group, Grouper};
use crate::capture::log::{Format, Reader};
use crate::capture::propose::{Proposal, Roots, Skip, propose};
use crate::capture::{self, shape, write};
use crate::cli::{CaptureArgs, LogFormatArg};
use crate::db::check::Session;
use crate::errors::{BadInput, DatabaseFailure, OutputFailure};
use crate::files::{self, FileError, Folder, Why};
use crate::project::{self, Filter, Source};
use crate::term::say;
use crate::{db, stop, verdict};

/// The index the in-memory expectations name while their plans are measured: none is required
/// yet, the plan says which it uses.
const NO_INDEX_YET: &str = "plancheck_capture_no_index_yet";

/// A read path found in the logs, and what becomes of it.
struct Found {
    group: Group,
    name: String,
    /// The existing read path with the same statement, when there is one.
    covered: Option<Covered>,
}

struct Covered {
    /// Whether its expectation already has the capture's scope.
    has_scope: bool,
}

// Long because it is the command in order: the logs read, the project read, the statements
// planned, the proposals written, the summary said.
pub(super) async fn capture(args: CaptureArgs, mut stop: stop::Stop) -> crate::errors::Result<i32> {
    if !project::is_safe_name(&args.scope) {
        return Err(BadInput(format!(
            "--scope {}: a scope name holds letters, digits, `-`, `_` and `.` (not first)",
            args.scope
        ))
        .into());
    }
    // Every log opened and its format known before the database is asked anything.
    let logs = args
        .log
        .iter()
        .map(|path| {
            let file = std::fs::File::open(path)
                .map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
            Ok((path.clone(), format_of(path, &args)?, file))
        })
        .collect::<Result<Vec<_>, BadInput>>()?;
    let target = target(&args.connect)?;
    let (client, settings) = planning_session(&target, &args.bounds).await?;
    let read = |e: tokio_postgres::Error| {
        DatabaseFailure(format!("could not read the catalog: {}", db::cause(&e)))
    };
    let predicates = db::catalog::partial_index_predicates(&client)
        .await
        .map_err(read)?;

    let mut grouper = Grouper::new(capture::predicate_columns(&predicates));
    let (mut unreadable, mut oversized) = (0, 0);
    for (path, format, file) in logs {
        let (bad, long) = read_log(&path, format, file, &mut grouper)?;
        unreadable += bad;
        oversized += long;
    }
    if oversized > 0 {
        say!(
            "warning: left out {oversized} logged statement{} over {} MiB (text and parameters \
             of one log record), plancheck's cap on one statement",
            plural(oversized),
            capture::log::MAX_RECORD >> 20
        );
    }
    let (statements, skipped) = (grouper.statements, std::mem::take(&mut grouper.skipped));
    let groups = grouper.groups();
    let found = existing(&args.project.dir, &grouper, &args.scope, groups)?;

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
                write::expectation(&f.group, &args.scope, NO_INDEX_YET, &[], &[], None)
                    .into_bytes(),
            ),
        ];
        match project::load(&Source::Memory(files), &Filter::default()) {
            Ok(one) => read_paths.extend(one.read_paths),
            Err(e) => {
                let why = format!("plancheck would not run it: {}", e.0);
                proposals.insert(f.name.clone(), Proposal::Skip(Skip::Failed(why)));
            }
        }
    }
    if !read_paths.is_empty() {
        let planned = project::Project {
            on_disk: false,
            read_paths,
            scope_names: vec![args.scope.clone()],
        };
        let jobs = jobs(&client, None, None).await?;
        let pool = crate::db::pool::Pool::new(&target, true);
        let measured = run_all(
            Session::Own(&pool),
            &planned,
            &settings,
            &verdict::Judging::default(),
            // The progress would show verdicts against no index yet.
            (jobs, true),
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
                DatabaseFailure(format!(
                    "could not read the partitions: {}",
                    crate::db::cause(&e)
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

    let summary = write_all(&args, &found, &proposals)?;
    let text = summary_text(
        &args, statements, unreadable, &skipped, &found, &proposals, &summary,
    );
    // Through the writer that takes a closed pipe (`capture --dry-run | head`) for what it is.
    super::write_stdout(&text)?;
    if !args.dry_run && summary.files.len() / 2 > 0 {
        say!(
            "review the files, then: plancheck check --project {}",
            args.project.dir.display()
        );
    }
    Ok(crate::exit_codes::PASS)
}

/// Reads one log into the grouper; returns its counts of unreadable records and of statements
/// left out for their size. A log that cannot be read at all is bad input, named by file and
/// line.
fn read_log(
    path: &Path,
    format: Format,
    file: std::fs::File,
    grouper: &mut Grouper,
) -> Result<(usize, usize), BadInput> {
    let shown = path.display().to_string();
    let mut reader = Reader::new(BufReader::new(file), format);
    for entry in reader.by_ref() {
        let entry = entry.map_err(|e| BadInput(format!("{shown}:{}: {}", e.line, e.message)))?;
        grouper.add(&shown, entry);
    }
    Ok((reader.unreadable(), reader.oversized()))
}

/// A log's format: `--log-format`, else by its extension.
fn format_of(path: &Path, args: &CaptureArgs) -> Result<Format, BadInput> {
    Ok(match args.log_format {
        Some(LogFormatArg::Csvlog) => Format::Csv,
        Some(LogFormatArg::Jsonlog) => Format::Json,
        Some(LogFormatArg::Stderr) => stderr_format(args)?,
        None => match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => Format::Csv,
            Some("json") => Format::Json,
            _ => stderr_format(args)?,
        },
    })
}

fn stderr_format(args: &CaptureArgs) -> Result<Format, BadInput> {
    Format::parse("stderr", &args.log_line_prefix)
        .map_err(|e| BadInput(format!("--log-line-prefix: {e}")))
}

/// Each group with its name: the existing read path whose statement has the same shape (it is
/// covered), else a new name from what it reads, made unique against the project's files and
/// the other new names the same way on every run.
fn existing(
    dir: &Path,
    grouper: &Grouper,
    scope: &str,
    groups: Vec<Group>,
) -> Result<Vec<Found>, BadInput> {
    let mut by_key: BTreeMap<String, String> = BTreeMap::new();
    let mut taken: Vec<String> = Vec::new();
    let bad = |e: FileError| BadInput(e.to_string());
    // The project's files as `check` reads them: no link followed, regular files, capped.
    let folder = match project_folder(dir, false) {
        Ok(folder) => folder,
        Err(e) if not_found(&e) => None,
        Err(e) => return Err(bad(e)),
    };
    for sub in ["plans", "expectations"] {
        let Some(folder) = &folder else {
            break;
        };
        let mut names = match folder.names(Path::new(sub)) {
            Ok(names) => names,
            Err(e) if not_found(&e) => continue,
            Err(e) => return Err(bad(e)),
        };
        names.sort();
        for name in names {
            let path = Path::new(sub).join(name);
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            taken.push(stem.to_string());
            if sub == "plans" && path.extension().is_some_and(|e| e == "sql") {
                let text = read_text(folder, &path)?.unwrap_or_default();
                by_key.entry(grouper.key(&text)).or_insert(stem.to_string());
            }
        }
    }
    let mut found = Vec::new();
    for group in groups {
        if let (Some(name), Some(folder)) = (by_key.get(&group.key), &folder) {
            let has_scope = has_scope(folder, &expectation_rel(name), scope)?;
            found.push(Found {
                name: name.clone(),
                covered: Some(Covered { has_scope }),
                group,
            });
            continue;
        }
        let base = shape::name(group.text_or_key());
        let mut name = base.clone();
        if taken.contains(&name) {
            name = format!("{base}-{}", shape::tag(&group.key, &[]));
        }
        let mut n = 2;
        while taken.contains(&name) {
            name = format!("{base}-{}-{n}", shape::tag(&group.key, &[]));
            n += 1;
        }
        taken.push(name.clone());
        found.push(Found {
            group,
            name,
            covered: None,
        });
    }
    Ok(found)
}

/// The project folder as named on the command line (links in its own path followed), made
/// when `create` and missing; `None` when it does not exist and is not to be made.
fn project_folder(dir: &Path, create: bool) -> Result<Option<Folder>, FileError> {
    if create {
        std::fs::create_dir_all(dir).map_err(|e| FileError {
            path: dir.display().to_string(),
            why: Why::Io(e),
        })?;
    }
    Folder::open(dir).map(Some)
}

fn not_found(e: &FileError) -> bool {
    matches!(&e.why, Why::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}

fn expectation_rel(name: &str) -> PathBuf {
    Path::new("expectations").join(format!("{name}.toml"))
}

/// A project file's text, read as `check` reads it; `None` when there is none. A link, a file
/// that is not regular or too large, or one that is not UTF-8, is bad input naming it.
fn read_text(folder: &Folder, rel: &Path) -> Result<Option<String>, BadInput> {
    let Some(bytes) = folder
        .read(rel, files::PROJECT_TEXT)
        .map_err(|e| BadInput(e.to_string()))?
    else {
        return Ok(None);
    };
    String::from_utf8(bytes).map(Some).map_err(|e| {
        BadInput(format!(
            "{}: not UTF-8 text: {}",
            folder.shown(rel),
            e.utf8_error()
        ))
    })
}

/// Whether the expectation `rel` declares `[scopes.SCOPE]`; one that is not there, or not TOML,
/// counts as having it (nothing is added to a file plancheck cannot parse). One that may not be
/// read (a link, a FIFO) is bad input.
fn has_scope(folder: &Folder, rel: &Path, scope: &str) -> Result<bool, BadInput> {
    let Some(text) = read_text(folder, rel)? else {
        return Ok(true);
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(true);
    };
    Ok(table
        .get("scopes")
        .and_then(toml::Value::as_table)
        .is_none_or(|scopes| scopes.contains_key(scope)))
}

/// What was written (or, with --dry-run, would be): new read paths and scopes added.
#[derive(Default)]
struct Written {
    files: Vec<PathBuf>,
    scopes_added: Vec<String>,
}

/// Writes every proposal: a new read path's two files (never over an existing file), or the
/// scope's table appended to a covered read path's expectation. With --dry-run, prints them.
fn write_all(
    args: &CaptureArgs,
    found: &[Found],
    proposals: &BTreeMap<String, Proposal>,
) -> Result<Written, OutputFailure> {
    let mut written = Written::default();
    let fail = |e: FileError| OutputFailure(e.to_string());
    let writes = found
        .iter()
        .any(|f| matches!(proposals.get(&f.name), Some(Proposal::Require { .. })));
    let folder = if args.dry_run || !writes {
        None
    } else {
        project_folder(&args.project.dir, true).map_err(fail)?
    };
    for f in found {
        let Some(Proposal::Require {
            index,
            small,
            large,
            generic_differs,
            ..
        }) = proposals.get(&f.name)
        else {
            continue;
        };
        let expectation_path = args
            .project
            .dir
            .join("expectations")
            .join(format!("{}.toml", f.name));
        if f.covered.is_some() {
            // A read path's allowed seq scans are its own: here they are only listed.
            let whole: Vec<_> = small.iter().chain(large).cloned().collect();
            let generic = generic_differs.as_deref();
            let table = format!(
                "\n{}",
                write::scope_table(&args.scope, index, &whole, generic)
            );
            if let Some(folder) = &folder {
                // Read, added to and replaced whole: never appended through a link.
                let rel = expectation_rel(&f.name);
                let was = read_text(folder, &rel)
                    .map_err(|e| OutputFailure(e.0))?
                    .ok_or_else(|| {
                        OutputFailure(format!("{}: no longer there", folder.shown(&rel)))
                    })?;
                folder
                    .replace(&rel, format!("{was}{table}").as_bytes())
                    .map_err(fail)?;
            } else {
                stdout(&format!(
                    "would add to {}:\n{table}\n",
                    expectation_path.display()
                ))?;
            }
            written.scopes_added.push(f.name.clone());
            continue;
        }
        let texts = [
            (
                Path::new("plans").join(format!("{}.sql", f.name)),
                write::plan(&f.group),
            ),
            (
                expectation_rel(&f.name),
                write::expectation(
                    &f.group,
                    &args.scope,
                    index,
                    small,
                    large,
                    generic_differs.as_deref(),
                ),
            ),
        ];
        for (rel, text) in texts {
            let path = args.project.dir.join(&rel);
            if let Some(folder) = &folder {
                // A new file, never over an existing one, never through a link.
                folder.create_new(&rel, text.as_bytes()).map_err(fail)?;
            } else {
                stdout(&format!("would write {}:\n{text}\n", path.display()))?;
            }
            written.files.push(path);
        }
    }
    Ok(written)
}

/// `text` on stdout, where a closed pipe is no error ([`super::write_stdout`]).
fn stdout(text: &str) -> Result<(), OutputFailure> {
    super::write_stdout(text).map_err(|e| OutputFailure(e.to_string()))
}

/// The summary: statements read, read paths found, written, covered, skipped and why.
fn summary_text(
    args: &CaptureArgs,
    statements: usize,
    unreadable: usize,
    skipped: &BTreeMap<String, usize>,
    found: &[Found],
    proposals: &BTreeMap<String, Proposal>,
    written: &Written,
) -> String {
    let mut out = String::new();
    let not_read: usize = skipped.values().sum();
    let logs = args.log.len();
    out.push_str(&format!(
        "read {statements} statement{} from {logs} log{}{}\n",
        plural(statements),
        plural(logs),
        if unreadable > 0 {
            format!(
                " ({unreadable} unreadable record{} skipped)",
                plural(unreadable)
            )
        } else {
            String::new()
        }
    ));
    if not_read > 0 {
        let why: Vec<String> = skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
        out.push_str(&format!(
            "  not read paths: {not_read} ({})\n",
            why.join(", ")
        ));
    }
    let new = written.files.len() / 2;
    let covered = found.iter().filter(|f| f.covered.is_some()).count();
    let verb = if args.dry_run { "to write" } else { "written" };
    out.push_str(&format!(
        "{} read path{} found: {new} {verb}, {covered} already covered{}\n",
        found.len(),
        plural(found.len()),
        if written.scopes_added.is_empty() {
            String::new()
        } else {
            format!(
                " ({} given scope {})",
                written.scopes_added.len(),
                args.scope
            )
        }
    ));
    for f in found {
        let line = match (proposals.get(&f.name), &f.covered) {
            (Some(Proposal::Require { index, .. }), None) => {
                format!("  {verb:<8} {} (index {index})", f.name)
            }
            (Some(Proposal::Require { index, .. }), Some(_)) => {
                format!("  scope    {} [{}] (index {index})", f.name, args.scope)
            }
            (_, Some(_)) => format!("  covered  {}", f.name),
            (Some(Proposal::Skip(skip)), None) => {
                format!("  skipped  {}: {}", f.name, skip.detail())
            }
            (None, None) => format!(
                "  skipped  {}: no logged execution with every parameter value whole and not NULL \
                 ({} seen)",
                f.name, f.group.count
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
