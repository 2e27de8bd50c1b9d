//! `plancheck judge DIR...`: the measurements one run saved, or several runners' shares of one
//! suite (`--partition`), judged again with no database, as one report.

use std::path::PathBuf;

use super::status;
use crate::cli::JudgeArgs;
use crate::error::BadInput;
use crate::saved;

/// `plancheck judge DIR...`: the saved runs joined and judged again, as one live run of all
/// their checks would have been.
pub(super) fn judge(args: JudgeArgs) -> crate::error::Result<i32> {
    let runs = args
        .dirs
        .iter()
        .map(|dir| Ok((dir.clone(), saved::read(dir)?)))
        .collect::<Result<Vec<_>, BadInput>>()?;
    let run = joined(runs)?;
    let report = super::run::judge_run(run, &args.verdict);
    super::output::emit(&report, &args.verdict)?;
    Ok(status(&report))
}

/// Several runners' saved runs as one: their checks in the order the folders were given, the
/// role's warnings and the lint findings each once. Refused (exit 2): a check in two folders
/// (partitions are disjoint), runs of different servers, or a migration run beside one without.
fn joined(runs: Vec<(PathBuf, saved::Run)>) -> Result<saved::Run, BadInput> {
    let mut runs = runs.into_iter();
    let Some((first_dir, mut all)) = runs.next() else {
        return Err(BadInput("judge: no folder given".into()));
    };
    let mut from: Vec<((String, String), PathBuf)> = all
        .checks
        .iter()
        .map(|m| ((m.read_path.clone(), m.scope.clone()), first_dir.clone()))
        .collect();
    for (dir, run) in runs {
        if run.facts.server_version != all.facts.server_version {
            return Err(BadInput(format!(
                "{}: measured on PostgreSQL {}, {} on {}: one report is of one server",
                dir.display(),
                run.facts.server_version,
                first_dir.display(),
                all.facts.server_version
            )));
        }
        if run.before.is_some() != all.before.is_some() {
            return Err(BadInput(format!(
                "{}: {} --migration, {} {}: one report compares one migration",
                dir.display(),
                if run.before.is_some() {
                    "with"
                } else {
                    "without"
                },
                first_dir.display(),
                if all.before.is_some() {
                    "with"
                } else {
                    "without"
                },
            )));
        }
        for m in &run.checks {
            let key = (m.read_path.clone(), m.scope.clone());
            if let Some((_, other)) = from.iter().find(|(k, _)| *k == key) {
                return Err(BadInput(format!(
                    "{}: {} [{}] is in {} too: the runners' shares (--partition) must not \
                     overlap",
                    dir.display(),
                    key.0,
                    key.1,
                    other.display()
                )));
            }
            from.push((key, dir.clone()));
        }
        all.checks.extend(run.checks);
        if let (Some(before), Some(more)) = (all.before.as_mut(), run.before) {
            before.extend(more);
        }
        for w in run.facts.role_warnings {
            if !all.facts.role_warnings.contains(&w) {
                all.facts.role_warnings.push(w);
            }
        }
        for f in run.facts.lint {
            if !all.facts.lint.contains(&f) {
                all.facts.lint.push(f);
            }
        }
        for c in run.facts.index_changes {
            if !all.facts.index_changes.contains(&c) {
                all.facts.index_changes.push(c);
            }
        }
        // Each runner applied the migration: the longest hold is the one to report.
        let longer = match (&all.facts.migration_hold, &run.facts.migration_hold) {
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b.held_ms > a.held_ms,
            _ => false,
        };
        if longer {
            all.facts.migration_hold = run.facts.migration_hold;
        }
    }
    Ok(all)
}
