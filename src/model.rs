//! The small vocabulary both the files people write (`project`) and the judge (`verdict`)
//! speak, and what the catalog says of an index: plain data, no behaviour beyond a test or two.

use serde::{Deserialize, Serialize};

/// The schema a relation EXPLAIN names without one is in, and the one left out when a name is
/// shown: what the reference board and most applications use.
pub const DEFAULT_SCHEMA: &str = "public";

/// A relation (or index) by schema and name: the one place the `public` default is decided.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Relation {
    pub schema: String,
    pub name: String,
}

impl Relation {
    /// `name` in `schema`, or in the default schema when the plan names none.
    pub fn new(schema: Option<&str>, name: &str) -> Relation {
        Relation {
            schema: schema.unwrap_or(DEFAULT_SCHEMA).to_string(),
            name: name.to_string(),
        }
    }

    /// `schema.name`, for keying facts by relation.
    pub fn key(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }
}

/// As a reader writes it: `name` in the default schema, `schema.name` elsewhere.
impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.schema == DEFAULT_SCHEMA {
            f.write_str(&self.name)
        } else {
            write!(f, "{}.{}", self.schema, self.name)
        }
    }
}

/// The budgets of one check: absolute figures, and a ratio to another read path's buffers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffers: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative: Option<Relative>,
}

/// "A deep page must not cost more than a first page": this check's shared buffers over those
/// of read path `to` in the same scope (or in `scope`). Buffers, not milliseconds: they do not
/// depend on the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relative {
    pub to: String,
    /// The other read path's scope, when it is not this check's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub max_ratio: f64,
}

impl Budget {
    pub fn is_empty(&self) -> bool {
        self.warm_ms.is_none() && self.buffers.is_none() && self.relative.is_none()
    }
}

/// The p95 budgets of `plancheck ladder`'s rungs, as `[ladder]` in plancheck.toml gives them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LadderBudgets {
    /// Every rung's, unless the rung has its own.
    pub p95_ms: Option<f64>,
    pub rungs: Vec<RungBudget>,
}

/// One rung's budget: the rung by its members or its rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungBudget {
    pub members: Option<u64>,
    pub rate: Option<f64>,
    pub p95_ms: f64,
    /// Recorded, never failed: where the shoulder is, not a target.
    pub limit: bool,
}

/// An index as the catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexInfo {
    pub schema: String,
    pub name: String,
    pub table: String,
    /// Access method: `btree`, `gin`, ….
    pub method: String,
    /// Key columns or expressions, in order, as `pg_get_indexdef(oid, k, true)` prints them.
    pub keys: Vec<String>,
    /// Each key's order as `CREATE INDEX` writes it: `""` (ascending, nulls last), `DESC`
    /// (nulls first), `NULLS FIRST`, `DESC NULLS LAST`. One per key.
    #[serde(default)]
    pub orders: Vec<String>,
    /// `pg_get_expr(indpred, indrelid)`, `None` for a full index.
    pub predicate: Option<String>,
    pub valid: bool,
    pub ready: bool,
    /// `pg_get_indexdef(oid)`: the whole definition, to show side by side.
    pub definition: String,
}

/// `name` and the names of its leaves on the partitions that have one: every name a plan may
/// read a (partitioned) index by.
pub fn index_and_leaves<'a>(name: &'a str, partitions: &'a [Partition]) -> Vec<&'a str> {
    std::iter::once(name)
        .chain(partitions.iter().filter_map(|p| p.leaf_index.as_deref()))
        .collect()
}

/// A leaf partition of the required index's table, and its leaf of the required index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub schema: String,
    pub table: String,
    pub leaf_index: Option<String>,
}

/// What a scope declares about the twin of the index it requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TwinDecl {
    /// `twin = "name"`: pair the scope's index with exactly this index, which no scope need
    /// require. Either may be the partial one: a scope requiring the full index may name the
    /// partial index it is the twin of. The guess is not made for this scope's partial index;
    /// a full index so declared is still the guessed twin of other scopes' partial indexes.
    Named(String),
    /// `twin = false`: the scope's index has no twin on purpose. It is neither paired nor
    /// offered as another scope's twin; it is still checked for being valid and ready.
    NoneOnPurpose,
}

/// The indexes one read path requires, by scope, as the catalog found them (`None`: missing),
/// and what its scopes declare about their twins.
#[derive(Debug, Clone, Default)]
pub struct ReadPathIndexes {
    pub read_path: String,
    /// `(scope, index as written, catalog facts)`, one per check.
    pub required: Vec<(String, String, Option<IndexInfo>)>,
    /// `(scope, declaration)` for each scope whose expectation says `twin = "name"` or
    /// `twin = false`. A scope not listed declares nothing: its index's twin is guessed.
    pub twins: Vec<(String, TwinDecl)>,
    /// `(name as written in TwinDecl::Named, catalog facts)` for each named twin (`None`: the
    /// catalog has no such index). A name some entry of `required` already holds (as written,
    /// or by the catalog's name) need not be repeated: lint looks there first. A name found
    /// in neither is reported as not looked up ("not settled"), never guessed missing.
    pub named_twins: Vec<(String, Option<IndexInfo>)>,
    /// Why the catalog could not be read for this read path (a lock timeout), if it could not.
    pub unchecked: Option<String>,
}

/// Where `plancheck accept` records a check's plan baseline, inside the project.
pub fn baseline_path(read_path: &str, scope: &str) -> String {
    format!("baselines/{read_path}.{scope}.plan")
}

/// One key column's order: descending, and nulls first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyOrder {
    pub desc: bool,
    pub nulls_first: bool,
}

impl KeyOrder {
    /// From the order `CREATE INDEX` writes (`""`, `DESC`, `NULLS FIRST`, `DESC NULLS LAST`):
    /// nulls sort last ascending and first descending unless said otherwise.
    pub fn parse(order: &str) -> Self {
        let order = order.to_ascii_uppercase();
        let desc = order.contains("DESC");
        let nulls_first = if order.contains("NULLS FIRST") {
            true
        } else if order.contains("NULLS LAST") {
            false
        } else {
            desc
        };
        KeyOrder { desc, nulls_first }
    }
}

/// What a migration did to an index a check requires: the first statement after which the index
/// of that name was gone, or no longer the same index, as the catalog read between statements
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexChange {
    /// The index as the expectation names it.
    pub index: String,
    /// The migration file, as given, and the line its statement starts on.
    pub path: String,
    pub line: usize,
    /// The statement's first line, as written (cut at 100 characters).
    pub statement: String,
    #[serde(flatten)]
    pub change: Change,
}

/// How the index changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// No index of the name is left, and the index that had it is gone.
    Dropped,
    /// The index that had the name has another now.
    Renamed { to: String },
    /// An index of the name is there, defined otherwise (`pg_get_indexdef`).
    Redefined { definition: String },
}

/// With `--migration`: how long the run held the migration's locks, against its bound
/// (`--migration-hold`), on plancheck's clock from just before its `BEGIN` to the rollback's
/// answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigrationHold {
    /// `--migration-hold`, in milliseconds.
    pub limit_ms: u64,
    /// How long the locks were held, in milliseconds.
    pub held_ms: f64,
    /// Whether the bound was reached, so the migration was rolled back before every check
    /// after it had run.
    pub reached: bool,
    /// Reached while the migration itself was being applied (no check ran after it).
    #[serde(default)]
    pub while_applying: bool,
    /// Checks after the migration that were not run (or stopped) at the bound.
    #[serde(default)]
    pub not_run: usize,
    /// Whether the rollback was answered. When it was not, the session was closed: the server
    /// ends the transaction, and its locks, when its process next reads from the connection.
    pub released: bool,
}
