//! `plancheck stats export`: production's statistics read from its catalog, for
//! [`crate::stats::File`].
//!
//! What it asks, all in one read-only transaction (one snapshot), each statement bounded by
//! `statement_timeout` and `lock_timeout` and by plancheck's own clock:
//!
//! - `pg_class`, `pg_index`, `pg_am`: the tables' and indexes' sizes, kinds, keys and OID order;
//!   `pg_relation_size` (the pages the planner scales `reltuples` by), which takes an ACCESS
//!   SHARE lock on the relation for a moment, as any `SELECT` does.
//! - `pg_stats`, `pg_stats_ext`, `pg_stats_ext_exprs`: the views PostgreSQL shows a role the
//!   statistics of the columns it may read; a column the role may not read is left out by the
//!   server itself.
//! - `pg_settings`: the planner settings the exporting session runs with (the role's and the
//!   database's own settings included).
//! - Per B-tree, its height from pageinspect's `bt_metap` where the role may call it (else an
//!   estimate, said as such), and the lowest and highest key of each column that leads a
//!   B-tree, read through the index (`ORDER BY … LIMIT 1`): the only reads of a table's rows,
//!   two index entries per column.
//!
//! The session's `search_path` is emptied first, as pg_dump does: every name below resolves in
//! `pg_catalog`, never in a schema the database's users can create in.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};

use super::check::Settings;
use super::{Asked, Unanswered};
use crate::error::DatabaseFailure;
use crate::stats::{self, Column, Dependency, Extended, Index, Ndistinct, Relation, Size};

/// What to export.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `[SCHEMA.]TABLE` names; empty: every table, partitioned table and materialized view
    /// outside the system schemas.
    pub tables: Vec<String>,
    /// The SQL a project's read paths run (each scope's statement and setup): every table it
    /// may read is exported too ([`read_path_tables`]).
    pub read_paths: Vec<String>,
    pub redact: Vec<stats::Redact>,
}

/// A name that matched nothing, or another failure the user can act on.
#[derive(Debug)]
pub enum Failed {
    Database(DatabaseFailure),
    /// `--table` named no table the role can see.
    NoSuchTable(String),
    /// `--redact` matched no column exported.
    RedactMatchedNothing(String),
}

impl From<DatabaseFailure> for Failed {
    fn from(e: DatabaseFailure) -> Failed {
        Failed::Database(e)
    }
}

impl From<Unanswered> for Failed {
    fn from(e: Unanswered) -> Failed {
        Failed::Database(e.into())
    }
}

struct Session<'a> {
    client: &'a Client,
    limit: Duration,
}

impl Session<'_> {
    async fn rows(
        &self,
        asked: Asked,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Unanswered> {
        self.bounded(asked, self.client.query(sql, params)).await
    }

    async fn execute(&self, asked: Asked, sql: &str) -> Result<(), Unanswered> {
        self.bounded(asked, self.client.batch_execute(sql)).await
    }

    /// `work`'s answer, or no answer within plancheck's own limit.
    async fn bounded<T>(
        &self,
        asked: Asked,
        work: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Unanswered> {
        match tokio::time::timeout(self.limit, work).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(Unanswered::of(asked, &e)),
            Err(_) => Err(Unanswered {
                asked,
                cause: format!(
                    "no answer in {} s (plancheck's clock)",
                    self.limit.as_secs()
                ),
            }),
        }
    }
}

/// Reads the statistics of `selection` on `client`, a session bounded by `settings`.
pub async fn export(
    client: &Client,
    settings: &Settings,
    selection: &Selection,
) -> Result<stats::File, Failed> {
    super::check::bound_session(client, settings).await?;
    let s = Session {
        client,
        limit: settings.client_limit(),
    };
    s.execute(
        Asked::BeginExport,
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    )
    .await?;
    let file = read_all(&s, selection).await;
    // Read-only: nothing to keep; a failure above leaves the transaction to this rollback.
    let _ = s.execute(Asked::RollbackExport, "ROLLBACK").await;
    file
}

// Long because it is the export's one sequence of reads, in the order the snapshot and the
// emptied search_path require; each step is a function of its own.
async fn read_all(s: &Session<'_>, selection: &Selection) -> Result<stats::File, Failed> {
    let head = s
        .rows(
            Asked::ServerVersion,
            "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4, \
                    pg_catalog.current_setting('server_version'), \
                    pg_catalog.current_setting('block_size')::pg_catalog.int4, \
                    pg_catalog.to_char(pg_catalog.timezone('UTC', pg_catalog.now()), \
                                       'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), \
                    d.datcollate::pg_catalog.text, d.datctype::pg_catalog.text \
             FROM pg_catalog.pg_database d \
             WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()",
            &[],
        )
        .await?;
    let Some(head) = head.first() else {
        return Err(Unanswered {
            asked: Asked::ServerVersion,
            cause: "the server has no row for its own database in pg_database".to_string(),
        }
        .into());
    };
    let version_num: i32 = head.get(0);
    let version_num = u32::try_from(version_num).unwrap_or(0);
    let server = stats::Server {
        version_num,
        version: head.get(1),
        block_size: u32::try_from(head.get::<_, i32>(2)).unwrap_or(0),
        collate: head.get(4),
        ctype: head.get(5),
        locale_provider: None,
        locale: None,
    };
    let mut server = server;
    if version_num >= 150_000 {
        let column = if version_num >= 170_000 {
            "d.datlocale"
        } else {
            "d.daticulocale"
        };
        let rows = s
            .rows(
                Asked::ServerVersion,
                &format!(
                    "SELECT d.datlocprovider::pg_catalog.text, {column}::pg_catalog.text \
                       FROM pg_catalog.pg_database d \
                      WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()"
                ),
                &[],
            )
            .await?;
        if let Some(r) = rows.first() {
            server.locale_provider = r.get(0);
            server.locale = r.get(1);
        }
    }
    let exported_at: String = head.get(3);
    // Named tables are resolved as the role names them (its search_path); from then on every
    // name is pg_catalog's.
    let named = named_tables(s, &selection.tables).await?;
    // Values printed in one form whatever the role's settings, as pg_dump prints them: the
    // copy parses them back in the same.
    s.execute(
        Asked::BeginExport,
        "SET LOCAL search_path = ''; SET LOCAL DateStyle = 'ISO, YMD'; \
         SET LOCAL IntervalStyle = 'postgres'; SET LOCAL TimeZone = 'UTC'; \
         SET LOCAL extra_float_digits = 3; SET LOCAL bytea_output = 'hex'",
    )
    .await?;
    let oids = if selection.tables.is_empty() && selection.read_paths.is_empty() {
        all_tables(s).await?
    } else {
        let mut oids = named;
        for oid in read_path_tables(s, &selection.read_paths).await? {
            if !oids.contains(&oid) {
                oids.push(oid);
            }
        }
        oids
    };
    let mut relations = relations(s, &oids).await?;
    let index_oids: Vec<u32> = relations
        .values()
        .flat_map(|(_, indexes)| indexes.iter().map(|(oid, _, _)| *oid))
        .collect();
    let all: Vec<u32> = oids.iter().copied().chain(index_oids).collect();
    let mut columns = columns(s, &all, version_num).await?;
    let mut extended = extended(s, &oids, version_num).await?;
    let settings = planner_settings(s).await?;
    let bt_metap = pageinspect(s, "bt_metap").await?;
    let gin_metapage = match pageinspect(s, "gin_metapage_info").await? {
        Some(info) => pageinspect(s, "get_raw_page").await?.map(|raw| {
            format!("{info}({raw}($1::pg_catalog.oid::pg_catalog.regclass::pg_catalog.text, 0))")
        }),
        None => None,
    };
    let mut out = Vec::new();
    for oid in &oids {
        // A column's ends, read once however many B-trees it leads.
        let mut ends = BTreeMap::new();
        let Some((mut relation, indexes)) = relations.remove(oid) else {
            continue;
        };
        relation.columns = columns.remove(oid).unwrap_or_default();
        relation.extended = extended.remove(oid).unwrap_or_default();
        for (index_oid, probe, mut index) in indexes {
            index.columns = columns.remove(&index_oid).unwrap_or_default();
            if index.method == "btree" && probe.storage {
                index.btree = Some(
                    btree(
                        s,
                        &relation,
                        &index,
                        (index_oid, probe),
                        &bt_metap,
                        &mut ends,
                    )
                    .await?,
                );
            }
            if index.method == "gin" && probe.storage {
                index.gin = gin(s, index_oid, &gin_metapage).await?;
            }
            relation.indexes.push(index);
        }
        out.push(relation);
    }
    let mut file = stats::File {
        format: stats::FORMAT.to_string(),
        version: stats::VERSION,
        exported_at,
        server,
        settings,
        redacted: Vec::new(),
        relations: out,
    };
    redact(&mut file, &selection.redact)?;
    Ok(file)
}

/// Every table, partitioned table and materialized view outside the system schemas, in name
/// order.
async fn all_tables(s: &Session<'_>) -> Result<Vec<u32>, Failed> {
    {
        let rows = s
            .rows(
                Asked::ExportTables,
                "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relkind IN ('r', 'p', 'm') \
                   AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_' \
                 ORDER BY n.nspname, c.relname",
                &[],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

/// The relations named `$1` (bare, in any schema) or `$2`.`$3`, what a view among them reads,
/// and every partition and inheritance child: the tables, partitioned tables and materialized
/// views of [`read_path_tables`].
const READ_PATH_TABLES: &str = "WITH RECURSIVE tree(oid) AS ( \
               SELECT c.oid FROM pg_catalog.pg_class c \
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,m,v}'::pg_catalog.\"char\"[]) \
                  AND n.nspname OPERATOR(pg_catalog.<>) 'information_schema' \
                  AND n.nspname OPERATOR(pg_catalog.!~) '^pg_' \
                  AND (c.relname::pg_catalog.text OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[]) \
                       OR (n.nspname::pg_catalog.text, c.relname::pg_catalog.text) IN \
                          (SELECT * FROM ROWS FROM (pg_catalog.unnest($2::pg_catalog.text[]), \
                                                    pg_catalog.unnest($3::pg_catalog.text[])))) \
               UNION \
               SELECT x.child FROM tree t CROSS JOIN LATERAL ( \
                 SELECT d.refobjid FROM pg_catalog.pg_rewrite r \
                   JOIN pg_catalog.pg_depend d \
                     ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass \
                    AND d.objid OPERATOR(pg_catalog.=) r.oid \
                    AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass \
                  WHERE r.ev_class OPERATOR(pg_catalog.=) t.oid \
                    AND d.refobjid OPERATOR(pg_catalog.<>) t.oid \
                 UNION \
                 SELECT i.inhrelid FROM pg_catalog.pg_inherits i \
                  WHERE i.inhparent OPERATOR(pg_catalog.=) t.oid) x(child)) \
             SELECT c.oid FROM tree t \
               JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.oid \
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
              WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,m}'::pg_catalog.\"char\"[]) \
                AND n.nspname OPERATOR(pg_catalog.!~) '^pg_' \
              ORDER BY n.nspname, c.relname";

/// The tables, partitioned tables and materialized views the statements `texts` may read,
/// from the catalog alone: every relation named like an identifier of the text (a bare name in
/// any schema, `a.b` in schema `a`), and of the bodies of the SQL and PL/pgSQL functions the
/// text calls (to a fixed point); then what a view reads, and every partition and inheritance
/// child. More than the plans read, never less by these rules: a table only a function of
/// another language reads is missed, and `check --stats` then says the file does not size it.
async fn read_path_tables(s: &Session<'_>, texts: &[String]) -> Result<Vec<u32>, Failed> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let mut names = crate::sql::names::Names::default();
    let add = |text: &str, names: &mut crate::sql::names::Names| {
        let n = crate::sql::names::names_in(text);
        names.relations.extend(n.relations);
        names.functions.extend(n.functions);
        names.words.extend(n.words);
    };
    for text in texts {
        add(text, &mut names);
    }
    let mut read: BTreeSet<String> = BTreeSet::new();
    // Bounded: each round reads only functions not read before.
    for _ in 0..16 {
        let fresh: Vec<String> = names.functions.difference(&read).cloned().collect();
        if fresh.is_empty() {
            break;
        }
        read.extend(fresh.iter().cloned());
        let rows = s
            .rows(
                Asked::ExportTables,
                // The body as written; a standard SQL body (`BEGIN ATOMIC`) has none, and is
                // printed back.
                "SELECT CASE WHEN p.prosrc OPERATOR(pg_catalog.=) '' \
                             THEN pg_catalog.pg_get_functiondef(p.oid) ELSE p.prosrc END \
                   FROM pg_catalog.pg_proc p \
                   JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang \
                  WHERE p.proname OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[]) \
                    AND p.prokind OPERATOR(pg_catalog.=) ANY ('{f,p}'::pg_catalog.\"char\"[]) \
                    AND l.lanname OPERATOR(pg_catalog.=) ANY ('{sql,plpgsql}'::pg_catalog.text[]) \
                    AND p.oid OPERATOR(pg_catalog.>=) 16384",
                &[&fresh],
            )
            .await?;
        for r in rows {
            if let Some(body) = r.get::<_, Option<String>>(0) {
                add(&body, &mut names);
            }
        }
    }
    let (schemas, relnames): (Vec<String>, Vec<String>) = names
        .relations
        .iter()
        .filter_map(|(schema, name)| Some((schema.clone()?, name.clone())))
        .unzip();
    let words: Vec<String> = names.words.into_iter().collect();
    let rows = s
        .rows(
            Asked::ExportTables,
            READ_PATH_TABLES,
            &[&words, &schemas, &relnames],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The OIDs of the tables named, in the order given.
async fn named_tables(s: &Session<'_>, named: &[String]) -> Result<Vec<u32>, Failed> {
    let mut oids = Vec::new();
    for name in named {
        // The name is data: `to_regclass` parses it as the server parses a table's name, and
        // resolves an unqualified one by the role's own search_path (set back for the call).
        let rows = s
            .rows(
                Asked::ExportTables,
                "SELECT c.oid FROM pg_catalog.pg_class c \
                 WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) \
                   AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,m}'::pg_catalog.\"char\"[])",
                &[name],
            )
            .await?;
        match rows.first() {
            Some(r) => {
                let oid: u32 = r.get(0);
                if !oids.contains(&oid) {
                    oids.push(oid);
                }
            }
            None => return Err(Failed::NoSuchTable(name.clone())),
        }
    }
    Ok(oids)
}

type Indexes = Vec<(u32, Probe, Index)>;

/// What may be read of an index beyond the catalog.
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// It has pages of its own (not a partitioned table's index): a height.
    storage: bool,
    /// The planner reads its leading column's end keys from it, as `get_actual_variable_range`
    /// does: a valid B-tree, not partial, on a plain column, in its type's default operator
    /// class and the column's collation. So `ORDER BY column LIMIT 1` is served by it, never by
    /// reading the whole table; for any other index the ends are not read.
    ends: bool,
}

async fn relations(
    s: &Session<'_>,
    oids: &[u32],
) -> Result<BTreeMap<u32, (Relation, Indexes)>, Failed> {
    let rows = s
        .rows(
            Asked::ExportSizes,
            "SELECT c.oid, n.nspname::text, c.relname::text, c.relkind::text, \
                    c.relpages::int8, c.reltuples::float8, c.relallvisible::int8, \
                    pg_relation_size(c.oid) / current_setting('block_size')::int8 \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.oid = ANY($1::oid[])",
            &[&oids],
        )
        .await?;
    let mut out = BTreeMap::new();
    for r in rows {
        out.insert(
            r.get::<_, u32>(0),
            (
                Relation {
                    schema: r.get(1),
                    name: r.get(2),
                    kind: r.get(3),
                    size: size_of(&r, 4),
                    columns: Vec::new(),
                    indexes: Vec::new(),
                    extended: Vec::new(),
                },
                Vec::new(),
            ),
        );
    }
    let rows = s
        .rows(
            Asked::ExportIndexes,
            "SELECT i.indrelid, c.oid, c.relname::text, am.amname::text, \
                    c.relpages::int8, c.reltuples::float8, c.relallvisible::int8, \
                    pg_relation_size(c.oid) / current_setting('block_size')::int8, \
                    ARRAY(SELECT a.attname::text \
                          FROM generate_series(0, i.indnkeyatts - 1) AS k \
                          LEFT JOIN pg_attribute a \
                            ON a.attrelid = i.indrelid AND a.attnum = i.indkey[k] \
                          ORDER BY k), \
                    c.relkind <> 'I', \
                    i.indisvalid AND i.indpred IS NULL AND i.indkey[0] <> 0 \
                      AND opc.opcdefault AND i.indcollation[0] = a0.attcollation \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_am am ON am.oid = c.relam \
             JOIN pg_opclass opc ON opc.oid = i.indclass[0] \
             LEFT JOIN pg_attribute a0 ON a0.attrelid = i.indrelid AND a0.attnum = i.indkey[0] \
             WHERE i.indrelid = ANY($1::oid[]) \
             ORDER BY i.indrelid, c.oid",
            &[&oids],
        )
        .await?;
    for r in rows {
        let table: u32 = r.get(0);
        if let Some((_, indexes)) = out.get_mut(&table) {
            indexes.push((
                r.get(1),
                Probe {
                    storage: r.get(9),
                    ends: r.get::<_, Option<bool>>(10).unwrap_or(false),
                },
                Index {
                    name: r.get(2),
                    method: r.get(3),
                    size: size_of(&r, 4),
                    keys: r.get::<_, Vec<Option<String>>>(8),
                    btree: None,
                    gin: None,
                    columns: Vec::new(),
                },
            ));
        }
    }
    Ok(out)
}

fn size_of(r: &Row, at: usize) -> Size {
    Size {
        relpages: r.get(at),
        reltuples: r.get(at + 1),
        relallvisible: r.get(at + 2),
        blocks: r.get(at + 3),
    }
}

/// `pg_stats` of the relations (tables, and indexes for their expression keys), by OID.
async fn columns(
    s: &Session<'_>,
    oids: &[u32],
    version_num: u32,
) -> Result<BTreeMap<u32, Vec<Column>>, Failed> {
    let sql = format!(
        "SELECT c.oid, s.attname::text, format_type(a.atttypid, a.atttypmod), s.inherited, {} \
         FROM pg_stats s \
         JOIN pg_namespace n ON n.nspname = s.schemaname \
         JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename \
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = s.attname \
         WHERE c.oid = ANY($1::oid[]) \
         ORDER BY c.oid, a.attnum, s.inherited",
        statistics("s", version_num >= 170000)
    );
    let rows = s.rows(Asked::ExportColumns, &sql, &[&oids]).await?;
    let mut out: BTreeMap<u32, Vec<Column>> = BTreeMap::new();
    for r in rows {
        out.entry(r.get(0)).or_default().push(column_of(&r, 1));
    }
    Ok(out)
}

/// The statistics of a `pg_stats`-shaped view aliased `alias`, in [`column_of`]'s order after
/// the name, type and `inherited`; `ranges`: the view has PostgreSQL 17's range statistics.
fn statistics(alias: &str, ranges: bool) -> String {
    let ranges = if ranges {
        format!(
            "{alias}.range_length_histogram::text, {alias}.range_empty_frac::float8, \
             {alias}.range_bounds_histogram::text"
        )
    } else {
        "NULL::text, NULL::float8, NULL::text".to_string()
    };
    format!(
        "{alias}.null_frac::float8, {alias}.avg_width, {alias}.n_distinct::float8, \
         {alias}.most_common_vals::text, {alias}.most_common_freqs::float8[], \
         {alias}.histogram_bounds::text, {alias}.correlation::float8, \
         {alias}.most_common_elems::text, {alias}.most_common_elem_freqs::float8[], \
         {alias}.elem_count_histogram::float8[], {ranges}"
    )
}

/// A `pg_stats`-shaped row from column `at`: name, type, inherited, then the statistics.
fn column_of(r: &Row, at: usize) -> Column {
    Column {
        name: r.get(at),
        type_name: r.get(at + 1),
        inherited: r.get(at + 2),
        null_frac: r.get(at + 3),
        avg_width: r.get(at + 4),
        n_distinct: r.get(at + 5),
        most_common_vals: r.get(at + 6),
        most_common_freqs: r.get(at + 7),
        histogram_bounds: r.get(at + 8),
        correlation: r.get(at + 9),
        most_common_elems: r.get(at + 10),
        most_common_elem_freqs: r.get(at + 11),
        elem_count_histogram: r.get(at + 12),
        range_length_histogram: r.get(at + 13),
        range_empty_frac: r.get(at + 14),
        range_bounds_histogram: r.get(at + 15),
        redacted: false,
    }
}

/// Extended statistics (`pg_stats_ext`, and `pg_stats_ext_exprs` from PostgreSQL 14), by the
/// table's OID. Long for its two version-dependent queries and the mapping of the text forms'
/// attnums to key positions, which belong together.
async fn extended(
    s: &Session<'_>,
    oids: &[u32],
    version_num: u32,
) -> Result<BTreeMap<u32, Vec<Extended>>, Failed> {
    let (exprs, inherited) = (
        if version_num >= 140000 {
            "coalesce(e.exprs, '{}')"
        } else {
            "'{}'::text[]"
        },
        if version_num >= 150000 {
            "e.inherited"
        } else {
            "false"
        },
    );
    let sql = format!(
        "SELECT x.stxrelid, e.statistics_schemaname::text, e.statistics_name::text, \
                x.stxkeys::int2[], coalesce(e.attnames::text[], '{{}}'), {exprs}, \
                x.stxkind::text[], {inherited}, e.n_distinct::text, e.dependencies::text, \
                e.most_common_vals::text, e.most_common_freqs, e.most_common_base_freqs \
         FROM pg_stats_ext e \
         JOIN pg_namespace sn ON sn.nspname = e.statistics_schemaname \
         JOIN pg_statistic_ext x ON x.stxnamespace = sn.oid AND x.stxname = e.statistics_name \
         WHERE x.stxrelid = ANY($1::oid[]) \
         ORDER BY x.stxrelid, x.oid"
    );
    let rows = s.rows(Asked::ExportExtended, &sql, &[&oids]).await?;
    let mut out: BTreeMap<u32, Vec<Extended>> = BTreeMap::new();
    for r in rows {
        let attnums: Vec<i16> = r.get(3);
        let names: Vec<String> = r.get(4);
        let exprs: Vec<String> = r.get(5);
        // The keys as the text forms number them: the columns by attnum, the expressions -1,
        // -2, …; here positions in `keys`.
        let mut keys = names.clone();
        keys.extend(exprs.iter().cloned());
        let mut position: BTreeMap<i64, usize> = BTreeMap::new();
        for (i, attnum) in attnums.iter().enumerate() {
            position.insert(i64::from(*attnum), i);
        }
        for i in 0..exprs.len() {
            position.insert(-(i as i64) - 1, names.len() + i);
        }
        let schema: String = r.get(1);
        let name: String = r.get(2);
        let at = |what: &str| format!("{schema}.{name} {what}");
        let n_distinct = r
            .get::<_, Option<String>>(8)
            .map(|t| ndistinct(&t, &position).ok_or_else(|| at("n_distinct")))
            .transpose()
            .map_err(unreadable)?;
        let dependencies = r
            .get::<_, Option<String>>(9)
            .map(|t| dependencies(&t, &position).ok_or_else(|| at("dependencies")))
            .transpose()
            .map_err(unreadable)?;
        out.entry(r.get(0)).or_default().push(Extended {
            schema: schema.clone(),
            name: name.clone(),
            keys,
            kinds: r.get(6),
            inherited: r.get(7),
            n_distinct,
            dependencies,
            most_common_vals: r.get(10),
            most_common_freqs: r.get(11),
            most_common_base_freqs: r.get(12),
            expressions: Vec::new(),
        });
    }
    if version_num >= 140000 {
        let sql = format!(
            "SELECT x.stxrelid, e.statistics_schemaname::text, e.statistics_name::text, \
                        e.expr, 'expression', {inherited}, {} \
                 FROM pg_stats_ext_exprs e \
                 JOIN pg_namespace sn ON sn.nspname = e.statistics_schemaname \
                 JOIN pg_statistic_ext x \
                   ON x.stxnamespace = sn.oid AND x.stxname = e.statistics_name \
                 WHERE x.stxrelid = ANY($1::oid[]) \
                 ORDER BY x.stxrelid, x.oid",
            statistics("e", false)
        );
        let rows = s.rows(Asked::ExportExtended, &sql, &[&oids]).await?;
        for r in rows {
            let (table, schema, name): (u32, String, String) = (r.get(0), r.get(1), r.get(2));
            let column = column_of(&r, 3);
            if let Some(e) = out.get_mut(&table).and_then(|v| {
                v.iter_mut().find(|e| {
                    e.schema == schema && e.name == name && e.inherited == column.inherited
                })
            }) {
                e.expressions.push(column);
            }
        }
    }
    Ok(out)
}

fn unreadable(what: String) -> Failed {
    Failed::Database(DatabaseFailure(format!(
        "could not read the extended statistics {what}: the server printed a form this \
         plancheck does not know"
    )))
}

/// `{"1, 2": 2481, …}` (`pg_ndistinct`'s text form, JSON itself) by key positions.
fn ndistinct(text: &str, position: &BTreeMap<i64, usize>) -> Option<Vec<Ndistinct>> {
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
    map.into_iter()
        .map(|(k, v)| {
            Some(Ndistinct {
                keys: keys_of(&k, ",", position)?,
                value: v.as_f64()?,
            })
        })
        .collect()
}

/// `{"1 => 2": 1.000000, "1, 2 => 3": 0.5, …}` (`pg_dependencies`' text form).
fn dependencies(text: &str, position: &BTreeMap<i64, usize>) -> Option<Vec<Dependency>> {
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
    map.into_iter()
        .map(|(k, v)| {
            let (from, to) = k.split_once("=>")?;
            let to = keys_of(to, ",", position)?;
            Some(Dependency {
                from: keys_of(from, ",", position)?,
                to: *to.first().filter(|_| to.len() == 1)?,
                degree: v.as_f64()?,
            })
        })
        .collect()
}

fn keys_of(text: &str, by: &str, position: &BTreeMap<i64, usize>) -> Option<Vec<usize>> {
    text.split(by)
        .map(|n| position.get(&n.trim().parse::<i64>().ok()?).copied())
        .collect()
}

/// The settings the planner reads, as the exporting session has them.
async fn planner_settings(s: &Session<'_>) -> Result<Vec<stats::Setting>, Failed> {
    let rows = s
        .rows(
            Asked::ServerSettings,
            "SELECT name::text, setting, unit FROM pg_settings \
             WHERE category LIKE 'Query Tuning%' \
                OR name IN ('work_mem', 'hash_mem_multiplier', 'effective_io_concurrency', \
                            'maintenance_io_concurrency', 'max_parallel_workers', \
                            'max_parallel_workers_per_gather', 'server_encoding', \
                            'max_worker_processes', 'max_parallel_maintenance_workers', \
                            'track_io_timing', 'io_combine_limit') \
             ORDER BY name",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| stats::Setting {
            name: r.get(0),
            setting: r.get(1),
            unit: r.get(2),
        })
        .collect())
}

/// pageinspect's function `name`, schema-qualified, where the role may call it.
async fn pageinspect(s: &Session<'_>, name: &str) -> Result<Option<String>, Failed> {
    let rows = s
        .rows(
            Asked::ExportHeights,
            "SELECT quote_ident(n.nspname) || '.' || quote_ident(p.proname) \
             FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace \
             JOIN pg_depend d ON d.refclassid = 'pg_extension'::regclass \
                  AND d.refobjid = x.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e' \
             JOIN pg_proc p ON p.oid = d.objid AND p.pronamespace = n.oid AND p.proname = $1 \
             WHERE x.extname = 'pageinspect' \
               AND has_function_privilege(p.oid, 'EXECUTE') \
             ORDER BY p.oid LIMIT 1",
            &[&name],
        )
        .await?;
    Ok(rows.first().map(|r| r.get(0)))
}

/// A GIN index's metapage statistics, read with pageinspect where the role may (`read`: the
/// call, `$1` the index's OID): in a savepoint, so a refusal leaves the export as it was and
/// the index without them.
async fn gin(
    s: &Session<'_>,
    oid: u32,
    read: &Option<String>,
) -> Result<Option<stats::Gin>, Failed> {
    let Some(read) = read else {
        return Ok(None);
    };
    s.execute(Asked::ExportHeights, "SAVEPOINT gin").await?;
    let asked = s
        .rows(
            Asked::ExportHeights,
            &format!(
                "SELECT n_pending_pages::int8, n_total_pages::int8, n_entry_pages::int8, \
                        n_data_pages::int8, n_entries::int8 FROM {read}"
            ),
            &[&oid],
        )
        .await;
    match asked {
        Ok(rows) => {
            s.execute(Asked::ExportHeights, "RELEASE SAVEPOINT gin")
                .await?;
            let count = |r: &Row, at: usize| u64::try_from(r.get::<_, i64>(at)).unwrap_or(0);
            Ok(rows.first().map(|r| stats::Gin {
                pending_pages: count(r, 0),
                total_pages: count(r, 1),
                entry_pages: count(r, 2),
                data_pages: count(r, 3),
                entries: count(r, 4),
            }))
        }
        Err(_) => {
            s.execute(Asked::ExportHeights, "ROLLBACK TO SAVEPOINT gin")
                .await?;
            Ok(None)
        }
    }
}

async fn btree(
    s: &Session<'_>,
    relation: &Relation,
    index: &Index,
    (oid, probe): (u32, Probe),
    bt_metap: &Option<String>,
    known: &mut BTreeMap<String, Ends>,
) -> Result<stats::BTree, Failed> {
    let mut height = None;
    if let Some(f) = bt_metap {
        // In a savepoint: a role that may call the function but not read the index (it
        // checks) fails there, and the estimate stands in.
        s.execute(Asked::ExportHeights, "SAVEPOINT height").await?;
        let asked = s
            .rows(
                Asked::ExportHeights,
                &format!("SELECT level::int8 FROM {f}($1::oid::regclass::text)"),
                &[&oid],
            )
            .await;
        match asked {
            Ok(rows) => {
                s.execute(Asked::ExportHeights, "RELEASE SAVEPOINT height")
                    .await?;
                height = rows
                    .first()
                    .and_then(|r| u32::try_from(r.get::<_, i64>(0)).ok());
            }
            Err(_) => {
                s.execute(Asked::ExportHeights, "ROLLBACK TO SAVEPOINT height")
                    .await?;
            }
        }
    }
    let (height, height_from) = match height {
        Some(h) => (h, "metapage"),
        None => (estimated_height(relation, index), "estimate"),
    };
    let (lowest, highest) = match index.keys.first() {
        Some(Some(column)) if probe.ends => match known.get(column) {
            Some(e) => e.clone(),
            None => {
                let e = ends(s, relation, column).await?;
                known.insert(column.clone(), e.clone());
                e
            }
        },
        _ => (None, None),
    };
    Ok(stats::BTree {
        height,
        height_from: height_from.to_string(),
        lowest,
        highest,
    })
}

/// A B-tree's height from its pages and its keys' width: leaves full to 90 %, inner pages to
/// 70 % (a fresh build's fill), each entry its key and an 8-byte tuple header and a line
/// pointer. On a page count near a level's boundary it may be a level off: the file says it
/// is an estimate.
fn estimated_height(relation: &Relation, index: &Index) -> u32 {
    let width: i64 = index
        .keys
        .iter()
        .map(|k| {
            k.as_ref()
                .and_then(|name| relation.columns.iter().find(|c| &c.name == name))
                .map_or(8, |c| i64::from(c.avg_width))
        })
        .sum();
    let entry = ((8 + width + 7) / 8) * 8 + 4;
    let inner = ((8192 - 24 - 16) * 70 / 100 / entry).max(2);
    let mut pages = (index.size.blocks.max(index.size.relpages) - 1).max(1);
    let mut height = 0;
    while pages > 1 {
        pages = (pages + inner - 1) / inner;
        height += 1;
    }
    height
}

/// A column's lowest and highest value, as the server prints them.
type Ends = (Option<String>, Option<String>);

/// The lowest and highest non-null value of `column`, as the server prints them, read through
/// a B-tree that leads with it; None where the role may not read them.
async fn ends(s: &Session<'_>, relation: &Relation, column: &str) -> Result<Ends, Failed> {
    let table = format!(
        "{}.{}",
        quote_ident(&relation.schema),
        quote_ident(&relation.name)
    );
    let c = quote_ident(column);
    let sql = format!(
        // Ordered by the column itself, printed after (ordered by its text, 999 would come
        // after 1000).
        "SELECT (SELECT t.{c} FROM {table} t WHERE t.{c} IS NOT NULL \
                 ORDER BY t.{c} LIMIT 1)::text, \
                (SELECT t.{c} FROM {table} t WHERE t.{c} IS NOT NULL \
                 ORDER BY t.{c} DESC LIMIT 1)::text"
    );
    s.execute(Asked::ExportEnds, "SAVEPOINT ends").await?;
    match s.rows(Asked::ExportEnds, &sql, &[]).await {
        Ok(rows) => {
            s.execute(Asked::ExportEnds, "RELEASE SAVEPOINT ends")
                .await?;
            Ok(rows.first().map_or((None, None), |r| (r.get(0), r.get(1))))
        }
        Err(_) => {
            s.execute(Asked::ExportEnds, "ROLLBACK TO SAVEPOINT ends")
                .await?;
            Ok((None, None))
        }
    }
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Leaves out the values of every column `redact` names, and with them the end keys of the
/// B-trees they lead, the statistics of the expression keys of the table's indexes, and the
/// multi-column most common values and expression statistics of the extended statistics that
/// hold them (an expression may be computed from a redacted column: all of them go).
fn redact(file: &mut stats::File, redact: &[stats::Redact]) -> Result<(), Failed> {
    let mut used = vec![false; redact.len()];
    let mut redacted = Vec::new();
    for r in &mut file.relations {
        let on_table: Vec<usize> = (0..redact.len())
            .filter(|i| {
                let p = &redact[*i];
                p.schema.as_deref().is_none_or(|s| s == r.schema) && p.table == r.name
            })
            .collect();
        if on_table.is_empty() {
            continue;
        }
        // A whole table's pattern matched once the table is there.
        for i in &on_table {
            used[*i] |= redact[*i].column.is_none();
        }
        let mut hit = |column: &str| {
            let mut any = false;
            for i in &on_table {
                if redact[*i].matches(&r.schema, &r.name, column) {
                    used[*i] = true;
                    any = true;
                }
            }
            any
        };
        let mut names: Vec<String> = Vec::new();
        for c in &mut r.columns {
            if hit(&c.name) {
                c.redact();
                names.push(c.name.clone());
            }
        }
        for i in &mut r.indexes {
            if let (Some(b), Some(Some(k))) = (&mut i.btree, i.keys.first())
                && hit(k)
            {
                b.lowest = None;
                b.highest = None;
                names.push(k.clone());
            }
        }
        names.sort();
        names.dedup();
        if names.is_empty() {
            continue;
        }
        for i in &mut r.indexes {
            i.columns.iter_mut().for_each(Column::redact);
        }
        for e in &mut r.extended {
            if e.keys.iter().any(|k| names.contains(k)) || !e.expressions.is_empty() {
                e.most_common_vals = None;
                e.most_common_freqs = None;
                e.most_common_base_freqs = None;
                e.expressions.iter_mut().for_each(Column::redact);
            }
        }
        for n in names {
            redacted.push(format!("{}.{}.{n}", r.schema, r.name));
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        let p = &redact[i];
        return Err(Failed::RedactMatchedNothing(format!(
            "{}{}.{}",
            p.schema
                .as_ref()
                .map(|s| format!("{s}."))
                .unwrap_or_default(),
            p.table,
            p.column.as_deref().unwrap_or("*")
        )));
    }
    file.redacted = redacted;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions() -> BTreeMap<i64, usize> {
        [(3, 0), (5, 1), (-1, 2)].into_iter().collect()
    }

    #[test]
    fn ndistinct_keys_are_positions_whatever_the_attnums() {
        let d = ndistinct(
            r#"{"3, 5": 2481, "3, -1": 12, "3, 5, -1": 3000}"#,
            &positions(),
        )
        .unwrap();
        assert_eq!(
            d,
            vec![
                Ndistinct {
                    keys: vec![0, 2],
                    value: 12.0
                },
                Ndistinct {
                    keys: vec![0, 1],
                    value: 2481.0
                },
                Ndistinct {
                    keys: vec![0, 1, 2],
                    value: 3000.0
                },
            ]
        );
        // An attnum that is not a key of the object: no guess.
        assert_eq!(ndistinct(r#"{"3, 4": 1}"#, &positions()), None);
        assert_eq!(ndistinct("not json", &positions()), None);
    }

    #[test]
    fn dependencies_name_their_keys_by_position() {
        let d = dependencies(r#"{"3 => 5": 1.000000, "3, -1 => 5": 0.25}"#, &positions()).unwrap();
        assert_eq!(
            d,
            vec![
                Dependency {
                    from: vec![0],
                    to: 1,
                    degree: 1.0
                },
                Dependency {
                    from: vec![0, 2],
                    to: 1,
                    degree: 0.25
                },
            ]
        );
        assert_eq!(dependencies(r#"{"3 => 5, 3": 1}"#, &positions()), None);
        assert_eq!(dependencies(r#"{"3 5": 1}"#, &positions()), None);
    }

    #[test]
    fn identifiers_are_quoted_and_their_quotes_doubled() {
        assert_eq!(quote_ident(r#"a"b"#), r#""a""b""#);
    }
}
