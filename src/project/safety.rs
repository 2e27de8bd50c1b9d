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
    /// Anything else a file is not allowed: logging, tracking, developer and file-writing
    /// settings, resource limits. Not on the allow-list, so refused.
    NotAllowed,
}

/// Where a file changes a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A scope's `setup` statement: says who reads.
    Setup,
    /// A `--migration` statement: the session is put back as it was after the migration.
    Migration,
}

/// The bounds plancheck sets on every session, and the one it leaves as the server has it but
/// that a file must not lift either.
pub const BOUNDS: [&str; 5] = [
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "transaction_timeout",
    "temp_file_limit",
];

/// The settings that make a transaction read-only.
pub const READ_ONLY: [&str; 2] = ["transaction_read_only", "default_transaction_read_only"];

/// Settings a scope's setup may change (that is what it is for) but a read path, once the setup
/// ran, may not: who reads, where names are looked up, and how values are read and written. A
/// dotted name (`app.user_id`) is an application's own setting and may be changed too (see
/// [`is_custom`]). Everything a setup changes is read back and shown with the check.
pub const SESSION: [&str; 16] = [
    "role",
    "session_authorization",
    "search_path",
    "timezone",
    "datestyle",
    "intervalstyle",
    "default_text_search_config",
    "lc_monetary",
    "lc_numeric",
    "lc_time",
    "extra_float_digits",
    "bytea_output",
    "xmloption",
    "xmlbinary",
    "application_name",
    "row_security",
];

/// Settings a migration may change beside [`SESSION`] ones, because migrations written by
/// tools set them (pg_dump's header, an index build given more memory); none of them changes a
/// plan, and the session is put back as it was once the migration is applied.
const MIGRATION: [&str; 8] = [
    "standard_conforming_strings",
    "check_function_bodies",
    "client_min_messages",
    "default_tablespace",
    "default_table_access_method",
    "default_toast_compression",
    "maintenance_work_mem",
    "max_parallel_maintenance_workers",
];

/// Prefixes of settings that extensions define (a dotted name with one of them is not an
/// application's): they log, plan or hint.
const EXTENSION_PREFIXES: [&str; 10] = [
    "auto_explain.",
    "pg_stat_statements.",
    "pg_hint_plan.",
    "plpgsql.",
    "pg_prewarm.",
    "pgaudit.",
    "hypopg.",
    "citus.",
    "timescaledb.",
    "pg_trgm.",
];

/// An application's own setting: a dotted name (`app.user_id`) that no well-known extension
/// defines. On the server, a dotted name some loaded library does define is in `pg_settings`,
/// and the guard then watches it like every other setting outside the allow-list.
pub fn is_custom(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains('.') && !EXTENSION_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The planner settings a `settings = { … }` table may declare, each with the range a real
/// server plausibly runs with (in the setting's own unit: a cost, a count, or kB for memory).
/// A value outside it is refused: a `cpu_tuple_cost` of a million would make any plan "pass".
pub const PLANNER_COSTS: [(&str, Range); 27] = [
    ("seq_page_cost", Range::Number(0.01, 100.0)),
    ("random_page_cost", Range::Number(0.01, 100.0)),
    ("cpu_tuple_cost", Range::Number(0.0001, 1.0)),
    ("cpu_index_tuple_cost", Range::Number(0.0001, 1.0)),
    ("cpu_operator_cost", Range::Number(0.00001, 1.0)),
    ("parallel_setup_cost", Range::Number(0.0, 1.0e7)),
    ("parallel_tuple_cost", Range::Number(0.0, 10.0)),
    (
        "min_parallel_table_scan_size",
        Range::Memory(0.0, 1024.0 * 1024.0 * 1024.0, 8.0),
    ),
    (
        "min_parallel_index_scan_size",
        Range::Memory(0.0, 1024.0 * 1024.0 * 1024.0, 8.0),
    ),
    (
        "effective_cache_size",
        Range::Memory(1024.0, 64.0 * 1024.0 * 1024.0 * 1024.0, 8.0),
    ),
    ("work_mem", Range::Memory(64.0, 64.0 * 1024.0 * 1024.0, 1.0)),
    ("hash_mem_multiplier", Range::Number(1.0, 100.0)),
    ("max_parallel_workers_per_gather", Range::Number(0.0, 64.0)),
    ("max_parallel_workers", Range::Number(0.0, 1024.0)),
    ("parallel_leader_participation", Range::Switch),
    ("effective_io_concurrency", Range::Number(0.0, 1000.0)),
    ("default_statistics_target", Range::Number(1.0, 10000.0)),
    ("join_collapse_limit", Range::Number(1.0, 64.0)),
    ("from_collapse_limit", Range::Number(1.0, 64.0)),
    ("geqo", Range::Switch),
    ("geqo_threshold", Range::Number(2.0, 64.0)),
    ("cursor_tuple_fraction", Range::Number(0.0, 1.0)),
    (
        "constraint_exclusion",
        Range::Words(&["on", "off", "partition"]),
    ),
    ("recursive_worktable_factor", Range::Number(0.001, 1.0e6)),
    ("jit", Range::Switch),
    ("jit_above_cost", Range::Number(-1.0, 1.0e12)),
    ("jit_optimize_above_cost", Range::Number(-1.0, 1.0e12)),
];

/// `jit_inline_above_cost` is declared like the other JIT costs; kept apart only so the table
/// above stays one line per setting of the common kinds.
const JIT_INLINE: (&str, Range) = ("jit_inline_above_cost", Range::Number(-1.0, 1.0e12));

/// The values a declared planner setting may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// A plain number between the two bounds.
    Number(f64, f64),
    /// An amount of memory between the two bounds in kB; a bare number is in units of the
    /// third (kB; 8 kB pages for the sizes counted in blocks).
    Memory(f64, f64, f64),
    /// on or off.
    Switch,
    /// One of these words.
    Words(&'static [&'static str]),
}

/// The plausible range of the declarable planner setting `name`; None when it is not one.
fn planner_cost(name: &str) -> Option<Range> {
    PLANNER_COSTS
        .iter()
        .chain(std::iter::once(&JIT_INLINE))
        .find(|(n, _)| *n == name)
        .map(|(_, r)| *r)
}

/// Why `value` is not plausible for the declared setting `name`; None when it is (or when
/// `name` is not a declarable setting: [`declared_refusal`] says that).
pub fn implausible(name: &str, value: &str) -> Option<String> {
    let name = name.to_ascii_lowercase();
    let range = planner_cost(&name)?;
    let v = value.trim().trim_matches('\'').trim().to_ascii_lowercase();
    let show = |x: f64| {
        if x.fract() == 0.0 && x.abs() < 1e15 {
            format!("{}", x as i64)
        } else {
            format!("{x}")
        }
    };
    match range {
        Range::Number(lo, hi) => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && (lo..=hi).contains(&x) => None,
            Ok(_) => Some(format!(
                "`{name} = {value}` is outside what a real server runs with ({} to {}); a \
                 value like it would make the check prove nothing",
                show(lo),
                show(hi)
            )),
            Err(_) => Some(format!("`{name} = {value}`: a number is expected")),
        },
        Range::Memory(lo, hi, unit) => match memory_kb(&v, unit) {
            Some(kb) if (lo..=hi).contains(&kb) => None,
            Some(_) => Some(format!(
                "`{name} = {value}` is outside what a real server runs with ({} kB to {} kB); a \
                 value like it would make the check prove nothing",
                show(lo),
                show(hi)
            )),
            None => Some(format!(
                "`{name} = {value}`: an amount of memory is expected (`64kB`, `4MB`, `1GB`)"
            )),
        },
        Range::Switch => match v.as_str() {
            "on" | "off" | "true" | "false" | "yes" | "no" | "1" | "0" => None,
            _ => Some(format!("`{name} = {value}`: on or off is expected")),
        },
        Range::Words(words) => (!words.contains(&v.as_str())).then(|| {
            format!(
                "`{name} = {value}`: one of {} is expected",
                words.join(", ")
            )
        }),
    }
}

/// A memory amount as PostgreSQL reads one (`64kB`, `4MB`, `1GB`, `1TB`, `512B`, or a bare
/// number of `unit` kB), in kB.
fn memory_kb(v: &str, unit: f64) -> Option<f64> {
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, suffix) = v.split_at(split);
    let n: f64 = number.parse().ok()?;
    let factor = match suffix.trim() {
        "" => unit,
        "b" => 1.0 / 1024.0,
        "kb" => 1.0,
        "mb" => 1024.0,
        "gb" => 1024.0 * 1024.0,
        "tb" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * factor).filter(|kb| kb.is_finite())
}

/// Why `name` (as the server stores it: lower case) is not a file's to change at `place`;
/// `None` when it may be changed there. An allow-list: [`SESSION`] settings and applications'
/// own dotted settings anywhere, [`MIGRATION`] ones in a migration too; nothing else.
pub fn protected_at(name: &str, place: Place) -> Option<Protected> {
    let name = name.to_ascii_lowercase();
    if SESSION.contains(&name.as_str()) || is_custom(&name) {
        return None;
    }
    if place == Place::Migration && MIGRATION.contains(&name.as_str()) {
        return None;
    }
    Some(classify_protected(&name))
}

/// Why `name` (lower case) is not a file's to change in a setup statement; `None` when it may.
pub fn protected(name: &str) -> Option<Protected> {
    protected_at(name, Place::Setup)
}

/// The kind of a setting no file may change, for the message that refuses it.
fn classify_protected(name: &str) -> Protected {
    if BOUNDS.contains(&name) {
        return Protected::Bound;
    }
    if READ_ONLY.contains(&name) {
        return Protected::ReadOnly;
    }
    if name == "client_encoding" {
        return Protected::Encoding;
    }
    let planner = name.starts_with("enable_")
        || planner_cost(name).is_some()
        || name.ends_with("_cost")
        || name.starts_with("geqo")
        || name == "plan_cache_mode";
    if planner {
        Protected::Planner
    } else {
        Protected::NotAllowed
    }
}

/// The settings the guard watches even where the server's own list cannot be read.
pub fn always_watched() -> impl Iterator<Item = &'static str> {
    BOUNDS
        .into_iter()
        .chain(READ_ONLY)
        .chain(PLANNER_COSTS.iter().map(|(n, _)| *n))
        .chain(["plan_cache_mode", "client_encoding"])
}

/// Why a statement that changes setting `name` at `place` is refused, in words for the file's
/// author; `None` when it may.
pub fn refusal_at(name: &str, place: Place) -> Option<String> {
    Some(match protected_at(name, place)? {
        Protected::Bound => format!(
            "`{name}` is a bound plancheck sets (--statement-timeout, --lock-timeout, \
             --idle-timeout, the temporary file limit); a project's files may not change it"
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
        Protected::NotAllowed => format!(
            "`{name}` is not a setting a project's files may change: {} may set the role, the \
             search path, an application's own settings (`app.user_id`) and how values are \
             read (`TimeZone`, `DateStyle`, …){}",
            match place {
                Place::Setup => "setup",
                Place::Migration => "a migration",
            },
            match place {
                Place::Setup => "; planner costs go in `settings = { … }`",
                Place::Migration => {
                    ", and what migration tools set (`client_min_messages`, \
                     `maintenance_work_mem`, …)"
                }
            }
        ),
    })
}

/// Why a setup statement that changes setting `name` is refused; `None` when it may.
pub fn refusal(name: &str) -> Option<String> {
    refusal_at(name, Place::Setup)
}

/// Why setting `name` cannot go in a declared `settings` table; `None` when it can.
pub fn declared_refusal(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if planner_cost(&lower).is_some() {
        return None;
    }
    if lower.starts_with("enable_") {
        return Some(format!(
            "`{name}`: `enable_*` settings switch plan types off, which no production server \
             runs with; they would make the check prove nothing"
        ));
    }
    if lower == "plan_cache_mode" {
        return Some(
            "`plan_cache_mode`: plancheck sets it itself to check both the custom and the generic \
             plan"
                .into(),
        );
    }
    if let Some(Protected::Bound | Protected::ReadOnly | Protected::Encoding) = protected(&lower) {
        return refusal(name);
    }
    Some(format!(
        "`{name}` is not one of the planner settings `settings` may declare ({}); an \
         application's own settings go in the scope's `setup` (`SELECT set_config(…)`)",
        PLANNER_COSTS
            .iter()
            .map(|(n, _)| *n)
            .chain(std::iter::once(JIT_INLINE.0))
            .collect::<Vec<_>>()
            .join(", ")
    ))
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
            "SET LOCAL debug_print_plan = on",
            "SET log_min_messages = debug5",
            "SET LOCAL temp_file_limit = -1",
            "SET zero_damaged_pages = on",
            "SET LOCAL jit_dump_bitcode = on",
            "SET track_io_timing = on",
            "SELECT set_config('log_statement', 'all', true)",
            "SET LOCAL auto_explain.log_min_duration = 0",
            "SET NAMES 'LATIN1'",
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
            "SET LOCAL TIME ZONE 'UTC'",
            "SET LOCAL datestyle = 'ISO, MDY'",
            "SET SESSION AUTHORIZATION member",
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
        assert_eq!(protected("timezone"), None);
        assert_eq!(protected("debug_print_plan"), Some(Protected::NotAllowed));
        assert_eq!(protected("jit_dump_bitcode"), Some(Protected::NotAllowed));
        assert_eq!(protected("temp_file_limit"), Some(Protected::Bound));
        assert_eq!(
            protected("pg_hint_plan.enable_hint"),
            Some(Protected::NotAllowed)
        );
        assert_eq!(protected_at("maintenance_work_mem", Place::Migration), None);
        assert_eq!(
            protected_at("maintenance_work_mem", Place::Setup),
            Some(Protected::NotAllowed)
        );
    }

    #[test]
    fn declared_settings_take_costs_but_not_switches() {
        assert_eq!(declared_refusal("random_page_cost"), None);
        assert_eq!(declared_refusal("work_mem"), None);
        assert!(declared_refusal("enable_seqscan").is_some());
        assert!(declared_refusal("plan_cache_mode").is_some());
        assert!(declared_refusal("statement_timeout").is_some());
        assert!(declared_refusal("app.user_id").is_some());
        // Regression: accepted because the name started with `jit`; it wrote `.bc` files.
        assert!(declared_refusal("jit_dump_bitcode").is_some());
        assert!(declared_refusal("jit_debugging_support").is_some());
        assert_eq!(declared_refusal("jit_above_cost"), None);
        assert!(declared_refusal("temp_file_limit").is_some());
    }

    #[test]
    fn declared_costs_outside_a_plausible_range_are_refused() {
        for (name, value) in [
            ("random_page_cost", "1.1"),
            ("cpu_tuple_cost", "0.01"),
            ("work_mem", "64MB"),
            ("work_mem", "4096"),
            ("effective_cache_size", "'24GB'"),
            ("jit", "off"),
            ("constraint_exclusion", "partition"),
        ] {
            assert_eq!(implausible(name, value), None, "{name} = {value}");
        }
        for (name, value) in [
            ("cpu_tuple_cost", "1000000"),
            ("random_page_cost", "0.0000001"),
            ("seq_page_cost", "1e9"),
            ("work_mem", "1TB"),
            ("work_mem", "lots"),
            ("effective_cache_size", "1kB"),
            ("jit", "maybe"),
            ("cpu_operator_cost", "NaN"),
        ] {
            assert!(implausible(name, value).is_some(), "{name} = {value}");
        }
    }
}
