//! The one part of `capture` that touches files: the logs it reads, the project folder it reads
//! to find what is covered and what names are taken, and the proposals it writes there (each as
//! `check` reads a project: no link followed, regular files, capped; a new file never over an
//! existing one).

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

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
) -> Result<(usize, usize), BadInput> {
    let shown = path.display().to_string();
    let mut reader = Reader::new(BufReader::new(file), format);
    for entry in reader.by_ref() {
        let entry = entry.map_err(|e| BadInput(format!("{shown}:{}: {}", e.line, e.message)))?;
        grouper.add(&shown, entry);
    }
    Ok((reader.unreadable(), reader.oversized()))
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
