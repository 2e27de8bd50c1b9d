//! The stable JSON document described in the README: its own structs, so the internal types can
//! change without breaking a consumer. Fields are only ever added.

use serde::Serialize;

use super::{Report, Summary};
use crate::verdict::{Budget, BudgetUsed, Spread, Verdict};

#[derive(Serialize)]
struct JsonReport<'a> {
    server_version: &'a str,
    /// Rights of the connecting role that let SQL act outside the rolled-back transaction.
    role_warnings: &'a [crate::db::role::RoleRisk],
    checks: Vec<JsonCheck<'a>>,
    /// Twin drift and invalid indexes (`plancheck lint`), found before the checks ran.
    lint: &'a [crate::lint::Finding],
    /// With `--migration`: its statements checked in another form than written
    /// (`CREATE INDEX CONCURRENTLY` as `CREATE INDEX`), each `path:line: what`.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    migration_rewritten: &'a [String],
    /// With `--migration`: each index a check requires that a statement dropped, renamed or
    /// redefined: `index`, `path`, `line`, `statement` (its first line) and `change`
    /// (`dropped`, `renamed` with `to`, `redefined` with `definition`).
    #[serde(skip_serializing_if = "<[crate::model::IndexChange]>::is_empty")]
    migration_index_changes: &'a [crate::model::IndexChange],
    /// With `--migration`: how long its locks were held (`held_ms`) against `--migration-hold`
    /// (`limit_ms`); `reached` when the bound stopped the checks after it (`not_run` of them),
    /// `while_applying` when it came before the migration was applied; `released` when the
    /// rollback was answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    migration_hold: Option<&'a crate::model::MigrationHold>,
    summary: Summary,
}

#[derive(Serialize)]
struct JsonBefore<'a> {
    verdict: Verdict,
    used: &'a [String],
    message: &'a str,
}

#[derive(Serialize)]
struct JsonCheck<'a> {
    read_path: &'a str,
    scope: &'a str,
    /// `null` for a check that requires no index (`index = false`).
    required_index: Option<&'a str>,
    /// Every index the scope accepts, when it accepts several; `required_index` is then the
    /// one that passed, or the first.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    accepted_indexes: &'a [String],
    verdict: Verdict,
    used: &'a [String],
    seq_scans: &'a [String],
    warm_ms: Option<Spread>,
    /// The server's execution time of the measured runs: median, 95th and 99th percentiles
    /// (nearest rank), and how many runs were measured and how many discarded before them.
    p50_ms: Option<f64>,
    p95_ms: Option<f64>,
    p99_ms: Option<f64>,
    runs: Option<usize>,
    discarded: Option<u32>,
    /// The plain statement's round trip as the client saw it, over as many runs: median, 95th
    /// and 99th percentiles; null in a run saved before it was measured.
    client_p50_ms: Option<f64>,
    client_p95_ms: Option<f64>,
    client_p99_ms: Option<f64>,
    planning_ms: Option<Spread>,
    shared_buffers: Option<f64>,
    /// Whether the index was proved usable (true: a re-plan used it, or its predicate is
    /// implied), proved not (false), or neither (null: not needed, or not settled).
    usable: Option<bool>,
    /// What settled the verdict about the index: `plan` (the measured plan read it),
    /// `re-plan` (a re-plan on the measured server), `scratch` (a re-plan on a schema-only
    /// copy on a throwaway local server), `rule` (a rule of PostgreSQL's proof procedure), or
    /// null: not settled (`unsettled` says why), or no index question (an error, a missing or
    /// invalid index).
    settled_by: Option<crate::verdict::Settled>,
    /// Why usability is not settled, when it was asked and is not.
    unsettled: Option<&'a str>,
    /// For a `generic-plan` whose custom plan failed too at these statistics: the custom plan's
    /// own verdict (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    custom_verdict: Option<crate::verdict::Verdict>,
    /// Relations the plan reads that were never analysed: the planner guessed their sizes.
    unanalysed: &'a [String],
    /// For a `no-statistics`: the verdict the planner's guesses gave, which says nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    at_guesses: Option<crate::verdict::Verdict>,
    /// `check --stats`: production's answer, with the file it comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    production: Option<&'a str>,
    /// `check --stats`: the verdict on this database's own statistics, where production's
    /// answer replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    here: Option<crate::verdict::Verdict>,
    /// Relations of at least --large-rows rows the plan reads whole.
    large_reads: &'a [String],
    /// The plan's shape differs from its baseline (`baselines/NAME.SCOPE.plan`).
    plan_changed: bool,
    /// Baseline against now, one line each: `- ` only in the baseline, `+ ` only now.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    plan_diff: &'a [String],
    /// A failure reported as a warning under `--require usable`.
    warning: bool,
    /// Warnings about the planner's knowledge: relations never analysed or changed a lot since.
    notes: &'a [String],
    /// With `--migration`: the same check before the migration.
    #[serde(skip_serializing_if = "Option::is_none")]
    before: Option<JsonBefore<'a>>,
    /// The declared planner settings the check ran with (`settings = { … }`).
    settings: std::collections::BTreeMap<&'a str, &'a str>,
    /// What the scope's setup changed, as the server read it back after the setup.
    session_settings: std::collections::BTreeMap<&'a str, &'a str>,
    /// The budgets set for the check (absent figures left out), and the share of each used.
    budget: &'a Budget,
    budget_used: Option<&'a BudgetUsed>,
    message: &'a str,
    /// For an `error` the server located in the project's files: path, line and column.
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<&'a crate::error::Spot>,
    /// With `--migration`: the statement that changed the index this check requires, when it
    /// does not pass after it (as in `migration_index_changes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    changed_by: Option<&'a crate::model::IndexChange>,
    /// Tables the plans read whose row-level security policies did not apply to the check's
    /// reader: `table`, `reader`, `why` (`superuser`, `bypassrls`, `owner` with `owner`,
    /// `not-settled`).
    #[serde(skip_serializing_if = "<[crate::verdict::readers::PastPolicies]>::is_empty")]
    reads_past_policies: &'a [crate::verdict::readers::PastPolicies],
}

/// The stable JSON document described in the README.
pub(super) fn json(report: &Report) -> String {
    let doc = JsonReport {
        server_version: &report.server_version,
        role_warnings: &report.role_warnings,
        lint: &report.lint,
        migration_rewritten: &report.migration_rewritten,
        migration_index_changes: &report.index_changes,
        migration_hold: report.migration_hold.as_ref(),
        checks: report
            .checks
            .iter()
            .map(|c| JsonCheck {
                read_path: &c.read_path,
                scope: &c.scope,
                required_index: Some(c.required_index.as_str()).filter(|i| !i.is_empty()),
                accepted_indexes: &c.accepted,
                verdict: c.verdict,
                used: &c.used,
                seq_scans: &c.seq_scans,
                warm_ms: c.warm_ms,
                p50_ms: c.warm_ms.map(|w| w.p50),
                p95_ms: c.warm_ms.map(|w| w.p95),
                p99_ms: c.warm_ms.map(|w| w.p99),
                runs: c.warm_ms.map(|w| w.runs),
                discarded: c.discarded,
                client_p50_ms: c.client_ms.map(|w| w.p50),
                client_p95_ms: c.client_ms.map(|w| w.p95),
                client_p99_ms: c.client_ms.map(|w| w.p99),
                planning_ms: c.planning_ms,
                shared_buffers: c.shared_buffers,
                usable: c.usable,
                settled_by: c.settled_by,
                unsettled: c.unsettled.as_deref(),
                custom_verdict: c.custom_verdict,
                unanalysed: &c.unanalysed,
                at_guesses: c.at_guesses,
                production: c.production.as_deref(),
                here: c.here,
                large_reads: &c.large_reads,
                plan_changed: c.plan_changed,
                plan_diff: &c.plan_diff,
                warning: c.is_warning(report.require),
                notes: &c.notes,
                before: report.before_of(c).map(|b| JsonBefore {
                    verdict: b.verdict,
                    used: &b.used,
                    message: &b.message,
                }),
                settings: c
                    .settings
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
                session_settings: c
                    .session
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
                budget: &c.budget,
                budget_used: c.budget_used.as_ref(),
                message: &c.message,
                at: c.at.as_ref(),
                changed_by: c.changed_by.as_ref(),
                reads_past_policies: &c.reads_past_policies,
            })
            .collect(),
        summary: report.summary(),
    };
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
        // Serialising these plain structs cannot fail; say so loudly if it ever does.
        format!("{{\"error\": \"could not serialise the report: {e}\"}}")
    });
    text.push('\n');
    text
}
