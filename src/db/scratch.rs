//! The scratch planner: whether an index *can* serve a read path, asked of PostgreSQL's own
//! planner with the index alone on its table, on a schema-only copy of what the read path
//! touches, on a throwaway local server of the measured server's major version.
//!
//! Whether the planner can build a plan through an index depends on the definitions only
//! (tables, types, functions, the index and its predicate, row-level security, the statement
//! and the planner's settings), never on data or statistics. On the measured server the other
//! indexes of the table stay and may win every re-plan, so a re-plan there cannot always tell
//! "your SQL can no longer use the index" from "usable but not chosen". On the copy every other
//! index of the table is simply dropped and seq scans are disabled: the index in the plan proves
//! it usable; no plan through it, with nothing else left to choose, proves it not usable.
//!
//! What each side does:
//!
//! - On the measured server ([`super::check`]): catalog reads only, inside the check's own
//!   read-only transaction and on the client's clock (`pg_get_indexdef`, `pg_get_viewdef`,
//!   `format_type`, `pg_get_functiondef`, …: ACCESS SHARE at most), for the checks whose
//!   question the measured plans left open. They give a [`Request`]: the keys of the objects
//!   the read path needs, whose definitions go into the run's [`Definitions`], read once.
//! - Here ([`settle`]): one local server for the run, from the binaries of that major version
//!   ([`local_binaries`]); the copy made once (every definition any request needs), or taken
//!   from the cache when the same definitions were copied before ([`crate::server::cache`]);
//!   then, per request and accepted index, one transaction rolled back: the rival indexes
//!   dropped, the measured session's role and settings, `enable_seqscan` and `enable_tidscan`
//!   off, `EXPLAIN (VERBOSE, FORMAT JSON)` of the read path (its custom plan, or its generic plan
//!   under `plan_cache_mode = force_generic_plan`). The server is removed when the run ends,
//!   fails or is interrupted (dropping it stops it and removes its folder).
//!
//! Never across majors (PostgreSQL 18's skip scan changes what an index serves): without local
//! binaries of the measured major, the check says so and stays as the measured server left it.
//! A definition the copy cannot take (an extension the local server lacks, a function in an
//! untrusted language, a foreign table) leaves the checks that need it unsettled, saying which.
//!
//! The copy trusts nothing it copies. In CI a pull request's migrations run before plancheck, so
//! the definitions (index expressions and predicates, constraints, defaults, domains, generated
//! columns, functions) are the attacker's code, and the read path is a file from a pull request.
//! So ([`server`]):
//!
//! - The server runs as an unprivileged user on a private socket, started with an environment
//!   that holds nothing of plancheck's ([`crate::server`]).
//! - Its superuser makes plancheck's roles and nothing else: every statement of the copy is run
//!   by `plancheck_owner`, a login role with no right beyond creating in its own database, from
//!   the first statement (the objects are its own from birth), so whatever a definition runs
//!   while the copy loads (an index predicate folded while the index is built, a CHECK prepared
//!   to check the rows, an extension's script) runs with no right to programs, files,
//!   server-side file functions, untrusted languages, other databases or roles. The re-plans run
//!   on that role's session, as a role made for the request with nothing but `SELECT`: there is
//!   no superuser session for `SET ROLE` to climb back to. The roles a copied policy names are
//!   made by name, as stand-ins with no rights; a name the copy keeps for itself (its superuser,
//!   plancheck's roles, PostgreSQL's `pg_` roles) leaves the checks that need it unsettled.
//! - Extensions are created first, into empty schemas, by the same unprivileged role: only
//!   those PostgreSQL marks trusted can be made, before any definition of the catalog exists.
//! - Every statement is bounded by `statement_timeout`, set again before each (a function can
//!   lift it for its session), and by plancheck's clock, for each statement and for the whole
//!   load: a server that does not answer in time is stopped at once, and the checks that needed
//!   it are unsettled, saying so.
//! - What failed is named by what it was and its SQLSTATE, never by the server's words (a
//!   message can quote whatever the copy could read).
//!
//! With `check --stats FILE` every check makes a request, and each is also planned with every
//! index of its tables kept, at production's sizes, statistics and planner settings written onto
//! the copy after it is loaded (and after it is cached: the cache holds the schema alone). How
//! they are written, and why no value is parsed with privilege by the catalog's code:
//! [`production`].

mod expressions;
mod extended;
mod mcv;
mod production;
mod server;

use std::collections::BTreeMap;

pub use production::Applied;
pub use server::{Settled, local_binaries, settle};

use crate::measure::PlanKind;

/// One statement of the copy, with the object it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The object: `table public.posts`, `function public.is_visible(public.posts)`, ….
    pub key: String,
    /// Where it goes in the order of creation (schemas first, grants last); a statement that
    /// fails for a dependency created later is tried again after the others.
    pub rank: u8,
    /// The statement, run by the copy's unprivileged owner; for a role, the statement as read
    /// (plancheck makes the role itself, by [`Unit::role`], never by this text).
    pub sql: String,
    /// A role a copied policy names: made by the copy's superuser as a stand-in with no rights,
    /// from this name alone.
    pub role: Option<String>,
    /// Where an index comes among the others: the planner meets a table's indexes in OID order
    /// and keeps the first of two paths that cost the same, so the copy makes them in
    /// production's order (with `check --stats`, the file's position of the index), else in
    /// the measured server's (2³² + its OID). 0 for any other object.
    pub order: u64,
}

/// Every definition the run's requests need, by object, read once per run from the measured
/// server.
#[derive(Debug, Default)]
pub struct Definitions {
    pub units: BTreeMap<String, Vec<Unit>>,
}

impl Definitions {
    pub fn has(&self, key: &str) -> bool {
        self.units.contains_key(key)
    }

    pub fn add(&mut self, units: Vec<Unit>) {
        for u in units {
            self.units.entry(u.key.clone()).or_default().push(u);
        }
    }
}

/// What one check's scratch re-plans need.
#[derive(Debug, Clone)]
pub struct Request {
    /// The keys of every object of the copy the read path needs: one the copy cannot take
    /// leaves the re-plans unmade.
    pub objects: Vec<String>,
    /// The keys of the other indexes of its tables: copied where they can be (the re-plan drops
    /// a rival index anyway), so one that fails to copy blocks nothing.
    pub also: Vec<String>,
    /// What the copy cannot hold, said as a reader would (`foreign table public.remote`): the
    /// re-plans are not made, and the check says why.
    pub missing: Vec<String>,
    /// The schemas the measured session searched, in order (`current_schemas(false)`).
    pub search_path: Vec<String>,
    /// The measured session's settings that decide how the statement is parsed and planned
    /// (`TimeZone`, `constraint_exclusion`, the application's custom settings, …): name, value.
    pub settings: Vec<(String, String)>,
    pub role: RoleFacts,
    /// The read path's SQL as the check sent it, and its parameter values (SQL literals).
    pub sql: String,
    pub params: Vec<String>,
    /// One re-plan each.
    pub asks: Vec<Ask>,
    /// With `check --stats`: the plan kinds to plan at production's statistics, every index of
    /// the tables kept (the custom plan, and the generic one for a read path with parameters).
    pub production: Vec<PlanKind>,
    /// The scope's declared settings (`settings = { … }`): at production's statistics they are
    /// taken after production's own.
    pub declared: Vec<(String, String)>,
    /// The required index, for the cost through it at production's statistics where
    /// production's plan does not read it: the plan kind is each production plan's.
    pub through: Option<Ask>,
}

/// What row-level security does for the measured session's role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleFacts {
    /// The roles named by the copied policies that the role is a member of.
    pub member_of: Vec<String>,
    /// Tables with row-level security on whose policies do not apply to the role (it owns
    /// them, is a superuser or bypasses row-level security): `schema.table`, quoted. On the copy
    /// their row-level security is off for the re-plan.
    pub owns: Vec<String>,
}

/// One re-plan to make: an accepted index, alone on its table, and the plan kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The index as reports name it (`name`, or `schema.name` outside the default schema).
    pub shown: String,
    pub schema: String,
    pub index: String,
    pub plan: PlanKind,
    /// The relations the same-statement comparison reads conditions on: the index's table and
    /// its partitions, as EXPLAIN names them.
    pub tables: Vec<String>,
    /// The conditions the measured server planned on [`Ask::tables`] for this plan kind, with
    /// every index scan off (where no index splits them into index and heap conditions):
    /// compared with the copy's, planned alike.
    pub measured: Vec<String>,
    /// `pg_get_indexdef` of the index on the measured server, read with
    /// `search_path = pg_catalog`: the copy's must read the same.
    pub definition: String,
}

/// Whether the run re-plans on a scratch copy, and on which binaries.
#[derive(Debug, Clone)]
pub enum Mode {
    /// The binaries of the measured server's major version.
    On { bin: std::path::PathBuf },
    /// Not, and why: `--no-scratch`, no local PostgreSQL of that major version, ….
    Off(Off),
}

/// Why a run does not re-plan on a scratch copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Off {
    /// `--no-scratch`.
    NoScratch,
    /// Nobody asked (a run that never set the mode).
    NotAsked,
    /// No local server binaries of this major version.
    NoBinaries(u32),
}

/// Why a re-plan on the scratch copy was not made: data, worded by `report::scratch`
/// (`Display`); the measurement keeps the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotMade {
    Off(Off),
    InterruptedBeforeCopy,
    /// The copy could not be made.
    CopyNotMade(Trouble),
    InterruptedBeforeReplan,
    /// The re-plan on the copy failed.
    ReplanFailed(Trouble),
    /// The copy cannot hold these definitions.
    CannotHold(Vec<String>),
    /// The copy could not take these objects: each key, and why.
    CouldNotTake(Vec<(String, Untaken)>),
    /// The definitions could not be read on the measured server: the check's failure, worded.
    Unread(String),
    /// The copy stopped answering on an earlier statement and was stopped: nothing more was
    /// asked of it.
    Abandoned(Trouble),
    /// Production's statistics could not be written onto the copy.
    NoStatistics(Trouble),
    /// The plan reads these relations, which the statistics file does not size.
    NotInStatistics(Vec<String>),
    /// The copy refused production's statistics for what the plan reads: each, in words.
    StatisticsRefused(Vec<String>),
}

/// Why the copy did not take an object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Untaken {
    /// The server refused its statement with this SQLSTATE.
    Refused(String),
    /// A role a policy names is one the copy keeps for itself.
    ReservedRole,
}

/// Why an object the read path needs cannot be copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uncopyable<'a> {
    /// A base type no extension provides.
    BaseType,
    Aggregate,
    /// A function in a language other than SQL and PL/pgSQL.
    Language(&'a str),
}

/// What plancheck was doing on the scratch server when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Connecting to it.
    Connecting,
    /// Setting a session's bounds.
    Bounding,
    /// Reading its version.
    Version,
    /// Making plancheck's roles and the owner's rights.
    Roles,
    /// Making the copy's definitions.
    Load,
    /// Making the roles re-plans run as.
    Probes,
    /// Opening or ending a re-plan's transaction.
    Transaction,
    /// Turning off row-level security of a table the measured role reads past its policies.
    Rls,
    /// Finding and dropping the other indexes of the table.
    Rivals,
    /// Taking the re-plan's role and the measured session's settings.
    Session,
    /// Planning the read path with every index scan off, to compare its conditions.
    Conditions,
    /// Preparing the read path.
    Prepare,
    /// Planning the read path.
    Explain,
    /// Dropping the re-plans' roles before the copy is cached.
    Cleanup,
    /// Writing production's sizes and statistics.
    Statistics,
    /// Taking production's planner settings for a re-plan.
    ProductionSettings,
}

/// What went wrong on the scratch server: never the server's words (a message can quote what
/// the copy's code could read), only what was asked and the SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trouble {
    /// The throwaway server could not be started: plancheck's own words (`report::server`).
    Server(String),
    /// The server refused a statement of this step, with this SQLSTATE.
    Refused {
        step: Step,
        sqlstate: String,
    },
    /// The connection was lost during this step.
    Lost(Step),
    /// No answer within this long (to one statement, or to the whole load).
    NoAnswer(std::time::Duration),
    /// Ctrl-C during the re-plan.
    Interrupted,
    NoExplainJson,
    /// The EXPLAIN document is this many bytes, over the cap.
    PlanTooLarge(usize),
    /// The EXPLAIN document could not be read: the reader's words.
    PlanUnreadable(String),
    NoRivalAnswer,
    /// The asked index is not on the copy.
    IndexNotOnCopy(String),
    /// The asked index on the copy is not the measured server's: its definition there.
    IndexDiffers {
        index: String,
        copy: String,
    },
    PreparedNotListed,
    /// The statistics file is of another major version than the copy.
    StatisticsMajor {
        file: u32,
        copy: u32,
    },
    /// The statistics file's server had another block size.
    StatisticsBlockSize {
        file: u32,
        copy: u32,
    },
}

impl Gap {
    /// Whether a plan that reads the relation is still production's: not where a size or a
    /// column's statistics the copy should have taken were refused (an approximation named,
    /// such as extended statistics not carried or a column whose type the schema changed,
    /// leaves it production's, said beside it).
    pub fn blocks(&self) -> bool {
        matches!(
            self,
            Gap::ColumnNotWritten { .. } | Gap::SizeNotWritten(_) | Gap::FileNotExtended { .. }
        )
    }
}

/// What the copy could not take of a statistics file: data, worded by `report::scratch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gap {
    /// An index the file has for a table is not on the copy.
    IndexNotOnCopy(String),
    /// A column the file has is not on the copy.
    ColumnNotOnCopy(String),
    /// The column's type on the copy is not production's.
    TypeDiffers {
        column: String,
        file: String,
        copy: String,
    },
    /// Before PostgreSQL 18, a value of this type is parsed by the catalog's own code, which
    /// never runs as the superuser: the column keeps no values.
    ValuesNotParsed { column: String, type_name: String },
    /// The type lacks the operator a kind of statistics is kept under.
    NoOperator { column: String, kind: &'static str },
    /// The server refused the column's statistics (its SQLSTATE), or the restore function
    /// answered false.
    ColumnNotWritten {
        column: String,
        sqlstate: Option<String>,
    },
    /// The restore function did not take the relation's size.
    SizeNotWritten(String),
    /// The relation's files could not be extended to production's size.
    FileNotExtended { relation: String, why: String },
    /// A GIN index of the file has no metapage statistics (the export could not read them):
    /// its costs are estimated from its size.
    GinNotInFile(String),
    /// A GIN index's metapage statistics are not written (the copy has data checksums).
    GinNotWritten(String),
    /// Production's database sorts text by this collation; the copy sorts it by bytes (`C`).
    Collation(String),
    /// An extended statistics object of the file has no counterpart on the copy (the measured
    /// database lacks it on this table).
    ExtendedNotOnCopy(String),
    /// An extended statistics object's columns or kinds on the copy are not the file's.
    ExtendedDiffers(String),
    /// The table standing for an extended statistics object's expressions could not be made
    /// on the copy: their statistics are not written.
    ExtendedExpressions(String),
    /// An extended statistics object's multi-column most common values could not be formed on
    /// the copy (its distinct counts and dependencies are written), for this reason.
    ExtendedMcv(String, McvGap),
    /// B-tree heights and end keys are not carried, for this reason.
    Heights(String),
    /// A table's B-tree shadows were refused with this SQLSTATE: its heights and end keys are
    /// not carried.
    HeightsRefused(String),
}

/// Why an extended statistics object's most common values were not formed on the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McvGap {
    /// The file's list is not one row of keys per frequency.
    Shape,
    /// A key's type is parsed by code the catalog defines (or is of a kind the list cannot
    /// hold): its values are not parsed with the superuser's rights.
    NotParsed(String),
    /// The copy's server refused a key's values (its SQLSTATE).
    Refused(String),
    /// The formed values could not be read back from the copy's file.
    NotRead,
}

impl Trouble {
    /// A failure of a statement of `step` on the scratch server: its SQLSTATE when the server
    /// refused it, else the connection lost.
    pub fn of(step: Step, e: &tokio_postgres::Error) -> Trouble {
        match e.code() {
            Some(code) => Trouble::Refused {
                step,
                sqlstate: code.code().to_string(),
            },
            None => Trouble::Lost(step),
        }
    }
}

impl Default for Mode {
    fn default() -> Self {
        Mode::Off(Off::NotAsked)
    }
}
