//! Applies a vetted migration inside a transaction that the caller rolls back: the checks then
//! run in savepoints of it. `lock_timeout` bounds the wait for the migration's own locks; once
//! taken they are held until the rollback at the end of the run.
//!
//! A migration can never commit. Each statement runs through a temporary PL/pgSQL function
//! (created inside the transaction, so rolled back with it) that `EXECUTE`s it: the statement is
//! a bound parameter, never text spliced into other SQL, and PostgreSQL itself refuses
//! transaction control there ("EXECUTE of transaction commands is not implemented"; a procedure
//! or DO block that commits fails with "invalid transaction termination" inside the open
//! transaction). After each statement the guard checks the transaction, the bounds and the
//! planner settings before the next one runs. Once applied, the transaction is made read-only,
//! so a read path that writes is an `error` after the migration as before it.

use tokio_postgres::Client;
use tokio_postgres::error::{ErrorPosition, SqlState};

use super::cause;
use super::check::{Begin, Fail, Settings, begin_bounded, clocked, hung_message, local_bounds};
use super::guard::{self, Span};
use crate::errors::{BadInput, DatabaseFailure, located};
use crate::migration::Migration;

/// What applying left to say: notes for the user (statistics not gathered, …).
#[derive(Debug, Default)]
pub struct Applied {
    pub notes: Vec<String>,
}

const APPLY_FUNCTION: &str = "CREATE FUNCTION pg_temp.plancheck_apply(statement pg_catalog.text) \
     RETURNS void LANGUAGE plpgsql AS $plancheck$BEGIN EXECUTE statement; END$plancheck$";

/// Begins the transaction, applies the migration statement by statement, analyses the tables it
/// created (and, with `analyze`, the existing tables it altered), makes the transaction
/// read-only and sets the bounds again. Leaves the transaction open.
pub async fn apply(
    client: &Client,
    migration: &Migration,
    settings: &Settings,
    analyze: bool,
) -> anyhow::Result<Applied> {
    let run =
        |sql: String| async move { clocked(client, settings, client.batch_execute(&sql)).await };
    let db = |what: &str, f: Fail| -> anyhow::Error {
        match f {
            Fail::Db(e) => DatabaseFailure(format!("{what}: {}", cause(&e))).into(),
            Fail::Hung(limit) => DatabaseFailure(format!("{what}: {}", hung_message(limit))).into(),
        }
    };
    run(begin_bounded(Begin::Migration, settings))
        .await
        .map_err(|f| db("could not begin the migration's transaction", f))?;
    let existing = table_oids(client, settings)
        .await
        .map_err(|f| db("could not list the tables", f))?;
    if let Err(f) = run(APPLY_FUNCTION.to_string()).await {
        let _ = client.batch_execute("ROLLBACK").await;
        return Err(db(
            "could not create the temporary function that applies the migration (the role \
             needs TEMPORARY on the database and PL/pgSQL)",
            f,
        ));
    }
    let before = clocked(client, settings, guard::snapshot(client, &settings.watched))
        .await
        .map_err(|f| db("could not read the session's settings", f))?;
    for (offset, statement) in &migration.statements {
        if let Err(e) =
            apply_statement(client, migration, settings, *offset, statement, &before).await
        {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(e);
        }
    }
    let notes = analyse(client, settings, &existing, analyze).await?;
    // Read-only from here on: a read path that writes fails after the migration as it does
    // before it, and a setup cannot switch back (PostgreSQL refuses read-write in a
    // subtransaction of a read-only transaction).
    run(format!(
        "SET LOCAL transaction_read_only = on; {}; SAVEPOINT plancheck_migrated",
        local_bounds(settings)
    ))
    .await
    .map_err(|f| db("could not make the migrated transaction read-only", f))?;
    Ok(Applied { notes })
}

/// Applies one statement of the migration, then checks with the guard what it changed. An error
/// leaves the transaction for the caller to roll back.
async fn apply_statement(
    client: &Client,
    migration: &Migration,
    settings: &Settings,
    offset: usize,
    statement: &str,
    before: &guard::Snapshot,
) -> anyhow::Result<()> {
    let hung = |limit| -> anyhow::Error {
        DatabaseFailure(format!(
            "applying {}: {}",
            migration.path,
            hung_message(limit)
        ))
        .into()
    };
    // Parse of the statement alone proves it is one statement (the split and PostgreSQL's
    // grammar could disagree, and EXECUTE would run two), without running it. What Parse
    // refuses, running it would too.
    match clocked(client, settings, client.prepare(statement)).await {
        Ok(_) => {}
        Err(Fail::Db(e)) => {
            return Err(
                BadInput(statement_error(&e, migration, offset, statement, settings)).into(),
            );
        }
        Err(Fail::Hung(limit)) => return Err(hung(limit)),
    }
    let outcome = clocked(
        client,
        settings,
        client.execute("SELECT pg_temp.plancheck_apply($1)", &[&statement]),
    )
    .await;
    let message = match outcome {
        Ok(_) => {
            let now =
                match clocked(client, settings, guard::snapshot(client, &settings.watched)).await {
                    Ok(now) => now,
                    Err(Fail::Db(e)) => {
                        return Err(DatabaseFailure(format!(
                            "could not read the session's settings: {}",
                            cause(&e)
                        ))
                        .into());
                    }
                    Err(Fail::Hung(limit)) => return Err(hung(limit)),
                };
            let Some(what) = guard::changed(&settings.watched, before, &now, Span::Fixed, false)
            else {
                return Ok(());
            };
            located(
                &migration.path,
                &migration.sql,
                offset + leading_space(statement),
                &format!(
                    "this statement {what}, which a checked migration may not do; nothing was kept"
                ),
            )
        }
        Err(Fail::Hung(limit)) => return Err(hung(limit)),
        Err(Fail::Db(e)) => statement_error(&e, migration, offset, statement, settings),
    };
    if client.is_closed() {
        return Err(DatabaseFailure(message).into());
    }
    Err(BadInput(message).into())
}

/// The bytes of whitespace and comments a statement starts with, so a message points at its
/// first word.
fn leading_space(statement: &str) -> usize {
    crate::sql::significant(statement, crate::sql::Dialect::default())
        .first()
        .map_or(0, |t| t.start)
}

/// A statement the server refused, located in the migration file (an error inside the statement
/// points at its place: PostgreSQL reports it as a position in the EXECUTEd text).
fn statement_error(
    e: &tokio_postgres::Error,
    migration: &Migration,
    offset: usize,
    statement: &str,
    settings: &Settings,
) -> String {
    let detail = match e.code() {
        Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE => format!(
            "it waited longer than lock_timeout ({} ms) for a lock another session holds",
            settings.lock_timeout.as_millis()
        ),
        Some(c) if *c == SqlState::QUERY_CANCELED => format!(
            "it ran longer than statement_timeout ({} ms)",
            settings.statement_timeout.as_millis()
        ),
        _ => cause(e),
    };
    let within = e
        .as_db_error()
        .and_then(|d| match d.position() {
            Some(ErrorPosition::Internal { position, .. } | ErrorPosition::Original(position)) => {
                statement
                    .char_indices()
                    .nth((*position as usize).saturating_sub(1))
                    .map(|(b, _)| b)
            }
            _ => None,
        })
        .unwrap_or_else(|| leading_space(statement));
    located(
        &migration.path,
        &migration.sql,
        offset + within,
        &format!("the migration failed, so nothing was checked after it: {detail}"),
    )
}

/// Every table, partitioned table and materialised view there is before the migration.
async fn table_oids(client: &Client, settings: &Settings) -> Result<Vec<u32>, Fail> {
    let rows = clocked(
        client,
        settings,
        client.query(
            "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'p', 'm')",
            &[],
        ),
    )
    .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Analyses the tables the migration created: their statistics are the planner's only view of
/// them, and nobody else sees them. An existing table it altered is analysed only with
/// `--analyze`: a rolled-back ANALYZE still resets the counters autovacuum reads
/// (`n_mod_since_analyze`, `last_analyze`), so it is left alone by default, with a note when a
/// new expression index on it has no statistics.
async fn analyse(
    client: &Client,
    settings: &Settings,
    existing: &[u32],
    analyze: bool,
) -> anyhow::Result<Vec<String>> {
    let touched = clocked(
        client,
        settings,
        client.query(
            "SELECT DISTINCT t.oid, pg_catalog.quote_ident(n.nspname) || '.' || \
                    pg_catalog.quote_ident(t.relname), \
                    pg_catalog.bool_or(c.relkind IN ('i', 'I') AND \
                        (SELECT i.indexprs IS NOT NULL FROM pg_catalog.pg_index i \
                         WHERE i.indexrelid = c.oid)) OVER (PARTITION BY t.oid) \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_class t ON t.oid = CASE WHEN c.relkind IN ('i', 'I') \
                 THEN (SELECT i.indrelid FROM pg_catalog.pg_index i WHERE i.indexrelid = c.oid) \
                 ELSE c.oid END \
             JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace \
             WHERE c.xmin::text = (pg_catalog.txid_current() % 4294967296)::text \
               AND t.relkind IN ('r', 'p', 'm') \
             ORDER BY 2",
            &[],
        ),
    )
    .await
    .map_err(|f| match f {
        Fail::Db(e) => DatabaseFailure(format!(
            "could not list what the migration changed: {}",
            cause(&e)
        )),
        Fail::Hung(limit) => DatabaseFailure(hung_message(limit)),
    })?;
    let mut notes = Vec::new();
    for row in touched {
        let oid: u32 = row.get(0);
        let table: String = row.get(1);
        let expression_index: Option<bool> = row.get(2);
        let created = !existing.contains(&oid);
        if !created && !analyze {
            if expression_index == Some(true) {
                notes.push(format!(
                    "the migration creates an expression index on {table}, which has no \
                     statistics until {table} is analysed; plancheck does not ANALYZE existing \
                     tables unless --analyze is given (see the README)"
                ));
            }
            continue;
        }
        clocked(
            client,
            settings,
            client.batch_execute(&format!("ANALYZE {table}")),
        )
        .await
        .map_err(|f| match f {
            Fail::Db(e) => DatabaseFailure(format!("could not ANALYZE {table}: {}", cause(&e))),
            Fail::Hung(limit) => DatabaseFailure(hung_message(limit)),
        })?;
    }
    Ok(notes)
}

/// Every sequence's last value the role may read, to tell after the run which ones the
/// migration advanced: sequences are not transactional, so the rollback does not take that back.
pub async fn sequence_values(
    client: &Client,
) -> Result<Vec<(String, Option<i64>)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT pg_catalog.quote_ident(s.schemaname) || '.' || \
                    pg_catalog.quote_ident(s.sequencename), s.last_value \
             FROM pg_catalog.pg_sequences s ORDER BY 1",
            &[],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
