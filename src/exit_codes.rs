//! Exit statuses, in one place (documented in the README).

/// Every check passed.
pub const PASS: i32 = 0;
/// At least one check did not pass (a failing verdict or an `error` from the read path's SQL).
pub const CHECK_FAILED: i32 = 1;
/// Bad input: a config, expectation or plan file, or an argument.
pub const BAD_INPUT: i32 = 2;
/// The database could not be reached or failed underneath (including a lost connection).
pub const DATABASE: i32 = 3;
/// Output could not be written: the report on stdout, a `--save-plans` file.
pub const OUTPUT: i32 = 4;
/// Nothing failed, but a verdict the data decides rests on statistics that do not exist: a
/// relation the plan reads was never analysed (`no-statistics`; `--unanalysed judge` judges it
/// at the planner's guesses instead).
pub const NO_STATISTICS: i32 = 5;
/// Interrupted by Ctrl-C.
pub const INTERRUPTED: i32 = 130;
/// Terminated (SIGTERM), as a CI runner cancelling a job does.
pub const TERMINATED: i32 = 143;
