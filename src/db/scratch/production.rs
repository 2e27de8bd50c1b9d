//! Production's statistics on the copy (`check --stats FILE`): the sizes, `pg_class` rows,
//! column statistics and planner settings of a [`crate::stats::File`] made the copy's own, so
//! that the copy plans the read path as production's planner would.
//!
//! - **Sizes without data.** The planner takes a table's rows from its files (tuples =
//!   reltuples ÷ relpages × the file's blocks), so every relation file of a table and of each of
//!   its indexes is extended, as a sparse file, to production's block count (segments past the
//!   server's `segment_size` as `.1`, `.2`, …): no data is written and no disk is used. All-zero
//!   pages are valid empty pages to PostgreSQL (checksums included), and nothing reads them: the
//!   copy only plans. Autovacuum is off on the scratch server.
//! - **Statistics written as data.** Every value of the file is a parameter, never SQL text.
//!   PostgreSQL 18: `pg_restore_relation_stats` and `pg_restore_attribute_stats`, called by the
//!   copy's unprivileged owner (they need only the table's owner), so a domain's CHECK run by
//!   the column type's input function runs without privilege; a `false` answer (a value the
//!   function refused with a warning) is a gap, never a success. Before 18 only a superuser can
//!   write `pg_class` sizes and `pg_statistic`: the sizes are numbers; the values are parsed by
//!   `array_in` with the column's *base* type (domains stripped), and only where that type's
//!   input runs no function the catalog defines (a built-in type, an enum, an array or range of
//!   such). A composite type, a range with a canonical function, or a domain inside either
//!   would run the copy's own code as the superuser: those columns keep no values, and the gap
//!   is named.
//! - **B-tree heights and end keys.** The planner reads an index's height from its metapage and,
//!   for a range condition past the histogram's ends, the column's lowest and highest value from
//!   the index itself. For each B-tree the file describes, the owner makes a shadow (a table of
//!   the index's key types holding the two end keys as parameters, and an index of the same
//!   operator classes, collations and order on it); with the server stopped, the shadow's leaf
//!   and heap page become the real index's and table's first pages, and the levels above the
//!   leaf are built one page each, so every descent crosses production's height ([`plant`]).
//!   The scratch server is made without data checksums for this (from PostgreSQL 18, where
//!   initdb turns them on); a copy that has them carries no heights, and says so.
//! - **Extended statistics**: distinct counts, dependencies and multi-column most common values,
//!   in PostgreSQL's serialised form ([`super::extended`], [`super::mcv`]), and the statistics
//!   of their expressions ([`super::expressions`]).
//! - **GIN metapage statistics** (`gincostestimate` prices a scan from them): written into the
//!   copy's GIN metapages with the server stopped, where the file has them ([`patch_gin`]).
//! - **What is not carried yet**: an expression index's end keys (the planner reads them for a
//!   range over the expression past its histogram). Every plan made here says so.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use super::{Gap, Step, Trouble};
use crate::stats;

pub(super) fn refused(e: tokio_postgres::Error) -> Trouble {
    Trouble::of(Step::Statistics, &e)
}

/// The first OID of an object a user made: below it, PostgreSQL's own (its types' input
/// functions are its own C code).
const FIRST_NORMAL_OID: u32 = 16384;

/// What the copy now holds of the file: the settings to plan with, and what it could not take.
#[derive(Debug, Default, Clone)]
pub struct Applied {
    /// Production's planner settings the re-plans set (the ones a session may set).
    pub settings: Vec<(String, String)>,
    /// What the copy could not take, by relation (`schema.name`) where there is one.
    pub gaps: Vec<(Option<(String, String)>, Gap)>,
    /// The tables and materialised views of the copy that the file has: (schema, name), and
    /// production's `reltuples`.
    pub relations: std::collections::BTreeMap<(String, String), f64>,
}

/// A relation of the copy with storage, as the superuser reads it.
pub(super) struct OnCopy {
    pub(super) oid: u32,
    schema: String,
    name: String,
    /// The file of its first segment, relative to the data folder.
    path: String,
}

// Long because it is the file walked in order, relation by relation: its size, its columns, each
// index's size and columns, the gaps, then the settings; each step is a call.
/// Makes the file's sizes, statistics and settings the copy's own (the B-trees' pages are
/// planted before, server stopped: [`shadows`], [`plant`]). `admin` is the copy's
/// superuser session, `owner` its unprivileged owner's, `data` the stopped-or-running server's
/// data folder (the relation files are extended in place).
pub(super) async fn apply(
    admin: &Client,
    owner: &Client,
    data: &Path,
    file: &stats::File,
) -> Result<Applied, Trouble> {
    let failed = refused;
    let row = admin
        .query_one(
            "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4, \
                    pg_catalog.current_setting('block_size')::pg_catalog.int4, \
                    (SELECT s.setting::pg_catalog.int8 FROM pg_catalog.pg_settings s \
                      WHERE s.name OPERATOR(pg_catalog.=) 'segment_size')",
            &[],
        )
        .await
        .map_err(failed)?;
    let version_num: i32 = row.get(0);
    let block_size: i32 = row.get(1);
    let segment_blocks: i64 = row.get(2);
    let major = u32::try_from(version_num).unwrap_or(0) / 10_000;
    if major != file.server.major() {
        return Err(Trouble::StatisticsMajor {
            file: file.server.major(),
            copy: major,
        });
    }
    if i64::from(block_size) != i64::from(file.server.block_size) {
        return Err(Trouble::StatisticsBlockSize {
            file: file.server.block_size,
            copy: u32::try_from(block_size).unwrap_or(0),
        });
    }
    let mut applied = Applied::default();
    if !file.server.sorts_as_c() {
        applied
            .gaps
            .push((None, Gap::Collation(file.server.collation())));
    }
    let mut extended = Vec::new();
    let sizes = Sizes {
        data,
        block_size: i64::from(block_size),
        segment_blocks: segment_blocks.max(1),
    };
    for relation in &file.relations {
        let at = Some((relation.schema.clone(), relation.name.clone()));
        let Some(table) = on_copy(admin, &relation.schema, &relation.name).await? else {
            // A partitioned table has no storage: its partitions carry the sizes; its own
            // statistics (over every partition, `inherited`) are its columns' and extended
            // statistics'.
            if relation.kind == "p"
                && let Some(parent) = partitioned(admin, &relation.schema, &relation.name).await?
            {
                let mut gaps = Vec::new();
                for column in &relation.columns {
                    write_column(admin, owner, major, &parent, column, &mut gaps).await?;
                }
                for e in &relation.extended {
                    if let Some(data) =
                        super::extended::data_of(admin, owner, major, data, &parent, e, &mut gaps)
                            .await?
                    {
                        extended.push(data);
                    }
                }
                applied
                    .gaps
                    .extend(gaps.into_iter().map(|g| (at.clone(), g)));
            }
            continue;
        };
        applied.relations.insert(
            (relation.schema.clone(), relation.name.clone()),
            relation.size.reltuples,
        );
        let mut gaps = Vec::new();
        write_size(
            admin,
            owner,
            major,
            &sizes,
            &table,
            &relation.size,
            &mut gaps,
        )
        .await?;
        for column in &relation.columns {
            write_column(admin, owner, major, &table, column, &mut gaps).await?;
        }
        for index in &relation.indexes {
            match on_copy(admin, &relation.schema, &index.name).await? {
                Some(on) => {
                    write_size(admin, owner, major, &sizes, &on, &index.size, &mut gaps).await?;
                    for column in &index.columns {
                        write_column(admin, owner, major, &on, column, &mut gaps).await?;
                    }
                }
                None => gaps.push(Gap::IndexNotOnCopy(index.name.clone())),
            }
        }
        for e in &relation.extended {
            if let Some(data) =
                super::extended::data_of(admin, owner, major, data, &table, e, &mut gaps).await?
            {
                extended.push(data);
            }
        }
        applied
            .gaps
            .extend(gaps.into_iter().map(|g| (at.clone(), g)));
    }
    super::extended::write(admin, major, &extended).await?;
    applied.settings = settings(owner, file).await?;
    Ok(applied)
}

/// The relation `schema.name` on the copy, if it is there and has storage.
pub(super) async fn on_copy(
    c: &Client,
    schema: &str,
    name: &str,
) -> Result<Option<OnCopy>, Trouble> {
    let rows = c
        .query(
            "SELECT c.oid, pg_catalog.pg_relation_filepath(c.oid) \
               FROM pg_catalog.pg_class c \
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
              WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.name \
                AND c.relname OPERATOR(pg_catalog.=) $2::pg_catalog.name \
                AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,m,i}'::pg_catalog.\"char\"[])",
            &[&schema, &name],
        )
        .await
        .map_err(refused)?;
    Ok(rows.first().and_then(|r| {
        Some(OnCopy {
            oid: r.get(0),
            schema: schema.to_string(),
            name: name.to_string(),
            path: r.get::<_, Option<String>>(1)?,
        })
    }))
}

/// The partitioned table `schema.name` on the copy, if it is there (it has no files).
async fn partitioned(c: &Client, schema: &str, name: &str) -> Result<Option<OnCopy>, Trouble> {
    let rows = c
        .query(
            "SELECT c.oid FROM pg_catalog.pg_class c \
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
              WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.name \
                AND c.relname OPERATOR(pg_catalog.=) $2::pg_catalog.name \
                AND c.relkind OPERATOR(pg_catalog.=) 'p'",
            &[&schema, &name],
        )
        .await
        .map_err(refused)?;
    Ok(rows.first().map(|r| OnCopy {
        oid: r.get(0),
        schema: schema.to_string(),
        name: name.to_string(),
        path: String::new(),
    }))
}

/// The copy's data folder and how its files are cut into segments.
struct Sizes<'a> {
    data: &'a Path,
    block_size: i64,
    segment_blocks: i64,
}

/// `relpages`, `reltuples`, `relallvisible` written, and the relation's files extended to
/// production's blocks.
async fn write_size(
    admin: &Client,
    owner: &Client,
    major: u32,
    sizes: &Sizes<'_>,
    on: &OnCopy,
    size: &stats::Size,
    gaps: &mut Vec<Gap>,
) -> Result<(), Trouble> {
    let failed = refused;
    let relpages = i32::try_from(size.relpages).unwrap_or(i32::MAX);
    let relallvisible = i32::try_from(size.relallvisible).unwrap_or(i32::MAX);
    let reltuples = size.reltuples as f32;
    if major >= 18 {
        let written: Option<bool> = owner
            .query_one(
                "SELECT pg_catalog.pg_restore_relation_stats(\
                     'schemaname', $1::pg_catalog.text, 'relname', $2::pg_catalog.text, \
                     'relpages', $3::pg_catalog.int4, 'reltuples', $4::pg_catalog.float4, \
                     'relallvisible', $5::pg_catalog.int4)",
                &[&on.schema, &on.name, &relpages, &reltuples, &relallvisible],
            )
            .await
            .map_err(failed)?
            .get(0);
        if written != Some(true) {
            gaps.push(Gap::SizeNotWritten(on.name.clone()));
        }
    } else {
        admin
            .execute(
                "UPDATE pg_catalog.pg_class SET relpages = $2::pg_catalog.int4, \
                        reltuples = $3::pg_catalog.float4, \
                        relallvisible = $4::pg_catalog.int4 \
                  WHERE oid OPERATOR(pg_catalog.=) $1::pg_catalog.oid",
                &[&on.oid, &relpages, &reltuples, &relallvisible],
            )
            .await
            .map_err(failed)?;
    }
    if let Err(e) = extend(sizes, &on.path, size.blocks) {
        gaps.push(Gap::FileNotExtended {
            relation: on.name.clone(),
            why: e.to_string(),
        });
    }
    Ok(())
}

/// Extends the relation whose first segment is `relative` (as `pg_relation_filepath` gives it)
/// to `blocks` blocks, as sparse files: each full segment, then the last one's remainder. A
/// segment file is made with the first one's owner; nothing is ever opened through a link.
fn extend(sizes: &Sizes<'_>, relative: &str, blocks: i64) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let first: PathBuf = sizes.data.join(checked_path(relative)?);
    let meta = std::fs::symlink_metadata(&first)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let (uid, gid) = (meta.uid(), meta.gid());
    let per_segment = sizes.segment_blocks * sizes.block_size;
    let mut left = blocks.max(0) * sizes.block_size;
    let mut segment = 0u64;
    loop {
        let path = if segment == 0 {
            first.clone()
        } else {
            PathBuf::from(format!("{}.{segment}", first.display()))
        };
        let length = left.min(per_segment);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(segment > 0)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        let current = i64::try_from(file.metadata()?.len()).unwrap_or(i64::MAX);
        // Never shorter than the copy made it (its own pages hold the metapage of an index).
        if length > current {
            file.set_len(u64::try_from(length).unwrap_or(0))?;
        }
        if segment > 0 {
            std::os::unix::fs::fchown(&file, Some(uid), Some(gid))?;
        }
        left -= length;
        if left <= 0 {
            return Ok(());
        }
        segment += 1;
    }
}

/// One column's statistics (a table's, or an index expression's).
pub(super) async fn write_column(
    admin: &Client,
    owner: &Client,
    major: u32,
    on: &OnCopy,
    column: &stats::Column,
    gaps: &mut Vec<Gap>,
) -> Result<(), Trouble> {
    let failed = refused;
    // Read with an empty search path, as the file's types were printed.
    let rows = admin
        .query(
            "SELECT a.attnum, a.atttypid, a.attcollation, \
                    pg_catalog.format_type(a.atttypid, a.atttypmod) \
               FROM pg_catalog.pg_attribute a \
              WHERE a.attrelid OPERATOR(pg_catalog.=) $1::pg_catalog.oid \
                AND a.attname OPERATOR(pg_catalog.=) $2::pg_catalog.name AND NOT a.attisdropped \
                AND a.attnum OPERATOR(pg_catalog.>) 0",
            &[&on.oid, &column.name],
        )
        .await
        .map_err(failed)?;
    let Some(row) = rows.first() else {
        gaps.push(Gap::ColumnNotOnCopy(column.name.clone()));
        return Ok(());
    };
    let attnum: i16 = row.get(0);
    let type_oid: u32 = row.get(1);
    let collation: u32 = row.get(2);
    let copy_type: String = row.get(3);
    if copy_type != column.type_name {
        gaps.push(Gap::TypeDiffers {
            column: column.name.clone(),
            file: column.type_name.clone(),
            copy: copy_type,
        });
        return Ok(());
    }
    if major >= 18 {
        return restore_column(owner, on, column, gaps).await;
    }
    let facts = type_facts(admin, major, type_oid).await?;
    let slots = slots_of(column, &facts, collation);
    let values_kept = facts.safe || !column.holds_values();
    if !values_kept {
        gaps.push(Gap::ValuesNotParsed {
            column: column.name.clone(),
            type_name: column.type_name.clone(),
        });
    }
    let slots: Vec<Slot> = slots
        .into_iter()
        .filter(|s| values_kept || s.values.is_none())
        .collect();
    for missing in slots_missing(column, &facts) {
        gaps.push(Gap::NoOperator {
            column: column.name.clone(),
            kind: missing,
        });
    }
    match write_pg_statistic(admin, on.oid, attnum, column, &slots).await {
        Ok(()) => Ok(()),
        Err(e) => match e.code() {
            Some(code) => {
                gaps.push(Gap::ColumnNotWritten {
                    column: column.name.clone(),
                    sqlstate: Some(code.code().to_string()),
                });
                Ok(())
            }
            None => Err(failed(e)),
        },
    }
}

// Long because each statistic of the file is one key and one typed parameter of the call.
/// PostgreSQL 18: the restore function, as the owner, every value a parameter.
async fn restore_column(
    owner: &Client,
    on: &OnCopy,
    column: &stats::Column,
    gaps: &mut Vec<Gap>,
) -> Result<(), Trouble> {
    let null_frac = column.null_frac as f32;
    let n_distinct = column.n_distinct as f32;
    let correlation = column.correlation.map(|c| c as f32);
    let empty = column.range_empty_frac.map(|c| c as f32);
    let reals = |v: &Option<Vec<f64>>| {
        v.as_ref()
            .map(|v| v.iter().map(|x| *x as f32).collect::<Vec<f32>>())
    };
    let (mcf, mcef, dechist) = (
        reals(&column.most_common_freqs),
        reals(&column.most_common_elem_freqs),
        reals(&column.elem_count_histogram),
    );
    let mut sql = String::from(
        "SELECT pg_catalog.pg_restore_attribute_stats('schemaname', $1::pg_catalog.text, \
         'relname', $2::pg_catalog.text, 'attname', $3::pg_catalog.text, \
         'inherited', $4::pg_catalog.bool, 'null_frac', $5::pg_catalog.float4, \
         'avg_width', $6::pg_catalog.int4, 'n_distinct', $7::pg_catalog.float4",
    );
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &on.schema,
        &on.name,
        &column.name,
        &column.inherited,
        &null_frac,
        &column.avg_width,
        &n_distinct,
    ];
    let mut pairs: Vec<(&str, &str, &(dyn ToSql + Sync))> = Vec::new();
    if let (Some(v), Some(f)) = (&column.most_common_vals, &mcf) {
        pairs.push(("most_common_vals", "text", v));
        pairs.push(("most_common_freqs", "float4[]", f));
    }
    if let Some(v) = &column.histogram_bounds {
        pairs.push(("histogram_bounds", "text", v));
    }
    if let Some(v) = &correlation {
        pairs.push(("correlation", "float4", v));
    }
    if let (Some(v), Some(f)) = (&column.most_common_elems, &mcef) {
        pairs.push(("most_common_elems", "text", v));
        pairs.push(("most_common_elem_freqs", "float4[]", f));
    }
    if let Some(v) = &dechist {
        pairs.push(("elem_count_histogram", "float4[]", v));
    }
    if let (Some(v), Some(f)) = (&column.range_length_histogram, &empty) {
        pairs.push(("range_length_histogram", "text", v));
        pairs.push(("range_empty_frac", "float4", f));
    }
    if let Some(v) = &column.range_bounds_histogram {
        pairs.push(("range_bounds_histogram", "text", v));
    }
    for (key, cast, value) in pairs {
        params.push(value);
        sql.push_str(&format!(", '{key}', ${}::pg_catalog.{cast}", params.len()));
    }
    sql.push(')');
    match owner.query_one(sql.as_str(), &params).await {
        Ok(row) if row.get::<_, Option<bool>>(0) == Some(true) => Ok(()),
        Ok(_) => {
            gaps.push(Gap::ColumnNotWritten {
                column: column.name.clone(),
                sqlstate: None,
            });
            Ok(())
        }
        Err(e) => match e.code() {
            Some(code) => {
                gaps.push(Gap::ColumnNotWritten {
                    column: column.name.clone(),
                    sqlstate: Some(code.code().to_string()),
                });
                Ok(())
            }
            None => Err(Trouble::Lost(Step::Statistics)),
        },
    }
}

/// What writing a column's statistics by hand needs of its type (PostgreSQL 13 to 17).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct TypeFacts {
    /// The type with every domain stripped: `array_in` parses with it.
    pub base: u32,
    /// Whether `array_in` of `base` runs only PostgreSQL's own code ([`parse_is_safe`]).
    pub safe: bool,
    pub eq: u32,
    pub lt: u32,
    /// The element type of an array (text for `tsvector`), domains stripped, and its `=`.
    pub element: u32,
    pub element_eq: u32,
    /// For a range, the range type the bounds histogram holds (a multirange's range).
    pub range: u32,
    /// `tsvector`: its statistics' collation is the default one.
    pub tsvector: bool,
}

/// One row of `pg_type` as [`parse_is_safe`] needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TypeRow {
    pub oid: u32,
    /// `typtype`: `b` base, `c` composite, `d` domain, `e` enum, `r` range, `m` multirange, `p`.
    pub kind: char,
    /// The element type of an array type (0 otherwise).
    pub element: u32,
    /// A range's subtype (or a multirange's range), and whether the range has a canonical
    /// function (which `range_in` calls).
    pub inner: u32,
    pub canonical: bool,
}

/// Whether `array_in` of this (domain-stripped) type runs only PostgreSQL's own code: a
/// built-in type that is not a composite; an enum (`enum_in` reads the catalog only); an array
/// of a safe type; a range (or multirange) over a safe subtype without a canonical function. A
/// domain anywhere inside runs its CHECK, so is never safe; neither is a composite (`record_in`
/// runs each field's input) nor anything `lookup` cannot describe.
pub(super) fn parse_is_safe(oid: u32, lookup: &dyn Fn(u32) -> Option<TypeRow>) -> bool {
    fn safe(oid: u32, lookup: &dyn Fn(u32) -> Option<TypeRow>, depth: u8) -> bool {
        if depth > 8 {
            return false;
        }
        let Some(t) = lookup(oid) else {
            return false;
        };
        match t.kind {
            'd' | 'c' => false,
            _ if t.element != 0 => safe(t.element, lookup, depth + 1),
            'e' => true,
            'r' => !t.canonical && safe(t.inner, lookup, depth + 1),
            'm' => safe(t.inner, lookup, depth + 1),
            _ => t.oid < FIRST_NORMAL_OID,
        }
    }
    safe(oid, lookup, 0)
}

/// A type's row for [`parse_is_safe`] (PostgreSQL 14 and later: multiranges).
const TYPE_ROW: &str = "\
    SELECT t.oid, t.typtype::pg_catalog.text, \
           CASE WHEN t.typcategory OPERATOR(pg_catalog.=) 'A' THEN t.typelem ELSE 0::pg_catalog.oid END, \
           COALESCE(r.rngsubtype, m.rngtypid, 0::pg_catalog.oid), \
           COALESCE(r.rngcanonical::pg_catalog.oid OPERATOR(pg_catalog.<>) 0, false), \
           t.typbasetype \
      FROM pg_catalog.pg_type t \
      LEFT JOIN pg_catalog.pg_range r ON r.rngtypid OPERATOR(pg_catalog.=) t.oid \
      LEFT JOIN pg_catalog.pg_range m ON m.rngmultitypid OPERATOR(pg_catalog.=) t.oid \
     WHERE t.oid OPERATOR(pg_catalog.=) $1::pg_catalog.oid";

/// The same on PostgreSQL 13, which has no multiranges.
const TYPE_ROW_13: &str = "\
    SELECT t.oid, t.typtype::pg_catalog.text, \
           CASE WHEN t.typcategory OPERATOR(pg_catalog.=) 'A' THEN t.typelem ELSE 0::pg_catalog.oid END, \
           COALESCE(r.rngsubtype, 0::pg_catalog.oid), \
           COALESCE(r.rngcanonical::pg_catalog.oid OPERATOR(pg_catalog.<>) 0, false), \
           t.typbasetype \
      FROM pg_catalog.pg_type t \
      LEFT JOIN pg_catalog.pg_range r ON r.rngtypid OPERATOR(pg_catalog.=) t.oid \
     WHERE t.oid OPERATOR(pg_catalog.=) $1::pg_catalog.oid";

/// The operator of `strategy` (1 `<`, 3 `=`) of the default B-tree operator class of a type,
/// as the type cache finds it (an exact match first, then one the type is binary-coercible to:
/// `anyarray`, `anyenum`, `anyrange`, `anymultirange`, or a binary cast); for `=`, a default
/// hash class's where no B-tree class has one.
const OPERATOR: &str = "\
    SELECT o.amopopr FROM pg_catalog.pg_opclass oc \
      JOIN pg_catalog.pg_am am ON am.oid OPERATOR(pg_catalog.=) oc.opcmethod \
      JOIN pg_catalog.pg_type it ON it.oid OPERATOR(pg_catalog.=) oc.opcintype \
      JOIN pg_catalog.pg_type ty ON ty.oid OPERATOR(pg_catalog.=) $1 \
      JOIN pg_catalog.pg_amop o ON o.amopfamily OPERATOR(pg_catalog.=) oc.opcfamily \
           AND o.amoplefttype OPERATOR(pg_catalog.=) oc.opcintype \
           AND o.amoprighttype OPERATOR(pg_catalog.=) oc.opcintype \
           AND o.amopstrategy OPERATOR(pg_catalog.=) \
               (CASE WHEN am.amname OPERATOR(pg_catalog.=) 'hash' THEN 1::pg_catalog.int2 ELSE $2::pg_catalog.int2 END) \
     WHERE oc.opcdefault AND (am.amname OPERATOR(pg_catalog.=) 'btree' \
                              OR (am.amname OPERATOR(pg_catalog.=) 'hash' AND $2::pg_catalog.int2 OPERATOR(pg_catalog.=) 3)) \
       AND (oc.opcintype OPERATOR(pg_catalog.=) ty.oid \
         OR (oc.opcintype OPERATOR(pg_catalog.=) 'pg_catalog.anyarray'::pg_catalog.regtype \
             AND ty.typcategory OPERATOR(pg_catalog.=) 'A' AND ty.typelem OPERATOR(pg_catalog.<>) 0) \
         OR (oc.opcintype OPERATOR(pg_catalog.=) 'pg_catalog.anyenum'::pg_catalog.regtype \
             AND ty.typtype OPERATOR(pg_catalog.=) 'e') \
         OR (oc.opcintype OPERATOR(pg_catalog.=) 'pg_catalog.anyrange'::pg_catalog.regtype \
             AND ty.typtype OPERATOR(pg_catalog.=) 'r') \
         OR (it.typname OPERATOR(pg_catalog.=) 'anymultirange' AND ty.typtype OPERATOR(pg_catalog.=) 'm') \
         OR EXISTS (SELECT FROM pg_catalog.pg_cast k \
                     WHERE k.castsource OPERATOR(pg_catalog.=) ty.oid \
                       AND k.casttarget OPERATOR(pg_catalog.=) oc.opcintype \
                       AND k.castmethod OPERATOR(pg_catalog.=) 'b' \
                       AND k.castcontext OPERATOR(pg_catalog.=) 'i')) \
     ORDER BY am.amname OPERATOR(pg_catalog.=) 'btree' DESC, \
              oc.opcintype OPERATOR(pg_catalog.=) ty.oid DESC, it.typispreferred DESC \
     LIMIT 1";

async fn type_row(c: &Client, major: u32, oid: u32) -> Result<Option<(TypeRow, u32)>, Trouble> {
    let sql = if major >= 14 { TYPE_ROW } else { TYPE_ROW_13 };
    let rows = c.query(sql, &[&oid]).await.map_err(refused)?;
    Ok(rows.first().map(|r| {
        let kind: String = r.get(1);
        (
            TypeRow {
                oid: r.get(0),
                kind: kind.chars().next().unwrap_or('?'),
                element: r.get(2),
                inner: r.get(3),
                canonical: r.get(4),
            },
            r.get(5),
        )
    }))
}

async fn operator(c: &Client, oid: u32, strategy: i16) -> Result<u32, Trouble> {
    let rows = c
        .query(OPERATOR, &[&oid, &strategy])
        .await
        .map_err(refused)?;
    Ok(rows.first().map(|r| r.get(0)).unwrap_or(0))
}

/// Reads what [`slots_of`] and [`parse_is_safe`] need of a column's type.
pub(super) async fn type_facts(
    c: &Client,
    major: u32,
    type_oid: u32,
) -> Result<TypeFacts, Trouble> {
    // Domains stripped, as the type cache and ANALYZE do.
    let mut base = type_oid;
    let mut rows: std::collections::BTreeMap<u32, TypeRow> = Default::default();
    for _ in 0..16 {
        let Some((row, basetype)) = type_row(c, major, base).await? else {
            break;
        };
        let kind = row.kind;
        rows.insert(row.oid, row);
        if kind != 'd' {
            break;
        }
        base = basetype;
    }
    // Every type parsing could reach, read once.
    let mut todo = vec![base];
    while let Some(oid) = todo.pop() {
        if rows.len() > 64 {
            break;
        }
        let row = match rows.get(&oid) {
            Some(r) => r.clone(),
            None => match type_row(c, major, oid).await? {
                Some((r, _)) => {
                    rows.insert(oid, r.clone());
                    r
                }
                None => continue,
            },
        };
        for next in [row.element, row.inner] {
            if next != 0 && !rows.contains_key(&next) {
                todo.push(next);
            }
        }
    }
    let safe = parse_is_safe(base, &|oid| rows.get(&oid).cloned());
    let b = rows.get(&base).cloned();
    let tsvector = base == 3614;
    let mut element = if tsvector {
        25
    } else {
        b.as_ref().map_or(0, |t| t.element)
    };
    // The element type with its domains stripped.
    for _ in 0..16 {
        match type_row(c, major, element).await? {
            Some((row, basetype)) if row.kind == 'd' && element != 0 => element = basetype,
            _ => break,
        }
    }
    let range = match b.as_ref() {
        Some(t) if t.kind == 'r' => base,
        Some(t) if t.kind == 'm' => t.inner,
        _ => 0,
    };
    Ok(TypeFacts {
        base,
        safe,
        eq: operator(c, base, 3).await?,
        lt: operator(c, base, 1).await?,
        element,
        element_eq: if element != 0 {
            operator(c, element, 3).await?
        } else {
            0
        },
        range,
        tsvector,
    })
}

/// One slot of a `pg_statistic` row.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Slot {
    pub kind: i16,
    pub op: u32,
    pub collation: u32,
    pub numbers: Option<Vec<f32>>,
    /// The values as array text, and the element type `array_in` parses them with.
    pub values: Option<(String, u32)>,
}

// Long because it is one slot per kind of statistics, in ANALYZE's order, each with its own
// operator, collation and value type.
/// The slots ANALYZE would have written for what the file holds, as PostgreSQL 18's restore
/// function derives them: most common values (`=`), histogram (`<`), correlation (`<`), most
/// common elements and their count histogram (the element's `=`), range bounds and lengths.
/// A slot whose operator the type lacks is left out ([`slots_missing`] names it).
pub(super) fn slots_of(column: &stats::Column, t: &TypeFacts, collation: u32) -> Vec<Slot> {
    let reals = |v: &Vec<f64>| v.iter().map(|x| *x as f32).collect::<Vec<f32>>();
    let collation = if t.tsvector { 100 } else { collation };
    let mut slots = Vec::new();
    if let (Some(v), Some(f), true) = (
        &column.most_common_vals,
        &column.most_common_freqs,
        t.eq != 0,
    ) {
        slots.push(Slot {
            kind: 1,
            op: t.eq,
            collation,
            numbers: Some(reals(f)),
            values: Some((v.clone(), t.base)),
        });
    }
    if let (Some(v), true) = (&column.histogram_bounds, t.lt != 0) {
        slots.push(Slot {
            kind: 2,
            op: t.lt,
            collation,
            numbers: None,
            values: Some((v.clone(), t.base)),
        });
    }
    if let (Some(c), true) = (column.correlation, t.lt != 0) {
        slots.push(Slot {
            kind: 3,
            op: t.lt,
            collation,
            numbers: Some(vec![c as f32]),
            values: None,
        });
    }
    let element = t.element != 0 && t.element_eq != 0;
    if let (Some(v), Some(f), true) = (
        &column.most_common_elems,
        &column.most_common_elem_freqs,
        element,
    ) {
        slots.push(Slot {
            kind: 4,
            op: t.element_eq,
            collation,
            numbers: Some(reals(f)),
            values: Some((v.clone(), t.element)),
        });
    }
    if let (Some(h), true) = (&column.elem_count_histogram, element) {
        slots.push(Slot {
            kind: 5,
            op: t.element_eq,
            collation,
            numbers: Some(reals(h)),
            values: None,
        });
    }
    if let (Some(v), true) = (&column.range_bounds_histogram, t.range != 0) {
        slots.push(Slot {
            kind: 7,
            op: 0,
            collation: 0,
            numbers: None,
            values: Some((v.clone(), t.range)),
        });
    }
    if let (Some(v), Some(e), true) = (
        &column.range_length_histogram,
        column.range_empty_frac,
        t.range != 0,
    ) {
        // float8 `<`: the lengths are float8 whatever the range.
        slots.push(Slot {
            kind: 6,
            op: 672,
            collation: 0,
            numbers: Some(vec![e as f32]),
            values: Some((v.clone(), 701)),
        });
    }
    slots.truncate(5);
    slots
}

/// The statistics the file holds for a column that [`slots_of`] leaves out, for want of the
/// operator (or element type, or range type) they are kept under.
pub(super) fn slots_missing(column: &stats::Column, t: &TypeFacts) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if column.most_common_vals.is_some() && t.eq == 0 {
        missing.push("most common values");
    }
    if (column.histogram_bounds.is_some() || column.correlation.is_some()) && t.lt == 0 {
        missing.push("histogram and correlation");
    }
    if (column.most_common_elems.is_some() || column.elem_count_histogram.is_some())
        && (t.element == 0 || t.element_eq == 0)
    {
        missing.push("most common elements");
    }
    if (column.range_bounds_histogram.is_some() || column.range_length_histogram.is_some())
        && t.range == 0
    {
        missing.push("range histograms");
    }
    missing
}

// Long because the row has 31 columns, each a typed parameter.
/// The `pg_statistic` row, replaced, as the superuser: every value a parameter, values parsed
/// by `array_in` with the slot's (safe, domain-stripped) type.
async fn write_pg_statistic(
    admin: &Client,
    oid: u32,
    attnum: i16,
    column: &stats::Column,
    slots: &[Slot],
) -> Result<(), tokio_postgres::Error> {
    let mut kinds = [0i16; 5];
    let mut ops = [0u32; 5];
    let mut colls = [0u32; 5];
    let mut numbers: [Option<Vec<f32>>; 5] = Default::default();
    let mut values: [Option<String>; 5] = Default::default();
    let mut types = [0u32; 5];
    for (i, s) in slots.iter().enumerate().take(5) {
        kinds[i] = s.kind;
        ops[i] = s.op;
        colls[i] = s.collation;
        numbers[i] = s.numbers.clone();
        if let Some((v, t)) = &s.values {
            values[i] = Some(v.clone());
            types[i] = *t;
        }
    }
    let null_frac = column.null_frac as f32;
    let n_distinct = column.n_distinct as f32;
    admin
        .execute(
            "DELETE FROM pg_catalog.pg_statistic WHERE starelid OPERATOR(pg_catalog.=) $1::pg_catalog.oid \
               AND staattnum OPERATOR(pg_catalog.=) $2::pg_catalog.int2 \
               AND stainherit OPERATOR(pg_catalog.=) $3::pg_catalog.bool",
            &[&oid, &attnum, &column.inherited],
        )
        .await?;
    let mut sql = String::from(
        "INSERT INTO pg_catalog.pg_statistic (starelid, staattnum, stainherit, stanullfrac, \
         stawidth, stadistinct",
    );
    for part in ["stakind", "staop", "stacoll", "stanumbers", "stavalues"] {
        for i in 1..=5 {
            sql.push_str(&format!(", {part}{i}"));
        }
    }
    sql.push_str(
        ") VALUES ($1::pg_catalog.oid, $2::pg_catalog.int2, $3::pg_catalog.bool, \
         $4::pg_catalog.float4, $5::pg_catalog.int4, $6::pg_catalog.float4",
    );
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &oid,
        &attnum,
        &column.inherited,
        &null_frac,
        &column.avg_width,
        &n_distinct,
    ];
    for k in &kinds {
        params.push(k);
        sql.push_str(&format!(", ${}::pg_catalog.int2", params.len()));
    }
    for o in &ops {
        params.push(o);
        sql.push_str(&format!(", ${}::pg_catalog.oid", params.len()));
    }
    for c in &colls {
        params.push(c);
        sql.push_str(&format!(", ${}::pg_catalog.oid", params.len()));
    }
    for n in &numbers {
        params.push(n);
        sql.push_str(&format!(", ${}::pg_catalog.float4[]", params.len()));
    }
    for (v, t) in values.iter().zip(&types) {
        params.push(v);
        params.push(t);
        let n = params.len();
        sql.push_str(&format!(
            ", pg_catalog.array_in(${}::pg_catalog.text::pg_catalog.cstring, ${n}::pg_catalog.oid, -1)",
            n - 1
        ));
    }
    sql.push(')');
    admin.execute(sql.as_str(), &params).await.map(|_| ())
}

/// Production's planner settings that a session may set on the copy (`context = user`), as
/// name and value. Not `plan_cache_mode`: each re-plan sets the plan kind it makes. A setting
/// only the server takes (`max_worker_processes`) changes no plan and is left out.
async fn settings(owner: &Client, file: &stats::File) -> Result<Vec<(String, String)>, Trouble> {
    let names: Vec<&str> = file.settings.iter().map(|s| s.name.as_str()).collect();
    let rows = owner
        .query(
            "SELECT s.name::pg_catalog.text FROM pg_catalog.pg_settings s \
              WHERE s.name OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[]) \
                AND s.context OPERATOR(pg_catalog.=) 'user'",
            &[&names],
        )
        .await
        .map_err(refused)?;
    let settable: BTreeSet<String> = rows.iter().map(|r| r.get(0)).collect();
    Ok(file
        .settings
        .iter()
        .filter(|s| settable.contains(&s.name) && s.name != "plan_cache_mode")
        .map(|s| (s.name.clone(), s.setting.clone()))
        .collect())
}

/// The schema the shadows are made in, by the owner.
const SHADOW: &str = "plancheck_shadow";

/// The pages one table's B-trees take from their shadows: the shadow heap's first block (the
/// two rows the shadow indexes point at) and each shadow index's blocks, with production's
/// height to write into the metapage and root.
#[derive(Debug, Clone)]
pub(super) struct Shadowed {
    pub heap: String,
    pub shadow_heap: String,
    /// (real index file, shadow index file, production's height).
    pub indexes: Vec<(String, String, u32)>,
}

/// Builds, as the owner, a shadow of every B-tree the file gives a height for: per table, a
/// table of the indexes' key types holding two rows (each index's lowest and highest key from
/// the file where it has them, NULL elsewhere), and on it an index of the same columns,
/// operator classes, collations and order per real index. Its pages become the real index's
/// while the server is stopped ([`plant`]), so that the planner reads production's height from
/// the metapage and its end keys from the index itself. The values are parameters, parsed by
/// the types' input functions as the owner. Then a checkpoint, so the pages are on disk.
pub(super) async fn shadows(
    admin: &Client,
    owner: &Client,
    file: &stats::File,
) -> Result<(Vec<Shadowed>, Vec<(Option<(String, String)>, Gap)>), Trouble> {
    let mut out = Vec::new();
    let mut gaps = Vec::new();
    let checksums: String = admin
        .query_one("SELECT pg_catalog.current_setting('data_checksums')", &[])
        .await
        .map_err(refused)?
        .get(0);
    let with_heights: Vec<&stats::Relation> = file
        .relations
        .iter()
        .filter(|r| r.indexes.iter().any(|i| i.btree.is_some()))
        .collect();
    if with_heights.is_empty() {
        return Ok((out, gaps));
    }
    if checksums != "off" {
        gaps.push((None, Gap::Heights("the copy has data checksums".into())));
        return Ok((out, gaps));
    }
    owner
        .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {SHADOW}"))
        .await
        .map_err(refused)?;
    for relation in with_heights {
        let Some(table) = on_copy(admin, &relation.schema, &relation.name).await? else {
            continue;
        };
        let at = Some((relation.schema.clone(), relation.name.clone()));
        match shadow_of(admin, owner, &table, relation).await {
            Ok(Some(s)) => out.push(s),
            Ok(None) => {}
            Err(Trouble::Refused { sqlstate, .. }) => {
                gaps.push((at, Gap::HeightsRefused(sqlstate)));
            }
            Err(other) => return Err(other),
        }
    }
    admin.batch_execute("CHECKPOINT").await.map_err(refused)?;
    Ok((out, gaps))
}

/// A real index of the copy as its shadow must be made.
struct IndexShape {
    path: String,
    name: String,
    key_columns: usize,
    types: Vec<String>,
    collations: Vec<String>,
    opclasses: Vec<String>,
    options: Vec<i16>,
}

// Long because it is one shadow made in order: the real indexes' shapes read, the shadow table's
// columns and its two rows (every value a parameter), then one shadow index per real one and
// the files of each.
async fn shadow_of(
    admin: &Client,
    owner: &Client,
    table: &OnCopy,
    relation: &stats::Relation,
) -> Result<Option<Shadowed>, Trouble> {
    let rows = admin
        .query(
            "SELECT c.relname::pg_catalog.text, pg_catalog.pg_relation_filepath(c.oid), \
                    i.indnkeyatts::pg_catalog.int4, \
                    ARRAY(SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) \
                            FROM pg_catalog.pg_attribute a \
                           WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid \
                             AND a.attnum OPERATOR(pg_catalog.>) 0 ORDER BY a.attnum), \
                    ARRAY(SELECT COALESCE((SELECT pg_catalog.format('%I.%I', cn.nspname, co.collname) \
                                     FROM pg_catalog.pg_collation co \
                                     JOIN pg_catalog.pg_namespace cn \
                                       ON cn.oid OPERATOR(pg_catalog.=) co.collnamespace \
                                    WHERE co.oid OPERATOR(pg_catalog.=) a.attcollation), '') \
                            FROM pg_catalog.pg_attribute a \
                           WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid \
                             AND a.attnum OPERATOR(pg_catalog.>) 0 ORDER BY a.attnum), \
                    ARRAY(SELECT pg_catalog.format('%I.%I', ons.nspname, oc.opcname) \
                            FROM pg_catalog.unnest(i.indclass::pg_catalog.oid[]) \
                                 WITH ORDINALITY AS u(opc, n) \
                            JOIN pg_catalog.pg_opclass oc ON oc.oid OPERATOR(pg_catalog.=) u.opc \
                            JOIN pg_catalog.pg_namespace ons \
                              ON ons.oid OPERATOR(pg_catalog.=) oc.opcnamespace \
                           ORDER BY u.n), \
                    i.indoption::pg_catalog.int2[] \
               FROM pg_catalog.pg_index i \
               JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid \
               JOIN pg_catalog.pg_am am ON am.oid OPERATOR(pg_catalog.=) c.relam \
              WHERE i.indrelid OPERATOR(pg_catalog.=) $1::pg_catalog.oid \
                AND am.amname OPERATOR(pg_catalog.=) 'btree' ORDER BY c.oid",
            &[&table.oid],
        )
        .await
        .map_err(refused)?;
    let mut shapes = Vec::new();
    for r in &rows {
        let name: String = r.get(0);
        let Some(path) = r.get::<_, Option<String>>(1) else {
            continue;
        };
        if relation
            .indexes
            .iter()
            .all(|i| i.name != name || i.btree.is_none())
        {
            continue;
        }
        shapes.push(IndexShape {
            path,
            name,
            key_columns: usize::try_from(r.get::<_, i32>(2)).unwrap_or(0),
            types: r.get(3),
            collations: r.get(4),
            opclasses: r.get(5),
            options: r.get(6),
        });
    }
    if shapes.is_empty() {
        return Ok(None);
    }
    let shadow = format!("{SHADOW}.t_{}", table.oid);
    let mut columns = Vec::new();
    let mut lows: Vec<Option<String>> = Vec::new();
    let mut highs: Vec<Option<String>> = Vec::new();
    for (n, shape) in shapes.iter().enumerate() {
        let btree = relation
            .indexes
            .iter()
            .find(|i| i.name == shape.name)
            .and_then(|i| i.btree.as_ref());
        for (k, t) in shape.types.iter().enumerate() {
            let collation = match shape.collations.get(k).map(String::as_str) {
                Some("") | None => String::new(),
                Some(c) => format!(" COLLATE {c}"),
            };
            columns.push(format!("c_{n}_{k} {t}{collation}"));
            let (low, high) = match (k, btree) {
                (0, Some(b)) => (b.lowest.clone(), b.highest.clone()),
                _ => (None, None),
            };
            lows.push(low);
            highs.push(high);
        }
    }
    let failed = |e: tokio_postgres::Error| Trouble::of(Step::Statistics, &e);
    owner
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {shadow}; CREATE TABLE {shadow} ({})",
            columns.join(", ")
        ))
        .await
        .map_err(failed)?;
    // Two rows: each value a parameter, cast from text by the column type's input function.
    let names: Vec<String> = columns
        .iter()
        .map(|c| c.split(' ').next().unwrap_or_default().to_string())
        .collect();
    let mut sql = format!("INSERT INTO {shadow} ({}) VALUES (", names.join(", "));
    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
    for (row, values) in [&lows, &highs].into_iter().enumerate() {
        if row > 0 {
            sql.push_str("), (");
        }
        let mut cells = Vec::new();
        for (v, column) in values.iter().zip(&columns) {
            params.push(v);
            let ty = column.split_once(' ').map(|x| x.1).unwrap_or_default();
            let ty = ty.split(" COLLATE ").next().unwrap_or(ty);
            cells.push(format!("${}::pg_catalog.text::{ty}", params.len()));
        }
        sql.push_str(&cells.join(", "));
    }
    sql.push(')');
    owner.execute(sql.as_str(), &params).await.map_err(failed)?;
    let mut indexes = Vec::new();
    for (n, shape) in shapes.iter().enumerate() {
        let mut keys = Vec::new();
        for k in 0..shape.key_columns {
            let option = shape.options.get(k).copied().unwrap_or(0);
            let order = if option & 1 != 0 { "DESC" } else { "ASC" };
            let nulls = if option & 2 != 0 { "FIRST" } else { "LAST" };
            let collation = match shape.collations.get(k).map(String::as_str) {
                Some("") | None => String::new(),
                Some(c) => format!(" COLLATE {c}"),
            };
            let opclass = shape.opclasses.get(k).cloned().unwrap_or_default();
            keys.push(format!(
                "c_{n}_{k}{collation} {opclass} {order} NULLS {nulls}"
            ));
        }
        let include: Vec<String> = (shape.key_columns..shape.types.len())
            .map(|k| format!("c_{n}_{k}"))
            .collect();
        let include = if include.is_empty() {
            String::new()
        } else {
            format!(" INCLUDE ({})", include.join(", "))
        };
        let index = format!("i_{}_{n}", table.oid);
        owner
            .batch_execute(&format!(
                "CREATE INDEX {index} ON {shadow} ({}){include}",
                keys.join(", ")
            ))
            .await
            .map_err(failed)?;
        let path: String = owner
            .query_one(
                "SELECT pg_catalog.pg_relation_filepath(pg_catalog.to_regclass($1))",
                &[&format!("{SHADOW}.{index}")],
            )
            .await
            .map_err(failed)?
            .get(0);
        let height = relation
            .indexes
            .iter()
            .find(|i| i.name == shape.name)
            .and_then(|i| i.btree.as_ref())
            .map_or(0, |b| b.height);
        indexes.push((shape.path.clone(), path, height));
    }
    let shadow_heap: String = owner
        .query_one(
            "SELECT pg_catalog.pg_relation_filepath(pg_catalog.to_regclass($1))",
            &[&shadow],
        )
        .await
        .map_err(failed)?
        .get(0);
    Ok(Some(Shadowed {
        heap: table.path.clone(),
        shadow_heap,
        indexes,
    }))
}

/// `btm_magic` of a B-tree metapage.
const BTREE_MAGIC: u32 = 0x053162;

/// With the server stopped: each shadow's pages written over the real relation's first blocks
/// (the heap's first block, each index's metapage and leaf), and for production's height `h`
/// the `h` levels above the leaf built as PostgreSQL builds them: one page per level with a
/// single downlink (the minus-infinity pivot) to the level below, the top one the root named
/// by the metapage (`btm_root`, `btm_level`, and the fast root alike). Every descent (a search,
/// or the walk to the first or last leaf) then crosses `h` levels to the leaf holding the end
/// keys, and the planner reads `h` as the height.
pub(super) fn plant(
    data: &Path,
    block_size: usize,
    shadows: &[Shadowed],
    gins: &[GinMeta],
) -> std::io::Result<()> {
    for g in gins {
        let mut page = read_relation(data, &g.path, block_size, 1)?;
        patch_gin(&mut page, block_size, &g.gin)?;
        write_relation(data, &g.path, &page)?;
    }
    for s in shadows {
        let heap = read_relation(data, &s.shadow_heap, block_size, 1)?;
        write_relation(data, &s.heap, &heap[..block_size.min(heap.len())])?;
        for (real, shadow, height) in &s.indexes {
            let pages = read_relation(data, shadow, block_size, 3)?;
            let pages = grown(pages, block_size, *height)?;
            write_relation(data, real, &pages)?;
        }
    }
    Ok(())
}

/// A GIN index of the copy whose metapage takes production's counts: its first segment, and
/// the counts.
pub(super) struct GinMeta {
    pub path: String,
    pub gin: stats::Gin,
}

/// The GIN indexes of the copy the file has metapage statistics for, and a gap for each GIN
/// index it has none for (or every one, on a copy with data checksums: its pages are not
/// patched).
pub(super) async fn gin_metapages(
    admin: &Client,
    file: &stats::File,
) -> Result<(Vec<GinMeta>, Vec<(Option<(String, String)>, Gap)>), Trouble> {
    let (mut out, mut gaps) = (Vec::new(), Vec::new());
    let gins: Vec<(&stats::Relation, &stats::Index)> = file
        .relations
        .iter()
        .flat_map(|r| r.indexes.iter().map(move |i| (r, i)))
        .filter(|(_, i)| i.method == "gin")
        .collect();
    if gins.is_empty() {
        return Ok((out, gaps));
    }
    let checksums: String = admin
        .query_one("SELECT pg_catalog.current_setting('data_checksums')", &[])
        .await
        .map_err(refused)?
        .get(0);
    for (relation, index) in gins {
        let at = Some((relation.schema.clone(), relation.name.clone()));
        let Some(gin) = &index.gin else {
            gaps.push((at, Gap::GinNotInFile(index.name.clone())));
            continue;
        };
        if checksums != "off" {
            gaps.push((at, Gap::GinNotWritten(index.name.clone())));
            continue;
        }
        if let Some(on) = on_copy(admin, &relation.schema, &index.name).await? {
            out.push(GinMeta {
                path: on.path,
                gin: gin.clone(),
            });
        }
    }
    Ok((out, gaps))
}

/// `GIN_META`: the flag of a GIN metapage; `GIN_CURRENT_VERSION`.
const GIN_META: u16 = 1 << 3;
const GIN_VERSION: i32 = 2;

/// Writes production's counts into a GIN metapage (`GinMetaPageData` after the page header:
/// `nPendingPages` at 36, `nTotalPages` 48, `nEntryPages` 52, `nDataPages` 56, `nEntries` 64;
/// checked against pageinspect's `gin_metapage_info` on PostgreSQL 15). The page must be a
/// GIN metapage of the current version.
pub(super) fn patch_gin(page: &mut [u8], block_size: usize, g: &stats::Gin) -> std::io::Result<()> {
    let bad = |why: &str| std::io::Error::other(format!("not a GIN metapage: {why}"));
    if page.len() < block_size || block_size < 80 {
        return Err(bad("too short"));
    }
    let flags = u16::from_ne_bytes([page[block_size - 2], page[block_size - 1]]);
    if flags & GIN_META == 0 {
        return Err(bad("no meta flag"));
    }
    if i32::from_ne_bytes(page[72..76].try_into().unwrap_or_default()) != GIN_VERSION {
        return Err(bad("another version"));
    }
    let page32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX).to_ne_bytes();
    page[36..40].copy_from_slice(&page32(g.pending_pages));
    page[48..52].copy_from_slice(&page32(g.total_pages));
    page[52..56].copy_from_slice(&page32(g.entry_pages));
    page[56..60].copy_from_slice(&page32(g.data_pages));
    page[64..72].copy_from_slice(&i64::try_from(g.entries).unwrap_or(i64::MAX).to_ne_bytes());
    Ok(())
}

/// `BTP_LEAF`, `BTP_ROOT`: B-tree page flags.
const BTP_LEAF: u16 = 1;
const BTP_ROOT: u16 = 2;
/// `INDEX_ALT_TID_MASK`: a pivot tuple, whose offset number holds its key count.
const INDEX_ALT_TID_MASK: u16 = 0x2000;
/// `PG_PAGE_LAYOUT_VERSION`.
const PAGE_LAYOUT_VERSION: u16 = 4;

/// A B-tree of a metapage and one leaf (the shadow's) grown to `height` levels above the leaf:
/// the pages to write from block 0, the leaf staying block 1, level `k` at block `1 + k`.
pub(super) fn grown(
    mut pages: Vec<u8>,
    block_size: usize,
    height: u32,
) -> std::io::Result<Vec<u8>> {
    let bad = |why: &str| std::io::Error::other(format!("not a B-tree this copy made: {why}"));
    let u32_at = |p: &[u8], at: usize| -> u32 {
        u32::from_ne_bytes(p[at..at + 4].try_into().unwrap_or([0; 4]))
    };
    if pages.len() != 2 * block_size {
        return Err(bad("not a metapage and one leaf"));
    }
    // The metadata follows the 24-byte page header.
    if u32_at(&pages, 24) != BTREE_MAGIC || u32_at(&pages, 32) != 1 || u32_at(&pages, 40) != 1 {
        return Err(bad("its metapage does not name block 1 the root"));
    }
    if height == 0 {
        return Ok(pages);
    }
    let special = |p: &[u8]| u16::from_ne_bytes([p[16], p[17]]) as usize;
    let leaf_special = special(&pages[block_size..]);
    if leaf_special + 16 > block_size {
        return Err(bad("its leaf has no special space"));
    }
    // The leaf is no longer the root.
    let flags_at = block_size + leaf_special + 12;
    let flags = u16::from_ne_bytes([pages[flags_at], pages[flags_at + 1]]);
    if flags & BTP_LEAF == 0 {
        return Err(bad("block 1 is not a leaf"));
    }
    pages[flags_at..flags_at + 2].copy_from_slice(&(flags & !BTP_ROOT).to_ne_bytes());
    for level in 1..=height {
        let child = level; // the page of the level below: the leaf (1) or the page made before
        pages.extend(internal_page(block_size, child, level, level == height));
    }
    let root = 1 + height;
    pages[32..36].copy_from_slice(&root.to_ne_bytes());
    pages[36..40].copy_from_slice(&height.to_ne_bytes());
    pages[40..44].copy_from_slice(&root.to_ne_bytes());
    pages[44..48].copy_from_slice(&height.to_ne_bytes());
    Ok(pages)
}

/// An internal B-tree page at `level` holding one item, the minus-infinity pivot (no key
/// attributes), whose downlink is `child`; the root when `root`. No checksum (the copy has none).
fn internal_page(block_size: usize, child: u32, level: u32, root: bool) -> Vec<u8> {
    let mut page = vec![0u8; block_size];
    let special = block_size - 16;
    let tuple = special - 8;
    let put16 = |p: &mut [u8], at: usize, v: u16| p[at..at + 2].copy_from_slice(&v.to_ne_bytes());
    let put32 = |p: &mut [u8], at: usize, v: u32| p[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    put16(&mut page, 12, 24 + 4); // pd_lower: one line pointer
    put16(&mut page, 14, tuple as u16); // pd_upper
    put16(&mut page, 16, special as u16); // pd_special
    put16(&mut page, 18, block_size as u16 | PAGE_LAYOUT_VERSION);
    // The line pointer: lp_off (15 bits), lp_flags LP_NORMAL (2 bits), lp_len (15 bits).
    put32(&mut page, 24, tuple as u32 | (1 << 15) | (8 << 17));
    // The tuple: t_tid (block id high, low; the offset number: 0 key attributes), t_info.
    put16(&mut page, tuple, (child >> 16) as u16);
    put16(&mut page, tuple + 2, (child & 0xffff) as u16);
    put16(&mut page, tuple + 4, 0);
    put16(&mut page, tuple + 6, 8 | INDEX_ALT_TID_MASK);
    // The opaque data: no siblings, the level, the flags, no cycle id.
    put32(&mut page, special + 8, level);
    put16(&mut page, special + 12, if root { BTP_ROOT } else { 0 });
    page
}

/// At most `max_blocks` blocks of a relation's first segment, read without following a link.
fn read_relation(
    data: &Path,
    relative: &str,
    block_size: usize,
    max_blocks: usize,
) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(data.join(checked_path(relative)?))?;
    let mut out = Vec::new();
    file.take((block_size * max_blocks) as u64)
        .read_to_end(&mut out)?;
    Ok(out)
}

/// Writes `pages` at the start of a relation's first segment.
fn write_relation(data: &Path, relative: &str, pages: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(data.join(checked_path(relative)?))?;
    file.write_all_at(pages, 0)
}

/// A relation file's path as `pg_relation_filepath` gives it (`base/5/16384`), or an error.
fn checked_path(relative: &str) -> std::io::Result<&str> {
    // Only the default tablespace's files: a tablespace's are reached through a link.
    if relative.starts_with("base/")
        && relative.split('/').all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    {
        Ok(relative)
    } else {
        Err(std::io::Error::other(format!(
            "{relative:?} is not a relation file's path"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offsets of `GinMetaPageData`, as pageinspect's `gin_metapage_info` read a real
    /// metapage (PostgreSQL 15); a page that is not a current GIN metapage is left alone.
    #[test]
    fn a_gin_metapage_takes_production_s_counts_and_nothing_else_does() {
        let block = 8192;
        let mut page = vec![0u8; block];
        page[block - 2..].copy_from_slice(&GIN_META.to_ne_bytes());
        page[72..76].copy_from_slice(&2i32.to_ne_bytes());
        let g = stats::Gin {
            pending_pages: 3,
            total_pages: 489,
            entry_pages: 1,
            data_pages: 487,
            entries: 211,
        };
        patch_gin(&mut page, block, &g).unwrap();
        let u32_at = |p: &[u8], at: usize| u32::from_ne_bytes(p[at..at + 4].try_into().unwrap());
        assert_eq!(u32_at(&page, 36), 3);
        assert_eq!(u32_at(&page, 48), 489);
        assert_eq!(u32_at(&page, 52), 1);
        assert_eq!(u32_at(&page, 56), 487);
        assert_eq!(i64::from_ne_bytes(page[64..72].try_into().unwrap()), 211);
        // head and tail, the pending tuples, the version: untouched.
        assert!(page[24..36].iter().all(|b| *b == 0) && page[40..48].iter().all(|b| *b == 0));
        assert_eq!(i32::from_ne_bytes(page[72..76].try_into().unwrap()), 2);
        let mut not_meta = vec![0u8; block];
        not_meta[72..76].copy_from_slice(&2i32.to_ne_bytes());
        assert!(patch_gin(&mut not_meta, block, &g).is_err());
        let mut old = vec![0u8; block];
        old[block - 2..].copy_from_slice(&GIN_META.to_ne_bytes());
        old[72..76].copy_from_slice(&1i32.to_ne_bytes());
        assert!(patch_gin(&mut old, block, &g).is_err());
        assert!(old[48..52].iter().all(|b| *b == 0));
    }

    /// A metapage naming block 1 the root, and a leaf that is the root.
    fn meta_and_leaf(block: usize) -> Vec<u8> {
        let mut pages = vec![0u8; 2 * block];
        pages[24..28].copy_from_slice(&BTREE_MAGIC.to_ne_bytes());
        pages[32..36].copy_from_slice(&1u32.to_ne_bytes());
        pages[40..44].copy_from_slice(&1u32.to_ne_bytes());
        let special = (block - 16) as u16;
        pages[block + 16..block + 18].copy_from_slice(&special.to_ne_bytes());
        let flags = block + special as usize + 12;
        pages[flags..flags + 2].copy_from_slice(&(BTP_LEAF | BTP_ROOT).to_ne_bytes());
        pages
    }

    fn u32_at(p: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(p[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn only_the_default_tablespace_s_files_are_written() {
        assert!(checked_path("base/5/16384").is_ok());
        for bad in [
            "pg_tblspc/16400/PG_15/5/16384",
            "base/../global/1262",
            "/etc/passwd",
            "base//1",
        ] {
            assert!(checked_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_shadow_grows_one_page_a_level_each_pointing_down_to_the_one_below() {
        let block = 8192;
        let pages = grown(meta_and_leaf(block), block, 3).unwrap();
        assert_eq!(pages.len(), 5 * block);
        // The metapage: root block 4 at level 3, the fast root the same.
        assert_eq!(
            [
                u32_at(&pages, 32),
                u32_at(&pages, 36),
                u32_at(&pages, 40),
                u32_at(&pages, 44)
            ],
            [4, 3, 4, 3]
        );
        // The leaf is no longer the root.
        let flags = block + block - 16 + 12;
        assert_eq!(
            u16::from_ne_bytes([pages[flags], pages[flags + 1]]),
            BTP_LEAF
        );
        for level in 1..=3u32 {
            let page = &pages[(1 + level as usize) * block..(2 + level as usize) * block];
            let special = u16::from_ne_bytes([page[16], page[17]]) as usize;
            assert_eq!(u32_at(page, special + 8), level);
            let root = u16::from_ne_bytes([page[special + 12], page[special + 13]]);
            assert_eq!(root, if level == 3 { BTP_ROOT } else { 0 });
            // One line pointer, to an 8-byte pivot with no key attributes whose downlink is
            // the page of the level below.
            let lp = u32_at(page, 24);
            let (off, flags, len) = (lp & 0x7fff, (lp >> 15) & 3, lp >> 17);
            assert_eq!((flags, len), (1, 8));
            let t = off as usize;
            let child = (u32::from(u16::from_ne_bytes([page[t], page[t + 1]])) << 16)
                | u32::from(u16::from_ne_bytes([page[t + 2], page[t + 3]]));
            assert_eq!(child, level);
            let info = u16::from_ne_bytes([page[t + 6], page[t + 7]]);
            assert_eq!(info, 8 | INDEX_ALT_TID_MASK);
        }
        // Height 0 leaves the shadow as it is; anything but a metapage and one leaf is refused.
        assert_eq!(
            grown(meta_and_leaf(block), block, 0).unwrap(),
            meta_and_leaf(block)
        );
        assert!(grown(vec![0u8; 2 * block], block, 2).is_err());
        assert!(grown(vec![0u8; 3 * block], block, 2).is_err());
    }

    fn row(oid: u32, kind: char, element: u32, inner: u32, canonical: bool) -> TypeRow {
        TypeRow {
            oid,
            kind,
            element,
            inner,
            canonical,
        }
    }

    fn lookup(rows: &[TypeRow]) -> impl Fn(u32) -> Option<TypeRow> + '_ {
        move |oid| rows.iter().find(|r| r.oid == oid).cloned()
    }

    #[test]
    fn only_types_whose_input_is_postgresql_s_own_are_parsed_with_privilege() {
        let rows = [
            row(23, 'b', 0, 0, false),        // int4
            row(1007, 'b', 23, 0, false),     // int4[]
            row(3904, 'r', 0, 23, false),     // int4range
            row(20000, 'e', 0, 0, false),     // an enum
            row(20001, 'b', 20000, 0, false), // its array
            row(20002, 'd', 0, 0, false),     // a domain
            row(20003, 'b', 20002, 0, false), // an array of the domain
            row(20004, 'c', 0, 0, false),     // a composite
            row(20005, 'b', 20004, 0, false), // an array of it
            row(20006, 'r', 0, 23, true),     // a range with a canonical function
            row(20007, 'r', 0, 23, false),    // a range without
            row(20008, 'r', 0, 20002, false), // a range over the domain
            row(20009, 'm', 0, 20007, false), // a multirange of the plain range
            row(20010, 'm', 0, 20006, false), // of the canonical one
            row(20011, 'b', 0, 0, false),     // a base type no extension made
        ];
        let l = lookup(&rows);
        for safe in [23, 1007, 3904, 20000, 20001, 20007, 20009] {
            assert!(parse_is_safe(safe, &l), "{safe} should be safe");
        }
        for unsafe_ in [
            20002, 20003, 20004, 20005, 20006, 20008, 20010, 20011, 99999,
        ] {
            assert!(!parse_is_safe(unsafe_, &l), "{unsafe_} should not be safe");
        }
    }

    fn column() -> stats::Column {
        stats::Column {
            name: "c".into(),
            type_name: "integer".into(),
            inherited: false,
            null_frac: 0.0,
            avg_width: 4,
            n_distinct: -1.0,
            most_common_vals: Some("{1,2}".into()),
            most_common_freqs: Some(vec![0.5, 0.25]),
            histogram_bounds: Some("{3,4,5}".into()),
            correlation: Some(0.5),
            most_common_elems: None,
            most_common_elem_freqs: None,
            elem_count_histogram: None,
            range_length_histogram: None,
            range_empty_frac: None,
            range_bounds_histogram: None,
            redacted: false,
        }
    }

    #[test]
    fn slots_are_those_analyze_writes_with_their_operators() {
        let t = TypeFacts {
            base: 23,
            safe: true,
            eq: 96,
            lt: 97,
            ..TypeFacts::default()
        };
        let slots = slots_of(&column(), &t, 0);
        let kinds: Vec<(i16, u32)> = slots.iter().map(|s| (s.kind, s.op)).collect();
        assert_eq!(kinds, vec![(1, 96), (2, 97), (3, 97)]);
        assert_eq!(slots[0].values, Some(("{1,2}".into(), 23)));
        assert_eq!(slots[2].numbers, Some(vec![0.5]));
        assert!(slots_missing(&column(), &t).is_empty());
        // No `<`: no histogram, no correlation, and the gap is named.
        let t = TypeFacts { lt: 0, ..t };
        let kinds: Vec<i16> = slots_of(&column(), &t, 0).iter().map(|s| s.kind).collect();
        assert_eq!(kinds, vec![1]);
        assert_eq!(
            slots_missing(&column(), &t),
            vec!["histogram and correlation"]
        );
    }

    #[test]
    fn a_range_s_lengths_are_float8_under_float8_s_less_than() {
        let mut c = column();
        c.most_common_vals = None;
        c.most_common_freqs = None;
        c.histogram_bounds = None;
        c.correlation = None;
        c.range_bounds_histogram = Some("{\"[1,2)\"}".into());
        c.range_length_histogram = Some("{1}".into());
        c.range_empty_frac = Some(0.1);
        let t = TypeFacts {
            base: 3904,
            safe: true,
            range: 3904,
            ..TypeFacts::default()
        };
        let slots = slots_of(&c, &t, 0);
        assert_eq!(slots[0].kind, 7);
        assert_eq!(slots[0].values, Some(("{\"[1,2)\"}".into(), 3904)));
        assert_eq!((slots[1].kind, slots[1].op), (6, 672));
        assert_eq!(slots[1].values, Some(("{1}".into(), 701)));
    }
}
