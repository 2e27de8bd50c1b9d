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
//! The copy is PostgreSQL code from the measured database, and the read path is a file from a
//! pull request: the server runs as an unprivileged user on a private socket, the copy's objects
//! belong to a role that is no superuser (a `SECURITY DEFINER` function runs as it), only
//! `sql` and `plpgsql` functions are copied, and the re-plans run as a role with nothing but
//! `SELECT` on the copy, each statement through Parse, bounded by a statement timeout and the
//! client's clock.

mod server;

use std::collections::BTreeMap;

pub use server::{local_binaries, settle};

use crate::measure::PlanKind;

/// One statement of the copy, with the object it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The object: `table public.posts`, `function public.is_visible(public.posts)`, ….
    pub key: String,
    /// Where it goes in the order of creation (schemas first, grants last); a statement that
    /// fails for a dependency created later is tried again after the others.
    pub rank: u8,
    pub sql: String,
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
}

/// What row-level security does for the measured session's role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleFacts {
    /// A superuser or a role with BYPASSRLS: no policy applies.
    pub bypasses: bool,
    /// The roles named by the copied policies that the role is a member of.
    pub member_of: Vec<String>,
    /// Tables with row-level security on whose policies do not apply to the role (it owns
    /// them): `schema.table`, quoted.
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
    /// The copy could not take these objects: each key, and the server's words.
    CouldNotTake(Vec<(String, String)>),
    /// The definitions could not be read on the measured server: the check's failure, worded.
    Unread(String),
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

/// What went wrong on the scratch server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trouble {
    /// The server's (or the throwaway server's, or the network's) own words.
    Said(String),
    /// Preparing the copy (roles, schema) failed: the server's words.
    Preparing(String),
    /// The scratch server failed underneath: its words.
    Lost(String),
    /// Recording a definition it could not take failed: the server's words.
    Recording(String),
    /// Reading back what it could not take failed: the server's words.
    ReadingFailures(String),
    /// No answer within this long.
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
    PreparedNotListed,
}

impl Default for Mode {
    fn default() -> Self {
        Mode::Off(Off::NotAsked)
    }
}
