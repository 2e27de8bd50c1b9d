//! verdict: a measurement and what the expectation requires, in; a verdict with its reasons,
//! out. Pure: no database, no printing, no clock. A false pass is the worst bug plancheck can
//! have, so every rule here errs toward "not a pass" when the plans do not say enough, and no
//! message claims more than the plans show.
//!
//! [`judge`] applies the rules in order, one file each: [`index`] (missing, invalid), [`plan`]
//! (the index in the plan, nothing read whole beside it), [`keys`] (`key-unused`),
//! [`usability`] (`not-usable` or `not-chosen`, each with its proof, over [`predicate`]),
//! [`generic`] (the generic plan), [`notes`] (what the planner knew); [`budgets`] once every
//! check is judged.

mod across;
pub mod baseline;
mod budgets;
mod generic;
mod index;
mod keys;
mod notes;
mod plan;
pub mod predicate;
pub mod shape;
mod usability;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::measure::{IndexLookup, Measurement, Outcome, PlanKind, ScratchOutcome};
pub use crate::model::{Budget, IndexInfo, Partition, Relation, Relative};
use crate::plan::explain::Explain;
pub use across::{across_checks, lint_of_run};
pub use budgets::{BudgetUsed, judge_budget, judge_budgets};
pub use generic::judge_generic;
pub use keys::{KEY_UNUSED_MIN_REMOVED, KEY_UNUSED_RATIO};
pub use plan::{PlanVerdict, Rules, judge_plan};
pub use usability::{ProbePlan, Scratch, ScratchPlan, Shown, Usability, judge_usability};

/// The verdict of one check. Kebab-case everywhere: TOML, flags, JSON and the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    NotUsable,
    NotChosen,
    GenericPlan,
    SeqScan,
    KeyUnused,
    OverBudget,
    /// The index verdict passed, but the plan's shape is not its baseline's.
    PlanChanged,
    MissingIndex,
    InvalidIndex,
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
            Verdict::KeyUnused => "key-unused",
            Verdict::OverBudget => "over-budget",
            Verdict::PlanChanged => "plan-changed",
            Verdict::MissingIndex => "missing-index",
            Verdict::InvalidIndex => "invalid-index",
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

/// What settled a check's verdict about its index: the measured plan itself (it read the
/// index), a re-plan on the measured server, a re-plan on the scratch copy, or a rule of
/// PostgreSQL's proof procedure. Kebab-case in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Settled {
    Plan,
    #[serde(rename = "re-plan")]
    Replan,
    Scratch,
    Rule,
}

impl Settled {
    pub fn as_str(self) -> &'static str {
        match self {
            Settled::Plan => "plan",
            Settled::Replan => "re-plan",
            Settled::Scratch => "scratch",
            Settled::Rule => "rule",
        }
    }
}

/// What a check must show to pass: the index chosen (the default), or only usable, for a CI
/// database whose small data lets the planner prefer a seq scan (`not-chosen` then warns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Require {
    #[default]
    Chosen,
    Usable,
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
    /// The required index: with several accepted, the one that passed (else the first).
    pub required_index: String,
    /// Every index the scope accepts, when it accepts more than one (`index = ["a", "b"]`).
    pub accepted: Vec<String>,
    pub verdict: Verdict,
    pub used: Vec<String>,
    /// What was used instead of the required index (every access path when it is missing or
    /// invalid); empty for a pass and for a check that passed its index rule.
    pub instead: Vec<String>,
    pub seq_scans: Vec<String>,
    pub message: String,
    /// Server-side `Execution Time` of the measured runs.
    pub warm_ms: Option<Spread>,
    pub planning_ms: Option<Spread>,
    /// Shared buffers (hit + read) of the measured runs, median.
    pub shared_buffers: Option<f64>,
    /// The error came from losing the connection: the database failed underneath.
    pub connection_lost: bool,
    /// For an `error` the server located in the project's files: where.
    pub at: Option<crate::errors::Spot>,
    /// Warnings about what the planner knew: relations never analysed, or changed a lot since.
    pub notes: Vec<String>,
    /// The check's budgets, and how much of each it used once judged.
    pub budget: Budget,
    pub budget_used: Option<BudgetUsed>,
    /// When the required index was not in the plan: whether it was proved usable (`not-chosen`)
    /// or proved not (`not-usable`). `None` when no proof was needed, or none was found.
    pub usable: Option<bool>,
    /// What settled the verdict about the index: `Plan` when the measured plan read it; how
    /// usability was proved when it did not; `None` when nothing settled it (or no index
    /// question was asked: an error, a missing or invalid index).
    pub settled_by: Option<Settled>,
    /// Why usability is not settled, when it was asked and is not.
    pub unsettled: Option<String>,
    /// Relations of at least `--large-rows` rows the plan reads whole: no `--require` forgives
    /// them.
    pub large_reads: Vec<String>,
    /// The plan's shape differs from its baseline (`baselines/NAME.SCOPE.plan`).
    pub plan_changed: bool,
    /// The shapes, baseline against now, as diff lines (`- `, `+ `, `  `).
    pub plan_diff: Vec<String>,
    /// `--strict-plans`: a changed plan fails the run instead of warning.
    pub strict_plans: bool,
    /// The Sort Keys of the sorts in the measured plan (custom), as printed: none when the
    /// read path's order comes from an index (or it has none). Twin drift reads them.
    pub sort_keys: Vec<String>,
    /// The plans behind the verdict, labelled (`custom`, `generic`, and `probe`: the re-plan
    /// that used the index), for `--explain`.
    pub plans: Vec<(String, crate::measure::Document)>,
    /// The declared planner settings the check ran with (`settings = { … }`).
    pub settings: Vec<(String, String)>,
    /// What the scope's setup changed, as the server read it back (role, search path,
    /// `TimeZone`, application settings).
    pub session: Vec<(String, String)>,
}

impl CheckResult {
    /// A failure that `--require usable` reports as a warning: the index is proved usable and
    /// merely not chosen at these statistics (in the custom plan, or in the generic plan), and
    /// no large relation is read whole instead.
    pub fn is_warning(&self, require: Require) -> bool {
        if self.verdict == Verdict::PlanChanged {
            return !self.strict_plans;
        }
        require == Require::Usable
            && matches!(self.verdict, Verdict::NotChosen | Verdict::GenericPlan)
            && self.usable == Some(true)
            && self.large_reads.is_empty()
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
    /// Key columns or expressions, in order, as `pg_get_indexdef(oid, k, true)` prints them.
    pub keys: Vec<String>,
    /// Each key's order (`""`, `DESC`, …), as in [`IndexInfo::orders`].
    pub orders: Vec<String>,
    /// The other indexes on the same table.
    pub siblings: Vec<IndexInfo>,
    /// The columns of the table.
    pub columns: Vec<crate::measure::ColumnFacts>,
    /// For an index on a partitioned table: every leaf partition of the table, with the leaf
    /// index of this index on it (`None` where the partition lacks one). Empty otherwise.
    pub partitions: Vec<Partition>,
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

/// How measurements are judged, beyond what each expectation requires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judging {
    /// `--large-rows`: a relation of at least this many rows (the catalog's estimate) read
    /// whole fails the check under every `--require`.
    pub large_rows: f64,
    /// `--strict-plans`: a plan that changed from its baseline fails instead of warning.
    pub strict_plans: bool,
}

impl Default for Judging {
    fn default() -> Self {
        Judging {
            large_rows: 10_000.0,
            strict_plans: false,
        }
    }
}

impl RequiredIndex {
    fn of(facts: &crate::measure::IndexFacts) -> RequiredIndex {
        let i = &facts.info;
        RequiredIndex {
            schema: i.schema.clone(),
            name: i.name.clone(),
            table: i.table.clone(),
            predicate: i.predicate.clone(),
            keys: i.keys.clone(),
            orders: i.orders.clone(),
            siblings: facts.siblings.clone(),
            columns: facts.columns.clone(),
            partitions: facts.partitions.clone(),
        }
    }

    /// Every name a plan may read the index by: its own, and its leaves' on the partitions.
    pub fn names(&self) -> Vec<&str> {
        crate::model::index_and_leaves(&self.name, &self.partitions)
    }

    /// Whether a cast of `column` to `type_name` only relabels it (see
    /// [`crate::measure::ColumnFacts`]).
    pub fn relabels(&self, column: &str, type_name: &str) -> bool {
        self.columns
            .iter()
            .any(|c| c.name == column && c.relabels.iter().any(|r| r == type_name))
    }

    /// The conjuncts of a printed expression, with relabelling casts set aside.
    pub fn conjuncts(&self, expr: &str) -> Vec<predicate::Conjunct> {
        predicate::conjuncts(expr)
            .iter()
            .map(|c| c.relabelled(&|col, ty| self.relabels(col, ty)))
            .collect()
    }
}

/// A check's result before any rule: an `error` with no message, the check's identity, budget
/// and settings.
fn unjudged(m: &Measurement) -> CheckResult {
    CheckResult {
        read_path: m.read_path.clone(),
        scope: m.scope.clone(),
        required_index: m.requires.index.clone(),
        accepted: if m.requires.also.is_empty() {
            Vec::new()
        } else {
            std::iter::once(&m.requires.index)
                .chain(&m.requires.also)
                .cloned()
                .collect()
        },
        verdict: Verdict::Error,
        used: Vec::new(),
        instead: Vec::new(),
        seq_scans: Vec::new(),
        message: String::new(),
        warm_ms: None,
        planning_ms: None,
        shared_buffers: None,
        connection_lost: false,
        at: None,
        notes: Vec::new(),
        budget: m.requires.budget.clone(),
        budget_used: None,
        usable: None,
        settled_by: None,
        unsettled: None,
        large_reads: Vec::new(),
        plan_changed: false,
        plan_diff: Vec::new(),
        strict_plans: false,
        sort_keys: Vec::new(),
        plans: Vec::new(),
        settings: m.settings.clone(),
        session: Vec::new(),
    }
}

/// The measured figures (warm time, planning time, shared buffers), the notes on statistics,
/// and the plans `--explain` shows.
fn figures(r: &mut CheckResult, measured: &crate::measure::Measured, custom: &[&Explain]) {
    let exec: Vec<f64> = custom.iter().filter_map(|p| p.execution_ms).collect();
    let planning: Vec<f64> = custom.iter().filter_map(|p| p.planning_ms).collect();
    let buffers: Vec<f64> = custom.iter().map(|p| p.shared_buffers()).collect();
    r.warm_ms = Spread::of(&exec);
    r.planning_ms = Spread::of(&planning);
    r.shared_buffers = Spread::of(&buffers).map(|s| s.p50);
    r.notes = notes::of(&measured.relations);
    if let Some(last) = measured.custom.last() {
        r.plans
            .push((PlanKind::Custom.as_str().into(), last.clone()));
    }
    if let Some(g) = &measured.generic {
        r.plans.push((PlanKind::Generic.as_str().into(), g.clone()));
    }
}

/// Judges one measurement: the check's verdict, its reasons and figures. Budgets are judged
/// afterwards over every check ([`across_checks`]).
// Long because it is the whole judgement in order: failure, documents, figures, then each accepted index.
pub fn judge(m: &Measurement, how: &Judging) -> CheckResult {
    let mut r = unjudged(m);
    let measured = match &m.outcome {
        Outcome::Failed(f) => {
            r.message = f.message.clone();
            r.connection_lost = f.connection_lost;
            r.at = f.at.clone();
            return r;
        }
        Outcome::Measured(measured) => measured,
    };
    // Every document was read as a plan where it was measured or loaded.
    let custom: Vec<&Explain> = measured.custom.iter().map(|d| d.plan()).collect();
    if custom.is_empty() {
        r.message = "no measured run (--iterations 0?)".into();
        return r;
    }
    figures(&mut r, measured, &custom);
    r.sort_keys = custom[0]
        .nodes()
        .into_iter()
        .filter(|n| n.node_type.ends_with("Sort"))
        .flat_map(|n| n.sort_key.iter().cloned())
        .collect();
    r.session = measured.session.clone();
    let reltuples: HashMap<String, f64> = measured
        .relations
        .iter()
        .map(|f| (Relation::new(Some(&f.schema), &f.name).key(), f.reltuples))
        .collect();

    // The required index, then each the scope accepts in its place: the first that passes
    // stands; when none does, the required index's verdict, with the others' beside it.
    let accepted = std::iter::once((&m.requires.index, &measured.index))
        .chain(m.requires.also.iter().zip(measured.alternatives.iter()));
    let mut judged: Vec<(String, Judged)> = Vec::new();
    for (name, lookup) in accepted {
        let j = judge_index(name, lookup, m, measured, &reltuples, how);
        let passed = j.verdict.is_pass();
        judged.push((name.clone(), j));
        if passed {
            break;
        }
    }
    let (used_name, mut chosen) = match judged.iter().position(|(_, j)| j.verdict.is_pass()) {
        Some(i) => judged.swap_remove(i),
        None => judged.remove(0),
    };
    if !m.requires.also.is_empty() {
        if chosen.verdict.is_pass() {
            chosen.message = format!("{used_name} (of the accepted indexes): {}", chosen.message);
        } else {
            for (name, other) in &judged {
                chosen.message.push_str(&format!(
                    " Nor {name}, also accepted: {}: {}",
                    other.verdict, other.message
                ));
            }
        }
    }
    r.required_index = used_name;
    r.verdict = chosen.verdict;
    r.used = chosen.used;
    r.instead = chosen.instead;
    r.seq_scans = chosen.seq_scans;
    r.message = chosen.message;
    r.usable = chosen.usable;
    r.settled_by = chosen.settled_by;
    r.unsettled = chosen.unsettled;
    r.large_reads = chosen.large_reads;
    if let Some((label, doc)) = chosen.probe {
        r.plans.push((label.into(), doc));
    }
    if let Some(baseline) = &m.requires.baseline {
        compare_baseline(&mut r, m, measured, baseline, how);
    }
    r
}

/// The plan against its baseline: a passing check whose plan changed shape is `plan-changed` (a
/// warning unless `--strict-plans`); a failing one keeps its verdict, the diff beside it.
fn compare_baseline(
    r: &mut CheckResult,
    m: &Measurement,
    measured: &crate::measure::Measured,
    baseline: &str,
    how: &Judging,
) {
    let diff = baseline::compare(measured, baseline);
    if diff.is_empty() {
        return;
    }
    r.plan_changed = true;
    r.strict_plans = how.strict_plans;
    let path = baseline::path(&m.read_path, &m.scope);
    let changed = diff.iter().filter(|l| !l.starts_with("  ")).count();
    if r.verdict.is_pass() {
        r.verdict = Verdict::PlanChanged;
        r.message = format!(
            "the plan changed shape since its baseline {path} ({changed} lines differ), still \
             through {}; review the diff, then `plancheck accept --only {} --scope {}` records \
             the new plan. {}",
            r.required_index, m.read_path, m.scope, r.message
        );
    } else {
        if !r.message.ends_with('.') {
            r.message.push('.');
        }
        r.message.push_str(&format!(
            " The plan also changed shape since its baseline {path} ({changed} lines differ)."
        ));
    }
    r.plan_diff = diff;
}

/// The verdict of a check against one accepted index.
struct Judged {
    verdict: Verdict,
    /// The access paths not through the index, when the verdict is not a pass.
    instead: Vec<String>,
    used: Vec<String>,
    seq_scans: Vec<String>,
    message: String,
    usable: Option<bool>,
    settled_by: Option<Settled>,
    unsettled: Option<String>,
    large_reads: Vec<String>,
    /// The re-plan through the index (`probe`), or on the scratch copy (`scratch`), for
    /// `--explain`.
    probe: Option<(&'static str, crate::measure::Document)>,
}

/// One accepted index judged against the measurement: the rules in their order (the index,
/// each run, usability, the generic plan, large reads); each rule is a function of its own file.
fn judge_index(
    name: &str,
    lookup: &IndexLookup,
    m: &Measurement,
    measured: &crate::measure::Measured,
    reltuples: &HashMap<String, f64>,
    how: &Judging,
) -> Judged {
    let custom: Vec<&Explain> = measured.custom.iter().map(|d| d.plan()).collect();
    let generic = measured.generic.as_ref().map(|d| d.plan());
    let facts = match index_problem(name, lookup, custom[0]) {
        Ok(facts) => facts,
        Err(judged) => return *judged,
    };
    let required = RequiredIndex::of(facts);
    let rules = Rules {
        index: &required,
        allow_seq_scan: &m.requires.allow_seq_scan,
        reltuples,
        large_rows: how.large_rows,
    };
    // Every measured run is judged; the worst one stands. A plan does not change between runs
    // of one statement in one transaction, but nothing is assumed.
    let mut worst: Option<(PlanVerdict, usize)> = None;
    for (i, plan) in custom.iter().enumerate() {
        let v = judge_plan(plan, &rules);
        if worst.as_ref().is_none_or(|(w, _)| w.verdict.is_pass()) {
            worst = Some((v, i));
        }
    }
    let Some((mut judged, at)) = worst else {
        return plain(Verdict::Error, "no measured run".into(), custom[0]);
    };
    // Whether a plan reads the index at all (a partitioned one through any leaf): usability is
    // the question only when it does not. A partitioned index used on some partitions only is
    // judged by the partition rule, whose message names the partition read another way.
    let names = required.names();
    let reads_index = |plan: &Explain| plan.reads_any(&names);
    let mut settlement = Settlement::default();
    if judged.verdict == Verdict::NotChosen && !reads_index(custom[at]) {
        (judged, settlement) = settle(judged, custom[at], PlanKind::Custom, measured, &rules);
    }
    if let Some(generic) = generic {
        let mut g = judge_plan(generic, &rules);
        if judged.verdict.is_pass() && g.verdict == Verdict::NotChosen && !reads_index(generic) {
            (g, settlement) = settle(g, generic, PlanKind::Generic, measured, &rules);
        }
        judged = judge_generic(judged, g, &required.name);
    }
    // The plan itself settled it when no re-plan was needed to: the index is in it.
    if settlement.settled_by.is_none()
        && settlement.unsettled.is_none()
        && judged.verdict != Verdict::NotChosen
    {
        settlement.settled_by = Some(Settled::Plan);
    }
    // What was used instead of the index, from the plan the verdict is about.
    let about = match (judged.verdict, generic) {
        (Verdict::GenericPlan, Some(g)) => g,
        _ => custom[at],
    };
    let instead = if judged.verdict.is_pass() {
        Vec::new()
    } else {
        plan::other_access_paths(about, &required)
    };
    let message = with_afterwords(&judged, &settlement, measured, how);
    Judged {
        verdict: judged.verdict,
        instead,
        used: judged.used,
        seq_scans: judged.seq_scans,
        message,
        usable: settlement.usable,
        settled_by: settlement.settled_by,
        unsettled: settlement.unsettled,
        large_reads: judged.large_reads,
        probe: settlement.shown,
    }
}

/// A verdict with no index to compare with: everything the read path uses now is listed.
fn plain(verdict: Verdict, message: String, plan: &Explain) -> Judged {
    Judged {
        verdict,
        instead: plan::describe_access_paths(&plan.scans()),
        used: plan::describe_access_paths(&plan.scans()),
        seq_scans: Vec::new(),
        message,
        usable: None,
        settled_by: None,
        unsettled: None,
        large_reads: Vec::new(),
        probe: None,
    }
}

/// The index as the catalog found it, or the verdict when it is missing or not valid.
fn index_problem<'a>(
    name: &str,
    lookup: &'a IndexLookup,
    plan: &Explain,
) -> Result<&'a crate::measure::IndexFacts, Box<Judged>> {
    let facts = match lookup {
        IndexLookup::Missing { nearest, schemas } => {
            let scans = plan.scans();
            let tables: Vec<&str> = scans.iter().filter_map(|s| s.relation).collect();
            let used = plan::describe_access_paths(&scans);
            let message = format!(
                "{}; the read path uses now: {}",
                index::missing(name, nearest, schemas, &tables),
                if used.is_empty() {
                    "no scan at all".to_string()
                } else {
                    used.join("; ")
                }
            );
            return Err(Box::new(plain(Verdict::MissingIndex, message, plan)));
        }
        IndexLookup::Found(facts) => facts,
    };
    // A partitioned index is invalid while a partition lacks its leaf: the partition rule
    // names that partition, which says more.
    if (!facts.info.valid || !facts.info.ready) && facts.partitions.is_empty() {
        return Err(Box::new(plain(
            Verdict::InvalidIndex,
            index::invalid(&facts.info),
            plan,
        )));
    }
    Ok(facts)
}

/// How usability was settled for the plan the verdict is about, and the re-plan that shows it.
#[derive(Default)]
struct Settlement {
    usable: Option<bool>,
    settled_by: Option<Settled>,
    unsettled: Option<String>,
    /// The re-plan through the index (`probe`), or on the scratch copy (`scratch`).
    shown: Option<(&'static str, crate::measure::Document)>,
}

/// Settles whether the required index can serve a plan that did not read it: from the
/// measured server's re-plans of that plan kind, the scratch copy's, or the proof rules
/// ([`judge_usability`]).
fn settle(
    v: PlanVerdict,
    plan: &Explain,
    kind: PlanKind,
    measured: &crate::measure::Measured,
    rules: &Rules<'_>,
) -> (PlanVerdict, Settlement) {
    let found: Vec<&crate::measure::Probe> =
        measured.probes.iter().filter(|p| p.plan == kind).collect();
    let probes: Vec<ProbePlan> = found
        .iter()
        .map(|p| ProbePlan {
            disabled: p.disabled.clone(),
            dropped: p.dropped.clone(),
            plan: p.document.plan().clone(),
        })
        .collect();
    let shown_name = Relation::new(Some(&rules.index.schema), &rules.index.name).to_string();
    let copy = measured
        .scratch
        .iter()
        .find(|s| s.plan == kind && s.index == shown_name);
    let (scratch, copy_plan) = match copy.map(|s| &s.outcome) {
        Some(ScratchOutcome::Planned(p)) => (
            Some(ScratchPlan {
                server_version: p.server_version.clone(),
                dropped: p.dropped.clone(),
                plan: p.document.plan().clone(),
            }),
            Some(&p.document),
        ),
        _ => (None, None),
    };
    let asked = match (copy.map(|s| &s.outcome), &scratch) {
        (_, Some(p)) => Scratch::Planned(p),
        (Some(ScratchOutcome::NotMade { why }), None) => Scratch::NotMade(why),
        _ => Scratch::Absent,
    };
    let u = judge_usability(v, plan, &probes, asked, rules, &measured.non_immutable);
    let shown = match u.shown {
        Some(Shown::Probe(i)) => found.get(i).map(|p| ("probe", p.document.clone())),
        Some(Shown::Scratch) => copy_plan.map(|d| ("scratch", d.clone())),
        None => None,
    };
    let settlement = Settlement {
        usable: u.usable,
        settled_by: u.settled_by,
        unsettled: u.unsettled,
        shown,
    };
    (u.verdict, settlement)
}

/// The verdict's message with what follows it: why `--replan-without-rivals` did not re-plan
/// an unsettled `not-chosen`, and the large reads no `--require` forgives.
fn with_afterwords(
    judged: &PlanVerdict,
    settlement: &Settlement,
    measured: &crate::measure::Measured,
    how: &Judging,
) -> String {
    let mut message = judged.message.clone();
    if judged.verdict == Verdict::NotChosen
        && settlement.usable.is_none()
        && let Some(why) = &measured.replan_skipped
    {
        message.push_str(&format!(" ({why})"));
    }
    if !judged.large_reads.is_empty() && settlement.usable == Some(true) {
        message.push_str(&format!(
            " It reads {} whole (at least --large-rows {} rows): no --require forgives that.",
            judged.large_reads.join(", "),
            group(how.large_rows)
        ));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::plan::{PlanVerdict, Rules, judge_plan};
    use super::*;
    use serde_json::{Value, json};

    fn required() -> RequiredIndex {
        RequiredIndex {
            schema: "public".into(),
            name: "posts_thread_visible_idx".into(),
            table: "posts".into(),
            predicate: Some("(visibility = 'visible'::text)".into()),
            keys: vec!["thread_id".into()],
            orders: vec![String::new()],
            siblings: vec![],
            columns: vec![],
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
                large_rows: Judging::default().large_rows,
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

    /// [`judge`] with `--large-rows` set.
    fn judge_large(doc: Value, tuples: &[(&str, f64)], large_rows: f64) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let reltuples: HashMap<String, f64> =
            tuples.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let index = required();
        judge_plan(
            &plan,
            &Rules {
                index: &index,
                allow_seq_scan: &[],
                reltuples: &reltuples,
                large_rows,
            },
        )
    }

    /// The required index read through `cond`, having returned `rows` and filtered `removed`.
    fn required_read(cond: &str, rows: f64, removed: f64) -> Value {
        json!({ "Node Type": "Index Scan", "Index Name": "posts_thread_visible_idx",
                "Relation Name": "posts", "Schema": "public", "Index Cond": cond,
                "Filter": "(length(body) < 0)", "Actual Rows": rows, "Actual Loops": 1,
                "Rows Removed by Filter": removed })
    }

    #[test]
    fn a_trivially_true_index_cond_reading_most_of_a_large_relation_is_a_whole_read() {
        // Regression: `thread_id >= 0` walked the whole of the required index and passed.
        let doc = json!([{ "Plan": { "Node Type": "Limit", "Plans": [
            required_read("(thread_id >= 0)", 0.0, 96_000.0)]}}]);
        let v = fails(doc, &[], &[("public.posts", 100_000.0)]);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert_eq!(v.seq_scans, vec!["posts".to_string()]);
        assert_eq!(v.large_reads, vec!["posts".to_string()]);
        for part in [
            "Index Scan using posts_thread_visible_idx on posts",
            "read 96,000 of the 100,000 rows of posts",
            "Index Cond: (thread_id >= 0)",
            "at least half of a relation of at least --large-rows 10,000 rows",
            "but it reads a whole relation",
        ] {
            assert!(v.message.contains(part), "no {part:?} in: {}", v.message);
        }
    }

    #[test]
    fn the_required_index_reading_less_than_half_of_a_large_relation_passes() {
        // Half is the line: 49,999 rows of 100,000 pass, 50,000 do not.
        let tuples = [("public.posts", 100_000.0)];
        passes(
            json!([{ "Plan": required_read("(thread_id >= 0)", 20.0, 49_979.0) }]),
            &[],
            &tuples,
        );
        let v = fails(
            json!([{ "Plan": required_read("(thread_id >= 0)", 20.0, 49_980.0) }]),
            &[],
            &tuples,
        );
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
    }

    #[test]
    fn most_of_a_relation_below_large_rows_through_the_required_index_passes() {
        // A small relation is no whole read through an index with a condition; the same read
        // fails once --large-rows says the relation is large.
        let doc = json!([{ "Plan": required_read("(thread_id >= 0)", 900.0, 0.0) }]);
        let tuples = [("public.posts", 1_000.0)];
        assert_eq!(
            judge_large(doc.clone(), &tuples, 10_000.0).verdict,
            Verdict::Pass
        );
        let v = judge_large(doc, &tuples, 1_000.0);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(v.message.contains("--large-rows 1,000"), "{}", v.message);
    }

    fn pkey_walk(rows: f64, removed: f64) -> Value {
        json!([{ "Plan": { "Node Type": "Limit", "Plans": [
            { "Node Type": "Limit", "Parent Relationship": "InitPlan",
              "Subplan Name": "InitPlan 1", "Plans": [
                { "Node Type": "Index Scan", "Index Name": "posts_pkey",
                  "Relation Name": "posts", "Schema": "public", "Index Cond": "(id > 0)",
                  "Filter": "(length(body) < 0)", "Actual Rows": rows, "Actual Loops": 1,
                  "Rows Removed by Filter": removed }]},
            index_scan("posts_thread_visible_idx", "posts")]}}])
    }

    #[test]
    fn a_limit_walk_of_another_index_that_reads_everything_is_a_whole_read() {
        // Regression: `LIMIT 1` from `id > 0` in an InitPlan read all of posts and passed.
        let v = fails(
            pkey_walk(0.0, 100_000.0),
            &[],
            &[("public.posts", 100_000.0)],
        );
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(
            v.message.contains(
                "Index Scan using posts_pkey on posts read 100,000 of the 100,000 rows of posts \
                 (Index Cond: (id > 0)"
            ),
            "{}",
            v.message
        );
        assert!(
            v.message.contains("also reads a whole relation"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_limit_walk_of_another_index_that_stops_early_passes() {
        passes(pkey_walk(1.0, 3.0), &[], &[("public.posts", 100_000.0)]);
    }

    #[test]
    fn scans_of_one_relation_that_read_it_all_between_them_are_a_whole_read() {
        // Regression: three InitPlans each read a third of posts through posts_pkey and passed.
        let thirds = |removed: f64| {
            let third = |cond: &str| {
                json!({ "Node Type": "Index Scan", "Index Name": "posts_pkey",
                        "Parent Relationship": "InitPlan", "Relation Name": "posts",
                        "Schema": "public", "Index Cond": cond, "Filter": "(length(body) < 0)",
                        "Actual Rows": 0, "Actual Loops": 1, "Rows Removed by Filter": removed })
            };
            json!([{ "Plan": { "Node Type": "Limit", "Plans": [
                third("(id < 40000)"), third("((id >= 40000) AND (id < 80000))"),
                third("(id >= 80000)"), index_scan("posts_thread_visible_idx", "posts")]}}])
        };
        let tuples = [("public.posts", 120_000.0)];
        let v = fails(thirds(40_000.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert_eq!(v.large_reads, vec!["posts".to_string()]);
        assert!(
            v.message.contains(
                "4 scans of posts read 120,020 of its 120,000 rows between them: Index Scan \
                 using posts_pkey on posts (40,000)"
            ),
            "{}",
            v.message
        );
        // A few hundred rows each, with the page's 20: far from half.
        passes(thirds(300.0), &[], &tuples);
    }

    #[test]
    fn rows_read_count_every_loop_of_a_nested_loop() {
        // One row a lookup, looped over every post: the whole of posts, a row at a time.
        let lookups = |loops: f64| {
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "posts_pkey",
                  "Relation Name": "posts", "Schema": "public", "Index Cond": "(id = g.g)",
                  "Actual Rows": 1, "Actual Loops": loops }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        let v = fails(lookups(100_000.0), &[], &tuples);
        assert!(v.message.contains("in 100,000 loops"), "{}", v.message);
        passes(lookups(20.0), &[], &tuples);
    }

    #[test]
    fn rows_rounded_to_nothing_a_loop_cannot_hide_a_whole_read() {
        // Up to 17: a lookup by every id up to 300,000 finds 0.39 rows a loop, printed `0`;
        // 117,192 posts were read. 0 a loop over 300,000 loops is anything under 150,000.
        let lookups = |rows: Value, loops: f64| {
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Index Scan", "Index Name": "posts_pkey",
                  "Relation Name": "posts", "Schema": "public", "Index Cond": "(id = g.g)",
                  "Actual Rows": rows, "Actual Loops": loops }]}}])
        };
        let tuples = [("public.posts", 117_192.0)];
        let v = fails(lookups(json!(0), 300_000.0), &[], &tuples);
        assert!(
            v.message
                .contains("read up to 150,000 (0 as printed; EXPLAIN rounds each loop's figures)"),
            "{}",
            v.message
        );
        // Twenty lookups: rounding cannot make them most of posts.
        passes(lookups(json!(0), 20.0), &[], &tuples);
        // 18 prints two decimals: 0.01 a loop over 300,000 loops is about 3,000 rows, a pass.
        passes(lookups(json!(0.01), 300_000.0), &[], &tuples);
    }

    #[test]
    fn fractional_rows_of_postgresql_18_are_multiplied_by_their_loops() {
        // 18 prints 0.5 rows a loop where 17 printed 0 or 1.
        let doc = json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
            index_scan("posts_thread_visible_idx", "posts"),
            { "Node Type": "Index Only Scan", "Index Name": "posts_pkey",
              "Relation Name": "posts", "Schema": "public", "Index Cond": "(id = g.g)",
              "Actual Rows": 0.5, "Actual Loops": 120_000 }]}}]);
        let v = fails(doc, &[], &[("public.posts", 100_000.0)]);
        assert!(
            v.message
                .contains("read up to 60,600 (60,000 as printed; EXPLAIN rounds each loop's"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_parallel_index_scan_is_read_by_all_its_participants_together() {
        let parallel = |rows: f64| {
            json!([{ "Plan": { "Node Type": "Gather", "Plans": [
                { "Node Type": "Index Scan", "Parallel Aware": true,
                  "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
                  "Schema": "public", "Index Cond": "(thread_id >= 0)",
                  "Actual Rows": rows, "Actual Loops": 3 }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        // 3 × 20,000: more than half, though each participant read a fifth.
        let v = fails(parallel(20_000.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        passes(parallel(10_000.0), &[], &tuples);
    }

    #[test]
    fn a_bitmap_heap_scan_is_judged_by_every_row_it_fetched() {
        // Lossy pages: the recheck threw most of what the heap scan fetched away.
        let bitmap = |recheck: f64| {
            json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "posts",
                "Schema": "public", "Recheck Cond": "(thread_id >= 0)", "Actual Rows": 20,
                "Actual Loops": 1, "Rows Removed by Index Recheck": recheck, "Plans": [
                { "Node Type": "Bitmap Index Scan", "Index Name": "posts_thread_visible_idx",
                  "Index Cond": "(thread_id >= 0)", "Actual Rows": 20, "Actual Loops": 1 }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        let v = fails(bitmap(60_000.0), &[], &tuples);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(
            v.message
                .contains("Bitmap Heap Scan on posts read 60,020 of the 100,000 rows of posts"),
            "{}",
            v.message
        );
        assert!(
            v.message.contains("but it reads a whole relation"),
            "{}",
            v.message
        );
        passes(bitmap(100.0), &[], &tuples);
    }

    #[test]
    fn a_bitmap_index_scan_that_returned_most_of_a_relation_is_a_whole_read() {
        // In a BitmapAnd the required index returned every visible post; another index chose
        // the 20 rows the heap scan fetched.
        let doc = json!([{ "Plan": { "Node Type": "Bitmap Heap Scan", "Relation Name": "posts",
            "Schema": "public", "Actual Rows": 20, "Actual Loops": 1, "Plans": [
            { "Node Type": "BitmapAnd", "Plans": [
                { "Node Type": "Bitmap Index Scan", "Index Name": "posts_thread_visible_idx",
                  "Index Cond": "(thread_id >= 0)", "Actual Rows": 96_000, "Actual Loops": 1 },
                { "Node Type": "Bitmap Index Scan", "Index Name": "posts_author_visible_idx",
                  "Index Cond": "(author_id = 7)", "Actual Rows": 20, "Actual Loops": 1 }]}]}}]);
        let v = fails(doc, &[], &[("public.posts", 100_000.0)]);
        assert_eq!(v.verdict, Verdict::SeqScan, "{}", v.message);
        assert!(
            v.message
                .contains("Bitmap Index Scan using posts_thread_visible_idx"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_tid_scan_of_every_row_is_a_whole_read() {
        let tid = |rows: f64| {
            json!([{ "Plan": { "Node Type": "Nested Loop", "Plans": [
                index_scan("posts_thread_visible_idx", "posts"),
                { "Node Type": "Tid Scan", "Relation Name": "posts", "Schema": "public",
                  "TID Cond": "(ctid = ANY ($0))", "Actual Rows": rows, "Actual Loops": 1 }]}}])
        };
        let tuples = [("public.posts", 100_000.0)];
        let v = fails(tid(100_000.0), &[], &tuples);
        assert!(
            v.message.contains("Tid Scan on posts read 100,000"),
            "{}",
            v.message
        );
        passes(tid(1.0), &[], &tuples);
    }

    #[test]
    fn a_relation_never_analysed_is_as_large_as_one_pass_read() {
        // reltuples -1: the rows one pass read are all the catalog can be sure of.
        let tuples = [("public.posts", -1.0)];
        let v = fails(
            json!([{ "Plan": required_read("(thread_id >= 0)", 0.0, 50_000.0) }]),
            &[],
            &tuples,
        );
        assert_eq!(v.large_reads, vec!["posts".to_string()], "{}", v.message);
        passes(
            json!([{ "Plan": required_read("(thread_id = 1)", 20.0, 0.0) }]),
            &[],
            &tuples,
        );
    }

    #[test]
    fn a_relation_allowed_a_seq_scan_may_be_read_whole_through_an_index() {
        let doc = json!([{ "Plan": required_read("(thread_id >= 0)", 0.0, 96_000.0) }]);
        passes(doc, &["posts"], &[("public.posts", 100_000.0)]);
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

    fn probe(doc: Value) -> ProbePlan {
        ProbePlan {
            disabled: vec!["enable_seqscan".into()],
            dropped: vec![],
            plan: Explain::from_json(&doc).unwrap(),
        }
    }

    fn judge_with_probes(doc: Value, probes: Vec<ProbePlan>) -> PlanVerdict {
        let plan = Explain::from_json(&doc).unwrap();
        let index = required();
        let reltuples = HashMap::new();
        let rules = Rules {
            index: &index,
            allow_seq_scan: &[],
            reltuples: &reltuples,
            large_rows: Judging::default().large_rows,
        };
        judge_usability(
            judge_plan(&plan, &rules),
            &plan,
            &probes,
            Scratch::Absent,
            &rules,
            &[],
        )
        .verdict
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
            large_rows: Judging::default().large_rows,
        };
        let probes = vec![probe(json!([{ "Plan": { "Node Type": "Index Scan",
            "Index Name": "posts_thread_visible_idx", "Relation Name": "posts",
            "Schema": "public", "Total Cost": 8.0 }}]))];
        let v = judge_usability(
            judge_plan(&plan, &rules),
            &plan,
            &probes,
            Scratch::Absent,
            &rules,
            &[],
        )
        .verdict;
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
        assert!(v.message.contains("not settled"), "{}", v.message);
    }

    #[test]
    fn an_implied_predicate_with_no_plan_through_the_index_is_not_called_usable() {
        let chosen = json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
            "Schema": "public", "Total Cost": 100.0,
            "Filter": "((visibility = 'visible'::text) AND (thread_id = 1))" }}]);
        let mut probe_doc = seq_scan_plan(1.0e10 + 100.0);
        probe_doc[0]["Plan"]["Filter"] = json!("((visibility = 'visible'::text))");
        let v = judge_with_probes(chosen, vec![probe(probe_doc)]);
        assert_eq!(v.verdict, Verdict::NotChosen, "{v:?}");
        assert!(v.message.contains("is not settled"), "{}", v.message);
        assert!(!v.message.contains("is usable"), "{}", v.message);
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
            accepted: vec![],
            verdict,
            used: vec![],
            instead: vec![],
            seq_scans: vec![],
            message: "ok".into(),
            warm_ms: Spread::of(&[warm]),
            planning_ms: None,
            shared_buffers: Some(buffers),
            connection_lost: false,
            at: None,
            budget: Budget::default(),
            budget_used: None,
            usable: None,
            settled_by: None,
            unsettled: None,
            large_reads: vec![],
            plan_changed: false,
            plan_diff: vec![],
            strict_plans: false,
            sort_keys: vec![],
            notes: vec![],
            plans: vec![],
            settings: vec![],
            session: vec![],
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
            keys: vec![],
            orders: vec![],
            siblings: vec![],
            columns: vec![],
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
                large_rows: Judging::default().large_rows,
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
