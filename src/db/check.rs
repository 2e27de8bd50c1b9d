//! Runs one check: one read path in one scope, in its own session and its own transaction.
//!
//! The transaction is `READ ONLY` and always rolled back, with `statement_timeout`,
//! `lock_timeout` and `idle_in_transaction_session_timeout` set locally, so a check cannot write,
//! cannot wait forever and leaves nothing behind. The scope's setup runs inside it, so a
//! `SET ROLE` ends with the rollback too.
//!
//! A read path without parameters is explained as it is. One with parameters is checked the way
//! a driver with prepared statements runs it: `PREPARE`, then the custom plan (what the first
//! five executions get) under `plan_cache_mode = force_custom_plan`, then the generic plan (what
//! every later execution may get) under `force_generic_plan`.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio_postgres::Client;
use tokio_postgres::error::{ErrorPosition, SqlState};

use super::{Target, cause};
use crate::errors::located;
use crate::explain::Explain;
use crate::project::{ReadPath, ScopeCheck};
use crate::stop::Stop;
use crate::verdict::{self, CheckResult, PlanVerdict, RequiredIndex, Rules, Spread, Verdict};

/// How each check runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Discarded runs before measuring, to warm the caches.
    pub warmup: u32,
    /// Measured runs.
    pub iterations: u32,
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    pub idle_in_transaction_timeout: Duration,
}

impl Default for Settings {
    /// The defaults of the command line: bounds a staging DBA would accept.
    fn default() -> Self {
        Settings {
            warmup: 2,
            iterations: 5,
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(2),
            idle_in_transaction_timeout: Duration::from_secs(60),
        }
    }
}

/// Bounds a session that runs outside any check's transaction (the catalog reads before the
/// checks): the same statement and lock timeouts, so another session's lock cannot hang a run.
pub async fn bound_session(
    client: &Client,
    settings: &Settings,
) -> Result<(), crate::errors::DatabaseFailure> {
    client
        .batch_execute(&format!(
            "SET statement_timeout = {}; SET lock_timeout = {}",
            settings.statement_timeout.as_millis().max(1),
            settings.lock_timeout.as_millis().max(1)
        ))
        .await
        .map_err(|e| {
            crate::errors::DatabaseFailure(format!(
                "could not set the session's timeouts: {}",
                cause(&e)
            ))
        })
}

/// A `json` column as text: EXPLAIN documents are parsed by [`crate::explain::parse_json`],
/// whose depth limit fits plans, where the driver's serde_json would stop at 128 levels.
struct RawJson(String);

impl<'a> tokio_postgres::types::FromSql<'a> for RawJson {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawJson(std::str::from_utf8(raw)?.to_owned()))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        *ty == tokio_postgres::types::Type::JSON
    }
}

const EXPLAIN: &str = "EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) ";
const STATEMENT: &str = "plancheck_read_path";

/// Where a check runs.
#[derive(Clone, Copy)]
pub enum Session<'a> {
    /// Its own session and its own `READ ONLY` transaction, rolled back: the normal case.
    Own(&'a Target),
    /// A savepoint of a transaction that is already open and will be rolled back whole: the
    /// migration's, for `check --migration`. Rolled back to after the check.
    Savepoint(&'a Client),
}

/// Runs the check and judges it. Never fails: every problem becomes an `error` verdict. A stop
/// (Ctrl-C) cancels the running statement, rolls the check back and makes it an `error`.
pub async fn run(
    session: Session<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    settings: &Settings,
    stop: &mut Stop,
) -> CheckResult {
    let mut result = CheckResult {
        read_path: read_path.name.clone(),
        scope: check.scope.clone(),
        required_index: check.index.clone(),
        verdict: Verdict::Error,
        used: Vec::new(),
        seq_scans: Vec::new(),
        message: String::new(),
        warm_ms: None,
        planning_ms: None,
        shared_buffers: None,
        connection_lost: false,
        usable: None,
        notes: Vec::new(),
        budget: check.budget.clone(),
        budget_used: None,
        plans: Vec::new(),
    };
    let owned;
    let (client, shared) = match session {
        Session::Own(target) => match target.connect().await {
            Ok(c) => {
                owned = c;
                (&owned, false)
            }
            Err(e) => {
                result.message = e.0;
                result.connection_lost = true;
                return result;
            }
        },
        Session::Savepoint(client) => (client, true),
    };
    let outcome = tokio::select! {
        outcome = run_in_transaction(client, shared, read_path, check, settings, &mut result) => outcome,
        _ = stop.wait() => {
            // Stop the statement now rather than when it next talks to us; the rollback below
            // (or the end of the session) undoes the rest.
            let _ = client.cancel_token().cancel_query(tokio_postgres::NoTls).await;
            Err(Failure {
                message: "interrupted: the running statement was cancelled and the check's \
                          transaction rolled back"
                    .into(),
                connection_lost: false,
            })
        }
    };
    if let Err(failure) = outcome {
        result.verdict = Verdict::Error;
        result.used.clear();
        result.seq_scans.clear();
        result.connection_lost = failure.connection_lost;
        result.message = failure.message;
    }
    // An own session ends here, and the prepared statement and every setting with it. Clean up
    // explicitly all the same, so a pooled or proxied session is left as it was found.
    if !client.is_closed() {
        let end = if shared {
            "ROLLBACK TO SAVEPOINT plancheck_check; RELEASE SAVEPOINT plancheck_check"
        } else {
            "ROLLBACK"
        };
        let _ = client.batch_execute(end).await;
        if !check.params.is_empty() {
            let _ = client
                .batch_execute(&format!("DEALLOCATE {STATEMENT}"))
                .await;
        }
    }
    result
}

struct Failure {
    message: String,
    connection_lost: bool,
}

async fn run_in_transaction(
    client: &Client,
    shared: bool,
    read_path: &ReadPath,
    check: &ScopeCheck,
    settings: &Settings,
    result: &mut CheckResult,
) -> Result<(), Failure> {
    let ms = |d: Duration| d.as_millis().max(1);
    let begin = if shared {
        "SAVEPOINT plancheck_check"
    } else {
        "BEGIN READ ONLY"
    };
    client
        .batch_execute(&format!(
            "{begin}; \
             SET LOCAL statement_timeout = {}; \
             SET LOCAL lock_timeout = {}; \
             SET LOCAL idle_in_transaction_session_timeout = {};",
            ms(settings.statement_timeout),
            ms(settings.lock_timeout),
            ms(settings.idle_in_transaction_timeout),
        ))
        .await
        .map_err(|e| failure(&e, "could not start the check's transaction", settings))?;
    // Refused before they run: in a shared transaction a COMMIT would make the migration
    // permanent, and in an own one it would let the read path write.
    if let Some((i, keyword)) = check
        .setup
        .iter()
        .enumerate()
        .find_map(|(i, st)| transaction_control(st).map(|k| (i, k)))
    {
        return Err(Failure {
            message: format!(
                "{}: scope `{}` setup statement {} is transaction control ({keyword}), which a \
                 check cannot allow; the read path was not run",
                read_path.expectation_path,
                check.scope,
                i + 1
            ),
            connection_lost: false,
        });
    }
    for (i, statement) in check.setup.iter().enumerate() {
        // One statement each, over the extended protocol, which refuses several in one string.
        client.execute(statement.as_str(), &[]).await.map_err(|e| {
            failure(
                &e,
                &format!(
                    "{}: scope `{}` setup statement {} failed",
                    read_path.expectation_path,
                    check.scope,
                    i + 1
                ),
                settings,
            )
        })?;
    }

    if !check.setup.is_empty() {
        ensure_still_in_transaction(client, shared, read_path, check, settings).await?;
    }

    let Some(index) = resolve_index(client, &check.index, settings).await? else {
        result.verdict = Verdict::MissingIndex;
        result.message = format!(
            "index {} does not exist in the database (dropped by a migration?)",
            check.index
        );
        return Ok(());
    };

    let mut reltuples = HashMap::new();
    let mut exec_ms = Vec::new();
    let mut plan_ms = Vec::new();
    let mut buffers = Vec::new();

    let (custom, custom_json, generic) = if check.params.is_empty() {
        let statement = format!("{EXPLAIN}{}", check.sql.text);
        let (plans, json) = explain_runs(client, &statement, settings, &|e| {
            sql_failure(e, read_path, check, EXPLAIN.len(), settings)
        })
        .await?;
        (plans, json, None)
    } else {
        let prepare = format!("PREPARE {STATEMENT} AS ");
        client
            .batch_execute(&format!("{prepare}{}", check.sql.text))
            .await
            .map_err(|e| sql_failure(&e, read_path, check, prepare.len(), settings))?;
        let execute = format!("{EXPLAIN}EXECUTE {STATEMENT}({})", check.params.join(", "));
        let on_error = |e: &tokio_postgres::Error| {
            let mut f = failure(
                e,
                &format!(
                    "{}: scope `{}`: the parameter values",
                    read_path.expectation_path, check.scope
                ),
                settings,
            );
            if e.as_db_error().is_some_and(|d| d.position().is_none()) {
                // An error while executing (not converting the values): point at the plan.
                f = sql_failure(e, read_path, check, 0, settings);
            }
            f
        };
        set_plan_cache_mode(client, "force_custom_plan", settings).await?;
        let (plans, json) = explain_runs(client, &execute, settings, &on_error).await?;
        set_plan_cache_mode(client, "force_generic_plan", settings).await?;
        let generic_settings = Settings {
            warmup: 0,
            iterations: 1,
            ..settings.clone()
        };
        let (generic, generic_json) =
            explain_runs(client, &execute, &generic_settings, &on_error).await?;
        let generic_plan = generic.into_iter().next().map(|p| (p, generic_json));
        (plans, json, generic_plan)
    };

    for plan in custom.iter().chain(generic.iter().map(|(p, _)| p)) {
        for scan in plan.scans() {
            if let Some(rel) = scan.relation {
                let key = format!("{}.{}", scan.schema.unwrap_or("public"), rel);
                if let std::collections::hash_map::Entry::Vacant(e) = reltuples.entry(key) {
                    let schema = scan.schema.unwrap_or("public");
                    let stats = relation_stats(client, schema, rel, settings).await?;
                    e.insert(stats.reltuples);
                    if let Some(note) = stats.note(schema, rel) {
                        result.notes.push(note);
                    }
                }
            }
        }
    }

    let rules = Rules {
        index: &index,
        allow_seq_scan: &read_path.allow_seq_scan,
        reltuples: &reltuples,
    };
    // Every measured run is judged; the worst one stands. A plan does not change between runs
    // of one statement in one transaction, but nothing is assumed.
    let mut judged: Option<(PlanVerdict, usize)> = None;
    for (i, plan) in custom.iter().enumerate() {
        let v = verdict::judge_plan(plan, &rules);
        if let Some(e) = plan.execution_ms {
            exec_ms.push(e);
        }
        if let Some(p) = plan.planning_ms {
            plan_ms.push(p);
        }
        buffers.push(plan.shared_buffers());
        if judged.as_ref().is_none_or(|(j, _)| j.verdict.is_pass()) {
            judged = Some((v, i));
        }
    }
    let Some((mut judged, worst)) = judged else {
        return Err(Failure {
            message: "no measured run (--iterations 0?)".into(),
            connection_lost: false,
        });
    };
    // Usability is probed for a plain index; a partitioned one is judged partition by
    // partition, and its message names the partition read another way.
    if judged.verdict == Verdict::NotChosen && index.partitions.is_empty() {
        let mode = (!check.params.is_empty()).then_some("force_custom_plan");
        let probes = probe(client, check, mode, &index, settings).await?;
        let non_immutable =
            non_immutable_functions(client, &custom[worst], &index, settings).await?;
        judged = verdict::judge_usability(judged, &custom[worst], &probes, &rules, &non_immutable);
        result.usable = Some(judged.verdict == Verdict::NotChosen);
    }
    result.plans.push(("custom".into(), custom_json));
    if let Some((generic, generic_json)) = generic {
        let mut g = verdict::judge_plan(&generic, &rules);
        if judged.verdict.is_pass()
            && g.verdict == Verdict::NotChosen
            && index.partitions.is_empty()
        {
            let probes = probe(client, check, Some("force_generic_plan"), &index, settings).await?;
            let non_immutable = non_immutable_functions(client, &generic, &index, settings).await?;
            g = verdict::judge_usability(g, &generic, &probes, &rules, &non_immutable);
            result.usable = Some(g.verdict == Verdict::NotChosen);
        }
        judged = verdict::judge_generic(judged, g, &index.name);
        result.plans.push(("generic".into(), generic_json));
    }
    result.verdict = judged.verdict;
    result.used = judged.used;
    result.seq_scans = judged.seq_scans;
    result.message = judged.message;
    result.warm_ms = Spread::of(&exec_ms);
    result.planning_ms = Spread::of(&plan_ms);
    result.shared_buffers = Spread::of(&buffers).map(|s| s.p50);
    Ok(())
}

/// The functions called in the conditions a plan applies to the required index's table that the
/// catalog says are not IMMUTABLE (STABLE or VOLATILE): a partial index's predicate can never be
/// proved from their values.
async fn non_immutable_functions(
    client: &Client,
    plan: &Explain,
    index: &RequiredIndex,
    settings: &Settings,
) -> Result<Vec<String>, Failure> {
    let text = verdict::conditions_on(plan, &index.table).join(" ");
    let mut names: Vec<String> = Vec::new();
    let b = text.as_bytes();
    for (i, _) in text.match_indices('(') {
        let mut start = i;
        while start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            start -= 1;
        }
        let name = &text[start..i];
        if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
            let name = name.to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if names.is_empty() {
        return Ok(names);
    }
    let rows = client
        .query(
            "SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc p \
             WHERE p.proname = ANY($1) AND p.provolatile <> 'i' ORDER BY 1",
            &[&names],
        )
        .await
        .map_err(|e| failure(&e, "could not read function volatility", settings))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The rungs of the probe: each re-plans the statement with sequential scans and some
/// competing scan types disabled, until a plan uses the required index.
const PROBE_RUNGS: [&[&str]; 4] = [
    &["enable_seqscan"],
    &["enable_seqscan", "enable_bitmapscan"],
    &["enable_seqscan", "enable_indexscan", "enable_indexonlyscan"],
    &[
        "enable_seqscan",
        "enable_bitmapscan",
        "enable_indexonlyscan",
    ],
];

const PROBE_STATEMENT: &str = "plancheck_probe";

/// Re-plans the statement (EXPLAIN without ANALYZE: nothing runs) rung by rung, in a savepoint
/// that takes the settings back after each. A prepared statement keeps its cached generic plan
/// whatever the settings, so with parameters each rung prepares afresh.
async fn probe(
    client: &Client,
    check: &ScopeCheck,
    plan_cache_mode: Option<&str>,
    index: &RequiredIndex,
    settings: &Settings,
) -> Result<Vec<verdict::Probe>, Failure> {
    let mut probes = Vec::new();
    for rung in PROBE_RUNGS {
        let disabled = rung
            .iter()
            .map(|g| format!("{g} = off"))
            .collect::<Vec<_>>()
            .join(", ");
        let sets: String = rung
            .iter()
            .map(|g| format!("SET LOCAL {g} = off; "))
            .collect();
        let fail =
            |e: &tokio_postgres::Error| failure(e, "re-planning to test the index", settings);
        client
            .batch_execute(&format!("SAVEPOINT plancheck_probe; {sets}"))
            .await
            .map_err(|e| fail(&e))?;
        let statement = match plan_cache_mode {
            None => format!("EXPLAIN (VERBOSE, FORMAT JSON) {}", check.sql.text),
            Some(mode) => {
                let prepared = client
                    .batch_execute(&format!(
                        "SET LOCAL plan_cache_mode = {mode}; PREPARE {PROBE_STATEMENT} AS {}",
                        check.sql.text
                    ))
                    .await;
                if let Err(e) = prepared {
                    let _ = client
                        .batch_execute("ROLLBACK TO SAVEPOINT plancheck_probe")
                        .await;
                    return Err(fail(&e));
                }
                format!(
                    "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE {PROBE_STATEMENT}({})",
                    check.params.join(", ")
                )
            }
        };
        let rows = client.query(statement.as_str(), &[]).await;
        let cleanup = match plan_cache_mode {
            Some(_) => format!(
                "ROLLBACK TO SAVEPOINT plancheck_probe; DEALLOCATE {PROBE_STATEMENT}; \
                 RELEASE SAVEPOINT plancheck_probe"
            ),
            None => "ROLLBACK TO SAVEPOINT plancheck_probe; RELEASE SAVEPOINT plancheck_probe"
                .to_string(),
        };
        client.batch_execute(&cleanup).await.map_err(|e| fail(&e))?;
        let rows = rows.map_err(|e| fail(&e))?;
        let (plan, _) = read_plan(&rows)?;
        let found = plan
            .scans()
            .iter()
            .any(|s| s.node.index_name.as_deref() == Some(index.name.as_str()));
        probes.push(verdict::Probe { disabled, plan });
        if found {
            break;
        }
    }
    Ok(probes)
}

async fn set_plan_cache_mode(
    client: &Client,
    mode: &str,
    settings: &Settings,
) -> Result<(), Failure> {
    client
        .batch_execute(&format!("SET LOCAL plan_cache_mode = {mode}"))
        .await
        .map_err(|e| {
            failure(
                &e,
                "could not set plan_cache_mode (PostgreSQL 12 or later is needed)",
                settings,
            )
        })
}

/// Warm-up runs (discarded), then measured runs, each parsed. Returns the measured plans and
/// the last one's raw document.
async fn explain_runs(
    client: &Client,
    statement: &str,
    settings: &Settings,
    on_error: &dyn Fn(&tokio_postgres::Error) -> Failure,
) -> Result<(Vec<Explain>, Value), Failure> {
    let mut plans = Vec::new();
    let mut last = Value::Null;
    for run in 0..settings.warmup + settings.iterations {
        // The extended protocol refuses several statements in one string, so a plan file cannot
        // smuggle a `COMMIT` past the read-only transaction.
        let rows = client
            .query(statement, &[])
            .await
            .map_err(|e| on_error(&e))?;
        if run < settings.warmup {
            continue;
        }
        let (plan, value) = read_plan(&rows)?;
        plans.push(plan);
        last = value;
    }
    Ok((plans, last))
}

/// The plan an `EXPLAIN (FORMAT JSON)` returned, and its document.
fn read_plan(rows: &[tokio_postgres::Row]) -> Result<(Explain, Value), Failure> {
    let unreadable = |message: String| Failure {
        message,
        connection_lost: false,
    };
    let RawJson(text) = rows
        .first()
        .and_then(|r| r.try_get::<_, RawJson>(0).ok())
        .ok_or_else(|| unreadable("EXPLAIN returned no JSON document".into()))?;
    let value = crate::explain::parse_json(&text).map_err(|e| unreadable(e.to_string()))?;
    let plan = Explain::from_json(&value).map_err(|e| unreadable(e.to_string()))?;
    Ok((plan, value))
}

/// The transaction-control keyword a statement starts with, if any.
fn transaction_control(statement: &str) -> Option<&'static str> {
    let words = crate::sql_text::words(statement, 3);
    let first = words.first().map(String::as_str).unwrap_or("");
    let second = words.get(1).map(String::as_str).unwrap_or("");
    match (first, second) {
        ("BEGIN", _) => Some("BEGIN"),
        ("START", _) => Some("START TRANSACTION"),
        ("COMMIT", _) => Some("COMMIT"),
        ("END", _) => Some("END"),
        ("ROLLBACK", _) => Some("ROLLBACK"),
        ("ABORT", _) => Some("ABORT"),
        ("SAVEPOINT", _) => Some("SAVEPOINT"),
        ("RELEASE", _) => Some("RELEASE"),
        ("PREPARE", "TRANSACTION") => Some("PREPARE TRANSACTION"),
        ("SET", "TRANSACTION") => Some("SET TRANSACTION"),
        ("SET", "SESSION") if words.get(2).map(String::as_str) == Some("CHARACTERISTICS") => {
            Some("SET SESSION CHARACTERISTICS")
        }
        _ => None,
    }
}

/// After the setup, the check's transaction must still be open and (in its own session) still
/// read-only: a function called by the setup could have changed either. A savepoint fails
/// outside a transaction block, so it proves the block is still open.
async fn ensure_still_in_transaction(
    client: &Client,
    shared: bool,
    read_path: &ReadPath,
    check: &ScopeCheck,
    settings: &Settings,
) -> Result<(), Failure> {
    let refuse = |why: &str| Failure {
        message: format!(
            "{}: scope `{}`: the setup statements {why}; a check must run in its read-only \
             transaction, so the read path was not run",
            read_path.expectation_path, check.scope
        ),
        connection_lost: false,
    };
    if client
        .batch_execute("SAVEPOINT plancheck_setup_done")
        .await
        .is_err()
    {
        if client.is_closed() {
            return Err(Failure {
                message: "the connection was lost after the setup statements".into(),
                connection_lost: true,
            });
        }
        return Err(refuse("ended the transaction"));
    }
    if shared {
        return Ok(());
    }
    let row = client
        .query_one(
            "SELECT pg_catalog.current_setting('transaction_read_only')",
            &[],
        )
        .await
        .map_err(|e| failure(&e, "could not read transaction_read_only", settings))?;
    if row.get::<_, String>(0) != "on" {
        return Err(refuse("made the transaction read-write"));
    }
    Ok(())
}

/// Looks the required index up as the session sees it (search_path, quoting).
async fn resolve_index(
    client: &Client,
    name: &str,
    settings: &Settings,
) -> Result<Option<RequiredIndex>, Failure> {
    let info = super::catalog::index_info(client, name)
        .await
        .map_err(|e| failure(&e, &format!("could not look up index {name}"), settings))?;
    let Some(info) = info else {
        return Ok(None);
    };
    let partitions = super::catalog::partitions(client, &info)
        .await
        .map_err(|e| {
            failure(
                &e,
                &format!("could not read the partitions of {name}"),
                settings,
            )
        })?;
    Ok(Some(RequiredIndex {
        schema: info.schema,
        name: info.name,
        table: info.table,
        predicate: info.predicate,
        partitions,
    }))
}

/// What the planner knew of a relation: its estimated rows, whether it has statistics at all,
/// and how many rows changed since they were gathered.
struct RelationStats {
    reltuples: f64,
    /// Rows in `pg_stats` for it: none means never analysed (or empty when it was).
    has_statistics: bool,
    /// Bytes on disk: an empty relation needs no statistics.
    bytes: i64,
    modified_since_analyze: Option<i64>,
}

impl RelationStats {
    /// A warning when the plan's choice means little on this relation: the planner guessed.
    fn note(&self, schema: &str, relation: &str) -> Option<String> {
        let name = if schema == "public" {
            relation.to_string()
        } else {
            format!("{schema}.{relation}")
        };
        if !self.has_statistics && self.bytes > 0 {
            return Some(format!(
                "{name} has never been analysed: the planner guessed its statistics, so its \
                 choice means little (run ANALYZE {name})"
            ));
        }
        let modified = self.modified_since_analyze? as f64;
        if modified > (self.reltuples.max(0.0) * 0.2).max(1000.0) {
            return Some(format!(
                "{name} changed a lot since it was last analysed ({} rows modified, about {} \
                 rows in all): the planner's choice may not hold (run ANALYZE {name})",
                crate::verdict::group(modified),
                crate::verdict::group(self.reltuples.max(0.0))
            ));
        }
        None
    }
}

async fn relation_stats(
    client: &Client,
    schema: &str,
    relation: &str,
    settings: &Settings,
) -> Result<RelationStats, Failure> {
    let row = client
        .query_opt(
            "SELECT c.reltuples::float8, \
                    EXISTS (SELECT 1 FROM pg_catalog.pg_stats s \
                            WHERE s.schemaname = n.nspname AND s.tablename = c.relname), \
                    pg_catalog.pg_relation_size(c.oid), \
                    (SELECT st.n_mod_since_analyze FROM pg_catalog.pg_stat_all_tables st \
                     WHERE st.relid = c.oid) \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = $2",
            &[&schema, &relation],
        )
        .await
        .map_err(|e| failure(&e, "could not read relation statistics", settings))?;
    Ok(match row {
        Some(r) => RelationStats {
            reltuples: r.get(0),
            has_statistics: r.get(1),
            bytes: r.get(2),
            modified_since_analyze: r.get(3),
        },
        None => RelationStats {
            reltuples: 0.0,
            has_statistics: true,
            bytes: 0,
            modified_since_analyze: None,
        },
    })
}

/// An error from the read path's own SQL, located in the plan file.
fn sql_failure(
    e: &tokio_postgres::Error,
    read_path: &ReadPath,
    check: &ScopeCheck,
    prefix_len: usize,
    settings: &Settings,
) -> Failure {
    let mut f = failure(e, &read_path.plan_path, settings);
    if f.connection_lost {
        return f;
    }
    if let Some(db) = e.as_db_error()
        && let Some(ErrorPosition::Original(pos)) = db.position()
    {
        // The position counts characters from 1 in the statement as sent.
        let sent_prefix_chars = prefix_len;
        let char_index = (*pos as usize).saturating_sub(1);
        if char_index >= sent_prefix_chars {
            let in_rendered = char_index - sent_prefix_chars;
            let byte = check
                .sql
                .text
                .char_indices()
                .nth(in_rendered)
                .map(|(b, _)| b)
                .unwrap_or(check.sql.text.len());
            let src = check.sql.source_offset(byte);
            f.message = located(
                &read_path.plan_path,
                check.sql.source(),
                src,
                &format!(
                    "{} (scope `{}`)",
                    describe_db_error(e, settings),
                    check.scope
                ),
            );
        }
    }
    f
}

fn failure(e: &tokio_postgres::Error, context: &str, settings: &Settings) -> Failure {
    let lost = e.is_closed() || e.as_db_error().is_none() && e.code().is_none();
    let message = if lost {
        format!("{context}: the connection was lost: {}", cause(e))
    } else {
        format!("{context}: {}", describe_db_error(e, settings))
    };
    Failure {
        message,
        connection_lost: lost,
    }
}

fn describe_db_error(e: &tokio_postgres::Error, settings: &Settings) -> String {
    match e.code() {
        Some(c) if *c == SqlState::QUERY_CANCELED => format!(
            "timed out: statement_timeout ({} ms) reached",
            settings.statement_timeout.as_millis()
        ),
        Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE => format!(
            "timed out waiting for a lock: lock_timeout ({} ms) reached",
            settings.lock_timeout.as_millis()
        ),
        Some(c) if *c == SqlState::READ_ONLY_SQL_TRANSACTION => format!(
            "{} (a read path must not write; nothing was written)",
            cause(e)
        ),
        _ => match e.as_db_error() {
            Some(db) => match db.detail() {
                Some(detail) => format!("{} ({detail})", db.message()),
                None => db.message().to_string(),
            },
            None => cause(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::transaction_control;

    #[test]
    fn transaction_control_is_recognised_behind_comments_and_case() {
        assert_eq!(transaction_control("commit"), Some("COMMIT"));
        assert_eq!(
            transaction_control("  -- why\n/* x */ Rollback;"),
            Some("ROLLBACK")
        );
        assert_eq!(
            transaction_control("set transaction read write"),
            Some("SET TRANSACTION")
        );
        assert_eq!(
            transaction_control("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"),
            Some("SET SESSION CHARACTERISTICS")
        );
        assert_eq!(transaction_control("SET ROLE member"), None);
        assert_eq!(transaction_control("SET LOCAL search_path = app"), None);
        assert_eq!(
            transaction_control("SELECT set_config('a.b', 'c', true)"),
            None
        );
    }
}
