//! verdict: a plan and what the expectation requires of it, in; a verdict with its reasons, out.
//! Pure: no database, no printing, no clock. A false pass is the worst bug plancheck can have,
//! so every rule here errs toward "not a pass" when the plan does not say enough.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::explain::{Explain, Scan, ScanKind};
pub use crate::model::{Budget, Partition, Relative};

/// The verdict of one check. Kebab-case everywhere: TOML, flags, JSON and the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    NotUsable,
    NotChosen,
    GenericPlan,
    SeqScan,
    OverBudget,
    MissingIndex,
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::NotUsable => "not-usable",
            Verdict::NotChosen => "not-chosen",
            Verdict::GenericPlan => "generic-plan",
            Verdict::SeqScan => "seq-scan",
            Verdict::OverBudget => "over-budget",
            Verdict::MissingIndex => "missing-index",
            Verdict::Error => "error",
        }
    }

    pub fn is_pass(self) -> bool {
        self == Verdict::Pass
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a check must show to pass: the index chosen (the default), or only usable, for a CI
/// database whose small data lets the planner prefer a seq scan (`not-chosen` then warns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Require {
    #[default]
    Chosen,
    Usable,
}

/// How much of each budget a check used: 1.0 is all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BudgetUsed {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffers: Option<f64>,
    /// This check's buffers over the other read path's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// Judges every check's budgets once all have run (a relative budget needs its comparison's
/// figures). Only a check that passed can go over budget: a lost index is the bigger news. A
/// comparison that did not run, or ran without figures, makes the relative budget an `error`:
/// a budget that cannot be measured is never a pass.
pub fn judge_budgets(checks: &mut [CheckResult]) {
    let buffers_of: HashMap<(String, String), Option<f64>> = checks
        .iter()
        .map(|c| ((c.read_path.clone(), c.scope.clone()), c.shared_buffers))
        .collect();
    for c in checks.iter_mut() {
        if c.budget.is_empty() {
            continue;
        }
        let mut used = BudgetUsed::default();
        let mut over: Vec<String> = Vec::new();
        let mut unmeasured: Vec<String> = Vec::new();
        if let Some(limit) = c.budget.warm_ms {
            match c.warm_ms {
                Some(w) => {
                    used.warm_ms = Some(w.p50 / limit);
                    if w.p50 > limit {
                        over.push(format!(
                            "warm p50 {:.2} ms is over the budget of {limit} ms ({:.0}%)",
                            w.p50,
                            100.0 * w.p50 / limit
                        ));
                    }
                }
                None => unmeasured.push("warm time".into()),
            }
        }
        if let Some(limit) = c.budget.buffers {
            match c.shared_buffers {
                Some(b) => {
                    used.buffers = Some(b / limit);
                    if b > limit {
                        over.push(format!(
                            "shared buffers {} are over the budget of {} ({:.0}%)",
                            group(b),
                            group(limit),
                            100.0 * b / limit
                        ));
                    }
                }
                None => unmeasured.push("shared buffers".into()),
            }
        }
        if let Some(rel) = &c.budget.relative {
            let theirs = buffers_of
                .get(&(rel.to.clone(), c.scope.clone()))
                .copied()
                .flatten();
            match (c.shared_buffers, theirs) {
                (Some(mine), Some(theirs)) if theirs > 0.0 => {
                    let ratio = mine / theirs;
                    used.ratio = Some(ratio);
                    if ratio > rel.max_ratio {
                        over.push(format!(
                            "shared buffers {} are {ratio:.1}× those of {} [{}] ({}), over the \
                             limit of {}×",
                            group(mine),
                            rel.to,
                            c.scope,
                            group(theirs),
                            rel.max_ratio
                        ));
                    }
                }
                _ => unmeasured.push(format!("the ratio to {} [{}]", rel.to, c.scope)),
            }
        }
        c.budget_used = Some(used);
        if !c.verdict.is_pass() {
            continue;
        }
        if !unmeasured.is_empty() {
            c.verdict = Verdict::Error;
            c.message = format!(
                "the budget could not be judged: no figure for {}",
                unmeasured.join(", ")
            );
        } else if !over.is_empty() {
            c.verdict = Verdict::OverBudget;
            c.message = format!("{}; {}", over.join("; "), c.message);
        }
    }
}

/// Median and spread of a measured figure, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub p50: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no samples.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let mid = s.len() / 2;
        let p50 = if s.len() % 2 == 1 {
            s[mid]
        } else {
            (s[mid - 1] + s[mid]) / 2.0
        };
        Some(Spread {
            p50,
            min: s[0],
            max: s[s.len() - 1],
        })
    }
}

/// The finished result of one check: one read path in one scope.
#[derive(Debug, Clone)]
pub struct CheckResult {
    pub read_path: String,
    pub scope: String,
    pub required_index: String,
    pub verdict: Verdict,
    pub used: Vec<String>,
    pub seq_scans: Vec<String>,
    pub message: String,
    /// Server-side `Execution Time` of the measured runs.
    pub warm_ms: Option<Spread>,
    pub planning_ms: Option<Spread>,
    /// Shared buffers (hit + read) of the measured runs, median.
    pub shared_buffers: Option<f64>,
    /// The error came from losing the connection: the database failed underneath.
    pub connection_lost: bool,
    /// Warnings about what the planner knew: relations never analysed, or changed a lot since.
    pub notes: Vec<String>,
    /// The check's budgets, and how much of each it used once judged.
    pub budget: Budget,
    pub budget_used: Option<BudgetUsed>,
    /// When the required index was not in the plan: whether re-planning found a plan using it
    /// (`not-chosen`) or none (`not-usable`). `None` when no probe was needed.
    pub usable: Option<bool>,
    /// The plans behind the verdict, labelled (`custom`, `generic`), for `--save-plans`.
    pub plans: Vec<(String, serde_json::Value)>,
    /// The declared planner settings the check ran with (`settings = { … }`).
    pub settings: Vec<(String, String)>,
}

impl CheckResult {
    /// A failure that `--require usable` reports as a warning: the index is usable and merely
    /// not chosen at these statistics (in the custom plan, or in the generic plan).
    pub fn is_warning(&self, require: Require) -> bool {
        require == Require::Usable
            && matches!(self.verdict, Verdict::NotChosen | Verdict::GenericPlan)
            && self.usable == Some(true)
    }
}

/// The required index as the catalog resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredIndex {
    /// Schema of the index (and so of its table).
    pub schema: String,
    pub name: String,
    /// The table the index is on.
    pub table: String,
    /// A partial index's predicate (`pg_get_expr(indpred, indrelid)`), `None` for a full index.
    pub predicate: Option<String>,
    /// For an index on a partitioned table: every leaf partition of the table, with the leaf
    /// index of this index on it (`None` where the partition lacks one). Empty otherwise.
    pub partitions: Vec<Partition>,
}

/// What a plan must satisfy.
#[derive(Debug, Clone)]
pub struct Rules<'a> {
    pub index: &'a RequiredIndex,
    /// Relations that may be seq scanned: `name` or `schema.name`.
    pub allow_seq_scan: &'a [String],
    /// `pg_class.reltuples` of the relations in the plan, keyed `schema.name`. Used to tell a
    /// scan of another index with no Index Cond that reads the whole relation (a seq scan in
    /// all but name) from one a LIMIT stops after a few rows.
    pub reltuples: &'a HashMap<String, f64>,
}

/// What one plan was judged to be.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanVerdict {
    pub verdict: Verdict,
    /// Every access path in the plan, as a reader names it: `Index Scan using x on t`.
    pub used: Vec<String>,
    /// Relations read whole without being allowed to be: seq scans, and scans of another index
    /// with no Index Cond over (nearly) the whole relation.
    pub seq_scans: Vec<String>,
    pub message: String,
}

/// A scan that reads at least this share of a relation's rows, through an index with no Index
/// Cond, is treated as the seq scan it is.
const WHOLE_RELATION_SHARE: f64 = 0.5;

/// The cost PostgreSQL up to 17 adds to a disabled path (`disable_cost`).
const DISABLED_COST: f64 = 1.0e10;

/// Judges one plan against the rules.
pub fn judge_plan(plan: &Explain, rules: &Rules<'_>) -> PlanVerdict {
    let scans = plan.scans();
    let used = describe_access_paths(&scans);

    let mut uses_required = scans.iter().any(|s| is_required_index(s, rules.index));
    // A partitioned index: plans name the leaf indexes on the leaf partitions. Every partition
    // the plan scans (pruned ones are not in it) must be read through its leaf of the required
    // index; a partition read any other way is named.
    let mut partition_problems: Vec<(bool, String, String)> = Vec::new();
    if !rules.index.partitions.is_empty() {
        let mut any_ran = false;
        let mut any_leaf = false;
        for part in &rules.index.partitions {
            let on_part: Vec<&Scan<'_>> = scans
                .iter()
                .filter(|s| {
                    s.relation == Some(part.table.as_str())
                        && s.schema.is_none_or(|sc| sc == part.schema)
                        && s.kind != ScanKind::BitmapHeap
                })
                .collect();
            if on_part.is_empty() {
                continue;
            }
            let leaf_used: Vec<&&Scan<'_>> = on_part
                .iter()
                .filter(|s| {
                    s.kind.uses_index()
                        && part.leaf_index.is_some()
                        && s.node.index_name == part.leaf_index
                })
                .collect();
            if leaf_used.is_empty() {
                let seq = on_part.iter().any(|s| s.kind == ScanKind::Seq);
                let how: Vec<String> = on_part.iter().map(|s| describe_scan(s, true)).collect();
                let lacks = if part.leaf_index.is_none() {
                    format!(
                        " (partition {} has no leaf of {})",
                        part.table, rules.index.name
                    )
                } else {
                    String::new()
                };
                partition_problems.push((
                    seq,
                    qualified_for_display(&part.table, Some(&part.schema)),
                    format!("{}{lacks}", how.join("; ")),
                ));
            } else {
                any_leaf = true;
                // A skipped partition (a LIMIT satisfied earlier) still shows the planned path.
                any_ran |= leaf_used.iter().any(|s| s.node.actual_loops != Some(0.0));
            }
        }
        uses_required = any_leaf && any_ran && partition_problems.is_empty();
        if any_leaf && any_ran && !partition_problems.is_empty() {
            let index = &rules.index.name;
            let seq = partition_problems.iter().any(|(seq, _, _)| *seq);
            let detail: Vec<&str> = partition_problems
                .iter()
                .map(|(_, _, d)| d.as_str())
                .collect();
            return PlanVerdict {
                verdict: if seq {
                    Verdict::SeqScan
                } else {
                    Verdict::NotChosen
                },
                message: format!(
                    "{index} is used on some partitions, but not on every partition the plan \
                     scans: {}",
                    detail.join("; ")
                ),
                seq_scans: partition_problems
                    .iter()
                    .filter(|(seq, _, _)| *seq)
                    .map(|(_, name, _)| name.clone())
                    .collect(),
                used,
            };
        }
    }
    let mut seq_scans = Vec::new();
    let mut seq_details = Vec::new();
    for s in &scans {
        let Some(relation) = s.relation else { continue };
        if is_allowed(relation, s.schema, rules.allow_seq_scan) {
            continue;
        }
        let whole = match s.kind {
            ScanKind::Seq => true,
            ScanKind::Index | ScanKind::IndexOnly => {
                !is_required_index(s, rules.index) && reads_whole_relation(s, rules.reltuples)
            }
            _ => false,
        };
        if whole {
            let name = qualified_for_display(relation, s.schema);
            if !seq_scans.contains(&name) {
                seq_scans.push(name);
            }
            seq_details.push(describe_scan(s, true));
        }
    }

    let index = &rules.index.name;
    if !uses_required {
        let mut detailed: Vec<String> = Vec::new();
        for s in scans.iter().filter(|s| s.kind != ScanKind::BitmapHeap) {
            let text = describe_scan(s, true);
            if !detailed.contains(&text) {
                detailed.push(text);
            }
        }
        let instead = if detailed.is_empty() {
            "no scan at all".to_string()
        } else {
            detailed.join("; ")
        };
        return PlanVerdict {
            verdict: Verdict::NotChosen,
            message: format!("{index} is not in the plan; used instead: {instead}"),
            used,
            seq_scans,
        };
    }
    if !seq_scans.is_empty() {
        let allowed = if rules.allow_seq_scan.is_empty() {
            "no relation may be seq scanned here".to_string()
        } else {
            format!("only {} may be", rules.allow_seq_scan.join(", "))
        };
        return PlanVerdict {
            verdict: Verdict::SeqScan,
            message: format!(
                "{index} is used, but the plan also reads a whole relation: {} ({allowed})",
                seq_details.join("; ")
            ),
            used,
            seq_scans,
        };
    }
    let how = scans
        .iter()
        .find(|s| is_required_index(s, rules.index))
        .map(|s| describe_scan(s, false))
        .unwrap_or_default();
    PlanVerdict {
        verdict: Verdict::Pass,
        message: how,
        used,
        seq_scans,
    }
}

/// A plan made while probing whether the required index can serve the statement at all: the
/// same statement re-planned (without running it) with sequential scans and, rung by rung,
/// competing scan types disabled.
#[derive(Debug, Clone)]
pub struct Probe {
    /// What was disabled, as a reader would write it: `enable_seqscan = off, …`.
    pub disabled: String,
    pub plan: Explain,
}

/// Splits a `not-chosen` verdict in two. When no probe plan uses the required index, no plan
/// can: the query's predicate does not let the planner use it (for a partial index, the query
/// does not imply its predicate), a code regression true on any data, `not-usable`. When one
/// does, the planner merely preferred another plan at these statistics: `not-chosen`, with the
/// two plans' costs.
///
/// Up to PostgreSQL 17 a disabled path costs 1e10 more: a probe plan that still holds one (a
/// disabled seq scan that won because nothing else could serve) has a cost that cannot be
/// compared, and is said so. PostgreSQL 18 marks such nodes `Disabled` and keeps the cost
/// honest. Either way the index is found by name, never inferred from a cost.
pub fn judge_usability(
    verdict: PlanVerdict,
    chosen: &Explain,
    probes: &[Probe],
    rules: &Rules<'_>,
    non_immutable: &[String],
) -> PlanVerdict {
    if verdict.verdict != Verdict::NotChosen {
        return verdict;
    }
    let index = &rules.index.name;
    let usable = probes.iter().find(|p| {
        p.plan
            .scans()
            .iter()
            .any(|s| is_required_index(s, rules.index))
    });
    match usable {
        None => {
            // Another index on the same table that won every re-plan leaves a full index's
            // usability open: it may only have been dearer. A partial index whose predicate the
            // query implies always gets a path of its own, and is smaller than any index on the
            // same keys, so for it the probes settle the question.
            let rival = probes.iter().find_map(|p| {
                p.plan.scans().into_iter().find_map(|s| {
                    (s.kind.uses_index()
                        && s.relation == Some(rules.index.table.as_str())
                        && s.node.index_name.as_deref() != Some(index.as_str()))
                    .then(|| s.node.index_name.clone().unwrap_or_default())
                })
            });
            let tried = "even with seq scans and, in turn, each competing scan type disabled";
            match (&rules.index.predicate, rival) {
                (None, Some(rival)) => PlanVerdict {
                    message: format!(
                        "{}. {rival} was preferred to {index} in every re-plan ({tried}), so \
                         whether {index} can serve this SQL at all is not settled",
                        verdict.message
                    ),
                    ..verdict
                },
                (predicate, _) => {
                    let conditions = conditions_on(chosen, &rules.index.table);
                    let beside = match predicate {
                        Some(p) => format!(
                            "its predicate {p} is not implied by the conditions on {}: {}. ",
                            rules.index.table,
                            if conditions.is_empty() {
                                "none".to_string()
                            } else {
                                conditions.join(", ")
                            }
                        ),
                        None => String::new(),
                    };
                    let cause = predicate
                        .as_deref()
                        .and_then(|p| recognise_cause(p, &conditions, non_immutable))
                        .map(|c| format!("Cause: {c}. "))
                        .unwrap_or_default();
                    PlanVerdict {
                        verdict: Verdict::NotUsable,
                        message: format!(
                            "{index} cannot serve this SQL: {beside}{cause}No plan uses it \
                             {tried}. {}",
                            verdict.message
                        ),
                        ..verdict
                    }
                }
            }
        }
        Some(probe) => {
            let chosen_cost = chosen.root.total_cost;
            let index_cost = probe.plan.root.total_cost;
            let still_disabled = probe.plan.nodes().iter().any(|n| {
                n.disabled == Some(true) || (n.children.is_empty() && n.total_cost >= DISABLED_COST)
            });
            let costs = if still_disabled {
                format!(
                    "the chosen plan costs {chosen_cost:.2}; the plan using {index} (with {}) \
                     still needs a disabled path elsewhere, so its cost does not compare",
                    probe.disabled
                )
            } else {
                format!(
                    "the chosen plan costs {chosen_cost:.2}, a plan using {index} costs \
                     {index_cost:.2} ({:.1}×; found with {})",
                    if chosen_cost > 0.0 {
                        index_cost / chosen_cost
                    } else {
                        f64::INFINITY
                    },
                    probe.disabled
                )
            };
            PlanVerdict {
                message: format!(
                    "{}. {index} is usable, but at these statistics the planner preferred \
                     another plan: {costs}",
                    verdict.message
                ),
                ..verdict
            }
        }
    }
}

/// The conditions a plan applied to a table, as EXPLAIN prints them: `Index Cond: (…)`,
/// `Filter: (…)`, `Recheck Cond: (…)`, in plan order, without repeats.
pub fn conditions_on(plan: &Explain, table: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in plan.scans() {
        if s.relation != Some(table) {
            continue;
        }
        let n = s.node;
        for (label, cond) in [
            ("Index Cond", &n.index_cond),
            ("Recheck Cond", &n.recheck_cond),
            ("Filter", &n.filter),
        ] {
            if let Some(c) = cond {
                let text = format!("{label}: {c}");
                if !out.contains(&text) {
                    out.push(text);
                }
            }
        }
    }
    out
}

/// Functions whose value is not known when a plan is made: the planner cannot compare them
/// with a partial index's constants.
const NOT_IMMUTABLE: [&str; 9] = [
    "current_setting(",
    "now()",
    "CURRENT_DATE",
    "CURRENT_TIMESTAMP",
    "clock_timestamp()",
    "statement_timestamp()",
    "CURRENT_USER",
    "SESSION_USER",
    "random()",
];

/// Whether a printed condition mentions `column` as a whole name (`p.visibility`,
/// `(visibility`, `(p.visibility)::text`).
fn mentions(condition: &str, column: &str) -> bool {
    condition.match_indices(column).any(|(i, _)| {
        let before = condition[..i].chars().next_back();
        let after = condition[i + column.len()..].chars().next();
        matches!(before, Some('.' | '(' | ' '))
            && matches!(after, None | Some(' ' | ')' | ':' | ','))
    })
}

/// Names, where it is recognisable, why a query's conditions do not imply a partial index's
/// predicate. The planner proves implication only from constants and operators it knows
/// (`predtest.c`), so the usual causes show in the text of the conditions.
///
/// `non_immutable` names the functions in the conditions that the catalog says are STABLE or
/// VOLATILE (a user's `current_visibility()`): their values are not constants either.
pub fn recognise_cause(
    predicate: &str,
    conditions: &[String],
    non_immutable: &[String],
) -> Option<String> {
    let all = conditions.join(" ");
    let has_parameter = all
        .match_indices('$')
        .any(|(i, _)| all[i + 1..].starts_with(|c: char| c.is_ascii_digit()));
    if has_parameter {
        return Some(
            "a parameter stands where the predicate needs a constant; the planner can only \
             match a partial index against constants, and a generic plan knows no parameter \
             values"
                .into(),
        );
    }
    if let Some(f) = NOT_IMMUTABLE.iter().find(|f| all.contains(*f)) {
        return Some(format!(
            "a value computed at run time ({}…) stands where the predicate needs a constant; the \
             planner can only match a partial index against constants",
            f.trim_end_matches(['(', ')'])
        ));
    }
    if let Some(f) = non_immutable
        .iter()
        .find(|f| all.contains(&format!("{f}(")))
    {
        return Some(format!(
            "{f}() is not IMMUTABLE: its value is computed at run time, where the predicate \
             needs a constant; the planner can only match a partial index against constants"
        ));
    }
    // The column the predicate constrains, as it prints: `(visibility = 'visible'::text)`.
    let column = predicate
        .trim_start_matches('(')
        .split([' ', ')'])
        .next()
        .unwrap_or("");
    if !column.is_empty() {
        let on_column: Vec<&String> = conditions.iter().filter(|c| mentions(c, column)).collect();
        let text: String = on_column
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if on_column.is_empty() {
            return Some(format!(
                "the query puts no condition on {column}, which the predicate constrains"
            ));
        }
        if text.contains(" <> ") {
            return Some(format!(
                "a widened predicate: `<>` on {column} admits rows the index leaves out"
            ));
        }
        if text.contains("ANY (") && !predicate.contains("ANY (") {
            return Some(format!(
                "a widened predicate: an IN list on {column} admits rows the index leaves out"
            ));
        }
        if text.contains(" OR ") {
            return Some(format!(
                "a widened predicate: an OR on {column} admits rows the index leaves out"
            ));
        }
        if text.contains(&format!("{column})::")) {
            return Some(format!(
                "a cast on {column}: the comparison is made in another type or collation than \
                 the predicate's"
            ));
        }
    }
    None
}

/// Combines the custom plan's verdict with the generic plan's: a read path with parameters runs
/// as a prepared statement, which switches to the generic plan after its fifth execution when
/// that plan does not look dearer. A generic plan knows no parameter values, so a partial index
/// whose predicate needs a constant (`visibility = 'visible'`) cannot be proved usable from
/// `visibility = $2`: the custom plan passes and the generic one falls to a seq scan.
pub fn judge_generic(custom: PlanVerdict, generic: PlanVerdict, index: &str) -> PlanVerdict {
    if !custom.verdict.is_pass() {
        return PlanVerdict {
            message: format!("custom plan: {}", custom.message),
            ..custom
        };
    }
    if generic.verdict.is_pass() {
        return PlanVerdict {
            message: format!("{} (custom and generic plans)", custom.message),
            ..custom
        };
    }
    PlanVerdict {
        verdict: Verdict::GenericPlan,
        message: format!(
            "the custom plan uses {index}, but the generic plan (what a prepared statement may \
             switch to after its fifth execution) is {}: {}",
            generic.verdict, generic.message
        ),
        used: generic.used,
        seq_scans: generic.seq_scans,
    }
}

fn is_required_index(scan: &Scan<'_>, index: &RequiredIndex) -> bool {
    if !scan.kind.uses_index() || scan.node.index_name.as_deref() != Some(index.name.as_str()) {
        return false;
    }
    // A node that never ran (`Actual Loops: 0`: a branch the executor skipped, an InitPlan
    // never needed) did not serve the page, whatever the plan says.
    if scan.node.actual_loops == Some(0.0) {
        return false;
    }
    // The relation must be the index's table. A Bitmap Index Scan whose heap relation could not
    // be resolved is not accepted: better a false alarm than a false pass.
    if scan.relation != Some(index.table.as_str()) {
        return false;
    }
    match scan.schema {
        Some(schema) => schema == index.schema,
        None => true,
    }
}

fn is_allowed(relation: &str, schema: Option<&str>, allowed: &[String]) -> bool {
    allowed.iter().any(|a| match a.split_once('.') {
        Some((s, r)) => r == relation && schema.is_none_or(|schema| schema == s),
        None => a == relation,
    })
}

fn reads_whole_relation(scan: &Scan<'_>, reltuples: &HashMap<String, f64>) -> bool {
    if scan.node.index_cond.is_some() {
        return false;
    }
    let Some(visited) = scan.node.rows_visited() else {
        // Without actual rows there is no telling; a scan of an index with no condition is
        // presumed to read it all.
        return true;
    };
    let key = format!(
        "{}.{}",
        scan.schema.unwrap_or("public"),
        scan.relation.unwrap_or("")
    );
    let total = reltuples.get(&key).copied().unwrap_or(0.0).max(0.0);
    // A never-analysed table has reltuples -1 (read as 0): any row read counts as the whole.
    visited >= (total * WHOLE_RELATION_SHARE).max(1.0)
}

fn qualified_for_display(relation: &str, schema: Option<&str>) -> String {
    match schema {
        Some(s) if s != "public" => format!("{s}.{relation}"),
        _ => relation.to_string(),
    }
}

fn describe_scan(scan: &Scan<'_>, with_removed: bool) -> String {
    let node = scan.node;
    let relation = scan
        .relation
        .map(|r| qualified_for_display(r, scan.schema))
        .unwrap_or_else(|| "?".into());
    let mut text = match &node.index_name {
        Some(index) => format!("{} using {index} on {relation}", node.label()),
        None => format!("{} on {relation}", node.label()),
    };
    // A path the session disabled (enable_seqscan = off, …) that won all the same: PostgreSQL
    // 18 says so; up to 17 the path carries a cost of 1e10 or more.
    if node.disabled == Some(true) || node.total_cost >= DISABLED_COST {
        text.push_str(" (disabled, chosen anyway)");
    }
    if with_removed {
        if let Some(removed) = node.rows_removed_by_filter {
            let total = removed * node.actual_loops.unwrap_or(1.0).max(1.0);
            if total > 0.0 {
                text.push_str(&format!(" ({} rows removed by filter)", group(total)));
            }
        }
        if node.index_name.is_some() && node.index_cond.is_none() {
            text.push_str(" (no Index Cond)");
        }
    }
    text
}

fn describe_access_paths(scans: &[Scan<'_>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scans {
        if s.kind == ScanKind::BitmapHeap {
            continue;
        }
        let text = describe_scan(s, false);
        if !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

/// `2301823` → `2,301,823`.
pub fn group(n: f64) -> String {
    let n = n.round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn required() -> RequiredIndex {
        RequiredIndex {
            schema: "public".into(),
            name: "posts_thread_visible_idx".into(),
            table: "posts".into(),
            predicate: Some("(visibility = 'visible'::text)".into()),
            partitions: vec![],
        }
    }

    fn judge(doc: Value, allow: &[&str], tuples: &[(&str, f64)]) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
        let reltuples: HashMap<String, f64> =
            tuples.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let index = required();
        judge_plan(
            &plan,
            &Rules {
                index: &index,
                allow_seq_scan: &allow,
                reltuples: &reltuples,
            },
        )
    }

    /// Fails loudly unless the plan passes.
    fn passes(doc: Value, allow: &[&str], tuples: &[(&str, f64)]) {
        let v = judge(doc, allow, tuples);
        assert_eq!(v.verdict, Verdict::Pass, "expected a pass, got {v:?}");
    }

    /// Fails loudly when the plan passes; returns the verdict for the caller to assert on.
    fn fails(doc: Value, allow: &[&str], tuples: &[(&str, f64)]) -> PlanVerdict {
        let v = judge(doc, allow, tuples);
        assert_ne!(
            v.verdict,
            Verdict::Pass,
            "expected a failure, got a pass: {v:?}"
        );
        v
    }

    fn index_scan(index: &str, relation: &str) -> Value {
        json!({ "Node Type": "Index Scan", "Index Name": index, "Relation Name": relation,
                "Schema": "public", "Index Cond": "(thread_id = 1)",
                "Actual Rows": 20, "Actual Loops": 1 })
    }

    #[test]
    fn required_index_under_limit_passes() {
        passes(
            json!([{ "Plan": { "Node Type": "Limit",
                "Plans": [index_scan("posts_thread_visible_idx", "posts")] } }]),
            &[],
            &[("public.posts", 1e6)],
        );
    }

    #[test]
    fn the_twin_is_not_the_required_index() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Limit",
                "Plans": [index_scan("posts_thread_all_idx", "posts")] } }]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
        assert!(v.message.contains("posts_thread_all_idx"), "{}", v.message);
    }

    #[test]
    fn required_index_in_a_node_that_never_ran_is_not_a_pass() {
        // A skipped branch uses the index; the page itself was served by another one.
        let mut never = index_scan("posts_thread_visible_idx", "posts");
        never["Actual Loops"] = json!(0);
        never["Actual Rows"] = json!(0);
        let v = fails(
            json!([{ "Plan": { "Node Type": "Append", "Plans": [
                never, index_scan("posts_thread_all_idx", "posts")]}}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn same_index_name_on_another_relation_is_not_a_pass() {
        let v = fails(
            json!([{ "Plan": index_scan("posts_thread_visible_idx", "archived_posts") }]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn same_index_name_in_another_schema_is_not_a_pass() {
        let mut scan = index_scan("posts_thread_visible_idx", "posts");
        scan["Schema"] = json!("archive");
        let v = fails(json!([{ "Plan": scan }]), &[], &[]);
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn parallel_seq_scan_instead_of_the_index_is_not_chosen() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Gather", "Plans": [
                { "Node Type": "Seq Scan", "Parallel Aware": true, "Relation Name": "posts",
                  "Schema": "public", "Actual Rows": 7, "Actual Loops": 3,
                  "Rows Removed by Filter": 700000 }]}}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
        assert_eq!(v.seq_scans, vec!["posts".to_string()]);
        assert!(
            v.message.contains("Parallel Seq Scan on posts"),
            "{}",
            v.message
        );
    }

    #[test]
    fn seq_scan_of_another_relation_beside_the_index_fails() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Hash Join", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Hash", "Plans": [{ "Node Type": "Seq Scan",
                  "Relation Name": "members", "Schema": "public", "Actual Rows": 10,
                  "Actual Loops": 1, "Rows Removed by Filter": 5000 }]}]}}]),
            &["forums"],
            &[],
        );
        assert_eq!(v.verdict, Verdict::SeqScan);
        assert_eq!(v.seq_scans, vec!["members".to_string()]);
        assert!(v.message.contains("5,000 rows removed"), "{}", v.message);
    }

    #[test]
    fn tablesample_and_tid_range_scans_beside_the_index_are_seq_scans() {
        // Regression: a whole-table read through TABLESAMPLE or a ctid range passed.
        for node in ["Sample Scan", "Tid Range Scan"] {
            let v = fails(
                json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                    index_scan("posts_thread_visible_idx", "posts"),
                    { "Node Type": node, "Relation Name": "members", "Schema": "public",
                      "Actual Rows": 5000, "Actual Loops": 1 }]}}]),
                &[],
                &[],
            );
            assert_eq!(v.verdict, Verdict::SeqScan, "{node}");
            assert_eq!(v.seq_scans, vec!["members".to_string()], "{node}");
            assert!(v.message.contains(node), "{}", v.message);
        }
    }

    #[test]
    fn allowed_seq_scan_passes_by_plain_or_qualified_name() {
        let doc = json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            { "Node Type": "Seq Scan", "Relation Name": "forums", "Schema": "public",
              "Actual Rows": 30, "Actual Loops": 1 },
            index_scan("posts_thread_visible_idx", "posts")]}}]);
        passes(doc.clone(), &["forums"], &[]);
        passes(doc.clone(), &["public.forums"], &[]);
        let v = fails(doc, &["archive.forums"], &[]);
        assert_eq!(v.verdict, Verdict::SeqScan);
    }

    #[test]
    fn seq_scan_inside_an_initplan_is_found() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Limit", "Plans": [
                { "Node Type": "Result", "Parent Relationship": "InitPlan",
                  "Subplan Name": "InitPlan 1", "Plans": [{ "Node Type": "Seq Scan",
                  "Relation Name": "threads", "Schema": "public" }]},
                index_scan("posts_thread_visible_idx", "posts")]}}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::SeqScan);
        assert_eq!(v.seq_scans, vec!["threads".to_string()]);
    }

    #[test]
    fn required_index_in_an_append_member_passes() {
        passes(
            json!([{ "Plan": { "Node Type": "Append", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Result" }]}}]),
            &[],
            &[],
        );
    }

    #[test]
    fn required_index_through_bitmap_and_passes() {
        passes(
            json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "posts",
                "Schema": "public", "Plans": [{ "Node Type": "BitmapAnd", "Plans": [
                    { "Node Type": "Bitmap Index Scan", "Index Name": "posts_thread_visible_idx",
                      "Index Cond": "(thread_id = 1)" },
                    { "Node Type": "Bitmap Index Scan", "Index Name": "other_idx",
                      "Index Cond": "(x = 1)" }]}]}}]),
            &[],
            &[],
        );
    }

    #[test]
    fn bitmap_index_scan_without_a_heap_scan_is_not_a_pass() {
        let v = fails(
            json!([{ "Plan": { "Node Type": "Bitmap Index Scan",
                "Index Name": "posts_thread_visible_idx", "Index Cond": "(thread_id = 1)" }}]),
            &[],
            &[],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
    }

    #[test]
    fn whole_relation_scan_of_another_index_counts_as_a_seq_scan() {
        // Seen with enable_seqscan = off: posts_pkey read end to end with a Filter.
        let v = fails(
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "members_pkey",
                  "Relation Name": "members", "Schema": "public", "Actual Rows": 900,
                  "Actual Loops": 1, "Rows Removed by Filter": 100 }]}}]),
            &[],
            &[("public.members", 1000.0), ("public.posts", 1e6)],
        );
        assert_eq!(v.verdict, Verdict::SeqScan);
        assert!(v.message.contains("no Index Cond"), "{}", v.message);
    }

    #[test]
    fn limit_stopped_scan_of_another_index_without_cond_is_not_a_seq_scan() {
        passes(
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "members_pkey",
                  "Relation Name": "members", "Schema": "public", "Actual Rows": 20,
                  "Actual Loops": 1 }]}}]),
            &[],
            &[("public.members", 50000.0)],
        );
    }

    #[test]
    fn generic_plan_failing_after_custom_pass_is_generic_plan() {
        let pass = judge(
            json!([{ "Plan": index_scan("posts_thread_visible_idx", "posts") }]),
            &[],
            &[],
        );
        let seq = judge(
            json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
                "Schema": "public" }}]),
            &[],
            &[],
        );
        let v = judge_generic(pass.clone(), seq.clone(), "posts_thread_visible_idx");
        assert_eq!(v.verdict, Verdict::GenericPlan);
        assert_eq!(v.seq_scans, vec!["posts".to_string()]);
        // The custom plan's failure wins over the generic plan's.
        let v = judge_generic(seq.clone(), pass.clone(), "posts_thread_visible_idx");
        assert_eq!(v.verdict, Verdict::NotChosen);
        let v = judge_generic(pass.clone(), pass, "posts_thread_visible_idx");
        assert_eq!(v.verdict, Verdict::Pass);
    }

    fn probe(doc: Value) -> Probe {
        Probe {
            disabled: "enable_seqscan = off".into(),
            plan: Explain::from_json(&doc).unwrap(),
        }
    }

    fn judge_with_probes(doc: Value, probes: Vec<Probe>) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let index = required();
        let reltuples = HashMap::new();
        let rules = Rules {
            index: &index,
            allow_seq_scan: &[],
            reltuples: &reltuples,
        };
        judge_usability(judge_plan(&plan, &rules), &plan, &probes, &rules, &[])
    }

    fn seq_scan_plan(cost: f64) -> Value {
        json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
            "Schema": "public", "Total Cost": cost }}])
    }

    #[test]
    fn no_probe_plan_with_the_index_is_not_usable() {
        let v = judge_with_probes(
            seq_scan_plan(100.0),
            vec![probe(json!([{ "Plan": { "Node Type": "Index Scan",
                "Index Name": "posts_thread_all_idx", "Relation Name": "posts",
                "Schema": "public", "Total Cost": 300.0 }}]))],
        );
        assert_eq!(v.verdict, Verdict::NotUsable, "{v:?}");
    }

    #[test]
    fn a_disabled_seq_scan_that_still_won_is_not_a_usable_index() {
        // PostgreSQL 18 shape: the probe's seq scan is marked Disabled and is all there is.
        let mut pg18 = seq_scan_plan(100.0);
        pg18[0]["Plan"]["Disabled"] = json!(true);
        let v = judge_with_probes(seq_scan_plan(100.0), vec![probe(pg18)]);
        assert_eq!(v.verdict, Verdict::NotUsable);
        // PostgreSQL 15 shape: the same, priced at 1e10.
        let v = judge_with_probes(
            seq_scan_plan(100.0),
            vec![probe(seq_scan_plan(1.0e10 + 100.0))],
        );
        assert_eq!(v.verdict, Verdict::NotUsable);
    }

    #[test]
    fn a_probe_plan_with_the_index_is_not_chosen_with_both_costs() {
        let v = judge_with_probes(
            seq_scan_plan(1.5),
            vec![probe(json!([{ "Plan": { "Node Type": "Index Scan",
                "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
                "Schema": "public", "Total Cost": 8.27 }}]))],
        );
        assert_eq!(v.verdict, Verdict::NotChosen);
        assert!(v.message.contains("costs 1.50"), "{}", v.message);
        assert!(v.message.contains("costs 8.27"), "{}", v.message);
    }

    #[test]
    fn a_full_index_beaten_by_a_rival_in_every_probe_stays_not_chosen() {
        let doc = seq_scan_plan(100.0);
        let plan = Explain::from_json(&doc).unwrap();
        let mut index = required();
        index.name = "posts_thread_all_idx".into();
        index.predicate = None;
        let reltuples = HashMap::new();
        let rules = Rules {
            index: &index,
            allow_seq_scan: &[],
            reltuples: &reltuples,
        };
        let probes = vec![probe(json!([{ "Plan": { "Node Type": "Index Scan",
            "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
            "Schema": "public", "Total Cost": 8.0 }}]))];
        let v = judge_usability(judge_plan(&plan, &rules), &plan, &probes, &rules, &[]);
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
        assert!(v.message.contains("not settled"), "{}", v.message);
    }

    #[test]
    fn causes_are_named_from_the_conditions() {
        let pred = "(visibility = 'visible'::text)";
        let c = |s: &str| vec![s.to_string()];
        assert!(
            recognise_cause(pred, &c("Filter: (p.visibility = $2)"), &[])
                .unwrap()
                .contains("constants")
        );
        assert!(
            recognise_cause(
                pred,
                &c("Filter: (p.visibility = current_setting('app.v'::text))"),
                &[]
            )
            .unwrap()
            .contains("current_setting")
        );
        assert!(
            recognise_cause(pred, &c("Filter: (p.visibility <> 'deleted'::text)"), &[])
                .unwrap()
                .contains("`<>`")
        );
        assert!(
            recognise_cause(
                pred,
                &c("Filter: (p.visibility = ANY ('{visible,unapproved}'::text[]))"),
                &[]
            )
            .unwrap()
            .contains("IN list")
        );
        assert!(
            recognise_cause(pred, &c("Index Cond: (p.thread_id = 1)"), &[])
                .unwrap()
                .contains("no condition on visibility")
        );
        assert!(
            recognise_cause(
                pred,
                &c("Filter: ((p.visibility)::bpchar = 'visible'::bpchar)"),
                &[]
            )
            .unwrap()
            .contains("cast")
        );
    }

    #[test]
    fn a_stable_function_the_catalog_names_is_the_cause() {
        let pred = "(visibility = 'visible'::text)";
        let cond = vec!["Filter: (p.visibility = app.current_visibility())".to_string()];
        assert!(
            recognise_cause(pred, &cond, &["current_visibility".to_string()])
                .unwrap()
                .contains("current_visibility() is not IMMUTABLE")
        );
    }

    #[test]
    fn usability_leaves_other_verdicts_alone() {
        let doc = json!([{ "Plan": index_scan("posts_thread_visible_idx", "posts") }]);
        let v = judge_with_probes(doc, vec![]);
        assert_eq!(v.verdict, Verdict::Pass);
    }

    fn measured(read_path: &str, verdict: Verdict, warm: f64, buffers: f64) -> CheckResult {
        CheckResult {
            read_path: read_path.into(),
            scope: "member".into(),
            required_index: "i".into(),
            verdict,
            used: vec![],
            seq_scans: vec![],
            message: "ok".into(),
            warm_ms: Spread::of(&[warm]),
            planning_ms: None,
            shared_buffers: Some(buffers),
            connection_lost: false,
            budget: Budget::default(),
            budget_used: None,
            usable: None,
            notes: vec![],
            plans: vec![],
            settings: vec![],
        }
    }

    #[test]
    fn budgets_pass_under_and_fail_over_each_limit() {
        let mut first = measured("first", Verdict::Pass, 2.0, 100.0);
        first.budget.warm_ms = Some(50.0);
        first.budget.buffers = Some(400.0);
        let mut deep = measured("deep", Verdict::Pass, 3.0, 250.0);
        deep.budget.relative = Some(Relative {
            scope: None,
            to: "first".into(),
            max_ratio: 2.0,
        });
        let mut slow = measured("slow", Verdict::Pass, 51.0, 10.0);
        slow.budget.warm_ms = Some(50.0);
        let mut checks = vec![first, deep, slow];
        judge_budgets(&mut checks);
        assert_eq!(checks[0].verdict, Verdict::Pass);
        assert_eq!(checks[0].budget_used.as_ref().unwrap().buffers, Some(0.25));
        assert_eq!(
            checks[1].verdict,
            Verdict::OverBudget,
            "{}",
            checks[1].message
        );
        assert!(checks[1].message.contains("2.5×"), "{}", checks[1].message);
        assert_eq!(checks[2].verdict, Verdict::OverBudget);
        assert!(checks[2].message.contains("102%"), "{}", checks[2].message);
    }

    #[test]
    fn a_budget_that_cannot_be_measured_is_an_error_not_a_pass() {
        let mut deep = measured("deep", Verdict::Pass, 3.0, 250.0);
        deep.budget.relative = Some(Relative {
            scope: None,
            to: "first".into(),
            max_ratio: 2.0,
        });
        let mut first = measured("first", Verdict::Error, 0.0, 0.0);
        first.shared_buffers = None;
        let mut checks = vec![deep, first];
        judge_budgets(&mut checks);
        assert_eq!(checks[0].verdict, Verdict::Error, "{}", checks[0].message);
    }

    #[test]
    fn a_failing_index_verdict_is_not_hidden_by_a_budget() {
        let mut c = measured("x", Verdict::NotUsable, 500.0, 1e6);
        c.budget.buffers = Some(1.0);
        let mut checks = vec![c];
        judge_budgets(&mut checks);
        assert_eq!(checks[0].verdict, Verdict::NotUsable);
    }

    fn partitioned_judge(doc: Value) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let index = RequiredIndex {
            schema: "public".into(),
            name: "pp_visible".into(),
            table: "pp".into(),
            predicate: None,
            partitions: vec![
                Partition {
                    schema: "public".into(),
                    table: "pp_a".into(),
                    leaf_index: Some("pp_a_visible".into()),
                },
                Partition {
                    schema: "public".into(),
                    table: "pp_b".into(),
                    leaf_index: None,
                },
                Partition {
                    schema: "public".into(),
                    table: "pp_c".into(),
                    leaf_index: Some("pp_c_visible".into()),
                },
            ],
        };
        let reltuples = HashMap::new();
        judge_plan(
            &plan,
            &Rules {
                index: &index,
                allow_seq_scan: &[],
                reltuples: &reltuples,
            },
        )
    }

    #[test]
    fn partitioned_index_passes_when_every_scanned_partition_uses_its_leaf() {
        // pp_b (no leaf) was pruned: it is not in the plan and does not count.
        let v = partitioned_judge(json!([{ "Plan": { "Node Type": "Append", "Plans": [
            index_scan("pp_a_visible", "pp_a"), index_scan("pp_c_visible", "pp_c")]}}]));
        assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    }

    #[test]
    fn partitioned_index_names_the_partition_seq_scanned() {
        let v = partitioned_judge(json!([{ "Plan": { "Node Type": "Append", "Plans": [
            index_scan("pp_a_visible", "pp_a"),
            { "Node Type": "Seq Scan", "Relation Name": "pp_b", "Schema": "public",
              "Actual Rows": 5, "Actual Loops": 1 }]}}]));
        assert_eq!(v.verdict, Verdict::SeqScan, "{v:?}");
        assert_eq!(v.seq_scans, vec!["pp_b".to_string()]);
        assert!(
            v.message
                .contains("partition pp_b has no leaf of pp_visible"),
            "{}",
            v.message
        );
    }

    #[test]
    fn partitioned_index_with_no_leaf_used_is_not_chosen() {
        let v = partitioned_judge(json!([{ "Plan": { "Node Type": "Append", "Plans": [
            { "Node Type": "Seq Scan", "Relation Name": "pp_a", "Schema": "public" }]}}]));
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
    }

    #[test]
    fn spread_takes_the_median() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.p50, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[1.0, 4.0]).unwrap().p50, 2.5);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn verdict_names_are_kebab_case() {
        assert_eq!(
            serde_json::to_string(&Verdict::MissingIndex).unwrap(),
            "\"missing-index\""
        );
        assert_eq!(Verdict::GenericPlan.to_string(), "generic-plan");
        assert_eq!(group(2301823.0), "2,301,823");
    }
}
