//! migration: the pre-migration check's file, read and vetted. The migration runs inside the
//! one transaction that every check then runs in, and that transaction is rolled back, so a
//! statement that cannot run in a transaction, or that would end it, is refused before anything
//! runs, with the form to use for the check. Pure: text in, a verdict on the text out.

use crate::error::{BadInput, located};
use crate::project::safety::Place;
use crate::sql::{Dialect, Kind};

/// Why `setval` is refused in a migration.
const SETVAL: &str = "`setval` moves a sequence outside the transaction: the rollback does not \
     take it back, so the application's next INSERT could take a value already used; a checked \
     migration may not call it (a forward `nextval`, from an INSERT, stays allowed and is named \
     after the run)";

/// The offset of a call to `setval` (by any qualification or case) among `tokens`, the
/// significant tokens of one statement, or of the word `setval` inside a string or dollar-quoted
/// body (a `DO` block or a function that would `EXECUTE` it later). PostgreSQL moves a sequence
/// backwards only through `setval`: `ALTER SEQUENCE … RESTART` and `TRUNCATE … RESTART
/// IDENTITY` are rolled back with the transaction. What text cannot show (a name computed at
/// run time) the run-time guard of the sequences catches.
fn sequence_move(tokens: &[crate::sql::Token<'_>]) -> Option<usize> {
    tokens
        .iter()
        .find_map(|t| has_word(&t.text.to_ascii_lowercase(), "setval").then_some(t.start))
}

/// Whether `text` holds `word` with no identifier character either side of it.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
    text.match_indices(word).any(|(at, _)| {
        !ident(text[..at].chars().next_back()) && !ident(text[at + word.len()..].chars().next())
    })
}

/// A migration file, vetted.
#[derive(Debug, Clone)]
pub struct Migration {
    pub path: String,
    pub sql: String,
    /// Its statements, one by one: the byte offset where each starts in `sql`, and its text as
    /// it is applied (without `CONCURRENTLY`, see [`Self::rewritten`]).
    pub statements: Vec<(usize, String)>,
    /// The statements checked in another form than written, each `path:line: what`: `CREATE
    /// INDEX CONCURRENTLY` (and `DROP INDEX`, `REINDEX INDEX|TABLE`) cannot run in the check's
    /// transaction, so it is applied without the keyword; the planner sees the same index.
    pub rewritten: Vec<String>,
}

/// Reads the migration file `--migration` names (a regular file, not read through a link, at
/// most [`crate::files::MIGRATION`] bytes, UTF-8 text) and vets it ([`vet`]).
pub fn read(path: &std::path::Path) -> Result<Migration, BadInput> {
    let shown = path.display().to_string();
    let bytes = crate::files::read_given(path, crate::files::MIGRATION)
        .map_err(|e| BadInput(format!("--migration {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        BadInput(format!(
            "--migration {shown}: not UTF-8 text: {}",
            e.utf8_error()
        ))
    })?;
    vet(&shown, &text)
}

/// Reads and vets a migration's text, as a server with `standard_conforming_strings` on (the
/// default since PostgreSQL 9.1) reads it.
pub fn vet(path: &str, sql: &str) -> Result<Migration, BadInput> {
    vet_with(path, sql, Dialect::default())
}

/// Reads and vets a migration's text as a server with these settings reads it: split where psql
/// would split it, each statement classified by a lexer that reads comments, strings and dollar
/// quotes as PostgreSQL's does.
pub fn vet_with(path: &str, sql: &str, dialect: Dialect) -> Result<Migration, BadInput> {
    let statements = crate::sql::split(sql, dialect);
    if statements.is_empty() {
        return Err(BadInput(format!(
            "{path}: the migration holds no statement"
        )));
    }
    let mut applied = Vec::new();
    let mut rewritten = Vec::new();
    for st in &statements {
        let (text, what) = match without_concurrently(st.text, st.dialect) {
            Some((text, what)) => (text, Some(what)),
            None => (st.text.to_string(), None),
        };
        if let Some((at, why)) = refusal(&text, st.dialect) {
            // Offsets past a removed keyword are off by its length: point at the statement.
            let at = if what.is_some() { 0 } else { at };
            return Err(BadInput(located(path, sql, st.offset + at, &why)));
        }
        if let Some(what) = what {
            let (line, _) = crate::error::line_col(sql, st.offset);
            rewritten.push(format!(
                "{path}:{line}: {what} CONCURRENTLY is checked as {what}: it cannot run in the \
                 check's transaction, and the planner sees the same index either way"
            ));
        }
        applied.push((st.offset, text));
    }
    Ok(Migration {
        path: path.to_string(),
        sql: sql.to_string(),
        statements: applied,
        rewritten,
    })
}

/// `CREATE [UNIQUE] INDEX CONCURRENTLY …`, `DROP INDEX CONCURRENTLY …` and `REINDEX [(…)]
/// INDEX|TABLE CONCURRENTLY …` without the keyword, and what the statement is; None for any
/// other statement. The keyword is the word token in its place, found by the lexer (never in a
/// string, a comment or a quoted name).
fn without_concurrently(statement: &str, dialect: Dialect) -> Option<(String, &'static str)> {
    let tokens = crate::sql::significant(statement, dialect);
    let words: Vec<String> = tokens
        .iter()
        .map(|t| t.keyword().unwrap_or_default())
        .collect();
    let word = |i: usize| words.get(i).map(String::as_str);
    let (at, what) = match (word(0), word(1), word(2)) {
        (Some("CREATE"), Some("INDEX"), Some("CONCURRENTLY")) => (2, "CREATE INDEX"),
        (Some("CREATE"), Some("UNIQUE"), Some("INDEX")) if word(3) == Some("CONCURRENTLY") => {
            (3, "CREATE INDEX")
        }
        (Some("DROP"), Some("INDEX"), Some("CONCURRENTLY")) => (2, "DROP INDEX"),
        (Some("REINDEX"), _, _) => {
            // REINDEX [(options)] INDEX|TABLE CONCURRENTLY name.
            let mut i = 1;
            if tokens.get(1).is_some_and(|t| t.text == "(") {
                let close = tokens.iter().position(|t| t.text == ")")?;
                i = close + 1;
            }
            match (word(i), word(i + 1)) {
                (Some("INDEX" | "TABLE"), Some("CONCURRENTLY")) => (i + 1, "REINDEX"),
                _ => return None,
            }
        }
        _ => return None,
    };
    let token = tokens.get(at)?;
    let end = token.start + token.text.len();
    Some((
        format!("{}{}", &statement[..token.start], &statement[end..]),
        what,
    ))
}

/// Why a statement cannot be part of the check's transaction, with the form to use, and the
/// byte offset in the statement to point at.
fn refusal(statement: &str, dialect: Dialect) -> Option<(usize, String)> {
    let tokens = crate::sql::significant(statement, dialect);
    let start = tokens.first().map_or(0, |t| t.start);
    if tokens.first().is_some_and(|t| t.text.starts_with('\\')) {
        return Some((
            start,
            "a psql meta-command is not SQL; give the migration as plain SQL statements".into(),
        ));
    }
    let control = "a migration is checked inside one transaction that is rolled back at the \
                   end; remove the transaction control (it would end that transaction)";
    let why = match crate::sql::classify(statement, dialect) {
        Kind::TransactionControl(words) => format!("{words}: {control}"),
        Kind::Set { name, .. } | Kind::Reset { name: Some(name) } => {
            crate::project::safety::refusal_at(&name, Place::Migration)?
        }
        Kind::Reset { name: None } => {
            "`RESET ALL` would undo the bounds and settings plancheck set".to_string()
        }
        Kind::Query | Kind::Other(_) => {
            if let Some((at, why)) = crate::sql::set_config_calls(statement, dialect)
                .into_iter()
                .find_map(|c| {
                    let name = c.name.as_deref()?;
                    Some((
                        c.offset,
                        crate::project::safety::refusal_at(name, Place::Migration)?,
                    ))
                })
            {
                return Some((at, format!("set_config: {why}")));
            }
            if let Some(at) = sequence_move(&tokens) {
                return Some((at, SETVAL.into()));
            }
            let words: Vec<String> = tokens
                .iter()
                .take(12)
                .map(|t| t.keyword().unwrap_or_default())
                .collect();
            statement_refusal(&words)?
        }
    };
    Some((start, why))
}

/// Statements that cannot run inside the check's transaction, or that would change what other
/// sessions see, from their leading words (upper-cased; "" for a token that is not a word).
fn statement_refusal(w: &[String]) -> Option<String> {
    let w: Vec<&str> = w.iter().map(String::as_str).collect();
    let first = w.first().copied().unwrap_or("");
    let has = |word: &str| w.contains(&word);
    match first {
        "VACUUM" => {
            return Some(
                "VACUUM cannot run inside a transaction; leave it out of the checked migration: \
                 plancheck runs ANALYZE on every table the migration creates"
                    .into(),
            );
        }
        "ANALYZE" | "ANALYSE" => {
            return Some(
                "ANALYZE in a checked migration would reset the counters autovacuum reads \
                 (n_mod_since_analyze, last_analyze), which the rollback does not restore; \
                 leave it out: plancheck analyses the tables the migration creates, and with \
                 --analyze the ones it alters"
                    .into(),
            );
        }
        _ => {}
    }
    // CREATE INDEX, DROP INDEX and REINDEX INDEX|TABLE CONCURRENTLY are checked without the
    // keyword ([`without_concurrently`]); DETACH PARTITION … CONCURRENTLY is not the same
    // statement without it.
    if has("CONCURRENTLY") && first == "ALTER" && has("DETACH") {
        return Some(
            "ALTER TABLE … DETACH PARTITION CONCURRENTLY cannot run inside a transaction; for \
             the check write it without CONCURRENTLY: the partition is detached the same way, \
             and the check rolls it back (its lock is held for the length of the run)"
                .into(),
        );
    }
    let outside = match (first, w.get(1).copied()) {
        ("CREATE" | "DROP" | "ALTER", Some("DATABASE")) => Some("… DATABASE"),
        ("CREATE" | "DROP", Some("TABLESPACE")) => Some("… TABLESPACE"),
        ("ALTER", Some("SYSTEM")) => Some("ALTER SYSTEM"),
        ("REINDEX", Some("DATABASE" | "SYSTEM" | "SCHEMA")) => {
            Some("REINDEX SCHEMA|DATABASE|SYSTEM")
        }
        ("CREATE", Some("SUBSCRIPTION")) => Some("CREATE SUBSCRIPTION"),
        ("CLUSTER", None) => Some("CLUSTER without a table"),
        _ => None,
    };
    outside.map(|what| {
        format!(
            "{what} cannot run inside a transaction, so it cannot be checked; leave it out of \
             the checked migration"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(sql: &str) -> String {
        vet("m.sql", sql).expect_err("refused").0
    }

    #[test]
    fn ordinary_ddl_is_accepted() {
        vet(
            "m.sql",
            "CREATE INDEX a ON t (x) WHERE v = 'visible';\nALTER TABLE t ADD COLUMN y int;\n\
             DO $$ BEGIN PERFORM 1; COMMIT; END $$;\nDROP INDEX b;",
        )
        .unwrap();
    }

    #[test]
    fn concurrently_is_checked_without_the_keyword_and_said() {
        let m = vet(
            "m.sql",
            "CREATE INDEX a ON t (x);\n  create unique index concurrently if not exists b on t (y);\n\
             DROP INDEX CONCURRENTLY c;\nREINDEX (VERBOSE) INDEX CONCURRENTLY d;\n\
             REINDEX TABLE CONCURRENTLY t;\nCREATE INDEX e ON t ((x || 'concurrently'));",
        )
        .unwrap();
        let applied: Vec<&str> = m.statements.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            applied,
            [
                "CREATE INDEX a ON t (x)",
                "create unique index  if not exists b on t (y)",
                "DROP INDEX  c",
                "REINDEX (VERBOSE) INDEX  d",
                "REINDEX TABLE  t",
                "CREATE INDEX e ON t ((x || 'concurrently'))",
            ]
        );
        assert_eq!(m.rewritten.len(), 4, "{:?}", m.rewritten);
        assert!(
            m.rewritten[0]
                .starts_with("m.sql:2: CREATE INDEX CONCURRENTLY is checked as CREATE INDEX"),
            "{:?}",
            m.rewritten
        );
        assert!(m.rewritten[3].starts_with("m.sql:5: REINDEX CONCURRENTLY"));
        // A name that is the word, quoted, stays.
        let m = vet("m.sql", "CREATE INDEX \"concurrently\" ON t (x)").unwrap();
        assert!(m.rewritten.is_empty());
    }

    #[test]
    fn non_transactional_statements_are_refused_with_the_form_to_use() {
        assert!(refused("VACUUM ANALYZE t").contains("ANALYZE"));
        assert!(refused("ALTER TABLE p DETACH PARTITION c CONCURRENTLY").contains("DETACH"));
        // REINDEX of a schema cannot run in a transaction with or without the keyword.
        assert!(refused("REINDEX SCHEMA CONCURRENTLY s").contains("REINDEX"));
        assert!(refused("CREATE DATABASE x").contains("cannot be checked"));
        assert!(refused("ALTER SYSTEM SET work_mem = '1GB'").contains("ALTER SYSTEM"));
    }

    #[test]
    fn transaction_control_is_refused() {
        for sql in [
            "BEGIN; CREATE INDEX a ON t (x); COMMIT;",
            "create index a on t(x); commit",
            "-- c\nEND",
        ] {
            assert!(refused(sql).contains("transaction control"), "{sql}");
        }
    }

    #[test]
    fn keywords_inside_strings_comments_and_bodies_do_not_count() {
        vet(
            "m.sql",
            "COMMENT ON TABLE t IS 'VACUUM; COMMIT'; -- COMMIT;\n/* VACUUM; */\n\
             CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $body$ SELECT 1; $body$;",
        )
        .unwrap();
    }

    #[test]
    fn transaction_control_hidden_from_a_naive_reader_is_refused() {
        // Regression: each of these slipped past the old guard, and the COMMIT committed.
        for (sql, what) in [
            (
                "COMMENT ON TABLE posts IS E'Don\\'t'; BEGIN; DROP INDEX i; COMMIT;",
                "BEGIN",
            ),
            ("/* a /* b */ c */ COMMIT;", "COMMIT"),
            ("SELECT 1; -- x\rCOMMIT;", "COMMIT"),
            ("SELECT $q$ ' $q$; COMMIT", "COMMIT"),
            ("SELECT U&'\\'; COMMIT", "COMMIT"),
        ] {
            let e = refused(sql);
            assert!(
                e.contains(what) && e.contains("transaction control"),
                "{sql}: {e}"
            );
        }
    }

    #[test]
    fn lifting_a_bound_tilting_the_planner_or_analysing_is_refused() {
        for (sql, what) in [
            ("SET statement_timeout = 0;", "statement_timeout"),
            ("SET lock_timeout = 0;", "lock_timeout"),
            (
                "SELECT pg_catalog.set_config('lock_timeout', '0', false);",
                "lock_timeout",
            ),
            ("RESET ALL;", "RESET ALL"),
            ("SET enable_seqscan = off;", "enable_seqscan"),
            ("ANALYZE posts;", "ANALYZE"),
        ] {
            let e = refused(sql);
            assert!(e.contains(what), "{sql}: {e}");
        }
    }

    #[test]
    fn statements_are_split_where_the_server_would() {
        let m = vet("m.sql", "CREATE INDEX a ON t (x);\n-- done\nDROP INDEX b;").unwrap();
        assert_eq!(m.statements.len(), 2);
        assert!(m.statements[1].1.contains("DROP INDEX b"));
        let off = vet_with(
            "m.sql",
            "COMMENT ON TABLE t IS 'it\\'s; COMMIT';",
            Dialect {
                standard_conforming_strings: false,
            },
        );
        assert!(
            off.is_ok(),
            "with standard_conforming_strings off the COMMIT is in a string"
        );
    }

    #[test]
    fn moving_a_sequence_back_is_refused_however_it_is_written() {
        // Regression: `setval` in a migration survived the rollback (sequences are not
        // transactional) and the application's next INSERT took a value already used.
        for sql in [
            "SELECT setval('victim_id_seq', 1, false);",
            "select PG_CATALOG.SETVAL('s', 1);",
            "SELECT \"setval\"('s', 1);",
            "DO $$ BEGIN PERFORM setval('s', 1); END $$;",
            "DO $$ BEGIN EXECUTE 'SELECT setval(''s'', 1)'; END $$;",
        ] {
            assert!(refused(sql).contains("`setval` moves a sequence"), "{sql}");
        }
        vet(
            "m.sql",
            "ALTER TABLE t ADD COLUMN setvalue int; INSERT INTO t (x) VALUES (1); \
             ALTER SEQUENCE s RESTART WITH 1;",
        )
        .unwrap();
    }

    #[test]
    fn a_migration_may_set_only_what_the_allow_list_names() {
        vet(
            "m.sql",
            "SET search_path = app, public; SET client_min_messages = warning; \
             SET maintenance_work_mem = '1GB'; SET check_function_bodies = false; \
             SELECT pg_catalog.set_config('search_path', '', false); SET app.tenant = '7';",
        )
        .unwrap();
        for (sql, what) in [
            ("SET debug_print_plan = on;", "debug_print_plan"),
            ("SET log_statement = 'all';", "log_statement"),
            ("SET temp_file_limit = -1;", "temp_file_limit"),
            ("SET zero_damaged_pages = on;", "zero_damaged_pages"),
            ("SET jit_dump_bitcode = on;", "jit_dump_bitcode"),
            (
                "SET auto_explain.log_analyze = on;",
                "auto_explain.log_analyze",
            ),
            (
                "SELECT set_config('track_functions', 'all', false);",
                "track_functions",
            ),
        ] {
            let e = refused(sql);
            assert!(
                e.contains(what) && (e.contains("not a setting") || e.contains("may not change")),
                "{sql}: {e}"
            );
        }
    }

    #[test]
    fn an_empty_migration_is_bad_input() {
        assert!(refused("  -- nothing\n;").contains("no statement"));
        assert!(refused("\\i other.sql").contains("psql meta-command"));
    }
}
