//! plancheck makes one planner decision a test: that each read path, in each scope, still uses
//! the index it needs. The stages, in the order data flows through them:
//!
//! `cli` → `project` → `db` → [`measure::Measurement`] → `verdict` (over `plan`) → `report`
//!
//! `cli` parses the command line and merges it with the environment once
//! ([`cli::settings`]). `project` reads the files people write into the checks to run. `db`
//! runs each check in its own bounded, read-only, rolled-back transaction and returns a
//! measurement: plain data (the EXPLAIN documents read into the plan model, re-plans, catalog
//! facts), no verdict; where the measured plans leave open whether an index can serve a read
//! path, `db::scratch` re-plans it on a schema-only copy on a throwaway local server
//! (`server`), and the measurement holds that plan too. `plan` is the typed EXPLAIN model and
//! the plan analysis both sides call (`plan::replans`: which re-plans a check needs). `verdict`
//! is pure: a measurement and what the expectation requires in, the check's result out, and
//! the judgements across checks. `report` renders every kind of output. `saved` writes and
//! reads measurements, so `plancheck judge` re-judges a run with no database. `app` holds one
//! file per command and orchestrates; `error` maps every failure to its exit status; `term` is
//! what is said on stderr along the way; `secrets` hides what must never be printed or written
//! (the connection's password) from every text that leaves the process. `capture` runs the other way: it reads a server's
//! statement log (with the one SQL lexer, `sql`) into the files `project` reads, planning each
//! statement through `db` as `check` does. ARCHITECTURE.md says where a new piece goes.

pub mod app;
pub mod capture;
pub mod cli;
pub mod db;
pub mod error;
pub mod exit_codes;
pub mod files;
pub mod lint;
pub mod machine;
pub mod measure;
pub mod model;
pub mod plan;
pub mod project;
pub mod report;
pub mod saved;
pub mod secrets;
pub mod server;
pub mod sql;
pub mod stats;
pub mod stop;
mod term;
pub mod verdict;

pub use app::{DEMO_SCALE, RunOptions, main_with, run_checks, status};
