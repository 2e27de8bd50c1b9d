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

use crate::error::DatabaseFailure;

/// The settings the guard compares, read from the server once per run: an allow-list. Every
/// setting a session can change (`pg_settings` of context `user` or `superuser`) is watched
/// except the few a scope's setup is for ([`crate::project::safety::SESSION`]), which are watched from
/// the end of the setup on, with the project's own dotted settings.
#[derive(Debug, Clone)]
pub struct Watched {
    /// Settings no file may change (bounds, read-only, planner, logging, everything outside
    /// the allow-list) first, then those a scope's setup may change but a read path may not.
    names: Arc<[String]>,
    fixed: usize,
    /// The guard's query for these names ([`prepare`]), written once.
    query: Arc<str>,
}

/// Settings an unprivileged role may not read (`GUC_SUPERUSER_ONLY`): a setup's `SET ROLE`
/// would make the guard's read of them fail. No file may change them (they are outside the
/// allow-list, refused where written) and they plan nothing.
const UNREADABLE: [&str; 3] = [
    "dynamic_library_path",
    "session_preload_libraries",
    "extension_destdir",
];

impl Default for Watched {
    /// Without the server's list: the names plancheck knows of itself.
    fn default() -> Self {
        let mut names: Vec<String> = crate::project::safety::always_watched()
            .map(str::to_string)
            .collect();
        names.extend(
            [
                "enable_seqscan",
                "enable_indexscan",
                "enable_indexonlyscan",
                "enable_bitmapscan",
            ]
            .map(str::to_string),
        );
        Watched::from_names(names, &[])
    }
}

impl Watched {
    fn from_names(names: Vec<String>, custom: &[String]) -> Watched {
        let allowed = |n: &String| {
            crate::project::safety::SESSION.contains(&n.as_str())
                || crate::project::safety::is_custom(n)
        };
        let mut names: Vec<String> = names
            .into_iter()
            .map(|n| n.to_ascii_lowercase())
            .filter(|n| !allowed(n) && !UNREADABLE.contains(&n.as_str()))
            .collect();
        names.sort();
        names.dedup();
        let fixed = names.len();
        let mut session: Vec<String> = crate::project::safety::SESSION
            .iter()
            .map(|n| n.to_string())
            .chain(custom.iter().map(|n| n.to_ascii_lowercase()))
            .collect();
        session.sort();
        session.dedup();
        names.extend(session);
        let query = guard_query(&names).into();
        Watched {
            names: names.into(),
            fixed,
            query,
        }
    }

    /// Every setting a session can change on this server, and the project's own dotted
    /// settings (`custom`, as its setup names them) after the setup. Read as a role with no
    /// right to read restricted settings (`pg_signal_backend`, which has none) when connected as
    /// a superuser: a setup's `SET ROLE` to such a role would make the guard's read of a
    /// restricted setting fail, so those are left out (no file may change them anyway: they
    /// are outside the allow-list, refused where written).
    pub async fn read(client: &Client, custom: &[String]) -> Result<Watched, DatabaseFailure> {
        Self::read_settings(client, custom)
            .await
            .map_err(|e| super::Unanswered::of(super::Asked::ServerSettings, &e).into())
    }

    async fn read_settings(
        client: &Client,
        custom: &[String],
    ) -> Result<Watched, tokio_postgres::Error> {
        const NAMES: &str = "SELECT s.name::pg_catalog.text FROM pg_catalog.pg_settings s \
             WHERE s.context OPERATOR(pg_catalog.=) ANY ('{user,superuser}'::pg_catalog.text[]) \
                OR s.name OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])";
        let superuser: bool = client
            .query_one(
                "SELECT r.rolsuper FROM pg_catalog.pg_roles r \
                 WHERE r.rolname OPERATOR(pg_catalog.=) current_user",
                &[],
            )
            .await?
            .get(0);
        let always: Vec<&str> = crate::project::safety::always_watched().collect();
        let rows = if superuser {
            client
                .batch_execute("BEGIN READ ONLY; SET LOCAL ROLE pg_signal_backend")
                .await?;
            let rows = client.query(NAMES, &[&always]).await;
            client.batch_execute("ROLLBACK").await?;
            rows?
        } else {
            client.query(NAMES, &[&always]).await?
        };
        Ok(Watched::from_names(
            rows.iter().map(|r| r.get(0)).collect(),
            custom,
        ))
    }

    /// The setup-changeable settings whose value differs between `before` and `after`, as the
    /// server shows them: what a scope's setup changed, to report beside the check.
    pub fn session_changes(&self, before: &Snapshot, after: &Snapshot) -> Vec<(String, String)> {
        (self.fixed..self.names.len())
            .filter_map(|i| {
                let (was, is) = (before.values.get().get(i)?, after.values.get().get(i)?);
                (was != is).then(|| {
                    (
                        self.names[i].clone(),
                        is.clone().unwrap_or_else(|| "(unset)".into()),
                    )
                })
            })
            .collect()
    }
}

/// What the guard saw at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The virtual transaction id: a new transaction has a new one.
    vxid: Option<String>,
    values: Values,
    /// Locks held beyond reading: relation locks stronger than AccessShareLock, advisory locks.
    strong_locks: Vec<String>,
}

impl PartialEq for Snapshot {
    fn eq(&self, other: &Snapshot) -> bool {
        self.vxid == other.vxid
            && self.strong_locks == other.strong_locks
            && (self.values.same(&other.values) || self.values.get() == other.values.get())
    }
}

impl Snapshot {
    /// Whether `other` is the same answer: the same transaction and locks, and the settings'
    /// values byte for byte (the comparison [`changed`] makes before any value by value).
    pub fn same_answer(&self, other: &Snapshot) -> bool {
        self.vxid == other.vxid
            && self.strong_locks == other.strong_locks
            && self.values.same(&other.values)
    }

    /// This snapshot with the watched setting `name` at `value`; None when `name` is not
    /// watched.
    pub fn with_setting(&self, watched: &Watched, name: &str, value: &str) -> Option<Snapshot> {
        let at = watched.names.iter().position(|n| n == name)?;
        let mut values = self.values.get().to_vec();
        *values.get_mut(at)? = Some(value.to_string());
        Some(Snapshot {
            values: Values::encoded(values),
            ..self.clone()
        })
    }
}

/// The watched settings' values, in [`Watched`]'s order (`None`: unset). Kept as the server sent
/// them (a `text[]` in the binary format) and read into strings only when asked: the guard runs
/// after every run, and two answers whose bytes are the same hold the same values, so most
/// comparisons are one comparison of bytes instead of a string made and compared per setting.
#[derive(Debug, Clone)]
struct Values {
    /// The binary `text[]`: the server's, or written here as the server writes it.
    raw: Arc<[u8]>,
    read: std::sync::OnceLock<Vec<Option<String>>>,
}

impl Values {
    fn from_server(raw: Vec<u8>) -> Values {
        Values {
            raw: raw.into(),
            read: std::sync::OnceLock::new(),
        }
    }

    /// `values`, with the bytes the server would send for them, so that a later answer of the
    /// server holding the same values compares as bytes.
    fn encoded(values: Vec<Option<String>>) -> Values {
        Values {
            raw: encode_text_array(&values).into(),
            read: std::sync::OnceLock::from(values),
        }
    }

    fn get(&self) -> &[Option<String>] {
        self.read.get_or_init(|| decode_text_array(&self.raw))
    }

    /// The same bytes, so the same values.
    fn same(&self, other: &Values) -> bool {
        self.raw == other.raw
    }
}

/// The element type of a `text[]` (`pg_type.oid` of `text`).
const TEXT_OID: u32 = 25;

/// A one-dimensional `text[]` as PostgreSQL's `array_send` writes it: dimensions, a flag for a
/// null among the elements, the element type, each dimension's length and lower bound (1), then
/// each element's length (-1 for null) and bytes.
fn encode_text_array(values: &[Option<String>]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(20 + values.iter().flatten().map(|v| 4 + v.len()).sum::<usize>());
    let dims: i32 = if values.is_empty() { 0 } else { 1 };
    out.extend_from_slice(&dims.to_be_bytes());
    out.extend_from_slice(&i32::from(values.iter().any(Option::is_none)).to_be_bytes());
    out.extend_from_slice(&TEXT_OID.to_be_bytes());
    if !values.is_empty() {
        out.extend_from_slice(&(values.len() as i32).to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
    }
    for v in values {
        match v {
            Some(v) => {
                out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                out.extend_from_slice(v.as_bytes());
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    out
}

/// The values of a binary `text[]` the server sent. What cannot be read as one (it was checked
/// to be of that type when received) reads as a value no setting has, so it differs from every
/// snapshot and the guard reports a change rather than none.
fn decode_text_array(raw: &[u8]) -> Vec<Option<String>> {
    use tokio_postgres::types::{FromSql, Type};
    <Vec<Option<String>> as FromSql>::from_sql(&Type::TEXT_ARRAY, raw)
        .unwrap_or_else(|e| vec![Some(format!("(the guard's answer could not be read: {e})"))])
}

/// A `text[]` column kept as the server sent it.
struct RawTextArray(Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for RawTextArray {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawTextArray(raw.to_vec()))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        *ty == tokio_postgres::types::Type::TEXT_ARRAY
    }
}

/// Which settings a comparison covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Bounds, read-only mode, planner settings: after a setup statement.
    Fixed,
    /// Those, less what a migration may set ([`crate::project::safety::Place::Migration`]): after a
    /// migration statement.
    Migration,
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

/// The guard's query for `names`. The setting names are written into it when they are plain
/// names (as every server setting's is), so the query has no parameter and the server plans it
/// once per session, not at every run; otherwise they are its parameter `$1`.
fn guard_query(names: &[String]) -> String {
    let plain = names.iter().all(|n| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    });
    if plain {
        SNAPSHOT.replacen("$1", &format!("'{{{}}}'", names.join(",")), 1)
    } else {
        SNAPSHOT.to_string()
    }
}

/// The guard's query ([`guard_query`]), parsed once for a session that reads it many times.
pub async fn prepare(
    client: &Client,
    watched: &Watched,
) -> Result<tokio_postgres::Statement, tokio_postgres::Error> {
    client.prepare(&watched.query).await
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
    let values: RawTextArray = row.try_get(0)?;
    let vxids: Vec<String> = row.try_get(1)?;
    Ok(Snapshot {
        values: Values::from_server(values.0),
        vxid: vxids.into_iter().next(),
        strong_locks: row.try_get(2)?,
    })
}

/// What the guard saw change that may not: data, worded by `report::failure` (`Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The check's transaction ended (a new one runs in its place).
    EndedTransaction,
    /// A watched setting changed (`None`: unset).
    Setting {
        name: String,
        was: Option<String>,
        is: Option<String>,
    },
    /// A lock beyond reading was taken (`pg_locks`' mode and object).
    Lock(String),
}

/// What changed between `before` and `now` over `span`; `None` when nothing did.
/// `locks` says whether new locks count (a migration takes them by design).
pub fn changed(
    watched: &Watched,
    before: &Snapshot,
    now: &Snapshot,
    span: Span,
    locks: bool,
) -> Option<Change> {
    if before.vxid != now.vxid {
        return Some(Change::EndedTransaction);
    }
    let upto = match span {
        Span::Fixed | Span::Migration => watched.fixed,
        Span::All => watched.names.len(),
    };
    let skipped = |name: &str| {
        span == Span::Migration
            && crate::project::safety::protected_at(name, crate::project::safety::Place::Migration)
                .is_none()
    };
    // The same bytes hold the same values: nothing to compare one by one.
    if !before.values.same(&now.values) {
        let (was_all, is_all) = (before.values.get(), now.values.get());
        for (i, name) in watched.names.iter().enumerate().take(upto) {
            if skipped(name) {
                continue;
            }
            let (was, is) = (was_all.get(i), is_all.get(i));
            if was != is {
                return Some(Change::Setting {
                    name: name.clone(),
                    was: was.cloned().flatten(),
                    is: is.cloned().flatten(),
                });
            }
        }
    }
    if locks
        && let Some(lock) = now
            .strong_locks
            .iter()
            .find(|l| !before.strong_locks.contains(l))
    {
        return Some(Change::Lock(lock.clone()));
    }
    None
}

/// What changed between `before` and `now` over every watched setting, an application setting
/// that is now an empty placeholder counting as unset (no statement can remove a placeholder
/// once created); `None` when nothing did. For the session put back after a migration.
pub fn changed_but_placeholders(
    watched: &Watched,
    before: &Snapshot,
    now: &Snapshot,
) -> Option<Change> {
    let mut values = now.values.get().to_vec();
    for (i, name) in watched.names.iter().enumerate().skip(watched.fixed) {
        let unset = |v: Option<&Option<String>>| matches!(v, None | Some(None));
        if crate::project::safety::is_custom(name)
            && unset(before.values.get().get(i))
            && values.get(i).is_some_and(|v| v.as_deref() == Some(""))
        {
            values[i] = None;
        }
    }
    let now = Snapshot {
        values: Values::encoded(values),
        ..now.clone()
    };
    changed(watched, before, &now, Span::All, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The snapshot where the watched settings named in `values` have those values and every
    /// other one is unset.
    fn snap(w: &Watched, vxid: &str, values: &[(&str, &str)], locks: &[&str]) -> Snapshot {
        Snapshot {
            vxid: Some(vxid.into()),
            values: Values::encoded(
                w.names
                    .iter()
                    .map(|n| {
                        values
                            .iter()
                            .find(|(name, _)| name == n)
                            .map(|(_, v)| v.to_string())
                    })
                    .collect(),
            ),
            strong_locks: locks.iter().map(|l| l.to_string()).collect(),
        }
    }

    fn watched() -> Watched {
        Watched::from_names(
            [
                "enable_seqscan",
                "statement_timeout",
                "debug_print_plan",
                "maintenance_work_mem",
                "search_path",
                "TimeZone",
            ]
            .map(str::to_string)
            .to_vec(),
            &["app.user_id".to_string()],
        )
    }

    const START: [(&str, &str); 3] = [
        ("enable_seqscan", "on"),
        ("statement_timeout", "30s"),
        ("search_path", "public"),
    ];

    #[test]
    fn a_changed_bound_or_planner_setting_is_named() {
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let after = snap(
            &w,
            "3/1",
            &[("enable_seqscan", "off"), START[1], START[2]],
            &[],
        );
        let m = changed(&w, &before, &after, Span::Fixed, true)
            .unwrap()
            .to_string();
        assert!(m.contains("enable_seqscan") && m.contains("`off`"), "{m}");
        assert_eq!(changed(&w, &before, &before, Span::All, true), None);
    }

    #[test]
    fn a_setting_outside_the_allow_list_is_watched_whatever_its_name() {
        // Regression: `debug_print_plan` was not among the watched names, so a login function
        // that turned it on filled the server log with every check's plan.
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let mut on = START.to_vec();
        on.push(("debug_print_plan", "on"));
        let after = snap(&w, "3/1", &on, &[]);
        let m = changed(&w, &before, &after, Span::Fixed, true)
            .unwrap()
            .to_string();
        assert!(m.contains("debug_print_plan"), "{m}");
    }

    #[test]
    fn a_migration_may_change_what_migrations_set_and_nothing_else() {
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let mut more = START.to_vec();
        more.push(("maintenance_work_mem", "1GB"));
        let after = snap(&w, "3/1", &more, &[]);
        assert_eq!(changed(&w, &before, &after, Span::Migration, false), None);
        assert!(changed(&w, &before, &after, Span::Fixed, false).is_some());
        more.push(("debug_print_plan", "on"));
        let worse = snap(&w, "3/1", &more, &[]);
        assert!(
            changed(&w, &before, &worse, Span::Migration, false)
                .unwrap()
                .to_string()
                .contains("debug_print_plan")
        );
    }

    #[test]
    fn what_the_setup_changed_is_read_back_for_the_report() {
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let mut set = START.to_vec();
        set.extend([("timezone", "UTC"), ("app.user_id", "42")]);
        let after = snap(&w, "3/1", &set, &[]);
        assert_eq!(
            w.session_changes(&before, &after),
            vec![
                ("app.user_id".to_string(), "42".to_string()),
                ("timezone".to_string(), "UTC".to_string())
            ]
        );
        assert_eq!(w.session_changes(&before, &before), vec![]);
    }

    #[test]
    fn a_baseline_with_one_setting_changed_differs_from_the_old_in_that_setting_only() {
        let w = watched();
        let before = snap(&w, "3/1", &START, &["x"]);
        let after = before.with_setting(&w, "enable_seqscan", "off").unwrap();
        assert_eq!(
            after,
            snap(
                &w,
                "3/1",
                &[("enable_seqscan", "off"), START[1], START[2]],
                &["x"]
            )
        );
        let m = changed(&w, &after, &before, Span::All, true)
            .unwrap()
            .to_string();
        assert!(m.contains("enable_seqscan"), "{m}");
        assert_eq!(before.with_setting(&w, "no_such_setting", "1"), None);
    }

    #[test]
    fn values_written_as_the_server_writes_them_read_back_the_same() {
        for values in [
            vec![],
            vec![Some("on".to_string())],
            vec![
                Some(String::new()),
                None,
                Some("\"$user\", public".into()),
                Some("ü{,}".into()),
            ],
        ] {
            let raw = encode_text_array(&values);
            assert_eq!(decode_text_array(&raw), values);
            assert!(Values::encoded(values.clone()).same(&Values::from_server(raw)));
        }
        // Bytes that are no text[] read as a value no setting has, never as no change.
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let unreadable = Snapshot {
            values: Values::from_server(vec![0, 0, 0, 1]),
            ..before.clone()
        };
        let m = changed(&w, &before, &unreadable, Span::All, true)
            .unwrap()
            .to_string();
        assert!(m.contains("could not be read"), "{m}");
    }

    #[test]
    fn a_new_transaction_is_seen() {
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let after = snap(&w, "3/2", &START, &[]);
        assert!(
            changed(&w, &before, &after, Span::Fixed, false)
                .unwrap()
                .to_string()
                .contains("ended the check's transaction")
        );
    }

    #[test]
    fn the_search_path_counts_only_after_the_setup() {
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let after = snap(
            &w,
            "3/1",
            &[START[0], START[1], ("search_path", "app")],
            &[],
        );
        assert_eq!(changed(&w, &before, &after, Span::Fixed, true), None);
        assert!(
            changed(&w, &before, &after, Span::All, true)
                .unwrap()
                .to_string()
                .contains("search_path")
        );
    }

    #[test]
    fn a_new_strong_lock_counts_unless_locks_are_expected() {
        let w = watched();
        let before = snap(&w, "3/1", &START, &[]);
        let after = snap(
            &w,
            "3/1",
            &START,
            &["AccessExclusiveLock on relation 16384"],
        );
        assert!(
            changed(&w, &before, &after, Span::Fixed, true)
                .unwrap()
                .to_string()
                .contains("AccessExclusiveLock")
        );
        assert_eq!(changed(&w, &before, &after, Span::Fixed, false), None);
    }
}
