//! The failures `db` raises as data ([`Unanswered`]: what was asked, the server's own words),
//! worded here.

use std::time::Duration;

use crate::db::check::{Said, Why};
use crate::db::guard::Change;
use crate::db::{Asked, Unanswered};
use crate::error::{DatabaseFailure, Spot};
use crate::measure::Failure;
use crate::project::Place;
use crate::report::stderr::asking;

/// What was asked, as a failure to answer it says it.
fn asked(asked: &Asked) -> String {
    let text = match asked {
        Asked::ServerVersionNum => "could not read server_version_num",
        Asked::ServerVersion => "could not read server_version",
        Asked::ServerSettings => asking::SERVER_SETTINGS,
        Asked::Catalog => asking::CATALOG,
        Asked::FreeSlots => asking::FREE_SLOTS,
        Asked::ServerState => "could not read the server's state",
        Asked::RoleRights => "could not read the connecting role's rights",
        Asked::BeginMigration => "could not begin the migration's transaction",
        Asked::ListTables => "could not list the tables",
        Asked::CreateExecutor => {
            "could not create the temporary function that applies the migration (the role needs \
             TEMPORARY on the database and PL/pgSQL)"
        }
        Asked::SessionSettings => "could not read the session's settings",
        Asked::ReadExecutor => "could not read the temporary function that applies the migration",
        Asked::Sequences => "could not read the sequences",
        Asked::RequiredIndexes => "could not read the required indexes",
        Asked::ReadOnlyMigrated => "could not make the migrated transaction read-only",
        Asked::RestoreSession => "could not put the session back as it was before the migration",
        Asked::SessionSettingsAndSequences => "could not read the session's settings and sequences",
        Asked::MigrationChanges => "could not list what the migration changed",
        Asked::Analyze(table) => return format!("could not ANALYZE {table}"),
        Asked::StartLoad => "could not start the load",
        Asked::SessionTimeouts => asking::SESSION_TIMEOUTS,
        Asked::TempFileLimit => asking::TEMP_FILE_LIMIT,
        Asked::CalledFunctions => "could not read the functions the read path calls",
        Asked::BeginCheck => "could not start the check's transaction",
        Asked::ParseReadPath => "could not parse the read path",
        Asked::PreparedStatements => "could not read the prepared statements",
        Asked::Volatility => "could not read function volatility",
        Asked::PlanCacheMode => "could not set plan_cache_mode (PostgreSQL 12 or later is needed)",
        Asked::Replan => "re-planning to test the index",
        Asked::LookUpIndex(name) => return format!("could not look up index {name}"),
        Asked::ListIndexes => "could not list the indexes",
        Asked::Partitions(name) => return format!("could not read the partitions of {name}"),
        Asked::OtherIndexes(table) => {
            return format!("could not read the other indexes on {table}");
        }
        Asked::Columns(table) => return format!("could not read the columns of {table}"),
        Asked::RelationStatistics => "could not read relation statistics",
        Asked::RowSecurity => "could not read whether row-level security applies to the reader",
        Asked::TrackCounts => asking::TRACK_COUNTS,
        Asked::ReadCounts => "could not read PostgreSQL's counts of what the runs read",
        Asked::ScratchDefinitions => "reading definitions for the scratch copy",
        Asked::ScratchNames => "reading what the read path names, for the scratch copy",
        Asked::ScratchSearchPath => "reading the search path, for the scratch copy",
        Asked::ScratchIndexes => "reading the asked indexes, for the scratch copy",
        Asked::ScratchRls => "reading the role's row-level security, for the scratch copy",
        Asked::ScratchPlannerSettings => "reading the planner's settings, for the scratch copy",
        Asked::BeginReplan => "could not start the re-plan's transaction",
        Asked::ReplanSettings => "applying the scope's settings for the re-plan",
        Asked::RollbackReplan => "rolling the re-plan back",
        Asked::RivalAside => "reading how to set a rival index aside",
        Asked::SetRivalAside { index, statement } => {
            return format!("--replan-without-rivals: setting {index} aside ({statement})");
        }
        Asked::BeginExport => "could not start the export's read-only transaction",
        Asked::RollbackExport => "could not end the export's transaction",
        Asked::ExportTables => "could not list the tables to export",
        Asked::ExportSizes => "could not read the tables' sizes (pg_class, pg_relation_size)",
        Asked::ExportIndexes => "could not read the indexes (pg_index)",
        Asked::ExportColumns => "could not read the columns' statistics (pg_stats)",
        Asked::ExportExtended => "could not read the extended statistics (pg_stats_ext)",
        Asked::ExportHeights => "could not read a B-tree's height (pageinspect's bt_metap)",
        Asked::ExportEnds => "could not read an index's lowest and highest keys",
        Asked::ReadPath(plan) => plan,
        Asked::SetupStatement { scope, n } => {
            return format!("scope `{scope}` setup statement {n}");
        }
        Asked::ScopeSetting {
            file,
            scope,
            name,
            value,
        } => return format!("{file}: scope `{scope}`: setting `{name} = {value}`"),
        Asked::ParameterValues { file, scope } => {
            return format!("{file}: scope `{scope}`: the parameter values");
        }
    };
    text.to_string()
}

/// What the server said, after what was asked.
fn said(said: &Said) -> String {
    match said {
        Said::StatementTimeout(limit) => format!(
            "timed out: statement_timeout ({} ms) reached",
            limit.as_millis()
        ),
        Said::LockTimeout(limit) => format!(
            "timed out waiting for a lock: lock_timeout ({} ms) reached",
            limit.as_millis()
        ),
        Said::ReadOnly(cause) => {
            format!("{cause} (a read path must not write; nothing was written)")
        }
        Said::Error {
            message,
            detail: Some(detail),
        } => format!("{message} ({detail})"),
        Said::Error {
            message,
            detail: None,
        } => message.clone(),
        Said::Other(cause) => cause.clone(),
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| match v {
            Some(v) => format!("`{v}`"),
            None => "unset".to_string(),
        };
        match self {
            Change::EndedTransaction => {
                f.write_str("ended the check's transaction (a new one runs in its place)")
            }
            Change::Setting { name, was, is } => {
                write!(f, "changed `{name}` from {} to {}", show(was), show(is))
            }
            Change::Lock(lock) => write!(f, "took a lock beyond reading ({lock})"),
        }
    }
}

/// A read made before or between checks (`what`, as [`asked`] says it) that got no answer
/// within `limit`.
pub fn not_within(what: &str, limit: Duration) -> String {
    format!(
        "{what}: the server did not answer within {} ms (--statement-timeout and a grace)",
        limit.as_millis()
    )
}

/// Why a read path is left unlinted: reading its index `name` timed out (the server's words).
pub fn unlinted(name: &str, cause: &str) -> String {
    format!("could not be linted: reading index {name} timed out ({cause})")
}

/// Why `--replan-without-rivals` was not applied to a check: its scope's setup runs
/// `statement`, which runs only in a read-only transaction.
pub fn rivals_not_set_aside(statement: &str) -> String {
    format!(
        "--replan-without-rivals was not applied: the scope's setup runs `{statement}`, and \
         plancheck runs a setup's SELECT only in a read-only transaction"
    )
}

/// The words every message about a session given up ends with.
const GAVE_UP: &str = "plancheck gave the session up";

/// What a session that stopped answering within `limit` is reported as.
pub fn hung(limit: Duration) -> String {
    format!(
        "the server did not answer within {} ms (--statement-timeout and a grace), and not \
         after a cancel request either: {GAVE_UP}",
        limit.as_millis()
    )
}

/// Why a check after a migration was not run: the migration's locks had been held for `limit`
/// (`--migration-hold`), reached while it was applied (`applying`) or during the checks after it.
pub fn hold_reached(limit: Duration, applying: bool) -> String {
    let when = if applying {
        "while the migration was being applied"
    } else {
        "during the checks after it"
    };
    format!(
        "not run after the migration: its locks had been held for --migration-hold ({}), \
         reached {when}, so its transaction was rolled back to let the application's sessions \
         through; nothing after the migration is known for this check (a longer \
         --migration-hold, or fewer checks with --only, lets it run)",
        duration(limit)
    )
}

/// A bound as a user writes it: `30 s`, `1.5 s`, `500 ms`.
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// What is added to a given-up check's failure when its server process `pid` outlived the
/// cancel request and `pg_terminate_backend`.
pub fn outlived(pid: i32) -> String {
    format!(
        "its server process (pid {pid}) outlived the cancel request and pg_terminate_backend: \
         it runs on in the server, with its locks, until the function it is in returns; only \
         the server's administrator can end it sooner (a SIGKILL of pid {pid} restarts the \
         whole server)"
    )
}

/// `message` located at `place` (with the line shown) and where that is; or, with no place,
/// after the name of the file that gives it.
fn placed(place: Option<&Place>, file: &str, message: &str) -> (String, Option<Spot>) {
    match place {
        Some(p) => (p.locate(message), Some(p.spot())),
        None => (format!("{file}: {message}"), None),
    }
}

impl From<Why> for Failure {
    // Long because it is the words of every `Why`, an arm each: a table, read down.
    fn from(why: Why) -> Failure {
        let lost = why.lost();
        let gave_up = matches!(why, Why::Hung(_));
        let (message, at) = match why {
            Why::Failed { asked: a, said: s } => (format!("{}: {}", asked(&a), said(&s)), None),
            Why::Lost { asked: a, cause } => (
                format!("{}: the connection was lost: {cause}", asked(&a)),
                None,
            ),
            Why::Hung(limit) => (hung(limit), None),
            Why::Interrupted => (
                "interrupted: the running statement was cancelled and the check's transaction \
                 rolled back"
                    .to_string(),
                None,
            ),
            Why::MigrationSessionLost => (
                "the migration's session was lost after this check".to_string(),
                None,
            ),
            Why::HoldReached { limit, applying } => (hold_reached(limit, applying), None),
            Why::NoMeasuredRun => ("no measured run (--iterations 0?)".to_string(), None),
            Why::PreparedNotListed => (
                "the server does not list the read path's prepared statement".to_string(),
                None,
            ),
            Why::NoExplainJson => ("EXPLAIN returned no JSON document".to_string(), None),
            Why::PlanTooLarge { bytes, cap } => (
                format!(
                    "the EXPLAIN document is {:.1} MiB ({bytes} bytes), over plancheck's cap of \
                     {} MiB on one plan document; it was not read",
                    bytes as f64 / f64::from(1 << 20),
                    cap >> 20
                ),
                None,
            ),
            Why::PlanUnreadable(words) => (words, None),
            Why::NoRlsAnswer => (
                "reading the role's row-level security: no answer".to_string(),
                None,
            ),
            Why::DependenciesUnended(rounds) => (
                format!(
                    "reading definitions for the scratch copy: the dependencies did not end in \
                     {rounds} rounds"
                ),
                None,
            ),
            Why::RivalGone { schema, index } => (
                format!("--replan-without-rivals: index {schema}.{index} is gone"),
                None,
            ),
            Why::SetupFailed {
                scope,
                n,
                said: s,
                place,
                file,
            } => placed(
                place.as_ref(),
                &file,
                &format!("scope `{scope}` setup statement {n} failed: {}", said(&s)),
            ),
            Why::SetupChanged {
                scope,
                n,
                what,
                place,
                file,
            } => placed(
                place.as_ref(),
                &file,
                &format!(
                    "scope `{scope}` setup statement {n} {what}, which a project's files may not \
                     do; the check was stopped before its read path ran"
                ),
            ),
            Why::RunChanged { plan, what } => (
                format!(
                    "{plan}: a run of the read path {what} (through a function it calls), which \
                     a read path may not do; the check was stopped"
                ),
                None,
            ),
            Why::NestedWrite {
                write,
                scope,
                place,
            } => placed(
                Some(&place),
                "",
                &format!(
                    "the read path writes: {write} inside WITH, which its read-only transaction \
                     refused (scope `{scope}`); a read path must not write, and nothing was \
                     written"
                ),
            ),
            Why::ParameterValue {
                scope,
                said: s,
                place,
            } => placed(
                Some(&place),
                "",
                &format!("scope `{scope}`: parameter value: {}", said(&s)),
            ),
            Why::ReadPathFailed {
                scope,
                said: s,
                place,
            } => placed(Some(&place), "", &format!("{} (scope `{scope}`)", said(&s))),
        };
        Failure {
            message,
            connection_lost: lost,
            at,
            gave_up,
        }
    }
}

impl From<Unanswered> for DatabaseFailure {
    fn from(u: Unanswered) -> DatabaseFailure {
        DatabaseFailure(format!("{}: {}", asked(&u.asked), u.cause))
    }
}

impl From<Unanswered> for crate::error::Error {
    fn from(u: Unanswered) -> crate::error::Error {
        DatabaseFailure::from(u).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_said_as_a_user_writes_them() {
        assert_eq!(duration(Duration::from_millis(500)), "500 ms");
        assert_eq!(duration(Duration::from_secs(30)), "30 s");
        assert_eq!(duration(Duration::from_millis(2013)), "2.0 s");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5 s");
    }

    #[test]
    fn a_check_not_run_at_the_hold_says_the_bound_and_when_it_came() {
        let f = Failure::from(Why::HoldReached {
            limit: Duration::from_secs(2),
            applying: false,
        });
        assert!(!f.connection_lost);
        assert!(
            f.message
                .contains("--migration-hold (2 s), reached during the checks after it")
        );
        let f = Failure::from(Why::HoldReached {
            limit: Duration::from_secs(2),
            applying: true,
        });
        assert!(f.message.contains("while the migration was being applied"));
    }

    #[test]
    fn a_failure_to_answer_says_what_was_asked_and_the_servers_words() {
        let u = Unanswered {
            asked: Asked::Catalog,
            cause: "permission denied for table pg_class".into(),
        };
        assert_eq!(
            DatabaseFailure::from(u).0,
            "could not read the catalog: permission denied for table pg_class"
        );
    }
}
