//! verdict: a measurement and what the expectation requires, in; a verdict with its reasons,
//! out. Pure: no database, no printing, no clock. A false pass is the worst bug plancheck can
//! have, so every rule here errs toward "not a pass" when the plans do not say enough, and no
//! message claims more than the plans show.
//!
//! [`judge`] applies the rules in order, one file each: [`index`] (missing, invalid), [`plan`]
//! (the index in the plan, nothing read whole beside it), [`keys`] (`key-unused`),
//! [`usability`] (`not-usable` or `not-chosen`, each with its proof, over [`predicate`]),
//! [`generic`] (the generic plan), [`hidden`] (reads inside the functions the plan calls, by
//! PostgreSQL's own counts), [`notes`] (what the planner knew); [`budgets`] once every check is
//! judged.

mod across;
pub mod baseline;
mod budgets;
mod generic;
mod hidden;
mod index;
mod keys;
pub mod ladder;
mod notes;
mod plan;
pub mod predicate;
mod production;
pub mod readers;
mod same_statement;
pub mod shape;
#[cfg(test)]
pub(crate) mod test_support;
mod usability;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::measure::{IndexLookup, Measurement, Outcome, PlanKind, ScratchOutcome};
pub use crate::model::{Budget, IndexInfo, Partition, Relation, Relative};
use crate::plan::explain::Explain;
pub use across::{across_checks, lint_of_run};
pub use budgets::{
    BudgetUsed, WARM_NOISE_MS, WarmStanding, judge_budget, judge_budgets, warm_standing,
};
pub use generic::judge_generic;
pub use keys::{KEY_UNUSED_MIN_REMOVED, KEY_UNUSED_RATIO};
pub use plan::{PlanVerdict, Rules, judge_plan};
pub use usability::{
    ProbePlan, Scratch, ScratchPlan, Shown, TogetherPlans, Usability, judge_usability,
};

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
    /// A verdict that depends on the data, on a plan that reads a relation never analysed: the
    /// planner guessed its size, so the plan's choice says nothing of the data's. Neither a pass
    /// nor a failure ([`CheckResult::at_guesses`] holds what the guesses gave).
    NoStatistics,
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
            Verdict::NoStatistics => "no-statistics",
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

/// Where a verdict's message names its cause: `not-usable` (and a `generic-plan` behind it)
/// after [`PROOF_RULES`], `key-unused` after [`KEY_CAUSE`]; each cause one sentence ending in
/// `.` (or ` (` for an aside). The table's short form quotes it from there.
pub const PROOF_RULES: &str = "By PostgreSQL's proof rules: ";
/// See [`PROOF_RULES`].
pub const KEY_CAUSE: &str = "so the cost grows with the whole index. ";

/// What a check must show to pass: the index chosen (the default), or only usable, for a CI
/// database whose small data lets the planner prefer a seq scan (`not-chosen` then warns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Require {
    #[default]
    Chosen,
    Usable,
}

/// Median, percentiles and spread of a measured figure, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub p50: f64,
    /// The 95th and 99th percentiles, nearest rank. Of fewer than [`Spread::P95_RUNS`] runs the
    /// p95 is the slowest run, of fewer than [`Spread::P99_RUNS`] the p99 is: the reports name
    /// them only from [`Spread::p95_of_enough`] and [`Spread::p99_of_enough`] (JSON gives them
    /// as computed, with `runs`).
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    /// How many runs it is of.
    pub runs: usize,
}

impl Spread {
    /// The fewest runs whose nearest-rank p95 is not simply their slowest run (ceil(0.95 n) < n).
    pub const P95_RUNS: usize = 20;
    /// The fewest runs whose nearest-rank p99 is not simply their slowest run.
    pub const P99_RUNS: usize = 100;

    /// The p95, when there are enough runs for one ([`Spread::P95_RUNS`]).
    pub fn p95_of_enough(&self) -> Option<f64> {
        (self.runs >= Self::P95_RUNS).then_some(self.p95)
    }

    /// The p99, when there are enough runs for one ([`Spread::P99_RUNS`]).
    pub fn p99_of_enough(&self) -> Option<f64> {
        (self.runs >= Self::P99_RUNS).then_some(self.p99)
    }

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
        // Nearest rank: the smallest value at least `q` of the runs are no slower than.
        let rank = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        Some(Spread {
            p50,
            p95: rank(0.95),
            p99: rank(0.99),
            min: s[0],
            max: s[s.len() - 1],
            runs: s.len(),
        })
    }
}

/// The finished result of one check: one read path in one scope.
#[derive(Debug, Clone)]
pub struct CheckResult {
    pub read_path: String,
    pub scope: String,
    /// The required index: with several accepted, the one that passed (else the first).
    /// Empty for a check that requires no index (`index = false`): [`CheckResult::index_shown`]
    /// says so.
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
    /// Runs made and discarded before the measured ones, when the measurement says.
    pub discarded: Option<u32>,
    /// The plain statement's round trip as the client saw it (not EXPLAIN), over as many runs;
    /// `None` when the measurement has none (saved before it was kept, or the check failed).
    pub client_ms: Option<Spread>,
    pub planning_ms: Option<Spread>,
    /// Shared buffers (hit + read) of the measured runs, median.
    pub shared_buffers: Option<f64>,
    /// The error came from losing the connection: the database failed underneath.
    pub connection_lost: bool,
    /// For an `error` the server located in the project's files: where.
    pub at: Option<crate::error::Spot>,
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
    /// A `seq-scan` (or a `generic-plan` whose generic plan is one) whose every relation read
    /// whole is, by the catalog's estimate
    /// (`reltuples`, never analysed excluded) and by the rows the plan read, under
    /// `--large-rows`: the small CI database's seq scan, which `--require usable` reports as a
    /// warning.
    pub small_reads_only: bool,
    /// Relations read whole inside the function calls of the plan, as PostgreSQL counted the
    /// reads ([`hidden`]): they are among [`Self::seq_scans`] too.
    pub read_in_calls: Vec<String>,
    /// The plan's shape differs from its baseline (`baselines/NAME.SCOPE.plan`).
    pub plan_changed: bool,
    /// The shapes, baseline against now, as diff lines (`- `, `+ `, `  `).
    pub plan_diff: Vec<String>,
    /// `--strict-plans`: a changed plan fails the run instead of warning.
    pub strict_plans: bool,
    /// The Sort Keys of the sorts in the custom plan the verdict describes (the measured one, or
    /// production's with `--stats`), as printed: none when the read path's order comes from an
    /// index (or it has none). Twin drift reads them.
    pub sort_keys: Vec<String>,
    /// How long the check took, wall time, in milliseconds (JUnit's `time`).
    pub elapsed_ms: Option<f64>,
    /// The plans behind the verdict, labelled (`custom`, `generic`, and `probe`: the re-plan
    /// that used the index), for `--explain`.
    pub plans: Vec<(String, crate::measure::Document)>,
    /// `check --stats`: production's answer, with the file it comes from, in words.
    pub production: Option<String>,
    /// `check --stats`: the verdict on this database's own statistics, where production's
    /// answer replaced it.
    pub here: Option<Verdict>,
    /// The declared planner settings the check ran with (`settings = { … }`).
    pub settings: Vec<(String, String)>,
    /// What the scope's setup changed, as the server read it back (role, search path,
    /// `TimeZone`, application settings).
    pub session: Vec<(String, String)>,
    /// Tables the plans read whose row-level security policies did not apply to the check's
    /// reader (the role after the scope's setup), and why.
    pub reads_past_policies: Vec<readers::PastPolicies>,
    /// With `--migration`: the statement that dropped, renamed or redefined the required index
    /// (or an accepted one), when the check does not pass after it.
    pub changed_by: Option<crate::model::IndexChange>,
    /// The custom plan's own verdict, for a `generic-plan` whose custom plan failed too (at
    /// these statistics): the generic plan's failure does not depend on the data, and stands.
    pub custom_verdict: Option<Verdict>,
    /// The relations the plan reads that were never analysed (schema-qualified): the planner
    /// guessed their sizes.
    pub unanalysed: Vec<String>,
    /// For a `no-statistics`: the verdict the planner's guesses gave, which says nothing.
    pub at_guesses: Option<Verdict>,
}

/// How a report names the index of a check that requires none.
pub const NO_INDEX: &str = "no index (index = false)";

impl CheckResult {
    /// The required index as a report names it: its name, or that there is none.
    pub fn index_shown(&self) -> &str {
        if self.required_index.is_empty() {
            NO_INDEX
        } else {
            &self.required_index
        }
    }

    /// A failure that `--require usable` reports as a warning, no large relation read whole:
    /// the index is proved usable and merely not chosen at these statistics (in the custom
    /// plan, or in the generic plan); or the index is used and the only relations read whole
    /// are small by the catalog's estimate ([`Self::small_reads_only`]).
    /// A changed plan is a warning unless `--strict-plans`.
    pub fn is_warning(&self, require: Require) -> bool {
        if self.verdict == Verdict::PlanChanged {
            return !self.strict_plans;
        }
        let usable_not_chosen = matches!(self.verdict, Verdict::NotChosen | Verdict::GenericPlan)
            && self.usable == Some(true);
        // small_reads_only is set only on a seq-scan (of the custom plan, or of the generic one
        // behind a generic-plan).
        let small_seq_scan = matches!(self.verdict, Verdict::SeqScan | Verdict::GenericPlan)
            && self.small_reads_only;
        require == Require::Usable
            && (usable_not_chosen || small_seq_scan)
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

impl RequiredIndex {
    /// No index: what a check that requires none (`index = false`) holds its plans to. No scan
    /// is through it, so every whole read counts.
    pub fn none() -> RequiredIndex {
        RequiredIndex {
            schema: String::new(),
            name: String::new(),
            table: String::new(),
            predicate: None,
            keys: Vec::new(),
            orders: Vec::new(),
            siblings: Vec::new(),
            columns: Vec::new(),
            partitions: Vec::new(),
        }
    }
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
    /// `--require`: which verdicts depend on the data (under `usable`, a pass and a usable
    /// not-chosen do not).
    pub require: Require,
    /// `--unanalysed judge`: judge plans over never-analysed relations at the planner's guesses,
    /// as if they were statistics. Otherwise such a verdict that depends on the data is
    /// `no-statistics`.
    pub judge_unanalysed: bool,
    /// The time of the run, for the age of a statistics file (`check --stats`): the judge
    /// reads no clock.
    pub now: Option<chrono::DateTime<chrono::Utc>>,
}

impl Default for Judging {
    fn default() -> Self {
        Judging {
            large_rows: 10_000.0,
            strict_plans: false,
            require: Require::Chosen,
            judge_unanalysed: false,
            now: None,
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

/// The fewest bytes a heap row takes on disk: its header (23 bytes, aligned to 24) and its line
/// pointer (4). A main fork of `b` bytes holds at most `b / 28` rows (PostgreSQL's
/// `MaxHeapTuplesPerPage`: 291 rows in an 8 KiB page), whatever its statistics say.
const MIN_HEAP_ROW_BYTES: f64 = 28.0;

/// Why a relation is small: the catalog's estimate, or only its size on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Small {
    Estimate,
    OnDisk,
}

/// Whether one relation is under `large_rows`: by `reltuples` of a relation analysed, on disk,
/// and not rewritten since by more rows than it counted; else by its size on disk, which bounds
/// its rows ([`MIN_HEAP_ROW_BYTES`]: a relation never analysed, or empty, has no estimate, but a
/// few pages hold a few hundred rows at most).
fn how_small(f: &crate::measure::RelationFacts, large_rows: f64) -> Option<Small> {
    // Rows written since the estimate was made, up to as many as it counted, leave it
    // standing; more, and the table may have grown past it.
    let current = f
        .modified_since_analyze
        .is_none_or(|m| m as f64 <= f.reltuples.max(1.0));
    if f.has_statistics && f.bytes > 0 && current && (0.0..large_rows).contains(&f.reltuples) {
        return Some(Small::Estimate);
    }
    (f.bytes >= 0 && (f.bytes as f64 / MIN_HEAP_ROW_BYTES) < large_rows).then_some(Small::OnDisk)
}

/// Whether every relation of `seq_scans` (as shown: `name` in the default schema,
/// `schema.name` elsewhere) is under `large_rows` ([`how_small`]), none of them large by the
/// rows the plan read (`large_reads` empty): `Some` of the relations small only by their size
/// on disk. A relation the catalog facts lack is not small.
fn small_by_catalog(
    seq_scans: &[String],
    large_reads: &[String],
    relations: &[crate::measure::RelationFacts],
    large_rows: f64,
) -> Option<Vec<String>> {
    if seq_scans.is_empty() || !large_reads.is_empty() {
        return None;
    }
    let mut on_disk = Vec::new();
    for shown in seq_scans {
        let r = match shown.split_once('.') {
            Some((schema, name)) => Relation::new(Some(schema), name),
            None => Relation::new(None, shown),
        };
        let f = relations
            .iter()
            .find(|f| Relation::new(Some(&f.schema), &f.name).key() == r.key())?;
        if how_small(f, large_rows)? == Small::OnDisk {
            on_disk.push(format!("{shown} ({} bytes)", group(f.bytes as f64)));
        }
    }
    Some(on_disk)
}

/// A check's result before any rule: an `error` with no message, the check's identity, budget
/// and settings.
fn unjudged(m: &Measurement) -> CheckResult {
    CheckResult {
        read_path: m.read_path.clone(),
        scope: m.scope.clone(),
        required_index: m.requires.index.clone().unwrap_or_default(),
        accepted: if m.requires.also.is_empty() {
            Vec::new()
        } else {
            m.requires
                .index
                .iter()
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
        discarded: None,
        client_ms: None,
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
        small_reads_only: false,
        read_in_calls: Vec::new(),
        plan_changed: false,
        plan_diff: Vec::new(),
        strict_plans: false,
        sort_keys: Vec::new(),
        elapsed_ms: m.elapsed_ms,
        plans: Vec::new(),
        production: None,
        here: None,
        settings: m.settings.clone(),
        session: Vec::new(),
        reads_past_policies: Vec::new(),
        changed_by: None,
        custom_verdict: None,
        unanalysed: Vec::new(),
        at_guesses: None,
    }
}

/// The measured figures (warm time, planning time, shared buffers), the notes on statistics,
/// and the plans `--explain` shows.
fn figures(r: &mut CheckResult, measured: &crate::measure::Measured, custom: &[&Explain]) {
    let exec: Vec<f64> = custom.iter().filter_map(|p| p.execution_ms).collect();
    let planning: Vec<f64> = custom.iter().filter_map(|p| p.planning_ms).collect();
    let buffers: Vec<f64> = custom.iter().map(|p| p.shared_buffers()).collect();
    r.warm_ms = Spread::of(&exec);
    r.discarded = measured.warmup;
    r.client_ms = Spread::of(&measured.client_ms);
    r.planning_ms = Spread::of(&planning);
    r.shared_buffers = Spread::of(&buffers).map(|s| s.p50);
    r.notes = notes::of(&measured.relations);
    if let Some(last) = measured.custom.last() {
        r.plans
            .push((PlanKind::Custom.as_str().into(), last.clone()));
    }
    if let Some(g) = &measured.generic {
        r.plans.push((PlanKind::Generic.as_str().into(), g.clone()));
        // The custom plan compared is the last measured run's, as `--explain` shows it.
        if let (Some(c), Some(last)) = (r.shared_buffers, custom.last())
            && let Some(more) = notes::generic_reads_more(last, c, g.plan())
        {
            r.notes.push(more);
        }
    }
}

/// The Sort Keys of every sort in a plan, as printed.
fn sort_keys(plan: &Explain) -> Vec<String> {
    plan.nodes()
        .into_iter()
        .filter(|n| n.node_type.ends_with("Sort"))
        .flat_map(|n| n.sort_key.iter().cloned())
        .collect()
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
    r.sort_keys = sort_keys(custom[0]);
    r.session = measured.session.clone();
    r.reads_past_policies = readers::past(&measured.row_security);
    let reltuples: HashMap<String, f64> = measured
        .relations
        .iter()
        .map(|f| (Relation::new(Some(&f.schema), &f.name).key(), f.reltuples))
        .collect();

    let (used_name, mut chosen) = match &m.requires.index {
        Some(index) => judge_accepted(index, m, measured, &reltuples, how),
        None => (String::new(), judge_no_index(m, measured, &reltuples, how)),
    };
    let hidden = hidden::judge(
        measured,
        &hidden::Rules {
            allow_seq_scan: &m.requires.allow_seq_scan,
            reltuples: &reltuples,
            large_rows: how.large_rows,
        },
    );
    r.read_in_calls = with_hidden(&mut chosen, hidden, &used_name, m);
    r.required_index = used_name;
    r.verdict = chosen.verdict;
    r.used = chosen.used;
    r.instead = chosen.instead;
    r.seq_scans = chosen.seq_scans;
    r.message = chosen.message;
    r.usable = chosen.usable;
    r.custom_verdict = chosen.custom_verdict;
    r.settled_by = chosen.settled_by;
    r.unsettled = chosen.unsettled;
    r.large_reads = chosen.large_reads;
    let small = chosen
        .seq_scan
        .then(|| {
            small_by_catalog(
                &r.seq_scans,
                &r.large_reads,
                &measured.relations,
                how.large_rows,
            )
        })
        .flatten();
    r.small_reads_only = small.is_some();
    if let Some(on_disk) = small {
        let by = if on_disk.is_empty() {
            "by the catalog's estimate".to_string()
        } else {
            format!(
                "by the catalog's estimate or, for {}, by its size on disk (a row takes at \
                 least 28 bytes)",
                on_disk.join(", ")
            )
        };
        r.message.push_str(&format!(
            ". Every relation it reads whole is under --large-rows ({} rows) {by}: under \
             --require usable this is a warning, not a failure",
            group(how.large_rows)
        ));
    }
    if let Some((label, doc)) = chosen.probe {
        r.plans.push((label.into(), doc));
    }
    if let Some(baseline) = &m.requires.baseline {
        compare_baseline(&mut r, m, measured, baseline, how);
    }
    r.unanalysed = measured
        .relations
        .iter()
        .filter(|f| !f.has_statistics)
        .map(|f| Relation::new(Some(&f.schema), &f.name).to_string())
        .collect();
    if !how.judge_unanalysed && rests_on_statistics(&r, how.require) {
        r.message = format!(
            "{} never analysed: the planner guessed {}, so its choice here says nothing of the \
             data's. At those guesses: {}: {}",
            r.unanalysed.join(", "),
            if r.unanalysed.len() == 1 {
                "its size"
            } else {
                "their sizes"
            },
            r.verdict,
            without_fix(&r.message)
        );
        r.at_guesses = Some(r.verdict);
        r.verdict = Verdict::NoStatistics;
    }
    production::judge(
        &mut r,
        measured,
        &m.requires.allow_seq_scan,
        how.large_rows,
        how.now,
    );
    r
}

/// A message without its `Fix:` sentence: what fixes a verdict at the planner's guesses (allow
/// a seq scan, read less) is not what fixes a `no-statistics`, which is an `ANALYZE`.
fn without_fix(message: &str) -> String {
    let Some(start) = message.find(". Fix: ") else {
        return message.to_string();
    };
    let rest = &message[start + ". Fix: ".len()..];
    match rest.find(". ") {
        Some(end) => format!("{}{}", &message[..start], &rest[end..]),
        None => format!("{}.", &message[..start]),
    }
}

/// Whether the check's verdict depends on statistics that do not exist: a relation its plan
/// reads was never analysed, and the verdict is one the data decides under `require`. What the
/// data does not decide stands on any data: `not-usable`, `missing-index`, `invalid-index`, an
/// `error`, a `generic-plan` whose generic plan cannot use the index, and, under `--require
/// usable`, a pass (the plan read the index) and every warning.
fn rests_on_statistics(r: &CheckResult, require: Require) -> bool {
    if r.unanalysed.is_empty() || r.is_warning(require) {
        return false;
    }
    match r.verdict {
        Verdict::NotUsable
        | Verdict::MissingIndex
        | Verdict::InvalidIndex
        | Verdict::Error
        | Verdict::NoStatistics => false,
        Verdict::GenericPlan => r.usable != Some(false),
        Verdict::Pass => require == Require::Chosen,
        // Unsettled usability under `--require usable` fails for want of the copy, not of
        // statistics.
        Verdict::NotChosen => require == Require::Chosen || r.usable == Some(true),
        Verdict::SeqScan | Verdict::KeyUnused | Verdict::OverBudget | Verdict::PlanChanged => true,
    }
}

/// What the counters say of reads the plan does not show, added to the verdict
/// ([`hidden::judge`]): a table read whole inside a call turns a pass into a `seq-scan` and is
/// named beside any other verdict; with `track_counts` off a pass is not settled (`error`). A
/// measurement saved before reads were counted carries no counts: it is judged by its plans, as
/// it was when saved. Returns the tables read whole inside calls.
fn with_hidden(
    chosen: &mut Judged,
    hidden: hidden::Hidden,
    index: &str,
    m: &Measurement,
) -> Vec<String> {
    let reads = match hidden {
        hidden::Hidden::Nothing | hidden::Hidden::NotCounted => return Vec::new(),
        hidden::Hidden::Untracked => {
            let why = "PostgreSQL counted no reads (track_counts is off on this server), so \
                       what the functions the plan calls read is not settled; a pass needs them \
                       counted: turn track_counts on";
            if chosen.verdict.is_pass() {
                chosen.verdict = Verdict::Error;
                chosen.message = format!("{}; {why}", chosen.message);
            } else {
                chosen.message.push_str(&format!(" ({why})"));
            }
            return Vec::new();
        }
        hidden::Hidden::Found(reads) => reads,
    };
    let details: Vec<&str> = reads.iter().map(|h| h.detail.as_str()).collect();
    let mut relations: Vec<String> = Vec::new();
    for h in &reads {
        if !relations.contains(&h.relation) {
            relations.push(h.relation.clone());
        }
        if !chosen.seq_scans.contains(&h.relation) {
            chosen.seq_scans.push(h.relation.clone());
        }
        if h.large && !chosen.large_reads.contains(&h.relation) {
            chosen.large_reads.push(h.relation.clone());
        }
    }
    let allowed = if m.requires.allow_seq_scan.is_empty() {
        "no relation may be seq scanned here".to_string()
    } else {
        format!("only {} may be", m.requires.allow_seq_scan.join(", "))
    };
    let quoted: Vec<String> = relations.iter().map(|r| format!("\"{r}\"")).collect();
    let read = format!(
        "a function call in the plan reads a whole relation ({allowed}): {}. Fix: read only what \
         the call needs (a condition an index serves, a LIMIT that stops early), or, where \
         reading {} whole is expected, allow it in the expectation, allow_seq_scan = [{}]",
        details.join("; "),
        relations.join(", "),
        quoted.join(", ")
    );
    if chosen.verdict.is_pass() {
        let lead = if index.is_empty() {
            "no index is required (index = false), but ".to_string()
        } else {
            format!("{index} is used, but ")
        };
        chosen.verdict = Verdict::SeqScan;
        chosen.seq_scan = true;
        chosen.message = format!("{lead}{read}");
    } else {
        if !chosen.message.ends_with('.') {
            chosen.message.push('.');
        }
        chosen.message.push_str(&format!(" Beside that, {read}"));
        chosen.seq_scan |= chosen.verdict == Verdict::SeqScan;
    }
    relations
}

/// The required index, then each the scope accepts in its place: the first that passes stands;
/// when none does, the required index's verdict, with the others' beside it.
fn judge_accepted(
    index: &str,
    m: &Measurement,
    measured: &crate::measure::Measured,
    reltuples: &HashMap<String, f64>,
    how: &Judging,
) -> (String, Judged) {
    let accepted = std::iter::once((index, &measured.index)).chain(
        m.requires
            .also
            .iter()
            .map(String::as_str)
            .zip(measured.alternatives.iter()),
    );
    let mut judged: Vec<(String, Judged)> = Vec::new();
    for (name, lookup) in accepted {
        let j = judge_index(name, lookup, m, measured, reltuples, how);
        let passed = j.verdict.is_pass();
        judged.push((name.to_string(), j));
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
    (used_name, chosen)
}

/// A check that requires no index (`index = false`): every measured run and the generic plan
/// held to the whole-read rule alone; the worst run stands.
fn judge_no_index(
    m: &Measurement,
    measured: &crate::measure::Measured,
    reltuples: &HashMap<String, f64>,
    how: &Judging,
) -> Judged {
    let none = RequiredIndex::none();
    let rules = Rules {
        index: &none,
        allow_seq_scan: &m.requires.allow_seq_scan,
        reltuples,
        large_rows: how.large_rows,
    };
    let custom: Vec<&Explain> = measured.custom.iter().map(|d| d.plan()).collect();
    let Some((mut judged, at)) = worst_run(&custom, |p| plan::judge_whole_reads(p, &rules)) else {
        return plain(Verdict::Error, "no measured run".into(), custom[0]);
    };
    let mut about = custom[at];
    if let Some(generic) = measured.generic.as_ref().map(|d| d.plan()) {
        let g = plan::judge_whole_reads(generic, &rules);
        judged = judge_generic(
            judged,
            g,
            "reads nothing whole but what allow_seq_scan allows",
        );
        if judged.verdict == Verdict::GenericPlan {
            about = generic;
        }
    }
    let seq_scan = !judged.seq_scans.is_empty();
    Judged {
        verdict: judged.verdict,
        instead: if judged.verdict.is_pass() {
            Vec::new()
        } else {
            plan::describe_access_paths(&about.scans())
        },
        used: judged.used,
        seq_scans: judged.seq_scans,
        message: judged.message,
        usable: None,
        // The plan itself is all there is to settle: no index to ask about.
        settled_by: Some(Settled::Plan),
        unsettled: None,
        large_reads: judged.large_reads,
        seq_scan,
        probe: None,
        custom_verdict: None,
    }
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
            "the plan changed shape since its baseline {path} ({changed} lines differ), {}; \
             review the diff, then `plancheck accept --only {} --scope {}` records the new \
             plan. {}",
            if r.required_index.is_empty() {
                "still reading nothing whole but what allow_seq_scan allows".to_string()
            } else {
                format!("still through {}", r.required_index)
            },
            m.read_path,
            m.scope,
            r.message
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
    /// The verdict is a `seq-scan`, of the custom plan or (as `generic-plan`) of the generic
    /// one: the index is used, and only relations read whole fail it.
    seq_scan: bool,
    /// The re-plan through the index (`probe`), or on the scratch copy (`scratch`), for
    /// `--explain`.
    probe: Option<(&'static str, crate::measure::Document)>,
    /// The custom plan's verdict, for a `generic-plan` whose custom plan failed too.
    custom_verdict: Option<Verdict>,
}

/// One accepted index judged against the measurement: the rules in their order (the index,
/// each run, usability, the generic plan, large reads); each rule is a function of its own file.
// Long because it is those rules in their order, each a call, with what one hands the next
// (the worst run, the settlement, the plan the verdict is about) named here once.
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
    let Some((mut judged, at)) = worst_run(&custom, |p| judge_plan(p, &rules)) else {
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
    let mut seq_scan = judged.verdict == Verdict::SeqScan;
    let mut custom_verdict = None;
    if let Some(generic) = generic {
        // Whether the generic plan can use the index does not depend on the data: it is asked
        // whatever the custom plan chose, unless the custom plan's own failure does not depend
        // on the data either (the index not usable by it).
        let custom_open = judged.verdict.is_pass() || settlement.usable != Some(false);
        let mut g = judge_plan(generic, &rules);
        let mut generic_settlement = Settlement::default();
        if custom_open && g.verdict == Verdict::NotChosen && !reads_index(generic) {
            (g, generic_settlement) = settle(g, generic, PlanKind::Generic, measured, &rules);
        }
        let generic_seq_scan = g.verdict == Verdict::SeqScan;
        let custom_passed = judged.verdict.is_pass();
        if custom_passed {
            judged = judge_generic(judged, g, &format!("uses {}", required.name));
            if judged.verdict == Verdict::GenericPlan {
                seq_scan = generic_seq_scan;
                settlement = generic_settlement;
            }
        } else if custom_open && g.verdict == Verdict::NotUsable {
            custom_verdict = Some(judged.verdict);
            judged = generic::not_usable_whatever_the_custom_plan(judged, g);
            seq_scan = false;
            settlement = generic_settlement;
        } else {
            judged = judge_generic(judged, g, &format!("uses {}", required.name));
        }
    }
    // A `not-chosen` whose plan reads an index of the required name, only not as the page's
    // path (one partition's, another relation's index of that name): no re-plan was asked, and
    // the verdict says so rather than leave usability unexplained.
    if judged.verdict == Verdict::NotChosen
        && settlement.usable.is_none()
        && settlement.unsettled.is_none()
    {
        settlement.unsettled = Some(
            "the plan reads an index of that name, but not as the way to these rows (the \
             message says where), so no re-plan was asked"
                .into(),
        );
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
        seq_scan,
        probe: settlement.shown,
        custom_verdict,
    }
}

/// Every measured run judged by `judge`; the worst one stands (the first that fails), with its
/// place among the runs. A plan does not change between runs of one statement in one
/// transaction, but nothing is assumed. `None` when there is no run.
fn worst_run<'a>(
    runs: &[&'a Explain],
    judge: impl Fn(&'a Explain) -> PlanVerdict,
) -> Option<(PlanVerdict, usize)> {
    let mut worst: Option<(PlanVerdict, usize)> = None;
    for (i, plan) in runs.iter().enumerate() {
        if worst.as_ref().is_none_or(|(w, _)| w.verdict.is_pass()) {
            worst = Some((judge(plan), i));
        }
    }
    worst
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
        seq_scan: false,
        probe: None,
        custom_verdict: None,
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
        // Only a check that requires no index has none looked up, and it is judged without one.
        IndexLookup::NotRequired => {
            return Err(Box::new(plain(
                Verdict::Error,
                format!("{name} was not looked up in the catalog"),
                plan,
            )));
        }
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
    // The copy's re-plan counts only where it planned the statement the server measured.
    let mut another_statement = None;
    let (scratch, copy_plan) = match copy.map(|s| &s.outcome) {
        Some(ScratchOutcome::Planned(p)) => {
            match same_statement::held(p.same_statement.as_ref(), &rules.index.table) {
                Ok(()) => (
                    Some(ScratchPlan {
                        server_version: p.server_version.clone(),
                        dropped: p.dropped.clone(),
                        plan: p.document.plan().clone(),
                        together: p.together.as_ref().map(|t| TogetherPlans {
                            tried: t.tried.clone(),
                            disabled: t.disabled.clone(),
                            found: t
                                .found
                                .as_ref()
                                .map(|f| (f.with.clone(), f.document.plan().clone())),
                        }),
                    }),
                    Some(&p.document),
                ),
                Err(why) => {
                    another_statement = Some(why);
                    (None, None)
                }
            }
        }
        _ => (None, None),
    };
    let asked = match (copy.map(|s| &s.outcome), &scratch, &another_statement) {
        (_, Some(p), _) => Scratch::Planned(p),
        (_, None, Some(why)) => Scratch::NotMade(why),
        (Some(ScratchOutcome::NotMade { why }), None, None) => Scratch::NotMade(why),
        _ => Scratch::Absent,
    };
    let u = judge_usability(v, plan, &probes, asked, rules, &measured.non_immutable);
    let shown = match u.shown {
        Some(Shown::Probe(i)) => found.get(i).map(|p| ("probe", p.document.clone())),
        Some(Shown::Scratch) => copy_plan.map(|d| ("scratch", d.clone())),
        Some(Shown::Together) => copy
            .and_then(|s| match &s.outcome {
                ScratchOutcome::Planned(p) => p.together.as_ref(),
                ScratchOutcome::NotMade { .. } => None,
            })
            .and_then(|t| t.found.as_ref())
            .map(|f| ("scratch", f.document.clone())),
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
    use super::*;

    /// A check that requires no index (`index = false`), measured with one custom run and a
    /// generic plan.
    fn no_index_check(custom: serde_json::Value, generic: serde_json::Value) -> Measurement {
        use crate::measure::Document;
        Measurement::of_plans(
            IndexLookup::NotRequired,
            vec![Document::new(custom).unwrap()],
            Some(Document::new(generic).unwrap()),
            1,
        )
    }

    #[test]
    fn no_required_index_holds_the_generic_plan_to_the_whole_read_rule_too() {
        let by_key = serde_json::json!([{ "Plan": { "Node Type": "Index Scan",
            "Index Name": "posts_pkey", "Relation Name": "posts", "Schema": "public",
            "Index Cond": "(id = $1)", "Actual Rows": 1, "Actual Loops": 1 }}]);
        let whole = serde_json::json!([{ "Plan": { "Node Type": "Seq Scan",
            "Relation Name": "posts", "Schema": "public", "Filter": "(id = $1)",
            "Actual Rows": 1, "Actual Loops": 1, "Rows Removed by Filter": 20000 }}]);
        let r = judge(
            &no_index_check(by_key.clone(), whole.clone()),
            &Judging::default(),
        );
        assert_eq!(r.verdict, Verdict::GenericPlan, "{r:?}");
        assert_eq!(r.required_index, "");
        assert_eq!(r.seq_scans, vec!["posts".to_string()]);
        assert_eq!(r.large_reads, vec!["posts".to_string()]);
        // The custom plan reads posts_pkey: the message says what it does, not that it uses no
        // index.
        assert!(
            r.message.starts_with(
                "the custom plan reads nothing whole but what allow_seq_scan allows, but the \
                 generic plan"
            ),
            "{}",
            r.message
        );
        // Both plans by key: a pass; the custom plan reading posts whole: a seq-scan.
        let r = judge(
            &no_index_check(by_key.clone(), by_key.clone()),
            &Judging::default(),
        );
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
        let r = judge(&no_index_check(whole, by_key), &Judging::default());
        assert_eq!(r.verdict, Verdict::SeqScan, "{r:?}");
    }

    /// The thread page measured on a CI database of five posts: `custom` its one run, `generic`
    /// the generic plan, both seq scans with `filter`s of their own.
    fn five_posts(custom_filter: &str, generic_filter: &str) -> Measurement {
        let seq = |filter: &str| {
            serde_json::json!([{ "Plan": { "Node Type": "Seq Scan", "Relation Name": "posts",
                "Schema": "public", "Filter": filter, "Actual Rows": 2, "Actual Loops": 1,
                "Rows Removed by Filter": 3 }}])
        };
        let mut m = test_support::counted_check(seq(custom_filter), None, &[]);
        if let Outcome::Measured(measured) = &mut m.outcome {
            measured.generic = Some(crate::measure::Document::new(seq(generic_filter)).unwrap());
            for r in &mut measured.relations {
                r.reltuples = 5.0;
            }
        }
        m
    }

    #[test]
    fn a_generic_plan_that_cannot_use_the_index_fails_whatever_the_custom_plan_chose() {
        // Regression: once the custom plan was not chosen (a seq scan of five rows), the generic
        // plan was never judged, and --require usable let `visibility = $2` through.
        let m = five_posts(
            "((thread_id = 1) AND (visibility = 'visible'::text))",
            "((thread_id = $1) AND (visibility = $2))",
        );
        let r = judge(&m, &Judging::default());
        assert_eq!(r.verdict, Verdict::GenericPlan, "{}", r.message);
        assert_eq!(r.usable, Some(false), "{}", r.message);
        assert_eq!(r.settled_by, Some(Settled::Rule), "{}", r.message);
        assert_eq!(r.custom_verdict, Some(Verdict::NotChosen), "{}", r.message);
        assert!(!r.is_warning(Require::Usable), "{}", r.message);
        assert!(r.message.contains("whatever the data"), "{}", r.message);
        // The control: a generic plan whose conditions imply the predicate (the constant kept in
        // the SQL) is usable; the check stays the custom plan's not-chosen, a warning.
        let m = five_posts(
            "((thread_id = 1) AND (visibility = 'visible'::text))",
            "((thread_id = $1) AND (visibility = 'visible'::text))",
        );
        let r = judge(&m, &Judging::default());
        assert_eq!(r.verdict, Verdict::NotChosen, "{}", r.message);
        assert_eq!(r.usable, Some(true), "{}", r.message);
        assert_eq!(r.custom_verdict, None);
        assert!(r.is_warning(Require::Usable), "{}", r.message);
    }

    #[test]
    fn a_not_chosen_always_says_why_usability_is_or_is_not_settled() {
        // Regression: a plan reading an index of the required name where it is not the way to
        // the page left `usable`, `settled_by` and `unsettled` all null, and the fix line pointed
        // at a reason that was not there.
        let doc = serde_json::json!([{ "Plan": { "Node Type": "Index Scan",
            "Index Name": "posts_thread_visible_idx", "Relation Name": "archived_posts",
            "Schema": "public", "Index Cond": "(thread_id = 1)", "Actual Rows": 3,
            "Actual Loops": 1 }}]);
        let m = test_support::counted_check(doc, None, &[]);
        let r = judge(&m, &Judging::default());
        assert_eq!(r.verdict, Verdict::NotChosen, "{}", r.message);
        assert_eq!(r.usable, None);
        assert!(
            r.unsettled
                .as_deref()
                .is_some_and(|u| u.contains("no re-plan was asked")),
            "{r:?}"
        );
    }

    #[test]
    fn the_required_index_on_the_inner_side_of_a_join_whose_outer_side_found_nothing_passes() {
        // Issue 34: at a thousand rows the outer side found no rows, the inner Index Scan
        // through the required index never ran (`loops 0`), and the check failed `not-chosen`.
        let doc = |outer_rows: u64, inner_loops: u64| {
            serde_json::json!([{ "Plan": { "Node Type": "Nested Loop", "Actual Rows": 0,
                "Actual Loops": 1, "Plans": [
                { "Node Type": "Index Scan", "Index Name": "forums_pkey",
                  "Relation Name": "forums", "Schema": "public", "Index Cond": "(id = 7)",
                  "Actual Rows": outer_rows, "Actual Loops": 1 },
                { "Node Type": "Index Scan", "Index Name": "posts_thread_visible_idx",
                  "Relation Name": "posts", "Schema": "public",
                  "Index Cond": "(thread_id = forums.id)", "Actual Rows": 0,
                  "Actual Loops": inner_loops }]}}])
        };
        for (outer, loops) in [(0, 0), (1, 1)] {
            let r = judge(
                &test_support::counted_check(doc(outer, loops), None, &[]),
                &Judging::default(),
            );
            assert_eq!(r.verdict, Verdict::Pass, "{}", r.message);
        }
    }

    #[test]
    fn spread_takes_the_median() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.p50, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[1.0, 4.0]).unwrap().p50, 2.5);
        assert!(Spread::of(&[]).is_none());
        // 1..=100: nearest-rank p95 is 95, p99 99; of five runs, both are the slowest.
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Spread::of(&hundred).unwrap();
        assert_eq!((s.p95, s.p99, s.runs), (95.0, 99.0, 100));
        let five = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((five.p50, five.p95, five.p99), (3.0, 5.0, 5.0));
        // Named as percentiles only where the runs are enough for one: of 19 runs the p95 is
        // the slowest, of 20 it is the 19th; of 99 the p99 is the slowest.
        assert_eq!((five.p95_of_enough(), five.p99_of_enough()), (None, None));
        let runs = |n: usize| Spread::of(&(1..=n).map(|i| i as f64).collect::<Vec<_>>()).unwrap();
        assert_eq!(runs(19).p95, 19.0);
        assert_eq!(runs(19).p95_of_enough(), None);
        assert_eq!(runs(20).p95_of_enough(), Some(19.0));
        assert_eq!(runs(60).p95_of_enough(), Some(57.0));
        assert_eq!((runs(60).p99, runs(60).p99_of_enough()), (60.0, None));
        assert_eq!(runs(99).p99_of_enough(), None);
        assert_eq!(runs(100).p99_of_enough(), Some(99.0));
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

    /// `counted_check`'s measurement with `forums` never analysed.
    fn over_a_relation_never_analysed(doc: serde_json::Value) -> Measurement {
        let mut m = test_support::counted_check(doc, None, &[]);
        if let Outcome::Measured(measured) = &mut m.outcome {
            measured.relations[1].has_statistics = false;
            measured.relations[1].reltuples = -1.0;
        }
        m
    }

    #[test]
    fn a_pass_at_the_planners_guesses_is_no_statistics_under_require_chosen() {
        let m = over_a_relation_never_analysed(serde_json::json!([{ "Plan":
            test_support::index_scan(&test_support::required().name, "posts") }]));
        let r = judge(&m, &Judging::default());
        assert_eq!(r.verdict, Verdict::NoStatistics, "{}", r.message);
        assert_eq!(r.at_guesses, Some(Verdict::Pass));
        assert_eq!(r.unanalysed, vec!["forums".to_string()]);
        assert!(
            r.message.starts_with("forums never analysed"),
            "{}",
            r.message
        );

        // Asked for, the guesses are judged as statistics.
        let judged = judge(
            &m,
            &Judging {
                judge_unanalysed: true,
                ..Judging::default()
            },
        );
        assert_eq!(judged.verdict, Verdict::Pass);
        assert_eq!(judged.unanalysed, vec!["forums".to_string()]);

        // Under --require usable a plan that read the index passes on any data.
        let usable = judge(
            &m,
            &Judging {
                require: Require::Usable,
                ..Judging::default()
            },
        );
        assert_eq!(usable.verdict, Verdict::Pass, "{}", usable.message);
    }

    #[test]
    fn a_seq_scan_at_the_planners_guesses_is_no_statistics() {
        // The page's index, and a seq scan of the 30 forums, a relation never analysed.
        let forums = serde_json::json!({ "Node Type": "Seq Scan", "Relation Name": "forums",
            "Schema": "public", "Actual Rows": 30, "Actual Loops": 1 });
        let m = over_a_relation_never_analysed(serde_json::json!([{ "Plan": {
            "Node Type": "Nested Loop", "Actual Rows": 20, "Actual Loops": 1,
            "Plans": [forums, test_support::index_scan(&test_support::required().name, "posts")]
        }}]));
        let judged = |m: &Measurement, require| {
            judge(
                m,
                &Judging {
                    require,
                    ..Judging::default()
                },
            )
        };
        let r = judged(&m, Require::Chosen);
        assert_eq!(r.verdict, Verdict::NoStatistics, "{}", r.message);
        assert_eq!(r.at_guesses, Some(Verdict::SeqScan));
        // Under --require usable one page of forums is small whatever its statistics: at most
        // 291 rows fit. A warning, as of an analysed small table.
        let r = judged(&m, Require::Usable);
        assert_eq!(r.verdict, Verdict::SeqScan, "{}", r.message);
        assert!(r.is_warning(Require::Usable), "{}", r.message);
        assert!(
            r.message
                .contains("or, for forums (8,192 bytes), by its size on disk"),
            "{}",
            r.message
        );
        // 4 MB of forums may hold 10,000 rows: only statistics could say.
        let mut big = m.clone();
        if let Outcome::Measured(measured) = &mut big.outcome {
            measured.relations[1].bytes = 4_000_000;
        }
        let r = judged(&big, Require::Usable);
        assert_eq!(r.verdict, Verdict::NoStatistics, "{}", r.message);
        assert_eq!(r.at_guesses, Some(Verdict::SeqScan));
    }

    #[test]
    fn a_verdict_at_the_guesses_is_told_without_its_fix() {
        assert_eq!(
            without_fix(
                "X is used, but the plan also reads a whole relation: Seq Scan on post (no \
                 relation may be seq scanned here). Fix: where reading post whole is expected, \
                 allow it in the expectation, allow_seq_scan = [\"post\"] (it allows it on \
                 every database the project is checked against, a production-sized one too). \
                 Every relation it reads whole is under --large-rows"
            ),
            "X is used, but the plan also reads a whole relation: Seq Scan on post (no relation \
             may be seq scanned here). Every relation it reads whole is under --large-rows"
        );
        assert_eq!(without_fix("a. Fix: do it"), "a.");
        assert_eq!(without_fix("no fix here"), "no fix here");
    }

    #[test]
    fn what_the_data_does_not_decide_stands_over_a_relation_never_analysed() {
        let mut r = test_support::measured("p", Verdict::NotUsable, 1.0, 10.0);
        r.unanalysed = vec!["public.forums".into()];
        for require in [Require::Chosen, Require::Usable] {
            for v in [
                Verdict::NotUsable,
                Verdict::MissingIndex,
                Verdict::InvalidIndex,
                Verdict::Error,
            ] {
                r.verdict = v;
                assert!(!rests_on_statistics(&r, require), "{v} under {require:?}");
            }
            // A generic plan that cannot use the index fails on any data.
            r.verdict = Verdict::GenericPlan;
            r.usable = Some(false);
            assert!(!rests_on_statistics(&r, require), "generic-plan, unusable");
            // One that can, and was not chosen, is the data's call.
            r.usable = Some(true);
            assert_eq!(
                rests_on_statistics(&r, require),
                require == Require::Chosen,
                "generic-plan, usable, {require:?} (a warning under usable)"
            );
        }
        // Not chosen: the data's call under chosen; under usable, a usable index is a warning
        // and an unsettled one fails for want of the copy, not of statistics.
        r.verdict = Verdict::NotChosen;
        r.usable = None;
        assert!(rests_on_statistics(&r, Require::Chosen));
        assert!(!rests_on_statistics(&r, Require::Usable));
        for v in [Verdict::SeqScan, Verdict::KeyUnused, Verdict::OverBudget] {
            r.verdict = v;
            assert!(rests_on_statistics(&r, Require::Usable), "{v}");
        }
        // A relation analysed: nothing rests on missing statistics.
        r.unanalysed.clear();
        r.verdict = Verdict::SeqScan;
        assert!(!rests_on_statistics(&r, Require::Chosen));
    }

    #[test]
    fn only_relations_small_by_the_catalog_make_a_small_seq_scan() {
        let facts = |name: &str, reltuples: f64, has_statistics: bool, bytes: i64| {
            crate::measure::RelationFacts {
                schema: "public".into(),
                name: name.into(),
                reltuples,
                has_statistics,
                bytes,
                modified_since_analyze: None,
            }
        };
        let relations = vec![
            facts("users", 20.0, true, 8192),
            facts("big", 50_000.0, true, 4_000_000),
            // PostgreSQL 14 and later: -1; 13: 0 with rows on disk. Either has no estimate;
            // one page holds 291 rows at most.
            facts("fresh", -1.0, false, 8192),
            facts("fresh13", 0.0, false, 8192),
            facts("empty", 0.0, false, 0),
            // 280,000 bytes: up to 10,000 rows.
            facts("fresh_large", -1.0, false, 280_000),
            crate::measure::RelationFacts {
                modified_since_analyze: Some(60_000),
                ..facts("grown", 20.0, true, 8192)
            },
            crate::measure::RelationFacts {
                modified_since_analyze: Some(60_000),
                ..facts("grown_on_disk", 20.0, true, 4_000_000)
            },
        ];
        let small = |scans: &[&str], large: &[&str]| {
            let scans: Vec<String> = scans.iter().map(|s| s.to_string()).collect();
            let large: Vec<String> = large.iter().map(|s| s.to_string()).collect();
            small_by_catalog(&scans, &large, &relations, 10_000.0)
        };
        let by_estimate = Some(vec![]);
        assert_eq!(small(&["users"], &[]), by_estimate);
        assert_eq!(
            small(&["users", "empty"], &[]),
            Some(vec!["empty (0 bytes)".into()])
        );
        assert_eq!(small(&["users", "big"], &[]), None, "one large relation");
        assert_eq!(
            small(&["users"], &["users"]),
            None,
            "large by the rows the plan read"
        );
        assert_eq!(
            small(&["fresh"], &[]),
            Some(vec!["fresh (8,192 bytes)".into()]),
            "never analysed, small on disk"
        );
        assert_eq!(
            small(&["fresh13"], &[]),
            Some(vec!["fresh13 (8,192 bytes)".into()]),
            "never analysed, before 14"
        );
        assert_eq!(small(&["fresh_large"], &[]), None, "10,000 rows fit");
        assert_eq!(
            small(&["grown"], &[]),
            Some(vec!["grown (8,192 bytes)".into()]),
            "rewritten past its estimate, one page"
        );
        assert_eq!(
            small(&["grown_on_disk"], &[]),
            None,
            "rewritten past its estimate"
        );
        assert_eq!(small(&["nowhere"], &[]), None, "not in the catalog facts");
        assert_eq!(small(&[], &[]), None, "no seq scan at all");
        assert_eq!(small(&["other.users"], &[]), None, "another schema's users");
    }
}
