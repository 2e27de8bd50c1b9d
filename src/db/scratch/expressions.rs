//! The statistics of an extended statistics object's expressions (`CREATE STATISTICS … ON
//! (lower(email))`, PostgreSQL 14 and later) on the copy.
//!
//! The server keeps them in `pg_statistic_ext_data.stxdexpr` as an array of `pg_statistic`
//! rows, one per expression. So each is first written as a column's statistics are (the same
//! code, the same rules: PostgreSQL 18's restore function as the owner, before 18 the copy's
//! superuser with the base type's own input function) onto a column of a table made for this,
//! as the copy's unprivileged owner, of the expressions' own types (`CREATE TABLE … AS SELECT
//! expression … WITH NO DATA`: nothing is evaluated). Then the copy's superuser copies those
//! rows into the object's array ([`super::extended::write`]) and drops the table.

use tokio_postgres::Client;

use super::Gap;
use super::production::{OnCopy, on_copy, refused, write_column};
use crate::db::scratch::Trouble;
use crate::stats;

/// The schema of the tables holding expressions' statistics until they are copied.
pub(super) const SCHEMA: &str = "plancheck_expressions";

/// Writes the statistics of `e`'s expressions (`exprs`, as the copy prints them) onto a table
/// made for the object `stxoid` on `table`; the table, or `None` with the gap said.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write(
    admin: &Client,
    owner: &Client,
    major: u32,
    table: &OnCopy,
    stxoid: u32,
    name: &str,
    exprs: &[String],
    e: &stats::Extended,
    gaps: &mut Vec<Gap>,
) -> Result<Option<OnCopy>, Trouble> {
    let qualified: String = admin
        .query_one(
            "SELECT $1::pg_catalog.oid::pg_catalog.regclass::pg_catalog.text",
            &[&table.oid],
        )
        .await
        .map_err(refused)?
        .get(0);
    let select: Vec<String> = exprs
        .iter()
        .enumerate()
        .map(|(i, x)| format!("({x}) AS x{}", i + 1))
        .collect();
    let relname = format!("x{stxoid}");
    // As the owner, who made the object from the same text; nothing is evaluated.
    let made = owner
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {SCHEMA}; \
             CREATE TABLE {SCHEMA}.{relname} AS SELECT {} FROM {qualified} WITH NO DATA",
            select.join(", ")
        ))
        .await;
    if let Err(err) = made {
        if err.code().is_none() {
            return Err(refused(err));
        }
        gaps.push(Gap::ExtendedExpressions(name.to_string()));
        return Ok(None);
    }
    let Some(on) = on_copy(admin, SCHEMA, &relname).await? else {
        gaps.push(Gap::ExtendedExpressions(name.to_string()));
        return Ok(None);
    };
    let types: Vec<String> = admin
        .query(
            "SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) \
               FROM pg_catalog.pg_attribute a \
              WHERE a.attrelid OPERATOR(pg_catalog.=) $1::pg_catalog.oid \
                AND a.attnum OPERATOR(pg_catalog.>) 0 ORDER BY a.attnum",
            &[&on.oid],
        )
        .await
        .map_err(refused)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for (i, column) in e.expressions.iter().enumerate() {
        let mut c = column.clone();
        c.name = format!("x{}", i + 1);
        // The expression's type is the copy's own (the file prints none for it).
        c.type_name = types.get(i).cloned().unwrap_or_default();
        c.inherited = false;
        let mut own = Vec::new();
        write_column(admin, owner, major, &on, &c, &mut own).await?;
        let text = exprs.get(i).cloned().unwrap_or_default();
        gaps.extend(own.into_iter().map(|g| named(g, &text, name)));
    }
    Ok(Some(on))
}

/// A column's gap said of the expression it stands for.
fn named(gap: Gap, expression: &str, object: &str) -> Gap {
    let of = |_: String| format!("{expression} of extended statistics {object}");
    match gap {
        Gap::ValuesNotParsed { column, type_name } => Gap::ValuesNotParsed {
            column: of(column),
            type_name,
        },
        Gap::NoOperator { column, kind } => Gap::NoOperator {
            column: of(column),
            kind,
        },
        Gap::ColumnNotWritten { column, sqlstate } => Gap::ColumnNotWritten {
            column: of(column),
            sqlstate,
        },
        Gap::ColumnNotOnCopy(column) => Gap::ColumnNotOnCopy(of(column)),
        Gap::TypeDiffers { column, file, copy } => Gap::TypeDiffers {
            column: of(column),
            file,
            copy,
        },
        other => other,
    }
}
