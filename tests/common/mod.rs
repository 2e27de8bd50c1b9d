//! Shared by the integration tests, so that each test file says only what it tests:
//!
//! - [`server`]: one throwaway PostgreSQL per test binary (from the same local server binaries
//!   `plancheck demo` uses; `PLANCHECK_PG_BIN` picks the version), the reference board loaded
//!   once into a template database and a fresh copy of it per test, so a test that drops an
//!   index harms no other; and SQL from a second session of the test's own.
//! - [`production`]: `check --stats` compared with the loaded database it predicts.
//! - [`project`]: project folders written into temporary folders, and the reference project.
//! - [`roles`]: the README's least-privilege roles on a test's own board.
//! - [`run`]: the real binary, run to the end (killed if it hangs) or spawned, and its JSON.
//! - [`wait`]: polling for a condition with a deadline, never a fixed sleep; plancheck's
//!   sessions as the server sees them.

#![allow(dead_code, unused_imports)]

pub mod production;
pub mod project;
pub mod roles;
pub mod run;
pub mod server;
pub mod wait;

pub use production::*;
pub use project::*;
pub use roles::*;
pub use run::*;
pub use server::*;
pub use wait::*;
