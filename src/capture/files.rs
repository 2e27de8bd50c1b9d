//! The one part of `capture` that touches files: the logs it reads, the project folder it reads
//! to find what is covered and what names are taken, and the proposals it writes there (each as
//! `check` reads a project: no link followed, regular files, capped; a new file never over an
//! existing one).

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::group::{Group, Grouper};
use super::log::{Format, Reader};
use super::propose::Proposal;
use super::{shape, write};
use crate::error::{BadInput, OutputFailure};
use crate::files::{self, FileError, Folder, Why};

/// A read path found in the logs, and what becomes of it.
pub struct Found {
    pub group: Group,
    pub name: String,
    /// The existing read path with the same statement, when there is one.
    pub covered: Option<Covered>,
}

pub struct Covered {
    /// Whether its expectation already has the capture's scope.
    pub has_scope: bool,
    /// The statement is one condition apart from the read path's plan: the plan and the
    /// fragment it becomes, the condition filled per scope.
    pub merge: Option<super::merge::Merge>,
}

/// Opens every log, its format known (`chosen`, else by extension: `.csv` csvlog, `.json`
/// jsonlog, else `stderr`), before anything is read or asked of the database.
pub fn open_logs(
    paths: &[PathBuf],
    chosen: Option<Format>,
    stderr: &dyn Fn() -> Result<Format, BadInput>,
) -> Result<Vec<(PathBuf, Format, std::fs::File)>, BadInput> {
    paths
        .iter()
        .map(|path| {
            let file = std::fs::File::open(path)
                .map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
            let format = match (&chosen, path.extension().and_then(|e| e.to_str())) {
                (Some(format), _) => format.clone(),
                (None, Some("csv")) => Format::Csv,
                (None, Some("json")) => Format::Json,
                (None, _) => stderr()?,
            };
            Ok((path.clone(), format, file))
        })
        .collect()
}

/// Reads one log into the grouper; returns its counts of unreadable records and of statements
/// left out for their size. A log that cannot be read at all is bad input, named by file and
/// line.
pub fn read_log(
    path: &Path,
    format: Format,
    file: std::fs::File,
    grouper: &mut Grouper,
    progress: &mut dyn FnMut(ReadSoFar),
) -> Result<(usize, usize), BadInput> {
    let parts = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if parts > 1 && size >= PARALLEL_FROM && matches!(format, Format::Csv | Format::Json) {
        return read_log_in_parts(path, format, file, grouper, parts, progress);
    }
    read_whole(path, format, file, grouper, progress)
}

/// A log smaller than this is read on one core: splitting it would cost more than it saves.
const PARALLEL_FROM: u64 = 32 << 20;

/// The log read front to back on one core.
fn read_whole(
    path: &Path,
    format: Format,
    file: std::fs::File,
    grouper: &mut Grouper,
    progress: &mut dyn FnMut(ReadSoFar),
) -> Result<(usize, usize), BadInput> {
    let shown = path.display().to_string();
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Counted {
        inner: file,
        read: read.clone(),
    };
    // Large reads: the log is read once, front to back.
    let mut reader = Reader::new(BufReader::with_capacity(1 << 20, counted), format);
    for (n, entry) in reader.by_ref().enumerate() {
        let entry = entry.map_err(|e| BadInput(format!("{shown}:{}: {}", e.line, e.message)))?;
        grouper.add(&shown, entry);
        if n % 4096 == 0 {
            progress(ReadSoFar {
                bytes: read.load(Ordering::Relaxed),
                statements: grouper.statements,
                read_paths: Some(grouper.read_paths()),
            });
        }
    }
    Ok((reader.unreadable(), reader.oversized()))
}

/// What one part of a log gave: its groups and counts, how many lines it read, where the
/// record after it begins (from the file's start), and the first error met.
struct Part {
    grouper: Grouper,
    unreadable: usize,
    oversized: usize,
    lines: usize,
    stopped_at: Option<u64>,
    sql_level: bool,
    error: Option<crate::capture::log::LogError>,
}

/// The log split in `parts` at record boundaries (a csvlog record begins with a line that
/// starts with its timestamp; a jsonlog record is one line), each part read on a core of its
/// own, merged in order as if read front to back. Each part reads on past its end to the end
/// of the record it is in and says where the next one begins; when that is not where the next
/// part began (a line inside a quoted field looked like a record's start), or a statement used
/// SQL-level prepared statements (an `EXECUTE` needs its `PREPARE`, which an earlier part may
/// hold), the log is read again front to back. Either way the result is the one-core read's.
fn read_log_in_parts(
    path: &Path,
    format: Format,
    file: std::fs::File,
    grouper: &mut Grouper,
    parts: usize,
    progress: &mut dyn FnMut(ReadSoFar),
) -> Result<(usize, usize), BadInput> {
    match read_parts(path, &format, &file, grouper, parts, progress)? {
        Some(counts) => Ok(counts),
        None => read_whole(path, format, file, grouper, progress),
    }
}

/// [`read_log_in_parts`] but for the read again: `None` (the grouper untouched) when the parts
/// did not meet or a statement used SQL-level prepared statements.
// Long because it is the split, the parts read side by side with their progress, then the check
// that the parts met and the merge.
fn read_parts(
    path: &Path,
    format: &Format,
    file: &std::fs::File,
    grouper: &mut Grouper,
    parts: usize,
    progress: &mut dyn FnMut(ReadSoFar),
) -> Result<Option<(usize, usize)>, BadInput> {
    let shown = path.display().to_string();
    let unreadable_file = |e: std::io::Error| BadInput(format!("{shown}: {e}"));
    let size = file.metadata().map_err(unreadable_file)?.len();
    let mut starts = vec![0u64];
    for i in 1..parts {
        let from = size * i as u64 / parts as u64;
        match record_start(file, from, format).map_err(unreadable_file)? {
            Some(at) if at > *starts.last().unwrap_or(&0) => starts.push(at),
            _ => {}
        }
    }
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let statements = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Part> = std::thread::scope(|scope| {
        let handles: Vec<_> = starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let end = starts.get(i + 1).copied();
                let (mut part_grouper, format, read) =
                    (grouper.empty_like(), format.clone(), read.clone());
                let (shown, statements) = (shown.clone(), &statements);
                scope.spawn(move || -> std::io::Result<Part> {
                    // Read at its own offset: clones of one open file share theirs.
                    let at = At { file, pos: start };
                    let input = BufReader::with_capacity(1 << 20, Counted { inner: at, read });
                    let mut reader = match end {
                        Some(end) if i == 0 => {
                            let mut r = Reader::new(input, format);
                            r.stop_before(end - start);
                            r
                        }
                        Some(end) => Reader::part(input, format, end - start),
                        None if i == 0 => Reader::new(input, format),
                        None => Reader::part(input, format, u64::MAX),
                    };
                    let mut error = None;
                    for (n, entry) in reader.by_ref().enumerate() {
                        if n % 4096 == 4095 {
                            statements.fetch_add(4096, Ordering::Relaxed);
                        }
                        match entry {
                            Ok(entry) => part_grouper.add(&shown, entry),
                            Err(e) => {
                                error = Some(e);
                                break;
                            }
                        }
                    }
                    Ok(Part {
                        grouper: part_grouper,
                        unreadable: reader.unreadable(),
                        oversized: reader.oversized(),
                        lines: reader.lines(),
                        stopped_at: reader.stopped_at().map(|at| at + start),
                        sql_level: reader.saw_sql_level(),
                        error,
                    })
                })
            })
            .collect();
        while !handles.iter().all(|h| h.is_finished()) {
            progress(ReadSoFar {
                bytes: read.load(Ordering::Relaxed),
                statements: statements.load(Ordering::Relaxed),
                read_paths: None,
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("a part of the log read without a panic"))
            .collect::<std::io::Result<Vec<Part>>>()
    })
    .map_err(unreadable_file)?;
    // The parts met where each next one began, and no part needed another's PREPARE.
    let met = results
        .iter()
        .enumerate()
        .all(|(i, part)| part.stopped_at == starts.get(i + 1).copied() && !part.sql_level);
    if !met {
        return Ok(None);
    }
    let (mut unreadable, mut oversized, mut lines) = (0, 0, 0);
    for part in results {
        if let Some(e) = part.error {
            return Err(BadInput(format!(
                "{shown}:{}: {}",
                e.line + lines,
                e.message
            )));
        }
        grouper.merge(part.grouper, lines);
        unreadable += part.unreadable;
        oversized += part.oversized;
        lines += part.lines;
    }
    Ok(Some((unreadable, oversized)))
}

/// The first place at or after `from` where a record of `format` begins: a line that starts
/// with a csvlog record's timestamp, or any line of a jsonlog; `None` when no line begins
/// after it.
fn record_start(file: &std::fs::File, from: u64, format: &Format) -> std::io::Result<Option<u64>> {
    use std::io::BufRead;
    let mut input = BufReader::with_capacity(64 << 10, At { file, pos: from });
    let mut at = from;
    let mut line = Vec::new();
    // The line `from` falls in is not whole: the search starts after it (unless `from` is 0).
    if from > 0 {
        at += input.read_until(b'\n', &mut line)? as u64;
    }
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        let begins = match format {
            Format::Csv => crate::capture::log::begins_csv_record(&line),
            _ => true,
        };
        if begins {
            return Ok(Some(at));
        }
        at += n as u64;
    }
}

/// A file read from `pos` on, without moving the offset the open file shares with its clones.
struct At<'f> {
    file: &'f std::fs::File,
    pos: u64,
}

impl std::io::Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// How far a log's read has come, for the progress line: bytes, statements, and read paths
/// when they are known (not while the parts of a log are read side by side).
pub struct ReadSoFar {
    pub bytes: u64,
    pub statements: usize,
    pub read_paths: Option<usize>,
}

/// A file that counts the bytes read from it, for the progress line.
struct Counted<F> {
    inner: F,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<F: std::io::Read> std::io::Read for Counted<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Each group with its name: the existing read path whose statement has the same shape (it is
/// covered), else a new name from what it reads, made unique against the project's files and
/// the other new names the same way on every run.
// Long because it reads the project's files once (each plan's shape and text, the names taken)
// and then places every group in one of three ways: covered, merged as a new scope, or new.
pub fn existing(
    dir: &Path,
    grouper: &Grouper,
    scope: &str,
    groups: Vec<Group>,
) -> Result<Vec<Found>, BadInput> {
    let mut by_key: BTreeMap<String, String> = BTreeMap::new();
    let mut taken: Vec<String> = Vec::new();
    // The statement of each read path by name, to tell a new one of the same name apart.
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    // The plan files on disk, for a statement one condition apart from one of them.
    let mut plans: Vec<(String, String)> = Vec::new();
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
                texts.insert(stem.to_string(), text.clone());
                plans.push((stem.to_string(), text));
            }
        }
    }
    let mut found = Vec::new();
    for group in groups {
        if let (Some(name), Some(folder)) = (by_key.get(&group.key), &folder) {
            let has_scope = has_scope(folder, &expectation_rel(name), scope)?;
            found.push(Found {
                name: name.clone(),
                covered: Some(Covered {
                    has_scope,
                    merge: None,
                }),
                group,
            });
            continue;
        }
        // One condition apart from exactly one plan (the same page under another scope): that
        // read path, given this scope, the condition a fragment.
        if let (Some((name, merge)), Some(folder)) = (near_plan(&plans, &group), &folder) {
            let rel = expectation_rel(&name);
            if !has_scope(folder, &rel, scope)? && takes_fragments(folder, &rel)? {
                found.push(Found {
                    name,
                    covered: Some(Covered {
                        has_scope: false,
                        merge: Some(merge),
                    }),
                    group,
                });
                continue;
            }
        }
        let name = new_name(&group, &taken, &texts);
        taken.push(name.clone());
        texts.insert(name.clone(), group.text_or_key().to_string());
        found.push(Found {
            group,
            name,
            covered: None,
        });
    }
    Ok(found)
}

/// The one plan `group`'s statement is one condition apart from, and their merge; none where no
/// plan is, or more than one.
fn near_plan(plans: &[(String, String)], group: &Group) -> Option<(String, super::merge::Merge)> {
    let mut near = plans.iter().filter_map(|(name, text)| {
        super::merge::one_condition_apart(text, group.text_or_key()).map(|m| (name.clone(), m))
    });
    let first = near.next()?;
    near.next().is_none().then_some(first)
}

/// A name for a new read path: from what it reads; where another has that name (`taken`, with
/// its statement in `texts`), told apart readably where anything does (`-deleted`, `-offset`),
/// else by a tag of its shape; the same on every run.
fn new_name(group: &Group, taken: &[String], texts: &BTreeMap<String, String>) -> String {
    let base = shape::name(group.text_or_key());
    let mut name = base.clone();
    if taken.contains(&name) {
        let other = texts.get(&base).map_or("", String::as_str);
        name = shape::distinctions(&group.key, group.text_or_key(), other)
            .iter()
            .map(|d| shape::distinguished(&base, d))
            .find(|n| !taken.contains(n))
            .unwrap_or_else(|| format!("{base}-{}", shape::tag(&group.key, &[])));
    }
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}-{}-{n}", shape::tag(&group.key, &[]));
        n += 1;
    }
    name
}

/// The project folder as named on the command line (links in its own path followed), made
/// when `create` and missing; `None` when it does not exist and is not to be made.
fn project_folder(dir: &Path, create: bool) -> Result<Option<Folder>, FileError> {
    if create {
        return Folder::anchor(dir).map(Some);
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

/// Whether fragments can be added to the expectation `rel` line by line: it parses, each of its
/// scopes is a `[scopes.NAME]` table of its own (no deeper table, no inline one), and none
/// declares fragments yet.
fn takes_fragments(folder: &Folder, rel: &Path) -> Result<bool, BadInput> {
    let Some(text) = read_text(folder, rel)? else {
        return Ok(false);
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(false);
    };
    let Some(scopes) = table.get("scopes").and_then(toml::Value::as_table) else {
        return Ok(false);
    };
    let headers = text
        .lines()
        .filter(|l| l.trim_start().starts_with("[scopes."))
        .count();
    // A `[scopes.NAME.budget]` table would be counted as a header of its own.
    let plain = scopes.values().all(|scope| {
        scope
            .as_table()
            .is_some_and(|t| !t.contains_key("fragments"))
    });
    Ok(plain && headers == scopes.len() && !table.contains_key("fragments"))
}

/// `text` (an expectation) with `fragments = { NAME = VALUE }` under each `[scopes.…]` header.
fn with_fragment(text: &str, name: &str, value: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        out.push_str(line);
        if line.trim_start().starts_with("[scopes.") {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&fragment_line(name, value));
        }
    }
    out
}

fn fragment_line(name: &str, value: &str) -> String {
    format!("fragments = {{ {name} = {} }}\n", write::toml_string(value))
}

/// What was written (or, with --dry-run, would be): new read paths and scopes added, and with
/// --dry-run what would be written, to print.
#[derive(Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub scopes_added: Vec<String>,
    /// Read paths whose plan took a fragment for the new scope: name and fragment.
    pub merged: Vec<(String, String)>,
    pub would: String,
}

/// Where and how the proposals are written.
pub struct Destination<'a> {
    /// The project folder as named on the command line.
    pub dir: &'a Path,
    /// The scope the log was taken under.
    pub scope: &'a str,
    /// Write nothing: say what would be written.
    pub dry_run: bool,
}

/// Writes every proposal: a new read path's two files (never over an existing file), or the
/// scope's table appended to a covered read path's expectation. With --dry-run, only says what
/// it would write ([`Written::would`]).
// Long because each proposal is one of two writes (a scope appended to a covered read path's
// expectation, its plan rewritten with a fragment where it was merged; or a new read path's two
// files), each with what --dry-run says in its place.
pub fn write_all(
    args: &Destination<'_>,
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
        project_folder(args.dir, true).map_err(fail)?
    };
    for f in found {
        let Some(Proposal::Require {
            index,
            small,
            large,
            generic_differs,
            buffers,
            ..
        }) = proposals.get(&f.name)
        else {
            continue;
        };
        let expectation_path = args
            .dir
            .join("expectations")
            .join(format!("{}.toml", f.name));
        if let Some(covered) = &f.covered {
            // A read path's allowed seq scans are its own: here they are only listed.
            let whole: Vec<_> = small.iter().chain(large).cloned().collect();
            let generic = generic_differs.as_deref();
            let mut table = format!(
                "\n{}",
                write::scope_table(args.scope, index, &whole, generic, *buffers)
            );
            let merge = covered.merge.as_ref();
            if let Some(m) = merge {
                table.push_str(&fragment_line(&m.fragment, &m.new));
            }
            let plan_rel = Path::new("plans").join(format!("{}.sql", f.name));
            if let Some(folder) = &folder {
                // Read, added to and replaced whole: never appended through a link.
                let rel = expectation_rel(&f.name);
                let was = read_text(folder, &rel)
                    .map_err(|e| OutputFailure(e.0))?
                    .ok_or_else(|| {
                        OutputFailure(format!("{}: no longer there", folder.shown(&rel)))
                    })?;
                let was = match merge {
                    Some(m) => with_fragment(&was, &m.fragment, &m.existing),
                    None => was,
                };
                if let Some(m) = merge {
                    folder.replace(&plan_rel, m.plan.as_bytes()).map_err(fail)?;
                }
                folder
                    .replace(&rel, format!("{was}{table}").as_bytes())
                    .map_err(fail)?;
            } else {
                if let Some(m) = merge {
                    written.would.push_str(&format!(
                        "would rewrite {}, the condition a fragment:\n{}\nwould add to each \
                         scope of {}:\n{}\n",
                        args.dir.join(&plan_rel).display(),
                        m.plan.trim_end(),
                        expectation_path.display(),
                        fragment_line(&m.fragment, &m.existing).trim_end()
                    ));
                }
                written.would.push_str(&format!(
                    "would add to {}:\n{table}\n",
                    expectation_path.display()
                ));
            }
            if let Some(m) = merge {
                written.merged.push((f.name.clone(), m.fragment.clone()));
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
                    args.scope,
                    index,
                    small,
                    large,
                    generic_differs.as_deref(),
                    *buffers,
                ),
            ),
        ];
        for (rel, text) in texts {
            let path = args.dir.join(&rel);
            if let Some(folder) = &folder {
                // A new file, never over an existing one, never through a link.
                folder.create_new(&rel, text.as_bytes()).map_err(fail)?;
            } else {
                written
                    .would
                    .push_str(&format!("would write {}:\n{text}\n", path.display()));
            }
            written.files.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod parts_tests {
    use super::*;
    use crate::capture::group::Grouper;

    /// A csvlog record of a statement executed with parameters, as PostgreSQL 15 writes one.
    fn csv_record(n: usize, session: &str, message: &str, detail: &str) -> String {
        let quoted = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
        format!(
            "2026-12-02 21:10:34.{:03} UTC,\"postgres\",\"board\",{pid},\"[local]\",{session},{n},\
             \"SELECT\",2026-12-02 21:10:34 UTC,3/47,0,LOG,00000,{},{},,,,,,,,\"app\",\
             \"client backend\",,0\n",
            n % 1000,
            quoted(message),
            if detail.is_empty() {
                String::new()
            } else {
                quoted(detail)
            },
            pid = 1000 + n % 7,
        )
    }

    /// A log whose statements span lines (quoted newlines), one of them a line that looks like
    /// a record's first line (it starts with a timestamp) inside a quoted field, among
    /// statements of a few shapes, some not read paths.
    fn csvlog(records: usize) -> String {
        let mut log = String::new();
        for n in 0..records {
            let (message, detail) = match n % 6 {
                // Now and then a quoted line that starts as a record does.
                0 if n % 61 == 7 => (
                    "duration: 0.1 ms  execute P_1: SELECT p.id\n  FROM posts p\n WHERE \
                     p.thread_id = $1 AND p.note = '\n2026-12-02 21:10:34.000 UTC,\"x\"'"
                        .to_string(),
                    format!("parameters: $1 = '{}'", n % 13),
                ),
                0 => (
                    "duration: 0.1 ms  execute P_1: SELECT p.id\n  FROM posts p\n WHERE \
                     p.thread_id = $1 AND p.note = 'a\nb'"
                        .to_string(),
                    format!("parameters: $1 = '{}'", n % 13),
                ),
                1 => (
                    "duration: 0.1 ms  execute P_2: SELECT t.id FROM threads t WHERE t.forum_id \
                     = $1 ORDER BY t.id\n LIMIT 20"
                        .to_string(),
                    format!("parameters: $1 = '{}'", n % 5),
                ),
                2 => (
                    "duration: 0.1 ms  statement: BEGIN".to_string(),
                    String::new(),
                ),
                3 => (
                    format!(
                        "duration: 0.1 ms  statement: UPDATE posts SET body = 'a,\n\"b\"' WHERE id = {n}"
                    ),
                    String::new(),
                ),
                4 => (
                    format!(
                        "duration: 0.1 ms  statement: SELECT m.name FROM members m WHERE m.id = {n}"
                    ),
                    String::new(),
                ),
                _ => (
                    "duration: 0.1 ms  statement: COMMIT".to_string(),
                    String::new(),
                ),
            };
            log.push_str(&csv_record(
                n,
                &format!("6b10894a.{:x}", n % 7),
                &message,
                &detail,
            ));
        }
        log
    }

    fn jsonlog(records: usize) -> String {
        let mut log = String::new();
        for n in 0..records {
            let record = serde_json::json!({
                "timestamp": "2026-12-02 21:10:34.017 UTC",
                "user": "postgres", "dbname": "board", "pid": 1000 + n % 7,
                "session_id": format!("6b10894a.{:x}", n % 7), "line_num": n,
                "error_severity": "LOG",
                "message": format!("duration: 0.1 ms  execute P_1: SELECT p.id\n FROM posts p WHERE p.thread_id = $1 -- {}", n % 3),
                "detail": format!("parameters: $1 = '{}'", n % 11),
                "application_name": "app",
            });
            log.push_str(&record.to_string());
            log.push('\n');
        }
        log
    }

    /// Everything a read gives: the groups, the counts, the unreadable and oversized records.
    type Read = (
        Vec<crate::capture::group::Group>,
        usize,
        Vec<(String, usize)>,
        (usize, usize),
    );

    /// The log in a file of its own, kept while `f` reads it.
    fn with_file<T>(text: &str, f: impl FnOnce(&Path) -> T) -> T {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.log");
        std::fs::write(&path, text).unwrap();
        f(&path)
    }

    fn read(path: &Path, format: Format, parts: Option<usize>) -> Read {
        let file = std::fs::File::open(path).unwrap();
        let mut g = Grouper::new(["visibility".to_string()]);
        let counts = match parts {
            None => read_whole(path, format, file, &mut g, &mut |_| {}),
            Some(n) => read_log_in_parts(path, format, file, &mut g, n, &mut |_| {}),
        }
        .unwrap();
        let skipped = g.skipped.clone().into_iter().collect();
        let statements = g.statements;
        (g.groups(), statements, skipped, counts)
    }

    /// Whether the parts met (the log was read in parts, not again whole).
    fn in_parts(path: &Path, format: Format, parts: usize) -> bool {
        let file = std::fs::File::open(path).unwrap();
        let mut g = Grouper::new(Vec::new());
        read_parts(path, &format, &file, &mut g, parts, &mut |_| {})
            .unwrap()
            .is_some()
    }

    #[test]
    fn a_log_read_in_parts_gives_what_one_core_gives() {
        for (text, format) in [(csvlog(600), Format::Csv), (jsonlog(500), Format::Json)] {
            with_file(&text, |path| {
                let whole = read(path, format.clone(), None);
                assert!(whole.1 >= 500, "every record read: {}", whole.1);
                assert!(!whole.0.is_empty());
                let mut met = 0;
                for parts in 2..=7 {
                    let split = read(path, format.clone(), Some(parts));
                    assert_eq!(split, whole, "{parts} parts of a {format:?} log");
                    met += usize::from(in_parts(path, format.clone(), parts));
                }
                // Read in parts, not only read again whole (a split point may fall inside a
                // quoted field of the csvlog, and that split is read again).
                assert!(
                    met >= 4,
                    "{met} of 6 splits of a {format:?} log read in parts"
                );
            });
        }
    }

    #[test]
    fn a_split_inside_a_quoted_field_is_read_again_whole() {
        // One record whose statement holds many lines that start as records do: a split point
        // lands inside it, the part before reads on to its true end, the parts do not meet, and
        // the whole log is read again.
        let mut text = csvlog(10);
        let mut long = String::from(
            "duration: 0.1 ms  statement: SELECT p.id FROM posts p WHERE p.note IN ('",
        );
        for i in 0..500 {
            long.push_str(&format!("\n2026-12-02 21:10:34.{i:03} UTC,x"));
        }
        long.push_str("')");
        text.push_str(&csv_record(10, "6b10894a.1", &long, ""));
        text.push_str(&csvlog(10));
        with_file(&text, |path| {
            let whole = read(path, Format::Csv, None);
            for parts in 2..=4 {
                assert_eq!(read(path, Format::Csv, Some(parts)), whole, "{parts} parts");
            }
            // The long record is about 9 in 10 of the file: every split lands inside it.
            assert!(
                !in_parts(path, Format::Csv, 2),
                "a split inside a record is read again"
            );
        });
    }

    #[test]
    fn sql_level_prepared_statements_are_read_whole() {
        let mut text = String::new();
        text.push_str(&csv_record(
            0,
            "s.1",
            "statement: PREPARE q(int) AS SELECT p.id FROM posts p WHERE p.thread_id = $1",
            "",
        ));
        text.push_str(&csvlog(300));
        text.push_str(&csv_record(999, "s.1", "statement: EXECUTE q(5)", ""));
        with_file(&text, |path| {
            let whole = read(path, Format::Csv, None);
            assert!(
                whole
                    .0
                    .iter()
                    .any(|g| g.text.contains("p.thread_id = $1") && g.params == ["5"]),
                "the EXECUTE found its PREPARE: {:#?}",
                whole.0
            );
            for parts in 2..=4 {
                assert_eq!(read(path, Format::Csv, Some(parts)), whole, "{parts} parts");
                assert!(!in_parts(path, Format::Csv, parts), "read again whole");
            }
        });
    }
}
