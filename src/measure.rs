//! What the database measured for one check, as plain data: the EXPLAIN documents of every run,
//! the re-plans and what each disabled, and the catalog facts a rule needs. `db` fills it and
//! decides nothing; [`crate::verdict::judge`] turns it into a verdict with no database at all.
//!
//! `--save-plans DIR` writes one of these per check (`NAME.SCOPE.json`, versioned) and
//! `plancheck judge DIR` reads them back, so a CI artifact can be re-judged anywhere.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::model::{Budget, IndexInfo, Partition};
use crate::plan::explain::{Explain, ExplainError};

/// The version of the saved form. Raised when a field changes meaning or goes away; a field
/// added with a default does not raise it.
pub const VERSION: u32 = 1;

/// The name of every saved measurement's `format` field.
pub const FORMAT: &str = "plancheck-measurement";

/// One check, measured: one read path in one scope.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    pub format: String,
    pub version: u32,
    pub read_path: String,
    pub scope: String,
    /// What the expectation requires, so the measurement can be judged without the project.
    pub requires: Requirement,
    /// The declared planner settings the check ran with (`settings = { … }`).
    #[serde(default)]
    pub settings: Vec<(String, String)>,
    /// How many `$n` parameters the read path has: with any, a generic plan is measured too.
    #[serde(default)]
    pub parameters: usize,
    pub outcome: Outcome,
    /// How long the check took, wall time (its session taken, every run, the rollback), in
    /// milliseconds; none in a measurement saved before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
}

/// What an expectation requires of one check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Requirement {
    /// The required index as written (`name` or `schema.name`); none for `index = false`.
    #[serde(default)]
    pub index: Option<String>,
    /// Other indexes the scope accepts in its place (`index = ["a", "b"]`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// Relations that may be seq scanned: `name` or `schema.name`.
    #[serde(default)]
    pub allow_seq_scan: Vec<String>,
    #[serde(default)]
    pub budget: Budget,
    /// The plan baseline recorded by `plancheck accept` (`baselines/NAME.SCOPE.plan`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

/// Measured, or why not.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Measured(Box<Measured>),
    Failed(Failure),
}

/// Why a check could not be measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub message: String,
    /// The database failed underneath (the connection was lost or given up): exit 3.
    pub connection_lost: bool,
    /// Where in the project's files the error is, when the server located it there (the read
    /// path's SQL, a parameter value, a setup statement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<crate::error::Spot>,
    /// The server answered nothing in time, not even a cancel request, and plancheck gave the
    /// session up (its backend may still run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gave_up: bool,
}

/// Which plan of a read path: the custom plan (its parameter values known, or no parameters at
/// all), or the generic plan a prepared statement may switch to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanKind {
    Custom,
    Generic,
}

impl PlanKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanKind::Custom => "custom",
            PlanKind::Generic => "generic",
        }
    }
}

/// Everything measured for a check that ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measured {
    /// The required index as the catalog resolved it, or what is near its name.
    pub index: IndexLookup,
    /// The same for each index the scope accepts in its place, in the order of
    /// [`Requirement::also`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<IndexLookup>,
    /// The documents of the measured `EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON)` runs of
    /// the custom plan, in order (warm-up runs are not kept).
    pub custom: Vec<Document>,
    /// The generic plan's document, for a read path with parameters.
    #[serde(default)]
    pub generic: Option<Document>,
    /// Re-plans (EXPLAIN without ANALYZE) made with scan types disabled, to find a plan through
    /// an accepted index when the planner did not choose one.
    #[serde(default)]
    pub probes: Vec<Probe>,
    /// Re-plans on a schema-only copy on a throwaway local server, one per accepted index and
    /// plan that the measured server's plans left unsettled, or why each could not be made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scratch: Vec<ScratchReplan>,
    /// With `check --stats FILE`: the read path planned on the scratch copy at production's
    /// statistics, sizes and planner settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub production: Option<Production>,
    /// What the catalog says of every relation in any of the plans.
    #[serde(default)]
    pub relations: Vec<RelationFacts>,
    /// Functions called in the conditions on the index's table that are not IMMUTABLE.
    #[serde(default)]
    pub non_immutable: Vec<String>,
    /// Why `--replan-without-rivals` did not re-plan, when it was asked to and could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replan_skipped: Option<String>,
    /// What the scope's setup changed, read back from the server after it: the role, the
    /// search path, `TimeZone`, an application's settings, … as name and value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session: Vec<(String, String)>,
    /// Every table with row-level security on that the plans read (and the required index's
    /// table), as the check's reader met it after the scope's setup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub row_security: Vec<RowSecurity>,
    /// The runs made and discarded before the measured ones (`--warmup`); unknown in a
    /// measurement saved before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u32>,
    /// The plain statement's (not EXPLAIN's) round trip as the client saw it, each measured run
    /// in milliseconds, as many as the EXPLAIN runs; empty in a measurement saved before it was
    /// kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_ms: Vec<f64>,
    /// What PostgreSQL counted of the rows each run of the read path read, table by table,
    /// reads inside the functions it calls included: none in a measurement saved before it was
    /// counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<Counted>,
}

/// What PostgreSQL itself counted of a check's reads (`pg_stat_xact_*`, and for parallel
/// workers the server-wide `pg_stat_*`), read before and after each run of the read path in the
/// run's own round trip: a plan shows a function call, not the table the function reads; the
/// counters count every read a statement makes, in functions too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    /// `track_counts`: when off, PostgreSQL counts nothing and there are no runs.
    pub tracked: bool,
    /// Whether what other processes read was counted too (the server-wide counters, read fresh
    /// around each run: PostgreSQL 15 and later): parallel workers, whose reads no session's
    /// own counters hold, and any other session whose counts reached the server meanwhile.
    pub others: bool,
    /// Every run of the read path, in the order run: the EXPLAIN runs (warm-up first), the
    /// plain statement's, the generic plan's.
    pub runs: Vec<RunReads>,
}

/// Which statement a run ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `EXPLAIN (ANALYZE, …)` of the custom plan: a measured one's plan is kept (in order,
    /// [`Measured::custom`]).
    Explain,
    /// The plain statement, as the application sends it: no plan is kept.
    Plain,
    /// `EXPLAIN (ANALYZE, …)` of the generic plan ([`Measured::generic`]).
    Generic,
}

/// What one run read, as PostgreSQL counted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReads {
    pub kind: RunKind,
    /// A warm-up run: its plan is not kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// Every table PostgreSQL counted a read of in the run.
    pub tables: Vec<TableReads>,
}

/// One table's reads in one run. Rows read are the rows its sequential, sample and TID range
/// scans returned, the rows its bitmap heap scans fetched, and the entries its indexes
/// returned (an index scan's heap fetches are not counted again); a TID scan counts nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableReads {
    pub schema: String,
    pub name: String,
    /// Sequential scans started by the check's own session (`seq_scan` of
    /// `pg_stat_xact_user_tables`).
    pub seq_scans: u64,
    /// Rows read by the check's own session.
    pub rows: u64,
    /// Sequential scans counted server-wide over the run (`pg_stat_user_tables`), where a
    /// session's own counts arrive only once its transaction has ended: those of other
    /// processes, the check's parallel workers and any other session.
    #[serde(default)]
    pub other_seq_scans: u64,
    /// Rows read, counted server-wide over the run, as [`Self::other_seq_scans`].
    #[serde(default)]
    pub other_rows: u64,
}

/// The required index as the catalog resolved it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexLookup {
    Found(Box<IndexFacts>),
    /// The check requires no index (`index = false`): nothing was looked up.
    NotRequired,
    /// No index of that name: the existing indexes nearest to it, and the schemas there are
    /// (to tell `table.index` from `schema.index`).
    Missing {
        nearest: Vec<IndexName>,
        schemas: Vec<String>,
    },
}

/// The required index and what is around it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexFacts {
    pub info: IndexInfo,
    /// For an index on a partitioned table: every leaf partition and its leaf of the index.
    #[serde(default)]
    pub partitions: Vec<Partition>,
    /// Every other index on the same table: the competitors a re-plan may prefer.
    #[serde(default)]
    pub siblings: Vec<IndexInfo>,
    /// The columns of the index's table.
    #[serde(default)]
    pub columns: Vec<ColumnFacts>,
}

/// A column of the index's table: its type, and the types a cast of it to changes nothing the
/// planner compares (`character varying` to `text`, a domain to its base type), which EXPLAIN
/// prints as a cast all the same (`(language)::text`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnFacts {
    pub name: String,
    pub type_name: String,
    #[serde(default)]
    pub relabels: Vec<String>,
}

/// An existing index, for "did you mean".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexName {
    pub schema: String,
    pub name: String,
    pub table: String,
}

/// One re-plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Probe {
    pub plan: PlanKind,
    /// The settings turned off: `enable_seqscan`, ….
    pub disabled: Vec<String>,
    /// The competing indexes set aside (dropped in a transaction rolled back after), with
    /// `--replan-without-rivals`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    pub document: Document,
}

/// A re-plan of the read path on a schema-only copy of what it touches, on a throwaway local
/// PostgreSQL of the measured server's major version: every other index of the accepted index's
/// table dropped there, seq scans disabled. No data and no statistics: whether the planner can
/// build a plan through an index depends on the definitions only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScratchReplan {
    /// The accepted index it is about, as the catalog names it (`name`, or `schema.name`
    /// outside the default schema).
    pub index: String,
    pub plan: PlanKind,
    /// What the re-plan showed, or why there is none.
    pub outcome: ScratchOutcome,
}

/// The read path planned at production's statistics (`check --stats FILE`): on the scratch
/// copy, every index of its tables kept, with the file's sizes, column statistics and planner
/// settings (see `db::scratch`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Production {
    /// When the file was exported (RFC 3339), and `server_version` of the server it was
    /// exported from.
    pub exported_at: String,
    pub server_version: String,
    /// One per plan kind: the custom plan, and the generic one for a read path with parameters.
    pub plans: Vec<ProductionPlan>,
    /// What the copy could not take of the file for the relations the plans read, in words:
    /// estimates that rest on it may differ from production's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
    /// Production's `reltuples` of every relation the plans read.
    #[serde(default)]
    pub rows: Vec<RowsOf>,
}

/// A relation's rows by production's `reltuples`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowsOf {
    pub schema: String,
    pub name: String,
    pub reltuples: f64,
}

/// One plan kind at production's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProductionPlan {
    pub plan: PlanKind,
    pub outcome: ProductionOutcome,
    /// Where the plan does not read the required index: the plan through it at the same
    /// statistics, the other indexes of its table dropped and seq scans off (its cost is the
    /// one production's planner weighed against the plan it chose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<ProductionOutcome>,
}

/// `EXPLAIN (VERBOSE, FORMAT JSON)` on the copy at production's statistics, or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProductionOutcome {
    Planned(Box<Document>),
    NotMade { why: String },
}

/// A scratch re-plan made, or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScratchOutcome {
    Planned(Box<ScratchPlan>),
    /// Not made, and why: no local server of that major version, a definition the copy could
    /// not take, `--no-scratch`, an interruption.
    NotMade {
        why: String,
    },
}

/// A plan made on the scratch copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScratchPlan {
    /// `server_version` of the local server.
    pub server_version: String,
    /// The other indexes of the table (and of its partitions) dropped on the copy.
    pub dropped: Vec<String>,
    /// The settings turned off: `enable_seqscan`, `enable_tidscan`.
    pub disabled: Vec<String>,
    /// `EXPLAIN (VERBOSE, FORMAT JSON)` of the read path there.
    pub document: Document,
    /// Whether the copy planned the statement the measured server measured: the conditions
    /// each planned on the index's table with every index scan off. `None` in a measurement
    /// saved before plancheck compared them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_statement: Option<SameStatement>,
    /// Where no plan read the index alone: the re-plans with it beside one other index of its
    /// table in turn. `None` where the index alone served the statement, or in a measurement
    /// saved before plancheck asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<Together>,
}

/// An index that serves a statement only beside another (one arm of a BitmapOr, as for
/// `a IS NOT NULL OR b IS NOT NULL` with a partial index per arm): on the copy, the index kept
/// with each other index of its table in turn, every other dropped, seq scans and plain index
/// scans off (only a bitmap scan combines two indexes on one scan of a table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Together {
    /// The other indexes of the table kept beside it, one re-plan each, in order, until one
    /// read it.
    pub tried: Vec<String>,
    /// The settings turned off in those re-plans.
    pub disabled: Vec<String>,
    /// The first re-plan that read the index: the other index kept, and the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<TogetherPlan>,
}

/// A re-plan on the copy that read the index beside one other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TogetherPlan {
    /// The other index kept.
    pub with: String,
    pub document: Document,
}

/// The conditions the measured server and the copy each planned on the index's table (and its
/// partitions) for the same read path, with every index scan off, so that no index splits them:
/// `Filter: (…)` as EXPLAIN (VERBOSE) prints them, constants folded. A function the planner
/// folds that answers otherwise on the copy, or a definition that differs there, shows here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SameStatement {
    pub measured: Vec<String>,
    pub copy: Vec<String>,
}

/// An `EXPLAIN (FORMAT JSON)` document as the server returned it (saved as it is), read once
/// into the plan model: a document that is no plan is refused where it is measured or loaded,
/// never dropped later by whoever reads it.
#[derive(Debug, Clone)]
pub struct Document {
    json: Json,
    plan: Explain,
}

/// A document's JSON: the text the server sent, made a tree only when the document is saved or
/// compared (most never are: a report shows plans only of checks that did not pass), or the tree
/// it was loaded as.
#[derive(Debug, Clone)]
enum Json {
    Text(Box<str>),
    Tree(Value),
}

impl Document {
    pub fn new(json: Value) -> Result<Document, ExplainError> {
        let plan = Explain::from_json(&json)?;
        Ok(Document {
            json: Json::Tree(json),
            plan,
        })
    }

    /// The document from the text the server sent, read straight into the plan model
    /// ([`Explain::parse`]).
    pub fn from_text(text: String) -> Result<Document, ExplainError> {
        let plan = Explain::parse(&text)?;
        Ok(Document {
            json: Json::Text(text.into_boxed_str()),
            plan,
        })
    }

    /// The plan, read.
    pub fn plan(&self) -> &Explain {
        &self.plan
    }

    /// The document as the server returned it.
    pub fn json(&self) -> Result<std::borrow::Cow<'_, Value>, ExplainError> {
        match &self.json {
            Json::Tree(v) => Ok(std::borrow::Cow::Borrowed(v)),
            // The text was read once already: it parses (within the depth bound) again.
            Json::Text(t) => crate::plan::explain::parse_json(t).map(std::borrow::Cow::Owned),
        }
    }
}

impl PartialEq for Document {
    fn eq(&self, other: &Document) -> bool {
        match (self.json(), other.json()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl Serialize for Document {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Document, D::Error> {
        let json = Value::deserialize(deserializer)?;
        Document::new(json).map_err(serde::de::Error::custom)
    }
}

/// A table with row-level security on, as the check's reader (the role after the scope's setup)
/// met it in the check's transaction: the catalog's facts, for the judge to say whether the
/// policies applied and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowSecurity {
    pub schema: String,
    pub table: String,
    /// `row_security_active(table)`: whether the table's policies apply to the reader.
    pub applies: bool,
    /// The reader: `current_user` in the check's transaction, after the setup.
    pub reader: String,
    /// The reader is a superuser.
    pub superuser: bool,
    /// The reader has BYPASSRLS.
    pub bypassrls: bool,
    /// The table's owner.
    pub owner: String,
    /// The reader has the owner's privileges (is it, or a member of it that inherits them).
    pub owns: bool,
    /// `FORCE ROW LEVEL SECURITY`: the policies apply to the owner too.
    pub forced: bool,
}

/// What the planner knew of a relation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationFacts {
    pub schema: String,
    pub name: String,
    /// `pg_class.reltuples`: -1 (or 0) when never analysed.
    pub reltuples: f64,
    /// Rows in `pg_stats` for it: none means never analysed (or empty when it was).
    pub has_statistics: bool,
    /// Bytes on disk: an empty relation needs no statistics.
    pub bytes: i64,
    pub modified_since_analyze: Option<i64>,
}

impl Measurement {
    /// A check that could not be measured.
    pub fn failed(
        read_path: &str,
        scope: &str,
        requires: Requirement,
        settings: Vec<(String, String)>,
        failure: Failure,
    ) -> Measurement {
        Measurement {
            format: FORMAT.into(),
            version: VERSION,
            read_path: read_path.into(),
            scope: scope.into(),
            requires,
            settings,
            parameters: 0,
            outcome: Outcome::Failed(failure),
            elapsed_ms: None,
        }
    }
}

/// What `plancheck ladder` measured (`db::ladder`), for `verdict::ladder`: latencies in HDR
/// histograms, microseconds.
pub mod ladder {
    use std::time::Duration;

    use hdrhistogram::Histogram;

    /// The highest latency a histogram holds, in microseconds (an hour); a longer one is counted
    /// at this value.
    const MAX_MICROS: u64 = 3_600_000_000;

    /// A latency histogram in microseconds, 3 significant digits.
    pub fn histogram() -> Histogram<u64> {
        Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("valid histogram bounds")
    }

    pub fn record(h: &mut Histogram<u64>, d: Duration) {
        let micros = u64::try_from(d.as_micros())
            .unwrap_or(MAX_MICROS)
            .clamp(1, MAX_MICROS);
        h.saturating_record(micros);
    }

    /// What one page measured in a rung.
    #[derive(Debug, Clone)]
    pub struct PageTally {
        /// Arrivals of this page scheduled in the measured window.
        pub offered: u64,
        /// Requests of the measured window that finished without an error.
        pub served: u64,
        pub errors: u64,
        /// Scheduled start to end, microseconds.
        pub latency: Histogram<u64>,
        /// Scheduled start to actual start, microseconds.
        pub late: Histogram<u64>,
    }

    /// What one rung measured: the requests scheduled in its measured window.
    #[derive(Debug, Clone)]
    pub struct RungMeasured {
        pub rate: f64,
        /// The measured window's length.
        pub window: Duration,
        /// Arrivals scheduled in the window.
        pub offered: u64,
        /// Of those, finished without an error.
        pub served: u64,
        pub errors: u64,
        /// Scheduled start to end, microseconds.
        pub latency: Histogram<u64>,
        /// Scheduled start to actual start, microseconds.
        pub late: Histogram<u64>,
        pub pages: Vec<PageTally>,
        /// The late p95 of the window's first and second halves, microseconds: a queue that keeps
        /// growing shows as a second half much later than the first.
        pub late_halves: (u64, u64),
        /// The server's words for the first error, if any.
        pub first_error: Option<String>,
        /// Ended early: a stop (Ctrl-C), `--max-seconds`, or every session lost.
        pub cut: Option<Cut>,
        /// Sessions replaced after a request because it may have left something in them (in
        /// the whole rung, its warm-up included), and why the first was.
        pub replaced: u64,
        pub first_left: Option<Left>,
    }

    /// What a request may have left in its session, so that the session was replaced.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Left {
        /// A statement prepared with SQL `PREPARE`.
        Prepared,
        /// A lock held past the transaction: a session-level advisory lock.
        Locks,
        /// A cursor still open.
        Cursors,
        /// A channel listened to.
        Listening,
        /// A temporary relation.
        Temporary,
        /// What the page's request leaves cannot all be seen: its read path calls functions
        /// other than PostgreSQL's own, or sets custom settings plancheck cannot name.
        Unseen,
        /// What the session holds could not be read.
        Unread,
    }

    /// Why a rung ended before its window was whole.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Cut {
        Stopped,
        MaxSeconds,
        SessionsLost,
    }

    /// Steady: the window's second half is not much later than its first (late p95 at most twice
    /// the first half's plus a millisecond), so no queue is growing.
    pub fn steady_halves(first: u64, second: u64) -> bool {
        second <= 2 * first + 1_000
    }
}

#[cfg(test)]
impl Measurement {
    /// A measured check of read path `p` in scope `member`, with `parameters` parameters: its
    /// index lookup and plans, every other field empty (for unit tests of the judges).
    pub(crate) fn of_plans(
        index: IndexLookup,
        custom: Vec<Document>,
        generic: Option<Document>,
        parameters: usize,
    ) -> Measurement {
        Measurement {
            format: FORMAT.into(),
            version: VERSION,
            read_path: "p".into(),
            scope: "member".into(),
            requires: Requirement::default(),
            settings: vec![],
            parameters,
            elapsed_ms: None,
            outcome: Outcome::Measured(Box::new(Measured {
                index,
                alternatives: vec![],
                custom,
                generic,
                probes: vec![],
                scratch: vec![],
                production: None,
                relations: vec![],
                non_immutable: vec![],
                replan_skipped: None,
                session: Vec::new(),
                row_security: Vec::new(),
                warmup: None,
                client_ms: Vec::new(),
                counted: None,
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    /// A saved run is judged again from its file (`judge DIR`, `ladder --checks`), so every
    /// timing must read back as the very number written: a p50 of two runs is their mean, and a
    /// last-digit difference in either shows in the report.
    #[test]
    fn a_timing_reads_back_from_json_as_the_number_written() {
        let mut differed = Vec::new();
        for nanos in (0..2_000_000u64).step_by(7).map(|n| 2_700_000 + n * 13) {
            let ms = std::time::Duration::from_nanos(nanos).as_secs_f64() * 1000.0;
            let back: f64 = serde_json::from_str(&serde_json::to_string(&ms).unwrap()).unwrap();
            if back.to_bits() != ms.to_bits() {
                differed.push(ms);
            }
        }
        assert!(
            differed.is_empty(),
            "{} read back differently, e.g. {:?}",
            differed.len(),
            &differed[..differed.len().min(3)]
        );
    }
}
