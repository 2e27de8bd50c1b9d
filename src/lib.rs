//! plancheck makes one planner decision a test: that each read path, in each scope, still uses
//! the index it needs. The stages, in the order data flows through them:
//!
//! `cli` → `project` → `db` → [`measure::Measurement`] → `verdict` (over `explain`) → `report`
//!
//! `project` reads the files people write into the checks to run. `db` runs each check in its
//! own bounded, read-only, rolled-back transaction and returns a measurement: plain data (the
//! EXPLAIN documents, re-plans, catalog facts), no verdict; where the measured plans leave open
//! whether an index can serve a read path, `db::scratch` re-plans it on a schema-only copy on a
//! throwaway local server, and the measurement holds that plan too. Which re-plans a check needs
//! is `verdict::replans`, called by both sides. `verdict` is pure: a measurement and what the
//! expectation requires in, the check's result out. `report` renders every kind of
//! output. `saved` writes and reads measurements, so `plancheck judge` re-judges a run with no
//! database. `app` holds one file per command and maps failures to exit statuses; `term` is what
//! is said on stderr along the way. `capture` runs the other way: it reads a server's statement
//! log into the files `project` reads, planning each statement through `db` as `check` does.

pub mod app;
pub mod capture;
pub mod cli;
pub mod db;
pub mod errors;
pub mod exit_codes;
pub mod explain;
pub mod files;
pub mod lint;
pub mod measure;
pub mod migration;
pub mod model;
pub mod project;
pub mod report;
pub mod safety;
pub mod saved;
pub mod sql;
pub mod stop;
mod term;
pub mod verdict;

pub use app::{DEMO_SCALE, RunOptions, main_with, run_checks, status};
