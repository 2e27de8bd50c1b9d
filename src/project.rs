//! project: `plancheck.toml`, `expectations/NAME.toml` and `plans/NAME.sql`, read, validated and
//! resolved into the checks to run. Every error names the file, line and column.
//!
//! Precedence, written down once: a scope's settings come from the expectation's
//! `[scopes.NAME]` table first, then (for params) the expectation's top-level `params`, then the
//! project's `[scopes.NAME]` in `plancheck.toml`. Fragments merge key by key, the expectation's
//! value winning; `params` and `setup` are replaced whole, never merged. A fragment an
//! expectation gives must fill a placeholder of its plan; one from `plancheck.toml` serves many
//! read paths and need not.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use crate::errors::{BadInput, located};
use crate::model::{Budget, Relative};

/// Where the project's files come from: a folder, the reference project built into the binary,
/// or files held in memory (path relative to the project root, contents) for tests and fuzzing,
/// read through the same code as a folder's.
#[derive(Debug, Clone)]
pub enum Source {
    Dir(PathBuf),
    Embedded,
    Memory(Vec<(String, Vec<u8>)>),
}

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// The byte-order mark some editors put first in a UTF-8 file. It is not part of the text: it
/// is dropped, so columns are those the editor shows.
const BOM: &[u8] = b"\xef\xbb\xbf";

impl Source {
    /// The contents of `rel` (`plans/x.sql`), or `None` when there is no such file. A file that
    /// is not UTF-8 text, or holds a NUL character, is bad input located at the offending byte.
    pub fn read(&self, rel: &str) -> Result<Option<String>, BadInput> {
        match self {
            Source::Embedded => Ok(embedded::FILES
                .iter()
                .find(|(p, _)| *p == rel)
                .map(|(_, text)| text.to_string())),
            Source::Memory(files) => match files.iter().find(|(p, _)| p == rel) {
                Some((_, bytes)) => decode(&self.display(rel), bytes.clone()).map(Some),
                None => Ok(None),
            },
            Source::Dir(dir) => {
                let path = dir.join(rel);
                match fs::read(&path) {
                    Ok(bytes) => decode(&self.display(rel), bytes).map(Some),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(BadInput(format!("{}: {e}", self.display(rel)))),
                }
            }
        }
    }

    /// The names of the entries of folder `dir`, not recursing.
    /// The names of the entries of folder `dir`, not recursing. A name that is not UTF-8 is
    /// given lossily, as an `Err`.
    fn entries(&self, dir: &str) -> Result<Vec<Result<String, String>>, BadInput> {
        let prefix = format!("{dir}/");
        let in_dir = |p: &str| {
            p.strip_prefix(&prefix)
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .map(|n| Ok(n.to_owned()))
        };
        Ok(match self {
            Source::Embedded => embedded::FILES
                .iter()
                .filter_map(|(p, _)| in_dir(p))
                .collect(),
            Source::Memory(files) => files.iter().filter_map(|(p, _)| in_dir(p)).collect(),
            Source::Dir(root) => {
                let entries = fs::read_dir(root.join(dir)).map_err(|e| {
                    BadInput(format!(
                        "{}: {e} (is this a plancheck project? it needs plans/ and expectations/; \
                         use --project DIR)",
                        self.display(dir)
                    ))
                })?;
                let mut names = Vec::new();
                for entry in entries {
                    let entry =
                        entry.map_err(|e| BadInput(format!("{}: {e}", self.display(dir))))?;
                    names.push(
                        entry
                            .file_name()
                            .into_string()
                            .map_err(|raw| raw.to_string_lossy().into_owned()),
                    );
                }
                names
            }
        })
    }

    /// Names (without extension) of the files in `dir` ending in `.ext`, sorted. Hidden files
    /// are skipped. A file whose extension differs only in case (`x.TOML`), and two names that
    /// differ only in case (one file on macOS and Windows), are bad input: either would leave a
    /// read path silently unchecked somewhere.
    pub fn list(&self, dir: &str, ext: &str) -> Result<Vec<String>, BadInput> {
        let suffix = format!(".{ext}");
        let mut names: Vec<String> = Vec::new();
        for name in self.entries(dir)? {
            let is_ours = |n: &str| {
                n.len() > suffix.len()
                    && n.is_char_boundary(n.len() - suffix.len())
                    && n[n.len() - suffix.len()..].eq_ignore_ascii_case(&suffix)
            };
            let name = match name {
                Ok(name) => name,
                Err(lossy) if !lossy.starts_with('.') && is_ours(&lossy) => {
                    return Err(BadInput(format!(
                        "{}: the file name is not UTF-8; rename the file",
                        self.display(&format!("{dir}/{lossy}"))
                    )));
                }
                Err(_) => continue,
            };
            let rel = format!("{dir}/{name}");
            if name.starts_with('.') {
                // A hidden `.x.toml` / `..x.sql` would be a read path silently left unchecked
                // (or a name that steers a path); other hidden files (.gitkeep) are not ours.
                if is_ours(&name) {
                    return Err(BadInput(format!(
                        "{:?}: not read: a read path's name starts with a letter or digit \
                         ({SAFE_NAME}); rename the file",
                        self.display(&rel)
                    )));
                }
                continue;
            }
            if let Some(stem) = name.strip_suffix(&suffix) {
                if !is_safe_name(stem) {
                    return Err(BadInput(format!(
                        "{:?}: {:?} is not a read path's name: {SAFE_NAME}; rename the file",
                        self.display(&rel),
                        stem
                    )));
                }
                names.push(stem.to_owned());
            } else if is_ours(&name) {
                return Err(BadInput(format!(
                    "{}: not read: the extension must be `{suffix}`, in lower case; rename the file",
                    self.display(&rel)
                )));
            }
        }
        names.sort();
        let mut seen: HashMap<String, &String> = HashMap::new();
        for name in &names {
            if let Some(other) = seen.insert(name.to_lowercase(), name) {
                return Err(BadInput(format!(
                    "{} and {}: two read paths whose names differ only in case; on macOS and \
                     Windows they are one file, and one of them would go unchecked: rename one",
                    self.display(&format!("{dir}/{other}{suffix}")),
                    self.display(&format!("{dir}/{name}{suffix}")),
                )));
            }
        }
        Ok(names)
    }

    /// A path as the user should see it in a message.
    pub fn display(&self, rel: &str) -> String {
        match self {
            Source::Embedded => format!("(reference project) {rel}"),
            Source::Memory(_) => rel.to_string(),
            Source::Dir(dir) if dir == Path::new(".") => rel.to_string(),
            Source::Dir(dir) => dir.join(rel).display().to_string(),
        }
    }
}

/// A file's bytes as text: UTF-8, without a byte-order mark, without NUL characters.
fn decode(path: &str, mut bytes: Vec<u8>) -> Result<String, BadInput> {
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    match String::from_utf8(bytes) {
        Ok(text) => match text.find('\0') {
            Some(at) => Err(BadInput(located(
                path,
                &text,
                at,
                "a NUL character (byte 0x00): a text file never holds one; is this file binary, or \
                 saved as UTF-16? save it as UTF-8 text",
            ))),
            None => Ok(text),
        },
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let byte = bytes[at];
            let utf16 = bytes.starts_with(b"\xff\xfe") || bytes.starts_with(b"\xfe\xff");
            let text = String::from_utf8_lossy(&bytes);
            Err(BadInput(located(
                path,
                &text,
                at,
                &format!(
                    "not UTF-8 text: byte 0x{byte:02X} at offset {at} is not part of a UTF-8 \
                     character{}; save the file as UTF-8",
                    if utf16 {
                        " (the file starts with a UTF-16 byte-order mark)"
                    } else {
                        ""
                    }
                ),
            )))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The files' schema. No `#[serde(flatten)]` and no internally tagged enums: both lose spans.
// Every value a later check can reject is `Spanned`, so the error points at it.

/// `[1, "visible"]`: parameter values, each with its place in the file.
type Params = Spanned<Vec<Spanned<toml::Value>>>;

/// `fragments = { vis = "p.visibility = 'visible'" }`: each name and value with its place, the
/// name's for a fragment that fills nothing.
type Fragments = BTreeMap<Spanned<String>, Spanned<String>>;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ProjectFile {
    #[serde(default)]
    scopes: BTreeMap<String, Spanned<ProjectScope>>,
    /// Planner settings production runs with, for every scope.
    #[serde(default)]
    settings: Settings,
}

/// `settings = { random_page_cost = 1.1 }`: planner settings plancheck applies (`SET LOCAL`)
/// and reports; each value with its place, for the refusal of a name that is not one.
type Settings = BTreeMap<String, Spanned<toml::Value>>;

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct ProjectScope {
    #[serde(default)]
    fragments: Fragments,
    params: Option<Params>,
    setup: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    settings: Settings,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectationFile {
    plan: Option<Spanned<String>>,
    params: Option<Params>,
    #[serde(default)]
    allow_seq_scan: Vec<Spanned<String>>,
    budget: Option<Spanned<BudgetFile>>,
    relative: Option<Spanned<RelativeFile>>,
    scopes: Option<Spanned<BTreeMap<String, Spanned<ExpectationScope>>>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ExpectationScope {
    /// `index = "name"`, or `index = ["a", "b"]` where either serves the read path.
    index: Option<Spanned<toml::Value>>,
    /// `twin = "name"` (the index lint pairs this scope's with) or `twin = false` (none, on
    /// purpose).
    twin: Option<Spanned<toml::Value>>,
    #[serde(default)]
    fragments: Fragments,
    params: Option<Params>,
    setup: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    settings: Settings,
    budget: Option<Spanned<BudgetFile>>,
    relative: Option<Spanned<RelativeFile>>,
}

/// `budget = { warm_ms = 60, buffers = 400 }`
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    warm_ms: Option<Spanned<f64>>,
    buffers: Option<Spanned<f64>>,
}

/// `relative = { to = "thread-page-first", max_ratio = 2 }`, with `scope = "all"` to compare
/// with that scope of `to` rather than the check's own.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RelativeFile {
    to: Spanned<String>,
    scope: Option<Spanned<String>>,
    max_ratio: Spanned<f64>,
}

/// The index names an `index` (or `twin`) value gives: one string, or a non-empty list of
/// distinct strings; each a name PostgreSQL can read, located where written when it is not.
fn index_names(here: File<'_>, value: &Spanned<toml::Value>) -> Result<Vec<String>, BadInput> {
    let span = value.span();
    let what = "an index is named `name` or `schema.name`, a part with capitals, spaces or dots \
                in double quotes (`index = '\"My Index\"'`)";
    let one = |name: &str, search_from: usize| -> Result<String, BadInput> {
        // Where the string is written inside the value's span (exact for a plain string).
        let region = here.text.get(span.clone()).unwrap_or("");
        let start = region
            .get(search_from..)
            .and_then(|r| r.find(name.trim()).map(|i| span.start + search_from + i))
            .unwrap_or(span.start);
        let trimmed = name.trim();
        if trimmed.is_empty() {
            return Err(here.at(start, "`index` is empty"));
        }
        if let Some((at, problem)) = index_name_problem(trimmed) {
            return Err(here.at(
                start + at,
                &format!("`index = {}`: {problem}; {what}", shown(trimmed)),
            ));
        }
        Ok(trimmed.to_string())
    };
    match value.get_ref() {
        toml::Value::String(s) => Ok(vec![one(s, 0)?]),
        toml::Value::Array(items) if !items.is_empty() => {
            let mut out: Vec<String> = Vec::new();
            let mut from = 0;
            for item in items {
                let toml::Value::String(s) = item else {
                    return Err(here.at(
                        span.start,
                        "`index` is a name, or a list of names (`index = [\"a\", \"b\"]`) when \
                         either serves the read path",
                    ));
                };
                let name = one(s, from)?;
                from = here
                    .text
                    .get(span.clone())
                    .and_then(|r| {
                        r.get(from..)?
                            .find(s.trim())
                            .map(|i| from + i + s.trim().len())
                    })
                    .unwrap_or(from);
                if out.contains(&name) {
                    return Err(
                        here.at(span.start, &format!("`index` lists {} twice", shown(&name)))
                    );
                }
                out.push(name);
            }
            Ok(out)
        }
        toml::Value::Array(_) => Err(here.at(span.start, "`index` is an empty list")),
        _ => Err(here.at(
            span.start,
            "`index` is a name, or a list of names (`index = [\"a\", \"b\"]`) when either \
             serves the read path",
        )),
    }
}

/// A file being read, for errors located in it.
#[derive(Clone, Copy)]
struct File<'a> {
    path: &'a str,
    text: &'a str,
}

impl File<'_> {
    fn at(&self, offset: usize, message: &str) -> BadInput {
        BadInput(located(self.path, self.text, offset, message))
    }

    /// The file offset of byte `at` of a string value whose span is `span`: exact when the
    /// value is written as one plain string (no escapes), else the value's start.
    fn inside(&self, span: Range<usize>, value: &str, at: usize) -> usize {
        let raw = self.text.get(span.clone()).unwrap_or("");
        let quoted = (raw.starts_with('"') && raw.ends_with('"'))
            || (raw.starts_with('\'') && raw.ends_with('\''));
        if quoted && raw.len() == value.len() + 2 && &raw[1..raw.len() - 1] == value {
            span.start + 1 + at
        } else {
            span.start
        }
    }
}

/// `plancheck.toml`, read and checked.
struct ProjectConfig {
    path: String,
    text: String,
    file: ProjectFile,
}

impl ProjectConfig {
    fn file(&self) -> File<'_> {
        File {
            path: &self.path,
            text: &self.text,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The resolved project.

/// Everything to check, validated.
#[derive(Debug, Clone)]
pub struct Project {
    pub read_paths: Vec<ReadPath>,
    /// Every scope name declared anywhere (project or expectation), for `--scope` validation.
    pub scope_names: Vec<String>,
}

/// A read path and the scopes it is checked under.
#[derive(Debug, Clone)]
pub struct ReadPath {
    pub name: String,
    /// `plans/NAME.sql` as the user sees it.
    pub plan_path: String,
    pub expectation_path: String,
    pub allow_seq_scan: Vec<String>,
    pub checks: Vec<ScopeCheck>,
    /// The expectation file's text, for errors found once every expectation is read.
    expectation_text: String,
    /// Each relative budget's comparison, checked once every expectation is read.
    relatives: Vec<RelativeTarget>,
}

/// The check a relative budget compares with, and where the budget says so.
#[derive(Debug, Clone)]
struct RelativeTarget {
    to: String,
    /// The scope compared with: the budget's `scope`, else the check's own.
    scope: String,
    /// The offset of the `relative` table.
    at: usize,
    /// The offset of its `scope` value, when it has one.
    scope_at: Option<usize>,
}

/// One read path in one scope: what a check runs.
#[derive(Debug, Clone)]
pub struct ScopeCheck {
    pub scope: String,
    /// The required index as written (`name` or `schema.name`, quoted parts allowed); the first
    /// when the scope accepts several.
    pub index: String,
    /// The other indexes the scope accepts in its place (`index = ["a", "b"]`), in order.
    pub also: Vec<String>,
    /// What the scope declares of its index's twin, for `lint`.
    pub twin: Option<crate::model::TwinDecl>,
    pub sql: RenderedSql,
    /// Parameter values as SQL literals, for `$1`, `$2`, ….
    pub params: Vec<String>,
    pub setup: Vec<String>,
    /// Declared planner settings (`settings = { … }`), name and value, applied before the setup.
    pub settings: Vec<(String, String)>,
    pub budget: Budget,
    /// Where each parameter value is written, for an error the server finds in one.
    param_places: Vec<Place>,
    /// Where each setup statement is written.
    setup_places: Vec<Place>,
}

/// A place in a file people write: the file's path and text, and a byte offset into it.
#[derive(Debug, Clone)]
struct Place {
    path: String,
    text: Arc<str>,
    offset: usize,
}

impl ScopeCheck {
    /// `message` located at parameter value `index` (0 for `$1`) in the file that gives it,
    /// with the line shown: for an error the server finds in the value (a text it cannot
    /// convert to the parameter's type). `None` when there is no such parameter.
    pub fn locate_param(&self, index: usize, message: &str) -> Option<String> {
        let p = self.param_places.get(index)?;
        Some(located(&p.path, &p.text, p.offset, message))
    }

    /// `message` located at setup statement `index` (0 for the first) in the file that gives
    /// it (the expectation, or plancheck.toml), with the line shown: for a statement the server
    /// refuses. `None` when there is no such statement.
    pub fn locate_setup(&self, index: usize, message: &str) -> Option<String> {
        let p = self.setup_places.get(index)?;
        Some(located(&p.path, &p.text, p.offset, message))
    }

    /// The parameter (0 for `$1`) at byte `offset` of the parameter list as sent,
    /// `params.join(", ")`; `None` when the offset falls outside every value.
    pub fn param_at(&self, offset: usize) -> Option<usize> {
        let mut start = 0;
        for (i, p) in self.params.iter().enumerate() {
            if offset >= start && offset < start + p.len() {
                return Some(i);
            }
            start += p.len() + ", ".len();
        }
        None
    }
}

/// A plan's SQL with the scope's fragments filled in, and the map back to the plan file.
#[derive(Debug, Clone)]
pub struct RenderedSql {
    pub text: String,
    source: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
struct Segment {
    out_start: usize,
    src_start: usize,
    len: usize,
    /// Text copied from the plan file (true) or a fragment's value (false).
    literal: bool,
}

impl RenderedSql {
    /// The byte offset in the plan file of byte `offset` in the rendered text. Inside a
    /// fragment's value, the offset of the `{{` that placed it.
    pub fn source_offset(&self, offset: usize) -> usize {
        for s in &self.segments {
            // An empty segment (a fragment whose value is "") holds no byte: the byte there is
            // the next segment's.
            if offset >= s.out_start && offset < s.out_start + s.len {
                return if s.literal {
                    s.src_start + (offset - s.out_start)
                } else {
                    s.src_start
                };
            }
        }
        self.source.len()
    }

    /// The plan file's text.
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// What to load, as the command line narrowed it.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub only: Vec<String>,
    pub scopes: Vec<String>,
}

/// Loads a project of one read path, `path`, from text in memory: the expectation
/// (`expectations/path.toml`), its plan (`plans/path.sql`, absent when `None`) and
/// `plancheck.toml` (absent when `None`), through the same code as [`load`] (for tests and
/// fuzzing; nothing touches the disk).
pub fn load_texts(
    expectation: &str,
    plan_sql: Option<&str>,
    project_toml: Option<&str>,
) -> Result<Project, BadInput> {
    let mut files = vec![(
        "expectations/path.toml".to_string(),
        expectation.as_bytes().to_vec(),
    )];
    if let Some(sql) = plan_sql {
        files.push(("plans/path.sql".to_string(), sql.as_bytes().to_vec()));
    }
    if let Some(toml) = project_toml {
        files.push(("plancheck.toml".to_string(), toml.as_bytes().to_vec()));
    }
    load(&Source::Memory(files), &Filter::default())
}

/// Reads and validates the whole project, then narrows it to the filter.
pub fn load(source: &Source, filter: &Filter) -> Result<Project, BadInput> {
    let path = source.display("plancheck.toml");
    let config = match source.read("plancheck.toml")? {
        Some(text) => {
            let file = parse_toml::<ProjectFile>(&path, &text)?;
            let config = ProjectConfig { path, text, file };
            check_project_file(&config)?;
            config
        }
        None => ProjectConfig {
            path,
            text: String::new(),
            file: ProjectFile::default(),
        },
    };

    let names = source.list("expectations", "toml")?;
    if names.is_empty() {
        return Err(BadInput(format!(
            "{}: no expectations (*.toml) found",
            source.display("expectations")
        )));
    }
    let mut scope_names: Vec<String> = config.file.scopes.keys().cloned().collect();
    let mut read_paths = Vec::new();
    for name in &names {
        let rp = load_expectation(source, &config, name)?;
        for c in &rp.checks {
            if !scope_names.contains(&c.scope) {
                scope_names.push(c.scope.clone());
            }
        }
        read_paths.push(rp);
    }
    scope_names.sort();

    for only in &filter.only {
        if !read_paths.iter().any(|r| &r.name == only) {
            return Err(BadInput(format!(
                "--only {only}: no such read path (there are: {})",
                names.join(", ")
            )));
        }
    }
    for scope in &filter.scopes {
        if !scope_names.contains(scope) {
            return Err(BadInput(format!(
                "--scope {scope}: no such scope (there are: {})",
                scope_names.join(", ")
            )));
        }
    }
    // A relative budget names another read path checked in the same scope, or in the scope it
    // names.
    for r in &read_paths {
        for rel in &r.relatives {
            let target = read_paths.iter().find(|t| t.name == rel.to);
            let (message, offset) = match target {
                None => (
                    format!(
                        "relative budget: no read path `{}` (there are: {})",
                        cut(&rel.to),
                        names.join(", ")
                    ),
                    rel.at,
                ),
                Some(t) if !t.checks.iter().any(|c| c.scope == rel.scope) => (
                    format!(
                        "relative budget: {} is not checked in scope {} (its scopes: {})",
                        shown(&rel.to),
                        shown(&rel.scope),
                        t.checks
                            .iter()
                            .map(|c| c.scope.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    rel.scope_at.unwrap_or(rel.at),
                ),
                Some(_) => continue,
            };
            return Err(BadInput(located(
                &r.expectation_path,
                &r.expectation_text,
                offset,
                &message,
            )));
        }
    }
    // The checks to run: those of the read paths and scopes the filter names, then the checks
    // their relative budgets compare with, even where --only or --scope leaves them out: a ratio
    // needs both sides.
    let relative_of: HashMap<(&str, &str), (&str, &str)> = read_paths
        .iter()
        .flat_map(|r| r.checks.iter().map(move |c| (r, c)))
        .filter_map(|(r, c)| {
            let rel = c.budget.relative.as_ref()?;
            let scope = rel.scope.as_deref().unwrap_or(&c.scope);
            Some((
                (r.name.as_str(), c.scope.as_str()),
                (rel.to.as_str(), scope),
            ))
        })
        .collect();
    let mut run: Vec<(&str, &str)> = read_paths
        .iter()
        .filter(|r| filter.only.is_empty() || filter.only.contains(&r.name))
        .flat_map(|r| r.checks.iter().map(|c| (r.name.as_str(), c.scope.as_str())))
        .filter(|(_, scope)| filter.scopes.is_empty() || filter.scopes.iter().any(|s| s == scope))
        .collect();
    let mut running: HashSet<(&str, &str)> = run.iter().copied().collect();
    let mut i = 0;
    while let Some(check) = run.get(i) {
        if let Some(&other) = relative_of.get(check)
            && running.insert(other)
        {
            run.push(other);
        }
        i += 1;
    }
    let running: HashSet<(String, String)> = running
        .into_iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect();
    let read_paths = read_paths
        .into_iter()
        .map(|mut r| {
            r.checks
                .retain(|c| running.contains(&(r.name.clone(), c.scope.clone())));
            r
        })
        .filter(|r| !r.checks.is_empty())
        .collect();
    Ok(Project {
        read_paths,
        scope_names,
    })
}

/// Parses a TOML file into `T`; an error is located in it, in words a TOML writer knows.
fn parse_toml<T: serde::de::DeserializeOwned>(path: &str, text: &str) -> Result<T, BadInput> {
    toml::from_str(text).map_err(|e| {
        let mut message = e
            .message()
            .trim_end()
            .replace("expected f64", "expected a number")
            .replace("expected a sequence", "expected an array")
            .replace("invalid type: sequence", "invalid type: array")
            .replace("invalid type: map", "invalid type: table")
            .replace("expected a map", "expected a table");
        if message.starts_with("unknown field `index`") && path.ends_with("plancheck.toml") {
            message.push_str(
                " (the required index is set per read path, under [scopes.NAME] in its \
                 expectation, not in plancheck.toml)",
            );
        }
        let offset = match e.span() {
            Some(span) => span.start,
            None if message.contains("recursion limit") => {
                message = format!("{message}: a key or value nested more than 80 levels deep");
                deepest_line(text)
            }
            None => 0,
        };
        BadInput(located(path, text, offset, &message))
    })
}

/// The start of the line with the most dots: where a TOML key too deeply dotted is, for the
/// parser's error that has no position.
fn deepest_line(text: &str) -> usize {
    let mut best = (0, 0);
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let dots = line.matches('.').count();
        if dots > best.0 {
            best = (dots, start);
        }
        start += line.len();
    }
    best.1
}

/// Checks what `plancheck.toml` says before any expectation uses it, so its errors are found
/// even where every expectation overrides them.
fn check_project_file(config: &ProjectConfig) -> Result<(), BadInput> {
    let file = config.file();
    settings_of(file, &config.file.settings)?;
    for (name, scope) in &config.file.scopes {
        check_scope_name(file, name, scope.span())?;
        let s = scope.get_ref();
        check_fragments(file, &s.fragments)?;
        check_setup(file, s.setup.as_ref())?;
        settings_of(file, &s.settings)?;
        if let Some(params) = &s.params {
            literals(file, params)?;
        }
    }
    Ok(())
}

fn check_scope_name(file: File<'_>, name: &str, span: Range<usize>) -> Result<(), BadInput> {
    if !is_safe_name(name) {
        return Err(file.at(
            span.start,
            &format!("{} is not a scope name: {SAFE_NAME}", shown(name)),
        ));
    }
    Ok(())
}

/// What a read path's or a scope's name may hold, in words.
const SAFE_NAME: &str = "a name holds letters, digits, `-`, `_` and `.` (not first), because it \
                         becomes part of file names (--save-plans) and reports";

/// Whether `name` is a safe read-path or scope name: ASCII letters and digits, `-`, `_`, and `.`
/// anywhere but first. Names become file names (`--save-plans`), so nothing in one may steer a
/// path (`..`, `/`) or hide in a terminal.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A declared `settings` table, checked: planner settings only, `enable_*` and the bounds
/// refused where they are written; values as the server reads them (`1.1`, `'4MB'`, `on`).
fn settings_of(file: File<'_>, settings: &Settings) -> Result<Vec<(String, String)>, BadInput> {
    let mut out = Vec::new();
    for (name, value) in settings {
        if let Some(why) = crate::safety::declared_refusal(name) {
            return Err(file.at(value.span().start, &format!("settings: {why}")));
        }
        let text = match value.get_ref() {
            toml::Value::String(s) if !s.contains('\0') => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) if f.is_finite() => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            _ => {
                return Err(file.at(
                    value.span().start,
                    &format!(
                        "settings: `{}` must be a number, a string or a boolean",
                        cut(name)
                    ),
                ));
            }
        };
        out.push((name.to_ascii_lowercase(), text));
    }
    Ok(out)
}

fn check_fragments(file: File<'_>, fragments: &Fragments) -> Result<(), BadInput> {
    for (name, value) in fragments {
        if let Some(at) = value.get_ref().find('\0') {
            return Err(file.at(
                file.inside(value.span(), value.get_ref(), at),
                &format!(
                    "fragment `{}` holds a NUL character, which SQL text cannot",
                    cut(name.get_ref())
                ),
            ));
        }
    }
    Ok(())
}

fn check_setup(
    file: File<'_>,
    setup: Option<&Spanned<Vec<Spanned<String>>>>,
) -> Result<(), BadInput> {
    for (i, statement) in setup
        .map(|s| s.get_ref().as_slice())
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let text = statement.get_ref();
        if text.trim().is_empty() {
            return Err(file.at(
                statement.span().start,
                &format!("setup statement {} is empty", i + 1),
            ));
        }
        if let Some(at) = text.find('\0') {
            return Err(file.at(
                file.inside(statement.span(), text, at),
                &format!(
                    "setup statement {} holds a NUL character, which SQL text cannot",
                    i + 1
                ),
            ));
        }
        if let Some((at, why)) = crate::safety::setup_refusal(text) {
            return Err(file.at(
                file.inside(statement.span(), text, at),
                &format!("setup statement {}: {why}", i + 1),
            ));
        }
    }
    Ok(())
}

fn setup_of(setup: &Spanned<Vec<Spanned<String>>>) -> Vec<String> {
    setup
        .get_ref()
        .iter()
        .map(|s| s.get_ref().clone())
        .collect()
}

/// Parameter values as SQL literals; an error points at the value.
fn literals(file: File<'_>, params: &Params) -> Result<Vec<String>, BadInput> {
    params
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            to_sql_literal(v.get_ref())
                .map_err(|m| file.at(v.span().start, &format!("parameter ${}: {m}", i + 1)))
        })
        .collect()
}

fn load_expectation(
    source: &Source,
    config: &ProjectConfig,
    name: &str,
) -> Result<ReadPath, BadInput> {
    let rel = format!("expectations/{name}.toml");
    let path = source.display(&rel);
    let text = source.read(&rel)?.ok_or_else(|| {
        BadInput(format!(
            "{path}: cannot be read (listed in expectations/, but gone or a broken symbolic link)"
        ))
    })?;
    let file: ExpectationFile = parse_toml(&path, &text)?;
    let here = File {
        path: &path,
        text: &text,
    };
    let shared_file = config.file();
    // The two files parameter values come from, shared by every check that points into them.
    let text_shared: Arc<str> = Arc::from(text.as_str());
    let config_text: Arc<str> = Arc::from(config.text.as_str());

    let plan_name = match &file.plan {
        Some(p) => {
            let value = p.get_ref();
            if !is_safe_name(value) {
                return Err(here.at(
                    p.span().start,
                    "`plan` must be a read-path name (plans/NAME.sql), not a path",
                ));
            }
            value.clone()
        }
        None => name.to_string(),
    };
    let plan_rel = format!("plans/{plan_name}.sql");
    let plan_path = source.display(&plan_rel);
    let plan_sql = match source.read(&plan_rel)? {
        Some(sql) => sql,
        None => {
            let mut message = format!("the plan file {plan_path} does not exist");
            if file.plan.is_none() {
                message.push_str(
                    ": an expectation checks plans/<its own name>.sql unless it sets \
                     `plan = \"NAME\"`",
                );
            }
            // A near miss: the same name in another case, or `plan` written with `.sql`.
            let wanted = format!("{plan_name}.sql").to_lowercase();
            if let Some(other) = source
                .entries("plans")
                .unwrap_or_default()
                .into_iter()
                .flatten()
                .find(|n| n.to_lowercase() == wanted)
            {
                message.push_str(&format!(
                    " (there is plans/{other}: the name and extension must match exactly, in \
                     case too)"
                ));
            } else if plan_name.ends_with(".sql") {
                message.push_str(" (`plan` names the read path, without `.sql`)");
            }
            let offset = file.plan.as_ref().map(|p| p.span().start).unwrap_or(0);
            return Err(here.at(offset, &message));
        }
    };
    if plan_sql.trim().is_empty() {
        return Err(BadInput(located(
            &plan_path,
            &plan_sql,
            0,
            "the plan file is empty: it must hold the read path's SQL",
        )));
    }
    let template = PlanTemplate::read(&plan_path, &plan_sql)?;

    let mut allow_seq_scan = Vec::new();
    for a in &file.allow_seq_scan {
        let value = a.get_ref();
        if value.trim().is_empty()
            || value.matches('.').count() > 1
            || value.contains('"')
            || value.chars().any(char::is_control)
        {
            return Err(here.at(
                a.span().start,
                "`allow_seq_scan` lists relations as EXPLAIN names them: `forums` or \
                 `public.forums`, without quotes",
            ));
        }
        allow_seq_scan.push(value.clone());
    }
    let scopes = match &file.scopes {
        Some(s) if !s.get_ref().is_empty() => s.get_ref(),
        other => {
            return Err(here.at(
                other.as_ref().map(|s| s.span().start).unwrap_or(0),
                "declares no scope; add at least one [scopes.NAME] table with the `index` it \
                 must use",
            ));
        }
    };

    let mut relatives: Vec<RelativeTarget> = Vec::new();
    let mut checks = Vec::new();
    for (scope_name, scope) in scopes {
        let scope_span = scope.span();
        check_scope_name(here, scope_name, scope_span.clone())?;
        let scope = scope.get_ref();
        let shared = config.file.scopes.get(scope_name).map(|s| s.get_ref());
        let Some(written) = &scope.index else {
            return Err(here.at(
                scope_span.start,
                &format!("scope `{scope_name}` names no `index` it must use"),
            ));
        };
        let mut indexes = index_names(here, written)?;
        let index = indexes.remove(0);
        let twin = match &scope.twin {
            None => None,
            Some(t) => match t.get_ref() {
                toml::Value::Boolean(false) => Some(crate::model::TwinDecl::NoneOnPurpose),
                toml::Value::String(_) => {
                    let mut names = index_names(here, t)?;
                    Some(crate::model::TwinDecl::Named(names.remove(0)))
                }
                _ => {
                    return Err(here.at(
                        t.span().start,
                        "`twin` is the name of the index lint pairs this scope's index with \
                         (`twin = \"posts_thread_all_idx\"`), or `false` when it has none on \
                         purpose",
                    ));
                }
            },
        };
        check_fragments(here, &scope.fragments)?;
        check_setup(here, scope.setup.as_ref())?;
        // A fragment given here, for this read path alone, must fill a placeholder of its plan;
        // one from plancheck.toml serves every read path checked in the scope, and a plan that
        // has no use for it is no mistake.
        for key in scope.fragments.keys() {
            if !template.uses(key.get_ref()) {
                return Err(here.at(
                    key.span().start,
                    &template.unused(&plan_path, &plan_sql, key.get_ref()),
                ));
            }
        }
        let mut fragments: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in shared
            .map(|s| &s.fragments)
            .into_iter()
            .flatten()
            .chain(&scope.fragments)
        {
            fragments.insert(k.get_ref().clone(), v.get_ref().clone());
        }
        let sql = template.render(&plan_path, &plan_sql, &fragments, scope_name)?;
        check_one_query(&plan_path, &plan_sql, &sql, scope_name)?;
        // Declared settings merge key by key: plancheck.toml's, its scope's, the expectation's
        // scope's, the last one written winning.
        let mut declared: BTreeMap<String, String> = BTreeMap::new();
        declared.extend(settings_of(shared_file, &config.file.settings)?);
        if let Some(s) = shared {
            declared.extend(settings_of(shared_file, &s.settings)?);
        }
        declared.extend(settings_of(here, &scope.settings)?);

        // The scope's params, else the expectation's, else plancheck.toml's: each located in
        // the file it came from.
        let params = scope
            .params
            .as_ref()
            .map(|p| (here, p, &text_shared))
            .or(file.params.as_ref().map(|p| (here, p, &text_shared)))
            .or(shared
                .and_then(|s| s.params.as_ref())
                .map(|p| (shared_file, p, &config_text)));
        let (literals, param_places) = match params {
            Some((f, p, f_text)) => (
                literals(f, p)?,
                p.get_ref()
                    .iter()
                    .map(|v| Place {
                        path: f.path.to_string(),
                        text: Arc::clone(f_text),
                        offset: v.span().start,
                    })
                    .collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let (wanted, wanted_at) = highest_placeholder(&sql.text);
        if wanted != literals.len() {
            let uses = match wanted {
                0 => format!("{plan_path} uses no parameters"),
                1 => format!("{plan_path} uses 1 parameter ($1)"),
                n => format!("{plan_path} uses {n} parameters ($1…${n})"),
            };
            let gives = format!(
                "scope `{scope_name}` gives {} value{}",
                literals.len(),
                if literals.len() == 1 { "" } else { "s" },
            );
            return Err(match params {
                // Too many: point at the first value too many.
                Some((f, p, _)) if wanted < literals.len() => f.at(
                    p.get_ref()[wanted].span().start,
                    &format!("{uses} but {gives}"),
                ),
                Some((f, p, _)) => f.at(p.span().start, &format!("{uses} but {gives}")),
                // None at all: point at the placeholder in the plan.
                None => BadInput(located(
                    &plan_path,
                    &plan_sql,
                    sql.source_offset(wanted_at),
                    &format!(
                        "{uses} but {gives}; add `params = [...]` to {path} (or under \
                         [scopes.{scope_name}])"
                    ),
                )),
            });
        }
        // The scope's setup, else plancheck.toml's, each statement with its place.
        let setup_from = scope
            .setup
            .as_ref()
            .map(|s| (here, s, &text_shared))
            .or(shared
                .and_then(|s| s.setup.as_ref())
                .map(|s| (shared_file, s, &config_text)));
        let (setup, setup_places) = match setup_from {
            Some((f, s, f_text)) => (
                setup_of(s),
                s.get_ref()
                    .iter()
                    .map(|v| Place {
                        path: f.path.to_string(),
                        text: Arc::clone(f_text),
                        offset: v.span().start,
                    })
                    .collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        // A scope's own budget replaces the expectation's, figure by figure.
        let budget_file = scope.budget.as_ref().or(file.budget.as_ref());
        let mut budget = Budget::default();
        if let Some(b) = budget_file {
            for (figure, value) in [
                ("warm_ms", &b.get_ref().warm_ms),
                ("buffers", &b.get_ref().buffers),
            ] {
                if let Some(v) = value
                    && !(v.get_ref().is_finite() && *v.get_ref() > 0.0)
                {
                    return Err(here.at(
                        v.span().start,
                        &format!(
                            "budget `{figure}` must be a number above 0, not {}",
                            v.get_ref()
                        ),
                    ));
                }
            }
            budget.warm_ms = b.get_ref().warm_ms.as_ref().map(|v| *v.get_ref());
            budget.buffers = b.get_ref().buffers.as_ref().map(|v| *v.get_ref());
        }
        if let Some(r) = scope.relative.as_ref().or(file.relative.as_ref()) {
            let rel = r.get_ref();
            let max_ratio = *rel.max_ratio.get_ref();
            if !(max_ratio.is_finite() && max_ratio > 0.0) {
                return Err(here.at(
                    rel.max_ratio.span().start,
                    &format!("`max_ratio` must be a number above 0, not {max_ratio}"),
                ));
            }
            let to = rel.to.get_ref();
            let compared = rel.scope.as_ref().map_or(scope_name, |s| s.get_ref());
            if to == name && compared == scope_name {
                return Err(match &rel.scope {
                    None => here.at(
                        rel.to.span().start,
                        "a read path cannot be relative to itself in the same scope; \
                         `scope = \"NAME\"` compares with another of its scopes",
                    ),
                    Some(s) => here.at(
                        s.span().start,
                        &format!(
                            "a read path cannot be relative to itself in the same scope \
                             (`{scope_name}`); put this `relative` under the scopes that compare \
                             with `{scope_name}`"
                        ),
                    ),
                });
            }
            budget.relative = Some(Relative {
                // None is the check's own scope, written or not.
                scope: (compared != scope_name).then(|| compared.clone()),
                to: to.clone(),
                max_ratio,
            });
            relatives.push(RelativeTarget {
                to: to.clone(),
                scope: compared.clone(),
                at: r.span().start,
                scope_at: rel.scope.as_ref().map(|s| s.span().start),
            });
        }
        checks.push(ScopeCheck {
            scope: scope_name.clone(),
            index,
            also: indexes,
            twin,
            sql,
            params: literals,
            setup,
            settings: declared.into_iter().collect(),
            budget,
            param_places,
            setup_places,
        });
    }
    Ok(ReadPath {
        name: name.to_string(),
        plan_path,
        expectation_path: path,
        allow_seq_scan,
        checks,
        expectation_text: text,
        relatives,
    })
}

/// A read path is one query. Parse on the server refuses a second statement too; refusing it
/// here says where, before anything runs. With fragments filled in, so a fragment's value
/// cannot add one either.
fn check_one_query(
    plan_path: &str,
    plan_sql: &str,
    sql: &RenderedSql,
    scope: &str,
) -> Result<(), BadInput> {
    use crate::sql::{Dialect, Kind};
    let dialect = Dialect::default();
    let at = |text: &str, offset: usize| {
        let lead = crate::sql::significant(text, dialect)
            .first()
            .map_or(0, |t| t.start);
        sql.source_offset(offset + lead)
    };
    let statements = crate::sql::split(&sql.text, dialect);
    if let Some(second) = statements.get(1) {
        return Err(BadInput(located(
            plan_path,
            plan_sql,
            at(second.text, second.offset),
            &format!(
                "a plan file holds one statement, the read path; a second one starts here \
                 (in scope `{scope}`, with its fragments filled in)"
            ),
        )));
    }
    let why = match crate::sql::classify(&sql.text, dialect) {
        Kind::Query => return Ok(()),
        Kind::Other(word) if word == "EXPLAIN" => {
            "the read path is the query alone: plancheck adds EXPLAIN itself".to_string()
        }
        Kind::TransactionControl(w) | Kind::Other(w) if !w.is_empty() => {
            format!("a read path is a query (SELECT, WITH … SELECT, VALUES or TABLE), not `{w}`")
        }
        _ => "a read path is a query (SELECT, WITH … SELECT, VALUES or TABLE)".to_string(),
    };
    Err(BadInput(located(
        plan_path,
        plan_sql,
        at(&sql.text, 0),
        &why,
    )))
}

/// What is wrong with a required index's name, as PostgreSQL's `to_regclass` reads it, with
/// the byte offset of the problem; `None` when it is well formed. A name is `name` or
/// `schema.name`; a part is an unquoted name (which the server folds to lower case) or a
/// double-quoted one (`""` for a quote inside).
fn index_name_problem(name: &str) -> Option<(usize, String)> {
    if let Some((at, c)) = name.char_indices().find(|(_, c)| c.is_control()) {
        return Some((at, format!("a control character ({c:?})")));
    }
    let b = name.as_bytes();
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let mut i = 0;
    let mut parts = 0;
    loop {
        while i < b.len() && space(b[i]) {
            i += 1;
        }
        let start = i;
        if i < b.len() && b[i] == b'"' {
            i += 1;
            let mut closed = false;
            while i < b.len() {
                if b[i] == b'"' {
                    if b.get(i + 1) == Some(&b'"') {
                        i += 2;
                        continue;
                    }
                    closed = true;
                    i += 1;
                    break;
                }
                i += 1;
            }
            if !closed {
                return Some((start, "a `\"` that is never closed".into()));
            }
            if i == start + 2 {
                return Some((start, "an empty quoted name `\"\"`".into()));
            }
        } else {
            while i < b.len() && b[i] != b'.' && b[i] != b'"' && !space(b[i]) {
                i += 1;
            }
            if i < b.len() && b[i] == b'"' {
                return Some((i, "a `\"` inside an unquoted name".into()));
            }
            if i == start {
                return Some((start, "an empty part".into()));
            }
        }
        parts += 1;
        while i < b.len() && space(b[i]) {
            i += 1;
        }
        if i == b.len() {
            return None;
        }
        if b[i] != b'.' {
            return Some((
                i,
                "text after the name (a name with spaces must be quoted)".into(),
            ));
        }
        if parts == 2 {
            return Some((i, "more than two parts".into()));
        }
        i += 1;
    }
}

/// Longest value a message quotes whole.
const SHOWN_VALUE_CHARS: usize = 60;

/// A value from a file, as a message quotes it: in quotes, escaped, at most 60 characters.
fn shown(value: &str) -> String {
    let head: String = value.chars().take(SHOWN_VALUE_CHARS).collect();
    if head.len() < value.len() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}

/// At most 60 characters of a value, for a message.
fn cut(value: &str) -> String {
    let mut head: String = value.chars().take(SHOWN_VALUE_CHARS).collect();
    if head.len() < value.len() {
        head.push('…');
    }
    head
}

/// A `{{name}}` in a plan file.
#[derive(Debug, Clone)]
struct Marker {
    /// The byte offset of its `{{`.
    open: usize,
    /// The byte offset just past its `}}`.
    end: usize,
    name: String,
}

/// A plan file read for its `{{name}}` placeholders, once for all its scopes.
///
/// A `{{name}}` is a placeholder only where it stands in SQL code, as PostgreSQL's lexer reads
/// the plan file: inside a comment, a string literal (dollar-quoted too) or a quoted identifier
/// it is text, left as written. A `{{vis}}` in a `-- filled per scope by {{vis}}` note is then
/// neither filled (a value with a newline would end the comment and put SQL after it) nor
/// required, and errors located through the rendered SQL land on the code, not on the note.
#[derive(Debug, Clone)]
struct PlanTemplate {
    placeholders: Vec<Marker>,
    /// `{{name}}`s inside comments, literals and quoted identifiers, and what holds each: not
    /// placeholders, kept to say so when a fragment given for that name fills nothing.
    dormant: Vec<(Marker, &'static str)>,
}

impl PlanTemplate {
    fn read(plan_path: &str, source: &str) -> Result<PlanTemplate, BadInput> {
        use crate::sql::TokenKind;
        let dialect = crate::sql::Dialect::default();
        let mut placeholders = Vec::new();
        let mut dormant = Vec::new();
        // `tokens` of `source[base..]`: the whole file, unless a marker had to be lexed past.
        let mut base = 0;
        let mut tokens = crate::sql::tokens(source, dialect);
        let mut i = 0;
        while let Some(t) = tokens.get(i) {
            let start = base + t.start;
            i += 1;
            let holder = match t.kind {
                TokenKind::Comment => "a comment",
                TokenKind::String | TokenKind::BitString => "a string literal",
                TokenKind::QuotedIdent => "a quoted identifier",
                TokenKind::Punct if source[start..].starts_with("{{") => {
                    let marker = marker_at(plan_path, source, start)?;
                    while tokens.get(i).is_some_and(|t| base + t.start < marker.end) {
                        i += 1;
                    }
                    // The lexer cuts a valid name into words, numbers, `-` and the braces, so
                    // the marker ends on a token boundary. Were it ever not so (a token run on
                    // past the `}}`), lex again from there rather than read the rest askew.
                    let last = &tokens[i - 1];
                    if base + last.start + last.text.len() > marker.end {
                        base = marker.end;
                        tokens = crate::sql::tokens(&source[base..], dialect);
                        i = 0;
                    }
                    placeholders.push(marker);
                    continue;
                }
                _ => continue,
            };
            dormant.extend(
                dormant_markers(t.text, start)
                    .into_iter()
                    .map(|m| (m, holder)),
            );
        }
        Ok(PlanTemplate {
            placeholders,
            dormant,
        })
    }

    fn uses(&self, name: &str) -> bool {
        self.placeholders.iter().any(|m| m.name == name)
    }

    /// Fills the placeholders with the scope's fragments; a placeholder without a value is an
    /// error at its `{{`.
    fn render(
        &self,
        plan_path: &str,
        source: &str,
        fragments: &BTreeMap<String, String>,
        scope: &str,
    ) -> Result<RenderedSql, BadInput> {
        let mut text = String::with_capacity(source.len());
        let mut segments = Vec::new();
        let mut rest = 0;
        for m in &self.placeholders {
            let Some(value) = fragments.get(&m.name) else {
                return Err(BadInput(located(
                    plan_path,
                    source,
                    m.open,
                    &format!(
                        "fragment `{}` has no value in scope `{scope}`; give it under \
                         [scopes.{scope}] fragments, in the expectation or in plancheck.toml",
                        m.name
                    ),
                )));
            };
            segments.push(Segment {
                out_start: text.len(),
                src_start: rest,
                len: m.open - rest,
                literal: true,
            });
            text.push_str(&source[rest..m.open]);
            segments.push(Segment {
                out_start: text.len(),
                src_start: m.open,
                len: value.len(),
                literal: false,
            });
            text.push_str(value);
            rest = m.end;
        }
        segments.push(Segment {
            out_start: text.len(),
            src_start: rest,
            len: source.len() - rest,
            literal: true,
        });
        text.push_str(&source[rest..]);
        Ok(RenderedSql {
            text,
            source: source.to_string(),
            segments,
        })
    }

    /// Why fragment `name`, given for this plan, fills nothing: the placeholders there are, and
    /// a `{{name}}` the plan holds where it is not one.
    fn unused(&self, plan_path: &str, source: &str, name: &str) -> String {
        if !is_fragment_name(name) {
            return format!(
                "{} is not a fragment name (letters, digits, _ and -): no placeholder can use it",
                shown(name)
            );
        }
        let mut seen = HashSet::new();
        let names: Vec<String> = self
            .placeholders
            .iter()
            .filter(|m| seen.insert(m.name.as_str()))
            .map(|m| format!("`{{{{{}}}}}`", m.name))
            .collect();
        let has = match names.as_slice() {
            [] => "it has no placeholder".to_string(),
            names => format!("it has {}", names.join(", ")),
        };
        let mut message = format!(
            "fragment `{name}` fills nothing: {plan_path} has no `{{{{{name}}}}}` placeholder \
             ({has}); remove the fragment or correct its name"
        );
        if let Some((m, holder)) = self.dormant.iter().find(|(m, _)| m.name == name) {
            let (line, col) = crate::errors::line_col(source, m.open);
            message.push_str(&format!(
                " (the `{{{{{name}}}}}` at {plan_path}:{line}:{col} is inside {holder}, where it \
                 is text, not a placeholder)"
            ));
        }
        message
    }
}

/// The `{{name}}` marker whose `{{` is at `open` in code: closed on its line, a valid name.
fn marker_at(plan_path: &str, source: &str, open: usize) -> Result<Marker, BadInput> {
    let error = |message: &str| BadInput(located(plan_path, source, open, message));
    let Some(close) = source[open + 2..].find("}}").map(|c| open + 2 + c) else {
        return Err(error("`{{` without a closing `}}`"));
    };
    let inside = &source[open + 2..close];
    if inside.contains(['\n', '\r']) {
        return Err(error("`{{` without a closing `}}` on its line"));
    }
    let name = inside.trim();
    if !is_fragment_name(name) {
        return Err(error(&format!(
            "{} is not a fragment name (letters, digits, _ and -)",
            shown(&format!("{{{{{name}}}}}"))
        )));
    }
    if name.contains("--") {
        return Err(error(&format!(
            "{} is not a fragment name: `--` in it starts an SQL comment; use single `-`s or `_`",
            shown(&format!("{{{{{name}}}}}"))
        )));
    }
    Ok(Marker {
        open,
        end: close + 2,
        name: name.to_string(),
    })
}

fn is_fragment_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The well-formed `{{name}}`s in `text` (a comment or literal starting at byte `base` of the
/// file), each closed on its line. Linear in the text: the first `}}` after a `{{` is found
/// once for every `{{` before it.
fn dormant_markers(text: &str, base: usize) -> Vec<Marker> {
    let mut out = Vec::new();
    let mut rest = 0;
    let mut close = 0;
    while let Some(found) = text[rest..].find("{{") {
        let open = rest + found;
        rest = open + 2;
        if close < rest {
            match text[rest..].find("}}") {
                Some(c) => close = rest + c,
                None => break,
            }
        }
        let name = text[rest..close].trim();
        if is_fragment_name(name) {
            out.push(Marker {
                open: base + open,
                end: base + close + 2,
                name: name.to_string(),
            });
            rest = close + 2;
        }
    }
    out
}

/// A TOML value as an SQL literal for `EXECUTE name(…)`. Strings are quoted as literals of
/// unknown type, so the server converts them to the parameter's type as a driver's text
/// parameter would be.
fn to_sql_literal(v: &toml::Value) -> Result<String, String> {
    Ok(match v {
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) if f.is_finite() => format!("{f:?}"),
        toml::Value::Float(f) => format!("'{f}'"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::String(s) => quote_literal(s)?,
        toml::Value::Datetime(d) => quote_literal(&d.to_string())?,
        toml::Value::Array(_) => {
            return Err(
                "an array is not a parameter value; write it as a string such as \
                 \"{1,2,3}\""
                    .into(),
            );
        }
        toml::Value::Table(_) => return Err("a table is not a parameter value".into()),
    })
}

fn quote_literal(s: &str) -> Result<String, String> {
    if s.contains('\0') {
        return Err("a string parameter cannot contain a NUL character".into());
    }
    Ok(format!("'{}'", s.replace('\'', "''")))
}

/// The highest `$n` placeholder in the SQL, skipping string literals, quoted identifiers,
/// dollar-quoted strings and comments as PostgreSQL's lexer does.
pub fn max_placeholder(sql: &str) -> usize {
    highest_placeholder(sql).0
}

/// The highest `$n` placeholder in the SQL and the byte offset of its first occurrence
/// (0 when there is none).
fn highest_placeholder(sql: &str) -> (usize, usize) {
    crate::sql::highest_param(sql, crate::sql::Dialect::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan file read and rendered with `fragments`, as one scope's check does it.
    fn render(
        plan_path: &str,
        source: &str,
        fragments: &BTreeMap<String, String>,
        scope: &str,
    ) -> Result<RenderedSql, BadInput> {
        PlanTemplate::read(plan_path, source)?.render(plan_path, source, fragments, scope)
    }

    #[test]
    fn placeholders_outside_literals_and_comments_are_counted() {
        assert_eq!(max_placeholder("select $1, $2"), 2);
        assert_eq!(
            max_placeholder("select '$3', \"$4\", $1 -- $5\n/* $6 */"),
            1
        );
        assert_eq!(max_placeholder("select $$ $7 $$, $tag$ $8 $tag$, $2"), 2);
        assert_eq!(max_placeholder("select a$1 from t"), 0);
        assert_eq!(max_placeholder("select 'it''s $9', $10"), 10);
        assert_eq!(max_placeholder("select /* /* $3 */ $4 */ $1"), 1);
    }

    #[test]
    fn fragments_fill_and_map_back_to_the_plan_file() {
        let mut f = BTreeMap::new();
        f.insert("vis".to_string(), "p.visibility = 'visible'".to_string());
        let r = render(
            "plans/x.sql",
            "select 1\nwhere {{vis}}\nand  x",
            &f,
            "member",
        )
        .unwrap();
        assert_eq!(r.text, "select 1\nwhere p.visibility = 'visible'\nand  x");
        // 'x' in the output maps to 'x' in the source.
        let out = r.text.rfind('x').unwrap();
        let src = r.source_offset(out);
        assert_eq!(&r.source()[src..src + 1], "x");
        // A position inside the fragment maps to its `{{`.
        let inside = r.text.find("visible").unwrap();
        assert_eq!(&r.source()[r.source_offset(inside)..][..2], "{{");
    }

    #[test]
    fn fragment_without_value_names_file_line_and_column() {
        let e = render(
            "plans/x.sql",
            "select 1\nwhere {{vis}}",
            &BTreeMap::new(),
            "member",
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("plans/x.sql:2:7: fragment `vis` has no value"),
            "{}",
            e.0
        );
    }

    #[test]
    fn a_fragment_marker_must_close_on_its_line() {
        // Found by fuzzing: the name between a `{{` and a `}}` lines later was quoted whole,
        // and the message spanned lines.
        let e = render(
            "plans/x.sql",
            "select 1\nwhere {{vis\nand x = 1 -- }}",
            &BTreeMap::new(),
            "member",
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("plans/x.sql:2:7: `{{` without a closing `}}` on its line\n"),
            "{}",
            e.0
        );
        let e = render("p", "{{a b}}", &BTreeMap::new(), "m").unwrap_err();
        assert!(
            e.0.starts_with("p:1:1: \"{{a b}}\" is not a fragment name"),
            "{}",
            e.0
        );
    }

    #[test]
    fn parameters_become_sql_literals() {
        assert_eq!(to_sql_literal(&toml::Value::Integer(4711)).unwrap(), "4711");
        assert_eq!(
            to_sql_literal(&toml::Value::String("it's".into())).unwrap(),
            "'it''s'"
        );
        assert_eq!(to_sql_literal(&toml::Value::Float(1.5)).unwrap(), "1.5");
        assert!(to_sql_literal(&toml::Value::Array(vec![])).is_err());
        assert!(to_sql_literal(&toml::Value::String("a\0b".into())).is_err());
    }

    // Regression: a `{{name}}` in a comment or a literal was filled like one in the SQL (and
    // required a value), so notes about a fragment moved errors onto the note.
    #[test]
    fn fragments_in_comments_and_literals_are_left_as_written() {
        let source = "-- {{a}}\nSELECT /* /* {{b}} */ {{c}} */ '{{d}}', E'{{e}}', $$ {{f}} $$,\n  \
                      $t$ {{g}} $t$, \"{{h}}\", B'{{i}}' -- {{j}}\r{{vis}} /* {{k}}";
        let t = PlanTemplate::read("p", source).unwrap();
        let names = |ms: Vec<&Marker>| ms.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(t.placeholders.iter().collect()), ["vis"]);
        assert_eq!(
            names(t.dormant.iter().map(|(m, _)| m).collect()),
            ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
        );
        assert_eq!(t.dormant[0].1, "a comment");
        assert_eq!(t.dormant[3].1, "a string literal");
        assert_eq!(t.dormant[7].1, "a quoted identifier");
        let mut f = BTreeMap::new();
        f.insert("vis".to_string(), "true".to_string());
        let r = render("p", source, &f, "m").unwrap();
        assert_eq!(r.text, source.replace("\r{{vis}}", "\rtrue"));
    }

    // Regression: a value with a newline, filled into a `--` comment, ended the comment and put
    // SQL after it; the server's error there was located on the comment.
    #[test]
    fn a_fragment_value_cannot_end_a_comment() {
        let source = "SELECT 1 -- see {{vis}}\nFROM t WHERE {{vis}} AND y";
        let mut f = BTreeMap::new();
        f.insert("vis".to_string(), "a\nOR b".to_string());
        let r = render("p", source, &f, "m").unwrap();
        assert_eq!(
            r.text,
            "SELECT 1 -- see {{vis}}\nFROM t WHERE a\nOR b AND y"
        );
        // An error in the value is located at the placeholder in the SQL, line 2 …
        let or = r.source_offset(r.text.find("OR").unwrap());
        assert_eq!(crate::errors::line_col(source, or), (2, 14));
        // … and one after it at its own place.
        let y = r.source_offset(r.text.rfind('y').unwrap());
        assert_eq!(&source[y..], "y");
    }

    #[test]
    fn a_marker_in_a_comment_is_not_checked_and_one_in_the_sql_is() {
        for ok in [
            "SELECT 1 -- {{post visibility}}",
            "SELECT 1 /* {{ */",
            "SELECT '{{a\nb}}'",
            "SELECT 1 -- {{a--b}}",
        ] {
            assert!(PlanTemplate::read("p", ok).is_ok(), "{ok}");
        }
        let e = PlanTemplate::read("p", "SELECT 1 WHERE {{a--b}}")
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("p:1:16: \"{{a--b}}\" is not a fragment name: `--`"),
            "{e}"
        );
        // Spaces around the name are allowed, and the lexer reads on after the marker.
        let t = PlanTemplate::read("p", "SELECT {{ a-b }}'{{x}}' -- {{y}}\n{{c}}").unwrap();
        let names: Vec<&str> = t.placeholders.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["a-b", "c"]);
        assert_eq!(t.dormant.len(), 2);
    }

    #[test]
    fn a_dormant_marker_search_is_linear() {
        // Many `{{` and one `}}` far away, in a comment: found once, not once per `{{`.
        let source = format!("SELECT 1 -- {}}}}}", "{{".repeat(500_000));
        let started = std::time::Instant::now();
        let t = PlanTemplate::read("p", &source).unwrap();
        assert!(t.dormant.is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn an_empty_fragment_maps_the_text_after_it_to_the_plan_file() {
        let mut f = BTreeMap::new();
        f.insert("extra".to_string(), String::new());
        let source = "SELECT 1 FROM t WHERE true{{extra}} AND x";
        let r = render("p", source, &f, "m").unwrap();
        assert_eq!(r.text, "SELECT 1 FROM t WHERE true AND x");
        let after = r.source_offset(r.text.find(" AND").unwrap());
        assert_eq!(&source[after..], " AND x");
        assert_eq!(r.source_offset(r.text.len()), source.len());
    }
}

#[cfg(test)]
mod loading {
    use super::*;

    const PLAN: &str = "SELECT p.id FROM posts p\nWHERE p.thread_id = $1\n  AND {{vis}}\n";
    const PROJECT: &str = "[scopes.member]\nfragments = { vis = \"p.visibility = 'visible'\" }\n";

    fn error(expectation: &str, plan: Option<&str>, project: Option<&str>) -> String {
        load_texts(expectation, plan, project).unwrap_err().0
    }

    #[test]
    fn a_project_in_memory_loads_like_a_folder() {
        let p = load_texts(
            "params = [7]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
            Some(PLAN),
            Some(PROJECT),
        )
        .unwrap();
        let c = &p.read_paths[0].checks[0];
        assert_eq!(p.read_paths[0].name, "path");
        assert_eq!(p.read_paths[0].plan_path, "plans/path.sql");
        assert!(c.sql.text.ends_with("AND p.visibility = 'visible'\n"));
        assert_eq!(c.params, ["7"]);
    }

    #[test]
    fn crlf_and_a_byte_order_mark_are_read_as_plain_text() {
        let source = Source::Memory(vec![
            (
                "expectations/path.toml".into(),
                b"\xef\xbb\xbfparams = [1]\r\n[scopes.member]\r\nindex = \"i\"\r\n".to_vec(),
            ),
            (
                "plans/path.sql".into(),
                b"\xef\xbb\xbfSELECT $1\r\nWHERE {{vis}}\r\n".to_vec(),
            ),
            (
                "plancheck.toml".into(),
                PROJECT.replace('\n', "\r\n").into(),
            ),
        ]);
        let p = load(&source, &Filter::default()).unwrap();
        assert!(
            p.read_paths[0].checks[0]
                .sql
                .text
                .starts_with("SELECT $1\r\n")
        );
        // An error on the first line of a file with a byte-order mark: the column the editor shows.
        let source = Source::Memory(vec![(
            "expectations/path.toml".into(),
            b"\xef\xbb\xbfparams = \"1\"\n".to_vec(),
        )]);
        let e = load(&source, &Filter::default()).unwrap_err().0;
        assert!(
            e.starts_with("expectations/path.toml:1:10: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn bytes_that_are_not_text_are_located() {
        let e = decode("plans/x.sql", b"SELECT 1\nWHERE \xe9t\xe9".to_vec())
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("plans/x.sql:2:7: not UTF-8 text: byte 0xE9"),
            "{e}"
        );
        let e = decode("plans/x.sql", b"SELECT 1\0".to_vec()).unwrap_err().0;
        assert!(e.starts_with("plans/x.sql:1:9: a NUL character"), "{e}");
        let e = decode("x.toml", b"\xff\xfe[\0".to_vec()).unwrap_err().0;
        assert!(e.contains("UTF-16"), "{e}");
        assert_eq!(decode("x", b"\xef\xbb\xbfok".to_vec()).unwrap(), "ok");
    }

    #[test]
    fn every_file_error_names_file_line_and_column() {
        let ok_scope = "[scopes.member]\nindex = \"i\"\n";
        for (expectation, plan, project, wanted) in [
            (
                "",
                Some("SELECT 1"),
                None,
                "expectations/path.toml:1:1: declares no scope",
            ),
            (
                ok_scope,
                None,
                None,
                "expectations/path.toml:1:1: the plan file plans/path.sql",
            ),
            (
                ok_scope,
                Some(" \n"),
                None,
                "plans/path.sql:1:1: the plan file is empty",
            ),
            (
                ok_scope,
                Some("SELECT $1"),
                None,
                "plans/path.sql:1:8: plans/path.sql uses 1",
            ),
            (
                "params = [1, 2]\n[scopes.member]\nindex = \"i\"\n",
                Some("SELECT $1"),
                None,
                "expectations/path.toml:1:14: plans/path.sql uses 1 parameter ($1) but",
            ),
            (
                ok_scope,
                Some("SELECT $1"),
                Some("[scopes.member]\nparams = [[1]]\n"),
                "plancheck.toml:2:11: parameter $1: an array",
            ),
            (
                "budget = { buffers = 0 }\n[scopes.member]\nindex = \"i\"\n",
                Some("SELECT 1"),
                None,
                "expectations/path.toml:1:22: budget `buffers` must be a number above 0",
            ),
            (
                "relative = { to = \"nowhere\", max_ratio = 2 }\n[scopes.member]\nindex = \"i\"\n",
                Some("SELECT 1"),
                None,
                "expectations/path.toml:1:12: relative budget: no read path `nowhere`",
            ),
            (
                "[scopes.member]\nindex = \"i\"\nsetup = [\"\"]\n",
                Some("SELECT 1"),
                None,
                "expectations/path.toml:3:10: setup statement 1 is empty",
            ),
            (
                "allow_seq_scan = [\"a.b.c\"]\n[scopes.member]\nindex = \"i\"\n",
                Some("SELECT 1"),
                None,
                "expectations/path.toml:1:19: `allow_seq_scan` lists relations",
            ),
        ] {
            let e = error(expectation, plan, project);
            assert!(e.starts_with(wanted), "wanted {wanted:?}, got:\n{e}");
            assert!(e.contains("\n  |\n"), "no snippet:\n{e}");
        }
    }

    #[test]
    fn index_names_are_read_as_sql_names() {
        for good in [
            "posts_thread_visible_idx",
            "public.posts_thread_visible_idx",
            "\"Weird Idx\"",
            "public.\"Weird \"\"Idx\"",
            "\"a.b\".\"c\"",
            " public . x ",
            "Posts_Idx",
            "índice",
        ] {
            assert_eq!(index_name_problem(good), None, "{good}");
        }
        for (bad, at) in [
            ("a.b.c.d", 3),
            ("a.b.c", 3),
            ("\"unterminated", 0),
            ("public.\"x", 7),
            ("\"\"", 0),
            ("a..b", 2),
            ("a.", 2),
            (".a", 0),
            ("posts thread idx", 6),
            ("ab\"c", 2),
            ("\"a\"b", 3),
            ("a\u{1}", 1),
        ] {
            let problem = index_name_problem(bad);
            assert_eq!(
                problem.as_ref().map(|p| p.0),
                Some(at),
                "{bad}: {problem:?}"
            );
        }
        let e = error(
            "[scopes.member]\nindex = \"a.b.c.d\"\n",
            Some("SELECT 1"),
            None,
        );
        assert!(
            e.starts_with(
                "expectations/path.toml:2:13: `index = \"a.b.c.d\"`: more than two parts"
            ),
            "{e}"
        );
    }

    #[test]
    fn names_that_differ_only_in_case_and_capital_extensions_are_refused() {
        let file = |p: &str| (p.to_string(), b"[scopes.member]\nindex = \"i\"\n".to_vec());
        let source = Source::Memory(vec![
            file("expectations/a.toml"),
            file("expectations/A.toml"),
        ]);
        let e = load(&source, &Filter::default()).unwrap_err().0;
        assert!(e.contains("differ only in case"), "{e}");
        let source = Source::Memory(vec![
            file("expectations/a.toml"),
            file("expectations/b.TOML"),
        ]);
        let e = load(&source, &Filter::default()).unwrap_err().0;
        assert!(e.starts_with("expectations/b.TOML: not read"), "{e}");
    }

    #[test]
    fn a_parameter_the_server_refuses_is_located_where_it_is_written() {
        let p = load_texts(
            "params = [1, \"x\"]\n[scopes.member]\nindex = \"i\"\n",
            Some("SELECT $1, $2"),
            None,
        )
        .unwrap();
        let c = &p.read_paths[0].checks[0];
        // "1, 'x'": the second value starts at byte 3.
        assert_eq!(c.param_at(0), Some(0));
        assert_eq!(c.param_at(1), None);
        assert_eq!(c.param_at(4), Some(1));
        let e = c.locate_param(1, "invalid input syntax").unwrap();
        assert!(
            e.starts_with("expectations/path.toml:1:14: invalid input syntax"),
            "{e}"
        );
        assert_eq!(c.locate_param(2, "m"), None);
    }

    #[test]
    fn a_setup_statement_the_server_refuses_is_located_in_the_file_that_gives_it() {
        let p = load_texts(
            "[scopes.member]\nindex = \"i\"\n",
            Some("SELECT 1"),
            Some("[scopes.member]\nsetup = [\"SET ROLE a\", \"SET ROLE b\"]\n"),
        )
        .unwrap();
        let c = &p.read_paths[0].checks[0];
        assert_eq!(c.setup, ["SET ROLE a", "SET ROLE b"]);
        let e = c.locate_setup(1, "role \"b\" does not exist").unwrap();
        assert!(e.starts_with("plancheck.toml:2:24: role"), "{e}");
        assert_eq!(c.locate_setup(2, "m"), None);
    }

    // Regression: a `{{vis}}` in a comment before the SQL's own was the one reported without a
    // value, at the comment.
    #[test]
    fn a_fragment_without_value_is_located_in_the_sql_not_in_a_comment() {
        let e = error(
            "[scopes.member]\nindex = \"i\"\n",
            Some("-- {{vis}} is filled per scope\nSELECT 1 WHERE {{vis}}\n"),
            None,
        );
        assert!(e.starts_with("plans/path.sql:2:16: fragment `vis`"), "{e}");
        assert!(e.contains("2 | SELECT 1 WHERE {{vis}}\n"), "{e}");
    }

    #[test]
    fn parameters_in_comments_and_literals_are_not_counted() {
        let p = load_texts(
            "params = [1]\n[scopes.member]\nindex = \"i\"\n",
            Some("SELECT $1 -- or $3\n/* $2 */, '$4', $$ $5 $$"),
            None,
        )
        .unwrap();
        assert_eq!(p.read_paths[0].checks[0].params, ["1"]);
        // Too few values: located at the `$2` in the SQL, not the `$3` in the comment.
        let e = error(
            "[scopes.member]\nindex = \"i\"\n",
            Some("SELECT 1 -- $3\n  , $2"),
            None,
        );
        assert!(
            e.starts_with("plans/path.sql:2:5: plans/path.sql uses 2"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_fragment_value_is_allowed() {
        let p = load_texts(
            "[scopes.member]\nindex = \"i\"\nfragments = { extra = \"\" }\n",
            Some("SELECT 1 FROM t WHERE true {{extra}}\n"),
            None,
        )
        .unwrap();
        assert_eq!(
            p.read_paths[0].checks[0].sql.text,
            "SELECT 1 FROM t WHERE true \n"
        );
    }

    #[test]
    fn a_fragment_the_plan_does_not_use_is_an_error_at_its_name() {
        for (expectation, wanted) in [
            (
                "[scopes.member]\nindex = \"i\"\nfragments = { vis = \"true\", vsi = \"x\" }\n",
                "expectations/path.toml:3:29: fragment `vsi` fills nothing: plans/path.sql has \
                 no `{{vsi}}` placeholder (it has `{{vis}}`); remove the fragment",
            ),
            (
                "[scopes.member]\nindex = \"i\"\n[scopes.member.fragments]\nvis = \"true\"\n\
                 \"vsi\" = \"x\"\n",
                "expectations/path.toml:5:1: fragment `vsi` fills nothing",
            ),
            (
                "[scopes.member]\nindex = \"i\"\nfragments.vis = \"true\"\nfragments.vsi = \"x\"\n",
                "expectations/path.toml:4:11: fragment `vsi` fills nothing",
            ),
            (
                "[scopes.member]\nindex = \"i\"\nfragments = { vis = \"true\", \"a b\" = \"x\" }\n",
                "expectations/path.toml:3:29: \"a b\" is not a fragment name (letters, digits, _ \
                 and -): no placeholder can use it",
            ),
        ] {
            let e = error(expectation, Some(PLAN), None);
            assert!(e.starts_with(wanted), "wanted {wanted:?}, got:\n{e}");
        }
        // Where the plan holds the name only in a comment, the message says so.
        let e = error(
            "[scopes.member]\nindex = \"i\"\nfragments = { vis = \"true\" }\n",
            Some("SELECT 1\n  -- AND {{vis}}\n"),
            None,
        );
        assert!(
            e.starts_with(
                "expectations/path.toml:3:15: fragment `vis` fills nothing: plans/path.sql has \
                 no `{{vis}}` placeholder (it has no placeholder); remove the fragment or correct \
                 its name (the `{{vis}}` at plans/path.sql:2:10 is inside a comment, where it is \
                 text, not a placeholder)\n"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_fragment_from_plancheck_toml_may_go_unused() {
        // plancheck.toml's fragments serve every read path checked in the scope: a plan without
        // the placeholder, or without any, is no mistake.
        let project = "[scopes.member]\nfragments = { vis = \"true\", other = \"1\" }\n";
        for plan in [PLAN, "SELECT 1", "SELECT 1 -- {{other}}"] {
            let p = load_texts(
                "[scopes.member]\nindex = \"i\"\n",
                Some(&plan.replace("$1", "7")),
                Some(project),
            )
            .unwrap_or_else(|e| panic!("{plan}: {}", e.0));
            assert_eq!(p.read_paths.len(), 1);
        }
    }

    /// A project from (path, text) pairs.
    fn load_files(files: &[(&str, String)], filter: &Filter) -> Result<Project, BadInput> {
        let files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
            .collect();
        load(&Source::Memory(files), filter)
    }

    /// Read paths `a` (scope `member`, with `relative` under it) and `b` (scopes `member` and
    /// `all`).
    fn load_relative(relative: &str, filter: &Filter) -> Result<Project, BadInput> {
        load_files(
            &[
                (
                    "expectations/a.toml",
                    format!("[scopes.member]\nindex = \"i\"\nrelative = {relative}\n"),
                ),
                ("plans/a.sql", "SELECT 1".into()),
                (
                    "expectations/b.toml",
                    "[scopes.member]\nindex = \"i\"\n[scopes.all]\nindex = \"i\"\n".into(),
                ),
                ("plans/b.sql", "SELECT 2".into()),
            ],
            filter,
        )
    }

    #[test]
    fn a_relative_budget_may_compare_with_another_scope() {
        let relative_of = |relative: &str| {
            let p = load_relative(relative, &Filter::default()).unwrap();
            p.read_paths[0].checks[0].budget.relative.clone().unwrap()
        };
        let r = relative_of("{ to = \"b\", scope = \"all\", max_ratio = 2 }");
        assert_eq!(
            r,
            Relative {
                to: "b".into(),
                scope: Some("all".into()),
                max_ratio: 2.0
            }
        );
        // Its own scope, written or not, is None.
        for relative in [
            "{ to = \"b\", max_ratio = 2 }",
            "{ to = \"b\", scope = \"member\", max_ratio = 2 }",
        ] {
            assert_eq!(relative_of(relative).scope, None, "{relative}");
        }
    }

    #[test]
    fn a_relative_budget_names_a_scope_its_read_path_is_checked_in() {
        let e = load_relative(
            "{ to = \"b\", scope = \"al\", max_ratio = 2 }",
            &Filter::default(),
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with(
                "expectations/a.toml:3:32: relative budget: \"b\" is not checked in scope \"al\" \
                 (its scopes: all, member)\n"
            ),
            "{e}"
        );
        assert!(e.contains("\n  |\n3 | relative = "), "{e}");
        // Without `scope`, the check's own: located at the `relative` table.
        let e = load_files(
            &[
                (
                    "expectations/a.toml",
                    "[scopes.guest]\nindex = \"i\"\nrelative = { to = \"b\", max_ratio = 2 }\n"
                        .into(),
                ),
                ("plans/a.sql", "SELECT 1".into()),
                (
                    "expectations/b.toml",
                    "[scopes.member]\nindex = \"i\"\n".into(),
                ),
                ("plans/b.sql", "SELECT 2".into()),
            ],
            &Filter::default(),
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with(
                "expectations/a.toml:3:12: relative budget: \"b\" is not checked in scope \
                 \"guest\" (its scopes: member)\n"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_read_path_may_be_relative_to_itself_in_another_scope() {
        let expectation = "[scopes.member]\nindex = \"i\"\nrelative = { to = \"path\", scope = \
                           \"all\", max_ratio = 2 }\n[scopes.all]\nindex = \"i\"\n";
        let p = load_texts(expectation, Some("SELECT 1"), None).unwrap();
        let check = |scope: &str| {
            p.read_paths[0]
                .checks
                .iter()
                .find(|c| c.scope == scope)
                .unwrap()
                .budget
                .relative
                .clone()
        };
        let rel = check("member").unwrap();
        assert_eq!(
            (rel.to.as_str(), rel.scope.as_deref()),
            ("path", Some("all"))
        );
        assert_eq!(check("all"), None);
        // Not in its own scope: written for the whole expectation, it applies to `all` too.
        for (expectation, wanted) in [
            (
                "relative = { to = \"path\", scope = \"all\", max_ratio = 2 }\n[scopes.member]\n\
                 index = \"i\"\n[scopes.all]\nindex = \"i\"\n",
                "expectations/path.toml:1:35: a read path cannot be relative to itself in the \
                 same scope (`all`)",
            ),
            (
                "relative = { to = \"path\", max_ratio = 2 }\n[scopes.member]\nindex = \"i\"\n",
                "expectations/path.toml:1:19: a read path cannot be relative to itself in the \
                 same scope; `scope = \"NAME\"`",
            ),
        ] {
            let e = error(expectation, Some("SELECT 1"), None);
            assert!(e.starts_with(wanted), "wanted {wanted:?}, got:\n{e}");
        }
    }

    #[test]
    fn the_scope_a_relative_budget_compares_with_runs_under_another_scope_flag() {
        let runs = |relative: &str, only: &[&str]| {
            let filter = Filter {
                only: only.iter().map(|s| s.to_string()).collect(),
                scopes: vec!["member".into()],
            };
            let p = load_relative(relative, &filter).unwrap();
            p.read_paths
                .iter()
                .flat_map(|r| r.checks.iter().map(|c| format!("{} [{}]", r.name, c.scope)))
                .collect::<Vec<_>>()
        };
        let to_all = "{ to = \"b\", scope = \"all\", max_ratio = 2 }";
        assert_eq!(runs(to_all, &[]), ["a [member]", "b [all]", "b [member]"]);
        assert_eq!(runs(to_all, &["a"]), ["a [member]", "b [all]"]);
        // Without `scope`: as before, the other read path in the same scope.
        assert_eq!(
            runs("{ to = \"b\", max_ratio = 2 }", &["a"]),
            ["a [member]", "b [member]"]
        );
    }
}
