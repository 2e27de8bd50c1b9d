//! `--only` and `--scope`: the names checked against the project, and the project narrowed to
//! the checks they name, plus the checks those checks' relative budgets compare with.

use std::collections::{HashMap, HashSet};

use super::{Filter, ReadPath};
use crate::error::BadInput;

/// Every `--only` names a read path and every `--scope` a scope of the project (`names` are
/// the read paths' names, `scope_names` every scope declared anywhere).
pub(super) fn check_names(
    filter: &Filter,
    read_paths: &[ReadPath],
    names: &[String],
    scope_names: &[String],
) -> Result<(), BadInput> {
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
    Ok(())
}

/// The checks to run: those of the read paths and scopes the filter names, then the checks
/// their relative budgets compare with, even where --only or --scope leaves them out: a ratio
/// needs both sides. A read path left with no check is dropped.
pub(super) fn narrow(read_paths: Vec<ReadPath>, filter: &Filter) -> Vec<ReadPath> {
    let running = running(&read_paths, filter);
    read_paths
        .into_iter()
        .map(|mut r| {
            r.checks
                .retain(|c| running.contains(&(r.name.clone(), c.scope.clone())));
            r
        })
        .filter(|r| !r.checks.is_empty())
        .collect()
}

/// The (read path, scope) of every check to run.
fn running(read_paths: &[ReadPath], filter: &Filter) -> HashSet<(String, String)> {
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
    running
        .into_iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

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
