//! What the catalog says about indexes, as the session sees them (search_path, quoting).

use tokio_postgres::Client;

use crate::measure::{ColumnFacts, IndexName};
use crate::model::{IndexInfo, Partition};

/// The columns of [`IndexInfo`], for a query over `pg_index i` joined as below.
const INDEX_COLUMNS: &str = "\
    SELECT n.nspname::text, c.relname::text, t.relname::text, am.amname::text, \
           ARRAY(SELECT pg_catalog.pg_get_indexdef(i.indexrelid, k, true) \
                 FROM pg_catalog.generate_series(1, i.indnkeyatts) AS k ORDER BY k), \
           pg_catalog.pg_get_expr(i.indpred, i.indrelid), \
           i.indisvalid, i.indisready, pg_catalog.pg_get_indexdef(i.indexrelid), \
           ARRAY(SELECT CASE i.indoption[k - 1] & 3 \
                          WHEN 0 THEN '' WHEN 1 THEN 'DESC NULLS LAST' \
                          WHEN 2 THEN 'NULLS FIRST' ELSE 'DESC' END \
                 FROM pg_catalog.generate_series(1, i.indnkeyatts) AS k ORDER BY k) \
    FROM pg_catalog.pg_index i \
    JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid \
    JOIN pg_catalog.pg_class t ON t.oid = i.indrelid \
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
    JOIN pg_catalog.pg_am am ON am.oid = c.relam ";

fn index_of(r: &tokio_postgres::Row) -> IndexInfo {
    IndexInfo {
        schema: r.get(0),
        name: r.get(1),
        table: r.get(2),
        method: r.get(3),
        keys: r.get(4),
        predicate: r.get(5),
        valid: r.get(6),
        ready: r.get(7),
        definition: r.get(8),
        orders: r.get(9),
    }
}

/// The index named `name` (`name`, `schema.name`, quoted parts allowed), or `None`.
pub async fn index_info(
    client: &Client,
    name: &str,
) -> Result<Option<IndexInfo>, tokio_postgres::Error> {
    let rows = client
        .query(
            &format!("{INDEX_COLUMNS} WHERE i.indexrelid = pg_catalog.to_regclass($1)"),
            &[&name],
        )
        .await?;
    Ok(rows.first().map(index_of))
}

/// Every other index on the table of `index`, by name.
pub async fn siblings(
    client: &Client,
    index: &IndexInfo,
) -> Result<Vec<IndexInfo>, tokio_postgres::Error> {
    let rows = client
        .query(
            &format!(
                "{INDEX_COLUMNS} WHERE t.oid = pg_catalog.to_regclass(pg_catalog.quote_ident($1) \
                 || '.' || pg_catalog.quote_ident($2)) AND c.relname OPERATOR(pg_catalog.<>) $3 \
                 ORDER BY c.relname"
            ),
            &[&index.schema, &index.table, &index.name],
        )
        .await?;
    Ok(rows.iter().map(index_of).collect())
}

/// The columns of `schema.table`, with the casts that only relabel them (see [`ColumnFacts`]).
pub async fn columns(
    client: &Client,
    schema: &str,
    table: &str,
) -> Result<Vec<ColumnFacts>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), \
                    CASE WHEN t.typtype = 'd' \
                           THEN ARRAY[pg_catalog.format_type(t.typbasetype, NULL)] \
                         WHEN a.atttypid = 'pg_catalog.varchar'::pg_catalog.regtype \
                           THEN ARRAY['text'] \
                         ELSE ARRAY[]::text[] END \
             FROM pg_catalog.pg_attribute a \
             JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
             WHERE a.attrelid = pg_catalog.to_regclass(pg_catalog.quote_ident($1) || '.' || \
                                                       pg_catalog.quote_ident($2)) \
               AND a.attnum > 0 AND NOT a.attisdropped \
             ORDER BY a.attnum",
            &[&schema, &table],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| ColumnFacts {
            name: r.get(0),
            type_name: r.get(1),
            relabels: r.get(2),
        })
        .collect())
}

/// Every index outside the system schemas (at most 20,000), to find the names nearest to one
/// that does not exist; and the schemas there are.
pub async fn index_names(
    client: &Client,
) -> Result<(Vec<IndexName>, Vec<String>), tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT n.nspname::text, c.relname::text, t.relname::text \
             FROM pg_catalog.pg_index i \
             JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid \
             JOIN pg_catalog.pg_class t ON t.oid = i.indrelid \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname OPERATOR(pg_catalog.<>) ALL \
                   (ARRAY['pg_catalog', 'information_schema', 'pg_toast']) \
             ORDER BY 1, 2 LIMIT 20000",
            &[],
        )
        .await?;
    let names = rows
        .iter()
        .map(|r| IndexName {
            schema: r.get(0),
            name: r.get(1),
            table: r.get(2),
        })
        .collect();
    let rows = client
        .query(
            "SELECT nspname::text FROM pg_catalog.pg_namespace ORDER BY 1 LIMIT 20000",
            &[],
        )
        .await?;
    Ok((names, rows.iter().map(|r| r.get(0)).collect()))
}

/// The indexes every read path of the project requires, by scope, with what the catalog says
/// of each.
/// An index whose name the server cannot even parse counts as missing here; its checks say why.
pub async fn required_indexes(
    client: &Client,
    project: &crate::project::Project,
) -> Result<Vec<crate::model::ReadPathIndexes>, crate::error::DatabaseFailure> {
    let mut out = Vec::new();
    // Read paths share indexes: each name is read once.
    let mut known: std::collections::HashMap<String, Result<Option<IndexInfo>, String>> =
        std::collections::HashMap::new();
    let mut read = async |name: &str| -> Result<_, crate::error::DatabaseFailure> {
        if let Some(found) = known.get(name) {
            return Ok(found.clone());
        }
        let found = lookup(client, name).await?;
        known.insert(name.to_string(), found.clone());
        Ok(found)
    };
    for rp in &project.read_paths {
        let mut required = Vec::new();
        let mut twins = Vec::new();
        let mut named_twins = Vec::new();
        let mut unchecked = None;
        for c in &rp.checks {
            // A scope that requires no index (`index = false`) has nothing to lint.
            let Some(index) = &c.index else { continue };
            let info = match read(index).await? {
                Ok(info) => info,
                Err(why) => {
                    unchecked = Some(why);
                    break;
                }
            };
            required.push((c.scope.clone(), index.clone(), info));
            if let Some(twin) = &c.twin {
                twins.push((c.scope.clone(), twin.clone()));
                if let crate::model::TwinDecl::Named(name) = twin
                    && !named_twins.iter().any(|(n, _)| n == name)
                {
                    match read(name).await? {
                        Ok(info) => named_twins.push((name.clone(), info)),
                        Err(why) => {
                            unchecked = Some(why);
                            break;
                        }
                    }
                }
            }
        }
        out.push(crate::model::ReadPathIndexes {
            read_path: rp.name.clone(),
            required,
            twins,
            named_twins,
            unchecked,
        });
    }
    Ok(out)
}

/// One index for the lint: its facts (`None` when there is no such index, or the server cannot
/// read its name), or why the read path is left unlinted (another session's lock held the
/// catalog read past the timeout). A lost connection is a failure of the run.
async fn lookup(
    client: &Client,
    name: &str,
) -> Result<Result<Option<IndexInfo>, String>, crate::error::DatabaseFailure> {
    match index_info(client, name).await {
        Ok(info) => Ok(Ok(info)),
        // Blocked by another session's lock (the catalog functions lock the table): this read
        // path is left unlinted, and its checks report the timeout.
        Err(e)
            if e.code().is_some_and(|c| {
                *c == tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE
                    || *c == tokio_postgres::error::SqlState::QUERY_CANCELED
            }) =>
        {
            Ok(Err(crate::report::failure::unlinted(
                name,
                &super::cause(&e),
            )))
        }
        Err(e) if e.as_db_error().is_some() => Ok(Ok(None)),
        Err(e) => Err(super::Unanswered::of(super::Asked::Catalog, &e).into()),
    }
}

/// For an index on a partitioned table: each leaf partition of the table, with its leaf of the
/// index where it has one. Empty for an index on a plain table.
pub async fn partitions(
    client: &Client,
    index: &IndexInfo,
) -> Result<Vec<Partition>, tokio_postgres::Error> {
    let rows = client
        .query(
            "WITH idx AS (SELECT pg_catalog.to_regclass(pg_catalog.quote_ident($1) || '.' || \
                                 pg_catalog.quote_ident($2)) AS oid), \
                  tab AS (SELECT pg_catalog.to_regclass(pg_catalog.quote_ident($1) || '.' || \
                                 pg_catalog.quote_ident($3)) AS oid) \
             SELECT n.nspname::text, c.relname::text, \
                    (SELECT li.relname::text \
                       FROM pg_catalog.pg_partition_tree((SELECT oid FROM idx)) it \
                       JOIN pg_catalog.pg_index i ON i.indexrelid = it.relid \
                       JOIN pg_catalog.pg_class li ON li.oid = it.relid \
                      WHERE it.isleaf AND i.indrelid = c.oid) \
             FROM pg_catalog.pg_partition_tree((SELECT oid FROM tab)) pt \
             JOIN pg_catalog.pg_class c ON c.oid = pt.relid \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE pt.isleaf AND c.relkind = 'r' \
               AND (SELECT relkind FROM pg_catalog.pg_class WHERE oid = (SELECT oid FROM tab)) = 'p' \
             ORDER BY 1, 2",
            &[&index.schema, &index.name, &index.table],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Partition {
            schema: r.get(0),
            table: r.get(1),
            leaf_index: r.get(2),
        })
        .collect())
}

/// The predicate of every partial index in the database (`pg_get_expr` of `indpred`), as the
/// session may read them.
pub async fn partial_index_predicates(
    client: &Client,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT pg_catalog.pg_get_expr(i.indpred, i.indrelid) FROM pg_catalog.pg_index i \
             WHERE i.indpred IS NOT NULL",
            &[],
        )
        .await?;
    Ok(rows.iter().filter_map(|r| r.get(0)).collect())
}

/// Every partition (table or index) with the relation at the top of its partition tree: (schema,
/// partition name, root name). A plan names the partitions it reads; a project names the root.
pub async fn partition_roots(
    client: &Client,
) -> Result<Vec<(String, String, String)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT n.nspname::pg_catalog.text, c.relname::pg_catalog.text, \
                    r.relname::pg_catalog.text \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
             JOIN pg_catalog.pg_class r \
               ON r.oid OPERATOR(pg_catalog.=) pg_catalog.pg_partition_root(c.oid) \
             WHERE c.relispartition",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}
