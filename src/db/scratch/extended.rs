//! Production's extended statistics (`CREATE STATISTICS`) on the copy: the distinct counts and
//! functional dependencies of each object, written into the copy's own object of that name.
//!
//! The copy makes every extended statistics object of a table the read path reads (in the
//! table's schema), with no data. PostgreSQL has no function that restores their data (18
//! included), and their types (`pg_ndistinct`, `pg_dependencies`) take no input. So the bytes
//! of each are built here, in PostgreSQL's own serialised form (the same from 13 to 18: a
//! magic number, a type, a count, then each item's value and attribute numbers, in the
//! server's byte order), with the copy's attribute numbers for the file's column names. The
//! copy's superuser writes them into `pg_statistic_ext_data` as parameters, through a
//! binary-coercible cast from `bytea` that lives only in that transaction. No value is parsed
//! and no function of the catalog runs. The multi-column most common values are formed by
//! [`super::mcv`], the statistics of an object's expressions by [`super::expressions`].

use std::path::Path;

use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use super::Gap;
use super::production::{OnCopy, refused};
use crate::db::scratch::Trouble;
use crate::stats;

/// `STATS_NDISTINCT_MAGIC` and `STATS_NDISTINCT_TYPE_BASIC` (`statistics/statistics.h`).
const NDISTINCT_MAGIC: u32 = 0xA352_BFA4;
/// `STATS_DEPS_MAGIC` and `STATS_DEPS_TYPE_BASIC`.
const DEPENDENCIES_MAGIC: u32 = 0xB454_9A2C;
const TYPE_BASIC: u32 = 1;

/// One object's data as the copy takes it.
pub(super) struct Data {
    oid: u32,
    inherited: bool,
    ndistinct: Option<Vec<u8>>,
    dependencies: Option<Vec<u8>>,
    mcv: Option<Vec<u8>>,
    /// The table holding the expressions' statistics as its columns' (its OID), and how many.
    expressions: Option<(u32, i32)>,
}

/// `pg_ndistinct`'s serialised form (without the varlena header): for each item, its distinct
/// count and its attribute numbers.
pub(super) fn ndistinct_bytes(items: &[(Vec<i16>, f64)]) -> Vec<u8> {
    let mut out = header(NDISTINCT_MAGIC, items.len());
    for (attnums, value) in items {
        out.extend_from_slice(&value.to_ne_bytes());
        out.extend_from_slice(&i32::try_from(attnums.len()).unwrap_or(0).to_ne_bytes());
        for a in attnums {
            out.extend_from_slice(&a.to_ne_bytes());
        }
    }
    out
}

/// `pg_dependencies`'s serialised form: for each dependency its degree, its attribute count
/// (an `AttrNumber`) and attribute numbers, the implied one last.
pub(super) fn dependencies_bytes(items: &[(Vec<i16>, f64)]) -> Vec<u8> {
    let mut out = header(DEPENDENCIES_MAGIC, items.len());
    for (attnums, degree) in items {
        out.extend_from_slice(&degree.to_ne_bytes());
        out.extend_from_slice(&i16::try_from(attnums.len()).unwrap_or(0).to_ne_bytes());
        for a in attnums {
            out.extend_from_slice(&a.to_ne_bytes());
        }
    }
    out
}

fn header(magic: u32, items: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&magic.to_ne_bytes());
    out.extend_from_slice(&TYPE_BASIC.to_ne_bytes());
    out.extend_from_slice(&u32::try_from(items).unwrap_or(0).to_ne_bytes());
    out
}

/// The copy's object for `e` on `table` and the data to write into it, or the gap that keeps
/// it unwritten.
// Long because it is the object matched in order: found, its columns by name, its expressions
// by text, its kinds; then each kind's data.
#[allow(clippy::too_many_arguments)]
pub(super) async fn data_of(
    admin: &Client,
    owner: &Client,
    major: u32,
    data: &Path,
    table: &OnCopy,
    e: &stats::Extended,
    gaps: &mut Vec<Gap>,
) -> Result<Option<Data>, Trouble> {
    let name = crate::model::Relation::new(Some(&e.schema), &e.name).to_string();
    let exprs = if major >= 14 {
        "COALESCE(pg_catalog.pg_get_statisticsobjdef_expressions(s.oid), '{}')"
    } else {
        "'{}'::pg_catalog.text[]"
    };
    let rows = admin
        .query(
            format!(
                "SELECT s.oid, s.stxkeys::pg_catalog.int2[], s.stxkind::pg_catalog.text[], \
                        {exprs} \
                   FROM pg_catalog.pg_statistic_ext s \
                   JOIN pg_catalog.pg_namespace n \
                     ON n.oid OPERATOR(pg_catalog.=) s.stxnamespace \
                  WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.name \
                    AND s.stxname OPERATOR(pg_catalog.=) $2::pg_catalog.name \
                    AND s.stxrelid OPERATOR(pg_catalog.=) $3::pg_catalog.oid"
            )
            .as_str(),
            &[&e.schema, &e.name, &table.oid],
        )
        .await
        .map_err(refused)?;
    let Some(row) = rows.first() else {
        gaps.push(Gap::ExtendedNotOnCopy(name));
        return Ok(None);
    };
    let oid: u32 = row.get(0);
    let mut keys: Vec<i16> = row.get(1);
    let kinds: Vec<String> = row.get(2);
    let copy_exprs: Vec<String> = row.get(3);
    // The file's keys are its column names, then its expressions as the server prints them:
    // the columns are the copy's attribute numbers of those names, the expressions must read
    // as the copy's own, in order.
    let Some(columns) = e.keys.len().checked_sub(copy_exprs.len()) else {
        gaps.push(Gap::ExtendedDiffers(name));
        return Ok(None);
    };
    if e.keys[columns..] != copy_exprs[..]
        || (!e.expressions.is_empty() && e.expressions.len() != copy_exprs.len())
    {
        gaps.push(Gap::ExtendedDiffers(name));
        return Ok(None);
    }
    let rows = admin
        .query(
            "SELECT k.at, a.attnum \
               FROM pg_catalog.unnest($2::pg_catalog.text[]) WITH ORDINALITY AS k(name, at) \
               LEFT JOIN pg_catalog.pg_attribute a \
                 ON a.attrelid OPERATOR(pg_catalog.=) $1::pg_catalog.oid \
                AND a.attname OPERATOR(pg_catalog.=) k.name::pg_catalog.name \
                AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped \
              ORDER BY k.at",
            &[&table.oid, &e.keys[..columns].to_vec()],
        )
        .await
        .map_err(refused)?;
    let attnums: Option<Vec<i16>> = rows.iter().map(|r| r.get::<_, Option<i16>>(1)).collect();
    let Some(mut attnums) = attnums else {
        gaps.push(Gap::ExtendedDiffers(name));
        return Ok(None);
    };
    let mut mapped = attnums.clone();
    mapped.sort_unstable();
    keys.sort_unstable();
    let has = |k: &str| e.kinds.iter().any(|x| x == k);
    let copy_has = |k: &str| kinds.iter().any(|x| x == k);
    if mapped != keys || ["d", "f", "m"].iter().any(|k| has(k) && !copy_has(k)) {
        gaps.push(Gap::ExtendedDiffers(name));
        return Ok(None);
    }
    // The serialised forms number the expressions -1, -2, … after the columns.
    attnums.extend((1..=copy_exprs.len()).map(|i| -i16::try_from(i).unwrap_or(i16::MAX)));
    let expressions = if copy_exprs.is_empty() || e.expressions.is_empty() {
        None
    } else {
        super::expressions::write(admin, owner, major, table, oid, &name, &copy_exprs, e, gaps)
            .await?
    };
    let mcv = if has("m") && e.most_common_vals.is_some() {
        super::mcv::form(
            admin,
            major,
            data,
            table,
            expressions.as_ref(),
            e,
            &attnums,
            gaps,
        )
        .await?
    } else {
        None
    };
    let (ndistinct, dependencies) = bytes_of(e, &attnums);
    if ndistinct.is_none() && dependencies.is_none() && mcv.is_none() && expressions.is_none() {
        return Ok(None);
    }
    Ok(Some(Data {
        oid,
        inherited: e.inherited,
        ndistinct,
        dependencies,
        mcv,
        expressions: expressions.map(|on| (on.oid, i32::try_from(copy_exprs.len()).unwrap_or(0))),
    }))
}

/// The serialised distinct counts and dependencies of `e` (where it was made to hold them),
/// with `attnums[p]` the copy's attribute number of the key at position `p`.
fn bytes_of(e: &stats::Extended, attnums: &[i16]) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let has = |k: &str| e.kinds.iter().any(|x| x == k);
    let at = |positions: &[usize]| -> Vec<i16> { positions.iter().map(|p| attnums[*p]).collect() };
    let ndistinct = e
        .n_distinct
        .as_ref()
        .filter(|n| has("d") && !n.is_empty())
        .map(|n| {
            let items: Vec<(Vec<i16>, f64)> = n.iter().map(|d| (at(&d.keys), d.value)).collect();
            ndistinct_bytes(&items)
        });
    let dependencies = e
        .dependencies
        .as_ref()
        .filter(|d| has("f") && !d.is_empty())
        .map(|d| {
            let items: Vec<(Vec<i16>, f64)> = d
                .iter()
                .map(|d| {
                    let mut k = d.from.clone();
                    k.push(d.to);
                    (at(&k), d.degree)
                })
                .collect();
            dependencies_bytes(&items)
        });
    (ndistinct, dependencies)
}

/// Writes every object's data, as the superuser, in one transaction that makes the casts from
/// `bytea` and drops them again.
pub(super) async fn write(admin: &Client, major: u32, all: &[Data]) -> Result<(), Trouble> {
    if all.is_empty() {
        return Ok(());
    }
    let written = write_in_transaction(admin, major, all).await;
    if written.is_err() {
        let _ = admin.batch_execute("ROLLBACK").await;
    }
    written
}

// Long because each kind of data is a column of one row, each with its own cast and, by
// major, its own parameters (the expressions' from 14, the inheritance tree's from 15).
async fn write_in_transaction(admin: &Client, major: u32, all: &[Data]) -> Result<(), Trouble> {
    admin
        .batch_execute(
            "BEGIN; \
             CREATE CAST (pg_catalog.bytea AS pg_catalog.pg_ndistinct) WITHOUT FUNCTION; \
             CREATE CAST (pg_catalog.bytea AS pg_catalog.pg_dependencies) WITHOUT FUNCTION; \
             CREATE CAST (pg_catalog.bytea AS pg_catalog.pg_mcv_list) WITHOUT FUNCTION",
        )
        .await
        .map_err(refused)?;
    // From 14 an object's expressions have their statistics, as rows of `pg_statistic`.
    let (expr_column, expr_value) = if major >= 14 {
        (
            ", stxdexpr",
            ", CASE WHEN $5::pg_catalog.oid IS NULL THEN NULL ELSE ARRAY( \
                 SELECT CASE WHEN st.starelid IS NULL THEN NULL ELSE ROW( \
                     0::pg_catalog.oid, 0::pg_catalog.int2, false, st.stanullfrac, \
                     st.stawidth, st.stadistinct, st.stakind1, st.stakind2, st.stakind3, \
                     st.stakind4, st.stakind5, st.staop1, st.staop2, st.staop3, st.staop4, \
                     st.staop5, st.stacoll1, st.stacoll2, st.stacoll3, st.stacoll4, \
                     st.stacoll5, st.stanumbers1, st.stanumbers2, st.stanumbers3, \
                     st.stanumbers4, st.stanumbers5, st.stavalues1, st.stavalues2, \
                     st.stavalues3, st.stavalues4, st.stavalues5 \
                   )::pg_catalog.pg_statistic END \
                   FROM pg_catalog.generate_series(1, $6::pg_catalog.int4) AS k \
                   LEFT JOIN pg_catalog.pg_statistic st \
                     ON st.starelid OPERATOR(pg_catalog.=) $5::pg_catalog.oid \
                    AND st.staattnum OPERATOR(pg_catalog.=) k \
                    AND NOT st.stainherit \
                  ORDER BY k) END",
        )
    } else {
        ("", "")
    };
    // From 15 a table's data and its inheritance tree's are two rows.
    let (inherit_column, inherit_value, inherit_match) = if major >= 15 {
        (
            ", stxdinherit",
            ", $7::pg_catalog.bool",
            " AND stxdinherit OPERATOR(pg_catalog.=) $2::pg_catalog.bool",
        )
    } else {
        ("", "", "")
    };
    let delete = format!(
        "DELETE FROM pg_catalog.pg_statistic_ext_data \
          WHERE stxoid OPERATOR(pg_catalog.=) $1::pg_catalog.oid{inherit_match}"
    );
    let insert = format!(
        "INSERT INTO pg_catalog.pg_statistic_ext_data \
             (stxoid, stxdndistinct, stxddependencies, stxdmcv{expr_column}{inherit_column}) \
         VALUES ($1::pg_catalog.oid, $2::pg_catalog.bytea::pg_catalog.pg_ndistinct, \
                 $3::pg_catalog.bytea::pg_catalog.pg_dependencies, \
                 $4::pg_catalog.bytea::pg_catalog.pg_mcv_list{expr_value}{inherit_value})"
    );
    for d in all {
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&d.oid];
        if major >= 15 {
            params.push(&d.inherited);
        }
        admin
            .execute(delete.as_str(), &params)
            .await
            .map_err(refused)?;
        let (table, count) = (d.expressions.map(|x| x.0), d.expressions.map_or(0, |x| x.1));
        let mut params: Vec<&(dyn ToSql + Sync)> =
            vec![&d.oid, &d.ndistinct, &d.dependencies, &d.mcv];
        if major >= 14 {
            params.push(&table);
            params.push(&count);
        }
        if major >= 15 {
            params.push(&d.inherited);
        }
        admin
            .execute(insert.as_str(), &params)
            .await
            .map_err(refused)?;
    }
    admin
        .batch_execute(
            "DROP CAST (pg_catalog.bytea AS pg_catalog.pg_ndistinct); \
             DROP CAST (pg_catalog.bytea AS pg_catalog.pg_dependencies); \
             DROP CAST (pg_catalog.bytea AS pg_catalog.pg_mcv_list); \
             COMMIT",
        )
        .await
        .map_err(refused)?;
    // The tables that stood for expressions are copied: gone, each by its own name (a schema
    // of that name the database had keeps its objects).
    for d in all {
        if d.expressions.is_some() {
            admin
                .batch_execute(&format!(
                    "DROP TABLE IF EXISTS {}.x{}",
                    super::expressions::SCHEMA,
                    d.oid
                ))
                .await
                .map_err(refused)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layouts of `statext_ndistinct_serialize` and `statext_dependencies_serialize`, byte
    /// by byte (the server reading them back is tested in `tests/stats_check.rs`).
    #[test]
    fn the_serialised_forms_are_postgresql_s() {
        let n = ndistinct_bytes(&[(vec![1, 3], 42.0)]);
        let mut want = Vec::new();
        want.extend_from_slice(&0xA352_BFA4u32.to_ne_bytes());
        want.extend_from_slice(&1u32.to_ne_bytes());
        want.extend_from_slice(&1u32.to_ne_bytes());
        want.extend_from_slice(&42.0f64.to_ne_bytes());
        want.extend_from_slice(&2i32.to_ne_bytes());
        want.extend_from_slice(&1i16.to_ne_bytes());
        want.extend_from_slice(&3i16.to_ne_bytes());
        assert_eq!(n, want);
        // SizeOfHeader + SizeOfItem(2) = 12 + (8 + 4 + 4)
        assert_eq!(n.len(), 28);
        let d = dependencies_bytes(&[(vec![2, 1], 0.5), (vec![1, 3, 2], 1.0)]);
        // 12 + (8 + 2 + 4) + (8 + 2 + 6)
        assert_eq!(d.len(), 42);
        assert_eq!(&d[0..4], &0xB454_9A2Cu32.to_ne_bytes());
        assert_eq!(&d[8..12], &2u32.to_ne_bytes());
        assert_eq!(&d[12..20], &0.5f64.to_ne_bytes());
        assert_eq!(&d[20..22], &2i16.to_ne_bytes());
        assert_eq!(
            &d[22..26],
            [2i16.to_ne_bytes(), 1i16.to_ne_bytes()].concat()
        );
        assert_eq!(&d[34..36], &3i16.to_ne_bytes());
    }
}
