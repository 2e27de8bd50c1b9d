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

use std::time::Duration;

use tokio_postgres::Client;
use tokio_postgres::error::{ErrorPosition, SqlState};

use super::cause;
use super::check::{Begin, Fail, Settings, begin_bounded, clocked, local_bounds};
use super::guard::{self, Span};
use super::{Asked, Unanswered};
use crate::model::{Change, IndexChange};
use crate::project::Place;
use crate::project::migration::Migration;

/// What applying left to say: notes for the user (statistics not gathered, …), and what the
/// migration did to the indexes the checks require.
#[derive(Debug, Default)]
pub struct Applied {
    pub notes: Vec<Note>,
    pub index_changes: Vec<IndexChange>,
}

/// What applying the migration has to tell the user: worded by `report::migration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The migration creates an expression index on this existing table, which is not
    /// analysed without `--analyze`.
    ExpressionIndexUnanalysed(String),
}

/// What stopped the migration, as data: worded by `report::migration`
/// (`impl From<Stopped> for Error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The server answered nothing within `limit` while the migration in `path` was applied.
    Hung { path: String, limit: Duration },
    /// The session could not be put back as it was before: what the guard saw it did.
    NotRestored(guard::Change),
    /// The statement at `place` in the migration file: what it did or met. `lost` when the
    /// connection went with it.
    Statement {
        place: Place,
        fault: Fault,
        lost: bool,
    },
}

/// What a statement of the migration did or met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The migration replaced or altered the temporary function plancheck applies its
    /// statements with, so the statement was not run.
    ExecutorTouched,
    /// It moved sequences back (setval): those set where they were at once, and those that
    /// could not be.
    SequencesMovedBack {
        restored: Vec<Sequence>,
        failed: Vec<Sequence>,
    },
    /// It changed what a checked migration may not (the guard's words).
    Changed(guard::Change),
    /// The server refused it.
    Failed(Refusal),
}

/// A sequence the migration moved back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sequence {
    /// By name.
    Named(String),
    /// Its name unread: its oid, and where it was.
    Unnamed { oid: u32, was: i64 },
}

/// Why the server refused a migration statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    LockTimeout(Duration),
    StatementTimeout(Duration),
    /// The server's (or the driver's) words.
    Said(String),
}

/// Each watched index by name as the session resolves it (`to_regclass`), its definition, and
/// the name now of the index that had the name before (by its oid).
const INDEX_STATE: &str = "SELECT n.name, \
     pg_catalog.pg_get_indexdef(pg_catalog.to_regclass(n.name)::pg_catalog.oid), \
     pg_catalog.to_regclass(n.name)::pg_catalog.oid, c.relname::pg_catalog.text \
     FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.oid[])) \
          AS n(name, was) \
     LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) n.was";

/// A watched index as the catalog had it before the migration: its oid and definition.
struct Watched {
    name: String,
    oid: u32,
    definition: String,
}

/// The indexes of `names` that exist now: their oids and definitions. A name that is no
/// identifier (`name` or `schema.name`, each plain or double-quoted) is not asked about: the
/// server's parse of it could fail, and fail the migration's transaction with it.
async fn watched_indexes(
    client: &Client,
    settings: &Settings,
    names: &[String],
) -> Result<Vec<Watched>, Fail> {
    let names: Vec<String> = names
        .iter()
        .filter(|n| is_qualified_identifier(n))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let none: Vec<u32> = vec![0; names.len()];
    let rows = clocked(
        client,
        settings,
        client.query(INDEX_STATE, &[&names, &none]),
    )
    .await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some(Watched {
                name: r.get(0),
                definition: r.get::<_, Option<String>>(1)?,
                oid: r.get::<_, Option<u32>>(2)?,
            })
        })
        .collect())
}

/// How each still-unchanged watched index stands after a statement: the changes since before.
async fn index_changes(
    client: &Client,
    settings: &Settings,
    watched: &[Watched],
) -> Result<Vec<(usize, Change)>, Fail> {
    let names: Vec<&str> = watched.iter().map(|w| w.name.as_str()).collect();
    let oids: Vec<u32> = watched.iter().map(|w| w.oid).collect();
    let rows = clocked(
        client,
        settings,
        client.query(INDEX_STATE, &[&names, &oids]),
    )
    .await?;
    let mut changes = Vec::new();
    for (i, w) in watched.iter().enumerate() {
        // Matched by name: the join keeps no order.
        let Some(row) = rows.iter().find(|r| r.get::<_, String>(0) == w.name) else {
            continue;
        };
        let now: Option<String> = row.get(1);
        let renamed: Option<String> = row.get(3);
        let last = w
            .name
            .rsplit('.')
            .next()
            .unwrap_or(&w.name)
            .trim_matches('"');
        let change = match now {
            Some(definition) if definition == w.definition => continue,
            Some(definition) => Change::Redefined { definition },
            None => match renamed {
                Some(to) if to != last => Change::Renamed { to },
                // The index is there under its name, but the name no longer finds it (the
                // migration changed the search path): not a change of the index.
                Some(_) => continue,
                None => Change::Dropped,
            },
        };
        changes.push((i, change));
    }
    Ok(changes)
}

/// `name` or `schema.name`, each part a plain identifier or a double-quoted one.
fn is_qualified_identifier(name: &str) -> bool {
    let part = |p: &str| {
        if let Some(inner) = p.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            !inner.is_empty() && !inner.replace("\"\"", "").contains('"')
        } else {
            let mut chars = p.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        }
    };
    match name.split_once('.') {
        Some((schema, rest)) if !schema.starts_with('"') => part(schema) && part(rest),
        _ => part(name),
    }
}

const APPLY_FUNCTION: &str = "CREATE FUNCTION pg_temp.plancheck_apply(statement pg_catalog.text) \
     RETURNS void LANGUAGE plpgsql AS $plancheck$BEGIN EXECUTE statement; END$plancheck$";

/// A query on the executor's catalog row and its language's: `$select`, then the `FROM` and
/// `WHERE` that find them, then `$also`.
macro_rules! executor {
    ($select:expr, $also:expr) => {
        concat!(
            $select,
            " FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l \
             ON l.oid OPERATOR(pg_catalog.=) p.prolang \
             WHERE p.oid OPERATOR(pg_catalog.=) \
             'pg_temp.plancheck_apply(pg_catalog.text)'::pg_catalog.regprocedure",
            $also
        )
    };
}

/// What the executor is, as the catalog has it: its row (a `CREATE OR REPLACE` or an `ALTER
/// FUNCTION` writes a new version of it, with a new `ctid`), its body, its settings, its owner
/// and its language's handler. A migration runs with the rights to replace the function (it is
/// its own session's temporary function), so every call checks this first, in the same
/// statement: a replaced executor is never called.
macro_rules! identity {
    () => {
        "pg_catalog.concat_ws('|', p.oid, p.ctid, p.prosrc, p.proconfig, p.prosecdef, \
         p.proowner, p.proisstrict, l.oid, l.ctid, l.lanplcallfoid)"
    };
}

/// The executor's identity, read once it is created.
const READ_EXECUTOR: &str = executor!(concat!("SELECT ", identity!()), "");

/// One statement of the migration, applied only when the executor is still the one plancheck
/// created (`$2`, its identity): otherwise the statement answers no row and nothing ran.
const CALL_EXECUTOR: &str = executor!(
    "SELECT pg_temp.plancheck_apply($1)",
    concat!(" AND ", identity!(), " OPERATOR(pg_catalog.=) $2")
);

/// Every sequence: whether it counts up, and its last value where the role may read it (None
/// before its first `nextval`, or after `setval(…, false)`).
const SEQUENCES: &str = "SELECT s.seqrelid::pg_catalog.oid, s.seqincrement OPERATOR(pg_catalog.>) 0, \
     CASE WHEN pg_catalog.has_sequence_privilege(s.seqrelid, 'SELECT,USAGE') \
          THEN pg_catalog.pg_sequence_last_value(s.seqrelid) END \
     FROM pg_catalog.pg_sequence s";

/// A sequence's state: its oid, whether it counts up, its last value.
type SequenceState = (u32, bool, Option<i64>);

/// Begins the transaction, applies the migration statement by statement, analyses the tables it
/// created (and, with `analyze`, the existing tables it altered), makes the transaction
/// read-only and sets the bounds again. Leaves the transaction open.
pub async fn apply(
    client: &Client,
    migration: &Migration,
    settings: &Settings,
    analyze: bool,
    watched: &[String],
) -> crate::error::Result<Applied> {
    let run =
        |sql: String| async move { clocked(client, settings, client.batch_execute(&sql)).await };
    let db = unanswered;
    run(begin_bounded(Begin::Migration, settings))
        .await
        .map_err(|f| db(Asked::BeginMigration, f))?;
    let existing = table_oids(client, settings)
        .await
        .map_err(|f| db(Asked::ListTables, f))?;
    if let Err(f) = run(APPLY_FUNCTION.to_string()).await {
        let _ = client.batch_execute("ROLLBACK").await;
        return Err(db(Asked::CreateExecutor, f));
    }
    let before = clocked(client, settings, guard::snapshot(client, &settings.watched))
        .await
        .map_err(|f| db(Asked::SessionSettings, f))?;
    let executor: String = clocked(client, settings, client.query_one(READ_EXECUTOR, &[]))
        .await
        .map_err(|f| db(Asked::ReadExecutor, f))?
        .get(0);
    let sequences = sequences(client, settings)
        .await
        .map_err(|f| db(Asked::Sequences, f))?;
    let applying = Applying {
        migration,
        settings,
        before: &before,
        executor: &executor,
        sequences: &sequences,
    };
    let watched = watched_indexes(client, settings, watched)
        .await
        .map_err(|f| db(Asked::RequiredIndexes, f))?;
    let changes = match apply_statements(client, &applying, watched).await {
        Ok(changes) => changes,
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(e);
        }
    };
    let notes = analyse(client, settings, &existing, analyze).await?;
    // The session as it was before the migration: a migration's `SET search_path`, `SET ROLE`
    // or application setting must not reach the checks after it. `RESET ALL` leaves the role
    // and the session user alone, so they are reset first; the bounds are set again after it.
    if let Err(e) = restore_session(client, settings, &before).await {
        let _ = client.batch_execute("ROLLBACK").await;
        return Err(e);
    }
    // Read-only from here on: a read path that writes fails after the migration as it does
    // before it, and a setup cannot switch back (PostgreSQL refuses read-write in a
    // subtransaction of a read-only transaction).
    run("SET LOCAL transaction_read_only = on; SAVEPOINT plancheck_migrated".to_string())
        .await
        .map_err(|f| db(Asked::ReadOnlyMigrated, f))?;
    Ok(Applied {
        notes,
        index_changes: changes,
    })
}

/// A failure of a step of the migration's transaction, as data.
fn unanswered(asked: Asked, f: Fail) -> crate::error::Error {
    match f {
        Fail::Db(e) => Unanswered::of(asked, &e).into(),
        Fail::Hung(limit) => Unanswered {
            asked,
            cause: crate::report::failure::hung(limit),
        }
        .into(),
    }
}

/// Applies the migration's statements in order, reading the `watched` indexes after each: what
/// changed each, blamed on the first statement after which it was gone or no longer the same.
async fn apply_statements(
    client: &Client,
    applying: &Applying<'_>,
    mut watched: Vec<Watched>,
) -> crate::error::Result<Vec<IndexChange>> {
    let (migration, settings) = (applying.migration, applying.settings);
    let mut changes = Vec::new();
    for (offset, statement) in &migration.statements {
        apply_statement(client, applying, *offset, statement).await?;
        if watched.is_empty() {
            continue;
        }
        let changed = index_changes(client, settings, &watched)
            .await
            .map_err(|f| unanswered(Asked::RequiredIndexes, f))?;
        for (i, change) in changed.iter().rev() {
            let w = watched.remove(*i);
            changes.push(IndexChange {
                index: w.name,
                path: migration.path.clone(),
                line: crate::error::line_col(&migration.sql, *offset).0,
                statement: first_line(&migration.sql[*offset..]),
                change: change.clone(),
            });
        }
    }
    changes.sort_by(|a, b| (a.line, &a.index).cmp(&(b.line, &b.index)));
    Ok(changes)
}

/// A statement's first line as written, cut at 100 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// What every statement of a migration is applied against: the session before it, the
/// executor's identity, and the sequences.
struct Applying<'a> {
    migration: &'a Migration,
    settings: &'a Settings,
    before: &'a guard::Snapshot,
    executor: &'a str,
    sequences: &'a [SequenceState],
}

/// Puts the session back as it was before the migration (`before`): the session user and role,
/// every setting `RESET ALL` reaches, then plancheck's bounds; and checks with the guard that
/// it is. An application setting the migration created stays as an empty placeholder (no
/// statement removes one): `current_setting(…, true)` reads '' for it instead of NULL.
async fn restore_session(
    client: &Client,
    settings: &Settings,
    before: &guard::Snapshot,
) -> crate::error::Result<()> {
    let failed = |f: Fail| -> crate::error::Error {
        match f {
            Fail::Db(e) => Unanswered::of(Asked::RestoreSession, &e).into(),
            Fail::Hung(limit) => Unanswered {
                asked: Asked::RestoreSession,
                cause: crate::report::failure::hung(limit),
            }
            .into(),
        }
    };
    clocked(
        client,
        settings,
        client.batch_execute(&format!(
            "RESET SESSION AUTHORIZATION; RESET ROLE; RESET ALL; {}",
            local_bounds(settings)
        )),
    )
    .await
    .map_err(failed)?;
    let now = clocked(client, settings, guard::snapshot(client, &settings.watched))
        .await
        .map_err(failed)?;
    match guard::changed_but_placeholders(&settings.watched, before, &now) {
        None => Ok(()),
        Some(what) => Err(Stopped::NotRestored(what).into()),
    }
}

/// Every sequence's state.
async fn sequences(client: &Client, settings: &Settings) -> Result<Vec<SequenceState>, Fail> {
    let rows = clocked(client, settings, client.query(SEQUENCES, &[])).await?;
    Ok(sequence_states(&rows))
}

/// The rows of [`SEQUENCES`] as states.
fn sequence_states(rows: &[tokio_postgres::Row]) -> Vec<SequenceState> {
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

/// The sequences of `before` that are now behind where they were: moved back by `setval`,
/// which no rollback undoes. A sequence that moved forward (`nextval`) or that the migration
/// created or dropped (the rollback takes that back) is not among them.
fn moved_back(before: &[SequenceState], now: &[SequenceState]) -> Vec<(u32, i64)> {
    before
        .iter()
        .filter_map(|&(oid, up, was)| {
            let was = was?;
            let (_, _, is) = now.iter().find(|(o, ..)| *o == oid)?;
            let behind = match is {
                None => true,
                Some(is) if up => *is < was,
                Some(is) => *is > was,
            };
            behind.then_some((oid, was))
        })
        .collect()
}

/// Applies one statement of the migration through the executor (when it is still the one
/// plancheck created), then checks with the guard what it changed, and that no sequence moved
/// back. An error leaves the transaction for the caller to roll back.
async fn apply_statement(
    client: &Client,
    applying: &Applying<'_>,
    offset: usize,
    statement: &str,
) -> crate::error::Result<()> {
    let (migration, settings) = (applying.migration, applying.settings);
    let hung = |limit| -> crate::error::Error {
        Stopped::Hung {
            path: migration.path.clone(),
            limit,
        }
        .into()
    };
    let at = |within: usize| Place {
        path: migration.path.clone(),
        text: migration.sql.as_str().into(),
        offset: offset + within,
    };
    // Parse of the statement alone proves it is one statement (the split and PostgreSQL's
    // grammar could disagree, and EXECUTE would run two), without running it. What Parse
    // refuses, running it would too.
    match clocked(client, settings, client.prepare(statement)).await {
        Ok(_) => {}
        Err(Fail::Db(e)) => {
            let (within, refusal) = refusal(&e, statement, settings);
            return Err(Stopped::Statement {
                place: at(within),
                fault: Fault::Failed(refusal),
                lost: false,
            }
            .into());
        }
        Err(Fail::Hung(limit)) => return Err(hung(limit)),
    }
    let outcome = clocked(
        client,
        settings,
        client.execute(CALL_EXECUTOR, &[&statement, &applying.executor]),
    )
    .await;
    let (within, fault) = match outcome {
        Ok(0) => (leading_space(statement), Fault::ExecutorTouched),
        Ok(_) => match what_it_did(client, applying).await? {
            Some(fault) => (leading_space(statement), fault),
            None => return Ok(()),
        },
        Err(Fail::Hung(limit)) => return Err(hung(limit)),
        Err(Fail::Db(e)) => {
            let (within, refusal) = refusal(&e, statement, settings);
            (within, Fault::Failed(refusal))
        }
    };
    Err(Stopped::Statement {
        place: at(within),
        fault,
        lost: client.is_closed(),
    }
    .into())
}

/// What a statement just applied did that a checked migration may not (a sequence moved back,
/// set back at once; a setting outside what a migration may set); None when nothing.
async fn what_it_did(
    client: &Client,
    applying: &Applying<'_>,
) -> crate::error::Result<Option<Fault>> {
    let settings = applying.settings;
    let read = async {
        let (now, seqs) = futures_util::future::join(
            guard::snapshot(client, &settings.watched),
            client.query(SEQUENCES, &[]),
        )
        .await;
        Ok((now, seqs))
    };
    let unreadable = |e: &tokio_postgres::Error| -> crate::error::Error {
        Unanswered::of(Asked::SessionSettingsAndSequences, e).into()
    };
    let (now, sequences) = match clocked(client, settings, read).await {
        Ok(both) => both,
        Err(Fail::Hung(limit)) => {
            return Err(Stopped::Hung {
                path: applying.migration.path.clone(),
                limit,
            }
            .into());
        }
        Err(Fail::Db(e)) => return Err(unreadable(&e)),
    };
    let now = now.map_err(|e| unreadable(&e))?;
    let sequences = sequence_states(&sequences.map_err(|e| unreadable(&e))?);
    let back = moved_back(applying.sequences, &sequences);
    if !back.is_empty() {
        let (restored, failed) = put_back(client, settings, &back).await;
        return Ok(Some(Fault::SequencesMovedBack { restored, failed }));
    }
    Ok(guard::changed(
        &settings.watched,
        applying.before,
        &now,
        Span::Migration,
        false,
    )
    .map(Fault::Changed))
}

/// Sets each sequence of `back` to where it was before the migration (or further on, when
/// another session took values meanwhile): `setval` acts at once, whatever the transaction
/// does. The names of those set back, and of those that could not be (with the value each had).
async fn put_back(
    client: &Client,
    settings: &Settings,
    back: &[(u32, i64)],
) -> (Vec<Sequence>, Vec<Sequence>) {
    let (mut names, mut failed) = (Vec::new(), Vec::new());
    for (oid, was) in back {
        let row = clocked(
            client,
            settings,
            client.query_one(
                "SELECT $1::pg_catalog.oid::pg_catalog.regclass::pg_catalog.text, \
                        pg_catalog.setval($1::pg_catalog.oid, \
                            CASE WHEN s.seqincrement OPERATOR(pg_catalog.>) 0 \
                                 THEN GREATEST($2::pg_catalog.int8, \
                                      pg_catalog.pg_sequence_last_value($1::pg_catalog.oid)) \
                                 ELSE LEAST($2::pg_catalog.int8, \
                                      pg_catalog.pg_sequence_last_value($1::pg_catalog.oid)) END, \
                            true) \
                 FROM pg_catalog.pg_sequence s WHERE s.seqrelid OPERATOR(pg_catalog.=) $1::pg_catalog.oid",
                &[oid, was],
            ),
        )
        .await;
        match row {
            Ok(row) => names.push(Sequence::Named(row.get(0))),
            Err(_) => failed.push(Sequence::Unnamed {
                oid: *oid,
                was: *was,
            }),
        }
    }
    (names, failed)
}

/// The bytes of whitespace and comments a statement starts with, so a message points at its
/// first word.
fn leading_space(statement: &str) -> usize {
    crate::sql::significant(statement, crate::sql::Dialect::default())
        .first()
        .map_or(0, |t| t.start)
}

/// Why the server refused a statement, and where in it (the byte offset into the statement:
/// an error inside it points at its place, which PostgreSQL reports as a position in the
/// EXECUTEd text; else its first word).
fn refusal(e: &tokio_postgres::Error, statement: &str, settings: &Settings) -> (usize, Refusal) {
    let refusal = match e.code() {
        Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE => {
            Refusal::LockTimeout(settings.lock_timeout)
        }
        Some(c) if *c == SqlState::QUERY_CANCELED => {
            Refusal::StatementTimeout(settings.statement_timeout)
        }
        _ => Refusal::Said(cause(e)),
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
    (within, refusal)
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
) -> crate::error::Result<Vec<Note>> {
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
    .map_err(|f| unanswered(Asked::MigrationChanges, f))?;
    let mut notes = Vec::new();
    for row in touched {
        let oid: u32 = row.get(0);
        let table: String = row.get(1);
        let expression_index: Option<bool> = row.get(2);
        let created = !existing.contains(&oid);
        if !created && !analyze {
            if expression_index == Some(true) {
                notes.push(Note::ExpressionIndexUnanalysed(table));
            }
            continue;
        }
        clocked(
            client,
            settings,
            client.batch_execute(&format!("ANALYZE {table}")),
        )
        .await
        .map_err(|f| unanswered(Asked::Analyze(table.clone()), f))?;
    }
    Ok(notes)
}

/// Ends the transaction the migration was applied in by rolling it back: whether the server
/// answered that it did. Each try waits no longer than the client's clock allows; a second try
/// follows a failed first, which a cancel request sent at the bound ([`until`]) can make fail
/// when it arrives after the statement it was meant for. When neither is answered the caller
/// drops the session: the server rolls back what a closed session left open.
pub async fn roll_back(client: &Client, settings: &Settings) -> bool {
    for _ in 0..2 {
        if client.is_closed() {
            return false;
        }
        if let Ok(Ok(())) =
            tokio::time::timeout(settings.client_limit(), client.batch_execute("ROLLBACK")).await
        {
            return true;
        }
    }
    false
}

/// The bound on how long a run holds the migration's locks (`--migration-hold`), on plancheck's
/// own clock: from just before the migration's `BEGIN` (its first statement may take an ACCESS
/// EXCLUSIVE lock, which queues every other session's reads of the table) to the rollback's
/// answer. [`until`] enforces it; what happened is kept here for the report
/// ([`Hold::fact`]).
#[derive(Debug)]
pub struct Hold {
    limit: Duration,
    started: tokio::time::Instant,
    /// Where the bound was reached: while applying (true), during the checks (false).
    reached: std::cell::Cell<Option<bool>>,
    not_run: std::cell::Cell<usize>,
    /// When the rollback was answered (or given up), and whether it was answered.
    ended: std::cell::Cell<Option<(tokio::time::Instant, bool)>>,
}

impl Hold {
    /// The clock starts now: call it just before the migration's `BEGIN`.
    pub fn start(limit: Duration) -> Hold {
        Hold {
            limit,
            started: tokio::time::Instant::now(),
            reached: Default::default(),
            not_run: Default::default(),
            ended: Default::default(),
        }
    }

    fn deadline(&self) -> tokio::time::Instant {
        self.started + self.limit
    }

    /// Whether the bound has been reached (no check after the migration starts then).
    pub fn passed(&self) -> bool {
        self.reached.get().is_some() || tokio::time::Instant::now() >= self.deadline()
    }

    /// A check after the migration not run (or stopped) because the bound was reached: its
    /// measurement, an `error` saying why.
    pub fn not_run(
        &self,
        read_path: &crate::project::ReadPath,
        check: &crate::project::ScopeCheck,
    ) -> crate::measure::Measurement {
        let applying = self.reached.get().unwrap_or(false);
        self.reached.set(Some(applying));
        self.not_run.set(self.not_run.get() + 1);
        super::check::not_run_for(
            read_path,
            check,
            super::check::Why::HoldReached {
                limit: self.limit,
                applying,
            },
        )
    }

    /// Rolls the migration back, once: the end of the hold.
    pub async fn release(&self, client: &Client, settings: &Settings) {
        if self.ended.get().is_some() {
            return;
        }
        let answered = roll_back(client, settings).await;
        self.ended
            .set(Some((tokio::time::Instant::now(), answered)));
    }

    /// What the report says of the hold.
    pub fn fact(&self) -> crate::model::MigrationHold {
        let (end, released) = self
            .ended
            .get()
            .unwrap_or((tokio::time::Instant::now(), false));
        crate::model::MigrationHold {
            limit_ms: u64::try_from(self.limit.as_millis()).unwrap_or(u64::MAX),
            held_ms: (end - self.started).as_secs_f64() * 1000.0,
            reached: self.reached.get().is_some(),
            while_applying: self.reached.get() == Some(true),
            not_run: self.not_run.get(),
            released,
        }
    }
}

/// `work` on the migration's session `client`, unless the hold's bound comes first: then the
/// statement running there is cancelled, `work` dropped, and None returned (the caller rolls
/// back with [`Hold::release`]). `applying`: `work` is the migration's own application.
pub async fn until<T>(
    client: &Client,
    hold: &Hold,
    applying: bool,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        biased;
        done = work => Some(done),
        () = tokio::time::sleep_until(hold.deadline()) => {
            if hold.reached.get().is_none() {
                hold.reached.set(Some(applying));
            }
            let cancel = client.cancel_token();
            let _ = tokio::time::timeout(
                super::check::CANCEL_WAIT,
                cancel.cancel_query(tokio_postgres::NoTls),
            )
            .await;
            None
        }
    }
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

#[cfg(test)]
mod tests {
    use super::{first_line, is_qualified_identifier, moved_back};

    #[test]
    fn only_identifiers_are_asked_about() {
        for ok in [
            "posts_idx",
            "public.posts_idx",
            "\"Posts Idx\"",
            "s.\"a\"\"b\"",
            "_x$1",
        ] {
            assert!(is_qualified_identifier(ok), "{ok}");
        }
        for bad in [
            "", "1idx", "a b", "a.", ".a", "\"\"", "\"a", "a;drop", "a.b.c", "\"a\"b\"",
        ] {
            assert!(!is_qualified_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn a_statement_is_shown_by_its_first_line_cut_at_100_characters() {
        assert_eq!(
            first_line("  DROP INDEX a;\nDROP INDEX b;"),
            "DROP INDEX a;"
        );
        let long = "x".repeat(150);
        assert_eq!(first_line(&long).chars().count(), 101);
    }

    #[test]
    fn a_sequence_behind_where_it_was_is_moved_back_and_nothing_else_is() {
        let before = [
            (1, true, Some(10)),
            (2, true, Some(10)),
            (3, false, Some(-5)),
            (4, true, None),
        ];
        // 1 set back, 2 advanced by nextval, 3 (counting down) set back, 4 first used.
        let now = [
            (1, true, Some(1)),
            (2, true, Some(12)),
            (3, false, Some(-1)),
            (4, true, Some(1)),
        ];
        assert_eq!(moved_back(&before, &now), vec![(1, 10), (3, -5)]);
        // `setval(…, false)` makes a used sequence read as never used: moved back.
        assert_eq!(moved_back(&before, &[(2, true, None)]), vec![(2, 10)]);
        // A sequence the migration dropped is not there after it: the rollback restores it.
        assert_eq!(moved_back(&before, &[]), vec![]);
    }
}
