//! What a captured read path's expectation proposes, from its measured plan: the index the
//! plan uses now on its largest relation of at least `--min-rows` rows, and the relations it
//! reads by sequential scan. A baseline of today's plan, said as such: nothing here judges it.
//! A plan of a partitioned table names the partitions and their indexes; the proposal names the
//! partitioned table and index at the top of their trees (which `check` accepts through any of
//! its partitions), with the rows of the partitions the plan reads.

use std::collections::HashMap;

use crate::measure::{Measurement, Outcome};
use crate::plan::explain::{Explain, ScanKind};

/// The database's partitions (tables and indexes), each with the root of its partition tree.
#[derive(Debug, Default)]
pub struct Roots(HashMap<(String, String), String>);

impl Roots {
    /// From (schema, partition, root) rows, as [`crate::db::catalog::partition_roots`] reads them.
    pub fn new(rows: Vec<(String, String, String)>) -> Roots {
        Roots(
            rows.into_iter()
                .map(|(schema, name, root)| ((schema, name), root))
                .collect(),
        )
    }

    /// The root of `name`'s partition tree (in `schema`, when the plan says), or `name` itself.
    fn of<'a>(&'a self, schema: Option<&str>, name: &'a str) -> &'a str {
        let found = match schema {
            Some(schema) => self.0.get(&(schema.to_string(), name.to_string())),
            None => self
                .0
                .iter()
                .find(|((_, partition), _)| partition == name)
                .map(|(_, root)| root),
        };
        found.map_or(name, String::as_str)
    }
}

/// The proposal for one read path.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    /// Require `index` (on `table`, of about `rows` rows). The relations the plan reads whole
    /// now, with their row estimates: `small` ones (under `--min-rows`, allowed a seq scan in
    /// the file, said so), and `large` ones (left for the user to decide).
    Require {
        index: String,
        table: String,
        rows: f64,
        small: Vec<(String, f64)>,
        large: Vec<(String, f64)>,
        /// With parameters: how the generic plan reads `table` when it does not use `index`
        /// (`check` then reports `generic-plan`), e.g. "Index Only Scan using other_idx".
        generic_differs: Option<String>,
        /// The most shared buffers (hit + read) any measured run of the custom plan read, for
        /// a proposed budget.
        buffers: Option<f64>,
    },
    /// Nothing to require, and why (for the summary).
    Skip(Skip),
}

/// Why a read path gets no expectation.
#[derive(Debug, Clone, PartialEq)]
pub enum Skip {
    /// Every relation it reads is smaller than `--min-rows`: the largest, and its rows.
    TooSmall(String, f64),
    /// It reads a relation of at least `--min-rows` rows with no index.
    NoIndex(String, f64),
    /// It could not be planned: the server's error.
    Failed(String),
}

impl Skip {
    /// The reason, for the summary's count (`too small`, `no index`, `could not be planned`).
    pub fn kind(&self) -> &'static str {
        match self {
            Skip::TooSmall(..) => "too small",
            Skip::NoIndex(..) => "no index",
            Skip::Failed(_) => "could not be planned",
        }
    }

    /// The reason with its particulars.
    pub fn detail(&self) -> String {
        match self {
            Skip::TooSmall(rel, rows) => {
                format!("too small: its largest relation, {rel}, has about {rows:.0} rows")
            }
            Skip::NoIndex(rel, rows) => {
                format!("no index: it reads {rel} (about {rows:.0} rows) by sequential scan")
            }
            Skip::Failed(why) => format!("could not be planned: {why}"),
        }
    }
}

/// The proposal for a measured read path (custom plan), with relations of fewer than
/// `min_rows` rows ignored; partitions counted as their `roots`.
// Long because it reads the plan twice: the rows of each relation (a partitioned one's summed
// over its partitions), then the index on the largest and the relations read whole.
pub fn propose(measurement: &Measurement, min_rows: f64, roots: &Roots) -> Proposal {
    let measured = match &measurement.outcome {
        Outcome::Measured(m) => m,
        Outcome::Failed(f) => return Proposal::Skip(Skip::Failed(f.message.clone())),
    };
    let Some(plan) = measured.custom.last().map(|doc| doc.plan()) else {
        return Proposal::Skip(Skip::Failed("the server returned no plan".into()));
    };
    let rows_of = |schema: Option<&str>, name: &str| {
        let rel = crate::model::Relation::new(schema, name);
        measured
            .relations
            .iter()
            .find(|f| f.schema == rel.schema && f.name == rel.name)
            .map_or(0.0, |f| f.reltuples.max(0.0))
    };
    let scans = plan.scans();
    // Rows by relation as the proposal names it: a partitioned table's are those of the
    // partitions the plan reads, each counted once.
    let mut totals: Vec<(&str, f64, Vec<&str>)> = Vec::new();
    for scan in &scans {
        let Some(relation) = scan.relation else {
            continue;
        };
        let (root, rows) = (
            roots.of(scan.schema, relation),
            rows_of(scan.schema, relation),
        );
        match totals.iter_mut().find(|(r, ..)| *r == root) {
            Some((_, sum, seen)) if !seen.contains(&relation) => {
                *sum += rows;
                seen.push(relation);
            }
            Some(_) => {}
            None => totals.push((root, rows, vec![relation])),
        }
    }
    let total = |root: &str| {
        totals
            .iter()
            .find(|(r, ..)| *r == root)
            .map_or(0.0, |t| t.1)
    };
    let mut indexed: Option<(String, String, f64)> = None;
    let mut seq_scans: Vec<(String, f64)> = Vec::new();
    for scan in &scans {
        let Some(relation) = scan.relation else {
            continue;
        };
        let root = roots.of(scan.schema, relation);
        let rows = total(root);
        match (scan.kind, &scan.node.index_name) {
            // As EXPLAIN names them: `allow_seq_scan` lists what the plan reads.
            (ScanKind::Seq, _) if !seq_scans.iter().any(|(r, _)| r == relation) => {
                seq_scans.push((relation.to_string(), rows_of(scan.schema, relation)));
            }
            (ScanKind::Index | ScanKind::IndexOnly | ScanKind::BitmapIndex, Some(index))
                if rows >= min_rows && indexed.as_ref().is_none_or(|(_, _, r)| rows > *r) =>
            {
                let index = roots.of(scan.schema, index);
                indexed = Some((index.to_string(), root.to_string(), rows));
            }
            _ => {}
        }
    }
    if let Some((index, table, rows)) = indexed {
        let (small, large) = seq_scans.into_iter().partition(|(_, r)| *r < min_rows);
        let generic_differs = measured
            .generic
            .as_ref()
            .and_then(|doc| elsewhere(doc.plan(), &index, &table, roots));
        let buffers = measured
            .custom
            .iter()
            .map(|doc| doc.plan().shared_buffers())
            .fold(None, |most: Option<f64>, b| {
                Some(most.map_or(b, |m| m.max(b)))
            });
        return Proposal::Require {
            index,
            table,
            rows,
            small,
            large,
            generic_differs,
            buffers,
        };
    }
    let largest = totals.iter().fold(
        None,
        |best: Option<(&str, f64)>, (root, rows, _)| match best {
            Some((_, r)) if r >= *rows => best,
            _ => Some((root, *rows)),
        },
    );
    match largest {
        Some((rel, rows)) if rows >= min_rows => Proposal::Skip(Skip::NoIndex(rel.into(), rows)),
        Some((rel, rows)) => Proposal::Skip(Skip::TooSmall(rel.into(), rows)),
        None => Proposal::Skip(Skip::TooSmall("(no relation)".into(), 0.0)),
    }
}

/// How `plan` reads `table` when it never reads `index` (partitions counted as their `roots`):
/// the first scan of the table, as `Seq Scan` or `Index Scan using other_idx`. None when it uses
/// `index`.
fn elsewhere(plan: &Explain, index: &str, table: &str, roots: &Roots) -> Option<String> {
    let scans = plan.scans();
    if scans.iter().any(|s| {
        s.node
            .index_name
            .as_deref()
            .is_some_and(|i| roots.of(s.schema, i) == index)
    }) {
        return None;
    }
    let scan = scans
        .iter()
        .find(|s| s.relation.is_some_and(|r| roots.of(s.schema, r) == table))?;
    Some(match &scan.node.index_name {
        Some(other) => format!("{} using {other}", scan.node.node_type),
        None => scan.node.node_type.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measurement recorded on PostgreSQL 15 (`tests/plans`).
    fn recorded(case: &str) -> Measurement {
        let text = match case {
            "thread-page-member" => {
                include_str!("../../tests/plans/pass/thread-page-member/pg15.measurement.json")
            }
            "initplan-seq-scan" => {
                include_str!("../../tests/plans/seq-scan/initplan-seq-scan/pg15.measurement.json")
            }
            "visibility-parameter" => include_str!(
                "../../tests/plans/generic-plan/visibility-parameter/pg15.measurement.json"
            ),
            _ => unreachable!(),
        };
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_index_on_the_largest_relation_read_is_proposed() {
        // Index Scan on posts (117,192 rows) and on members (2,500 rows).
        let p = propose(&recorded("thread-page-member"), 10_000.0, &Roots::default());
        let Proposal::Require { buffers, .. } = &p else {
            panic!("a proposal: {p:?}");
        };
        // The most shared buffers a measured run read (its one run: 80, hit + read at the
        // root): a budget is proposed from it.
        assert_eq!(*buffers, Some(80.0));
        let most = 80.0;
        assert_eq!(
            p,
            Proposal::Require {
                index: "posts_thread_visible_idx".into(),
                table: "posts".into(),
                rows: 117_192.0,
                small: vec![],
                large: vec![],
                generic_differs: None,
                buffers: Some(most),
            }
        );
        // With members above --min-rows too, posts still wins: it is larger.
        let Proposal::Require { index, .. } =
            propose(&recorded("thread-page-member"), 100.0, &Roots::default())
        else {
            panic!("a proposal");
        };
        assert_eq!(index, "posts_thread_visible_idx");
    }

    #[test]
    fn a_generic_plan_that_reads_the_table_another_way_is_said() {
        // Custom plan: Index Only Scan on posts_thread_visible_idx; generic: posts_thread_all_idx.
        let Proposal::Require {
            index,
            generic_differs,
            ..
        } = propose(
            &recorded("visibility-parameter"),
            10_000.0,
            &Roots::default(),
        )
        else {
            panic!("a proposal");
        };
        assert_eq!(index, "posts_thread_visible_idx");
        assert_eq!(
            generic_differs.as_deref(),
            Some("Index Scan using posts_thread_all_idx")
        );
        // A generic plan through the same index says nothing.
        let Proposal::Require {
            generic_differs, ..
        } = propose(&recorded("thread-page-member"), 10_000.0, &Roots::default())
        else {
            panic!("a proposal");
        };
        assert_eq!(generic_differs, None);
    }

    #[test]
    fn relations_read_whole_are_small_or_left_to_the_user() {
        // A Seq Scan on forums beside an Index Only Scan on posts.
        let m = recorded("initplan-seq-scan");
        let Proposal::Require { small, large, .. } = propose(&m, 10_000.0, &Roots::default())
        else {
            panic!("a proposal");
        };
        assert_eq!(small.len(), 1, "{small:?}");
        assert_eq!(small[0].0, "forums");
        assert!(large.is_empty());
        let Proposal::Require { small, large, .. } = propose(&m, 1.0, &Roots::default()) else {
            panic!("a proposal");
        };
        assert!(small.is_empty());
        assert_eq!(large[0].0, "forums");
    }

    #[test]
    fn nothing_is_proposed_below_min_rows_or_without_an_index_or_a_plan() {
        let m = recorded("thread-page-member");
        assert_eq!(
            propose(&m, 1e9, &Roots::default()),
            Proposal::Skip(Skip::TooSmall("posts".into(), 117_192.0))
        );
        // The same plan with its index scans turned into sequential scans.
        let mut seq = m.clone();
        if let Outcome::Measured(measured) = &mut seq.outcome {
            let text = serde_json::to_string(&measured.custom).unwrap();
            let text = text.replace("\"Index Scan\"", "\"Seq Scan\"");
            measured.custom = serde_json::from_str(&text).unwrap();
        }
        assert_eq!(
            propose(&seq, 10_000.0, &Roots::default()),
            Proposal::Skip(Skip::NoIndex("posts".into(), 117_192.0))
        );
        let failed = Measurement::failed(
            "r",
            "s",
            m.requires.clone(),
            Vec::new(),
            crate::measure::Failure {
                message: "relation \"nope\" does not exist".into(),
                connection_lost: false,
                at: None,
                gave_up: false,
            },
        );
        assert_eq!(
            propose(&failed, 10_000.0, &Roots::default()).clone(),
            Proposal::Skip(Skip::Failed("relation \"nope\" does not exist".into()))
        );
    }
}
