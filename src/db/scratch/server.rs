//! The scratch server of a run: local binaries of the measured major, the copy made (or taken
//! from the cache) by an unprivileged role, and one rolled-back transaction per re-plan on that
//! role's session. See [`super`] for what the copy may do and why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use super::{Applied, Ask, Definitions, NotMade, Request, Step, Trouble, Unit, Untaken};
use crate::measure::{
    PlanKind, Production, ProductionOutcome, ProductionPlan, RowsOf, SameStatement, ScratchOutcome,
    ScratchPlan, ScratchReplan, Together, TogetherPlan,
};
use crate::server::{SUPERUSER, Server, cache};
use crate::stop::Stop;

/// The role that makes every object of the copy and runs every re-plan: it logs in, and has no
/// right beyond creating in the copy's database. No superuser session ever runs a statement of
/// the copy's definitions or of the read path.
const OWNER: &str = "plancheck_owner";
/// The role every re-plan's role is a member of: `SELECT` on the copy.
const READER: &str = "plancheck_reader";
/// The roles re-plans run as, one per set of policy roles a measured role is a member of:
/// `plancheck_probe_1`, … (made for the run, dropped before the copy is cached).
const PROBE: &str = "plancheck_probe_";
/// The database the copy is made in.
const DATABASE: &str = "postgres";
/// What the copy could not take, written by plancheck into the stopped server's data folder
/// before it is cached (so the cache's manifest seals it), read back from the restored folder:
/// nothing of it is read from inside the copy.
const FAILURES_FILE: &str = "plancheck-copy-failures.json";

/// The server settings of the scratch server beyond the throwaway defaults: it holds no data.
const SERVER_SETTINGS: [(&str, &str); 4] = [
    ("shared_buffers", "16MB"),
    ("max_connections", "10"),
    ("jit", "off"),
    ("autovacuum", "off"),
];

/// The ranks made first, each statement once, before any other definition exists: schemas and
/// then extensions (an extension's script must meet no object of the catalog in its schema).
const FIRST_RANKS: u8 = 10;

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

/// How long the whole load may take on plancheck's clock, whatever each statement does: four
/// statement timeouts, and never less than a minute (a large schema's thousands of statements
/// take seconds on an empty server).
fn load_bound(statement_timeout: Duration) -> Duration {
    (statement_timeout * 4).max(Duration::from_secs(60))
}

/// How long one statement may take on plancheck's clock: its `statement_timeout`, and the time
/// for the server's own cancel to come back.
fn statement_bound(statement_timeout: Duration) -> Duration {
    statement_timeout + Duration::from_secs(5)
}

/// Makes the re-plans of every request on one scratch server: one [`ScratchReplan`] per ask,
/// in the order of the requests and their asks. Never fails: what could not be made says why.
/// A stop (Ctrl-C) ends it between re-plans; the server is removed whatever happens.
///
/// Each statement there is bounded by `statement_timeout` (the run's `--statement-timeout`: a
/// re-plan of an empty schema takes milliseconds, but a function the planner folds runs at plan
/// time) and by plancheck's clock; a statement that outlives the clock stops the server.
// Long because it is the copy's life in order: made, production's statistics written, each
// request's re-plans and plans at production's statistics, then cached and stopped.
pub async fn settle(
    bin: &Path,
    definitions: &Definitions,
    requests: &[&Request],
    stats: Option<&crate::stats::File>,
    statement_timeout: Duration,
    stop: &mut Stop,
) -> Settled {
    let not_made = |why: NotMade| -> Settled {
        let why = why.to_string();
        Settled {
            replans: requests
                .iter()
                .map(|r| {
                    r.asks
                        .iter()
                        .map(|a| replan_of(a, ScratchOutcome::NotMade { why: why.clone() }))
                        .collect()
                })
                .collect(),
            production: requests
                .iter()
                .map(|r| production_not_made(r, stats, &why, &[]))
                .collect(),
        }
    };
    let units = units_of(definitions, requests);
    let copy = tokio::select! {
        copy = Copy::start(bin, &units, requests, statement_timeout) => copy,
        _ = stop.wait() => return not_made(NotMade::InterruptedBeforeCopy),
    };
    let mut copy = match copy {
        Ok(copy) => copy,
        Err(why) => return not_made(NotMade::CopyNotMade(why)),
    };
    // Production's statistics go on the copy after every definition, and after it is cached:
    // the cache holds the schema alone.
    let applied = match stats {
        Some(file) => Some(copy.take_statistics(file, requests).await),
        None => None,
    };
    let mut out = Settled::default();
    for request in requests {
        let mut made = Vec::with_capacity(request.asks.len());
        let blocked = copy.blocked(request);
        for ask in &request.asks {
            let outcome = match (&blocked, &copy.gone, stop.requested()) {
                (_, _, Some(_)) => ScratchOutcome::NotMade {
                    why: NotMade::InterruptedBeforeReplan.to_string(),
                },
                (_, Some(gone), None) => ScratchOutcome::NotMade {
                    why: NotMade::Abandoned(gone.clone()).to_string(),
                },
                (Some(why), None, None) => ScratchOutcome::NotMade {
                    why: why.to_string(),
                },
                (None, None, None) => {
                    let planned = tokio::select! {
                        planned = copy.replan(request, ask) => planned,
                        _ = stop.wait() => Err(Trouble::Interrupted),
                    };
                    match planned {
                        Ok(plan) => ScratchOutcome::Planned(Box::new(plan)),
                        Err(why) => {
                            if matches!(why, Trouble::NoAnswer(_) | Trouble::Interrupted) {
                                copy.abandon(why.clone());
                            }
                            ScratchOutcome::NotMade {
                                why: NotMade::ReplanFailed(why).to_string(),
                            }
                        }
                    }
                }
            };
            made.push(replan_of(ask, outcome));
        }
        out.replans.push(made);
        let production = match (&applied, stats) {
            (Some(applied), Some(file)) => {
                copy.production(request, file, applied, blocked.as_ref(), stop)
                    .await
            }
            _ => None,
        };
        out.production.push(production);
    }
    copy.finish().await;
    out
}

/// What the scratch copy settled: per request, its re-plans, and its plans at production's
/// statistics (with `check --stats`).
#[derive(Debug, Default)]
pub struct Settled {
    pub replans: Vec<Vec<ScratchReplan>>,
    pub production: Vec<Option<Production>>,
}

/// A request's plans at production's statistics, each not made for `why`.
fn production_not_made(
    request: &Request,
    stats: Option<&crate::stats::File>,
    why: &str,
    gaps: &[String],
) -> Option<Production> {
    let file = stats?;
    if request.production.is_empty() {
        return None;
    }
    Some(Production {
        exported_at: file.exported_at.clone(),
        server_version: file.server.version.clone(),
        plans: request
            .production
            .iter()
            .map(|kind| ProductionPlan {
                plan: *kind,
                outcome: ProductionOutcome::NotMade {
                    why: why.to_string(),
                },
                through: None,
            })
            .collect(),
        gaps: gaps.to_vec(),
        rows: Vec::new(),
    })
}

fn replan_of(ask: &Ask, outcome: ScratchOutcome) -> ScratchReplan {
    ScratchReplan {
        index: ask.shown.clone(),
        plan: ask.plan,
        outcome,
    }
}

/// Every statement the requests need, in order of creation: by rank, then a table's indexes
/// in production's OID order ([`Unit::order`]), then by object.
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
    units.sort_by_key(|u| (u.rank, u.order));
    units
}

/// Whether the copy may make a role of this name as a policy's stand-in: never one it keeps for
/// itself (its superuser, plancheck's roles) nor one of PostgreSQL's own (`pg_…`, which exist on
/// every server and carry rights).
fn reserved_role(name: &str) -> bool {
    name == SUPERUSER
        || name == OWNER
        || name == READER
        || name.starts_with(PROBE)
        || name.starts_with("pg_")
}

/// The running scratch server with the copy loaded.
struct Copy {
    server: Option<Server>,
    /// The server binaries it runs on.
    bin: PathBuf,
    /// The superuser's session: plancheck's roles and nothing else.
    admin: Client,
    /// The owner's session: every statement of the copy and every re-plan.
    owner: Client,
    /// `server_version` of the local server.
    version: String,
    /// What the copy could not take: object → why.
    failures: BTreeMap<String, Untaken>,
    /// The role each set of policy roles re-plans as.
    probes: BTreeMap<Vec<String>, String>,
    /// Where to save the copy when the run is done with it (a copy made now, with a cache).
    save: Option<cache::Entry>,
    /// The bound of each statement.
    statement_timeout: Duration,
    /// Why the server was stopped before the run was done with it.
    gone: Option<Trouble>,
}

impl Copy {
    /// Starts the server on the cached copy of these definitions, or on a new cluster where the
    /// copy is made now; then makes the roles the requests' re-plans run as.
    async fn start(
        bin: &Path,
        units: &[&Unit],
        requests: &[&Request],
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
        // A cached copy whose record of failures is not whole is not used.
        let (cached, recorded) = match cached {
            Some(server) => match read_failures(&server.data()) {
                Some(failures) => (Some(server), failures),
                None => (None, BTreeMap::new()),
            },
            None => (None, BTreeMap::new()),
        };
        let from_cache = cached.is_some();
        let server = match cached {
            Some(server) => server,
            None => Server::start_with_settings(bin.to_path_buf(), None, &settings)
                .await
                .map_err(|e| Trouble::Server(e.0))?,
        };
        let mut copy = Copy::connect(server, statement_timeout).await?;
        copy.bin = bin.to_path_buf();
        copy.failures = recorded;
        copy.save = if from_cache { None } else { entry };
        if !from_cache {
            copy.prepare().await?;
            let started = Instant::now();
            let bound = load_bound(statement_timeout);
            let loaded = tokio::time::timeout(bound, copy.load(units)).await;
            match loaded {
                Ok(loaded) => loaded?,
                Err(_) => {
                    let why = Trouble::NoAnswer(started.elapsed());
                    copy.abandon(why.clone());
                    return Err(why);
                }
            }
            copy.fresh_session().await?;
        }
        copy.make_probes(requests).await?;
        Ok(copy)
    }

    /// Opens the superuser's session and the owner's (made first on a new cluster), each
    /// bounded, and reads the server's version.
    async fn connect(server: Server, statement_timeout: Duration) -> Result<Copy, Trouble> {
        let admin = server
            .target(DATABASE)
            .connect()
            .await
            .map_err(|_| Trouble::Lost(Step::Connecting))?;
        let bounds = bounds(statement_timeout);
        admin
            .batch_execute(&format!("{bounds}; SET search_path = pg_catalog, pg_temp"))
            .await
            .map_err(|e| Trouble::of(Step::Bounding, &e))?;
        // The owner logs in: on a new cluster it is made first (on a cached one it is there).
        admin
            .batch_execute(&format!(
                "DO $$ BEGIN \
                   IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '{OWNER}') THEN \
                     CREATE ROLE {OWNER} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE \
                         NOREPLICATION NOBYPASSRLS; \
                   END IF; END $$"
            ))
            .await
            .map_err(|e| Trouble::of(Step::Roles, &e))?;
        let owner = owner_session(&server, statement_timeout).await?;
        let version: String = admin
            .query_one("SELECT pg_catalog.current_setting('server_version')", &[])
            .await
            .map_err(|e| Trouble::of(Step::Version, &e))?
            .get(0);
        Ok(Copy {
            server: Some(server),
            bin: PathBuf::new(),
            admin,
            owner,
            version,
            failures: BTreeMap::new(),
            probes: BTreeMap::new(),
            save: None,
            statement_timeout,
            gone: None,
        })
    }

    /// On a new cluster, as its superuser: the role re-plans read as, the owner's right to
    /// create in the copy's database and its `public` schema; then the stand-ins for the roles
    /// the copied policies name, by name (what the catalog says of a role is never run as SQL).
    async fn prepare(&mut self) -> Result<(), Trouble> {
        self.admin
            .batch_execute(&format!(
                "CREATE ROLE {READER} NOLOGIN; \
                 GRANT CREATE ON DATABASE {DATABASE} TO {OWNER}; \
                 ALTER SCHEMA public OWNER TO {OWNER}"
            ))
            .await
            .map_err(|e| Trouble::of(Step::Roles, &e))
    }

    /// Makes the copy: the stand-in roles, then every statement in order, each through Parse on
    /// its own and run by the owner. Schemas and extensions first, each once; then the rest,
    /// where a statement that fails is tried again once a round made progress (a dependency
    /// created later), and what never succeeds is recorded against its object by its SQLSTATE.
    async fn load(&mut self, units: &[&Unit]) -> Result<(), Trouble> {
        for unit in units {
            let Some(name) = &unit.role else { continue };
            if reserved_role(name) {
                self.failures
                    .insert(unit.key.clone(), Untaken::ReservedRole);
                continue;
            }
            let made = self
                .admin
                .execute(
                    format!("CREATE ROLE {} NOLOGIN", quote_ident(name)).as_str(),
                    &[],
                )
                .await;
            if let Err(e) = made {
                match e.code() {
                    Some(code) => {
                        self.failures
                            .insert(unit.key.clone(), Untaken::Refused(code.code().into()));
                    }
                    None => return Err(Trouble::Lost(Step::Roles)),
                }
            }
        }
        let (first, rest): (Vec<&Unit>, Vec<&Unit>) = units
            .iter()
            .filter(|u| u.role.is_none())
            .partition(|u| u.rank <= FIRST_RANKS);
        let mut last: BTreeMap<&str, String> = BTreeMap::new();
        let mut failed_first = Vec::new();
        for unit in first {
            if let Err(code) = self.run(unit).await? {
                last.insert(unit.key.as_str(), code);
                failed_first.push(unit);
            }
        }
        let mut pending: Vec<&Unit> = rest;
        loop {
            let mut failed = Vec::new();
            for unit in &pending {
                if let Err(code) = self.run(unit).await? {
                    last.insert(unit.key.as_str(), code);
                    failed.push(*unit);
                }
            }
            let progress = failed.len() < pending.len();
            pending = failed;
            if pending.is_empty() || !progress {
                break;
            }
        }
        for unit in failed_first.into_iter().chain(pending) {
            let code = last.get(unit.key.as_str()).cloned().unwrap_or_default();
            self.failures
                .entry(unit.key.clone())
                .or_insert(Untaken::Refused(code));
        }
        Ok(())
    }

    /// Runs one statement of the copy as the owner, with `statement_timeout` set again just
    /// before it (in the same round trip) and on plancheck's clock: `Ok(Err(sqlstate))` when the
    /// server refused it; `Err` when the server is lost or did not answer in time (then it is
    /// stopped).
    async fn run(&mut self, unit: &Unit) -> Result<Result<(), String>, Trouble> {
        let c = &self.owner;
        let bound = statement_bound(self.statement_timeout);
        let set = bounds(self.statement_timeout);
        let both = futures_util::future::join(c.batch_execute(&set), c.execute(&*unit.sql, &[]));
        match tokio::time::timeout(bound, both).await {
            Err(_) => {
                let why = Trouble::NoAnswer(bound);
                self.abandon(why.clone());
                Err(why)
            }
            Ok((set, ran)) => {
                set.map_err(|e| Trouble::of(Step::Bounding, &e))?;
                match ran {
                    Ok(_) => Ok(Ok(())),
                    Err(e) => match e.code() {
                        Some(code) => Ok(Err(code.code().to_string())),
                        None => Err(Trouble::Lost(Step::Load)),
                    },
                }
            }
        }
    }

    /// After the load: every setting a role or the database was given while the copy loaded is
    /// cleared, and the re-plans get a session of their own, which meets nothing the load's
    /// session was left with (a setting, a temporary object, a lock).
    async fn fresh_session(&mut self) -> Result<(), Trouble> {
        self.admin
            .batch_execute("DELETE FROM pg_catalog.pg_db_role_setting")
            .await
            .map_err(|e| Trouble::of(Step::Roles, &e))?;
        let server = self
            .server
            .as_ref()
            .ok_or(Trouble::Lost(Step::Connecting))?;
        self.owner = owner_session(server, self.statement_timeout).await?;
        Ok(())
    }

    /// Makes, as the superuser, one role for each set of policy roles the requests' measured
    /// roles are members of: a member of the reader and of those stand-ins (the ones the copy
    /// made), which the owner may become (`SET ROLE`) for a re-plan.
    async fn make_probes(&mut self, requests: &[&Request]) -> Result<(), Trouble> {
        for request in requests {
            let member_of = self.stand_ins(request);
            if self.probes.contains_key(&member_of) {
                continue;
            }
            let name = format!("{PROBE}{}", self.probes.len() + 1);
            let mut sql =
                format!("DROP ROLE IF EXISTS {name}; CREATE ROLE {name} NOLOGIN IN ROLE {READER}");
            for role in &member_of {
                sql.push_str(&format!(", {}", quote_ident(role)));
            }
            sql.push_str(&format!("; GRANT {name} TO {OWNER}"));
            self.admin
                .batch_execute(&sql)
                .await
                .map_err(|e| Trouble::of(Step::Probes, &e))?;
            self.probes.insert(member_of, name);
        }
        Ok(())
    }

    /// The stand-ins a request's role is a member of: the policy roles it names that the copy
    /// made (a reserved one blocks the request, see [`Copy::blocked`]).
    fn stand_ins(&self, request: &Request) -> Vec<String> {
        let mut member_of: Vec<String> = request
            .role
            .member_of
            .iter()
            .filter(|r| {
                !reserved_role(r)
                    && !self
                        .failures
                        .contains_key(&format!("role {}", quote_ident(r)))
            })
            .cloned()
            .collect();
        member_of.sort();
        member_of.dedup();
        member_of
    }

    /// Why the re-plans of `request` cannot be made on this copy, if they cannot.
    fn blocked(&self, request: &Request) -> Option<NotMade> {
        if !request.missing.is_empty() {
            return Some(NotMade::CannotHold(request.missing.clone()));
        }
        let failed: Vec<(String, Untaken)> = request
            .objects
            .iter()
            .filter_map(|k| self.failures.get(k).map(|why| (k.clone(), why.clone())))
            .collect();
        (!failed.is_empty()).then_some(NotMade::CouldNotTake(failed))
    }

    /// Stops the server at once: it did not answer on plancheck's clock (or the run was
    /// interrupted in a re-plan). Nothing more is asked of it, and it is not cached.
    fn abandon(&mut self, why: Trouble) {
        if let Some(mut server) = self.server.take() {
            server.abandon();
        }
        self.save = None;
        self.gone = Some(why);
    }

    /// One re-plan: in a transaction rolled back, as the owner: row-level security off where
    /// the measured role reads past it, the conditions planned with index scans off (to compare
    /// with the measured server's), every other index of the table dropped, then as the
    /// request's role with the measured session's settings and seq scans off, the read path
    /// explained. Bounded on plancheck's clock as a whole.
    async fn replan(&self, request: &Request, ask: &Ask) -> Result<ScratchPlan, Trouble> {
        self.rolled_back(self.replan_in_transaction(request, ask))
            .await
    }

    /// Runs `work` in a transaction of the owner's, rolled back whatever happens, with the
    /// re-plan's bounds and `search_path = pg_catalog, pg_temp`; bounded as a whole on
    /// plancheck's clock.
    async fn rolled_back<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, Trouble>>,
    ) -> Result<T, Trouble> {
        let c = &self.owner;
        let limit = statement_bound(self.statement_timeout) * 2;
        let attempt = async {
            c.batch_execute(&format!(
                "BEGIN; {}; SET LOCAL search_path = pg_catalog, pg_temp",
                local_bounds(self.statement_timeout)
            ))
            .await
            .map_err(|e| Trouble::of(Step::Transaction, &e))?;
            let result = work.await;
            let end = c
                .batch_execute("ROLLBACK")
                .await
                .map_err(|e| Trouble::of(Step::Transaction, &e));
            let done = result?;
            end?;
            Ok(done)
        };
        match tokio::time::timeout(limit, attempt).await {
            Ok(done) => done,
            Err(_) => Err(Trouble::NoAnswer(limit)),
        }
    }

    /// In a re-plan's transaction: row-level security off on the tables whose policies the
    /// measured role reads past; the role the re-plan runs as.
    async fn probe_past_policies(&self, request: &Request) -> Result<&str, Trouble> {
        let probe = self
            .probes
            .get(&self.stand_ins(request))
            .ok_or(Trouble::Lost(Step::Probes))?;
        for table in &request.role.owns {
            self.owner
                .execute(
                    format!("ALTER TABLE {table} DISABLE ROW LEVEL SECURITY").as_str(),
                    &[],
                )
                .await
                .map_err(|e| Trouble::of(Step::Rls, &e))?;
        }
        Ok(probe)
    }

    async fn replan_in_transaction(
        &self,
        request: &Request,
        ask: &Ask,
    ) -> Result<ScratchPlan, Trouble> {
        let c = &self.owner;
        let probe = self.probe_past_policies(request).await?;
        // The definition the copy has of the asked index, read as the measured one was.
        let rows = c
            .query(
                "SELECT pg_catalog.pg_get_indexdef(pg_catalog.to_regclass(\
                     pg_catalog.format('%I.%I', $1::pg_catalog.text, $2::pg_catalog.text)))",
                &[&ask.schema, &ask.index],
            )
            .await
            .map_err(|e| Trouble::of(Step::Rivals, &e))?;
        let definition: Option<String> = rows.first().and_then(|r| r.get(0));
        match definition {
            None => return Err(Trouble::IndexNotOnCopy(ask.shown.clone())),
            Some(copy) if copy != ask.definition => {
                return Err(Trouble::IndexDiffers {
                    index: ask.shown.clone(),
                    copy,
                });
            }
            Some(_) => {}
        }
        c.batch_execute(&format!("SET LOCAL ROLE {probe}"))
            .await
            .map_err(|e| Trouble::of(Step::Session, &e))?;
        self.take_session(request, ask.plan).await?;
        // The statement with every index scan off, where its conditions on the table all stay
        // in the scans' filters: the same statement planned the same way on both servers.
        c.batch_execute(
            "SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off; \
             SET LOCAL enable_bitmapscan = off; SET LOCAL enable_tidscan = off; \
             SET LOCAL enable_seqscan = on",
        )
        .await
        .map_err(|e| Trouble::of(Step::Session, &e))?;
        let seq_only = self.explain(request, Step::Conditions).await?;
        let mut copy_conditions = Vec::new();
        for table in &ask.tables {
            copy_conditions.extend(seq_only.plan().conditions_on(table));
        }
        c.batch_execute("RESET ROLE")
            .await
            .map_err(|e| Trouble::of(Step::Session, &e))?;
        let (others, own) = siblings(c, ask).await?;
        c.batch_execute("SAVEPOINT plancheck_rivals")
            .await
            .map_err(|e| Trouble::of(Step::Rivals, &e))?;
        let dropped = drop_rivals(c, ask, None).await?;
        c.batch_execute(&format!(
            "SET LOCAL ROLE {probe}; SET LOCAL enable_seqscan = off; \
             SET LOCAL enable_tidscan = off; SET LOCAL enable_indexscan = on; \
             SET LOCAL enable_indexonlyscan = on; SET LOCAL enable_bitmapscan = on"
        ))
        .await
        .map_err(|e| Trouble::of(Step::Session, &e))?;
        let document = self.explain(request, Step::Explain).await?;
        let own: Vec<&str> = own.iter().map(String::as_str).collect();
        let together = if document.plan().reads_any(&own) {
            None
        } else {
            Some(self.together(request, ask, probe, &others, &own).await?)
        };
        Ok(ScratchPlan {
            server_version: self.version.clone(),
            dropped,
            disabled: vec!["enable_seqscan".into(), "enable_tidscan".into()],
            document,
            same_statement: Some(SameStatement {
                measured: ask.measured.clone(),
                copy: copy_conditions,
            }),
            together,
        })
    }

    /// Where no plan read the index alone: the index kept beside each other index of its table
    /// in turn (every other dropped, in a savepoint taken back after each), with seq scans and
    /// plain index scans off, so that only a bitmap scan, which can combine the two in a
    /// BitmapOr or BitmapAnd, reads the table without a disabled path; until a plan reads it.
    async fn together(
        &self,
        request: &Request,
        ask: &Ask,
        probe: &str,
        others: &[String],
        own: &[&str],
    ) -> Result<Together, Trouble> {
        const OFF: [&str; 4] = [
            "enable_seqscan",
            "enable_tidscan",
            "enable_indexscan",
            "enable_indexonlyscan",
        ];
        let c = &self.owner;
        let rivals = |e: tokio_postgres::Error| Trouble::of(Step::Rivals, &e);
        let mut tried = Vec::new();
        let mut found = None;
        for other in others {
            c.batch_execute("ROLLBACK TO SAVEPOINT plancheck_rivals; SAVEPOINT plancheck_rivals")
                .await
                .map_err(rivals)?;
            drop_rivals(c, ask, Some(other)).await?;
            let off: String = OFF
                .iter()
                .map(|g| format!("SET LOCAL {g} = off; "))
                .collect();
            c.batch_execute(&format!(
                "SET LOCAL ROLE {probe}; {off}SET LOCAL enable_bitmapscan = on"
            ))
            .await
            .map_err(|e| Trouble::of(Step::Session, &e))?;
            let document = self.explain(request, Step::Explain).await?;
            tried.push(other.clone());
            if document.plan().reads_any(own) {
                found = Some(TogetherPlan {
                    with: other.clone(),
                    document,
                });
                break;
            }
        }
        c.batch_execute("ROLLBACK TO SAVEPOINT plancheck_rivals")
            .await
            .map_err(rivals)?;
        Ok(Together {
            tried,
            disabled: OFF.iter().map(|g| g.to_string()).collect(),
            found,
        })
    }

    /// The measured session's settings and search path, and the plan kind, for the rest of
    /// the transaction.
    async fn take_session(&self, request: &Request, kind: PlanKind) -> Result<(), Trouble> {
        let c = &self.owner;
        let failed = |e: tokio_postgres::Error| Trouble::of(Step::Session, &e);
        for (name, value) in &request.settings {
            c.query("SELECT pg_catalog.set_config($1, $2, true)", &[name, value])
                .await
                .map_err(failed)?;
        }
        let path: Vec<String> = request.search_path.iter().map(|s| quote_ident(s)).collect();
        let path = path.join(", ");
        c.query(
            "SELECT pg_catalog.set_config('search_path', $1, true)",
            &[&path],
        )
        .await
        .map_err(failed)?;
        let mode = match kind {
            PlanKind::Custom => "force_custom_plan",
            PlanKind::Generic => "force_generic_plan",
        };
        c.batch_execute(&format!("SET LOCAL plan_cache_mode = {mode}"))
            .await
            .map_err(failed)
    }

    /// `EXPLAIN (VERBOSE, FORMAT JSON)` of the read path (with parameters, of the statement
    /// prepared at the protocol level), read into the plan model.
    async fn explain(
        &self,
        request: &Request,
        step: Step,
    ) -> Result<crate::measure::Document, Trouble> {
        let c = &self.owner;
        let failed = |e: tokio_postgres::Error| Trouble::of(step, &e);
        let rows = if request.params.is_empty() {
            let explain = format!("EXPLAIN (VERBOSE, FORMAT JSON) {}", request.sql);
            c.query(explain.as_str(), &[]).await.map_err(failed)?
        } else {
            let prepared = c
                .prepare(&request.sql)
                .await
                .map_err(|e| Trouble::of(Step::Prepare, &e))?;
            let name = protocol_name(c, &request.sql).await?;
            let explain = format!(
                "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE {name}({})",
                request.params.join(", ")
            );
            let rows = c.query(explain.as_str(), &[]).await.map_err(failed)?;
            drop(prepared);
            rows
        };
        let crate::db::check::RawJson(text) = rows
            .first()
            .and_then(|r| r.try_get::<_, crate::db::check::RawJson>(0).ok())
            .ok_or(Trouble::NoExplainJson)?;
        let text = text.map_err(Trouble::PlanTooLarge)?;
        crate::measure::Document::from_text(text)
            .map_err(|e| Trouble::PlanUnreadable(e.to_string()))
    }

    /// Writes production's statistics onto the copy ([`super::production`]). A copy made now is
    /// cached first, as the schema alone, and the server started again on that cached folder:
    /// the statistics (and the sparse files) are never cached.
    async fn take_statistics(
        &mut self,
        file: &crate::stats::File,
        requests: &[&Request],
    ) -> Result<Applied, Trouble> {
        if let Some(why) = &self.gone {
            return Err(why.clone());
        }
        if self.save.is_some() {
            self.cache_now().await?;
            self.make_probes(requests).await?;
        }
        let bound = load_bound(self.statement_timeout);
        let shadows = tokio::time::timeout(
            bound,
            super::production::shadows(&self.admin, &self.owner, file),
        )
        .await;
        let (shadows, shadow_gaps) = match shadows {
            Ok(made) => made?,
            Err(_) => {
                let why = Trouble::NoAnswer(bound);
                self.abandon(why.clone());
                return Err(why);
            }
        };
        let (gins, gin_gaps) = super::production::gin_metapages(&self.admin, file).await?;
        if !shadows.is_empty() || !gins.is_empty() {
            self.plant(&shadows, &gins, file.server.block_size as usize)
                .await?;
            self.make_probes(requests).await?;
        }
        let data = self
            .server
            .as_ref()
            .ok_or(Trouble::Lost(Step::Statistics))?
            .data();
        match tokio::time::timeout(
            bound,
            super::production::apply(&self.admin, &self.owner, &data, file),
        )
        .await
        {
            Ok(applied) => applied.map(|mut a| {
                a.gaps.extend(shadow_gaps);
                a.gaps.extend(gin_gaps);
                a
            }),
            Err(_) => {
                let why = Trouble::NoAnswer(bound);
                self.abandon(why.clone());
                Err(why)
            }
        }
    }

    /// Stops the server, plants the B-tree shadows' pages into the real indexes' files and
    /// production's counts into the GIN metapages ([`super::production::plant`]), and starts
    /// it again on the same folder.
    async fn plant(
        &mut self,
        shadows: &[super::production::Shadowed],
        gins: &[super::production::GinMeta],
        block_size: usize,
    ) -> Result<(), Trouble> {
        self.clean().await?;
        let Some(mut server) = self.server.take() else {
            return Err(Trouble::Lost(Step::Statistics));
        };
        let restarted = server
            .restart_with(|data| super::production::plant(data, block_size, shadows, gins))
            .await;
        if let Err(e) = restarted {
            let why = Trouble::Server(e.0);
            self.gone = Some(why.clone());
            return Err(why);
        }
        self.reconnect(server).await
    }

    /// Saves the copy made now to the cache (the server stopped for it) and starts the server
    /// again on its own folder.
    async fn cache_now(&mut self) -> Result<(), Trouble> {
        let Some(entry) = self.save.take() else {
            return Ok(());
        };
        self.clean().await?;
        let Some(mut server) = self.server.take() else {
            return Err(Trouble::Lost(Step::Cleanup));
        };
        // Copied, not moved, while the server is stopped: the run goes on on its own folder, so
        // another run replacing or pruning the same entry meanwhile takes nothing from it.
        let failures = std::mem::take(&mut self.failures);
        let mut saved = Ok(());
        let restarted = server
            .restart_with(|data| {
                saved = write_failures(data, &failures).and_then(|()| entry.save(data));
                Ok(())
            })
            .await;
        if let Err(e) = restarted {
            let why = Trouble::Server(e.0);
            self.gone = Some(why.clone());
            return Err(why);
        }
        cached(&entry, saved);
        self.failures = failures;
        self.reconnect(server).await
    }

    /// New sessions on the server started again, keeping what the copy could not take and its
    /// binaries (the re-plans' roles are made again by the caller).
    async fn reconnect(&mut self, server: Server) -> Result<(), Trouble> {
        let failures = std::mem::take(&mut self.failures);
        let bin = std::mem::take(&mut self.bin);
        *self = Copy::connect(server, self.statement_timeout).await?;
        self.failures = failures;
        self.bin = bin;
        Ok(())
    }

    /// Drops the re-plans' roles and every setting a role or the database was given while the
    /// copy loaded: a later run's sessions meet none of it.
    async fn clean(&mut self) -> Result<(), Trouble> {
        let mut sql = String::from("DELETE FROM pg_catalog.pg_db_role_setting");
        for name in self.probes.values() {
            sql.push_str(&format!("; DROP ROLE {name}"));
        }
        self.probes.clear();
        match tokio::time::timeout(
            statement_bound(self.statement_timeout),
            self.admin.batch_execute(&sql),
        )
        .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Trouble::of(Step::Cleanup, &e)),
            Err(_) => Err(Trouble::NoAnswer(statement_bound(self.statement_timeout))),
        }
    }

    // Long because it is the request's answer in order: what blocks it, each plan kind (and the
    // plan through the index where it is not read), then what the plans read held to the file.
    /// A request's plans at production's statistics: not made where the copy lacks what the
    /// read path needs (an object, an index of its tables, a relation of the file), else each
    /// plan kind planned, and held to the file: every relation the plan reads must be one the
    /// file sized.
    async fn production(
        &mut self,
        request: &Request,
        file: &crate::stats::File,
        applied: &Result<Applied, Trouble>,
        blocked: Option<&NotMade>,
        stop: &mut Stop,
    ) -> Option<Production> {
        if request.production.is_empty() {
            return None;
        }
        let applied = match applied {
            Ok(a) => a,
            Err(why) => {
                return production_not_made(
                    request,
                    Some(file),
                    &NotMade::NoStatistics(why.clone()).to_string(),
                    &[],
                );
            }
        };
        // An extended statistics object the copy could not make is a gap the statistics name.
        let untaken: Vec<(String, Untaken)> = request
            .also
            .iter()
            .filter(|k| !k.starts_with("statistics "))
            .filter_map(|k| self.failures.get(k).map(|why| (k.clone(), why.clone())))
            .collect();
        let why = match (blocked, &self.gone, stop.requested()) {
            (_, _, Some(_)) => Some(NotMade::InterruptedBeforeReplan),
            (_, Some(gone), None) => Some(NotMade::Abandoned(gone.clone())),
            (Some(why), None, None) => Some(why.clone()),
            (None, None, None) if !untaken.is_empty() => Some(NotMade::CouldNotTake(untaken)),
            (None, None, None) => None,
        };
        if let Some(why) = why {
            return production_not_made(request, Some(file), &why.to_string(), &[]);
        }
        let mut plans = Vec::with_capacity(request.production.len());
        let mut read: BTreeSet<(String, String)> = BTreeSet::new();
        for kind in &request.production {
            let planned = tokio::select! {
                planned = self.plan_production(request, *kind, applied, None) => planned,
                _ = stop.wait() => Err(Trouble::Interrupted),
            };
            let mut through = None;
            let outcome = match planned {
                Ok(document) => {
                    for scan in document.plan().scans() {
                        if let (Some(r), Some(schema)) = (scan.relation, scan.schema) {
                            read.insert((schema.to_string(), r.to_string()));
                        }
                    }
                    // Not read: the cost through it, the table's other indexes dropped and
                    // seq scans off, at the same statistics.
                    if let Some(ask) = &request.through
                        && !document.plan().reads_any(&[ask.index.as_str()])
                        && self.gone.is_none()
                    {
                        let planned = tokio::select! {
                            planned = self.plan_production(request, *kind, applied, Some(ask)) => planned,
                            _ = stop.wait() => Err(Trouble::Interrupted),
                        };
                        through = Some(match planned {
                            Ok(d) => ProductionOutcome::Planned(Box::new(d)),
                            Err(why) => {
                                if matches!(why, Trouble::NoAnswer(_) | Trouble::Interrupted) {
                                    self.abandon(why.clone());
                                }
                                ProductionOutcome::NotMade {
                                    why: NotMade::ReplanFailed(why).to_string(),
                                }
                            }
                        });
                    }
                    ProductionOutcome::Planned(Box::new(document))
                }
                Err(why) => {
                    if matches!(why, Trouble::NoAnswer(_) | Trouble::Interrupted) {
                        self.abandon(why.clone());
                    }
                    ProductionOutcome::NotMade {
                        why: NotMade::ReplanFailed(why).to_string(),
                    }
                }
            };
            plans.push(ProductionPlan {
                plan: *kind,
                outcome,
                through,
            });
        }
        // A relation the file does not size plans at the copy's guess, so no plan that reads
        // one is production's (an index scan names its table).
        let tables = read;
        let unsized_: Vec<String> = tables
            .iter()
            .filter(|r| !applied.relations.contains_key(*r))
            .map(|(s, n)| crate::model::Relation::new(Some(s), n).to_string())
            .collect();
        if !unsized_.is_empty() {
            let why = NotMade::NotInStatistics(unsized_).to_string();
            for p in &mut plans {
                p.outcome = ProductionOutcome::NotMade { why: why.clone() };
            }
        }
        let relevant: Vec<_> = applied
            .gaps
            .iter()
            .filter(|(at, _)| at.as_ref().is_none_or(|r| tables.contains(r)))
            .collect();
        let words = |(at, gap): &&(Option<(String, String)>, super::Gap)| match at {
            Some((s, n)) => format!("{}: {gap}", crate::model::Relation::new(Some(s), n)),
            None => gap.to_string(),
        };
        let refused: Vec<String> = relevant
            .iter()
            .filter(|(_, g)| g.blocks())
            .map(words)
            .collect();
        if !refused.is_empty() {
            let why = NotMade::StatisticsRefused(refused).to_string();
            for p in &mut plans {
                p.outcome = ProductionOutcome::NotMade { why: why.clone() };
            }
        }
        let gaps = relevant
            .iter()
            .filter(|(_, g)| !g.blocks())
            .map(words)
            .collect();
        let rows = tables
            .iter()
            .filter_map(|r| {
                applied.relations.get(r).map(|t| RowsOf {
                    schema: r.0.clone(),
                    name: r.1.clone(),
                    reltuples: *t,
                })
            })
            .collect();
        Some(Production {
            exported_at: file.exported_at.clone(),
            server_version: file.server.version.clone(),
            plans,
            gaps,
            rows,
        })
    }

    /// One plan at production's statistics, in a transaction rolled back: every index of the
    /// tables kept, as the request's role, with the measured session's settings, then
    /// production's planner settings, then the scope's declared ones. `through` an index: the
    /// other indexes of its table dropped and seq scans off, for the cost of the plan through it.
    async fn plan_production(
        &self,
        request: &Request,
        kind: PlanKind,
        applied: &Applied,
        through: Option<&Ask>,
    ) -> Result<crate::measure::Document, Trouble> {
        let c = &self.owner;
        self.rolled_back(async {
            let probe = self.probe_past_policies(request).await?;
            if let Some(ask) = through {
                drop_rivals(c, ask, None).await?;
            }
            c.batch_execute(&format!("SET LOCAL ROLE {probe}"))
                .await
                .map_err(|e| Trouble::of(Step::Session, &e))?;
            self.take_session(request, kind).await?;
            let settings = applied.settings.iter().chain(&request.declared);
            for (name, value) in settings {
                c.query("SELECT pg_catalog.set_config($1, $2, true)", &[name, value])
                    .await
                    .map_err(|e| Trouble::of(Step::ProductionSettings, &e))?;
            }
            // The plan kind last: a declared plan_cache_mode does not decide it.
            let mode = match kind {
                PlanKind::Custom => "force_custom_plan",
                PlanKind::Generic => "force_generic_plan",
            };
            c.batch_execute(&format!("SET LOCAL plan_cache_mode = {mode}"))
                .await
                .map_err(|e| Trouble::of(Step::Session, &e))?;
            if through.is_some() {
                c.batch_execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_tidscan = off")
                    .await
                    .map_err(|e| Trouble::of(Step::Session, &e))?;
            }
            self.explain(request, Step::Explain).await
        })
        .await
    }

    /// Drops the re-plans' roles, stops the server and removes it; a copy made now is saved to
    /// the cache first, with the record of what it could not take.
    async fn finish(mut self) {
        let Some(entry) = self.save.take() else {
            return;
        };
        if self.server.is_none() || self.clean().await.is_err() {
            return;
        }
        let Some(mut server) = self.server.take() else {
            return;
        };
        let failures = std::mem::take(&mut self.failures);
        drop(self);
        let saved = server.save_and_stop_with(&entry, |data| write_failures(data, &failures));
        cached(&entry, saved);
    }
}

/// After a copy was saved to `entry`: the oldest copies pruned, or why it was not cached, said.
fn cached(entry: &cache::Entry, saved: std::io::Result<()>) {
    match saved {
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

/// A session of the owner's, bounded.
async fn owner_session(server: &Server, statement_timeout: Duration) -> Result<Client, Trouble> {
    let owner = server
        .target_as(DATABASE, OWNER)
        .connect()
        .await
        .map_err(|_| Trouble::Lost(Step::Connecting))?;
    owner
        .batch_execute(&format!(
            "{}; SET check_function_bodies = off; SET row_security = on",
            bounds(statement_timeout)
        ))
        .await
        .map_err(|e| Trouble::of(Step::Bounding, &e))?;
    Ok(owner)
}

/// `SET statement_timeout = …` for a session of the copy.
fn bounds(statement_timeout: Duration) -> String {
    format!(
        "SET statement_timeout = {}; SET client_min_messages = warning",
        statement_timeout.as_millis().max(1)
    )
}

/// The same, for a re-plan's transaction.
fn local_bounds(statement_timeout: Duration) -> String {
    format!(
        "SET LOCAL statement_timeout = {}",
        statement_timeout.as_millis().max(1)
    )
}

/// Writes what the copy could not take into the stopped server's data folder (a new file, never
/// through a link), where the cache's manifest seals it.
fn write_failures(data: &Path, failures: &BTreeMap<String, Untaken>) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let text = serde_json::to_vec(failures).map_err(std::io::Error::other)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(data.join(FAILURES_FILE))?
        .write_all(&text)
}

/// What a cached copy could not take, as plancheck recorded it; `None` when the record is not
/// there or cannot be read (the copy is then made anew).
fn read_failures(data: &Path) -> Option<BTreeMap<String, Untaken>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(data.join(FAILURES_FILE))
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = Vec::new();
    file.take(16 << 20).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Drops every index of the asked index's table (and of its partitions) but the asked index,
/// its leaves and the partitioned indexes it is a leaf of; a constraint's index by dropping the
/// constraint; with `keep`, that other index of the table (and its leaves) stays too. Returns
/// the names dropped.
async fn drop_rivals(c: &Client, ask: &Ask, keep: Option<&str>) -> Result<Vec<String>, Trouble> {
    let failed = |e: tokio_postgres::Error| Trouble::of(Step::Rivals, &e);
    let rows = c
        .query(
            "WITH asked AS (SELECT pg_catalog.to_regclass(pg_catalog.format('%I.%I', $1::text, \
                                                                             $2::text)) AS oid), \
                  tab AS (SELECT i.indrelid AS oid FROM pg_catalog.pg_index i, asked \
                          WHERE i.indexrelid OPERATOR(pg_catalog.=) asked.oid), \
                  tables AS (SELECT t.relid FROM pg_catalog.pg_partition_tree((SELECT oid FROM tab)) t \
                             UNION SELECT oid FROM tab), \
                  keep AS (SELECT t.relid FROM pg_catalog.pg_partition_tree((SELECT oid FROM asked)) t \
                           UNION SELECT a.relid \
                             FROM pg_catalog.pg_partition_ancestors((SELECT oid FROM asked)) a \
                           UNION SELECT oid FROM asked \
                           UNION SELECT t.relid FROM pg_catalog.pg_partition_tree(\
                               pg_catalog.to_regclass(pg_catalog.format('%I.%I', $1::text, \
                                                                        $3::text))) t \
                             WHERE $3::text IS NOT NULL \
                           UNION SELECT pg_catalog.to_regclass(pg_catalog.format('%I.%I', \
                                                                    $1::text, $3::text)) \
                             WHERE $3::text IS NOT NULL), \
                  rivals AS (SELECT c.oid, c.relname::text AS name, \
                                    COALESCE(pg_catalog.pg_partition_root(c.oid), c.oid) AS root \
                             FROM pg_catalog.pg_index i \
                             JOIN tables ON i.indrelid OPERATOR(pg_catalog.=) tables.relid \
                             JOIN pg_catalog.pg_class c \
                               ON c.oid OPERATOR(pg_catalog.=) i.indexrelid \
                             WHERE c.oid NOT IN (SELECT relid FROM keep)) \
             SELECT (SELECT pg_catalog.array_agg(r.name ORDER BY r.name) FROM rivals r), \
                    (SELECT pg_catalog.array_agg(DISTINCT \
                        CASE WHEN con.conname IS NOT NULL \
                             THEN pg_catalog.format('ALTER TABLE %I.%I DROP CONSTRAINT IF EXISTS %I CASCADE', \
                                                    tn.nspname, t.relname, con.conname) \
                             ELSE pg_catalog.format('DROP INDEX IF EXISTS %I.%I CASCADE', \
                                                    n.nspname, c.relname) END) \
                     FROM rivals r \
                     JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.root \
                     JOIN pg_catalog.pg_namespace n \
                       ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                     JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) c.oid \
                     JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) i.indrelid \
                     JOIN pg_catalog.pg_namespace tn \
                       ON tn.oid OPERATOR(pg_catalog.=) t.relnamespace \
                     LEFT JOIN pg_catalog.pg_constraint con \
                          ON con.conindid OPERATOR(pg_catalog.=) c.oid \
                          AND con.conrelid OPERATOR(pg_catalog.=) t.oid \
                          AND con.contype IN ('p', 'u', 'x')), \
                    (SELECT oid FROM asked) IS NOT NULL",
            &[&ask.schema, &ask.index, &keep],
        )
        .await
        .map_err(failed)?;
    let row = rows.first().ok_or(Trouble::NoRivalAnswer)?;
    if !row.get::<_, bool>(2) {
        return Err(Trouble::IndexNotOnCopy(ask.shown.clone()));
    }
    let names: Vec<String> = row.get::<_, Option<Vec<String>>>(0).unwrap_or_default();
    let statements: Vec<String> = row.get::<_, Option<Vec<String>>>(1).unwrap_or_default();
    for s in &statements {
        c.execute(s.as_str(), &[]).await.map_err(failed)?;
    }
    Ok(names)
}

/// The other indexes of the asked index's table (not of its partitions: a partitioned
/// table's own indexes stand for theirs), by name; and every name a plan may read the asked
/// index by (a partitioned index's leaves too).
async fn siblings(c: &Client, ask: &Ask) -> Result<(Vec<String>, Vec<String>), Trouble> {
    let rows = c
        .query(
            "WITH asked AS (SELECT pg_catalog.to_regclass(pg_catalog.format('%I.%I', $1::text, \
                                                                             $2::text)) AS oid) \
             SELECT (SELECT pg_catalog.array_agg(c.relname::text ORDER BY c.relname) \
                     FROM pg_catalog.pg_index i, pg_catalog.pg_index a, asked, pg_catalog.pg_class c \
                     WHERE a.indexrelid OPERATOR(pg_catalog.=) asked.oid \
                       AND i.indrelid OPERATOR(pg_catalog.=) a.indrelid \
                       AND i.indexrelid OPERATOR(pg_catalog.<>) asked.oid \
                       AND c.oid OPERATOR(pg_catalog.=) i.indexrelid), \
                    (SELECT pg_catalog.array_agg(c.relname::text) \
                     FROM pg_catalog.pg_partition_tree((SELECT oid FROM asked)) t \
                     JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid)",
            &[&ask.schema, &ask.index],
        )
        .await
        .map_err(|e| Trouble::of(Step::Rivals, &e))?;
    let row = rows.first().ok_or(Trouble::NoRivalAnswer)?;
    let others: Vec<String> = row.get::<_, Option<Vec<String>>>(0).unwrap_or_default();
    let mut own: Vec<String> = row.get::<_, Option<Vec<String>>>(1).unwrap_or_default();
    if !own.contains(&ask.index) {
        own.push(ask.index.clone());
    }
    Ok((others, own))
}

/// The server's name for the statement just prepared from `text` at the protocol level.
async fn protocol_name(c: &Client, text: &str) -> Result<String, Trouble> {
    let rows = c
        .query(crate::db::check::PREPARED, &[])
        .await
        .map_err(|e| Trouble::of(Step::Prepare, &e))?;
    crate::db::check::prepared_name(&rows, text).ok_or(Trouble::PreparedNotListed)
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
    cache::Entry::for_copy(&folder, bin, &crate::server::initdb_args(bin), &text).ok()
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
                role: None,
                order: 0,
            },
            Unit {
                key: "b table".into(),
                rank: 40,
                sql: "CREATE TABLE".into(),
                role: None,
                order: 0,
            },
        ]);
        let request = Request {
            production: vec![],
            declared: vec![],
            through: None,
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
        // The exact commands that install them, and where they land for PLANCHECK_PG_BIN.
        assert!(
            why.contains("sudo apt-get install -y postgresql-99`"),
            "{why}"
        );
        assert!(
            why.contains("PLANCHECK_PG_BIN=/usr/lib/postgresql/99/bin;"),
            "{why}"
        );
        assert!(why.contains("`brew install postgresql@99`"), "{why}");
    }

    #[test]
    fn identifiers_are_always_quoted() {
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn the_copy_keeps_its_own_roles_and_postgresql_s() {
        for name in [
            SUPERUSER,
            OWNER,
            READER,
            "plancheck_probe_1",
            "pg_execute_server_program",
            "pg_read_server_files",
        ] {
            assert!(reserved_role(name), "{name}");
        }
        for name in ["moderator", "app_member", "plancheck_check", "Pg_x"] {
            assert!(!reserved_role(name), "{name}");
        }
    }

    #[test]
    fn the_whole_load_is_bounded_by_a_minute_or_four_statement_timeouts() {
        assert_eq!(load_bound(Duration::from_secs(1)), Duration::from_secs(60));
        assert_eq!(
            load_bound(Duration::from_secs(30)),
            Duration::from_secs(120)
        );
    }
}
