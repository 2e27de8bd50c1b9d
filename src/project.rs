//! project: `plancheck.toml`, `expectations/NAME.toml` and `plans/NAME.sql`, read, validated and
//! resolved into the checks to run. Every error names the file, line and column.
//!
//! Precedence, written down once: a scope's settings come from the expectation's
//! `[scopes.NAME]` table first, then (for params) the expectation's top-level `params`, then the
//! project's `[scopes.NAME]` in `plancheck.toml`. Fragments merge key by key, the expectation's
//! value winning; `params` and `setup` are replaced whole, never merged.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::errors::{BadInput, located};
use crate::verdict::{Budget, Relative};

/// Where the project's files come from: a folder, or the reference project built into the binary.
#[derive(Debug, Clone)]
pub enum Source {
    Dir(PathBuf),
    Embedded,
}

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

impl Source {
    /// The contents of `rel` (`plans/x.sql`), or `None` when there is no such file.
    pub fn read(&self, rel: &str) -> Result<Option<String>, BadInput> {
        match self {
            Source::Embedded => Ok(embedded::FILES
                .iter()
                .find(|(p, _)| *p == rel)
                .map(|(_, text)| text.to_string())),
            Source::Dir(dir) => {
                let path = dir.join(rel);
                match fs::read(&path) {
                    Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
                        BadInput(format!(
                            "{}: not UTF-8 text (invalid byte at offset {})",
                            self.display(rel),
                            e.utf8_error().valid_up_to()
                        ))
                    }),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(BadInput(format!("{}: {e}", self.display(rel)))),
                }
            }
        }
    }

    /// Names (without extension) of the files in `dir` ending in `.ext`, sorted.
    pub fn list(&self, dir: &str, ext: &str) -> Result<Vec<String>, BadInput> {
        let suffix = format!(".{ext}");
        let mut names: Vec<String> = match self {
            Source::Embedded => embedded::FILES
                .iter()
                .filter_map(|(p, _)| p.strip_prefix(&format!("{dir}/")))
                .filter_map(|n| n.strip_suffix(&suffix))
                .map(str::to_owned)
                .collect(),
            Source::Dir(root) => {
                let path = root.join(dir);
                let entries = fs::read_dir(&path).map_err(|e| {
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
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if let Some(stem) = name.strip_suffix(&suffix)
                        && !stem.starts_with('.')
                    {
                        names.push(stem.to_owned());
                    }
                }
                names
            }
        };
        names.sort();
        Ok(names)
    }

    /// A path as the user should see it in a message.
    pub fn display(&self, rel: &str) -> String {
        match self {
            Source::Embedded => format!("(reference project) {rel}"),
            Source::Dir(dir) if dir == Path::new(".") => rel.to_string(),
            Source::Dir(dir) => dir.join(rel).display().to_string(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The files' schema. No `#[serde(flatten)]` and no internally tagged enums: both lose spans.

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ProjectFile {
    #[serde(default)]
    scopes: BTreeMap<String, Spanned<ProjectScope>>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct ProjectScope {
    #[serde(default)]
    fragments: BTreeMap<String, String>,
    params: Option<Spanned<Vec<toml::Value>>>,
    setup: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectationFile {
    plan: Option<Spanned<String>>,
    params: Option<Spanned<Vec<toml::Value>>>,
    #[serde(default)]
    allow_seq_scan: Vec<String>,
    budget: Option<Spanned<BudgetFile>>,
    relative: Option<Spanned<RelativeFile>>,
    #[serde(default)]
    scopes: BTreeMap<String, Spanned<ExpectationScope>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ExpectationScope {
    index: Option<Spanned<String>>,
    #[serde(default)]
    fragments: BTreeMap<String, String>,
    params: Option<Spanned<Vec<toml::Value>>>,
    setup: Option<Vec<String>>,
    budget: Option<Spanned<BudgetFile>>,
    relative: Option<Spanned<RelativeFile>>,
}

/// `budget = { warm_ms = 60, buffers = 400 }`
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    warm_ms: Option<f64>,
    buffers: Option<f64>,
}

/// `relative = { to = "thread-page-first", max_ratio = 2 }`
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RelativeFile {
    to: String,
    max_ratio: f64,
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
    /// (scope, target read path, line, column) of each relative budget, checked once every
    /// expectation is read.
    relative_errors: Vec<(String, String, usize, usize)>,
}

/// One read path in one scope: what a check runs.
#[derive(Debug, Clone)]
pub struct ScopeCheck {
    pub scope: String,
    /// The required index as written (`name` or `schema.name`, quoted parts allowed).
    pub index: String,
    pub sql: RenderedSql,
    /// Parameter values as SQL literals, for `$1`, `$2`, ….
    pub params: Vec<String>,
    pub setup: Vec<String>,
    pub budget: Budget,
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
            if offset >= s.out_start && offset < s.out_start + s.len.max(1) {
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

/// Reads and validates the whole project, then narrows it to the filter.
pub fn load(source: &Source, filter: &Filter) -> Result<Project, BadInput> {
    let project_file = match source.read("plancheck.toml")? {
        Some(text) => parse_toml::<ProjectFile>(&source.display("plancheck.toml"), &text)?,
        None => ProjectFile::default(),
    };

    let names = source.list("expectations", "toml")?;
    if names.is_empty() {
        return Err(BadInput(format!(
            "{}: no expectations (*.toml) found",
            source.display("expectations")
        )));
    }
    let mut scope_names: Vec<String> = project_file.scopes.keys().cloned().collect();
    let mut read_paths = Vec::new();
    for name in &names {
        let rp = load_expectation(source, &project_file, name)?;
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
    // A relative budget names another read path checked in the same scope.
    for r in &read_paths {
        for (scope, to, line, col) in &r.relative_errors {
            let target = read_paths.iter().find(|t| &t.name == to);
            let message = match target {
                None => format!("relative budget: no read path `{to}`"),
                Some(t) if !t.checks.iter().any(|c| &c.scope == scope) => {
                    format!("relative budget: `{to}` is not checked in scope `{scope}`")
                }
                Some(_) => continue,
            };
            return Err(BadInput(format!(
                "{}:{line}:{col}: {message}",
                r.expectation_path
            )));
        }
    }
    // The read paths a relative budget compares against run too, even when --only leaves them
    // out: a ratio needs both sides.
    let mut wanted: Vec<String> = filter.only.clone();
    if !wanted.is_empty() {
        let mut i = 0;
        while i < wanted.len() {
            if let Some(r) = read_paths.iter().find(|r| r.name == wanted[i]) {
                for c in &r.checks {
                    if let Some(rel) = &c.budget.relative
                        && !wanted.contains(&rel.to)
                    {
                        wanted.push(rel.to.clone());
                    }
                }
            }
            i += 1;
        }
    }
    let read_paths = read_paths
        .into_iter()
        .filter(|r| wanted.is_empty() || wanted.contains(&r.name))
        .map(|mut r| {
            r.checks
                .retain(|c| filter.scopes.is_empty() || filter.scopes.contains(&c.scope));
            r
        })
        .filter(|r| !r.checks.is_empty())
        .collect();
    Ok(Project {
        read_paths,
        scope_names,
    })
}

fn parse_toml<T: serde::de::DeserializeOwned>(path: &str, text: &str) -> Result<T, BadInput> {
    toml::from_str(text).map_err(|e| {
        let message = e.message().trim_end().to_string();
        match e.span() {
            Some(span) => BadInput(located(path, text, span.start, &message)),
            None => BadInput(format!("{path}: {message}")),
        }
    })
}

fn load_expectation(
    source: &Source,
    project: &ProjectFile,
    name: &str,
) -> Result<ReadPath, BadInput> {
    let rel = format!("expectations/{name}.toml");
    let path = source.display(&rel);
    let text = source
        .read(&rel)?
        .ok_or_else(|| BadInput(format!("{path}: cannot be read")))?;
    let file: ExpectationFile = parse_toml(&path, &text)?;
    let at = |offset: usize, message: &str| BadInput(located(&path, &text, offset, message));

    let plan_name = match &file.plan {
        Some(p) => {
            let value = p.get_ref();
            if value.is_empty()
                || value.contains(['/', '\\'])
                || value.starts_with('.')
                || value.chars().any(char::is_control)
            {
                return Err(at(
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
            let message = format!("the plan file {plan_path} does not exist");
            return Err(match &file.plan {
                Some(p) => at(p.span().start, &message),
                None => BadInput(format!(
                    "{path}: {message} (an expectation checks plans/<its own name>.sql unless it \
                     sets `plan`)"
                )),
            });
        }
    };
    if plan_sql.trim().is_empty() {
        return Err(BadInput(format!("{plan_path}: the plan file is empty")));
    }

    let mut relative_spans: Vec<(String, String, usize)> = Vec::new();
    if file.scopes.is_empty() {
        return Err(BadInput(format!(
            "{path}: declares no scope; add at least one [scopes.NAME] table with the `index` it \
             must use"
        )));
    }
    let mut checks = Vec::new();
    for (scope_name, scope) in &file.scopes {
        let scope_span = scope.span();
        let scope = scope.get_ref();
        let shared = project.scopes.get(scope_name).map(|s| s.get_ref());
        let index = match &scope.index {
            Some(i) if !i.get_ref().trim().is_empty() => i.get_ref().trim().to_string(),
            Some(i) => return Err(at(i.span().start, "`index` is empty")),
            None => {
                return Err(at(
                    scope_span.start,
                    &format!("scope `{scope_name}` names no `index` it must use"),
                ));
            }
        };
        let mut fragments = shared.map(|s| s.fragments.clone()).unwrap_or_default();
        fragments.extend(scope.fragments.clone());
        let sql = render(&plan_path, &plan_sql, &fragments, scope_name)?;

        let params = scope
            .params
            .as_ref()
            .or(file.params.as_ref())
            .or(shared.and_then(|s| s.params.as_ref()));
        let (params, params_at) = match params {
            Some(p) => (p.get_ref().as_slice(), Some(p.span().start)),
            None => (&[][..], None),
        };
        let literals = params
            .iter()
            .enumerate()
            .map(|(i, v)| {
                to_sql_literal(v).map_err(|m| {
                    at(
                        params_at.unwrap_or(0),
                        &format!("parameter ${}: {m}", i + 1),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let wanted = max_placeholder(&sql.text);
        if wanted != literals.len() {
            let message = format!(
                "{plan_path} uses {wanted} parameter{} ($1…${wanted}) but scope `{scope_name}` \
                 gives {} value{}",
                if wanted == 1 { "" } else { "s" },
                literals.len(),
                if literals.len() == 1 { "" } else { "s" },
            );
            return Err(match params_at {
                Some(offset) => at(offset, &message),
                None => BadInput(format!("{path}: {message}; add `params = [...]`")),
            });
        }
        let setup = scope
            .setup
            .clone()
            .or_else(|| shared.and_then(|s| s.setup.clone()))
            .unwrap_or_default();
        // A scope's own budget replaces the expectation's, figure by figure.
        let budget_file = scope.budget.as_ref().or(file.budget.as_ref());
        let mut budget = Budget::default();
        if let Some(b) = budget_file {
            for (name, value) in [
                ("warm_ms", b.get_ref().warm_ms),
                ("buffers", b.get_ref().buffers),
            ] {
                if let Some(v) = value
                    && !(v.is_finite() && v > 0.0)
                {
                    return Err(at(
                        b.span().start,
                        &format!("budget `{name}` must be a number above 0, not {v}"),
                    ));
                }
            }
            budget.warm_ms = b.get_ref().warm_ms;
            budget.buffers = b.get_ref().buffers;
        }
        if let Some(r) = scope.relative.as_ref().or(file.relative.as_ref()) {
            let rel = r.get_ref();
            if !(rel.max_ratio.is_finite() && rel.max_ratio > 0.0) {
                return Err(at(
                    r.span().start,
                    &format!(
                        "`max_ratio` must be a number above 0, not {}",
                        rel.max_ratio
                    ),
                ));
            }
            if rel.to == name {
                return Err(at(
                    r.span().start,
                    "a read path cannot be relative to itself",
                ));
            }
            budget.relative = Some(Relative {
                to: rel.to.clone(),
                max_ratio: rel.max_ratio,
            });
            relative_spans.push((scope_name.clone(), rel.to.clone(), r.span().start));
        }
        checks.push(ScopeCheck {
            scope: scope_name.clone(),
            index,
            sql,
            params: literals,
            setup,
            budget,
        });
    }
    Ok(ReadPath {
        name: name.to_string(),
        plan_path,
        expectation_path: path,
        allow_seq_scan: file.allow_seq_scan,
        checks,
        relative_errors: relative_spans
            .into_iter()
            .map(|(scope, to, offset)| {
                let (line, col) = crate::errors::line_col(&text, offset);
                (scope, to, line, col)
            })
            .collect(),
    })
}

/// Fills `{{name}}` markers with the scope's fragments.
fn render(
    plan_path: &str,
    source: &str,
    fragments: &BTreeMap<String, String>,
    scope: &str,
) -> Result<RenderedSql, BadInput> {
    let mut text = String::new();
    let mut segments = Vec::new();
    let mut rest = 0;
    while let Some(found) = source[rest..].find("{{") {
        let open = rest + found;
        let Some(close_rel) = source[open + 2..].find("}}") else {
            return Err(BadInput(located(
                plan_path,
                source,
                open,
                "`{{` without a closing `}}`",
            )));
        };
        let close = open + 2 + close_rel;
        let name = source[open + 2..close].trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(BadInput(located(
                plan_path,
                source,
                open,
                &format!("`{{{{{name}}}}}` is not a fragment name (letters, digits, _ and -)"),
            )));
        }
        let Some(value) = fragments.get(name) else {
            return Err(BadInput(located(
                plan_path,
                source,
                open,
                &format!(
                    "fragment `{name}` has no value in scope `{scope}`; give it under \
                     [scopes.{scope}] fragments, in the expectation or in plancheck.toml"
                ),
            )));
        };
        segments.push(Segment {
            out_start: text.len(),
            src_start: rest,
            len: open - rest,
            literal: true,
        });
        text.push_str(&source[rest..open]);
        segments.push(Segment {
            out_start: text.len(),
            src_start: open,
            len: value.len(),
            literal: false,
        });
        text.push_str(value);
        rest = close + 2;
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
/// dollar-quoted strings and comments.
pub fn max_placeholder(sql: &str) -> usize {
    let b = sql.as_bytes();
    let mut i = 0;
    let mut max = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if i + 1 < b.len() && b[i + 1] == q {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 1;
                i += 2;
                while i < b.len() && depth > 0 {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
            }
            b'$' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                if j > start && !(i > 0 && is_ident_byte(b[i - 1])) {
                    if let Ok(n) = sql[start..j].parse::<usize>() {
                        max = max.max(n);
                    }
                    i = j;
                    continue;
                }
                // A dollar quote: $$ or $tag$ (the tag cannot start with a digit).
                let mut k = start;
                while k < b.len() && is_ident_byte(b[k]) {
                    k += 1;
                }
                if k < b.len() && b[k] == b'$' && !(i > 0 && is_ident_byte(b[i - 1])) {
                    let tag = &sql[i..=k];
                    match sql[k + 1..].find(tag) {
                        Some(end) => i = k + 1 + end + tag.len(),
                        None => i = b.len(),
                    }
                    continue;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    max
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
