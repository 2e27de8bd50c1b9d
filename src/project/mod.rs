//! project: `plancheck.toml`, `expectations/NAME.toml` and `plans/NAME.sql`, read, validated and
//! resolved into the checks to run. Every error names the file, line and column.
//!
//! Precedence, written down once: a scope's settings come from the expectation's
//! `[scopes.NAME]` table first, then (for params) the expectation's top-level `params`, then the
//! project's `[scopes.NAME]` in `plancheck.toml`. Fragments merge key by key, the expectation's
//! value winning; `params` and `setup` are replaced whole, never merged. A fragment an
//! expectation gives must fill a placeholder of its plan; one from `plancheck.toml` serves many
//! read paths and need not.
//!
//! The files, in the order a load goes through them:
//!
//! - `mod.rs`: what the module gives (the types below, [`load`]);
//! - `source.rs`: reading a project's files from a folder, the binary or memory, as text;
//! - `schema.rs`: the files' TOML schema (serde structs, every rejectable value spanned);
//! - `resolve.rs`: scopes and precedence: plancheck.toml's scopes merged with an expectation's
//!   into the checks (fragments, params, setup, settings, budgets, relative targets);
//! - `plan.rs`: the plan file an expectation checks: found, not empty, one query;
//! - `template.rs`: `{{fragment}}` placeholders filled, and offsets mapped back into the plan;
//! - `values.rs`: values vetted and converted (settings, setup, fragments, parameter literals);
//! - `names.rs`: names people write (read paths, scopes, indexes, relations);
//! - `place.rs`: where a value is written, and how a message quotes it;
//! - `filter.rs`: `--only`/`--scope`, keeping the checks relative budgets compare with.

mod baselines;
mod filter;
pub mod migration;
mod names;
mod place;
mod plan;
mod resolve;
pub mod safety;
mod schema;
mod source;
pub mod starter;
mod template;
mod values;

pub use baselines::Baselines;

use std::path::PathBuf;

use crate::error::{BadInput, located};
use crate::model::Budget;

pub use names::is_safe_name;
pub use values::max_placeholder;

pub use place::Place;
use template::Segment;

/// Where the project's files come from: a folder, the reference project built into the binary,
/// or files held in memory (path relative to the project root, contents) for tests and fuzzing,
/// read through the same code as a folder's. Read in `source.rs`.
#[derive(Debug, Clone)]
pub enum Source {
    Dir(PathBuf),
    Embedded,
    Memory(Vec<(String, Vec<u8>)>),
}

/// Everything to check, validated.
#[derive(Debug, Clone)]
pub struct Project {
    /// Read from a folder (not the embedded reference project, not memory): its files' paths
    /// are places a user or CI annotations can open.
    pub on_disk: bool,
    pub read_paths: Vec<ReadPath>,
    /// Every scope name declared anywhere (project or expectation), for `--scope` validation.
    pub scope_names: Vec<String>,
    /// Files of the project plancheck does not read, each with why: a plan with no
    /// expectation, a file in `expectations/` that is no `NAME.toml`. Said as warnings.
    pub unread: Vec<String>,
    /// The p95 budgets of `plancheck ladder`'s rungs (`[ladder]` in plancheck.toml).
    pub ladder: crate::model::LadderBudgets,
}

/// A read path and the scopes it is checked under.
#[derive(Debug, Clone)]
pub struct ReadPath {
    pub name: String,
    /// `plans/NAME.sql` as the user sees it.
    pub plan_path: String,
    pub expectation_path: String,
    pub allow_seq_scan: Vec<String>,
    /// Where each `allow_seq_scan` entry is written in the expectation file.
    allow_seq_scan_at: Vec<usize>,
    pub checks: Vec<ScopeCheck>,
    /// The expectation file's text, for errors found once every expectation is read.
    expectation_text: String,
    /// Each relative budget's comparison, checked once every expectation is read.
    relatives: Vec<RelativeTarget>,
}

impl ReadPath {
    /// The expectation file's text, as it was read when the project was loaded.
    pub fn expectation_text(&self) -> &str {
        &self.expectation_text
    }

    /// The line (1-based) where the expectation names scope `scope`: its `[scopes.NAME]` header,
    /// or wherever the key is written (`scopes.NAME.index = …`, an inline table).
    pub fn scope_line(&self, scope: &str) -> Option<usize> {
        scope_line(&self.expectation_text, scope)
    }

    /// `message` located at `allow_seq_scan` entry `index` in the expectation file, with the
    /// line shown.
    pub fn locate_allowed(&self, index: usize, message: &str) -> String {
        match self.allow_seq_scan_at.get(index) {
            Some(&at) => located(&self.expectation_path, &self.expectation_text, at, message),
            None => format!("{}: {message}", self.expectation_path),
        }
    }
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
    /// when the scope accepts several. `None` for `index = false`: a read path no one index
    /// serves (a board index, a permission filter), judged by its budget and the whole-read rule.
    pub index: Option<String>,
    /// The other indexes the scope accepts in its place (`index = ["a", "b"]`), in order.
    pub also: Vec<String>,
    /// The plan baseline `plancheck accept` recorded for this check, if there is one.
    pub baseline: Option<String>,
    /// What the scope declares of its index's twin, for `lint`.
    pub twin: Option<crate::model::TwinDecl>,
    pub sql: RenderedSql,
    /// Parameter values as SQL literals, for `$1`, `$2`, ….
    pub params: Vec<String>,
    pub setup: Vec<String>,
    /// Declared planner settings (`settings = { … }`), name and value, applied before the setup.
    pub settings: Vec<(String, String)>,
    pub budget: Budget,
    /// This check's share of `plancheck ladder`'s requests (`share = 0.38`), when given.
    pub share: Option<f64>,
    /// Where each parameter value is written, for an error the server finds in one.
    param_places: Vec<Place>,
    /// Where each setup statement is written.
    setup_places: Vec<Place>,
}

impl Project {
    /// Every index a check requires or accepts, as the expectations name them, once each.
    pub fn required_indexes(&self) -> Vec<String> {
        let names: std::collections::BTreeSet<&String> = self
            .read_paths
            .iter()
            .flat_map(|r| &r.checks)
            .flat_map(|c| c.index.iter().chain(&c.also))
            .collect();
        names.into_iter().cloned().collect()
    }

    /// The application settings (dotted names, `app.user_id`) any scope's setup names: set or
    /// reset by `SET`/`RESET`, or by `set_config` with a literal name. The guard reads them back
    /// after the setup (for the report) and after each run (a read path may not change them).
    pub fn custom_settings(&self) -> Vec<String> {
        let dialect = crate::sql::Dialect::default();
        let mut names = std::collections::BTreeSet::new();
        for check in self.read_paths.iter().flat_map(|rp| &rp.checks) {
            for statement in &check.setup {
                match crate::sql::classify(statement, dialect) {
                    crate::sql::Kind::Set { name, .. }
                    | crate::sql::Kind::Reset { name: Some(name) } => {
                        names.insert(name);
                    }
                    _ => {}
                }
                for call in crate::sql::set_config_calls(statement, dialect) {
                    names.extend(call.name.map(|n| n.to_ascii_lowercase()));
                }
            }
        }
        names
            .into_iter()
            .filter(|n| crate::project::safety::is_custom(n))
            .collect()
    }
}

impl ScopeCheck {
    /// Where parameter value `index` (0 for `$1`) is written: for an error the server finds in
    /// the value (a text it cannot convert to the parameter's type). `None` when there is no
    /// such parameter.
    pub fn param_place(&self, index: usize) -> Option<&Place> {
        self.param_places.get(index)
    }

    /// Where setup statement `index` (0 for the first) is written (the expectation, or
    /// plancheck.toml): for a statement the server refuses. `None` when there is no such
    /// statement.
    pub fn setup_place(&self, index: usize) -> Option<&Place> {
        self.setup_places.get(index)
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

/// A plan's SQL with the scope's fragments filled in, and the map back to the plan file
/// (`template.rs` renders it and maps offsets back).
#[derive(Debug, Clone)]
pub struct RenderedSql {
    pub text: String,
    source: String,
    segments: Vec<Segment>,
}

/// What to load, as the command line narrowed it.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub only: Vec<String>,
    pub scopes: Vec<String>,
    /// `--partition`: this runner's share of the checks.
    pub partition: Option<Partition>,
}

pub use filter::Partition;

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

/// The line (1-based) where an expectation's text names scope `scope`.
fn scope_line(text: &str, scope: &str) -> Option<usize> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let toml::de::DeValue::Table(scopes) = doc.get_ref().get("scopes")?.get_ref() else {
        return None;
    };
    let (key, _) = scopes.get_key_value(scope)?;
    Some(crate::error::line_col(text, key.span().start).0)
}

/// A scope one expectation names and nothing else declares (not `plancheck.toml`, no other
/// expectation), near another scope of the project ([`near_enough`]), is a misspelling: refused
/// at its line, with the name meant when that one is established (in `plancheck.toml`, or in
/// two expectations or more), else naming both. A new scope far from every other is legitimate
/// (a read path only one role reads); one meant to sit beside a near name is declared in
/// `plancheck.toml`, which settles it.
fn misspelt_scopes(declared: &[String], files: &[Declared]) -> Result<(), BadInput> {
    // In which expectations each scope is named.
    let mut uses: std::collections::BTreeMap<&str, Vec<&Declared>> = Default::default();
    for f in files {
        for scope in &f.scopes {
            uses.entry(scope.as_str()).or_default().push(f);
        }
    }
    let in_config = |scope: &str| declared.iter().any(|d| d == scope);
    for f in files {
        for scope in &f.scopes {
            let scope = scope.as_str();
            if in_config(scope) || uses.get(scope).is_some_and(|u| u.len() > 1) {
                continue;
            }
            let near = declared
                .iter()
                .map(String::as_str)
                .chain(uses.keys().copied())
                .filter(|k| *k != scope)
                .map(|k| (strsim::levenshtein(k, scope), k))
                .filter(|(d, k)| near_enough(*d, k, scope))
                .min();
            let Some((_, near)) = near else {
                continue;
            };
            let established = in_config(near) || uses.get(near).is_some_and(|u| u.len() > 1);
            let settle = format!(
                "(a new scope this close to another is declared in plancheck.toml as \
                 [scopes.{scope}])"
            );
            let message = if established {
                format!("scope `{scope}` is declared nowhere else; did you mean `{near}`? {settle}")
            } else {
                let there = uses
                    .get(near)
                    .and_then(|u| u.first())
                    .map_or("plancheck.toml", |d| d.path.as_str());
                format!(
                    "scope `{scope}` here and scope `{near}` in {there} are each declared once \
                     and differ by a letter or two: is one misspelt? {settle}"
                )
            };
            return Err(match scope_line(&f.text, scope) {
                Some(line) => BadInput(format!("{}:{line}: {message}", f.path)),
                None => BadInput(format!("{}: {message}", f.path)),
            });
        }
    }
    Ok(())
}

/// The scopes one expectation declares, read before anything is resolved: a misspelt scope is
/// said as one, not as the fragment it lacks.
struct Declared {
    path: String,
    text: String,
    scopes: Vec<String>,
}

/// The scopes of every expectation that reads as TOML (one that does not is reported when it
/// is resolved).
fn declared_scopes(source: &Source, names: &[String]) -> Result<Vec<Declared>, BadInput> {
    let mut out = Vec::new();
    for name in names {
        let rel = format!("expectations/{name}.toml");
        let Some(text) = source.read(&rel)? else {
            continue;
        };
        let Ok(table) = text.parse::<toml::Table>() else {
            continue;
        };
        let scopes = table
            .get("scopes")
            .and_then(toml::Value::as_table)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        out.push(Declared {
            path: source.display(&rel),
            text,
            scopes,
        });
    }
    Ok(out)
}

/// Whether two scope names `distance` edits apart are near enough to be one misspelt: one edit
/// in names of four characters or more, two in names of eight or more (`admn`/`admin`,
/// `moderatr`/`moderator`); short names (`a`, `b`) are told apart by design.
fn near_enough(distance: usize, a: &str, b: &str) -> bool {
    let shorter = a.chars().count().min(b.chars().count());
    match distance {
        1 => shorter >= 4,
        2 => shorter >= 8,
        _ => false,
    }
}

/// Reads and validates the whole project, then narrows it to the filter.
pub fn load(source: &Source, filter: &Filter) -> Result<Project, BadInput> {
    let config = resolve::read_config(source)?;
    let names = source.list("expectations", "toml")?;
    if names.is_empty() {
        return Err(BadInput(format!(
            "{}: no expectations (*.toml) found",
            source.display("expectations")
        )));
    }
    let mut scope_names: Vec<String> = config.file.scopes.keys().cloned().collect();
    misspelt_scopes(&scope_names, &declared_scopes(source, &names)?)?;
    let mut read_paths = Vec::new();
    for name in &names {
        let rp = resolve::load_expectation(source, &config, name)?;
        for c in &rp.checks {
            if !scope_names.contains(&c.scope) {
                scope_names.push(c.scope.clone());
            }
        }
        read_paths.push(rp);
    }
    scope_names.sort();

    filter::check_names(filter, &read_paths, &names, &scope_names)?;
    resolve::check_relatives(&read_paths, &names)?;
    let read_paths = filter::narrow(read_paths, filter);
    // A plans/ folder that cannot be listed as read paths (a file name no read path may have)
    // says nothing here: only the expectations' plans are read.
    let mut unread: Vec<String> = source
        .list("plans", "sql")
        .unwrap_or_default()
        .into_iter()
        .filter(|plan| !names.contains(plan))
        .map(|plan| {
            format!(
                "{}: not checked: no expectations/{plan}.toml says what it must use",
                source.display(&format!("plans/{plan}.sql"))
            )
        })
        .collect();
    unread.extend(
        source
            .strays("expectations", "toml")
            .unwrap_or_default()
            .into_iter()
            .map(|path| format!("{path}: not read: an expectation is expectations/NAME.toml")),
    );
    let ladder = resolve::ladder(&config)?;
    Ok(Project {
        on_disk: matches!(source, Source::Dir(_)),
        read_paths,
        scope_names,
        unread,
        ladder,
    })
}

/// What the tests of several files share: a plan with a placeholder, a project filling it, and
/// projects loaded from memory.
#[cfg(test)]
mod testing {
    use super::*;

    pub(super) const PLAN: &str =
        "SELECT p.id FROM posts p\nWHERE p.thread_id = $1\n  AND {{vis}}\n";
    pub(super) const PROJECT: &str =
        "[scopes.member]\nfragments = { vis = \"p.visibility = 'visible'\" }\n";

    pub(super) fn error(expectation: &str, plan: Option<&str>, project: Option<&str>) -> String {
        load_texts(expectation, plan, project).unwrap_err().0
    }

    /// A project from (path, text) pairs.
    pub(super) fn load_files(
        files: &[(&str, String)],
        filter: &Filter,
    ) -> Result<Project, BadInput> {
        let files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
            .collect();
        load(&Source::Memory(files), filter)
    }

    /// Read paths `a` (scope `member`, with `relative` under it) and `b` (scopes `member` and
    /// `all`).
    pub(super) fn load_relative(relative: &str, filter: &Filter) -> Result<Project, BadInput> {
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
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

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
}

#[cfg(test)]
mod misspelt_scope_tests {
    use super::testing::load_files;
    use super::*;

    fn project(b_scopes: &str, config: Option<&str>) -> Result<Project, BadInput> {
        let both = "[scopes.member]\nindex = \"i\"\n[scopes.moderator]\nindex = \"j\"\n";
        let mut files = vec![
            ("expectations/a.toml", both.to_string()),
            ("plans/a.sql", "SELECT 1".to_string()),
            ("expectations/c.toml", both.to_string()),
            ("plans/c.sql", "SELECT 3".to_string()),
            ("expectations/b.toml", format!("# b\n{b_scopes}")),
            ("plans/b.sql", "SELECT 2".to_string()),
        ];
        if let Some(config) = config {
            files.push(("plancheck.toml", config.to_string()));
        }
        load_files(&files, &Filter::default())
    }

    #[test]
    fn a_scope_declared_nowhere_else_near_a_declared_one_is_refused_with_the_name_meant() {
        let e = project(
            "[scopes.member]\nindex = \"i\"\n[scopes.moderatr]\nindex = \"j\"\n",
            None,
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("expectations/b.toml:4: scope `moderatr` is declared nowhere else; did you mean `moderator`?"),
            "{e}"
        );
        // `admn` against plancheck.toml's `admin`.
        let e = project("[scopes.admn]\nindex = \"i\"\n", Some("[scopes.admin]\n"))
            .unwrap_err()
            .0;
        assert!(e.contains("did you mean `admin`?"), "{e}");
    }

    #[test]
    fn a_new_scope_far_from_every_other_or_declared_in_the_config_is_a_scope() {
        let p = project("[scopes.auditor]\nindex = \"i\"\n", None).unwrap();
        assert!(p.scope_names.contains(&"auditor".to_string()));
        // Declared in plancheck.toml: meant, however near.
        project(
            "[scopes.moderatr]\nindex = \"i\"\n",
            Some("[scopes.moderatr]\n"),
        )
        .unwrap();
        // Used by two expectations: a scope of the project.
        project(
            "[scopes.member]\nindex = \"i\"\n[scopes.moderator]\nindex = \"j\"\n",
            None,
        )
        .unwrap();
    }
}

#[cfg(test)]
mod scope_line_tests {
    use super::scope_line;

    #[test]
    fn a_scope_is_found_on_the_line_of_its_table() {
        let text = "# why\nallow_seq_scan = [\"forums\"]\n\n[scopes.member]\nindex = \"a\"\n\n\
                    [scopes.\"moderator\"]\nindex = \"b\"\n";
        assert_eq!(scope_line(text, "member"), Some(4));
        assert_eq!(scope_line(text, "moderator"), Some(7));
        assert_eq!(scope_line(text, "admin"), None);
        let dotted = "scopes.member.index = \"a\"\n[scopes.moderator]\n";
        assert_eq!(scope_line(dotted, "member"), Some(1));
        assert_eq!(scope_line(dotted, "moderator"), Some(2));
        assert_eq!(scope_line("not toml [", "member"), None);
    }
}
