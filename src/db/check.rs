//! Runs one check: one read path in one scope, in a session no other check uses meanwhile (from
//! the run's [`super::pool`], or the migration's) and its own transaction.
//!
//! The transaction is `READ ONLY` and always rolled back, with `statement_timeout`,
//! `lock_timeout` and `idle_in_transaction_session_timeout` set locally, so a check cannot write,
//! cannot wait forever and leaves nothing behind. The scope's declared planner `settings` are
//! applied, then its setup statements run inside it one at a time (so a `SET ROLE` ends with the
//! rollback too), each followed by the guard ([`super::guard`]) before the next one.
//!
//! SQL from files reaches the server only through the extended protocol's Parse, which refuses
//! a second statement: a read path without parameters is explained as it is; one with
//! parameters is prepared at the protocol level (Parse of the file's text alone) and checked the
//! way a driver with prepared statements runs it: the custom plan (what the first five
//! executions get) under `plan_cache_mode = force_custom_plan`, then the generic plan (what every
//! later execution may get) under `force_generic_plan`, both through `EXPLAIN … EXECUTE` of that
//! protocol-level statement.
//!
//! Every request also runs against plancheck's own clock ([`Sess::clocked`]): a statement that
//! outlives `--statement-timeout` plus a grace is cancelled and the session given up, so no
//! setting on the server can make a run hang.

use std::future::Future;
use std::time::Duration;

use tokio_postgres::error::{ErrorPosition, SqlState};
use tokio_postgres::{Client, Row, Statement};

use super::guard::{self, Span, Watched};

mod definitions;
mod failed;
mod policies;
mod rivals;
mod session;
use super::{Asked, Unanswered, counts, scratch};
use crate::error::DatabaseFailure;
use crate::measure::{
    Document, Failure, IndexFacts, IndexLookup, Measured, Measurement, Outcome, PlanKind, Probe,
    Production, ProductionOutcome, ProductionPlan, RelationFacts, Requirement, RunKind,
    ScratchOutcome, ScratchReplan,
};
use crate::plan::explain::Explain;
use crate::plan::replans;
use crate::project::{Place, ReadPath, ScopeCheck};
use crate::stop::Stop;
use failed::failure;
pub use failed::{Said, Why};
use session::{CountAnswers, CountAsk, Held, Sess};
pub use session::{Fail, Session, clocked};

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
    /// `temp_file_limit` in kB, set in every check's transaction; None where the role may not
    /// set it, or the server's own is lower ([`temp_file_limit`] decides).
    pub temp_file_limit: Option<u64>,
    /// The settings the guard compares between statements (read from the server once a run).
    pub watched: Watched,
    /// `--replan-without-rivals`: when re-planning cannot settle whether the required index is
    /// usable, re-plan once more with the indexes that beat it dropped, in a read-write
    /// transaction that is rolled back.
    pub replan_without_rivals: bool,
    /// `--session-per-check`: a new session for every check, never one a check before used.
    pub session_per_check: bool,
    /// Whether what the measured server's plans leave open is re-planned on a scratch copy.
    pub scratch: scratch::Mode,
    /// `--stats FILE`: every check is also planned on the scratch copy at production's
    /// statistics.
    pub stats: Option<std::sync::Arc<crate::stats::File>>,
    /// Whether and how each run's reads are counted ([`super::counts`]).
    pub counting: super::counts::Counting,
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
            temp_file_limit: None,
            watched: Watched::default(),
            replan_without_rivals: false,
            session_per_check: false,
            scratch: scratch::Mode::default(),
            stats: None,
            counting: super::counts::Counting::default(),
        }
    }
}

impl Settings {
    /// How long plancheck waits for any one answer before it cancels the statement itself: the
    /// statement timeout plus a grace (a tenth of it, between 1 and 10 seconds) for the server's
    /// own timeout to fire first and its error to arrive.
    pub fn client_limit(&self) -> Duration {
        let grace =
            (self.statement_timeout / 10).clamp(Duration::from_secs(1), Duration::from_secs(10));
        self.statement_timeout + grace
    }
}

/// How long plancheck waits for the server to act on a cancel request before it gives the
/// session up.
pub(crate) const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// Bounds a session that runs outside any check's transaction (the catalog reads before the
/// checks): the same statement and lock timeouts, so another session's lock cannot hang a run.
pub async fn bound_session(client: &Client, settings: &Settings) -> Result<(), DatabaseFailure> {
    client
        .batch_execute(&format!(
            "SET statement_timeout = {}; SET lock_timeout = {}",
            settings.statement_timeout.as_millis().max(1),
            settings.lock_timeout.as_millis().max(1)
        ))
        .await
        .map_err(|e| Unanswered::of(Asked::SessionTimeouts, &e).into())
}

/// The `temp_file_limit` each check sets, from the one asked for (`wanted`, kB): None where the
/// server's own is as low already; and whether temporary files are unbounded: the role may not
/// set it (a superuser may; from PostgreSQL 15, a role granted `SET` on it) and the server has
/// none, so a read path may fill the server's disk with temporary files until its statement
/// ends.
pub async fn temp_file_limit(
    client: &Client,
    wanted: Option<u64>,
) -> Result<(Option<u64>, bool), DatabaseFailure> {
    read_temp_file_limit(client, wanted)
        .await
        .map_err(|e| Unanswered::of(Asked::TempFileLimit, &e).into())
}

async fn read_temp_file_limit(
    client: &Client,
    wanted: Option<u64>,
) -> Result<(Option<u64>, bool), tokio_postgres::Error> {
    let Some(wanted) = wanted else {
        return Ok((None, false));
    };
    let version: i32 = client
        .query_one(
            "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4",
            &[],
        )
        .await?
        .get(0);
    let may = if version >= 150000 {
        "pg_catalog.has_parameter_privilege(current_user, 'temp_file_limit', 'SET')"
    } else {
        "(SELECT r.rolsuper FROM pg_catalog.pg_roles r \
          WHERE r.rolname OPERATOR(pg_catalog.=) current_user)"
    };
    let row = client
        .query_one(
            &format!(
                "SELECT s.setting::pg_catalog.int8, {may} FROM pg_catalog.pg_settings s \
                 WHERE s.name OPERATOR(pg_catalog.=) 'temp_file_limit'"
            ),
            &[],
        )
        .await?;
    let (server, may): (i64, bool) = (row.get(0), row.get(1));
    let lower_already = server >= 0 && u64::try_from(server).is_ok_and(|s| s <= wanted);
    Ok(match (lower_already, may) {
        (true, _) => (None, false),
        (false, true) => (Some(wanted), false),
        (false, false) => (None, server < 0),
    })
}

/// Waits for `request`, a read plancheck makes before or between checks, no longer than the
/// client's clock allows ([`Settings::client_limit`]): a server that stops answering cannot
/// hang the run there either.
pub async fn within<T>(
    limit: Duration,
    what: &str,
    request: impl Future<Output = crate::error::Result<T>>,
) -> crate::error::Result<T> {
    match tokio::time::timeout(limit, request).await {
        Ok(answer) => answer,
        Err(_) => Err(DatabaseFailure(crate::report::failure::not_within(what, limit)).into()),
    }
}

/// How a bounded transaction begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// `BEGIN READ ONLY`: a check.
    ReadOnly,
    /// `BEGIN READ WRITE`: `--replan-without-rivals`, always rolled back.
    ReadWrite,
    /// `BEGIN`: a migration, made read-only once applied.
    Migration,
    /// `SAVEPOINT plancheck_check`: a check inside the migration's transaction.
    Savepoint,
}

/// The one way plancheck opens a transaction: the statement that begins it, then its bounds
/// (`statement_timeout`, `lock_timeout`, `idle_in_transaction_session_timeout`) set locally.
pub fn begin_bounded(begin: Begin, settings: &Settings) -> String {
    let start = match begin {
        Begin::ReadOnly => "BEGIN READ ONLY",
        Begin::ReadWrite => "BEGIN READ WRITE",
        Begin::Migration => "BEGIN",
        Begin::Savepoint => "SAVEPOINT plancheck_check",
    };
    format!("{start}; {}", local_bounds(settings))
}

/// The `SET LOCAL` statements of plancheck's bounds, for the start of a transaction (and again
/// after a migration).
pub fn local_bounds(settings: &Settings) -> String {
    let ms = |d: Duration| d.as_millis().max(1);
    let temp = settings
        .temp_file_limit
        .map(|kb| format!("; SET LOCAL temp_file_limit = {kb}"))
        .unwrap_or_default();
    format!(
        "SET LOCAL statement_timeout = {}; SET LOCAL lock_timeout = {}; \
         SET LOCAL idle_in_transaction_session_timeout = {}{temp}",
        ms(settings.statement_timeout),
        ms(settings.lock_timeout),
        ms(settings.idle_in_transaction_timeout),
    )
}

/// A `json` column as text: EXPLAIN documents are read by
/// [`crate::plan::explain::Explain::parse`], whose depth limit fits plans, where the driver's
/// serde_json would stop at 128 levels. A document over [`MAX_PLAN_DOCUMENT`] is not copied:
/// only its size is kept (`Err`).
pub(crate) struct RawJson(pub(crate) Result<String, usize>);

/// The largest EXPLAIN document plancheck reads (8 MiB), checked on the raw text before it is
/// copied or parsed: a real plan is kilobytes, while a constant folded into the plan (VERBOSE
/// prints it in each node's Output and Filter) can make one of any size, and its parsed tree,
/// the saved measurement and the report each cost it again.
pub const MAX_PLAN_DOCUMENT: usize = 8 << 20;

impl<'a> tokio_postgres::types::FromSql<'a> for RawJson {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        if raw.len() > MAX_PLAN_DOCUMENT {
            return Ok(RawJson(Err(raw.len())));
        }
        Ok(RawJson(Ok(std::str::from_utf8(raw)?.to_owned())))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        *ty == tokio_postgres::types::Type::JSON
    }
}

const EXPLAIN: &str = "EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) ";

/// An index name as written, with the setup and declared settings of the check reading it.
type IndexKey = (String, Vec<String>, Vec<(String, String)>);

/// Catalog facts read once per run, not once per check: relation statistics by relation, the
/// required indexes by name as written and the setup and settings that resolved them (they
/// decide the search path a bare name is read on). A run that applies a migration reads them
/// again after it, with a catalog of its own. Shared by the checks running side by side (one
/// thread: the borrows never cross an await).
#[derive(Default)]
pub struct Catalog {
    relations: std::cell::RefCell<std::collections::HashMap<(String, String), RelationFacts>>,
    indexes: std::cell::RefCell<std::collections::HashMap<IndexKey, IndexLookup>>,
    /// By read path text: whether every function it calls is one of PostgreSQL's own that
    /// runs no SQL of its own.
    builtins: std::cell::RefCell<std::collections::HashMap<String, bool>>,
    /// The definitions the scratch copy needs, read once per object.
    pub definitions: std::cell::RefCell<scratch::Definitions>,
    /// Row-level security as each scope's reader meets it, by relation.
    policies: policies::Known,
    /// The facts of the tables PostgreSQL counted reads of, by OID.
    tables: std::cell::RefCell<std::collections::HashMap<u32, RelationFacts>>,
}

/// PostgreSQL's own functions that run SQL given as text, or change a setting: through them a
/// read path can leave state in its session that no reader of its text can name (a setting
/// created by `query_to_xml('SELECT set_config(…)', …)` stays as a placeholder after the
/// rollback, and reads '' instead of NULL in the next check).
const RUNS_SQL: [&str; 14] = [
    "set_config",
    "query_to_xml",
    "query_to_xmlschema",
    "query_to_xml_and_xmlschema",
    "cursor_to_xml",
    "cursor_to_xmlschema",
    "table_to_xml",
    "table_to_xmlschema",
    "table_to_xml_and_xmlschema",
    "schema_to_xml",
    "schema_to_xmlschema",
    "schema_to_xml_and_xmlschema",
    "database_to_xml",
    "ts_stat",
];

impl Catalog {
    /// The facts of every relation in `wanted`, reading only those not read yet, in one query.
    async fn relations(
        &self,
        sess: Sess<'_>,
        wanted: &[(String, String)],
    ) -> Result<Vec<RelationFacts>, Failure> {
        let missing: Vec<(String, String)> = {
            let known = self.relations.borrow();
            wanted
                .iter()
                .filter(|w| !known.contains_key(*w))
                .cloned()
                .collect()
        };
        if !missing.is_empty() {
            let read = relation_stats(sess, &missing).await?;
            let mut known = self.relations.borrow_mut();
            for f in read {
                known.insert((f.schema.clone(), f.name.clone()), f);
            }
        }
        let known = self.relations.borrow();
        Ok(wanted
            .iter()
            .filter_map(|w| known.get(w).cloned())
            .collect())
    }

    /// The facts of every table of `oids`, reading only those not read yet, in one query.
    async fn tables(
        &self,
        sess: Sess<'_>,
        oids: &[u32],
    ) -> Result<std::collections::HashMap<u32, RelationFacts>, Failure> {
        let missing: Vec<i64> = {
            let known = self.tables.borrow();
            oids.iter()
                .filter(|o| !known.contains_key(*o))
                .map(|o| i64::from(*o))
                .collect()
        };
        if !missing.is_empty() {
            // Parsed, bound and executed in one round trip.
            let params: [(&(dyn tokio_postgres::types::ToSql + Sync), _); 1] =
                [(&missing, tokio_postgres::types::Type::INT8_ARRAY)];
            let typed = sess.client.query_typed(super::counts::TABLES, &params);
            let rows = clocked(sess.client, sess.settings, typed)
                .await
                .map_err(|f| f.or(|e| failure(e, Asked::ReadCounts, sess.settings)))?;
            self.tables
                .borrow_mut()
                .extend(super::counts::tables_of(&rows));
        }
        let known = self.tables.borrow();
        Ok(oids
            .iter()
            .filter_map(|o| Some((*o, known.get(o)?.clone())))
            .collect())
    }

    /// Whether the read path `sql` was found (by [`Catalog::read_builtins`]) to call only
    /// PostgreSQL's own functions that run no SQL; None when that was not read.
    pub fn calls_only_builtins(&self, sql: &str) -> Option<bool> {
        self.builtins.borrow().get(sql).copied()
    }

    /// Reads [`only_builtins`] of the read path `sql`, once per text.
    async fn read_builtins(&self, sess: Sess<'_>, sql: &str) -> Result<(), Failure> {
        if self.builtins.borrow().contains_key(sql) {
            return Ok(());
        }
        let only = clocked(sess.client, sess.settings, only_builtins(sess.client, sql))
            .await
            .map_err(|f| f.or(|e| failure(e, Asked::CalledFunctions, sess.settings)))?;
        self.builtins.borrow_mut().insert(sql.to_string(), only);
        Ok(())
    }

    /// The index `name` as the check's setup resolves it, read once per name and setup.
    async fn index(
        &self,
        sess: Sess<'_>,
        check: &ScopeCheck,
        name: &str,
    ) -> Result<IndexLookup, Failure> {
        // The setup and the declared settings decide the search path a bare name is read on.
        let key = (
            name.to_string(),
            check.setup.clone(),
            check.settings.clone(),
        );
        if let Some(found) = self.indexes.borrow().get(&key) {
            return Ok(found.clone());
        }
        let found = lookup_index(sess, name).await?;
        self.indexes.borrow_mut().insert(key, found.clone());
        Ok(found)
    }
}

/// Whether every function the read path `sql` calls is in `pg_catalog` and not one that runs
/// SQL ([`RUNS_SQL`]): asked of the server, by name, for every word the text calls (a word
/// followed by `(`; a name that is no function, such as `IN`, counts for nothing). Only then
/// may its session go on to another check (or, in the ladder, its session serve the next
/// request without being replaced): an application's function, or one of those, can leave a
/// setting behind that plancheck cannot see.
pub async fn only_builtins(client: &Client, sql: &str) -> Result<bool, tokio_postgres::Error> {
    let names = crate::sql::called_names(sql, crate::sql::Dialect::default());
    let rows = client
        .query(
            "SELECT NOT EXISTS (SELECT FROM pg_catalog.unnest($1::pg_catalog.text[]) AS n(name) \
               WHERE n.name OPERATOR(pg_catalog.=) ANY ($2::pg_catalog.text[]) \
                  OR EXISTS (SELECT FROM pg_catalog.pg_proc p \
                             WHERE p.proname OPERATOR(pg_catalog.=) n.name \
                               AND p.pronamespace OPERATOR(pg_catalog.<>) \
                                   'pg_catalog'::pg_catalog.regnamespace))",
            &[&names, &RUNS_SQL.to_vec()],
        )
        .await?;
    Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
}

/// What the expectation requires of `check`, carried in its measurement.
fn requirement(read_path: &ReadPath, check: &ScopeCheck) -> Requirement {
    Requirement {
        index: check.index.clone(),
        also: check.also.clone(),
        baseline: check.baseline.clone(),
        allow_seq_scan: read_path.allow_seq_scan.clone(),
        budget: check.budget.clone(),
    }
}

/// A check that was not run, with `why`; counted as a lost connection (exit 3).
pub fn not_run(read_path: &ReadPath, check: &ScopeCheck, why: &str) -> Measurement {
    Measurement::failed(
        &read_path.name,
        &check.scope,
        requirement(read_path, check),
        check.settings.clone(),
        Failure {
            message: why.to_string(),
            connection_lost: true,
            at: None,
            gave_up: false,
        },
    )
}

/// A check that was not run, for `why` (a lost connection counts as one, exit 3; the rest are
/// `error`s).
pub fn not_run_for(read_path: &ReadPath, check: &ScopeCheck, why: Why) -> Measurement {
    Measurement::failed(
        &read_path.name,
        &check.scope,
        requirement(read_path, check),
        check.settings.clone(),
        why.into(),
    )
}

/// A check as the database left it: its measurement, and what its scratch re-plans need when
/// the measured server's plans left a question open and the run re-plans on a scratch copy.
pub struct Checked {
    pub measurement: Measurement,
    pub scratch: Option<scratch::Request>,
}

/// Measures the check ([`measure_check`]), and how long it took (wall time, the session's
/// taking and the rollback included).
pub async fn run(
    session: Session<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    settings: &Settings,
    catalog: &Catalog,
    stop: &mut Stop,
) -> Checked {
    let started = std::time::Instant::now();
    let mut checked = measure_check(session, read_path, check, settings, catalog, stop).await;
    checked.measurement.elapsed_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
    checked
}

/// Measures the check. Never fails: every problem becomes a [`Failure`] in the measurement. A
/// stop (Ctrl-C) cancels the running statement and rolls the check back.
// Long because it is a check's life in order: its session, the measurement or its interruption,
// the rollback, the re-plan without rivals, the session handed back.
async fn measure_check(
    session: Session<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    settings: &Settings,
    catalog: &Catalog,
    stop: &mut Stop,
) -> Checked {
    // The custom settings the check sets, when they are all it can leave in its session.
    let sets = super::pool::custom_settings(check);
    let held = match session {
        Session::Own(pool) => match pool.take(settings, sets.as_ref()).await {
            Ok(taken) => Held::Pooled(Box::new(taken)),
            Err(e) => {
                return Checked {
                    measurement: not_run(read_path, check, &e.0),
                    scratch: None,
                };
            }
        },
        Session::Savepoint(client) => Held::Shared(client, tokio::sync::OnceCell::new()),
    };
    let (client, guard, shared) = match &held {
        Held::Pooled(own) => (&own.client, &own.guard, false),
        Held::Shared(client, guard) => (*client, guard, true),
    };
    let tally = std::cell::RefCell::new(super::counts::Tally::new(settings.counting));
    let sess = Sess {
        client,
        settings,
        guard,
        tally: &tally,
    };
    let outcome = tokio::select! {
        outcome = measure(sess, shared, read_path, check, catalog) => outcome,
        _ = stop.wait() => {
            // Stop the statement now rather than when it next talks to us; the rollback below
            // (or the end of the session) undoes the rest.
            crate::db::wire::cancel(&client.cancel_token()).await;
            Err(Why::Interrupted.into())
        }
    };
    let mut request = None;
    let mut outcome = match outcome {
        Ok((measured, asked)) => {
            request = asked;
            Outcome::Measured(Box::new(measured))
        }
        Err(failure) => Outcome::Failed(failure),
    };
    // The reading of the counts, prepared for this check, is closed before the session is
    // rolled back and handed on.
    drop(std::mem::take(&mut *tally.borrow_mut()));
    let lost = matches!(&outcome, Outcome::Failed(f) if f.connection_lost);
    // Whether the session may go on to the next check, as far as the check shows (the
    // session's fingerprint decides the rest), and whether that is settled before the rollback.
    let may_go_on = stop.requested().is_none()
        && sets.is_some()
        && catalog.calls_only_builtins(&check.sql.text) == Some(true);
    let hand_on =
        may_go_on && matches!(outcome, Outcome::Measured(_)) && !settings.replan_without_rivals;
    // The rollback undoes the check; a session given up is sent nothing more.
    let tried = !client.is_closed() && !lost;
    let (rolled_back, after) = if tried {
        roll_back(sess, &held, hand_on).await
    } else {
        (false, None)
    };
    if tried && !rolled_back && shared {
        // The migration's session can no longer be trusted for the checks after this one.
        outcome = Outcome::Failed(Why::MigrationSessionLost.into());
    }
    if settings.replan_without_rivals
        && !shared
        && !client.is_closed()
        && let Outcome::Measured(measured) = &mut outcome
        && let Err(f) = rivals::settle(sess, read_path, check, measured).await
    {
        outcome = Outcome::Failed(f);
    }
    if let (Session::Own(pool), Held::Pooled(pooled), Outcome::Failed(failure)) =
        (session, &held, &mut outcome)
        && failure.gave_up
        && let Some(pid) = pooled.pid
        && pool.outlived(pid, settings).await
    {
        let outlived = crate::report::failure::outlived(pid);
        crate::term::say!(
            "{}",
            crate::report::stderr::check_warning(&read_path.name, &check.scope, &outlived)
        );
        failure.message.push_str(&format!("; {outlived}"));
    }
    if let (Session::Own(pool), Held::Pooled(pooled)) = (session, held) {
        let clean = rolled_back && may_go_on && matches!(outcome, Outcome::Measured(_));
        pool.give_back(*pooled, sets.filter(|_| clean), after, settings)
            .await;
    }
    let measured = matches!(outcome, Outcome::Measured(_));
    Checked {
        measurement: Measurement {
            format: crate::measure::FORMAT.into(),
            version: crate::measure::VERSION,
            read_path: read_path.name.clone(),
            scope: check.scope.clone(),
            requires: requirement(read_path, check),
            settings: check.settings.clone(),
            parameters: check.params.len(),
            outcome,
            elapsed_ms: None,
        },
        scratch: request.filter(|_| measured),
    }
}

/// What the rollback of a pooled session that may go on to the next check read in its round
/// trip.
pub struct AfterRollback {
    /// The session's fingerprint (None when it could not be read).
    pub fingerprint: Option<Vec<String>>,
    /// The guard's query, parsed again after `DISCARD ALL` deallocated it (None when that
    /// failed: the next check parses it on first use).
    pub guard: Option<Statement>,
}

/// Rolls the check back (to its savepoint in the migration's session): whether that worked, and,
/// for a pooled session that may go on to the next check (`hand_on`), what was read in the
/// rollback's round trip.
async fn roll_back(
    sess: Sess<'_>,
    held: &Held<'_>,
    hand_on: bool,
) -> (bool, Option<AfterRollback>) {
    let end = match held {
        Held::Shared(..) => {
            "ROLLBACK TO SAVEPOINT plancheck_check; RELEASE SAVEPOINT plancheck_check"
        }
        Held::Pooled(_) => "ROLLBACK",
    };
    let ended = sess.exec(end);
    match held {
        Held::Pooled(own) if hand_on => {
            // Reset as a connection pooler resets a session between clients (PgBouncer's
            // `server_reset_query`): settings, prepared statements, cursors, temporary tables,
            // advisory locks, notifications, cached plans. Sent with the rollback, the
            // fingerprint and the guard's query parsed again for the next check (after the
            // reset, which deallocated it): one round trip.
            let watched = &sess.settings.watched;
            let (ended, discarded, fingerprint, guard) = futures_util::future::join4(
                ended,
                sess.exec("DISCARD ALL"),
                own.fingerprint(sess.settings),
                clocked(
                    sess.client,
                    sess.settings,
                    guard::prepare(sess.client, watched),
                ),
            )
            .await;
            let after = AfterRollback {
                fingerprint,
                guard: guard.ok(),
            };
            (ended.is_ok() && discarded.is_ok(), Some(after))
        }
        _ => (ended.await.is_ok(), None),
    }
}

/// The whole check in order: begin, settings, setup, the accepted indexes, the runs, the
/// re-plans the plan analysis asks for ([`replans`]), what the scratch copy is to settle,
/// catalog facts.
/// Nothing here decides a verdict.
// Long because it is the check in order, each step a call; the re-plans' plan kind and the plans
// they are made from are read here once and handed to the steps after.
async fn measure(
    sess: Sess<'_>,
    shared: bool,
    read_path: &ReadPath,
    check: &ScopeCheck,
    catalog: &Catalog,
) -> Result<(Measured, Option<scratch::Request>), Failure> {
    let (before, session, parsed) = begin_check(sess, shared, read_path, check).await?;
    let index = match &check.index {
        Some(name) => catalog.index(sess, check, name).await?,
        None => IndexLookup::NotRequired,
    };
    let mut alternatives = Vec::new();
    for name in &check.also {
        alternatives.push(catalog.index(sess, check, name).await?);
    }
    let (custom, generic, client_ms) =
        explain_read_path(sess, read_path, check, &before, parsed).await?;
    if !shared && !sess.settings.session_per_check {
        catalog.read_builtins(sess, &check.sql.text).await?;
    }
    if custom.is_empty() {
        return Err(Why::NoMeasuredRun.into());
    }

    // Re-plans, when the plans read none of the accepted indexes (for a partitioned one, any of
    // its leaves): which ones is the plan analysis ([`replans`]), for every accepted index.
    let lookups: Vec<&IndexLookup> = std::iter::once(&index).chain(alternatives.iter()).collect();
    let accepted = replans::accepted(&lookups);
    let custom_plans: Vec<&Explain> = custom.iter().map(Document::plan).collect();
    let generic_plan = generic.as_ref().map(Document::plan);
    let open = replans::open_plans(&custom_plans, generic_plan, &accepted);
    let mut probes = Vec::new();
    let mut probed: Option<&Explain> = None;
    for kind in &open {
        let (mode, first) = match kind {
            PlanKind::Custom => (
                (!check.params.is_empty()).then_some("force_custom_plan"),
                custom_plans.first().copied(),
            ),
            PlanKind::Generic => (Some("force_generic_plan"), generic_plan),
        };
        probes.extend(probe(sess, check, mode, *kind, &accepted).await?);
        probed = probed.or(first);
    }
    let non_immutable = match (&index, probed) {
        (IndexLookup::Found(facts), Some(plan)) => {
            non_immutable_functions(sess, plan, &facts.info.table).await?
        }
        _ => Vec::new(),
    };
    let probe_plans: Vec<&Explain> = probes.iter().map(|p| p.document.plan()).collect();
    let mut plans: Vec<&Explain> = custom_plans.clone();
    plans.extend(generic_plan);
    plans.extend(probe_plans.iter().copied());

    // What the measured server's plans left open goes to the scratch copy.
    let mut needed = Vec::new();
    for kind in &open {
        let mut shown: Vec<&Explain> = probes
            .iter()
            .filter(|p| p.plan == *kind)
            .map(|p| p.document.plan())
            .collect();
        match kind {
            PlanKind::Custom => shown.extend(custom_plans.iter().copied()),
            PlanKind::Generic => shown.extend(generic_plan),
        }
        needed.extend(replans::scratch_needed(&accepted, *kind, &shown));
    }
    let open = Open {
        check,
        lookups: &lookups,
        plans: &plans,
        session: &session,
    };
    let production: Vec<PlanKind> = match sess.settings.stats {
        Some(_) => std::iter::once(PlanKind::Custom)
            .chain(generic.is_some().then_some(PlanKind::Generic))
            .collect(),
        None => Vec::new(),
    };
    let (scratch, request, production) =
        ask_scratch(sess, catalog, &open, &needed, production).await?;

    // What the planner knew of every relation the plans read, and of the index's table; and of
    // every table PostgreSQL counted a read of, by OID, which names them: in one round trip.
    let wanted = relations_of(&index, &plans);
    // Whether their policies apply to the reader, asked in the same round trip.
    let counted_tables = sess.tally.borrow().tables();
    let (relations, tables, row_security) = futures_util::future::join3(
        catalog.relations(sess, &wanted),
        catalog.tables(sess, &counted_tables),
        policies::read(sess, check, &wanted, &catalog.policies),
    )
    .await;
    let mut relations = relations?;
    let tables = tables?;
    let row_security = row_security?;
    for facts in tables.values() {
        if !relations
            .iter()
            .any(|r| r.schema == facts.schema && r.name == facts.name)
        {
            relations.push(facts.clone());
        }
    }
    let names = tables
        .into_iter()
        .map(|(oid, f)| (oid, (f.schema, f.name)))
        .collect();
    let counted = std::mem::take(&mut *sess.tally.borrow_mut()).finish(&names);

    Ok((
        Measured {
            index,
            alternatives,
            custom,
            generic,
            probes,
            scratch,
            production,
            relations,
            non_immutable,
            replan_skipped: None,
            session,
            row_security,
            warmup: Some(sess.settings.warmup),
            client_ms,
            counted,
        },
        request,
    ))
}

/// Begins the check's transaction (read-only, or a savepoint of the migration's), applies the
/// scope's declared settings and runs its setup. Returns the guard's snapshot to hold the runs
/// to, what the setup changed (name and value), and, for a read path with parameters in a scope
/// with neither settings nor setup, the answer to its Parse, sent in the `BEGIN`'s round trip
/// (after the guard's first snapshot where the guard is parsed already; with no settings or setup
/// to apply first, the Parse sees the session it would see later).
// Long because the `BEGIN`'s round trip carries what a scope without settings or setup allows
// (the guard's first snapshot, the read path's Parse), and each answer is read in the order sent.
async fn begin_check(
    sess: Sess<'_>,
    shared: bool,
    read_path: &ReadPath,
    check: &ScopeCheck,
) -> Result<(guard::Snapshot, Vec<(String, String)>, Option<ParseAnswer>), Failure> {
    let settings = sess.settings;
    let begin = if shared {
        Begin::Savepoint
    } else {
        Begin::ReadOnly
    };
    let begin = begin_bounded(begin, settings);
    // The reading of the counts is parsed in the same round trip, after the BEGIN (a Parse runs
    // nothing).
    let begun = async {
        let counting = settings.counting;
        let count = async {
            match counting.reads() {
                true => Some(sess.prepare(counting.query()).await),
                false => None,
            }
        };
        futures_util::future::join(sess.exec(&begin), count).await
    };
    let ((begun, count), first, parsed) = if check.settings.is_empty() && check.setup.is_empty() {
        // The guard's first snapshot in the same round trip, right after the BEGIN, and the
        // read path's Parse after it where it has parameters.
        let parse = async {
            match check.params.is_empty() {
                true => None,
                false => Some(parse_read_path(sess, check).await),
            }
        };
        let (begun, first, parsed) =
            futures_util::future::join3(begun, sess.snapshot(), parse).await;
        (begun, Some(first), parsed)
    } else if check.settings.is_empty() {
        // The guard's first snapshot in the same round trip, right after the BEGIN.
        let (begun, first) = futures_util::future::join(begun, sess.snapshot()).await;
        (begun, Some(first), None)
    } else {
        (begun.await, None, None)
    };
    begun.map_err(|f| f.or(|e| failure(e, Asked::BeginCheck, settings)))?;
    if let Some(count) = count {
        sess.tally.borrow_mut().statement =
            Some(count.map_err(|f| f.or(|e| failure(e, Asked::ReadCounts, settings)))?);
    }
    for (name, value) in &check.settings {
        sess.query("SELECT pg_catalog.set_config($1, $2, true)", &[name, value])
            .await
            .map_err(|f| {
                f.or(|e| {
                    failure(
                        e,
                        Asked::ScopeSetting {
                            file: read_path.expectation_path.clone(),
                            scope: check.scope.clone(),
                            name: name.clone(),
                            value: value.clone(),
                        },
                        settings,
                    )
                })
            })?;
    }
    // The first query takes the transaction's snapshot, after which PostgreSQL itself refuses to
    // make the transaction read-write.
    let mut before = match first {
        Some(first) => first?,
        None => sess.snapshot().await?,
    };
    run_setup(sess, read_path, check, &before).await?;
    let mut session = Vec::new();
    if !check.setup.is_empty() {
        // From here on the setup's search path and role are part of what must hold.
        let after = sess.snapshot().await?;
        session = settings.watched.session_changes(&before, &after);
        before = after;
    }
    Ok((before, session, parsed))
}

/// What a check that left a question open shows the scratch copy.
struct Open<'a> {
    check: &'a ScopeCheck,
    lookups: &'a [&'a IndexLookup],
    /// Every plan of the check: the runs', the generic, the re-plans.
    plans: &'a [&'a Explain],
    /// What the scope's setup changed.
    session: &'a [(String, String)],
}

/// For each accepted index and plan kind the measured server's plans left open (`needed`,
/// from the plan analysis): the definitions the scratch copy needs, read from the catalog,
/// or why no scratch re-plan is made (`--no-scratch`, no local server, a read that failed).
/// What [`ask_scratch`] gives: the re-plans not made (and why), the request for the scratch
/// copy, and the plans at production's statistics already known not to be made.
type Scratched = (
    Vec<ScratchReplan>,
    Option<scratch::Request>,
    Option<Production>,
);

async fn ask_scratch(
    sess: Sess<'_>,
    catalog: &Catalog,
    open: &Open<'_>,
    needed: &[(String, PlanKind)],
    production: Vec<PlanKind>,
) -> Result<Scratched, Failure> {
    // With --stats, every check asks for its plans at production's statistics; each answer
    // not made says why.
    let stats = sess.settings.stats.as_deref();
    let production_not_made = |why: &str| {
        stats
            .filter(|_| !production.is_empty())
            .map(|file| Production {
                exported_at: file.exported_at.clone(),
                server_version: file.server.version.clone(),
                plans: production
                    .iter()
                    .map(|plan| ProductionPlan {
                        plan: *plan,
                        outcome: ProductionOutcome::NotMade {
                            why: why.to_string(),
                        },
                        through: None,
                    })
                    .collect(),
                gaps: Vec::new(),
                rows: Vec::new(),
            })
    };
    let not_made = |asks: &mut dyn Iterator<Item = (String, PlanKind)>, why: scratch::NotMade| {
        let why = why.to_string();
        asks.map(|(index, plan)| ScratchReplan {
            index,
            plan,
            outcome: ScratchOutcome::NotMade { why: why.clone() },
        })
        .collect()
    };
    if needed.is_empty() && production.is_empty() {
        return Ok((Vec::new(), None, None));
    }
    if let scratch::Mode::Off(why) = &sess.settings.scratch {
        let why = scratch::NotMade::Off(why.clone());
        let words = why.to_string();
        return Ok((
            not_made(&mut needed.iter().cloned(), why),
            None,
            production_not_made(&words),
        ));
    }
    let found: Vec<&IndexFacts> = open
        .lookups
        .iter()
        .filter_map(|l| match l {
            IndexLookup::Found(facts) => Some(&**facts),
            IndexLookup::Missing { .. } | IndexLookup::NotRequired => None,
        })
        .collect();
    let shown_name = |f: &IndexFacts| {
        crate::model::Relation::new(Some(&f.info.schema), &f.info.name).to_string()
    };
    // The statement as the measured server plans it with every index scan off, once per plan
    // kind: its conditions on each asked index's table, to compare with the copy's.
    let mut seq_only: Vec<(PlanKind, Document)> = Vec::new();
    for (_, kind) in needed {
        if seq_only.iter().any(|(k, _)| k == kind) {
            continue;
        }
        let mode = match kind {
            PlanKind::Custom => (!open.check.params.is_empty()).then_some("force_custom_plan"),
            PlanKind::Generic => Some("force_generic_plan"),
        };
        match replan(sess, open.check, mode, &INDEX_SCANS).await {
            Ok(document) => seq_only.push((*kind, document)),
            Err(f) if f.connection_lost => return Err(f),
            Err(f) => {
                let words = scratch::NotMade::Unread(f.message.clone()).to_string();
                return Ok((
                    not_made(
                        &mut needed.iter().cloned(),
                        scratch::NotMade::Unread(f.message),
                    ),
                    None,
                    production_not_made(&words),
                ));
            }
        }
    }
    let asks: Vec<scratch::Ask> = needed
        .iter()
        .filter_map(|(shown, plan)| {
            let facts = found.iter().find(|f| shown_name(f) == *shown)?;
            let tables: Vec<String> = std::iter::once(facts.info.table.clone())
                .chain(facts.partitions.iter().map(|p| p.table.clone()))
                .collect();
            let measured = seq_only
                .iter()
                .find(|(k, _)| k == plan)
                .map(|(_, d)| {
                    tables
                        .iter()
                        .flat_map(|t| d.plan().conditions_on(t))
                        .collect()
                })
                .unwrap_or_default();
            Some(scratch::Ask {
                shown: shown.clone(),
                schema: facts.info.schema.clone(),
                index: facts.info.name.clone(),
                plan: *plan,
                tables,
                measured,
                definition: String::new(),
            })
        })
        .collect();
    let asked: Vec<&IndexFacts> = found
        .iter()
        .copied()
        .filter(|f| {
            asks.iter()
                .any(|a| a.index == f.info.name && a.schema == f.info.schema)
        })
        .collect();
    let what = definitions::Asked {
        check: open.check,
        plans: open.plans,
        indexes: &asked,
        asks: asks.clone(),
        session: open.session,
    };
    match definitions::request(sess, what, &catalog.definitions).await {
        Ok(mut r) => {
            // The required index (the first accepted one the catalog has), for the cost through
            // it at production's statistics.
            r.through = (!production.is_empty())
                .then(|| {
                    found.first().map(|facts| scratch::Ask {
                        shown: shown_name(facts),
                        schema: facts.info.schema.clone(),
                        index: facts.info.name.clone(),
                        plan: PlanKind::Custom,
                        tables: Vec::new(),
                        measured: Vec::new(),
                        definition: String::new(),
                    })
                })
                .flatten();
            r.production = production;
            r.declared = open.check.settings.clone();
            Ok((Vec::new(), Some(r), None))
        }
        // A read that failed for a lock or a timeout leaves the question open, saying why; a
        // lost session is the check's failure.
        Err(f) if f.connection_lost => Err(f),
        Err(f) => {
            let words = scratch::NotMade::Unread(f.message.clone()).to_string();
            Ok((
                not_made(
                    &mut asks.iter().map(|a| (a.shown.clone(), a.plan)),
                    scratch::NotMade::Unread(f.message),
                ),
                None,
                production_not_made(&words),
            ))
        }
    }
}

/// Every relation the plans read, and the required index's table: (schema, name), once each,
/// in the order first met.
fn relations_of(index: &IndexLookup, plans: &[&Explain]) -> Vec<(String, String)> {
    let mut wanted: Vec<(String, String)> = Vec::new();
    if let IndexLookup::Found(facts) = index {
        wanted.push((facts.info.schema.clone(), facts.info.table.clone()));
    }
    for plan in plans {
        for scan in plan.scans() {
            if let Some(rel) = scan.relation {
                let r = crate::model::Relation::new(scan.schema, rel);
                let key = (r.schema, r.name);
                if !wanted.contains(&key) {
                    wanted.push(key);
                }
            }
        }
    }
    wanted
}

/// The read path's measured runs: without parameters, `EXPLAIN` of its text as it is; with
/// parameters, the custom plans and then one generic plan of the protocol-level statement. Then
/// the plain statement's round trips (custom plans, for one with parameters), as many as the
/// EXPLAIN runs.
async fn explain_read_path(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    before: &guard::Snapshot,
    parsed: Option<ParseAnswer>,
) -> Result<(Vec<Document>, Option<Document>, Vec<f64>), Failure> {
    if check.params.is_empty() {
        explain_text(sess, read_path, check, before).await
    } else {
        explain_prepared(sess, read_path, check, before, parsed).await
    }
}

/// A read path without parameters: `EXPLAIN` of its text as it is, then its plain text's round
/// trips.
async fn explain_text(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    before: &guard::Snapshot,
) -> Result<(Vec<Document>, Option<Document>, Vec<f64>), Failure> {
    let settings = sess.settings;
    let count = (settings.warmup, settings.iterations);
    let statement = format!("{EXPLAIN}{}", check.sql.text);
    let runs = Runs {
        statement: &statement,
        prefix_len: EXPLAIN.len(),
        count,
        set: "",
        kind: RunKind::Explain,
    };
    let plain = Runs {
        statement: &check.sql.text,
        prefix_len: 0,
        kind: RunKind::Plain,
        ..runs
    };
    // The EXPLAIN statement and the plain one parsed in the first run's round trip, inside the
    // runs' savepoint (the locks their Parse takes go with its rollback).
    let first = Parsed::InFirstRun { also: &plain };
    let (plans, parsed) = explain_runs(sess, read_path, check, (&runs, first), before).await?;
    let Some([_, parsed_plain]) = parsed else {
        return Err(Why::NoMeasuredRun.into());
    };
    let client = round_trips(sess, read_path, check, (&plain, &parsed_plain), before).await?;
    Ok((plans, None, client))
}

/// A read path with parameters, prepared at the protocol level: the custom plans, the plain
/// `EXECUTE`'s round trips, then one generic plan.
async fn explain_prepared(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    before: &guard::Snapshot,
    parsed: Option<ParseAnswer>,
) -> Result<(Vec<Document>, Option<Document>, Vec<f64>), Failure> {
    let settings = sess.settings;
    let count = (settings.warmup, settings.iterations);
    let parsed = match parsed {
        Some(answer) => answer,
        None => parse_read_path(sess, check).await,
    };
    let (statement, name) =
        parsed.map_err(|f| f.or(|e| failure(e, Asked::ParseReadPath, settings)))?;
    let statement =
        statement.map_err(|f| f.or(|e| sql_failure(e, read_path, check, 0, settings)))?;
    let name = name?;
    let execute = format!("{EXPLAIN}EXECUTE {name}({})", check.params.join(", "));
    let custom_runs = Runs {
        statement: &execute,
        prefix_len: usize::MAX,
        count,
        set: "",
        kind: RunKind::Explain,
    };
    let plain_execute = format!("EXECUTE {name}({})", check.params.join(", "));
    let plain = Runs {
        statement: &plain_execute,
        kind: RunKind::Plain,
        ..custom_runs
    };
    // The plan cache mode set, and the EXPLAIN statement and the plain EXECUTE parsed, in the
    // first run's round trip: plancheck's own statements, and a Parse runs nothing. The mode is
    // set in a round trip of its own only where the guard's snapshot cannot follow it without
    // reading it again.
    const CUSTOM: &str = "force_custom_plan";
    let set = format!("SET LOCAL plan_cache_mode = {CUSTOM}; ");
    let (before, set) = match before.with_setting(&settings.watched, "plan_cache_mode", CUSTOM) {
        Some(after) => (after, set.as_str()),
        None => (set_plan_cache_mode(sess, CUSTOM, Some(before)).await?, ""),
    };
    let custom_runs = Runs { set, ..custom_runs };
    let first = Parsed::InFirstRun { also: &plain };
    let (plans, parsed) =
        explain_runs(sess, read_path, check, (&custom_runs, first), &before).await?;
    let Some([parsed, parsed_plain]) = parsed else {
        return Err(Why::NoMeasuredRun.into());
    };
    let client = round_trips(sess, read_path, check, (&plain, &parsed_plain), &before).await?;
    // The generic plan: the same EXPLAIN statement (the plan cache mode is read when EXECUTE
    // runs), its mode set in the run's round trip when the guard's snapshot can follow it
    // without reading it again.
    const GENERIC: &str = "force_generic_plan";
    let set = format!("SET LOCAL plan_cache_mode = {GENERIC}; ");
    let (before, set) = match before.with_setting(&settings.watched, "plan_cache_mode", GENERIC) {
        Some(after) => (after, set.as_str()),
        None => (set_plan_cache_mode(sess, GENERIC, Some(&before)).await?, ""),
    };
    let generic_runs = Runs {
        count: (0, 1),
        set,
        kind: RunKind::Generic,
        ..custom_runs
    };
    let generic = Parsed::Already(&parsed);
    let (generic, _) =
        explain_runs(sess, read_path, check, (&generic_runs, generic), &before).await?;
    drop(statement);
    Ok((plans, generic.into_iter().next(), client))
}

/// The answer to [`parse_read_path`]: the savepoint's (outer), the Parse's and the name's.
type ParseAnswer = Result<(Result<Statement, Fail>, Result<String, Failure>), Fail>;

/// Parse of a read path with parameters, the file's text alone: one statement, or the server
/// refuses it. The server's name for it is asked in the same round trip (the Parse is done by
/// then), all in a savepoint rolled back at once ([`Sess::unlocked`]).
async fn parse_read_path(sess: Sess<'_>, check: &ScopeCheck) -> ParseAnswer {
    sess.unlocked(futures_util::future::join(
        sess.prepare(&check.sql.text),
        protocol_name(sess, &check.sql.text),
    ))
    .await
}

/// The scope's setup statements, one at a time, each through Parse (which refuses a second
/// statement) and each followed by the guard, so nothing a statement changed is there when the
/// next one runs. What the vetting could read was refused before the run; this stops what it
/// could not (a setting named at run time, a function that changes one).
async fn run_setup(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    before: &guard::Snapshot,
) -> Result<(), Failure> {
    let settings = sess.settings;
    for (i, statement) in check.setup.iter().enumerate() {
        sess.execute(statement).await.map_err(|f| {
            f.or(|e| {
                let asked = Asked::SetupStatement {
                    scope: check.scope.clone(),
                    n: i + 1,
                };
                match Why::of(e, asked, settings) {
                    Why::Failed { said, .. } => Why::SetupFailed {
                        scope: check.scope.clone(),
                        n: i + 1,
                        said,
                        place: check.setup_place(i).cloned(),
                        file: read_path.expectation_path.clone(),
                    },
                    lost => lost,
                }
                .into()
            })
        })?;
        let now = sess.snapshot().await?;
        if let Some(what) = guard::changed(&settings.watched, before, &now, Span::Fixed, true) {
            return Err(Why::SetupChanged {
                scope: check.scope.clone(),
                n: i + 1,
                what,
                place: check.setup_place(i).cloned(),
                file: read_path.expectation_path.clone(),
            }
            .into());
        }
    }
    Ok(())
}

/// The server's name for the protocol-level statement just prepared from `text` (the driver
/// names its statements itself): its `EXPLAIN … EXECUTE` runs exactly that statement.
async fn protocol_name(sess: Sess<'_>, text: &str) -> Result<String, Failure> {
    let rows = sess
        .query_typed(PREPARED)
        .await
        .map_err(|f| f.or(|e| failure(e, Asked::PreparedStatements, sess.settings)))?;
    prepared_name(&rows, text).ok_or_else(|| Why::PreparedNotListed.into())
}

/// The statements prepared at the protocol level in the session, newest first: name and text.
pub(crate) const PREPARED: &str = "\
    SELECT s.name::pg_catalog.text, s.statement FROM pg_catalog.pg_prepared_statements s \
    WHERE NOT s.from_sql ORDER BY s.prepare_time DESC";

/// Of the rows of [`PREPARED`], the name of the newest statement prepared from `text` whose name
/// is the driver's own kind (lower-case letters, digits, `_`: safe to write after EXECUTE).
pub(crate) fn prepared_name(rows: &[Row], text: &str) -> Option<String> {
    rows.iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, Option<String>>(1)))
        .find(|(name, statement)| {
            statement.as_deref() == Some(text)
                && !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
        .map(|(name, _)| name)
}

/// The functions called in the conditions a plan applies to the required index's table that the
/// catalog says are not IMMUTABLE (STABLE or VOLATILE): a partial index's predicate can never be
/// proved from their values.
async fn non_immutable_functions(
    sess: Sess<'_>,
    plan: &Explain,
    table: &str,
) -> Result<Vec<String>, Failure> {
    let text = plan.conditions_on(table).join(" ");
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
    let rows = sess
        .query(
            "SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc p \
             WHERE p.proname OPERATOR(pg_catalog.=) ANY($1) \
               AND p.provolatile OPERATOR(pg_catalog.<>) 'i' ORDER BY 1",
            &[&names],
        )
        .await
        .map_err(|f| f.or(|e| failure(e, Asked::Volatility, sess.settings)))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Every index scan, turned off to plan a statement whose conditions on a table all stay in the
/// scans' filters (compared between the measured server and the scratch copy).
const INDEX_SCANS: [&str; 4] = [
    "enable_indexscan",
    "enable_indexonlyscan",
    "enable_bitmapscan",
    "enable_tidscan",
];

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

/// Re-plans the statement (EXPLAIN without ANALYZE: nothing runs) rung by rung, until every
/// accepted index has been read by one of the re-plans, or the rungs run out.
async fn probe(
    sess: Sess<'_>,
    check: &ScopeCheck,
    plan_cache_mode: Option<&str>,
    kind: PlanKind,
    accepted: &[replans::Accepted],
) -> Result<Vec<Probe>, Failure> {
    let mut probes: Vec<Probe> = Vec::new();
    for rung in PROBE_RUNGS {
        let document = replan(sess, check, plan_cache_mode, rung).await?;
        probes.push(Probe {
            plan: kind,
            disabled: rung.iter().map(|g| g.to_string()).collect(),
            dropped: Vec::new(),
            document,
        });
        let plans: Vec<&Explain> = probes.iter().map(|p| p.document.plan()).collect();
        if replans::every_one_seen(accepted, &plans) {
            break;
        }
    }
    Ok(probes)
}

/// One re-plan of the statement with `disabled` scan types off, in a savepoint that takes the
/// settings back. A prepared statement keeps its cached generic plan whatever the settings, so
/// with parameters it is prepared afresh, at the protocol level.
async fn replan(
    sess: Sess<'_>,
    check: &ScopeCheck,
    plan_cache_mode: Option<&str>,
    disabled: &[&str],
) -> Result<Document, Failure> {
    let settings = sess.settings;
    let fail = |f: Fail| f.or(|e| failure(e, Asked::Replan, settings));
    let mut sets: String = disabled
        .iter()
        .map(|g| format!("SET LOCAL {g} = off; "))
        .collect();
    if let Some(mode) = plan_cache_mode {
        sets.push_str(&format!("SET LOCAL plan_cache_mode = {mode}; "));
    }
    sess.exec(&format!("SAVEPOINT plancheck_probe; {sets}"))
        .await
        .map_err(fail)?;
    let planned = async {
        match plan_cache_mode {
            None => {
                let statement = format!("EXPLAIN (VERBOSE, FORMAT JSON) {}", check.sql.text);
                sess.query(&statement, &[]).await.map_err(fail)
            }
            Some(_) => {
                let prepared = sess.prepare(&check.sql.text).await.map_err(fail)?;
                let name = protocol_name(sess, &check.sql.text).await?;
                let statement = format!(
                    "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE {name}({})",
                    check.params.join(", ")
                );
                let rows = sess.query(&statement, &[]).await.map_err(fail);
                drop(prepared);
                rows
            }
        }
    }
    .await;
    sess.exec("ROLLBACK TO SAVEPOINT plancheck_probe; RELEASE SAVEPOINT plancheck_probe")
        .await
        .map_err(fail)?;
    read_plan(&planned?)
}

/// plancheck's own change of `plan_cache_mode`, and the guard's baseline after it: `before` with
/// the mode changed, which is all plancheck's own `SET LOCAL` changes (a wrong baseline would
/// stop the check at the next guard, never let a change through); read from the server, in the
/// same round trip, where the mode is not among the watched settings or there is no `before`.
async fn set_plan_cache_mode(
    sess: Sess<'_>,
    mode: &str,
    before: Option<&guard::Snapshot>,
) -> Result<guard::Snapshot, Failure> {
    let set = format!("SET LOCAL plan_cache_mode = {mode}");
    let failed = |f: Fail| f.or(|e| failure(e, Asked::PlanCacheMode, sess.settings));
    let derived =
        before.and_then(|b| b.with_setting(&sess.settings.watched, "plan_cache_mode", mode));
    if let Some(after) = derived {
        sess.exec(&set).await.map_err(failed)?;
        return Ok(after);
    }
    let (set, now) = futures_util::future::join(sess.exec(&set), sess.snapshot()).await;
    set.map_err(failed)?;
    now
}

/// The runs of one EXPLAIN statement.
#[derive(Clone, Copy)]
struct Runs<'a> {
    statement: &'a str,
    /// Characters sent before the read path's own text; `usize::MAX` when the statement
    /// executes the prepared read path (its parameter values are what an error points at).
    prefix_len: usize,
    /// (discarded warm-up runs, measured runs)
    count: (u32, u32),
    /// plancheck's own `SET LOCAL …; ` sent ahead of the first run (empty: none).
    set: &'a str,
    /// Which statement it is, for the counts of what each run read.
    kind: RunKind,
}

/// Warm-up runs (discarded), then measured runs of `statement` (the runs' EXPLAIN), each
/// followed by the guard (a function the read path calls could change a setting for the runs
/// after it). Returns each measured run's plan and document, and the statements parsed in the
/// first run ([`Parsed::InFirstRun`]).
async fn explain_runs(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    (runs, statement): (&Runs<'_>, Parsed<'_>),
    before: &guard::Snapshot,
) -> Result<(Vec<Document>, Option<[Statement; 2]>), Failure> {
    guarded_runs(
        sess,
        read_path,
        check,
        (runs, statement),
        before,
        |rows, _| read_plan(&rows),
    )
    .await
}

/// The read path's plain statement (no EXPLAIN), as the application sends it, run as the
/// EXPLAIN runs are (warm-up discarded, each run guarded): each measured run's round trip as the
/// client saw it, in milliseconds. Its rows are dropped as they come. Always parsed ahead, so
/// no run's round trip carries a Parse.
async fn round_trips(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    (runs, statement): (&Runs<'_>, &Statement),
    before: &guard::Snapshot,
) -> Result<Vec<f64>, Failure> {
    let (client, _) = guarded_runs(
        sess,
        read_path,
        check,
        (runs, Parsed::Already(statement)),
        before,
        |_, took| Ok(took.as_secs_f64() * 1000.0),
    )
    .await?;
    Ok(client)
}

/// The statement the runs run: parsed already, or parsed in their first run's round trip. Either
/// way through the extended protocol's Parse, which refuses several statements in one string, so
/// a plan file cannot smuggle a `COMMIT` past the read-only transaction. Parsed once: EXPLAIN
/// plans its query afresh at every run.
#[derive(Clone, Copy)]
enum Parsed<'a> {
    Already(&'a Statement),
    /// The first run sends its statement as the unnamed one and, ahead of it, the Parse of the
    /// runs' statement (for the runs after it) and of `also` (the plain statement's, whose runs
    /// come next): [`Sess::first_run_then_guard`].
    InFirstRun {
        also: &'a Runs<'a>,
    },
}

/// Warm-up runs (discarded), then measured runs of `statement`, each followed by the guard (a
/// function the read path calls could change a setting for the runs after it), each in the
/// runs' savepoint ([`session::RUN_SAVEPOINT`]), opened in the first run's round trip after
/// `runs.set` (plancheck's own `SET LOCAL`, kept by the rollbacks to the savepoint). Returns what
/// `keep` makes of each measured run's rows and round trip, and, for [`Parsed::InFirstRun`], the
/// runs' statement and the `also` one, parsed.
// Long because the first run's round trip (what it opens, what it parses) and each answer's
// failure are told apart here, in the order the server answered them.
async fn guarded_runs<T>(
    sess: Sess<'_>,
    read_path: &ReadPath,
    check: &ScopeCheck,
    (runs, statement): (&Runs<'_>, Parsed<'_>),
    before: &guard::Snapshot,
    mut keep: impl FnMut(Vec<tokio_postgres::Row>, Duration) -> Result<T, Failure>,
) -> Result<(Vec<T>, Option<[Statement; 2]>), Failure> {
    let settings = sess.settings;
    let mut kept = Vec::new();
    let (warmup, iterations) = runs.count;
    let total = warmup + iterations;
    let ran = |f: Fail| f.or(|e| run_failure(e, read_path, check, runs, settings));
    let opening = |e: &tokio_postgres::Error| {
        if runs.set.is_empty() {
            run_failure(e, read_path, check, runs, settings)
        } else {
            failure(e, Asked::PlanCacheMode, settings)
        }
    };
    let mut parsed: Option<[Statement; 2]> = None;
    for run in 0..total {
        let close = if run + 1 == total {
            session::RUN_RELEASE
        } else {
            session::RUN_ROLLBACK
        };
        let open = format!("{}{}", runs.set, session::RUN_SAVEPOINT);
        let counting = count_ask(sess);
        let count = counting.as_ref().map(|(statement, before)| CountAsk {
            statement,
            before: *before,
        });
        let (rows, took, now, counts) = match (run, statement, &parsed) {
            (0, Parsed::InFirstRun { also }, _) => {
                let texts = [runs.statement, also.statement];
                let first = sess
                    .first_run_then_guard((&open, &texts), runs.statement, close, count)
                    .await
                    .map_err(ran)?;
                first.opened.map_err(|e| opening(&e))?;
                let mut statements = Vec::with_capacity(2);
                for (answer, of) in first.parsed.into_iter().zip([runs, also]) {
                    statements
                        .push(answer.map_err(|e| run_failure(&e, read_path, check, of, settings))?);
                }
                let (rows, now) = first.ran.map_err(|e| ran(Fail::Db(e)))?;
                let now = now?;
                parsed = <[Statement; 2]>::try_from(statements).ok();
                (rows, Duration::ZERO, Ok(now), first.counts)
            }
            (0, Parsed::Already(statement), _) => {
                let (opened, ran_once) = futures_util::future::join(
                    sess.exec(&open),
                    sess.run_then_guard(statement, close, count),
                )
                .await;
                opened.map_err(|f| f.or(opening))?;
                ran_once.map_err(ran)?
            }
            (_, Parsed::Already(statement), _) | (_, _, Some([statement, _])) => sess
                .run_then_guard(statement, close, count)
                .await
                .map_err(ran)?,
            (_, Parsed::InFirstRun { .. }, None) => return Err(Why::NoMeasuredRun.into()),
        };
        let now = now?;
        record_counts(sess, runs.kind, run < warmup, counts)?;
        if let Some(what) = guard::changed(&settings.watched, before, &now, Span::All, true) {
            return Err(Why::RunChanged {
                plan: read_path.plan_path.clone(),
                what,
            }
            .into());
        }
        if run < warmup {
            continue;
        }
        kept.push(keep(rows, took)?);
    }
    Ok((kept, parsed))
}

/// The reading of the counts a run's round trip carries, when the check counts its reads: the
/// prepared reading, and whether a reading before the run is needed too (none ends a run before
/// it).
fn count_ask(sess: Sess<'_>) -> Option<(Statement, bool)> {
    let tally = sess.tally.borrow();
    let statement = tally.statement.clone()?;
    Some((statement, tally.needs_start()))
}

/// A run's readings of the counts, kept in the check's tally.
fn record_counts(
    sess: Sess<'_>,
    kind: RunKind,
    warmup: bool,
    counts: CountAnswers,
) -> Result<(), Failure> {
    let read = |answer: Result<Vec<Row>, tokio_postgres::Error>| {
        answer
            .map(|rows| counts::Reading::of(&rows))
            .map_err(|e| failure(&e, Asked::ReadCounts, sess.settings))
    };
    let Some(after) = counts.after else {
        return Ok(());
    };
    let start = counts.before.map(read).transpose()?;
    let end = read(after)?;
    sess.tally.borrow_mut().record(kind, warmup, start, end);
    Ok(())
}

/// An error from a run of the read path: in its SQL (located in the plan file), or, for a
/// prepared read path, in a parameter value (located where the value is written).
fn run_failure(
    e: &tokio_postgres::Error,
    read_path: &ReadPath,
    check: &ScopeCheck,
    runs: &Runs<'_>,
    settings: &Settings,
) -> Failure {
    if runs.prefix_len != usize::MAX {
        return sql_failure(e, read_path, check, runs.prefix_len, settings);
    }
    if let Some(db) = e.as_db_error()
        && let Some(ErrorPosition::Original(pos)) = db.position()
    {
        // A position points into `EXPLAIN … EXECUTE name(values)`: at a value the server
        // cannot convert to its parameter's type.
        let open = runs
            .statement
            .find(" EXECUTE ")
            .and_then(|i| runs.statement[i..].find('(').map(|j| i + j + 1))
            .unwrap_or(0);
        let byte = runs
            .statement
            .char_indices()
            .nth((*pos as usize).saturating_sub(1))
            .map_or(runs.statement.len(), |(b, _)| b);
        let at = byte.saturating_sub(open);
        let place = check.param_at(at).and_then(|i| check.param_place(i));
        return match (Why::of(e, Asked::ReadPath(String::new()), settings), place) {
            (Why::Failed { said, .. }, Some(place)) => Why::ParameterValue {
                scope: check.scope.clone(),
                said,
                place: place.clone(),
            }
            .into(),
            _ => failure(
                e,
                Asked::ParameterValues {
                    file: read_path.expectation_path.clone(),
                    scope: check.scope.clone(),
                },
                settings,
            ),
        };
    }
    sql_failure(e, read_path, check, 0, settings)
}

/// The plan an `EXPLAIN (FORMAT JSON)` returned, and its document.
fn read_plan(rows: &[tokio_postgres::Row]) -> Result<Document, Failure> {
    let RawJson(text) = rows
        .first()
        .and_then(|r| r.try_get::<_, RawJson>(0).ok())
        .ok_or_else(|| Failure::from(Why::NoExplainJson))?;
    let text = text.map_err(|bytes| {
        Failure::from(Why::PlanTooLarge {
            bytes,
            cap: MAX_PLAN_DOCUMENT,
        })
    })?;
    Document::from_text(text).map_err(|e| Failure::from(Why::PlanUnreadable(e.to_string())))
}
/// Looks the required index up as the session sees it (search_path, quoting), with the other
/// indexes on its table; or, when there is none of that name, the names there are.
async fn lookup_index(sess: Sess<'_>, name: &str) -> Result<IndexLookup, Failure> {
    let (client, settings) = (sess.client, sess.settings);
    let read = |asked: Asked| move |f: Fail| f.or(|e| failure(e, asked, settings));
    let info = clocked(client, settings, super::catalog::index_info(client, name))
        .await
        .map_err(read(Asked::LookUpIndex(name.to_string())))?;
    let Some(info) = info else {
        let (nearest, schemas) = clocked(client, settings, super::catalog::index_names(client))
            .await
            .map_err(read(Asked::ListIndexes))?;
        return Ok(IndexLookup::Missing { nearest, schemas });
    };
    let partitions = clocked(client, settings, super::catalog::partitions(client, &info))
        .await
        .map_err(read(Asked::Partitions(name.to_string())))?;
    let siblings = clocked(client, settings, super::catalog::siblings(client, &info))
        .await
        .map_err(read(Asked::OtherIndexes(info.table.clone())))?;
    let columns = clocked(
        client,
        settings,
        super::catalog::columns(client, &info.schema, &info.table),
    )
    .await
    .map_err(read(Asked::Columns(info.table.clone())))?;
    Ok(IndexLookup::Found(Box::new(IndexFacts {
        info,
        partitions,
        siblings,
        columns,
    })))
}

/// What the planner knew of each relation in `wanted` (`(schema, name)`), in one query: a
/// relation the catalog does not have (gone since the plan) reads as empty. Whether it was ever
/// analysed: [`super::ever_analysed_sql`].
async fn relation_stats(
    sess: Sess<'_>,
    wanted: &[(String, String)],
) -> Result<Vec<RelationFacts>, Failure> {
    let schemas: Vec<&str> = wanted.iter().map(|(s, _)| s.as_str()).collect();
    let names: Vec<&str> = wanted.iter().map(|(_, n)| n.as_str()).collect();
    let rows = sess
        .query(
            concat!(
                "SELECT w.schema, w.name, c.reltuples::float8, ",
                super::ever_analysed_sql!(),
                ", pg_catalog.pg_relation_size(c.oid), \
                 (SELECT st.n_mod_since_analyze FROM pg_catalog.pg_stat_all_tables st \
                  WHERE st.relid = c.oid) \
                 FROM unnest($1::text[], $2::text[]) AS w(schema, name) \
                 LEFT JOIN pg_catalog.pg_namespace n \
                   ON n.nspname OPERATOR(pg_catalog.=) w.schema \
                 LEFT JOIN pg_catalog.pg_class c \
                   ON c.relnamespace = n.oid AND c.relname OPERATOR(pg_catalog.=) w.name"
            ),
            &[&schemas, &names],
        )
        .await
        .map_err(|f| f.or(|e| failure(e, Asked::RelationStatistics, sess.settings)))?;
    Ok(rows
        .iter()
        .map(|r| RelationFacts {
            schema: r.get(0),
            name: r.get(1),
            reltuples: r.get::<_, Option<f64>>(2).unwrap_or(0.0),
            // A relation the catalog lacks needs no statistics note.
            has_statistics: r.get::<_, Option<f64>>(2).is_none() || r.get::<_, bool>(3),
            bytes: r.get::<_, Option<i64>>(4).unwrap_or(0),
            modified_since_analyze: r.get(5),
        })
        .collect())
}

/// An error from the read path's own SQL, located in the plan file.
fn sql_failure(
    e: &tokio_postgres::Error,
    read_path: &ReadPath,
    check: &ScopeCheck,
    prefix_len: usize,
    settings: &Settings,
) -> Failure {
    let said = match Why::of(e, Asked::ReadPath(read_path.plan_path.clone()), settings) {
        Why::Failed { said, .. } => said,
        lost => return lost.into(),
    };
    let place = |offset: usize| Place {
        path: read_path.plan_path.clone(),
        text: check.sql.source().into(),
        offset: check.sql.source_offset(offset),
    };
    // PostgreSQL names the top statement (`cannot execute SELECT in a read-only transaction`)
    // when the write is a data-modifying statement inside WITH: name the write instead.
    if e.code() == Some(&SqlState::READ_ONLY_SQL_TRANSACTION)
        && let Some((write, at)) = nested_write(&check.sql.text)
    {
        return Why::NestedWrite {
            write,
            scope: check.scope.clone(),
            place: place(at),
        }
        .into();
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
            return Why::ReadPathFailed {
                scope: check.scope.clone(),
                said,
                place: place(byte),
            }
            .into();
        }
    }
    Why::Failed {
        asked: Asked::ReadPath(read_path.plan_path.clone()),
        said,
    }
    .into()
}

/// The first data-modifying statement nested in a query (`INSERT`, `UPDATE`, `DELETE`, `MERGE`
/// as a statement, not `FOR UPDATE`), and its byte offset.
fn nested_write(sql: &str) -> Option<(String, usize)> {
    let tokens = crate::sql::significant(sql, crate::sql::Dialect::default());
    let mut previous: Option<String> = None;
    for t in &tokens {
        let word = t.keyword();
        if let Some(w) = &word
            && matches!(w.as_str(), "INSERT" | "UPDATE" | "DELETE" | "MERGE")
            && !matches!(previous.as_deref(), Some("FOR" | "KEY" | "NO"))
        {
            return Some((w.clone(), t.start));
        }
        previous = word;
    }
    None
}
