//! The files' schema: `plancheck.toml` and `expectations/NAME.toml` as serde reads them, and
//! the parse that locates a TOML error. No `#[serde(flatten)]` and no internally tagged enums:
//! both lose spans. Every value a later check can reject is `Spanned`, so the error points at it.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::place::File;
use crate::error::{BadInput, located};

/// `[1, "visible"]`: parameter values, each with its place in the file.
pub(super) type Params = Spanned<Vec<Spanned<toml::Value>>>;

/// `fragments = { vis = "p.visibility = 'visible'" }`: each name and value with its place, the
/// name's for a fragment that fills nothing.
pub(super) type Fragments = BTreeMap<Spanned<String>, Spanned<String>>;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ProjectFile {
    #[serde(default)]
    pub(super) scopes: BTreeMap<String, Spanned<ProjectScope>>,
    /// Planner settings production runs with, for every scope.
    #[serde(default)]
    pub(super) settings: Settings,
    /// `[ladder]`: the p95 budgets of `plancheck ladder`'s rungs.
    pub(super) ladder: Option<Spanned<LadderFile>>,
}

/// `[ladder]`: `p95_ms = 80` for every rung, and `[[ladder.rung]]` tables for rungs of their
/// own (`members = 4250` or `rate = 425`, `p95_ms = 300`, `limit = true` for a rung recorded
/// but never failed).
#[derive(Debug, Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct LadderFile {
    pub(super) p95_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) rung: Vec<Spanned<RungFile>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RungFile {
    pub(super) members: Option<Spanned<u64>>,
    pub(super) rate: Option<Spanned<f64>>,
    pub(super) p95_ms: Spanned<f64>,
    #[serde(default)]
    pub(super) limit: bool,
}

/// `settings = { random_page_cost = 1.1 }`: planner settings plancheck applies (`SET LOCAL`)
/// and reports; each value with its place, for the refusal of a name that is not one.
pub(super) type Settings = BTreeMap<String, Spanned<toml::Value>>;

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct ProjectScope {
    #[serde(default)]
    pub(super) fragments: Fragments,
    pub(super) params: Option<Params>,
    pub(super) setup: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub(super) settings: Settings,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExpectationFile {
    pub(super) plan: Option<Spanned<String>>,
    pub(super) params: Option<Params>,
    #[serde(default)]
    pub(super) allow_seq_scan: Vec<Spanned<String>>,
    pub(super) budget: Option<Spanned<BudgetFile>>,
    pub(super) relative: Option<Spanned<RelativeFile>>,
    /// `share = 0.38`: the read path's share of `plancheck ladder`'s requests, split evenly
    /// over its scopes that do not give their own.
    pub(super) share: Option<Spanned<f64>>,
    pub(super) scopes: Option<Spanned<BTreeMap<String, Spanned<ExpectationScope>>>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct ExpectationScope {
    /// `index = "name"`, or `index = ["a", "b"]` where either serves the read path.
    pub(super) index: Option<Spanned<toml::Value>>,
    /// `twin = "name"` (the index lint pairs this scope's with) or `twin = false` (none, on
    /// purpose).
    pub(super) twin: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) fragments: Fragments,
    pub(super) params: Option<Params>,
    pub(super) setup: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub(super) settings: Settings,
    pub(super) budget: Option<Spanned<BudgetFile>>,
    pub(super) relative: Option<Spanned<RelativeFile>>,
    /// This scope's share of `plancheck ladder`'s requests.
    pub(super) share: Option<Spanned<f64>>,
}

/// `budget = { warm_ms = 60, buffers = 400 }`
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct BudgetFile {
    pub(super) warm_ms: Option<Spanned<f64>>,
    pub(super) buffers: Option<Spanned<f64>>,
}

/// `relative = { to = "thread-page-first", max_ratio = 2 }`, with `scope = "all"` to compare
/// with that scope of `to` rather than the check's own.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RelativeFile {
    pub(super) to: Spanned<String>,
    pub(super) scope: Option<Spanned<String>>,
    pub(super) max_ratio: Spanned<f64>,
}

/// `plancheck.toml`, read and checked.
pub(super) struct ProjectConfig {
    pub(super) path: String,
    pub(super) text: String,
    pub(super) file: ProjectFile,
}

impl ProjectConfig {
    pub(super) fn file(&self) -> File<'_> {
        File {
            path: &self.path,
            text: &self.text,
        }
    }
}

/// Parses a TOML file into `T`; an error is located in it, in words a TOML writer knows.
pub(super) fn parse_toml<T: serde::de::DeserializeOwned>(
    path: &str,
    text: &str,
) -> Result<T, BadInput> {
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
