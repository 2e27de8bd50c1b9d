//! Production's statistics as a file: what `plancheck stats export` reads from a server's
//! catalog (the sizes of its tables and indexes, `pg_stats`, extended statistics, the planner
//! settings it runs with, the indexes' order and B-tree heights, the end keys the planner reads
//! from an index), written as a versioned JSON file, and read back from one.
//!
//! The file is untrusted input: it arrives in a pull request like any project file. [`read`]
//! refuses a file of another format or version, a value out of the range PostgreSQL itself
//! allows, a name twice, and says where (`path:line:column` for what JSON cannot parse); the
//! values themselves (most common values, histogram bounds, end keys) stay text here, and are
//! only ever handed to a server as data, parsed by the column type's own input function.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::BadInput;

/// The `format` field of every statistics file.
pub const FORMAT: &str = "plancheck-statistics";

/// The version of the file this build writes and reads.
pub const VERSION: u32 = 1;

/// Past this age a file is said to be stale: production's tables have grown and its statistics
/// moved since (autovacuum analyses a table once a tenth of it changed, by default).
pub const STALE_AFTER_DAYS: i64 = 7;

/// The majors a file may come from: those plancheck checks.
pub const MAJORS: std::ops::RangeInclusive<u32> = 13..=18;

/// A statistics file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub format: String,
    pub version: u32,
    /// When the statistics were read, on the server's clock (RFC 3339, UTC).
    pub exported_at: String,
    pub server: Server,
    /// The planner settings of the exporting session, as `pg_settings` gives them.
    pub settings: Vec<Setting>,
    /// Columns whose values were left out (`--redact`), as `schema.table.column`.
    #[serde(default)]
    pub redacted: Vec<String>,
    pub relations: Vec<Relation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// `server_version_num`: 150018.
    pub version_num: u32,
    /// `server_version`, as the server says it.
    pub version: String,
    /// `block_size`: the copy must have the same for page counts to mean the same.
    pub block_size: u32,
    /// The database's collation and character classification (`pg_database`): text's
    /// histogram bounds are in the collation's order.
    pub collate: String,
    pub ctype: String,
    /// `pg_database.datlocprovider` from PostgreSQL 15: `c` (libc, by `collate`), `i` (ICU),
    /// `b` (builtin, from 17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale_provider: Option<String>,
    /// The ICU or builtin locale (`daticulocale` in 15 and 16, `datlocale` from 17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
}

impl Server {
    pub fn major(&self) -> u32 {
        self.version_num / 10_000
    }

    /// The database's default collation, as a reader names it: `en_US.UTF-8`, `ICU und-x-icu`.
    pub fn collation(&self) -> String {
        match (self.locale_provider.as_deref(), &self.locale) {
            (Some("i"), Some(l)) => format!("ICU {l}"),
            (Some("b"), Some(l)) => format!("builtin {l}"),
            _ => self.collate.clone(),
        }
    }

    /// Whether the database sorts text as the copy does (by bytes, `C`): libc's `C` and
    /// `POSIX`, `C.UTF-8` (code point order, which is UTF-8's byte order), and the builtin
    /// provider's locales (code point order too).
    pub fn sorts_as_c(&self) -> bool {
        match self.locale_provider.as_deref() {
            Some("i") => false,
            Some("b") => true,
            _ => {
                let c = self.collate.to_ascii_lowercase();
                c == "c" || c == "posix" || c == "c.utf-8" || c == "c.utf8"
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    pub name: String,
    pub setting: String,
    /// `pg_settings.unit` (`8kB`, `ms`, …), where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// A table, a partitioned table or a materialized view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    pub schema: String,
    pub name: String,
    /// `pg_class.relkind`: `r`, `p` or `m`.
    pub kind: String,
    pub size: Size,
    /// `pg_stats`, one row per column and `inherited` (a partitioned table's parent has rows of
    /// both kinds).
    pub columns: Vec<Column>,
    /// In production's OID order: the planner breaks near ties between indexes by it.
    pub indexes: Vec<Index>,
    #[serde(default)]
    pub extended: Vec<Extended>,
}

impl Relation {
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }
}

/// A relation's size, as the planner reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Size {
    /// `pg_class.relpages`, `reltuples` (-1: never analysed), `relallvisible`.
    pub relpages: i64,
    pub reltuples: f64,
    #[serde(default)]
    pub relallvisible: i64,
    /// The main fork's pages on disk when exported: the planner scales `reltuples` by these,
    /// not by `relpages`.
    pub blocks: i64,
}

/// One row of `pg_stats`: the values as the server prints them (array literals of the
/// column's type), the numbers as numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub name: String,
    /// `format_type` of the column's type: the copy's column must have the same.
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(default)]
    pub inherited: bool,
    pub null_frac: f64,
    pub avg_width: i32,
    pub n_distinct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_vals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_freqs: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_bounds: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_elems: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_elem_freqs: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elem_count_histogram: Option<Vec<f64>>,
    /// PostgreSQL 17's statistics of range types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_length_histogram: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_empty_frac: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_bounds_histogram: Option<String>,
    /// Its values were left out (`--redact`): the planner falls back to its defaults for
    /// conditions on them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

impl Column {
    /// Leaves out every value of the column, keeping the numbers that reveal none.
    pub fn redact(&mut self) {
        self.most_common_vals = None;
        self.most_common_freqs = None;
        self.histogram_bounds = None;
        self.most_common_elems = None;
        self.most_common_elem_freqs = None;
        self.range_length_histogram = None;
        self.range_bounds_histogram = None;
        self.redacted = true;
    }

    /// Whether it holds any value of the column.
    pub fn holds_values(&self) -> bool {
        self.most_common_vals.is_some()
            || self.histogram_bounds.is_some()
            || self.most_common_elems.is_some()
            || self.range_bounds_histogram.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Index {
    pub name: String,
    /// `pg_am.amname`.
    pub method: String,
    pub size: Size,
    /// The table's columns the index keys on, in order; None for an expression key.
    pub keys: Vec<Option<String>>,
    /// A B-tree's height (the metapage's level), where the index is a B-tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btree: Option<BTree>,
    /// A GIN index's metapage statistics, where pageinspect could read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gin: Option<Gin>,
    /// `pg_stats` of the index's expression keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<Column>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BTree {
    /// The root's level: 0 when the root is the only leaf.
    pub height: u32,
    /// `metapage` (read with pageinspect's `bt_metap`) or `estimate` (from the index's pages
    /// and its keys' width: the copy's costs are then approximate by a level).
    pub height_from: String,
    /// The lowest and highest non-null value of the leading key, as the server prints them: the
    /// planner reads them from the index itself for a condition past the histogram's ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest: Option<String>,
}

/// What a GIN index's metapage counts (pageinspect's `gin_metapage_info`): `gincostestimate`
/// prices a scan from them, scaled to the index's pages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gin {
    pub pending_pages: u64,
    pub total_pages: u64,
    pub entry_pages: u64,
    pub data_pages: u64,
    pub entries: u64,
}

/// One extended statistics object (`CREATE STATISTICS`), its keys by column name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extended {
    pub schema: String,
    pub name: String,
    /// The columns, then the expressions (`pg_get_statisticsobjdef_expressions`), in the order
    /// of the object's keys.
    pub keys: Vec<String>,
    /// `d`, `f`, `m`, `e`: what the object was made to hold.
    pub kinds: Vec<String>,
    #[serde(default)]
    pub inherited: bool,
    /// Distinct counts of combinations of keys (positions in `keys`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_distinct: Option<Vec<Ndistinct>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Vec<Dependency>>,
    /// The multi-column most common values, as `pg_stats_ext` prints them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_vals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_freqs: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_common_base_freqs: Option<Vec<f64>>,
    /// `pg_stats_ext_exprs`: the statistics of each expression key, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expressions: Vec<Column>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ndistinct {
    /// Positions in [`Extended::keys`].
    pub keys: Vec<usize>,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    pub from: Vec<usize>,
    pub to: usize,
    pub degree: f64,
}

/// Reads and checks the statistics file at `path`.
pub fn read(path: &Path) -> Result<File, BadInput> {
    let bytes = crate::files::read_given(path, crate::files::STATISTICS)
        .map_err(|e| BadInput(e.to_string()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| BadInput(format!("{}: not UTF-8 text", path.display())))?;
    parse(&text).map_err(|why| BadInput(format!("{}: {why}", path.display())))
}

/// Parses and checks a statistics file's text; the error is said after the file's name.
pub fn parse(text: &str) -> Result<File, String> {
    // The format and version first, so a file of another kind or a later version is named as
    // such, not as whatever field it lacks.
    let head: serde_json::Value = serde_json::from_str(text).map_err(located)?;
    let format = head.get("format").and_then(|f| f.as_str());
    if format != Some(FORMAT) {
        return Err(format!(
            "not a plancheck statistics file (its \"format\" is {}, not \"{FORMAT}\"); \
             write one with plancheck stats export",
            format.map_or("missing".to_string(), |f| format!("{f:?}"))
        ));
    }
    match head.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(format!(
                "statistics file version {v}: this plancheck reads version {VERSION}; \
                 export it again with this plancheck, or use the plancheck that wrote it"
            ));
        }
        None => return Err("its \"version\" is missing or not a number".to_string()),
    }
    let file: File = serde_json::from_str(text).map_err(located)?;
    file.check()?;
    Ok(file)
}

fn located(e: serde_json::Error) -> String {
    format!("{}:{}: {e}", e.line(), e.column())
}

impl File {
    /// The ranges PostgreSQL itself keeps every value in, and one entry per name.
    pub fn check(&self) -> Result<(), String> {
        let major = self.server.major();
        if !MAJORS.contains(&major) {
            return Err(format!(
                "exported from PostgreSQL {major} (server_version_num {}): plancheck plans on \
                 PostgreSQL {} to {}",
                self.server.version_num,
                MAJORS.start(),
                MAJORS.end()
            ));
        }
        if !(512..=32768).contains(&self.server.block_size)
            || !self.server.block_size.is_power_of_two()
        {
            return Err(format!(
                "block_size {} is none PostgreSQL builds with",
                self.server.block_size
            ));
        }
        if chrono::DateTime::parse_from_rfc3339(&self.exported_at).is_err() {
            return Err(format!(
                "exported_at {:?} is not an RFC 3339 time",
                self.exported_at
            ));
        }
        let mut names = BTreeSet::new();
        for s in &self.settings {
            if !names.insert(s.name.as_str()) {
                return Err(format!("setting {} is given twice", s.name));
            }
            if !is_setting_name(&s.name) {
                return Err(format!("{:?} is not a setting's name", s.name));
            }
        }
        let mut relations = BTreeSet::new();
        for r in &self.relations {
            let place = r.qualified();
            if !relations.insert((r.schema.as_str(), r.name.as_str())) {
                return Err(format!("relation {place} is given twice"));
            }
            if !["r", "p", "m"].contains(&r.kind.as_str()) {
                return Err(format!(
                    "relation {place}: kind {:?} is not a table, a partitioned table or a \
                     materialized view (r, p, m)",
                    r.kind
                ));
            }
            r.size
                .check(self.server.block_size, r.kind != "p", r.kind == "p")
                .map_err(|why| format!("relation {place}: {why}"))?;
            check_columns(&r.columns).map_err(|why| format!("relation {place}: {why}"))?;
            let mut indexes = BTreeSet::new();
            for i in &r.indexes {
                let at = format!("index {}.{} on {place}", r.schema, i.name);
                if !indexes.insert(i.name.as_str()) {
                    return Err(format!("{at} is given twice"));
                }
                i.check(self.server.block_size)
                    .map_err(|why| format!("{at}: {why}"))?;
            }
            for e in &r.extended {
                let at = format!("statistics {}.{} on {place}", e.schema, e.name);
                e.check().map_err(|why| format!("{at}: {why}"))?;
            }
        }
        Ok(())
    }

    /// The relation `schema.name`.
    pub fn relation(&self, schema: &str, name: &str) -> Option<&Relation> {
        self.relations
            .iter()
            .find(|r| r.schema == schema && r.name == name)
    }

    /// How long ago it was exported, by `now`.
    pub fn age(&self, now: chrono::DateTime<chrono::Utc>) -> Option<chrono::Duration> {
        let at = chrono::DateTime::parse_from_rfc3339(&self.exported_at).ok()?;
        Some(now.signed_duration_since(at.with_timezone(&chrono::Utc)))
    }
}

/// A setting's name as `pg_settings` has them: letters, digits, `_` and, for an extension's
/// own, one `.`.
fn is_setting_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.chars().filter(|c| *c == '.').count() <= 1
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

impl Size {
    /// `heap`: a table's own pages, whose rows cannot be denser than a page of empty rows
    /// (`MaxHeapTuplesPerPage`); an index packs many heap pointers in one entry (B-tree
    /// deduplication, GIN's posting lists) and a partitioned table has no pages of its own
    /// (`partitioned`: PostgreSQL 14 and later write its `relpages` as -1 once it is analysed).
    fn check(&self, block_size: u32, heap: bool, partitioned: bool) -> Result<(), String> {
        // A relation has at most 2^32 - 1 blocks; relpages and relallvisible are int4.
        let most = i64::from(u32::MAX) - 1;
        let least = if partitioned { -1 } else { 0 };
        if !(least..=i64::from(i32::MAX)).contains(&self.relpages) {
            return Err(format!("relpages {} is out of range", self.relpages));
        }
        if !(0..=most).contains(&self.blocks) {
            return Err(format!("blocks {} is out of range", self.blocks));
        }
        if !(0..=self.relpages.max(self.blocks)).contains(&self.relallvisible) {
            return Err(format!(
                "relallvisible {} is outside 0 to its pages",
                self.relallvisible
            ));
        }
        // The most rows a heap page can hold: a row is at least its header and line pointer.
        let per_page = f64::from(block_size) / 28.0 + 1.0;
        let pages = self.relpages.max(self.blocks).max(1) as f64;
        if !self.reltuples.is_finite()
            || self.reltuples < -1.0
            || self.reltuples > 1e15
            || (heap && self.reltuples > per_page * pages)
        {
            return Err(format!(
                "reltuples {} is out of range for {} pages",
                self.reltuples,
                self.relpages.max(self.blocks)
            ));
        }
        Ok(())
    }
}

fn check_columns(columns: &[Column]) -> Result<(), String> {
    let mut names = BTreeSet::new();
    for c in columns {
        if !names.insert((c.name.as_str(), c.inherited)) {
            return Err(format!(
                "column {} is given twice{}",
                c.name,
                if c.inherited { " (inherited)" } else { "" }
            ));
        }
        c.check()
            .map_err(|why| format!("column {}: {why}", c.name))?;
    }
    Ok(())
}

fn fraction(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!("{name} {v} is not a fraction between 0 and 1"))
    }
}

fn fractions(name: &str, vs: &Option<Vec<f64>>) -> Result<(), String> {
    for v in vs.iter().flatten() {
        fraction(name, *v)?;
    }
    Ok(())
}

impl Column {
    fn check(&self) -> Result<(), String> {
        fraction("null_frac", self.null_frac)?;
        if self.avg_width < 0 {
            return Err(format!("avg_width {} is negative", self.avg_width));
        }
        if !self.n_distinct.is_finite() || self.n_distinct < -1.0 {
            return Err(format!(
                "n_distinct {} is neither a count nor a fraction of the rows (-1 to 0)",
                self.n_distinct
            ));
        }
        fractions("most_common_freqs", &self.most_common_freqs)?;
        fractions("most_common_elem_freqs", &self.most_common_elem_freqs)?;
        if let Some(c) = self.correlation
            && !(c.is_finite() && (-1.0..=1.0).contains(&c))
        {
            return Err(format!("correlation {c} is outside -1 to 1"));
        }
        if let Some(f) = self.range_empty_frac {
            fraction("range_empty_frac", f)?;
        }
        if self.most_common_vals.is_some() != self.most_common_freqs.is_some() {
            return Err(
                "most_common_vals and most_common_freqs come together, or neither".to_string(),
            );
        }
        if self.redacted && self.holds_values() {
            return Err("is redacted but holds values".to_string());
        }
        for (name, text) in [
            ("most_common_vals", &self.most_common_vals),
            ("histogram_bounds", &self.histogram_bounds),
            ("most_common_elems", &self.most_common_elems),
            ("range_length_histogram", &self.range_length_histogram),
            ("range_bounds_histogram", &self.range_bounds_histogram),
        ] {
            if let Some(t) = text
                && !(t.starts_with('{') && t.ends_with('}'))
            {
                return Err(format!("{name} is not an array literal ({{…}})"));
            }
        }
        Ok(())
    }
}

impl Index {
    fn check(&self, block_size: u32) -> Result<(), String> {
        self.size.check(block_size, false, false)?;
        check_columns(&self.columns)?;
        if let Some(g) = &self.gin {
            let pages = [g.pending_pages, g.total_pages, g.entry_pages, g.data_pages];
            if self.method != "gin" || pages.iter().any(|p| *p > u64::from(u32::MAX)) {
                return Err("GIN metapage statistics out of range".to_string());
            }
            if g.entries > i64::MAX as u64 {
                return Err(format!("{} GIN entries", g.entries));
            }
        }
        if let Some(b) = &self.btree {
            if b.height > 20 {
                return Err(format!("a B-tree {} levels high", b.height));
            }
            if !["metapage", "estimate"].contains(&b.height_from.as_str()) {
                return Err(format!(
                    "height_from {:?} is neither \"metapage\" nor \"estimate\"",
                    b.height_from
                ));
            }
        }
        Ok(())
    }
}

impl Extended {
    fn check(&self) -> Result<(), String> {
        if self.keys.is_empty() || self.keys.len() > 8 {
            return Err(format!(
                "{} keys: PostgreSQL allows 1 to 8",
                self.keys.len()
            ));
        }
        for k in &self.kinds {
            if !["d", "f", "m", "e"].contains(&k.as_str()) {
                return Err(format!("kind {k:?} is none of d, f, m, e"));
            }
        }
        let n = self.keys.len();
        // Each key once: the copy writes these as attribute numbers the planner matches as sets.
        fn distinct(keys: impl Iterator<Item = usize>) -> bool {
            let mut seen = std::collections::BTreeSet::new();
            keys.into_iter().all(|k| seen.insert(k))
        }
        for d in self.n_distinct.iter().flatten() {
            if d.keys.len() < 2
                || d.keys.iter().any(|k| *k >= n)
                || !distinct(d.keys.iter().copied())
            {
                return Err(format!("n_distinct keys {:?} are not its keys", d.keys));
            }
            if !d.value.is_finite() || d.value < 0.0 {
                return Err(format!("n_distinct {} is not a count", d.value));
            }
        }
        for d in self.dependencies.iter().flatten() {
            if d.from.is_empty()
                || d.from.iter().chain([&d.to]).any(|k| *k >= n)
                || !distinct(d.from.iter().chain([&d.to]).copied())
            {
                return Err(format!(
                    "dependency {:?} => {} is not on its keys",
                    d.from, d.to
                ));
            }
            fraction("dependency degree", d.degree)?;
        }
        fractions("most_common_freqs", &self.most_common_freqs)?;
        fractions("most_common_base_freqs", &self.most_common_base_freqs)?;
        for e in &self.expressions {
            e.check()?;
        }
        Ok(())
    }
}

/// A `--redact` pattern: `[SCHEMA.]TABLE.COLUMN`, `COLUMN` may be `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redact {
    pub schema: Option<String>,
    pub table: String,
    pub column: Option<String>,
}

impl Redact {
    pub fn parse(text: &str) -> Result<Redact, String> {
        let parts: Vec<&str> = text.split('.').collect();
        let bad = || {
            format!("--redact {text:?}: give TABLE.COLUMN or SCHEMA.TABLE.COLUMN (COLUMN may be *)")
        };
        if parts.iter().any(|p| p.is_empty()) {
            return Err(bad());
        }
        let (schema, table, column) = match parts[..] {
            [t, c] => (None, t, c),
            [s, t, c] => (Some(s.to_string()), t, c),
            _ => return Err(bad()),
        };
        Ok(Redact {
            schema,
            table: table.to_string(),
            column: (column != "*").then(|| column.to_string()),
        })
    }

    pub fn matches(&self, schema: &str, table: &str, column: &str) -> bool {
        self.schema.as_deref().is_none_or(|s| s == schema)
            && self.table == table
            && self.column.as_deref().is_none_or(|c| c == column)
    }
}

#[cfg(test)]
mod tests;
