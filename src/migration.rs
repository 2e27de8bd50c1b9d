//! migration: the pre-migration check's file, read and vetted. The migration runs inside the
//! one transaction that every check then runs in, and that transaction is rolled back, so a
//! statement that cannot run in a transaction, or that would end it, is refused before anything
//! runs, with the form to use for the check. Pure: text in, a verdict on the text out.

use crate::errors::{BadInput, located};

/// A migration file, vetted.
#[derive(Debug, Clone)]
pub struct Migration {
    pub path: String,
    pub sql: String,
}

/// One statement of the file: its text and where it starts.
struct Statement<'a> {
    text: &'a str,
    offset: usize,
}

/// Reads and vets a migration's text.
pub fn vet(path: &str, sql: &str) -> Result<Migration, BadInput> {
    let statements = split(sql);
    if statements
        .iter()
        .all(|s| crate::sql_text::words(s.text, 1).is_empty())
    {
        return Err(BadInput(format!(
            "{path}: the migration holds no statement"
        )));
    }
    for st in &statements {
        if let Some(why) = refusal(st.text) {
            let lead = st.text.len() - st.text.trim_start().len();
            return Err(BadInput(located(path, sql, st.offset + lead, &why)));
        }
    }
    Ok(Migration {
        path: path.to_string(),
        sql: sql.to_string(),
    })
}

/// Why a statement cannot be part of the check's transaction, with the form to use.
fn refusal(statement: &str) -> Option<String> {
    let trimmed = crate::sql_text::strip_leading_comments(statement);
    if trimmed.starts_with('\\') {
        return Some(
            "a psql meta-command is not SQL; give the migration as plain SQL statements".into(),
        );
    }
    let w = crate::sql_text::words(statement, 12);
    let w: Vec<&str> = w.iter().map(String::as_str).collect();
    let first = w.first().copied().unwrap_or("");
    let has = |word: &str| w.contains(&word);
    let control = "a migration is checked inside one transaction that is rolled back at the \
                   end; remove the transaction control (it would end that transaction)";
    match first {
        "BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE" => {
            return Some(format!("{first}: {control}"));
        }
        "PREPARE" if w.get(1) == Some(&"TRANSACTION") => {
            return Some(format!("PREPARE TRANSACTION: {control}"));
        }
        "VACUUM" => {
            return Some(
                "VACUUM cannot run inside a transaction; leave it out of the checked migration: \
                 plancheck runs ANALYZE on every table the migration creates or alters"
                    .into(),
            );
        }
        _ => {}
    }
    if has("CONCURRENTLY") {
        let what = match (first, w.get(1).copied()) {
            ("CREATE", _) => "CREATE INDEX",
            ("DROP", _) => "DROP INDEX",
            ("REINDEX", _) => "REINDEX",
            ("ALTER", _) if has("DETACH") => "ALTER TABLE … DETACH PARTITION",
            _ => "",
        };
        if !what.is_empty() {
            return Some(format!(
                "{what} CONCURRENTLY cannot run inside a transaction; for the check write it as \
                 {what} without CONCURRENTLY: the planner sees the same index, and the check \
                 rolls it back (its lock is held for the length of the run)"
            ));
        }
    }
    let outside = match (first, w.get(1).copied()) {
        ("CREATE" | "DROP" | "ALTER", Some("DATABASE")) => Some("… DATABASE"),
        ("CREATE" | "DROP", Some("TABLESPACE")) => Some("… TABLESPACE"),
        ("ALTER", Some("SYSTEM")) => Some("ALTER SYSTEM"),
        ("REINDEX", Some("DATABASE" | "SYSTEM")) => Some("REINDEX DATABASE"),
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

/// Splits SQL at top-level semicolons, skipping string literals, quoted identifiers,
/// dollar-quoted bodies and comments.
fn split(sql: &str) -> Vec<Statement<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < sql.len() {
        if let Some(next) = crate::sql_text::skip_literal(sql, i) {
            i = next;
        } else if sql.as_bytes()[i] == b';' {
            out.push(Statement {
                text: &sql[start..i],
                offset: start,
            });
            i += 1;
            start = i;
        } else {
            i += 1;
        }
    }
    if start < sql.len() {
        out.push(Statement {
            text: &sql[start..],
            offset: start,
        });
    }
    out
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
    fn non_transactional_statements_are_refused_with_the_form_to_use() {
        let e = refused("CREATE INDEX a ON t (x);\n  create index concurrently b on t (y);");
        assert!(e.starts_with("m.sql:2:3: CREATE INDEX CONCURRENTLY"), "{e}");
        assert!(e.contains("without CONCURRENTLY"), "{e}");
        assert!(refused("VACUUM ANALYZE t").contains("ANALYZE"));
        assert!(refused("DROP INDEX CONCURRENTLY a").contains("DROP INDEX without"));
        assert!(refused("REINDEX INDEX CONCURRENTLY a").contains("REINDEX"));
        assert!(refused("ALTER TABLE p DETACH PARTITION c CONCURRENTLY").contains("DETACH"));
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
    fn an_empty_migration_is_bad_input() {
        assert!(refused("  -- nothing\n;").contains("no statement"));
        assert!(refused("\\i other.sql").contains("psql meta-command"));
    }
}
