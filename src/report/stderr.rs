//! Every sentence plancheck says on stderr along the way (warnings, notes, what a command did),
//! worded here so that the commands only decide when to say them.

use std::path::Path;

use crate::db::role::RoleRisk;
use crate::verdict::Verdict;

/// What a command was asking of the server, for the failure or the time-out of that step to
/// say (`could not read the catalog: …`).
pub mod asking {
    pub const SESSION_TIMEOUTS: &str = "could not set the session's timeouts";
    pub const SERVER_VERSION: &str = "could not read the server's version";
    pub const SERVER_VERSION_NUMBER: &str = "could not read the server's version number";
    pub const ROLE_RIGHTS: &str = "could not read the role's rights";
    pub const ALLOWED_SEQ_SCANS: &str = "could not look up the relations allowed a seq scan";
    pub const TAKES_WRITES: &str = "could not read whether the server takes writes";
    pub const SERVER_SETTINGS: &str = "could not read the server's settings";
    pub const TEMP_FILE_LIMIT: &str = "could not read temp_file_limit";
    pub const TRACK_COUNTS: &str = "could not read track_counts";
    pub const FREE_SLOTS: &str = "could not read the free connection slots";
    pub const INDEX_DEFINITIONS: &str = "could not read the indexes' definitions";
    pub const CATALOG: &str = "could not read the catalog";
    pub const PARTITIONS: &str = "could not read the partitions";
}

/// The progress line's prefix for the checks after a migration.
pub const AFTER_MIGRATION: &str = "after the migration: ";

/// Why a check after a migration did not run.
pub const MIGRATION_SESSION_LOST: &str =
    "not run: the migration's session was lost before this check";

/// The process could not start its async runtime.
pub fn no_runtime(why: &dyn std::fmt::Display) -> String {
    format!("error: cannot start the async runtime: {why}")
}

/// The process could not install its signal handlers.
pub const NO_SIGNAL_HANDLERS: &str = "error: cannot install the signal handlers";

/// A step of [`asking`] that failed, with the server's (or the driver's) own words.
pub fn asked(asking: &str, cause: &str) -> String {
    format!("{asking}: {cause}")
}

/// `capture --scope` given a name no scope may have.
pub fn bad_scope_name(scope: &str) -> String {
    format!("--scope {scope}: a scope name holds letters, digits, `-`, `_` and `.` (not first)")
}

/// Why `capture` skips a read path its files would not load as.
pub fn would_not_run(why: &str) -> String {
    format!("plancheck would not run it: {why}")
}

/// `--log-line-prefix` that cannot be read.
pub fn bad_log_line_prefix(why: &dyn std::fmt::Display) -> String {
    format!("--log-line-prefix: {why}")
}

/// A shell `completions` has no script for.
pub fn no_completion_script(shell: &str) -> String {
    format!("no completion script for {shell}")
}

/// The completion script that could not be written.
pub fn completion_script_unwritten(why: &dyn std::fmt::Display) -> String {
    format!("could not write the completion script: {why}")
}

/// The report that could not be written on stdout.
pub fn report_unwritten(why: &dyn std::fmt::Display) -> String {
    format!("cannot write the report: {why}")
}

/// `$GITHUB_STEP_SUMMARY` that could not be appended to.
pub fn summary_unwritten(path: &Path, why: &dyn std::fmt::Display) -> String {
    format!(
        "cannot append the summary to $GITHUB_STEP_SUMMARY ({}): {why}",
        path.display()
    )
}

/// A `--report FORMAT=FILE` that could not be written.
/// `capture`'s live line while it reads a log: how far, how many statements, read paths.
pub fn capture_reading(
    path: &Path,
    read: u64,
    size: u64,
    statements: usize,
    read_paths: Option<usize>,
) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let paths = match read_paths {
        Some(1) => ", 1 read path".to_string(),
        Some(n) => format!(", {} read paths", crate::verdict::group(n as f64)),
        None => String::new(),
    };
    format!(
        "reading {name}: {:.0} of {:.0} MB, {} statements{paths}",
        mb(read),
        mb(size.max(read)),
        crate::verdict::group(statements as f64),
    )
}

/// `demo --chart FILE` could not be written.
pub fn chart_unwritten(path: &Path, why: &dyn std::fmt::Display) -> String {
    format!("--chart {}: {why}", path.display())
}

pub fn report_file_unwritten(format: &str, path: &Path, why: &dyn std::fmt::Display) -> String {
    format!("--report {format}={}: {why}", path.display())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The role's rights that reach outside the rolled-back transaction, in one warning: which
/// rights, and what to do, wrapped to `width` under its label. What each right lets SQL do is
/// in every report (`role_warnings` in the JSON, the annotations, JUnit, Markdown).
pub fn role_rights(role: &str, risks: &[RoleRisk], width: usize) -> String {
    let rights: Vec<String> = risks.iter().map(|r| r.right.clone()).collect();
    let text = format!(
        "role {role} has {}: the project's SQL can act outside the rolled-back transaction; \
         connect as a least-privilege role, or add --strict-role to refuse it",
        and_list(&rights)
    );
    super::wrap::labelled("warning:", &text, 0, width)
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `--strict-role`'s refusal.
pub fn strict_role_refusal(role: &str, risks: &[RoleRisk]) -> String {
    let rights: Vec<&str> = risks.iter().map(|r| r.right.as_str()).collect();
    format!(
        "--strict-role: role {role} has rights that reach outside the rolled-back transaction \
         ({}); connect as a least-privilege role (see \"The role is part of the threat model\" in plancheck's documentation)",
        rights.join(", ")
    )
}

/// `--strict-role` refusing a check whose reader read past the row-level security policies of
/// a table its plans read (`expectation`: the file its scope is written in).
pub fn strict_role_past_policies(c: &crate::verdict::CheckResult, expectation: &str) -> String {
    let past = super::past_policies(c).unwrap_or_default();
    format!(
        "--strict-role: {} ({expectation}, scope `{}`) {past}; no check starts after it and no \
         report is written: the reader a scope's setup switches to must be one the policies \
         apply to (see \"Row-level security scopes\" in plancheck's documentation)",
        super::check_name(c),
        c.scope
    )
}

/// An `allow_seq_scan` entry that names no relation in the database (located by the caller).
pub fn unknown_allowed(entry: &str) -> String {
    format!(
        "allow_seq_scan names `{entry}`, which is no relation in the database: it allows nothing (a typo?)"
    )
}

/// Why the checks run one at a time.
pub fn one_at_a_time(migration: bool) -> &'static str {
    if migration {
        "with --migration the checks run one at a time, in one session (its locks would collide \
         across sessions)"
    } else {
        "with --replan-without-rivals the checks run one at a time (its DROP would wait for the \
         other checks' locks)"
    }
}

/// `--jobs` given where the checks run one at a time.
pub fn jobs_not_used(why: &str) -> String {
    format!("note: {why}: --jobs is not used")
}

/// `--jobs` lowered to what the server's free connection slots allow.
pub fn jobs_capped(wanted: usize, free: usize, allowed: usize) -> String {
    format!(
        "note: --jobs {wanted} would take too many of the server's {free} free connection slots: \
         running {allowed} at a time, leaving {} to the application",
        free.saturating_sub(allowed)
    )
}

/// `ladder --pool` cut to leave the application room.
pub fn pool_capped(wanted: usize, free: usize, allowed: usize) -> String {
    format!(
        "note: --pool {wanted} would take too many of the server's {free} free connection slots: \
         a pool of {allowed}, leaving {} to the application",
        free.saturating_sub(allowed)
    )
}

/// `--replan-without-rivals` on a server that takes no DDL.
pub fn no_replan_without_rivals(standby: bool) -> String {
    format!(
        "--replan-without-rivals drops indexes in a transaction it rolls back, and this server is \
         {}: run without it, or against a database that is yours",
        if standby {
            "a standby (in recovery)"
        } else {
            "read-only by default (default_transaction_read_only = on)"
        }
    )
}

/// A sequence that moved while the migration was applied.
pub fn sequence_moved(name: &str, before: Option<i64>, now: Option<i64>) -> String {
    let show = |v: Option<i64>| v.map_or("unused".to_string(), |v| v.to_string());
    format!(
        "warning: sequence {name} moved from {} to {} during the run (a migration's INSERT or \
         nextval takes values a rollback does not give back)",
        show(before),
        show(now)
    )
}

/// `accept`: a check whose plan could not be recorded.
/// Where the role may not set `temp_file_limit` and the server has none.
pub const TEMP_FILES_UNBOUNDED: &str = "the role may not set temp_file_limit (only a superuser, \
     or from PostgreSQL 15 a role granted SET on it) and the server has none, so --temp-file-limit \
     is not applied: a read path's sort or hash may write temporary files on the database \
     server's disk, as much as it can write before --statement-timeout, and a full disk stops the server for every session, the application's included; ask the \
     administrator to set one for the role (ALTER ROLE … SET temp_file_limit = '1GB'), or run \
     with --strict-role to refuse such a role";

/// `--strict-role` refusing a role whose temporary files nothing bounds.
pub const STRICT_ROLE_TEMP_FILES: &str = "--strict-role: the role may not set temp_file_limit \
     (only a superuser, or from PostgreSQL 15 a role granted SET on it) and the server has none, \
     so nothing bounds the temporary files a read path's sort or hash writes on the database \
     server's disk until its statement ends; ask the administrator to set one for the role \
     (ALTER ROLE … SET temp_file_limit = '1GB')";

/// `plancheck ladder` with no check to load.
pub const LADDER_NOTHING: &str = "no read path to put under load (none selected)";
/// No check gives a `share`.
pub const LADDER_EVEN: &str = "no expectation gives a `share`, so every read path and scope has \
     the same share of the requests";
pub const LADDER_NO_INTERVAL: &str = "--interval must be longer than 0 with --members";

pub fn ladder_shares_over(total: f64) -> String {
    format!(
        "the expectations' `share`s add up to {total:.3}, over 1: a share is the part of the \
         requests a read path takes (0.38 is 38%)"
    )
}

/// What the mix left out or scaled, when it did.
pub fn ladder_mix(total: f64, left_out: &[String]) -> Option<String> {
    let mut parts = Vec::new();
    if (total - 1.0).abs() > 1e-9 {
        parts.push(format!(
            "the shares add up to {total:.3}; each is taken as its part of that"
        ));
    }
    if !left_out.is_empty() {
        parts.push(format!(
            "not in the mix (no `share`): {}",
            left_out.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

pub fn ladder_bad_rate(rate: f64) -> String {
    format!("a rung of {rate} requests a second: a rate must be above 0")
}

pub fn ladder_over_max_rate(rate: f64, max: f64) -> String {
    format!(
        "a rung of {rate} requests a second is over --max-rate {max}: raise --max-rate if the \
         server may take it"
    )
}

/// The progress line as a rung starts.
pub fn ladder_rung(n: usize, of: usize, asked: &crate::verdict::ladder::Asked) -> String {
    let what = match asked.members {
        Some(m) => format!(
            "{} members ({:.1}/s)",
            crate::verdict::group(m as f64),
            asked.rate
        ),
        None => format!("{:.1}/s", asked.rate),
    };
    format!("rung {n}/{of}: {what} …")
}

/// The end of a rung's progress line.
pub fn ladder_rung_done(r: &crate::verdict::ladder::RungResult) -> String {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
    format!(
        " served {:.1}/s, p95 {}, late p95 {}{}{}",
        r.served,
        ms(r.figures.p95_ms),
        ms(r.figures.late_p95_ms),
        if r.errors > 0 {
            format!(", {} errors", r.errors)
        } else {
            String::new()
        },
        if r.partial.is_some() {
            " (partial)"
        } else {
            ""
        }
    )
}

/// A warning about one check, said as the run goes.
pub fn check_warning(read_path: &str, scope: &str, what: &str) -> String {
    format!("warning: {read_path} [{scope}]: {what}")
}

pub fn not_recorded(read_path: &str, scope: &str, why: &str) -> String {
    format!("{read_path} [{scope}]: not recorded: {why}")
}

/// `accept`: a check recorded although it does not pass today.
pub fn recorded_anyway(read_path: &str, scope: &str, verdict: Verdict) -> String {
    format!("warning: {read_path} [{scope}] is {verdict} today; its plan is recorded all the same")
}

/// `accept`: what it recorded, where.
pub fn recorded(count: usize, dir: &Path) -> String {
    format!(
        "recorded {count} plan baseline{} in {}",
        plural(count),
        dir.display()
    )
}

/// `capture`: statements left out for their size.
pub fn left_out_oversized(count: usize, cap_mib: usize) -> String {
    format!(
        "warning: left out {count} logged statement{} over {cap_mib} MiB (text and parameters of \
         one log record), plancheck's cap on one statement",
        plural(count)
    )
}

/// `capture`: what to do with what it wrote.
pub fn review_captured(project: &Path) -> String {
    format!(
        "review the files, then: plancheck check --project {}",
        project.display()
    )
}

/// `demo`: the throwaway server is up.
pub fn demo_started(origin: &str) -> String {
    format!("started {origin} (removed when done)")
}

/// `demo`: the board comes from the cache.
pub fn demo_cached_board(scale: f64, path: &Path) -> String {
    format!(
        "using the cached board (scale {scale}, {}; --fresh rebuilds it)",
        path.display()
    )
}

/// `demo`: the board is built, kept for next time or not (and why).
pub fn demo_building(cached: bool, not_cached: Option<&str>) -> Option<String> {
    match (cached, not_cached) {
        (true, _) => Some("building the board (cached for next time)".into()),
        (false, Some(why)) => Some(format!("building the board (not cached: {why})")),
        (false, None) => None,
    }
}

/// `init`: a file written.
pub fn wrote(path: &Path) -> String {
    format!("wrote {}", path.display())
}

/// `init`: what to do next.
pub fn init_next(dir: &str) -> String {
    format!(
        "next: plancheck check --project {dir} --database-url URL (the example passes on any \
         database), then replace the example with your read paths"
    )
}

/// The first Ctrl-C or SIGTERM, and a second one.
pub fn stopping(terminated: bool) -> &'static str {
    if terminated {
        "terminated: stopping after the running check"
    } else {
        "interrupted: stopping after the running check (Ctrl-C again to stop now)"
    }
}

/// A second Ctrl-C.
pub const STOPPING_NOW: &str = "interrupted again: stopping now";

/// The error a command ended with.
pub fn error(e: &dyn std::fmt::Display) -> String {
    format!("error: {e}")
}

/// The connection's password is too short for plancheck to hide ([`crate::secrets::SHORTEST`]).
pub fn password_too_short() -> String {
    format!(
        "warning: the connection's password is shorter than {} characters: plancheck cannot \
         hide it in what a server says (hiding every match of so short a text would garble the \
         report and show the password by what it blanks); give CI a longer one",
        crate::secrets::SHORTEST
    )
}

/// `--stats` beside `--no-scratch`.
pub fn stats_without_scratch() -> String {
    "--stats plans each check on the scratch copy, and --no-scratch turns the copy off: give one \
     of them"
        .to_string()
}

/// A statistics file of another major version than the measured server's.
pub fn stats_of_another_major(path: &std::path::Path, file: u32, server: u32) -> String {
    format!(
        "{}: exported from PostgreSQL {file}, and the measured server is PostgreSQL {server}: a \
         plan at production's statistics is only production's on production's major version \
         (export the file again from a server of version {server}, or check against one of \
         version {file})",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use crate::db::role::RoleRisk;

    #[test]
    fn the_role_warning_is_one_short_warning_wrapped_to_the_width() {
        // Regression: two lines of 270 and 180 columns, whatever the terminal.
        let risk = |right: &str| RoleRisk {
            right: right.into(),
            what: "what SQL could do with it, a long sentence the reports carry".into(),
        };
        let text = super::role_rights("postgres", &[risk("superuser")], 80);
        assert_eq!(
            text,
            "warning: role postgres has superuser: the project's SQL can act outside the\n         \
             rolled-back transaction; connect as a least-privilege role, or add\n         \
             --strict-role to refuse it"
        );
        assert!(!text.contains("what SQL could do"), "{text}");
        let text = super::role_rights(
            "app",
            &[
                risk("pg_signal_backend"),
                risk("dblink"),
                risk("postgres_fdw"),
            ],
            200,
        );
        assert!(
            text.starts_with("warning: role app has pg_signal_backend, dblink and postgres_fdw: "),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    #[test]
    fn capture_reading_says_how_far_and_read_paths_only_when_known() {
        let path = std::path::Path::new("/var/log/postgresql/pg.csv");
        assert_eq!(
            super::capture_reading(path, 120_000_000, 450_000_000, 200_000, Some(3)),
            "reading pg.csv: 120 of 450 MB, 200,000 statements, 3 read paths"
        );
        assert_eq!(
            super::capture_reading(path, 1, 450_000_000, 1, Some(1)),
            "reading pg.csv: 0 of 450 MB, 1 statements, 1 read path"
        );
        assert_eq!(
            super::capture_reading(path, 9_000_000, 450_000_000, 4_096, None),
            "reading pg.csv: 9 of 450 MB, 4,096 statements"
        );
    }
}
