//! The short form of a verdict's reasons, for the table: one or two lines saying what is wrong,
//! and a `fix:` line naming the change to make. Worded from the check's judged fields; the
//! whole reasoning (costs, the proof, the predicate beside the conditions) is the check's
//! message, which `--explain`, JSON, JUnit, Markdown and the annotations carry.

use crate::verdict::{
    CheckResult, KEY_CAUSE, PROOF_RULES, Require, Settled, Verdict, WarmStanding, group,
};

/// What the table says of a check that did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    pub why: String,
    /// The change to make; none where the message is the whole story (an SQL error).
    pub fix: Option<String>,
}

/// A verdict production's planner gave (`check --stats`): its answer, and the fix for it.
fn at_production(c: &CheckResult, production: &str) -> Brief {
    let here = c.here.map(|v| v.as_str()).unwrap_or("?");
    let fix = match c.verdict {
        Verdict::NotChosen | Verdict::GenericPlan => Some(
            "at production's sizes and statistics the planner prefers the plan above: make the \
             index serve the read path more cheaply (its order, its columns, a narrower \
             predicate), or require the index production's planner chooses"
                .to_string(),
        ),
        Verdict::SeqScan => Some(
            "production's planner reads that table whole at its size: give the read path an \
             index it chooses there, or allow_seq_scan it if reading it whole is intended"
                .to_string(),
        ),
        Verdict::Error => Some(
            "see the reason: production's plan could not be made, so no verdict was given on \
             this database's rows instead"
                .to_string(),
        ),
        _ => None,
    };
    Brief {
        why: format!(
            "at production's statistics ({production}); on this database's own statistics: \
             {here}"
        ),
        fix,
    }
}

/// The brief of a check that did not pass, under `require`.
pub fn of(c: &CheckResult, require: Require) -> Brief {
    let mut brief = of_verdict(c, require);
    // After a migration that changed the index: the statement, and the fix is there.
    if let Some(change) = &c.changed_by {
        if c.verdict != Verdict::MissingIndex {
            brief.why = format!(
                "{}; the migration changed {} at {}:{}",
                brief.why, change.index, change.path, change.line
            );
        }
        brief.fix = Some(format!(
            "the statement at {}:{} changes {}: keep the index as the read path needs it, or \
             require one that serves it after the migration",
            change.path, change.line, change.index
        ));
    }
    brief
}

fn of_verdict(c: &CheckResult, require: Require) -> Brief {
    let index = c.index_shown();
    let warning = c.is_warning(require);
    // Production's planner decided (`check --stats`): its answer is the reason.
    if let (Some(_), Some(production)) = (c.here, &c.production) {
        return at_production(c, production);
    }
    match c.verdict {
        Verdict::NotUsable => Brief {
            why: match cause(&c.message, PROOF_RULES) {
                Some(cause) => format!(
                    "{index} cannot serve this SQL: {cause} ({})",
                    not_usable_proof(c)
                ),
                None => format!("{index} cannot serve this SQL: {}", not_usable_proof(c)),
            },
            fix: Some(
                "make the SQL imply the index's predicate with constants and compare its leading \
                 key directly (--explain shows which condition fails), or require an index that \
                 serves this SQL"
                    .into(),
            ),
        },
        Verdict::NotChosen => not_chosen(c, index, warning, require),
        Verdict::SeqScan => seq_scan(c, index, "the plan"),
        Verdict::KeyUnused => Brief {
            why: format!(
                "{index} is read without its leading key in the Index Cond: its Filter throws \
                 most of what it reads away{}",
                cause(&c.message, KEY_CAUSE)
                    .map(|cause| format!(". {cause}"))
                    .unwrap_or_default()
            ),
            fix: Some(
                "compare the index's leading column itself with a value of its type (no cast or \
                 function on the column), or require an index led by the column the query \
                 filters on"
                    .into(),
            ),
        },
        Verdict::GenericPlan => generic_plan(c, index),
        Verdict::OverBudget => Brief {
            why: over_budget(c),
            fix: Some(over_budget_fix(c)),
        },
        Verdict::PlanChanged => Brief {
            why: "the plan's shape differs from its baseline (the diff below)".into(),
            fix: Some(format!(
                "if the new plan is right, record it: plancheck accept --only {} --scope {}",
                c.read_path, c.scope
            )),
        },
        Verdict::MissingIndex => Brief {
            why: before_now(&c.message).to_string(),
            fix: Some(
                "correct the index's name in the expectation, or create the index (did a \
                 migration drop it?)"
                    .into(),
            ),
        },
        Verdict::InvalidIndex => Brief {
            why: format!(
                "{}: the planner ignores it",
                c.message.split(": ").next().unwrap_or(&c.message)
            ),
            fix: Some(format!(
                "rebuild it: REINDEX INDEX CONCURRENTLY {index} (or DROP INDEX CONCURRENTLY and \
                 create it again)"
            )),
        },
        Verdict::NoStatistics => no_statistics(c),
        Verdict::Error | Verdict::Pass => Brief {
            why: c.message.clone(),
            fix: None,
        },
    }
}

/// A verdict the data decides, on a plan over relations never analysed: what the guesses gave,
/// and the `ANALYZE` that gives the planner statistics to choose by.
fn no_statistics(c: &CheckResult) -> Brief {
    let relations = c.unanalysed.join(", ");
    let at = c
        .at_guesses
        .map_or_else(String::new, |v| format!(" (at the planner's guesses: {v})"));
    // What the statistics would decide, by what the guesses gave.
    let question = match c.at_guesses {
        Some(Verdict::SeqScan) if !c.seq_scans.is_empty() => {
            format!("whether the plan reads {} whole", c.seq_scans.join(", "))
        }
        Some(Verdict::KeyUnused) => format!("how the plan walks {}", c.index_shown()),
        Some(Verdict::OverBudget) => "what the plan reads, against its budget".to_string(),
        Some(Verdict::PlanChanged) => "the plan's shape, against its baseline".to_string(),
        _ => format!("whether the planner chooses {}", c.index_shown()),
    };
    Brief {
        why: format!("{relations} never analysed: {question} says nothing without statistics{at}"),
        fix: Some(format!(
            "run ANALYZE {relations} in the CI job after loading its rows (or --unanalysed judge \
             to judge at the planner's guesses)"
        )),
    }
}

/// How a `not-usable` was proved, in a clause.
fn not_usable_proof(c: &CheckResult) -> &'static str {
    match c.settled_by {
        Some(Settled::Scratch) => {
            "alone on its table with seq scans off, on a schema-only copy, the planner never \
             reads it"
        }
        Some(Settled::Rule) => "PostgreSQL's proof rules show it",
        Some(Settled::Replan) => "no re-plan on the measured server could read it",
        Some(Settled::Plan) | None => "the planner never read it",
    }
}

fn not_chosen(c: &CheckResult, index: &str, warning: bool, require: Require) -> Brief {
    let instead = instead(c);
    match c.usable {
        Some(true) => Brief {
            why: format!(
                "{index} can serve this SQL, but at these statistics the planner chose {instead}"
            ),
            fix: Some(if warning || require == Require::Usable {
                "on production-like data, ANALYZE the tables and compare the plans' costs \
                 (--explain)"
                    .into()
            } else {
                "on a small CI database, --require usable makes this a warning; on \
                 production-like data, ANALYZE the tables and compare the plans' costs \
                 (--explain)"
                    .into()
            }),
        },
        _ => Brief {
            why: format!(
                "{index} is not in the plan ({instead}), and whether it can serve this SQL is not \
                 settled{}",
                c.unsettled
                    .as_deref()
                    .map(|why| format!(": {why}"))
                    .unwrap_or_default()
            ),
            fix: Some(
                "--explain shows the plans and the re-plans tried; the reason above says what \
                 was missing to settle it"
                    .into(),
            ),
        },
    }
}

fn seq_scan(c: &CheckResult, index: &str, which: &str) -> Brief {
    if !c.read_in_calls.is_empty() {
        return read_in_calls(c, index, which);
    }
    let whole = list(&c.seq_scans);
    let small = if c.small_reads_only {
        " (each under --large-rows by the catalog's estimate: a warning under --require usable)"
    } else {
        ""
    };
    let first = c.seq_scans.first().map_or("name", String::as_str);
    let why = if c.required_index.is_empty() {
        format!(
            "{which} reads {whole} whole{small}; no index is required (index = false), so only \
             what allow_seq_scan names may be"
        )
    } else {
        format!("{index} is used, but {which} reads {whole} whole{small}")
    };
    Brief {
        why,
        fix: Some(format!(
            "if reading {first} whole is expected on every database, allow_seq_scan = \
             [\"{first}\"] in the expectation; else an index for the condition on it"
        )),
    }
}

/// A relation read whole inside a function call the plan makes: PostgreSQL's counts show it,
/// the plan shows only the call.
fn read_in_calls(c: &CheckResult, index: &str, which: &str) -> Brief {
    let inside = list(&c.read_in_calls);
    let elsewhere: Vec<String> = c
        .seq_scans
        .iter()
        .filter(|r| !c.read_in_calls.contains(r))
        .cloned()
        .collect();
    let also = if elsewhere.is_empty() {
        String::new()
    } else {
        format!(", and {which} reads {} whole", list(&elsewhere))
    };
    let lead = if c.required_index.is_empty() {
        "no index is required (index = false), but".to_string()
    } else {
        format!("{index} is used, but")
    };
    let first = &c.read_in_calls[0];
    Brief {
        why: format!(
            "{lead} a function call in the plan reads {inside} whole (PostgreSQL counted the \
             reads; the plan shows only the call){also}"
        ),
        fix: Some(format!(
            "read only what the call needs (a condition an index serves, a LIMIT that stops \
             early); if reading {first} whole is expected on every database, allow_seq_scan = \
             [\"{first}\"] in the expectation"
        )),
    }
}

fn generic_plan(c: &CheckResult, index: &str) -> Brief {
    let uses =
        c.required_index.is_empty() || c.used.iter().any(|u| u == index || c.accepted.contains(u));
    let prepared = "the generic plan a prepared statement may switch to after five runs";
    if uses && !c.seq_scans.is_empty() {
        let mut brief = seq_scan(c, index, prepared);
        brief.why = format!("the custom plan passes; {brief_why}", brief_why = brief.why);
        return brief;
    }
    if let Some(custom) = c.custom_verdict {
        let cause = cause(&c.message, PROOF_RULES)
            .map(|cause| format!(": {cause}"))
            .unwrap_or_default();
        return Brief {
            why: format!(
                "{prepared} cannot use {index} whatever the data{cause} (the custom plan, at \
                 these statistics: {custom})"
            ),
            fix: Some(GENERIC_FIX.into()),
        };
    }
    let what = match c.usable {
        Some(false) => match cause(&c.message, PROOF_RULES) {
            Some(cause) => format!("cannot use {index}: {cause}"),
            None => format!("cannot use {index}"),
        },
        Some(true) => format!("can use {index} but does not choose it"),
        None if uses => format!("reads {index} without its leading key"),
        None => format!("does not use {index} (whether it could is not settled)"),
    };
    Brief {
        why: format!("the custom plan uses {index}, but {prepared} {what}"),
        fix: Some(GENERIC_FIX.into()),
    }
}

/// What fixes a generic plan that cannot use the index.
const GENERIC_FIX: &str = "write the value the index's predicate needs as a constant in the \
     SQL, not a parameter, or run the statement with plan_cache_mode = force_custom_plan";

/// Each budget the check is over, in a clause.
fn over_budget(c: &CheckResult) -> String {
    let mut over = Vec::new();
    if let (Some(limit), Some(w)) = (c.budget.warm_ms, c.warm_ms)
        && warm_over(c)
    {
        over.push(format!(
            "warm p50 {:.2} ms is over its budget of {limit} ms in every run (fastest {:.2} ms)",
            w.p50, w.min
        ));
    }
    if buffers_over(c) {
        over.push(format!(
            "{:.0} shared buffers are over its budget of {:.0}",
            c.shared_buffers.unwrap_or_default(),
            c.budget.buffers.unwrap_or_default()
        ));
    }
    if let Some(ratio) = ratio_over(c) {
        let rel = c
            .budget
            .relative
            .as_ref()
            .expect("a ratio over has a relative budget");
        let scope = rel.scope.as_deref().unwrap_or(&c.scope);
        over.push(format!(
            "it reads {ratio:.1}× the buffers of {} [{scope}], over its limit of {}×",
            rel.to, rel.max_ratio
        ));
    }
    if over.is_empty() {
        return before_now(&c.message).to_string();
    }
    over.join("; ")
}

/// Whether the judge found the warm time over its budget (beyond noise and the runs' spread).
fn warm_over(c: &CheckResult) -> bool {
    c.budget_used.as_ref().and_then(|u| u.warm) == Some(WarmStanding::Over)
}

/// Whether the check's shared buffers are over their budget.
fn buffers_over(c: &CheckResult) -> bool {
    matches!((c.budget.buffers, c.shared_buffers), (Some(limit), Some(b)) if b > limit)
}

/// The check's buffers over another read path's, when over its limit.
fn ratio_over(c: &CheckResult) -> Option<f64> {
    let rel = c.budget.relative.as_ref()?;
    let ratio = c.budget_used.as_ref()?.ratio?;
    (ratio > rel.max_ratio).then_some(ratio)
}

/// What to do about an `over-budget`, from what changed: buffers over their budget mean the plan
/// reads more; time over with the buffers within their budget means the plan reads no more than
/// it may, so the time is this machine's (buffers do not depend on the machine, milliseconds do).
/// Without a buffers budget nothing shows which, and it says how to make it show.
fn over_budget_fix(c: &CheckResult) -> String {
    if buffers_over(c) || ratio_over(c).is_some() {
        return "the plan reads more buffers than it may: find what it now reads more of \
                (--explain), or raise the budget in the expectation if the growth is expected"
            .into();
    }
    let shape = if c.plan_changed {
        "; its shape did change from its baseline (the diff below): see whether the new shape \
         costs more time for the same reads"
    } else {
        ""
    };
    let within = match (c.shared_buffers, c.budget.buffers, &c.budget.relative) {
        (Some(b), Some(limit), _) => Some(format!("{} of {}", group(b), group(limit))),
        (Some(b), None, Some(rel)) => {
            let ratio = c.budget_used.as_ref().and_then(|u| u.ratio);
            Some(match ratio {
                Some(r) => format!(
                    "{} buffers, {r:.1}× {}, limit {}×",
                    group(b),
                    rel.to,
                    rel.max_ratio
                ),
                None => format!("{} buffers", group(b)),
            })
        }
        _ => None,
    };
    match within {
        Some(within) => format!(
            "its buffers are within their budget ({within}): the plan reads no more than it may, \
             so the time is contention or noise on this machine, not a plan that reads \
             more{shape}; run it again on a quieter machine or with more --iterations, or raise \
             warm_ms if this machine is the one that counts"
        ),
        None => {
            let now = match c.shared_buffers {
                Some(b) => format!("{} buffers now", group(b)),
                None => "its buffers not measured".to_string(),
            };
            format!(
                "no buffers budget says whether the plan reads more ({now}): set `buffers` in \
                 the budget (buffers travel between machines, milliseconds do not){shape}; run \
                 it again on a quieter machine, or raise warm_ms if the time is expected"
            )
        }
    }
}

/// What was used instead of the required index, as the plan names the access paths, the
/// first two and how many in all.
fn instead(c: &CheckResult) -> String {
    let shown: Vec<String> = c
        .instead
        .iter()
        .map(|line| line.split(" (").next().unwrap_or(line).to_string())
        .collect();
    if shown.is_empty() {
        return "another plan".into();
    }
    list(&shown)
}

/// `a`, `a and b`, or `a, b and N more`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [a, b, rest @ ..] => format!("{a}, {b} and {} more", rest.len()),
    }
}

/// The cause a message names after `marker`: to the end of its sentence (`. `, or ` (` for an
/// aside), without the full stop.
fn cause<'m>(message: &'m str, marker: &str) -> Option<&'m str> {
    let (_, after) = message.split_once(marker)?;
    let end = [". ", " (no scratch re-plan"]
        .iter()
        .filter_map(|stop| after.find(stop))
        .min()
        .unwrap_or(after.len());
    let cause = after[..end].trim_end_matches('.');
    (!cause.is_empty()).then_some(cause)
}

/// A message up to what it says the read path uses now (`; the read path uses now: …`), which
/// the table's cells show.
fn before_now(message: &str) -> &str {
    message
        .split("; the read path uses now")
        .next()
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Budget, Relative};
    use crate::verdict::BudgetUsed;
    use crate::verdict::test_support::measured;

    fn check(verdict: Verdict) -> CheckResult {
        let mut c = measured("page", verdict, 1.0, 10.0);
        c.required_index = "posts_visible_idx".into();
        c.message = "the whole reasoning; the read path uses now: Seq Scan on posts".into();
        c
    }

    #[test]
    fn no_statistics_asks_what_the_statistics_would_decide_and_names_the_analyze() {
        let mut c = check(Verdict::NoStatistics);
        c.unanalysed = vec!["post_actions".into(), "post".into()];
        c.at_guesses = Some(Verdict::Pass);
        let b = of(&c, Require::Chosen);
        assert_eq!(
            b.why,
            "post_actions, post never analysed: whether the planner chooses posts_visible_idx \
             says nothing without statistics (at the planner's guesses: pass)"
        );
        assert_eq!(
            b.fix.as_deref(),
            Some(
                "run ANALYZE post_actions, post in the CI job after loading its rows (or \
                 --unanalysed judge to judge at the planner's guesses)"
            )
        );
        // The index is used; what the guesses decided is a whole read of post.
        c.at_guesses = Some(Verdict::SeqScan);
        c.seq_scans = vec!["post".into()];
        let b = of(&c, Require::Usable);
        assert!(
            b.why.starts_with(
                "post_actions, post never analysed: whether the plan reads post whole says \
                 nothing without statistics (at the planner's guesses: seq-scan)"
            ),
            "{b:?}"
        );
    }

    #[test]
    fn not_chosen_says_usable_and_suggests_require_usable_only_where_it_is_not_given() {
        let mut c = check(Verdict::NotChosen);
        c.usable = Some(true);
        c.settled_by = Some(Settled::Replan);
        c.instead = vec!["Seq Scan on posts (99 rows removed by filter)".into()];
        let b = of(&c, Require::Chosen);
        assert_eq!(
            b.why,
            "posts_visible_idx can serve this SQL, but at these statistics the planner chose \
             Seq Scan on posts"
        );
        assert!(
            b.fix.as_deref().unwrap().contains("--require usable"),
            "{b:?}"
        );
        let b = of(&c, Require::Usable);
        assert!(
            !b.fix.as_deref().unwrap().contains("--require usable"),
            "{b:?}"
        );
        // Not proved usable: it says so, and why, never "can serve".
        c.usable = None;
        c.settled_by = None;
        c.unsettled = Some("another index won every re-plan".into());
        let b = of(&c, Require::Chosen);
        assert!(b.why.contains("is not settled: another index won"), "{b:?}");
        assert!(!b.why.contains("can serve this SQL, but"), "{b:?}");
    }

    #[test]
    fn not_usable_names_how_it_was_proved() {
        let mut c = check(Verdict::NotUsable);
        c.usable = Some(false);
        c.settled_by = Some(Settled::Scratch);
        let b = of(&c, Require::Chosen);
        assert!(
            b.why
                .starts_with("posts_visible_idx cannot serve this SQL: "),
            "{b:?}"
        );
        assert!(b.why.contains("schema-only copy"), "{b:?}");
        c.settled_by = Some(Settled::Rule);
        assert!(
            of(&c, Require::Chosen)
                .why
                .contains("PostgreSQL's proof rules show it")
        );
    }

    #[test]
    fn the_cause_the_verdict_named_is_quoted() {
        let mut c = check(Verdict::NotUsable);
        c.settled_by = Some(Settled::Rule);
        c.message = format!(
            "posts_visible_idx cannot serve this SQL: its predicate … is not implied. \
             {PROOF_RULES}a parameter stands where the predicate needs a constant \
             (`visibility = $2`) (no scratch re-plan: --no-scratch)."
        );
        assert_eq!(
            of(&c, Require::Chosen).why,
            "posts_visible_idx cannot serve this SQL: a parameter stands where the predicate \
             needs a constant (`visibility = $2`) (PostgreSQL's proof rules show it)"
        );
        let mut c = check(Verdict::KeyUnused);
        c.message = format!(
            "i is in the plan, but …, {KEY_CAUSE}The query wraps id in a cast to text. More."
        );
        assert!(
            of(&c, Require::Chosen)
                .why
                .ends_with("reads away. The query wraps id in a cast to text"),
        );
    }

    #[test]
    fn a_seq_scan_names_what_is_read_whole_and_the_allow_seq_scan_entry() {
        let mut c = check(Verdict::SeqScan);
        c.seq_scans = vec!["members".into(), "forums".into(), "threads".into()];
        let b = of(&c, Require::Chosen);
        assert_eq!(
            b.why,
            "posts_visible_idx is used, but the plan reads members, forums and 1 more whole"
        );
        assert!(
            b.fix.unwrap().contains("allow_seq_scan = [\"members\"]"),
            "the fix names the entry"
        );
        c.small_reads_only = true;
        assert!(
            of(&c, Require::Usable)
                .why
                .contains("a warning under --require usable")
        );
    }

    #[test]
    fn a_whole_read_inside_a_call_says_the_plan_shows_only_the_call() {
        let mut c = check(Verdict::SeqScan);
        c.seq_scans = vec!["members".into(), "posts".into()];
        c.read_in_calls = vec!["posts".into()];
        let b = of(&c, Require::Chosen);
        assert_eq!(
            b.why,
            "posts_visible_idx is used, but a function call in the plan reads posts whole \
             (PostgreSQL counted the reads; the plan shows only the call), and the plan reads \
             members whole"
        );
        let fix = b.fix.unwrap();
        assert!(fix.starts_with("read only what the call needs"), "{fix}");
        assert!(fix.contains("allow_seq_scan = [\"posts\"]"), "{fix}");
    }

    #[test]
    fn a_seq_scan_with_no_required_index_names_no_index_as_used() {
        let mut c = check(Verdict::SeqScan);
        c.required_index = String::new();
        c.seq_scans = vec!["posts".into()];
        let b = of(&c, Require::Chosen);
        assert_eq!(
            b.why,
            "the plan reads posts whole; no index is required (index = false), so only what \
             allow_seq_scan names may be"
        );
        let mut g = check(Verdict::GenericPlan);
        g.required_index = String::new();
        g.seq_scans = vec!["posts".into()];
        let b = of(&g, Require::Chosen);
        assert!(
            b.why
                .starts_with("the custom plan passes; the generic plan a prepared statement"),
            "{}",
            b.why
        );
        assert!(
            b.why.contains("reads posts whole; no index is required"),
            "{}",
            b.why
        );
    }

    #[test]
    fn a_generic_plan_says_what_the_generic_plan_does() {
        let mut c = check(Verdict::GenericPlan);
        c.usable = Some(false);
        let b = of(&c, Require::Chosen);
        assert!(
            b.why
                .ends_with("may switch to after five runs cannot use posts_visible_idx"),
            "{b:?}"
        );
        assert!(b.fix.unwrap().contains("force_custom_plan"));
        // Its generic plan uses the index and reads a table whole: the seq-scan's fix.
        c.usable = None;
        c.used = vec!["posts_visible_idx".into()];
        c.seq_scans = vec!["members".into()];
        let b = of(&c, Require::Chosen);
        assert!(b.why.starts_with("the custom plan passes; "), "{b:?}");
        assert!(b.why.contains("reads members whole"), "{b:?}");
        assert!(b.fix.unwrap().contains("allow_seq_scan"));
    }

    #[test]
    fn over_budget_names_each_budget_it_is_over() {
        let mut c = check(Verdict::OverBudget);
        // One run of 1 ms. Its budget was 0.5 ms when `warm_ms` held the p95 with no noise
        // floor; an excess of 0.5 ms is now timer noise, so 0.4 ms is the budget it is over.
        c.budget = Budget {
            warm_ms: Some(0.4),
            buffers: Some(100.0),
            relative: Some(Relative {
                to: "first-page".into(),
                scope: None,
                max_ratio: 2.0,
            }),
        };
        c.shared_buffers = Some(80.0);
        c.budget_used = Some(BudgetUsed {
            warm_ms: Some(2.5),
            warm: Some(WarmStanding::Over),
            buffers: Some(0.8),
            ratio: Some(7.84),
        });
        let b = of(&c, Require::Chosen);
        assert_eq!(
            b.why,
            "warm p50 1.00 ms is over its budget of 0.4 ms in every run (fastest 1.00 ms); it \
             reads 7.8× the buffers of first-page [member], over its limit of 2×"
        );
        assert!(
            b.fix
                .unwrap()
                .starts_with("the plan reads more buffers than it may"),
            "{c:?}"
        );
    }

    /// A passing check with a time budget of 20 ms and these runs, its buffers `buffers` against
    /// a budget of `limit`, judged on its budgets as a run judges them.
    fn timed(runs: &[f64], buffers: f64, limit: Option<f64>) -> CheckResult {
        let mut c = check(Verdict::Pass);
        c.warm_ms = crate::verdict::Spread::of(runs);
        c.shared_buffers = Some(buffers);
        c.budget = Budget {
            warm_ms: Some(20.0),
            buffers: limit,
            relative: None,
        };
        let mut checks = vec![c];
        crate::verdict::judge_budgets(&mut checks);
        checks.pop().unwrap()
    }

    /// Over its time budget in every run, by 10 ms.
    fn slow(buffers: f64, limit: Option<f64>) -> CheckResult {
        let c = timed(&[30.0, 31.0, 34.0, 30.5, 32.0], buffers, limit);
        assert_eq!(c.verdict, Verdict::OverBudget, "{}", c.message);
        c
    }

    #[test]
    fn the_fix_for_time_over_says_whether_the_plan_reads_more() {
        // Buffers within their budget: the plan reads no more; the time is this machine.
        let b = of(&slow(120.0, Some(400.0)), Require::Chosen);
        assert_eq!(
            b.why,
            "warm p50 31.00 ms is over its budget of 20 ms in every run (fastest 30.00 ms)"
        );
        let fix = b.fix.unwrap();
        assert!(
            fix.starts_with(
                "its buffers are within their budget (120 of 400): the plan reads no more than \
                 it may, so the time is contention or noise on this machine, not a plan that \
                 reads more;"
            ),
            "{fix}"
        );
        assert!(!fix.contains("find what it now reads more of"), "{fix}");
        // Buffers grown past their budget: the plan reads more, whatever the time.
        let b = of(&slow(900.0, Some(400.0)), Require::Chosen);
        assert!(
            b.why
                .ends_with("; 900 shared buffers are over its budget of 400"),
            "{b:?}"
        );
        assert!(
            b.fix
                .unwrap()
                .starts_with("the plan reads more buffers than it may: find what it now reads"),
        );
        // No buffers budget: it cannot say, and says how to make it say.
        let b = of(&slow(120.0, None), Require::Chosen);
        assert!(
            b.fix.unwrap().starts_with(
                "no buffers budget says whether the plan reads more (120 buffers now)"
            ),
        );
        // A changed shape with the same reads: said, since more time for the same reads can be
        // the new shape's.
        let mut c = slow(120.0, Some(400.0));
        c.plan_changed = true;
        let fix = of(&c, Require::Chosen).fix.unwrap();
        assert!(
            fix.contains(
                "not a plan that reads more; its shape did change from its baseline (the diff \
                 below)"
            ),
            "{fix}"
        );
        // Only a relative budget, within its limit: the same, with the ratio it measured.
        let mut c = check(Verdict::Pass);
        c.warm_ms = crate::verdict::Spread::of(&[30.0, 31.0, 34.0]);
        c.shared_buffers = Some(120.0);
        c.budget = Budget {
            warm_ms: Some(20.0),
            buffers: None,
            relative: Some(Relative {
                to: "first-page".into(),
                scope: None,
                max_ratio: 2.0,
            }),
        };
        let mut first = check(Verdict::Pass);
        first.read_path = "first-page".into();
        first.shared_buffers = Some(100.0);
        let mut checks = vec![c, first];
        crate::verdict::judge_budgets(&mut checks);
        assert_eq!(
            checks[0].verdict,
            Verdict::OverBudget,
            "{}",
            checks[0].message
        );
        let fix = of(&checks[0], Require::Chosen).fix.unwrap();
        assert!(
            fix.starts_with(
                "its buffers are within their budget (120 buffers, 1.2× first-page, limit 2×): \
                 the plan reads no more than it may, so the time is contention or noise"
            ),
            "{fix}"
        );
        // Time over within the runs' spread is not named as over.
        let c = timed(&[12.0, 25.0, 22.0, 34.0, 13.0], 900.0, Some(400.0));
        assert_eq!(c.verdict, Verdict::OverBudget, "{}", c.message);
        assert_eq!(
            of(&c, Require::Chosen).why,
            "900 shared buffers are over its budget of 400"
        );
    }

    #[test]
    fn an_invalid_index_is_rebuilt_and_an_error_is_its_message() {
        let mut c = check(Verdict::InvalidIndex);
        c.message = "index posts_visible_idx exists but is not valid (indisvalid = false): a \
                     CREATE INDEX CONCURRENTLY failed"
            .into();
        let b = of(&c, Require::Chosen);
        assert_eq!(
            b.why,
            "index posts_visible_idx exists but is not valid (indisvalid = false): the planner \
             ignores it"
        );
        assert!(
            b.fix
                .unwrap()
                .contains("REINDEX INDEX CONCURRENTLY posts_visible_idx")
        );
        let mut c = check(Verdict::Error);
        c.message = "plans/page.sql:1:8: syntax error".into();
        let b = of(&c, Require::Chosen);
        assert_eq!(
            (b.why.as_str(), b.fix),
            ("plans/page.sql:1:8: syntax error", None)
        );
    }
}
