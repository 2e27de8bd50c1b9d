//! Applies a vetted migration inside a read-write transaction that the caller rolls back: the
//! checks then run in savepoints of it. `lock_timeout` bounds the wait for the migration's own
//! locks; once taken they are held until the rollback at the end of the run.

use tokio_postgres::Client;

use super::cause;
use super::check::Settings;
use crate::errors::{BadInput, DatabaseFailure};
use crate::migration::Migration;

/// Begins the transaction, applies the migration, and analyses every table it created or
/// altered (a new index on an expression needs statistics too). Leaves the transaction open.
pub async fn apply(
    client: &Client,
    migration: &Migration,
    settings: &Settings,
) -> anyhow::Result<()> {
    let ms = |d: std::time::Duration| d.as_millis().max(1);
    client
        .batch_execute(&format!(
            "BEGIN; SET LOCAL statement_timeout = {}; SET LOCAL lock_timeout = {}; \
             SET LOCAL idle_in_transaction_session_timeout = {}",
            ms(settings.statement_timeout),
            ms(settings.lock_timeout),
            ms(settings.idle_in_transaction_timeout)
        ))
        .await
        .map_err(|e| {
            DatabaseFailure(format!(
                "could not begin the migration's transaction: {}",
                cause(&e)
            ))
        })?;
    if let Err(e) = client.batch_execute(&migration.sql).await {
        let _ = client.batch_execute("ROLLBACK").await;
        if client.is_closed() {
            return Err(DatabaseFailure(format!(
                "the connection was lost while applying {}: {}",
                migration.path,
                cause(&e)
            ))
            .into());
        }
        let detail = match e.code() {
            Some(c) if *c == tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE => format!(
                "it waited longer than lock_timeout ({} ms) for a lock another session holds",
                settings.lock_timeout.as_millis()
            ),
            _ => cause(&e),
        };
        return Err(BadInput(format!(
            "{}: the migration failed, so nothing was checked after it: {detail}",
            migration.path
        ))
        .into());
    }
    // Nothing in a vetted migration can end the transaction, but a function it calls could
    // try: a savepoint fails outside a transaction block, so it proves the block is open.
    if client
        .batch_execute("SAVEPOINT plancheck_migrated")
        .await
        .is_err()
    {
        return Err(DatabaseFailure(format!(
            "{} ended the transaction it was checked in; its changes may have been committed",
            migration.path
        ))
        .into());
    }
    let touched = client
        .query(
            "SELECT DISTINCT pg_catalog.quote_ident(n.nspname) || '.' || \
                             pg_catalog.quote_ident(t.relname) \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_class t ON t.oid = CASE WHEN c.relkind IN ('i', 'I') \
                 THEN (SELECT i.indrelid FROM pg_catalog.pg_index i WHERE i.indexrelid = c.oid) \
                 ELSE c.oid END \
             JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace \
             WHERE c.xmin::text = (pg_catalog.txid_current() % 4294967296)::text \
               AND t.relkind IN ('r', 'p', 'm') \
             ORDER BY 1",
            &[],
        )
        .await
        .map_err(|e| {
            DatabaseFailure(format!(
                "could not list what the migration changed: {}",
                cause(&e)
            ))
        })?;
    for row in touched {
        let table: String = row.get(0);
        client
            .batch_execute(&format!("ANALYZE {table}"))
            .await
            .map_err(|e| DatabaseFailure(format!("could not ANALYZE {table}: {}", cause(&e))))?;
    }
    Ok(())
}
