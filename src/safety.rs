//! safety: what a project's files may not change, as pure rules on setting names. Shared by the
//! vetting of setup statements and migrations (before anything runs), by the declared
//! `settings` tables, and by the guard that re-reads the settings between statements.
//!
//! Project files come from pull requests and run on a shared database, so the bounds plancheck
//! sets (timeouts), the transaction's read-only mode, and the planner's settings are plancheck's
//! alone: a setup statement that turned `enable_seqscan` off would turn a `not-chosen` into a
//! `pass`, one that lifted `statement_timeout` would let a read path run for ever.

/// Why a setting is not a project file's to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protected {
    /// A bound plancheck sets: `statement_timeout`, `lock_timeout`, ….
    Bound,
    /// The transaction's read-only mode.
    ReadOnly,
    /// A setting the planner reads: `enable_*`, `*_cost`, `plan_cache_mode`, ….
    Planner,
    /// How the server decodes the text plancheck sends (`client_encoding`): plancheck reads
    /// SQL as UTF-8, and a server decoding it otherwise could read a quote where plancheck
    /// read part of a character.
    Encoding,
}

/// The bounds plancheck sets on every session, and the one it leaves as the server has it but
/// that a file must not lift either.
pub const BOUNDS: [&str; 4] = [
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "transaction_timeout",
];

/// The settings that make a transaction read-only.
pub const READ_ONLY: [&str; 2] = ["transaction_read_only", "default_transaction_read_only"];

/// Planner settings outside PostgreSQL's "Query Tuning" categories (whose members the guard reads
/// from the server) that still change what plan is chosen.
const PLANNER_EXTRA: [&str; 7] = [
    "work_mem",
    "hash_mem_multiplier",
    "max_parallel_workers_per_gather",
    "max_parallel_workers",
    "parallel_leader_participation",
    "effective_io_concurrency",
    "default_statistics_target",
];

/// Settings a scope's setup may change (that is what it is for) but a read path, once the setup
/// ran, may not: the same SQL must mean the same thing in every run.
pub const SESSION: [&str; 3] = ["search_path", "role", "session_authorization"];

/// Why `name` (as the server stores it: lower case) is not a file's to change; `None` when it
/// may be changed.
pub fn protected(name: &str) -> Option<Protected> {
    let name = name.to_ascii_lowercase();
    if BOUNDS.contains(&name.as_str()) {
        return Some(Protected::Bound);
    }
    if READ_ONLY.contains(&name.as_str()) {
        return Some(Protected::ReadOnly);
    }
    if name == "client_encoding" {
        return Some(Protected::Encoding);
    }
    let planner = name.starts_with("enable_")
        || name.ends_with("_cost")
        || name.starts_with("geqo")
        || name.starts_with("jit")
        || name.starts_with("parallel_")
        || name.starts_with("min_parallel_")
        || matches!(
            name.as_str(),
            "plan_cache_mode"
                | "effective_cache_size"
                | "join_collapse_limit"
                | "from_collapse_limit"
                | "cursor_tuple_fraction"
                | "constraint_exclusion"
                | "recursive_worktable_factor"
        )
        || PLANNER_EXTRA.contains(&name.as_str());
    planner.then_some(Protected::Planner)
}

/// The extra names the guard watches beside the server's "Query Tuning" settings.
pub fn always_watched() -> impl Iterator<Item = &'static str> {
    BOUNDS
        .into_iter()
        .chain(READ_ONLY)
        .chain(PLANNER_EXTRA)
        .chain(["plan_cache_mode", "client_encoding"])
}

/// Why a statement that changes setting `name` is refused, in words for the file's author;
/// `None` when it may.
pub fn refusal(name: &str) -> Option<String> {
    Some(match protected(name)? {
        Protected::Bound => format!(
            "`{name}` is a bound plancheck sets (--statement-timeout, --lock-timeout, \
             --idle-timeout); a project's files may not change it"
        ),
        Protected::ReadOnly => format!(
            "`{name}` keeps the check's transaction read-only; a project's files may not \
             change it"
        ),
        Protected::Encoding => format!(
            "`{name}`: plancheck sends and reads SQL as UTF-8; a project's files may not change \
             how the server decodes it"
        ),
        Protected::Planner => format!(
            "`{name}` is a planner setting: changing it here would change what the check \
             proves; a setting production really runs with goes in a `settings = {{ … }}` table \
             of the scope or of plancheck.toml, which plancheck applies and reports"
        ),
    })
}

/// Why setting `name` cannot go in a declared `settings` table; `None` when it can.
pub fn declared_refusal(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    match protected(&lower) {
        Some(Protected::Planner) if lower.starts_with("enable_") => Some(format!(
            "`{name}`: `enable_*` settings switch plan types off, which no production server \
             runs with; they would make the check prove nothing"
        )),
        Some(Protected::Planner) if lower == "plan_cache_mode" => Some(
            "`plan_cache_mode`: plancheck sets it itself to check both the custom and the generic \
             plan"
                .into(),
        ),
        Some(Protected::Planner) => None,
        Some(_) => refusal(name),
        None => Some(format!(
            "`{name}` is not a planner setting; `settings` holds the planner settings production \
             runs with (`random_page_cost`, `work_mem`, …); an application's own settings go in \
             the scope's `setup` (`SELECT set_config(…)`)"
        )),
    }
}

/// Why a scope's setup statement is refused before anything runs, with the byte offset in the
/// statement to point at; `None` when it may run (then the guard still checks what it did).
///
/// Setup is for saying who reads: `SET ROLE`, `SET`/`RESET` of an application's settings,
/// `SELECT set_config(…)` or a login function. Anything else (a `LOCK`, an `ANALYZE`, a `DO`
/// block, transaction control) has no place there on a shared database.
pub fn setup_refusal(statement: &str) -> Option<(usize, String)> {
    use crate::sql::{Dialect, Kind};
    let dialect = Dialect::default();
    let tokens = crate::sql::significant(statement, dialect);
    let start = tokens.first().map_or(0, |t| t.start);
    let statements = crate::sql::split(statement, dialect);
    if let Some(second) = statements.get(1) {
        return Some((
            second.offset,
            "a setup statement is one statement; write each in its own string of the list".into(),
        ));
    }
    let why = match crate::sql::classify(statement, dialect) {
        Kind::Query => {
            let call = crate::sql::set_config_calls(statement, dialect)
                .into_iter()
                .find_map(|c| Some((c.offset, refusal(c.name.as_deref()?)?)));
            return call.map(|(at, why)| (at, format!("set_config: {why}")));
        }
        Kind::TransactionControl(words) => format!(
            "`{words}` is transaction control: a check runs in one read-only transaction that \
             plancheck begins and rolls back itself"
        ),
        Kind::Set { name, .. } => refusal(&name)?,
        Kind::Reset { name: Some(name) } => refusal(&name)?,
        Kind::Reset { name: None } => {
            "`RESET ALL` would undo the bounds and settings plancheck set".to_string()
        }
        Kind::Other(word) => match word.as_str() {
            "LOCK" => "`LOCK` would hold a lock on a shared database for the length of the \
                       check; a read path takes the locks it needs itself"
                .into(),
            "ANALYZE" | "VACUUM" => format!(
                "`{word}` changes what other sessions and autovacuum see (a rolled-back ANALYZE \
                 still resets the table's counters); analyse the database outside plancheck"
            ),
            "" => "a setup statement starts with SET, RESET or SELECT".into(),
            _ => format!(
                "`{word}` is not a setup statement: setup holds SET, RESET and SELECT \
                 statements (`SET ROLE …`, `SELECT set_config(…)`, a login function)"
            ),
        },
    };
    Some((start, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_statements_that_could_harm_are_refused() {
        for refused in [
            "/* a /* b */ c */ COMMIT",
            "-- x\rCOMMIT",
            "SET /**/ LOCAL statement_timeout = 0",
            "RESET statement_timeout",
            "RESET ALL",
            "SELECT set_config('statement_timeout', '0', true)",
            "select pg_catalog.set_config(E'lock\\_timeout', '0', true)",
            "SET LOCAL transaction_read_only = off",
            "SET LOCAL enable_seqscan = off",
            "LOCK TABLE posts IN ACCESS EXCLUSIVE MODE",
            "ANALYZE posts",
            "BEGIN",
            "START TRANSACTION",
            "END",
            "ABORT",
            "SAVEPOINT s",
            "PREPARE TRANSACTION 'x'",
            "DO $$ BEGIN PERFORM 1; END $$",
            "SELECT 1; COMMIT",
        ] {
            assert!(
                setup_refusal(refused).is_some(),
                "{refused:?} was not refused"
            );
        }
    }

    #[test]
    fn setup_statements_that_say_who_reads_are_accepted() {
        for accepted in [
            "SET ROLE member",
            "SET LOCAL search_path = app, public",
            "SELECT set_config('app.user_id', '42', true)",
            "SET LOCAL app.user_id = '42'",
            "RESET ROLE",
            "SELECT app.login(42)",
            // Computed names are for the guard to catch at run time.
            "SELECT set_config('statement' || '_timeout', '0', true)",
        ] {
            assert_eq!(setup_refusal(accepted), None, "{accepted:?}");
        }
    }

    #[test]
    fn bounds_read_only_and_planner_settings_are_protected() {
        assert_eq!(protected("statement_timeout"), Some(Protected::Bound));
        assert_eq!(protected("LOCK_TIMEOUT"), Some(Protected::Bound));
        assert_eq!(
            protected("transaction_read_only"),
            Some(Protected::ReadOnly)
        );
        assert_eq!(protected("enable_seqscan"), Some(Protected::Planner));
        assert_eq!(protected("random_page_cost"), Some(Protected::Planner));
        assert_eq!(protected("plan_cache_mode"), Some(Protected::Planner));
        assert_eq!(protected("search_path"), None);
        assert_eq!(protected("role"), None);
        assert_eq!(protected("app.user_id"), None);
    }

    #[test]
    fn declared_settings_take_costs_but_not_switches() {
        assert_eq!(declared_refusal("random_page_cost"), None);
        assert_eq!(declared_refusal("work_mem"), None);
        assert!(declared_refusal("enable_seqscan").is_some());
        assert!(declared_refusal("plan_cache_mode").is_some());
        assert!(declared_refusal("statement_timeout").is_some());
        assert!(declared_refusal("app.user_id").is_some());
    }
}
