//! Scopes and precedence (as the module doc writes it down): plancheck.toml's scopes merged with
//! an expectation's into one check per scope, each value located in the file it came from:
//! index and twin, fragments, settings, params, setup, budget and relative budget. Relative
//! budgets' targets are checked once every expectation is read.

use std::collections::BTreeMap;
use std::sync::Arc;

use toml::Spanned;

use super::names::{self, check_scope_name};
use super::place::{File, Place, cut, shown};
use super::plan::{Plan, read_plan};
use super::schema::{
    BudgetFile, ExpectationFile, ExpectationScope, Params, ProjectConfig, ProjectFile,
    ProjectScope, RelativeFile, parse_toml,
};
use super::values::{
    check_fragments, check_setup, highest_placeholder, literals, settings_of, setup_of,
};
use super::{ReadPath, RelativeTarget, RenderedSql, ScopeCheck, Source};
use crate::error::{BadInput, located};
use crate::model::{Budget, Relative, TwinDecl};

/// `plancheck.toml`, read and checked; an empty one where there is none.
pub(super) fn read_config(source: &Source) -> Result<ProjectConfig, BadInput> {
    let path = source.display("plancheck.toml");
    Ok(match source.read("plancheck.toml")? {
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
    })
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

/// A file values come from, with its text shared by every check that points into it.
#[derive(Clone, Copy)]
struct Origin<'a> {
    file: File<'a>,
    text: &'a Arc<str>,
}

impl Origin<'_> {
    /// Where each of `values` is written.
    fn places<T>(&self, values: &[Spanned<T>]) -> Vec<Place> {
        values
            .iter()
            .map(|v| Place {
                path: self.file.path.to_string(),
                text: Arc::clone(self.text),
                offset: v.span().start,
            })
            .collect()
    }
}

/// One expectation being resolved, and what its scopes draw on.
struct Expectation<'a> {
    /// The read path's name.
    name: &'a str,
    file: &'a ExpectationFile,
    /// The expectation file.
    own: Origin<'a>,
    /// `plancheck.toml`.
    shared: Origin<'a>,
    config: &'a ProjectConfig,
    plan: &'a Plan,
}

/// Reads `expectations/NAME.toml` and resolves it, with its plan, into one check per scope.
pub(super) fn load_expectation(
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
    let plan = read_plan(source, here, file.plan.as_ref(), name)?;
    let allow_seq_scan = names::allow_seq_scan(here, &file.allow_seq_scan)?;
    let scopes = declared_scopes(here, &file)?;

    // The two files parameter values come from, shared by every check that points into them.
    let own_text: Arc<str> = Arc::from(text.as_str());
    let config_text: Arc<str> = Arc::from(config.text.as_str());
    let expectation = Expectation {
        name,
        file: &file,
        own: Origin {
            file: here,
            text: &own_text,
        },
        shared: Origin {
            file: config.file(),
            text: &config_text,
        },
        config,
        plan: &plan,
    };
    let mut relatives: Vec<RelativeTarget> = Vec::new();
    let mut checks = Vec::new();
    for (scope_name, scope) in scopes {
        let (mut check, relative) = expectation.scope_check(scope_name, scope)?;
        check.baseline = baseline(source, name, scope_name)?;
        checks.push(check);
        relatives.extend(relative);
    }
    let (allow_seq_scan, allow_seq_scan_at) = allow_seq_scan.into_iter().unzip();
    Ok(ReadPath {
        name: name.to_string(),
        plan_path: plan.path,
        expectation_path: path,
        allow_seq_scan,
        allow_seq_scan_at,
        checks,
        expectation_text: text,
        relatives,
    })
}

/// The expectation's `[scopes.NAME]` tables; an expectation declares at least one.
fn declared_scopes<'f>(
    here: File<'_>,
    file: &'f ExpectationFile,
) -> Result<&'f BTreeMap<String, Spanned<ExpectationScope>>, BadInput> {
    match &file.scopes {
        Some(s) if !s.get_ref().is_empty() => Ok(s.get_ref()),
        other => Err(here.at(
            other.as_ref().map(|s| s.span().start).unwrap_or(0),
            "declares no scope; add at least one [scopes.NAME] table with the `index` it \
             must use",
        )),
    }
}

impl Expectation<'_> {
    /// The check of one scope, and the check its relative budget compares with, if it has one.
    fn scope_check(
        &self,
        scope_name: &str,
        scope: &Spanned<ExpectationScope>,
    ) -> Result<(ScopeCheck, Option<RelativeTarget>), BadInput> {
        let here = self.own.file;
        check_scope_name(here, scope_name, scope.span())?;
        let at = scope.span().start;
        let scope = scope.get_ref();
        let shared = self.config.file.scopes.get(scope_name).map(|s| s.get_ref());
        let (index, also, twin) = indexes(here, scope_name, at, scope)?;
        check_fragments(here, &scope.fragments)?;
        check_setup(here, scope.setup.as_ref())?;
        let sql = self.render(scope_name, scope, shared)?;
        let settings = self.settings(scope, shared)?;
        let (params, param_places) = self.params(scope_name, scope, shared, &sql)?;
        let (setup, setup_places) = self.setup(scope, shared);
        // A scope's own budget replaces the expectation's, figure by figure.
        let mut budget = budget(here, scope.budget.as_ref().or(self.file.budget.as_ref()))?;
        let target = match scope.relative.as_ref().or(self.file.relative.as_ref()) {
            Some(r) => {
                let (relative, target) = self.relative(scope_name, r)?;
                budget.relative = Some(relative);
                Some(target)
            }
            None => None,
        };
        let share = self.share(scope)?;
        let check = ScopeCheck {
            share,
            scope: scope_name.to_string(),
            index,
            also,
            baseline: None,
            twin,
            sql,
            params,
            setup,
            settings,
            budget,
            param_places,
            setup_places,
        };
        Ok((check, target))
    }

    /// The check's share of the ladder's requests: the scope's own, or the expectation's split
    /// evenly over its scopes that give none.
    fn share(&self, scope: &ExpectationScope) -> Result<Option<f64>, BadInput> {
        let here = self.own.file;
        let valid = |s: &Spanned<f64>| {
            let v = *s.get_ref();
            if v.is_finite() && v > 0.0 && v <= 1.0 {
                Ok(v)
            } else {
                Err(here.at(
                    s.span().start,
                    &format!("`share` must be above 0 and at most 1 (0.38 is 38% of the requests), not {v}"),
                ))
            }
        };
        if let Some(own) = &self.file.share {
            valid(own)?;
        }
        if let Some(own) = &scope.share {
            return valid(own).map(Some);
        }
        let Some(whole) = &self.file.share else {
            return Ok(None);
        };
        let sharing = self
            .file
            .scopes
            .as_ref()
            .map_or(1, |s| {
                s.get_ref()
                    .values()
                    .filter(|s| s.get_ref().share.is_none())
                    .count()
            })
            .max(1);
        Ok(Some(valid(whole)? / sharing as f64))
    }

    /// The plan with the scope's fragments filled in: plancheck.toml's scope's and the
    /// expectation's scope's, merged key by key, the expectation's value winning.
    fn render(
        &self,
        scope_name: &str,
        scope: &ExpectationScope,
        shared: Option<&ProjectScope>,
    ) -> Result<RenderedSql, BadInput> {
        let template = &self.plan.template;
        // A fragment given here, for this read path alone, must fill a placeholder of its plan;
        // one from plancheck.toml serves every read path checked in the scope, and a plan that
        // has no use for it is no mistake.
        for key in scope.fragments.keys() {
            if !template.uses(key.get_ref()) {
                return Err(self.own.file.at(
                    key.span().start,
                    &template.unused(&self.plan.path, &self.plan.sql, key.get_ref()),
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
        self.plan.render(&fragments, scope_name)
    }

    /// Declared settings merge key by key: plancheck.toml's, its scope's, the expectation's
    /// scope's, the last one written winning.
    fn settings(
        &self,
        scope: &ExpectationScope,
        shared: Option<&ProjectScope>,
    ) -> Result<Vec<(String, String)>, BadInput> {
        let mut declared: BTreeMap<String, String> = BTreeMap::new();
        declared.extend(settings_of(self.shared.file, &self.config.file.settings)?);
        if let Some(s) = shared {
            declared.extend(settings_of(self.shared.file, &s.settings)?);
        }
        declared.extend(settings_of(self.own.file, &scope.settings)?);
        Ok(declared.into_iter().collect())
    }

    /// The scope's params, else the expectation's, else plancheck.toml's: as SQL literals, each
    /// with the place in the file it came from; as many as the rendered SQL's placeholders.
    fn params(
        &self,
        scope_name: &str,
        scope: &ExpectationScope,
        shared: Option<&ProjectScope>,
        sql: &RenderedSql,
    ) -> Result<(Vec<String>, Vec<Place>), BadInput> {
        let params = scope
            .params
            .as_ref()
            .map(|p| (self.own, p))
            .or(self.file.params.as_ref().map(|p| (self.own, p)))
            .or(shared
                .and_then(|s| s.params.as_ref())
                .map(|p| (self.shared, p)));
        let (literals, places) = match params {
            Some((from, p)) => (literals(from.file, p)?, from.places(p.get_ref())),
            None => (Vec::new(), Vec::new()),
        };
        let (wanted, wanted_at) = highest_placeholder(&sql.text);
        if wanted != literals.len() {
            let given = literals.len();
            return Err(self.wrong_count(scope_name, params, (wanted, wanted_at), given, sql));
        }
        Ok((literals, places))
    }

    /// The error for a plan whose highest placeholder is `$wanted` (first at byte `wanted_at`
    /// of the rendered SQL) where the scope gives `given` values.
    fn wrong_count(
        &self,
        scope_name: &str,
        params: Option<(Origin<'_>, &Params)>,
        (wanted, wanted_at): (usize, usize),
        given: usize,
        sql: &RenderedSql,
    ) -> BadInput {
        let plan_path = &self.plan.path;
        let path = self.own.file.path;
        let uses = match wanted {
            0 => format!("{plan_path} uses no parameters"),
            1 => format!("{plan_path} uses 1 parameter ($1)"),
            n => format!("{plan_path} uses {n} parameters ($1…${n})"),
        };
        let gives = format!(
            "scope `{scope_name}` gives {} value{}",
            given,
            if given == 1 { "" } else { "s" },
        );
        match params {
            // Too many: point at the first value too many.
            Some((from, p)) if wanted < given => from.file.at(
                p.get_ref()[wanted].span().start,
                &format!("{uses} but {gives}"),
            ),
            Some((from, p)) => from.file.at(p.span().start, &format!("{uses} but {gives}")),
            // None at all: point at the placeholder in the plan.
            None => BadInput(located(
                plan_path,
                &self.plan.sql,
                sql.source_offset(wanted_at),
                &format!(
                    "{uses} but {gives}; add `params = [...]` to {path} (or under \
                     [scopes.{scope_name}])"
                ),
            )),
        }
    }

    /// The scope's setup, else plancheck.toml's, each statement with its place.
    fn setup(
        &self,
        scope: &ExpectationScope,
        shared: Option<&ProjectScope>,
    ) -> (Vec<String>, Vec<Place>) {
        let setup_from = scope.setup.as_ref().map(|s| (self.own, s)).or(shared
            .and_then(|s| s.setup.as_ref())
            .map(|s| (self.shared, s)));
        match setup_from {
            Some((from, s)) => (setup_of(s), from.places(s.get_ref())),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// A relative budget of the check in scope `scope_name`, and the check it compares with
    /// (found, or not, once every expectation is read).
    fn relative(
        &self,
        scope_name: &str,
        r: &Spanned<RelativeFile>,
    ) -> Result<(Relative, RelativeTarget), BadInput> {
        let here = self.own.file;
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
        if to == self.name && compared == scope_name {
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
        let relative = Relative {
            // None is the check's own scope, written or not.
            scope: (compared != scope_name).then(|| compared.to_string()),
            to: to.clone(),
            max_ratio,
        };
        let target = RelativeTarget {
            to: to.clone(),
            scope: compared.to_string(),
            at: r.span().start,
            scope_at: rel.scope.as_ref().map(|s| s.span().start),
        };
        Ok((relative, target))
    }
}

/// A scope's required index (none for `index = false`), the others it accepts, and its twin.
type ScopeIndexes = (Option<String>, Vec<String>, Option<TwinDecl>);

/// The index a scope requires (none for `index = false`), the others it accepts in its place,
/// and what it declares of its twin; `at` is the scope table's offset, for a scope that names no
/// index.
fn indexes(
    here: File<'_>,
    scope_name: &str,
    at: usize,
    scope: &ExpectationScope,
) -> Result<ScopeIndexes, BadInput> {
    let Some(written) = &scope.index else {
        return Err(here.at(
            at,
            &format!(
                "scope `{scope_name}` names no `index` it must use (`index = false` for a read \
                 path no one index serves: judged by its budget and the whole-read rule only)"
            ),
        ));
    };
    let twin = scope
        .twin
        .as_ref()
        .map(|t| names::twin(here, t))
        .transpose()?;
    match written.get_ref() {
        toml::Value::Boolean(false) => {
            if let (Some(t), Some(TwinDecl::Named(_))) = (&scope.twin, &twin) {
                return Err(here.at(
                    t.span().start,
                    "`twin` names the index paired with this scope's, and `index = false` \
                     requires none",
                ));
            }
            return Ok((None, Vec::new(), twin));
        }
        toml::Value::Boolean(true) => {
            return Err(here.at(
                written.span().start,
                "`index = true` names no index: write its name (`index = \"name\"`), or \
                 `index = false` when no one index serves the read path",
            ));
        }
        _ => {}
    }
    let mut indexes = names::index_names(here, written)?;
    let index = indexes.remove(0);
    Ok((Some(index), indexes, twin))
}

/// A budget's absolute figures, each a number above 0.
fn budget(here: File<'_>, written: Option<&Spanned<BudgetFile>>) -> Result<Budget, BadInput> {
    let mut budget = Budget::default();
    if let Some(b) = written {
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
    Ok(budget)
}

/// `[ladder]` of plancheck.toml: each budget above 0, each rung named by `members` or `rate`
/// (one of them).
pub(super) fn ladder(config: &ProjectConfig) -> Result<crate::model::LadderBudgets, BadInput> {
    let here = config.file();
    let Some(ladder) = &config.file.ladder else {
        return Ok(crate::model::LadderBudgets::default());
    };
    let positive = |v: &Spanned<f64>| {
        let x = *v.get_ref();
        if x.is_finite() && x > 0.0 {
            Ok(x)
        } else {
            Err(here.at(
                v.span().start,
                &format!("`p95_ms` must be a number of milliseconds above 0, not {x}"),
            ))
        }
    };
    let file = ladder.get_ref();
    let p95_ms = file.p95_ms.as_ref().map(positive).transpose()?;
    let mut rungs = Vec::new();
    for rung in &file.rung {
        let r = rung.get_ref();
        let members = r.members.as_ref().map(|m| *m.get_ref());
        let rate = match &r.rate {
            Some(v) if !(v.get_ref().is_finite() && *v.get_ref() > 0.0) => {
                return Err(here.at(
                    v.span().start,
                    &format!(
                        "`rate` must be requests a second above 0, not {}",
                        v.get_ref()
                    ),
                ));
            }
            Some(v) => Some(*v.get_ref()),
            None => None,
        };
        if members.is_some() == rate.is_some() || members == Some(0) {
            return Err(here.at(
                rung.span().start,
                "a [[ladder.rung]] names its rung by `members = N` (above 0) or by `rate = R`, \
                 one of the two",
            ));
        }
        rungs.push(crate::model::RungBudget {
            members,
            rate,
            p95_ms: positive(&r.p95_ms)?,
            limit: r.limit,
        });
    }
    Ok(crate::model::LadderBudgets { p95_ms, rungs })
}

/// A relative budget names another read path checked in the same scope, or in the scope it
/// names: checked once every expectation is read (`names` are the read paths').
pub(super) fn check_relatives(read_paths: &[ReadPath], names: &[String]) -> Result<(), BadInput> {
    for r in read_paths {
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
    Ok(())
}

/// The plan baseline of a check, if it has one, as plancheck parsed it: a file that is not a
/// plan shape is bad input at its line, never quoted (it may have been copied from a file that
/// is not plancheck's).
fn baseline(source: &Source, name: &str, scope: &str) -> Result<Option<String>, BadInput> {
    let rel = crate::model::baseline_path(name, scope);
    let Some(text) = source.read(&rel)? else {
        return Ok(None);
    };
    crate::verdict::baseline::parse(&text)
        .map(Some)
        .map_err(|line| {
            BadInput(format!(
                "{}:{line}: not a plan shape as `plancheck accept` records one; run `plancheck \
             accept --only {name} --scope {scope}` to record the plan again",
                source.display(&rel)
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::{Filter, load_texts};
    use super::*;

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
        let e = c.param_place(1).unwrap().locate("invalid input syntax");
        assert!(
            e.starts_with("expectations/path.toml:1:14: invalid input syntax"),
            "{e}"
        );
        assert_eq!(c.param_place(2), None);
    }

    #[test]
    fn index_false_requires_no_index_and_true_or_a_named_twin_is_refused() {
        let p = load_texts(
            "allow_seq_scan = [\"forums\"]\nbudget = { warm_ms = 40 }\n[scopes.member]\n\
             index = false\n",
            Some("SELECT id FROM forums"),
            None,
        )
        .unwrap();
        let c = &p.read_paths[0].checks[0];
        assert_eq!(c.index, None);
        assert!(c.also.is_empty());
        assert!(p.required_indexes().is_empty());
        let e = error("[scopes.member]\nindex = true\n", Some("SELECT 1"), None);
        assert!(
            e.starts_with("expectations/path.toml:2:9: `index = true` names no index"),
            "{e}"
        );
        let e = error(
            "[scopes.member]\nindex = false\ntwin = \"x\"\n",
            Some("SELECT 1"),
            None,
        );
        assert!(
            e.starts_with("expectations/path.toml:3:8: `twin` names the index paired"),
            "{e}"
        );
        let e = error("[scopes.member]\nshare = 0.1\n", Some("SELECT 1"), None);
        assert!(
            e.contains("`index = false` for a read path no one index serves"),
            "{e}"
        );
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
        let e = c
            .setup_place(1)
            .unwrap()
            .locate("role \"b\" does not exist");
        assert!(e.starts_with("plancheck.toml:2:24: role"), "{e}");
        assert_eq!(c.setup_place(2), None);
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
}
