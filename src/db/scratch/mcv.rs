//! Production's multi-column most common values (an extended statistics object's `mcv`) on the
//! copy, in PostgreSQL's own serialised form (`statext_mcv_serialize`, the same from 13 to 18).
//!
//! That form holds each value as the server holds it in memory: a pass-by-value type's bytes,
//! a fixed-length type's bytes, a variable-length value's contents. The file has the values as
//! text, as `pg_stats_ext` prints them. So the copy's server forms them: the copy's superuser
//! parses each with its column's *base* type's input function (domains stripped, and only where
//! that runs PostgreSQL's own code, as for a column's statistics before 18), into a table of
//! its own made for this and stored plain (no compression, no short headers), checkpoints, and
//! plancheck reads the values' bytes from that table's file. Then the table is dropped. No
//! value is spliced into SQL; what the server cannot parse is a named gap.

use std::collections::BTreeMap;
use std::path::Path;

use tokio_postgres::Client;

use super::Gap;
use super::production::{OnCopy, refused, type_facts};
use crate::db::scratch::{McvGap, Trouble};
use crate::stats;

/// `STATS_MCV_MAGIC` and `STATS_MCV_TYPE_BASIC` (`statistics/statistics.h`).
const MCV_MAGIC: u32 = 0xE1A6_51C2;
const TYPE_BASIC: u32 = 1;
/// The fewest items any supported major's deserialiser takes (`STATS_MCVLIST_MAX_ITEMS`).
const MAX_ITEMS: usize = 8192;
/// `MAXIMUM_ALIGNOF` on the 64-bit servers plancheck runs beside.
const MAXALIGN: usize = 8;
/// `sizeof(DimensionInfo)`: four `int`s and a `bool`, padded to the `int`'s alignment.
const DIMENSION_INFO: usize = 20;
/// The schema of the table the values are formed in.
const SCHEMA: &str = "plancheck_mcv_values";

/// One dimension (key column) of a list: its type, and its distinct values' bytes.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Dimension {
    pub type_oid: u32,
    /// `typlen`: 1 to 8 by value, another positive length by reference, -1 variable-length.
    pub typlen: i16,
    pub byval: bool,
    /// Each value's bytes: its datum for a fixed length, its contents without the header for a
    /// variable-length type.
    pub values: Vec<Vec<u8>>,
}

/// One item of a list: which keys are null, its frequencies, and each key's value as an index
/// into its dimension's values.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Item {
    pub nulls: Vec<bool>,
    pub frequency: f64,
    pub base_frequency: f64,
    pub indexes: Vec<u16>,
}

fn maxalign(n: usize) -> usize {
    n.div_ceil(MAXALIGN) * MAXALIGN
}

/// `pg_mcv_list`'s serialised form (without the varlena header): the header, each dimension's
/// type and sizes, the values of each dimension, then the items.
pub(super) fn mcv_bytes(dims: &[Dimension], items: &[Item]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MCV_MAGIC.to_ne_bytes());
    out.extend_from_slice(&TYPE_BASIC.to_ne_bytes());
    out.extend_from_slice(&u32::try_from(items.len()).unwrap_or(0).to_ne_bytes());
    out.extend_from_slice(&i16::try_from(dims.len()).unwrap_or(0).to_ne_bytes());
    for d in dims {
        out.extend_from_slice(&d.type_oid.to_ne_bytes());
    }
    for d in dims {
        let (nbytes, aligned) = if d.typlen > 0 {
            let len = usize::try_from(d.typlen).unwrap_or(0);
            let aligned = if d.byval { 0 } else { maxalign(len) };
            (d.values.len() * len, d.values.len() * aligned)
        } else {
            d.values.iter().fold((0, 0), |(n, a), v| {
                (n + 4 + v.len(), a + maxalign(4 + v.len()))
            })
        };
        let mut info = [0u8; DIMENSION_INFO];
        let ints = [d.values.len(), nbytes, aligned];
        for (i, v) in ints.iter().enumerate() {
            info[i * 4..i * 4 + 4].copy_from_slice(&i32::try_from(*v).unwrap_or(0).to_ne_bytes());
        }
        info[12..16].copy_from_slice(&i32::from(d.typlen).to_ne_bytes());
        info[16] = u8::from(d.byval);
        out.extend_from_slice(&info);
    }
    for d in dims {
        for v in &d.values {
            if d.typlen < 0 {
                out.extend_from_slice(&u32::try_from(v.len()).unwrap_or(0).to_ne_bytes());
            }
            out.extend_from_slice(v);
        }
    }
    for item in items {
        out.extend(item.nulls.iter().map(|n| u8::from(*n)));
        out.extend_from_slice(&item.frequency.to_ne_bytes());
        out.extend_from_slice(&item.base_frequency.to_ne_bytes());
        for i in &item.indexes {
            out.extend_from_slice(&i.to_ne_bytes());
        }
    }
    out
}

/// The list of `e` as the copy's `pg_mcv_list`, with `attnums[p]` the copy's attribute number
/// of the file's key at position `p`; `None` with the gap said when it cannot be formed.
// Long because it is the list in order: the file's text parsed as an array, its shape checked,
// each key formed on the copy, then the items.
#[allow(clippy::too_many_arguments)]
pub(super) async fn form(
    admin: &Client,
    major: u32,
    data: &Path,
    table: &OnCopy,
    expressions: Option<&OnCopy>,
    e: &stats::Extended,
    attnums: &[i16],
    gaps: &mut Vec<Gap>,
) -> Result<Option<Vec<u8>>, Trouble> {
    let name = crate::model::Relation::new(Some(&e.schema), &e.name).to_string();
    let (Some(text), Some(freqs), Some(base_freqs)) = (
        &e.most_common_vals,
        &e.most_common_freqs,
        &e.most_common_base_freqs,
    ) else {
        if e.most_common_vals.is_some() {
            gaps.push(Gap::ExtendedMcv(name, McvGap::Shape));
        }
        return Ok(None);
    };
    // The file's items, each a row of keys in the file's order; the server parses the array.
    let row = admin
        .query_one(
            "SELECT pg_catalog.array_ndims(a), pg_catalog.array_length(a, 1), \
                    pg_catalog.array_length(a, 2), \
                    ARRAY(SELECT u FROM pg_catalog.unnest(a) AS u) \
               FROM (SELECT $1::pg_catalog.text::pg_catalog.text[] AS a) AS x",
            &[text],
        )
        .await;
    let row = match row {
        Ok(row) => row,
        // The server refused the text as an array: the file's list is malformed.
        Err(e) if e.code().is_some() => {
            gaps.push(Gap::ExtendedMcv(name, McvGap::Shape));
            return Ok(None);
        }
        Err(e) => return Err(refused(e)),
    };
    let shape: (Option<i32>, Option<i32>, Option<i32>) = (row.get(0), row.get(1), row.get(2));
    let flat: Vec<Option<String>> = row.get(3);
    let keys = attnums.len();
    let n = freqs.len();
    if shape != (Some(2), i32::try_from(n).ok(), i32::try_from(keys).ok())
        || base_freqs.len() != n
        || n == 0
        || n > MAX_ITEMS
        || flat.len() != n * keys
    {
        gaps.push(Gap::ExtendedMcv(name, McvGap::Shape));
        return Ok(None);
    }
    // The copy's dimensions are its key columns in attribute-number order, then its
    // expressions in order (-1, -2, …), whose types are those of the table standing for them.
    let mut order: Vec<usize> = (0..keys).collect();
    order.sort_by_key(|p| (attnums[*p] < 0, attnums[*p].unsigned_abs()));
    let mut dims = Vec::new();
    let mut columns = Vec::new();
    for p in &order {
        let texts: Vec<Option<String>> = (0..n).map(|i| flat[i * keys + p].clone()).collect();
        let (on, attnum) = match (attnums[*p], expressions) {
            (a, _) if a > 0 => (table, a),
            (a, Some(x)) => (x, -a),
            (_, None) => {
                gaps.push(Gap::ExtendedMcv(
                    name,
                    McvGap::NotParsed("an expression".into()),
                ));
                return Ok(None);
            }
        };
        match dimension(admin, major, data, on, attnum, &texts).await? {
            Ok((dim, at)) => {
                dims.push(dim);
                columns.push(at);
            }
            Err(why) => {
                gaps.push(Gap::ExtendedMcv(name, why));
                return Ok(None);
            }
        }
    }
    let items = (0..n)
        .map(|i| Item {
            nulls: columns.iter().map(|c| c[i].is_none()).collect(),
            frequency: freqs[i],
            base_frequency: base_freqs[i],
            indexes: columns.iter().map(|c| c[i].unwrap_or(0)).collect(),
        })
        .collect::<Vec<_>>();
    Ok(Some(mcv_bytes(&dims, &items)))
}

/// One key's values formed on the copy: the dimension, and each item's index into its values
/// (`None` for a null); or why not.
async fn dimension(
    admin: &Client,
    major: u32,
    data: &Path,
    table: &OnCopy,
    attnum: i16,
    texts: &[Option<String>],
) -> Result<Result<(Dimension, Vec<Option<u16>>), McvGap>, Trouble> {
    let row = admin
        .query_one(
            "SELECT a.atttypid, pg_catalog.format_type(a.atttypid, NULL) \
               FROM pg_catalog.pg_attribute a \
              WHERE a.attrelid OPERATOR(pg_catalog.=) $1::pg_catalog.oid \
                AND a.attnum OPERATOR(pg_catalog.=) $2::pg_catalog.int2",
            &[&table.oid, &attnum],
        )
        .await
        .map_err(refused)?;
    let (type_oid, type_name): (u32, String) = (row.get(0), row.get(1));
    let facts = type_facts(admin, major, type_oid).await?;
    if !facts.safe {
        return Ok(Err(McvGap::NotParsed(type_name)));
    }
    let mut distinct: Vec<String> = Vec::new();
    let mut at: BTreeMap<&str, u16> = BTreeMap::new();
    let mut indexes = Vec::new();
    for t in texts {
        indexes.push(t.as_ref().map(|t| match at.get(t.as_str()) {
            Some(i) => *i,
            None => {
                let i = u16::try_from(distinct.len()).unwrap_or(u16::MAX);
                at.insert(t, i);
                distinct.push(t.clone());
                i
            }
        }));
    }
    let formed = formed(admin, data, facts.base, &distinct).await?;
    Ok(formed.map(|(typlen, byval, values)| {
        (
            Dimension {
                type_oid,
                typlen,
                byval,
                values,
            },
            indexes,
        )
    }))
}

/// The in-memory bytes of each of `texts` parsed as `base`, formed on the copy: `typlen`,
/// `typbyval`, and the values in order.
// Long because it is one round trip to the copy in order: the type read, the table made and
// filled in one transaction, the checkpoint, the file read, the table dropped.
async fn formed(
    admin: &Client,
    data: &Path,
    base: u32,
    texts: &[String],
) -> Result<Result<(i16, bool, Vec<Vec<u8>>), McvGap>, Trouble> {
    let row = admin
        .query_one(
            "SELECT t.typlen, t.typbyval, t.typalign::pg_catalog.text, \
                    pg_catalog.format_type(t.oid, NULL), pg_catalog.quote_ident(p.proname), \
                    p.pronargs, n.nspname OPERATOR(pg_catalog.=) 'pg_catalog', \
                    CASE WHEN t.typelem OPERATOR(pg_catalog.<>) 0 THEN t.typelem ELSE t.oid END, \
                    pg_catalog.current_setting('block_size')::pg_catalog.int4 \
               FROM pg_catalog.pg_type t \
               JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.typinput \
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace \
              WHERE t.oid OPERATOR(pg_catalog.=) $1::pg_catalog.oid",
            &[&base],
        )
        .await
        .map_err(refused)?;
    let (typlen, byval, align, type_name): (i16, bool, String, String) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    let (input, nargs, in_catalog, ioparam): (String, i16, bool, u32) =
        (row.get(4), row.get(5), row.get(6), row.get(7));
    let block_size = usize::try_from(row.get::<_, i32>(8)).unwrap_or(0);
    if !in_catalog || typlen == 0 || typlen < -1 || cfg!(target_endian = "big") {
        return Ok(Err(McvGap::NotParsed(type_name)));
    }
    let parse = match nargs {
        1 => format!("pg_catalog.{input}(u.v::pg_catalog.cstring)"),
        2 => format!("pg_catalog.{input}(u.v::pg_catalog.cstring, $2::pg_catalog.oid)"),
        _ => format!("pg_catalog.{input}(u.v::pg_catalog.cstring, $2::pg_catalog.oid, -1)"),
    };
    // Made and filled in one transaction whose names resolve in `pg_catalog` first.
    let create = format!(
        "BEGIN; SET LOCAL search_path = pg_catalog, pg_temp; CREATE SCHEMA {SCHEMA}; \
         CREATE TABLE {SCHEMA}.v (o pg_catalog.int4 NOT NULL, v {type_name} NOT NULL); \
         ALTER TABLE {SCHEMA}.v ALTER COLUMN v SET STORAGE PLAIN"
    );
    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = if nargs == 1 {
        vec![&texts]
    } else {
        vec![&texts, &ioparam]
    };
    let insert = format!(
        "INSERT INTO {SCHEMA}.v (o, v) SELECT u.o, {parse} \
           FROM pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY AS u(v, o)"
    );
    let inserted = match admin.batch_execute(&create).await {
        Ok(()) => admin.execute(insert.as_str(), &params).await,
        Err(e) => Err(e),
    };
    if inserted.is_err() {
        admin.batch_execute("ROLLBACK").await.map_err(refused)?;
    } else {
        admin.batch_execute("COMMIT").await.map_err(refused)?;
    }
    let made = inserted.is_ok();
    let result = match inserted {
        Err(e) => Err(McvGap::Refused(
            e.code().map_or_else(String::new, |c| c.code().to_string()),
        )),
        Ok(_) => {
            admin.batch_execute("CHECKPOINT").await.map_err(refused)?;
            let path: String = admin
                .query_one(
                    &format!(
                        "SELECT pg_catalog.pg_relation_filepath('{SCHEMA}.v'::pg_catalog.regclass)"
                    ),
                    &[],
                )
                .await
                .map_err(refused)?
                .get(0);
            let align = match align.as_str() {
                "c" => 1,
                "s" => 2,
                "d" => 8,
                _ => 4,
            };
            match std::fs::read(data.join(&path)) {
                Ok(file) => values_in(&file, block_size, typlen, align, texts.len())
                    .map(|v| (typlen, byval, v))
                    .ok_or(McvGap::NotRead),
                Err(_) => Err(McvGap::NotRead),
            }
        }
    };
    if made {
        admin
            .batch_execute(&format!("DROP SCHEMA {SCHEMA} CASCADE"))
            .await
            .map_err(refused)?;
    }
    Ok(result)
}

/// Each value of a heap file of rows `(o int4, v)`, in the order of `o` (1 to `count`): the
/// datum's bytes, or a variable-length value's contents (after a short or a 4-byte header).
/// `None` when the file does not hold each `o` once, or a value is compressed or in TOAST.
pub(super) fn values_in(
    file: &[u8],
    block_size: usize,
    typlen: i16,
    align: usize,
    count: usize,
) -> Option<Vec<Vec<u8>>> {
    let mut out: Vec<Option<Vec<u8>>> = vec![None; count];
    let u16_at =
        |b: &[u8], at: usize| Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let u32_at =
        |b: &[u8], at: usize| Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?));
    if block_size == 0 {
        return None;
    }
    for page in file.chunks(block_size) {
        // PageHeaderData: pd_lower at 12; line pointers from 24, four bytes each.
        let lower = usize::from(u16_at(page, 12)?);
        let pointers = lower.saturating_sub(24) / 4;
        for i in 0..pointers {
            let lp = u32_at(page, 24 + 4 * i)?;
            let (off, flags, len) = ((lp & 0x7fff) as usize, (lp >> 15) & 3, (lp >> 17) as usize);
            if flags != 1 {
                continue;
            }
            let tuple = page.get(off..off + len)?;
            // HeapTupleHeaderData: t_hoff at 22.
            let data = tuple.get(usize::from(*tuple.get(22)?)..)?;
            let o = usize::try_from(u32_at(data, 0)?).ok()?;
            let at = 4usize.div_ceil(align) * align;
            let value = if typlen > 0 {
                data.get(at..at + usize::try_from(typlen).ok()?)?.to_vec()
            } else if *data.get(4)? & 1 == 1 {
                // A short (1-byte) header, never aligned: the size, header included; 0x01
                // alone is a pointer to TOAST.
                let size = usize::from(*data.get(4)? >> 1);
                if size == 0 {
                    return None;
                }
                data.get(5..4 + size)?.to_vec()
            } else {
                // A 4-byte header, aligned: uncompressed only (the low bits 00).
                let header = u32_at(data, at)?;
                if header & 3 != 0 {
                    return None;
                }
                let size = (header >> 2) as usize;
                data.get(at + 4..at + size.max(4))?.to_vec()
            };
            let slot = out.get_mut(o.checked_sub(1)?)?;
            if slot.replace(value).is_some() {
                return None;
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `statext_mcv_serialize`, byte by byte (the server reading it back is tested
    /// in `tests/stats_check.rs`).
    #[test]
    fn the_serialised_list_is_postgresql_s() {
        let dims = [
            Dimension {
                type_oid: 23,
                typlen: 4,
                byval: true,
                values: vec![7i32.to_ne_bytes().to_vec()],
            },
            Dimension {
                type_oid: 25,
                typlen: -1,
                byval: false,
                values: vec![b"ab".to_vec(), b"c".to_vec()],
            },
        ];
        let items = [
            Item {
                nulls: vec![false, false],
                frequency: 0.5,
                base_frequency: 0.25,
                indexes: vec![0, 1],
            },
            Item {
                nulls: vec![true, false],
                frequency: 0.125,
                base_frequency: 0.0625,
                indexes: vec![0, 0],
            },
        ];
        let b = mcv_bytes(&dims, &items);
        assert_eq!(&b[0..4], &0xE1A6_51C2u32.to_ne_bytes());
        assert_eq!(&b[4..8], &1u32.to_ne_bytes());
        assert_eq!(&b[8..12], &2u32.to_ne_bytes());
        assert_eq!(&b[12..14], &2i16.to_ne_bytes());
        assert_eq!(&b[14..18], &23u32.to_ne_bytes());
        assert_eq!(&b[18..22], &25u32.to_ne_bytes());
        // The int4 dimension: one value, 4 bytes, nothing copied on reading, typlen 4, by value.
        let int4 = &b[22..42];
        assert_eq!(&int4[0..4], &1i32.to_ne_bytes());
        assert_eq!(&int4[4..8], &4i32.to_ne_bytes());
        assert_eq!(&int4[8..12], &0i32.to_ne_bytes());
        assert_eq!(&int4[12..16], &4i32.to_ne_bytes());
        assert_eq!(int4[16], 1);
        // The text dimension: two values of 4 + 2 and 4 + 1 bytes, each copied with a header
        // and aligned to 8.
        let text = &b[42..62];
        assert_eq!(&text[0..4], &2i32.to_ne_bytes());
        assert_eq!(&text[4..8], &11i32.to_ne_bytes());
        assert_eq!(&text[8..12], &16i32.to_ne_bytes());
        assert_eq!(&text[12..16], &(-1i32).to_ne_bytes());
        assert_eq!(text[16], 0);
        assert_eq!(&b[62..66], &7i32.to_ne_bytes());
        assert_eq!(&b[66..70], &2u32.to_ne_bytes());
        assert_eq!(&b[70..72], b"ab");
        assert_eq!(&b[72..76], &1u32.to_ne_bytes());
        assert_eq!(b[76], b'c');
        // ITEM_SIZE(2) = 2 * (2 + 1) + 16, twice.
        assert_eq!(b.len(), 77 + 2 * 22);
        assert_eq!(&b[77..79], &[0, 0]);
        assert_eq!(&b[79..87], &0.5f64.to_ne_bytes());
        assert_eq!(&b[95..97], &0u16.to_ne_bytes());
        assert_eq!(&b[97..99], &1u16.to_ne_bytes());
        assert_eq!(&b[99..101], &[1, 0]);
    }

    fn page(tuples: &[Vec<u8>], block_size: usize) -> Vec<u8> {
        let mut p = vec![0u8; block_size];
        let mut upper = block_size;
        for (i, t) in tuples.iter().enumerate() {
            upper = (upper - t.len()) / 8 * 8;
            p[upper..upper + t.len()].copy_from_slice(t);
            let lp = (upper as u32) | (1 << 15) | ((t.len() as u32) << 17);
            p[24 + 4 * i..28 + 4 * i].copy_from_slice(&lp.to_ne_bytes());
        }
        let lower = (24 + 4 * tuples.len()) as u16;
        p[12..14].copy_from_slice(&lower.to_ne_bytes());
        p
    }

    fn tuple(o: i32, value: &[u8]) -> Vec<u8> {
        let mut t = vec![0u8; 24];
        t[22] = 24;
        t.extend_from_slice(&o.to_ne_bytes());
        t.extend_from_slice(value);
        t
    }

    #[test]
    fn values_are_read_from_the_heap_page_in_their_order() {
        let varlena = |s: &[u8]| {
            let mut v = (((s.len() + 4) as u32) << 2).to_ne_bytes().to_vec();
            v.extend_from_slice(s);
            v
        };
        let p = page(
            &[tuple(2, &varlena(b"second")), tuple(1, &varlena(b"x"))],
            8192,
        );
        assert_eq!(
            values_in(&p, 8192, -1, 4, 2),
            Some(vec![b"x".to_vec(), b"second".to_vec()])
        );
        // An int8 after the int4 is aligned to 8.
        let mut eight = vec![0u8; 4];
        eight.extend_from_slice(&9i64.to_ne_bytes());
        let p = page(&[tuple(1, &eight)], 8192);
        assert_eq!(
            values_in(&p, 8192, 8, 8, 1),
            Some(vec![9i64.to_ne_bytes().to_vec()])
        );
        // A short header follows the int4 unaligned.
        let p = page(&[tuple(1, &[(3 << 1) | 1, b'h', b'i'])], 8192);
        assert_eq!(values_in(&p, 8192, -1, 8, 1), Some(vec![b"hi".to_vec()]));
        // A value missing, twice, or compressed is no list.
        assert_eq!(values_in(&p, 8192, 8, 8, 2), None);
        let p = page(&[tuple(1, &varlena(b"a")), tuple(1, &varlena(b"a"))], 8192);
        assert_eq!(values_in(&p, 8192, -1, 4, 1), None);
        let mut compressed = varlena(b"a");
        compressed[0] |= 2;
        let p = page(&[tuple(1, &compressed)], 8192);
        assert_eq!(values_in(&p, 8192, -1, 4, 1), None);
    }
}
