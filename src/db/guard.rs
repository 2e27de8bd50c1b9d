//! The guard that runs after every statement a project's files send (each setup statement, each
//! migration statement, each run of the read path), before the next one: the transaction is
//! still the same one, the bounds, the read-only mode and the planner settings are what
//! plancheck set, and no new lock is held. The vetting of the files refuses what it can read;
//! this catches what only the server can see (a setting name computed at run time, a function
//! that calls `set_config`, a procedure that takes a lock).
//!
//! Every name in the guard's queries is schema-qualified and its operators written
//! `OPERATOR(pg_catalog.…)`: a migration runs read-write and could put its own operators ahead of
//! the catalog's on the search path.

use std::sync::Arc;

use tokio_postgres::Client;

/// The settings the guard compares, read from the server once per run.
#[derive(Debug, Clone)]
pub struct Watched {
    /// Settings no file may change (bounds, read-only, planner) first, then those a scope's
    /// setup may change but a read path may not.
    names: Arc<[String]>,
    fixed: usize,
}

impl Default for Watched {
    /// Without the server's list: the names plancheck knows of itself.
    fn default() -> Self {
        let mut names: Vec<String> = crate::safety::always_watched()
            .map(str::to_string)
            .collect();
        names.extend(
            [
                "enable_seqscan",
                "enable_indexscan",
                "enable_indexonlyscan",
                "enable_bitmapscan",
                "random_page_cost",
                "seq_page_cost",
                "cpu_tuple_cost",
                "cpu_index_tuple_cost",
                "cpu_operator_cost",
                "effective_cache_size",
            ]
            .map(str::to_string),
        );
        Watched::from_names(names)
    }
}

impl Watched {
    fn from_names(mut names: Vec<String>) -> Watched {
        names.sort();
        names.dedup();
        let fixed = names.len();
        names.extend(crate::safety::SESSION.map(str::to_string));
        Watched {
            names: names.into(),
            fixed,
        }
    }

    /// Every planner setting the server has (its "Query Tuning" categories), with the bounds,
    /// the read-only settings and the planner settings filed elsewhere.
    pub async fn read(client: &Client) -> Result<Watched, tokio_postgres::Error> {
        let rows = client
            .query(
                "SELECT s.name::pg_catalog.text FROM pg_catalog.pg_settings s \
                 WHERE s.category OPERATOR(pg_catalog.~~) 'Query Tuning%' \
                    OR s.name OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])",
                &[&crate::safety::always_watched().collect::<Vec<_>>()],
            )
            .await?;
        Ok(Watched::from_names(rows.iter().map(|r| r.get(0)).collect()))
    }
}

/// What the guard saw at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The virtual transaction id: a new transaction has a new one.
    vxid: Option<String>,
    values: Vec<Option<String>>,
    /// Locks held beyond reading: relation locks stronger than AccessShareLock, advisory locks.
    strong_locks: Vec<String>,
}

impl Snapshot {
    /// This snapshot with the watched setting `name` at `value`; None when `name` is not
    /// watched.
    pub fn with_setting(&self, watched: &Watched, name: &str, value: &str) -> Option<Snapshot> {
        let at = watched.names.iter().position(|n| n == name)?;
        let mut changed = self.clone();
        *changed.values.get_mut(at)? = Some(value.to_string());
        Some(changed)
    }
}

/// Which settings a comparison covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Bounds, read-only mode, planner settings: after a setup or migration statement.
    Fixed,
    /// Those and the search path and role: after a run of the read path.
    All,
}

/// The settings, the transaction's virtual id and the locks beyond reading, with one read of the
/// lock table (the costliest part).
const SNAPSHOT: &str = "WITH l AS MATERIALIZED (\
         SELECT l.locktype, l.mode, l.relation, l.classid, l.objid, l.objsubid, l.granted, \
                l.virtualtransaction \
         FROM pg_catalog.pg_locks l \
         WHERE l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()) \
     SELECT \
       ARRAY(SELECT pg_catalog.current_setting(u.n, true) \
             FROM pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY AS u(n, o) \
             ORDER BY u.o), \
       ARRAY(SELECT l.virtualtransaction FROM l \
             WHERE l.locktype OPERATOR(pg_catalog.=) 'virtualxid'), \
       ARRAY(SELECT pg_catalog.concat_ws(' ', l.mode, 'on', l.locktype, l.relation, \
                                    l.classid, l.objid, l.objsubid) \
             FROM l \
             WHERE l.granted \
               AND (l.locktype OPERATOR(pg_catalog.=) 'advisory' \
                    OR l.locktype OPERATOR(pg_catalog.=) 'relation' \
                       AND l.mode OPERATOR(pg_catalog.<>) 'AccessShareLock') \
             ORDER BY 1)";

/// Reads the guarded state of the session.
pub async fn snapshot(
    client: &Client,
    watched: &Watched,
) -> Result<Snapshot, tokio_postgres::Error> {
    let statement = prepare(client, watched).await?;
    snapshot_with(client, &statement, watched).await
}

/// The guard's query, parsed once for a session that reads it many times. The setting names
/// are written into it when they are plain names (as every server setting's is), so the query
/// has no parameter and the server plans it once per session, not at every run; otherwise
/// they are its parameter `$1`.
pub async fn prepare(
    client: &Client,
    watched: &Watched,
) -> Result<tokio_postgres::Statement, tokio_postgres::Error> {
    let plain = watched.names.iter().all(|n| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    });
    if plain {
        let names = format!("'{{{}}}'", watched.names.join(","));
        client.prepare(&SNAPSHOT.replacen("$1", &names, 1)).await
    } else {
        client.prepare(SNAPSHOT).await
    }
}

/// Reads the guarded state of the session with the guard's query as [`prepare`] parsed it: one
/// round trip. The query names everything by schema, so no search path can redirect it.
pub async fn snapshot_with(
    client: &Client,
    statement: &tokio_postgres::Statement,
    watched: &Watched,
) -> Result<Snapshot, tokio_postgres::Error> {
    let names: Vec<&str> = watched.names.iter().map(String::as_str).collect();
    let row = if statement.params().is_empty() {
        client.query_one(statement, &[]).await?
    } else {
        client.query_one(statement, &[&names]).await?
    };
    let vxids: Vec<String> = row.get(1);
    Ok(Snapshot {
        values: row.get(0),
        vxid: vxids.into_iter().next(),
        strong_locks: row.get(2),
    })
}

/// What changed between `before` and `now`, in words, over `span`; `None` when nothing did.
/// `locks` says whether new locks count (a migration takes them by design).
pub fn changed(
    watched: &Watched,
    before: &Snapshot,
    now: &Snapshot,
    span: Span,
    locks: bool,
) -> Option<String> {
    if before.vxid != now.vxid {
        return Some("ended the check's transaction (a new one runs in its place)".into());
    }
    let upto = match span {
        Span::Fixed => watched.fixed,
        Span::All => watched.names.len(),
    };
    for (i, name) in watched.names.iter().enumerate().take(upto) {
        let (was, is) = (before.values.get(i), now.values.get(i));
        if was != is {
            let show = |v: Option<&Option<String>>| match v {
                Some(Some(v)) => format!("`{v}`"),
                _ => "unset".to_string(),
            };
            return Some(format!(
                "changed `{name}` from {} to {}",
                show(was),
                show(is)
            ));
        }
    }
    if locks
        && let Some(lock) = now
            .strong_locks
            .iter()
            .find(|l| !before.strong_locks.contains(l))
    {
        return Some(format!("took a lock beyond reading ({lock})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(vxid: &str, values: &[&str], locks: &[&str]) -> Snapshot {
        Snapshot {
            vxid: Some(vxid.into()),
            values: values.iter().map(|v| Some(v.to_string())).collect(),
            strong_locks: locks.iter().map(|l| l.to_string()).collect(),
        }
    }

    fn watched() -> Watched {
        Watched::from_names(vec!["enable_seqscan".into(), "statement_timeout".into()])
    }

    #[test]
    fn a_changed_bound_or_planner_setting_is_named() {
        let w = watched();
        let before = snap("3/1", &["on", "30s", "public", "none", "postgres"], &[]);
        let after = snap("3/1", &["off", "30s", "public", "none", "postgres"], &[]);
        let m = changed(&w, &before, &after, Span::Fixed, true).unwrap();
        assert!(m.contains("enable_seqscan") && m.contains("`off`"), "{m}");
        assert_eq!(changed(&w, &before, &before, Span::All, true), None);
    }

    #[test]
    fn a_baseline_with_one_setting_changed_differs_from_the_old_in_that_setting_only() {
        let w = watched();
        let before = snap("3/1", &["on", "30s", "public", "none", "postgres"], &["x"]);
        let after = before.with_setting(&w, "enable_seqscan", "off").unwrap();
        assert_eq!(
            after,
            snap("3/1", &["off", "30s", "public", "none", "postgres"], &["x"])
        );
        let m = changed(&w, &after, &before, Span::All, true).unwrap();
        assert!(m.contains("enable_seqscan"), "{m}");
        assert_eq!(before.with_setting(&w, "work_mem", "1MB"), None);
    }

    #[test]
    fn a_new_transaction_is_seen() {
        let w = watched();
        let before = snap("3/1", &["on", "30s", "public", "none", "postgres"], &[]);
        let after = snap("3/2", &["on", "30s", "public", "none", "postgres"], &[]);
        assert!(
            changed(&w, &before, &after, Span::Fixed, false)
                .unwrap()
                .contains("ended the check's transaction")
        );
    }

    #[test]
    fn the_search_path_counts_only_after_the_setup() {
        let w = watched();
        let before = snap("3/1", &["on", "30s", "public", "none", "postgres"], &[]);
        let after = snap("3/1", &["on", "30s", "app", "member", "postgres"], &[]);
        assert_eq!(changed(&w, &before, &after, Span::Fixed, true), None);
        assert!(
            changed(&w, &before, &after, Span::All, true)
                .unwrap()
                .contains("search_path")
        );
    }

    #[test]
    fn a_new_strong_lock_counts_unless_locks_are_expected() {
        let w = watched();
        let before = snap("3/1", &["on", "30s", "public", "none", "postgres"], &[]);
        let after = snap(
            "3/1",
            &["on", "30s", "public", "none", "postgres"],
            &["AccessExclusiveLock on relation 16384"],
        );
        assert!(
            changed(&w, &before, &after, Span::Fixed, true)
                .unwrap()
                .contains("AccessExclusiveLock")
        );
        assert_eq!(changed(&w, &before, &after, Span::Fixed, false), None);
    }
}
