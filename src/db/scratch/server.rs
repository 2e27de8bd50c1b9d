//! The scratch server of a run: local binaries of the measured major, the copy made (or taken
//! from the cache), and one rolled-back transaction per re-plan.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_postgres::Client;

use super::{Ask, Definitions, NotMade, Request, Trouble, Unit};
use crate::measure::{PlanKind, ScratchOutcome, ScratchPlan, ScratchReplan};
use crate::server::{Server, cache};
use crate::stop::Stop;

/// The role that owns every object of the copy: no superuser, so a `SECURITY DEFINER` function
/// of the copy runs with no more than it.
const OWNER: &str = "plancheck_owner";
/// The role re-plans run as, through a role made for each re-plan: `SELECT` on the copy.
const READER: &str = "plancheck_reader";
/// Where the copy records what it could not take, inside the copy itself (so a cached copy
/// remembers it).
const FAILURES: &str = "plancheck_copy.failure";

/// The server settings of the scratch server beyond the throwaway defaults: it holds no data.
const SERVER_SETTINGS: [(&str, &str); 4] = [
    ("shared_buffers", "16MB"),
    ("max_connections", "10"),
    ("jit", "off"),
    ("autovacuum", "off"),
];

/// The folder of server binaries of PostgreSQL `major`, or why there is none: looked for in
/// `PLANCHECK_PG_BIN`, `PLANCHECK_PG<major>_BIN`, `initdb` on the PATH, `pg_config --bindir`
/// and `/usr/lib/postgresql/<major>/bin`, each asked its version (`postgres --version`).
pub fn local_binaries(major: u32) -> Result<PathBuf, super::Off> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for var in [
        "PLANCHECK_PG_BIN".to_string(),
        format!("PLANCHECK_PG{major}_BIN"),
    ] {
        if let Some(dir) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
            candidates.push(PathBuf::from(dir));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    if let Ok(out) = std::process::Command::new("pg_config")
        .arg("--bindir")
        .output()
        && out.status.success()
    {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    candidates.push(PathBuf::from(format!("/usr/lib/postgresql/{major}/bin")));
    for dir in candidates {
        if dir.join("initdb").is_file()
            && dir.join("postgres").is_file()
            && crate::server::binaries_major(&dir) == Some(major)
        {
            return Ok(dir);
        }
    }
    Err(super::Off::NoBinaries(major))
}

/// Makes the re-plans of every request on one scratch server: one [`ScratchReplan`] per ask,
/// in the order of the requests and their asks. Never fails: what could not be made says why.
/// A stop (Ctrl-C) ends it between re-plans; the server is removed whatever happens.
///
/// Each statement there is bounded by `statement_timeout` (the run's `--statement-timeout`: a
/// re-plan of an empty schema takes milliseconds, but a function the planner folds runs at plan
/// time) and by plancheck's clock.
pub async fn settle(
    bin: &Path,
    definitions: &Definitions,
    requests: &[&Request],
    statement_timeout: Duration,
    stop: &mut Stop,
) -> Vec<Vec<ScratchReplan>> {
    let not_made = |why: NotMade| -> Vec<Vec<ScratchReplan>> {
        let why = why.to_string();
        requests
            .iter()
            .map(|r| {
                r.asks
                    .iter()
                    .map(|a| replan_of(a, ScratchOutcome::NotMade { why: why.clone() }))
                    .collect()
            })
            .collect()
    };
    let units = units_of(definitions, requests);
    let copy = tokio::select! {
        copy = Copy::start(bin, &units, statement_timeout) => copy,
        _ = stop.wait() => return not_made(NotMade::InterruptedBeforeCopy),
    };
    let copy = match copy {
        Ok(copy) => copy,
        Err(why) => return not_made(NotMade::CopyNotMade(why)),
    };
    let mut out = Vec::with_capacity(requests.len());
    for request in requests {
        let mut made = Vec::with_capacity(request.asks.len());
        let blocked = copy.blocked(request);
        for ask in &request.asks {
            let outcome = match (&blocked, stop.requested()) {
                (_, Some(_)) => ScratchOutcome::NotMade {
                    why: NotMade::InterruptedBeforeReplan.to_string(),
                },
                (Some(why), None) => ScratchOutcome::NotMade {
                    why: why.to_string(),
                },
                (None, None) => {
                    let planned = tokio::select! {
                        planned = copy.replan(request, ask) => planned,
                        _ = stop.wait() => Err(Trouble::Interrupted),
                    };
                    match planned {
                        Ok(plan) => ScratchOutcome::Planned(Box::new(plan)),
                        Err(why) => ScratchOutcome::NotMade {
                            why: NotMade::ReplanFailed(why).to_string(),
                        },
                    }
                }
            };
            made.push(replan_of(ask, outcome));
        }
        out.push(made);
    }
    copy.finish();
    out
}

fn replan_of(ask: &Ask, outcome: ScratchOutcome) -> ScratchReplan {
    ScratchReplan {
        index: ask.shown.clone(),
        plan: ask.plan,
        outcome,
    }
}

/// Every statement the requests need, in order of creation: by rank, then by object.
fn units_of<'a>(definitions: &'a Definitions, requests: &[&Request]) -> Vec<&'a Unit> {
    let keys: BTreeSet<&str> = requests
        .iter()
        .flat_map(|r| r.objects.iter().chain(&r.also).map(String::as_str))
        .collect();
    let mut units: Vec<&Unit> = keys
        .iter()
        .filter_map(|k| definitions.units.get(*k))
        .flatten()
        .collect();
    units.sort_by_key(|u| u.rank);
    units
}

/// The running scratch server with the copy loaded.
struct Copy {
    server: Option<Server>,
    client: Client,
    /// `server_version` of the local server.
    version: String,
    /// What the copy could not take: object → the server's error.
    failures: BTreeMap<String, String>,
    /// Where to save the copy when the run is done with it (a copy made now, with a cache).
    save: Option<cache::Entry>,
    /// The bound of each statement.
    statement_timeout: Duration,
}

impl Copy {
    /// Starts the server on the cached copy of these definitions, or on a new cluster where the
    /// copy is made now.
    async fn start(
        bin: &Path,
        units: &[&Unit],
        statement_timeout: Duration,
    ) -> Result<Copy, Trouble> {
        let entry = entry(bin, units);
        let settings: Vec<(&str, &str)> = SERVER_SETTINGS.to_vec();
        let cached = match &entry {
            Some(e) if e.exists() => {
                Server::start_with_settings(bin.to_path_buf(), Some(e), &settings)
                    .await
                    .ok()
            }
            _ => None,
        };
        let from_cache = cached.is_some();
        let server = match cached {
            Some(server) => server,
            None => Server::start_with_settings(bin.to_path_buf(), None, &settings)
                .await
                .map_err(|e| Trouble::Said(e.0))?,
        };
        let client = server
            .target("postgres")
            .connect()
            .await
            .map_err(|e| Trouble::Said(e.0))?;
        let bounds = format!(
            "SET statement_timeout = {}; SET client_min_messages = warning",
            statement_timeout.as_millis().max(1)
        );
        client
            .batch_execute(&bounds)
            .await
            .map_err(|e| Trouble::Said(crate::db::cause(&e)))?;
        let version: String = client
            .query_one("SELECT pg_catalog.current_setting('server_version')", &[])
            .await
            .map_err(|e| Trouble::Said(crate::db::cause(&e)))?
            .get(0);
        let mut copy = Copy {
            server: Some(server),
            client,
            version,
            failures: BTreeMap::new(),
            save: if from_cache { None } else { entry },
            statement_timeout,
        };
        if !from_cache {
            copy.load(units).await?;
        }
        copy.failures = copy.read_failures().await?;
        Ok(copy)
    }

    /// Makes the copy: plancheck's roles, then every statement in order, each through Parse on
    /// its own; a statement that fails is tried again once a round made progress (a dependency
    /// created later), and what never succeeds is recorded against its object.
    async fn load(&mut self, units: &[&Unit]) -> Result<(), Trouble> {
        let c = &self.client;
        c.batch_execute(&format!(
            "SET check_function_bodies = off; \
             CREATE ROLE {OWNER} NOLOGIN; CREATE ROLE {READER} NOLOGIN; \
             CREATE SCHEMA plancheck_copy; \
             CREATE TABLE {FAILURES} (key text NOT NULL, message text NOT NULL)"
        ))
        .await
        .map_err(|e| Trouble::Preparing(crate::db::cause(&e)))?;
        let mut pending: Vec<&Unit> = units.to_vec();
        let mut last: BTreeMap<&str, String> = BTreeMap::new();
        loop {
            let mut failed = Vec::new();
            for unit in &pending {
                match c.execute(unit.sql.as_str(), &[]).await {
                    Ok(_) => {}
                    Err(e) if e.as_db_error().is_none() => {
                        return Err(Trouble::Lost(crate::db::cause(&e)));
                    }
                    Err(e) => {
                        last.insert(unit.key.as_str(), crate::db::cause(&e));
                        failed.push(*unit);
                    }
                }
            }
            if failed.is_empty() || failed.len() == pending.len() {
                pending = failed;
                break;
            }
            pending = failed;
        }
        let mut recorded = BTreeSet::new();
        for unit in pending {
            if recorded.insert(unit.key.as_str()) {
                let message = last.get(unit.key.as_str()).cloned().unwrap_or_default();
                c.execute(
                    &format!("INSERT INTO {FAILURES} VALUES ($1, $2)"),
                    &[&unit.key, &message],
                )
                .await
                .map_err(|e| Trouble::Recording(crate::db::cause(&e)))?;
            }
        }
        Ok(())
    }

    async fn read_failures(&self) -> Result<BTreeMap<String, String>, Trouble> {
        let rows = self
            .client
            .query(&format!("SELECT key, message FROM {FAILURES}"), &[])
            .await
            .map_err(|e| Trouble::ReadingFailures(crate::db::cause(&e)))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Why the re-plans of `request` cannot be made on this copy, if they cannot.
    fn blocked(&self, request: &Request) -> Option<NotMade> {
        if !request.missing.is_empty() {
            return Some(NotMade::CannotHold(request.missing.clone()));
        }
        let failed: Vec<(String, String)> = request
            .objects
            .iter()
            .filter_map(|k| self.failures.get(k).map(|why| (k.clone(), why.clone())))
            .collect();
        (!failed.is_empty()).then_some(NotMade::CouldNotTake(failed))
    }

    /// One re-plan: in a transaction rolled back, every other index of the table dropped, the
    /// measured session's role and settings, seq scans off, the read path explained.
    async fn replan(&self, request: &Request, ask: &Ask) -> Result<ScratchPlan, Trouble> {
        let c = &self.client;
        let limit = self.statement_timeout + Duration::from_secs(5);
        let attempt = async {
            c.batch_execute("BEGIN").await?;
            let result = self.replan_in_transaction(request, ask).await;
            let end = c.batch_execute("ROLLBACK").await;
            let plan = result?;
            end?;
            Ok::<_, Failed>(plan)
        };
        match tokio::time::timeout(limit, attempt).await {
            Ok(Ok(plan)) => Ok(plan),
            Ok(Err(Failed(why))) => Err(why),
            Err(_) => Err(Trouble::NoAnswer(limit)),
        }
    }

    async fn replan_in_transaction(
        &self,
        request: &Request,
        ask: &Ask,
    ) -> Result<ScratchPlan, Failed> {
        let c = &self.client;
        // The role the re-plan runs as: what the measured role is, as far as the copy's
        // policies can tell.
        let mut role = format!("CREATE ROLE plancheck_probe NOLOGIN IN ROLE {READER}");
        for r in &request.role.member_of {
            role.push_str(&format!(", {}", quote_ident(r)));
        }
        if request.role.bypasses {
            role.push_str(" BYPASSRLS");
        }
        c.execute(role.as_str(), &[]).await?;
        for table in &request.role.owns {
            c.execute(
                format!("ALTER TABLE {table} OWNER TO plancheck_probe").as_str(),
                &[],
            )
            .await?;
        }
        let dropped = drop_rivals(c, ask).await?;
        c.execute("SET LOCAL ROLE plancheck_probe", &[]).await?;
        for (name, value) in &request.settings {
            c.query("SELECT pg_catalog.set_config($1, $2, true)", &[name, value])
                .await?;
        }
        let path: Vec<String> = request.search_path.iter().map(|s| quote_ident(s)).collect();
        let path = path.join(", ");
        c.query(
            "SELECT pg_catalog.set_config('search_path', $1, true)",
            &[&path],
        )
        .await?;
        let mode = match ask.plan {
            PlanKind::Custom => "force_custom_plan",
            PlanKind::Generic => "force_generic_plan",
        };
        c.batch_execute(&format!(
            "SET LOCAL enable_seqscan = off; SET LOCAL enable_tidscan = off; \
             SET LOCAL enable_indexscan = on; SET LOCAL enable_indexonlyscan = on; \
             SET LOCAL enable_bitmapscan = on; SET LOCAL plan_cache_mode = {mode}"
        ))
        .await?;
        let rows = if request.params.is_empty() {
            let explain = format!("EXPLAIN (VERBOSE, FORMAT JSON) {}", request.sql);
            c.query(explain.as_str(), &[]).await?
        } else {
            let prepared = c.prepare(&request.sql).await?;
            let name = protocol_name(c, &request.sql).await?;
            let explain = format!(
                "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE {name}({})",
                request.params.join(", ")
            );
            let rows = c.query(explain.as_str(), &[]).await?;
            drop(prepared);
            rows
        };
        let crate::db::check::RawJson(text) = rows
            .first()
            .and_then(|r| r.try_get::<_, crate::db::check::RawJson>(0).ok())
            .ok_or(Failed(Trouble::NoExplainJson))?;
        let text = text.map_err(|size| Failed(Trouble::PlanTooLarge(size)))?;
        let document = crate::measure::Document::from_text(text)
            .map_err(|e| Failed(Trouble::PlanUnreadable(e.to_string())))?;
        Ok(ScratchPlan {
            server_version: self.version.clone(),
            dropped,
            disabled: vec!["enable_seqscan".into(), "enable_tidscan".into()],
            document,
        })
    }

    /// Stops the server and removes it; a copy made now is saved to the cache first.
    fn finish(mut self) {
        if let Some(mut server) = self.server.take() {
            if let Some(entry) = self.save.take() {
                match server.save_and_stop(&entry) {
                    Ok(()) => {
                        if let Some(folder) = entry.path.parent() {
                            cache::prune_copies(folder, cache::COPIES_KEPT);
                        }
                    }
                    Err(e) => crate::term::say!(
                        "{}",
                        crate::report::server::copy_not_cached(&entry.path, &e)
                    ),
                }
            }
            drop(server);
        }
    }
}

/// A scratch-server error, for `?` in a re-plan.
struct Failed(Trouble);

impl From<tokio_postgres::Error> for Failed {
    fn from(e: tokio_postgres::Error) -> Self {
        Failed(Trouble::Said(crate::db::cause(&e)))
    }
}

/// Drops every index of the asked index's table (and of its partitions) but the asked index,
/// its leaves and the partitioned indexes it is a leaf of; a constraint's index by dropping the
/// constraint. Returns the names dropped.
async fn drop_rivals(c: &Client, ask: &Ask) -> Result<Vec<String>, Failed> {
    let rows = c
        .query(
            "WITH asked AS (SELECT pg_catalog.to_regclass(pg_catalog.format('%I.%I', $1::text, \
                                                                             $2::text)) AS oid), \
                  tab AS (SELECT i.indrelid AS oid FROM pg_catalog.pg_index i, asked \
                          WHERE i.indexrelid = asked.oid), \
                  tables AS (SELECT t.relid FROM pg_catalog.pg_partition_tree((SELECT oid FROM tab)) t \
                             UNION SELECT oid FROM tab), \
                  keep AS (SELECT t.relid FROM pg_catalog.pg_partition_tree((SELECT oid FROM asked)) t \
                           UNION SELECT a.relid \
                             FROM pg_catalog.pg_partition_ancestors((SELECT oid FROM asked)) a \
                           UNION SELECT oid FROM asked), \
                  rivals AS (SELECT c.oid, c.relname::text AS name, \
                                    COALESCE(pg_catalog.pg_partition_root(c.oid), c.oid) AS root \
                             FROM pg_catalog.pg_index i \
                             JOIN tables ON i.indrelid = tables.relid \
                             JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid \
                             WHERE c.oid NOT IN (SELECT relid FROM keep)) \
             SELECT (SELECT pg_catalog.array_agg(r.name ORDER BY r.name) FROM rivals r), \
                    (SELECT pg_catalog.array_agg(DISTINCT \
                        CASE WHEN con.conname IS NOT NULL \
                             THEN pg_catalog.format('ALTER TABLE %I.%I DROP CONSTRAINT IF EXISTS %I CASCADE', \
                                                    tn.nspname, t.relname, con.conname) \
                             ELSE pg_catalog.format('DROP INDEX IF EXISTS %I.%I CASCADE', \
                                                    n.nspname, c.relname) END) \
                     FROM rivals r \
                     JOIN pg_catalog.pg_class c ON c.oid = r.root \
                     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                     JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid \
                     JOIN pg_catalog.pg_class t ON t.oid = i.indrelid \
                     JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace \
                     LEFT JOIN pg_catalog.pg_constraint con ON con.conindid = c.oid \
                          AND con.conrelid = t.oid AND con.contype IN ('p', 'u', 'x')), \
                    (SELECT oid FROM asked) IS NOT NULL",
            &[&ask.schema, &ask.index],
        )
        .await?;
    let row = rows.first().ok_or(Failed(Trouble::NoRivalAnswer))?;
    if !row.get::<_, bool>(2) {
        return Err(Failed(Trouble::IndexNotOnCopy(ask.shown.clone())));
    }
    let names: Vec<String> = row.get::<_, Option<Vec<String>>>(0).unwrap_or_default();
    let statements: Vec<String> = row.get::<_, Option<Vec<String>>>(1).unwrap_or_default();
    for s in &statements {
        c.execute(s.as_str(), &[]).await?;
    }
    Ok(names)
}

/// The server's name for the statement just prepared from `text` at the protocol level.
async fn protocol_name(c: &Client, text: &str) -> Result<String, Failed> {
    let rows = c.query(crate::db::check::PREPARED, &[]).await?;
    crate::db::check::prepared_name(&rows, text).ok_or(Failed(Trouble::PreparedNotListed))
}

/// `"name"` quoted as `quote_ident` would, always (a reserved word stays safe).
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The cache entry for a copy of `units` on the binaries in `bin`, where there is a cache plancheck
/// may use.
fn entry(bin: &Path, units: &[&Unit]) -> Option<cache::Entry> {
    let folder = cache::folder()?;
    match cache::trusted(&folder) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return None,
        _ => {}
    }
    let mut text = String::new();
    for u in units {
        text.push_str(&format!("{}\t{}\t{}\n", u.rank, u.key, u.sql));
    }
    cache::Entry::for_copy(&folder, bin, &crate::server::INITDB_ARGS, &text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_in_rank_order_whatever_the_object() {
        let mut d = Definitions::default();
        d.add(vec![
            Unit {
                key: "a index".into(),
                rank: 80,
                sql: "CREATE INDEX".into(),
            },
            Unit {
                key: "b table".into(),
                rank: 40,
                sql: "CREATE TABLE".into(),
            },
        ]);
        let request = Request {
            objects: vec!["b table".into(), "unknown".into()],
            also: vec!["a index".into()],
            missing: vec![],
            search_path: vec![],
            settings: vec![],
            role: Default::default(),
            sql: String::new(),
            params: vec![],
            asks: vec![],
        };
        let units = units_of(&d, &[&request]);
        let order: Vec<&str> = units.iter().map(|u| u.sql.as_str()).collect();
        assert_eq!(order, ["CREATE TABLE", "CREATE INDEX"]);
    }

    #[test]
    fn no_local_server_of_a_major_says_which_and_how_to_get_one() {
        let why = local_binaries(99).unwrap_err().to_string();
        assert!(
            why.starts_with("no local PostgreSQL 99 to re-plan on"),
            "{why}"
        );
        assert!(why.contains("PLANCHECK_PG99_BIN"), "{why}");
        assert!(why.ends_with("install it or set PLANCHECK_PG_BIN"), "{why}");
    }

    #[test]
    fn identifiers_are_always_quoted() {
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
