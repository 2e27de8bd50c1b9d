//! PostgreSQL's own counts of what a check's runs read, table by table. A plan shows a function
//! call, not the table the function reads (`query_to_xml('SELECT … FROM posts')`, an
//! application's PL/pgSQL function): the per-transaction counters (`pg_stat_xact_user_tables`
//! and the functions behind it) count every read the session makes, inside functions too, and
//! keep counting across `ROLLBACK TO SAVEPOINT`, so reading them before and after each run of
//! the read path, in the run's own round trip, says what that run read. A fact, never a
//! decision: [`crate::verdict`] holds it against the plan.
//!
//! What the session's own counters do not hold: reads by parallel workers (a parallel plan's,
//! and a function's own parallel query's), which each worker reports to the server-wide
//! counters (`pg_stat_user_tables`) as it exits, before its statement ends. From PostgreSQL 15
//! those are read too, afresh (`pg_stat_clear_snapshot()`) before each reading; a session's own
//! counts reach them only once its transaction ends, so what they gained over a run is what
//! other processes read meanwhile: the check's workers, and any other session whose counts
//! arrived then. PostgreSQL 13 and 14 send them to a statistics collector that hears of them
//! later, or not at all: there only the session's own reads are counted.
//!
//! Every name is schema-qualified and every operator written `OPERATOR(pg_catalog.…)`, as in
//! the guard ([`super::guard`]): a migration's session could put its own ahead of the catalog's.

use std::collections::HashMap;

use tokio_postgres::{Client, Row, Statement};

use super::{Asked, Unanswered};
use crate::error::DatabaseFailure;
use crate::measure::{Counted, RelationFacts, RunKind, RunReads, TableReads};

/// Whether and how a run's checks count their reads: read from the server once a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counting {
    /// Counts are read at all (`check`; not the commands that plan a read path once).
    pub on: bool,
    /// `track_counts` is on: PostgreSQL counts reads.
    pub tracked: bool,
    /// The server-wide counters are read too (PostgreSQL 15 and later).
    pub others: bool,
}

impl Counting {
    /// The server's `track_counts` and version, for a run whose checks count their reads.
    pub async fn read(client: &Client, major: u32) -> Result<Counting, DatabaseFailure> {
        // Parsed, bound and executed in one round trip.
        let rows = client
            .query_typed(
                "SELECT pg_catalog.current_setting('track_counts')::pg_catalog.bool",
                &[],
            )
            .await
            .map_err(|e| Unanswered::of(Asked::TrackCounts, &e))?;
        Ok(Counting {
            on: true,
            tracked: rows.first().is_some_and(|r| r.get(0)),
            others: major >= 15,
        })
    }

    /// Whether the runs read counts: asked, and the server keeps them.
    pub(super) fn reads(&self) -> bool {
        self.on && self.tracked
    }

    /// The query a reading runs.
    pub(super) fn query(&self) -> &'static str {
        if self.others { WITH_OTHERS } else { OWN_ONLY }
    }

    /// What is measured when nothing could be counted (`track_counts` off).
    pub(super) fn untracked(&self) -> Option<Counted> {
        (self.on && !self.tracked).then(|| Counted {
            tracked: false,
            others: false,
            runs: Vec::new(),
        })
    }
}

/// One row per table (and materialised view) made after `initdb` (an OID from 16384,
/// `FirstNormalObjectId`: the catalogs and `information_schema` are older) that any counter
/// holds a read of: its OID; the session's sequential scans and rows read; the same
/// server-wide. Rows read are the table's `tuples_returned` (sequential, sample and TID range
/// scans) and `tuples_fetched` (bitmap heap scans), and every index's `tuples_returned` (the
/// entries an index scan, an index-only scan or a bitmap index scan returned); an index's
/// `tuples_fetched` (the heap rows behind its entries) is not added again. `$first` is a
/// condition with no column in it, so the planner makes it the One-Time Filter of a Result node
/// under the aggregate, evaluated before the first row is read: the server-wide reading clears
/// there what the transaction kept of its last one (`stats_fetch_consistency`), and whatever
/// the read path itself read of them since, so that every counter is read afresh.
macro_rules! counts_query {
    ($others_seq:literal, $others_rows:literal, $first:literal) => {
        concat!(
            "SELECT s.tab, s.own_seq, s.own_rows, s.all_seq, s.all_rows FROM (\
               SELECT t.oid::pg_catalog.int8 AS tab, \
                 pg_catalog.sum(CASE WHEN c.oid OPERATOR(pg_catalog.=) t.oid \
                   THEN pg_catalog.pg_stat_get_xact_numscans(c.oid) ELSE 0 END)\
                   ::pg_catalog.int8 AS own_seq, \
                 pg_catalog.sum(pg_catalog.pg_stat_get_xact_tuples_returned(c.oid) \
                   OPERATOR(pg_catalog.+) CASE WHEN c.oid OPERATOR(pg_catalog.=) t.oid \
                   THEN pg_catalog.pg_stat_get_xact_tuples_fetched(c.oid) ELSE 0 END)\
                   ::pg_catalog.int8 AS own_rows, ",
            $others_seq,
            " AS all_seq, ",
            $others_rows,
            " AS all_rows \
               FROM pg_catalog.pg_class c \
               LEFT JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) c.oid \
               JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) COALESCE(i.indrelid, c.oid) \
               WHERE c.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid \
                 AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,m,i}'::pg_catalog.\"char\"[]) \
                 AND t.relkind OPERATOR(pg_catalog.=) ANY ('{r,m}'::pg_catalog.\"char\"[]) ",
            $first,
            " GROUP BY t.oid) s \
             WHERE s.own_seq OPERATOR(pg_catalog.<>) 0 OR s.own_rows OPERATOR(pg_catalog.<>) 0 \
                OR s.all_seq OPERATOR(pg_catalog.<>) 0 OR s.all_rows OPERATOR(pg_catalog.<>) 0"
        )
    };
}

/// The reading from PostgreSQL 15 on: the session's own counters and the server-wide ones.
const WITH_OTHERS: &str = counts_query!(
    "pg_catalog.sum(CASE WHEN c.oid OPERATOR(pg_catalog.=) t.oid \
       THEN pg_catalog.pg_stat_get_numscans(c.oid) ELSE 0 END)::pg_catalog.int8",
    "pg_catalog.sum(pg_catalog.pg_stat_get_tuples_returned(c.oid) \
       OPERATOR(pg_catalog.+) CASE WHEN c.oid OPERATOR(pg_catalog.=) t.oid \
       THEN pg_catalog.pg_stat_get_tuples_fetched(c.oid) ELSE 0 END)::pg_catalog.int8",
    "AND (SELECT pg_catalog.pg_stat_clear_snapshot() IS NOT NULL)"
);

/// The reading on PostgreSQL 13 and 14: the session's own counters only.
const OWN_ONLY: &str = counts_query!("0::pg_catalog.int8", "0::pg_catalog.int8", "");

/// One table's counters at one moment (or what they gained over a run): the session's own
/// sequential scans and rows read, then the same server-wide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counters<N> {
    seq_scans: N,
    rows: N,
    all_seq_scans: N,
    all_rows: N,
}

/// Every counted table's counters at one moment, by OID.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Reading(HashMap<u32, Counters<i64>>);

/// What one table gained over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gained {
    oid: u32,
    counters: Counters<u64>,
}

impl Reading {
    pub(super) fn of(rows: &[Row]) -> Reading {
        Reading(
            rows.iter()
                .filter_map(|r| {
                    let oid = u32::try_from(r.get::<_, i64>(0)).ok()?;
                    let counters = Counters {
                        seq_scans: r.get(1),
                        rows: r.get(2),
                        all_seq_scans: r.get(3),
                        all_rows: r.get(4),
                    };
                    Some((oid, counters))
                })
                .collect(),
        )
    }

    /// What each table gained since `before`, the tables that gained nothing left out. A
    /// counter that went down (the server-wide ones reset meanwhile) gained nothing.
    fn since(&self, before: &Reading) -> Vec<Gained> {
        let gain = |now: i64, was: i64| u64::try_from(now - was).unwrap_or(0);
        let mut out: Vec<Gained> = self
            .0
            .iter()
            .filter_map(|(oid, now)| {
                let was = before.0.get(oid).copied().unwrap_or_default();
                let counters = Counters {
                    seq_scans: gain(now.seq_scans, was.seq_scans),
                    rows: gain(now.rows, was.rows),
                    all_seq_scans: gain(now.all_seq_scans, was.all_seq_scans),
                    all_rows: gain(now.all_rows, was.all_rows),
                };
                (counters != Counters::default()).then_some(Gained {
                    oid: *oid,
                    counters,
                })
            })
            .collect();
        out.sort_by_key(|g| g.oid);
        out
    }
}

/// What one run gained.
#[derive(Debug)]
struct RunGains {
    kind: RunKind,
    warmup: bool,
    tables: Vec<Gained>,
}

/// What a check counted so far: the reading the next run starts from, and each run's gains.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) counting: Counting,
    /// The reading query, prepared in the check's `BEGIN` round trip.
    pub(super) statement: Option<Statement>,
    /// The last reading: where the next run starts. Between two runs the check sends only its
    /// own statements, none of which reads a table, so one reading ends a run and starts the
    /// next; anything read in between would only be counted against the next run.
    last: Option<Reading>,
    runs: Vec<RunGains>,
}

impl Tally {
    pub fn new(counting: Counting) -> Tally {
        Tally {
            counting,
            ..Tally::default()
        }
    }

    /// Whether a run starting now needs a reading before it (none ends a run before it).
    pub(super) fn needs_start(&self) -> bool {
        self.last.is_none()
    }

    /// A run's readings: before it (when [`Tally::needs_start`]) and after it.
    pub(super) fn record(
        &mut self,
        kind: RunKind,
        warmup: bool,
        start: Option<Reading>,
        end: Reading,
    ) {
        if let Some(start) = start {
            self.last = Some(start);
        }
        let tables = match &self.last {
            Some(before) => end.since(before),
            // No reading before the run: all it shows is since the transaction began.
            None => end.since(&Reading::default()),
        };
        self.runs.push(RunGains {
            kind,
            warmup,
            tables,
        });
        self.last = Some(end);
    }

    /// Every table with a gain in any run.
    pub(super) fn tables(&self) -> Vec<u32> {
        let mut oids: Vec<u32> = self
            .runs
            .iter()
            .flat_map(|run| run.tables.iter().map(|g| g.oid))
            .collect();
        oids.sort_unstable();
        oids.dedup();
        oids
    }

    /// The check's counts, each table named by `names` (schema, name; a table gone since
    /// is left out).
    pub(super) fn finish(self, names: &HashMap<u32, (String, String)>) -> Option<Counted> {
        if !self.counting.reads() {
            return self.counting.untracked();
        }
        let runs = self
            .runs
            .into_iter()
            .map(|run| RunReads {
                kind: run.kind,
                warmup: run.warmup,
                tables: run
                    .tables
                    .into_iter()
                    .filter_map(|g| {
                        let (schema, name) = names.get(&g.oid)?.clone();
                        Some(TableReads {
                            schema,
                            name,
                            seq_scans: g.counters.seq_scans,
                            rows: g.counters.rows,
                            other_seq_scans: g.counters.all_seq_scans,
                            other_rows: g.counters.all_rows,
                        })
                    })
                    .collect(),
            })
            .collect();
        Some(Counted {
            tracked: true,
            others: self.counting.others,
            runs,
        })
    }
}

/// What the planner knew of each table of `oids` (`$1`), in one query, as
/// [`crate::measure::RelationFacts`] holds it (the same columns as the facts of the relations a
/// plan names): schema and name, `reltuples`, whether it was ever analysed, its size on disk,
/// rows changed since its last analysis.
pub(super) const TABLES: &str = concat!(
    "SELECT c.oid::pg_catalog.int8, n.nspname::pg_catalog.text, c.relname::pg_catalog.text, \
           c.reltuples::pg_catalog.float8, ",
    super::ever_analysed_sql!(),
    ", pg_catalog.pg_relation_size(c.oid), \
           (SELECT st.n_mod_since_analyze FROM pg_catalog.pg_stat_all_tables st \
            WHERE st.relid OPERATOR(pg_catalog.=) c.oid) \
    FROM pg_catalog.pg_class c \
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
    WHERE c.oid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.int8[]::pg_catalog.oid[])"
);

/// The rows of [`TABLES`], by OID.
pub(super) fn tables_of(rows: &[Row]) -> Vec<(u32, RelationFacts)> {
    rows.iter()
        .filter_map(|r| {
            let oid = u32::try_from(r.get::<_, i64>(0)).ok()?;
            Some((
                oid,
                RelationFacts {
                    schema: r.get(1),
                    name: r.get(2),
                    reltuples: r.get(3),
                    has_statistics: r.get(4),
                    bytes: r.get(5),
                    modified_since_analyze: r.get(6),
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reading of each table's (own sequential scans, own rows, all sequential scans, all
    /// rows).
    fn reading(tables: &[(u32, [i64; 4])]) -> Reading {
        Reading(
            tables
                .iter()
                .map(|(oid, [seq_scans, rows, all_seq_scans, all_rows])| {
                    let counters = Counters {
                        seq_scans: *seq_scans,
                        rows: *rows,
                        all_seq_scans: *all_seq_scans,
                        all_rows: *all_rows,
                    };
                    (*oid, counters)
                })
                .collect(),
        )
    }

    #[test]
    fn a_run_gains_what_its_readings_differ_by_and_one_reading_starts_the_next_run() {
        let counting = Counting {
            on: true,
            tracked: true,
            others: true,
        };
        let mut tally = Tally::new(counting);
        assert!(tally.needs_start());
        let start = reading(&[(16407, [0, 20, 49, 1_000]), (16391, [0, 0, 4, 10])]);
        let first = reading(&[(16407, [2, 20_040, 51, 70_000]), (16391, [0, 0, 4, 10])]);
        tally.record(RunKind::Explain, true, Some(start), first);
        assert!(!tally.needs_start());
        // The server-wide counters were reset: a fall is no gain.
        let second = reading(&[(16407, [2, 20_060, 0, 0]), (16391, [0, 5, 4, 10])]);
        tally.record(RunKind::Plain, false, None, second);
        assert_eq!(tally.tables(), vec![16391, 16407]);
        let names: HashMap<u32, (String, String)> = [
            (16407, ("public".to_string(), "posts".to_string())),
            (16391, ("public".to_string(), "members".to_string())),
        ]
        .into_iter()
        .collect();
        let counted = tally.finish(&names).unwrap();
        assert!(counted.tracked && counted.others);
        let posts = |run: usize| {
            counted.runs[run]
                .tables
                .iter()
                .find(|t| t.name == "posts")
                .cloned()
        };
        let first = posts(0).unwrap();
        assert_eq!(
            (
                first.seq_scans,
                first.rows,
                first.other_seq_scans,
                first.other_rows
            ),
            (2, 20_020, 2, 69_000)
        );
        assert!(counted.runs[0].warmup);
        assert_eq!(posts(1).unwrap().rows, 20);
        assert_eq!(posts(1).unwrap().other_rows, 0);
        // members gained nothing in the first run: not listed there.
        assert_eq!(counted.runs[0].tables.len(), 1);
        assert_eq!(counted.runs[1].tables.len(), 2);
    }

    #[test]
    fn nothing_is_counted_where_track_counts_is_off_and_nothing_asked_where_counting_is_off() {
        let off = Counting::default();
        assert!(!off.reads());
        assert_eq!(Tally::new(off).finish(&HashMap::new()), None);
        let untracked = Counting {
            on: true,
            tracked: false,
            others: true,
        };
        assert!(!untracked.reads());
        let counted = Tally::new(untracked).finish(&HashMap::new()).unwrap();
        assert!(!counted.tracked && counted.runs.is_empty());
    }
}
