//! db: everything that talks to PostgreSQL: connecting, running a check in its read-only
//! transaction, loading the reference board, the throwaway server of `plancheck demo`, and the
//! scratch copy that settles whether an index can serve a read path.

/// Whether the planner has statistics for table `c` (a `pg_class` row, `n` its namespace), as
/// SQL: `pg_stats` shows it some, or the statistics collector recorded an `ANALYZE` of it. Where
/// `pg_stats` cannot tell (row-level security hides the table's rows from the role, or the role
/// may read none of its columns), a size the planner did not have to guess stands for them:
/// `reltuples` of 0 or more from PostgreSQL 14 (-1 is "never vacuumed nor analysed"), more than
/// 0 before (0 was both). The collector's record alone is lost with a crash and is not copied
/// with a template database; the catalog's is.
macro_rules! ever_analysed_sql {
    () => {
        "(EXISTS (SELECT 1 FROM pg_catalog.pg_stats s \
                  WHERE s.schemaname OPERATOR(pg_catalog.=) n.nspname \
                    AND s.tablename OPERATOR(pg_catalog.=) c.relname) \
          OR EXISTS (SELECT 1 FROM pg_catalog.pg_stat_all_tables a \
                     WHERE a.relid OPERATOR(pg_catalog.=) c.oid \
                       AND (a.last_analyze IS NOT NULL OR a.last_autoanalyze IS NOT NULL)) \
          OR ((pg_catalog.row_security_active(c.oid) \
               OR NOT pg_catalog.has_any_column_privilege(c.oid, 'SELECT')) \
              AND (c.reltuples OPERATOR(pg_catalog.>) 0 \
                   OR (c.reltuples OPERATOR(pg_catalog.=) 0 \
                       AND pg_catalog.current_setting('server_version_num')::pg_catalog.int4 \
                           OPERATOR(pg_catalog.>=) 140000))))"
    };
}
pub(crate) use ever_analysed_sql;

pub mod catalog;
pub mod check;
pub mod conninfo;
pub mod counts;
pub mod fixtures;
pub mod guard;
pub mod ladder;
pub mod migrate;
pub mod pool;
pub mod preflight;
pub mod role;
pub mod scratch;
pub mod stats;
pub mod tls;
pub mod wire;

pub use preflight::{server_major, server_version};

use tokio_postgres::{Client, Config, config::Host as PgHost};

use crate::error::{BadInput, DatabaseFailure};
use conninfo::{ConnInfo, Environment, Host, HostSpec, ProcessEnv, Secret, SslMode};

/// How to reach the database, resolved the libpq way (see [`conninfo`] for the precedence and
/// [`tls`] for what each sslmode does). Neither `Debug` nor any error shows the password.
#[derive(Clone)]
pub struct Target {
    info: ConnInfo,
    /// No connection string was given: the `PG*` variables and libpq's defaults chose it all.
    from_defaults: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Target({}, sslmode={})",
            self.describe(),
            self.info.sslmode
        )
    }
}

impl Target {
    /// Reads a URL (`postgresql://…`) or a key=value connection string, then applies the `PG*`
    /// environment variables, the password file and libpq's defaults to what it leaves unset.
    pub fn parse(text: &str) -> Result<Target, BadInput> {
        Target::resolve(Some(text))
    }

    /// As [`Target::parse`]; with no string, the environment and the defaults alone decide.
    pub fn resolve(text: Option<&str>) -> Result<Target, BadInput> {
        Target::resolve_with(text, &ProcessEnv)
    }

    /// As [`Target::resolve`], against a given environment instead of the process's.
    pub fn resolve_with(text: Option<&str>, env: &dyn Environment) -> Result<Target, BadInput> {
        Ok(Target {
            info: conninfo::resolve(text, env)?,
            from_defaults: text.is_none(),
        })
    }

    /// Takes a tokio-postgres configuration as it is: no environment variable, password file or
    /// home-folder certificate is consulted. Its `ssl_mode` maps to the sslmode of the same name;
    /// application_name defaults to `plancheck` and connect_timeout to 10 s.
    pub fn from_config(config: Config) -> Target {
        let ports = config.get_ports();
        let port_of = |i: usize| {
            ports
                .get(i)
                .or(ports.first())
                .copied()
                .unwrap_or(conninfo::DEFAULT_PORT)
        };
        let password = config
            .get_password()
            .map(|p| Secret::new(String::from_utf8_lossy(p)));
        let addrs = config.get_hostaddrs();
        let count = config.get_hosts().len().max(addrs.len()).max(1);
        let hosts = (0..count)
            .map(|i| {
                let hostaddr = addrs.get(i).copied();
                let host = match config.get_hosts().get(i) {
                    Some(PgHost::Tcp(name)) => Some(Host::Tcp(name.clone())),
                    Some(PgHost::Unix(dir)) => Some(Host::Unix(dir.clone())),
                    None if hostaddr.is_some() => None,
                    None => Some(Host::Tcp("localhost".into())),
                };
                HostSpec {
                    host,
                    hostaddr,
                    port: port_of(i),
                    password: password.clone(),
                }
            })
            .collect();
        let user = config.get_user().unwrap_or("postgres").to_string();
        let sslmode = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Disable => SslMode::Disable,
            tokio_postgres::config::SslMode::Require => SslMode::Require,
            _ => SslMode::Prefer,
        };
        Target {
            info: ConnInfo {
                hosts,
                dbname: config.get_dbname().unwrap_or(&user).to_string(),
                user,
                sslmode,
                sslrootcert: None,
                sslrootcert_exists: false,
                sslcert: None,
                sslkey: None,
                connect_timeout: Some(
                    config
                        .get_connect_timeout()
                        .copied()
                        .unwrap_or(conninfo::DEFAULT_CONNECT_TIMEOUT),
                ),
                application_name: config
                    .get_application_name()
                    .unwrap_or(conninfo::DEFAULT_APPLICATION_NAME)
                    .to_string(),
                options: config.get_options().map(str::to_string),
            },
            from_defaults: false,
        }
    }

    /// What must never be shown of this connection ([`crate::secrets`]): the password of each
    /// server it may use, and `given` (the connection string it was resolved from) with the
    /// password as written in it, when it holds one.
    pub fn secrets<'a>(&'a self, given: Option<&'a str>) -> Vec<&'a str> {
        let mut out: Vec<&str> = self
            .info
            .hosts
            .iter()
            .filter_map(|h| h.password.as_ref().map(Secret::expose))
            .collect();
        if let Some(text) = given
            && conninfo::parse(text).is_ok_and(|s| s.get("password").is_some())
        {
            out.push(text);
            out.extend(crate::secrets::url_password(text));
        }
        out
    }

    /// Every resolved setting (`Debug` hides the password).
    pub fn conninfo(&self) -> &ConnInfo {
        &self.info
    }

    /// `host:port` (or the socket folder) and database, for messages. Never the password.
    pub fn describe(&self) -> String {
        let hosts: Vec<String> = self
            .info
            .hosts
            .iter()
            .map(|h| {
                let host = match (&h.host, h.hostaddr) {
                    (Some(Host::Tcp(name)), _) => name.clone(),
                    (Some(Host::Unix(dir)), _) => dir.display().to_string(),
                    (None, Some(addr)) => addr.to_string(),
                    (None, None) => "localhost".to_string(),
                };
                format!("{host}:{}", h.port)
            })
            .collect();
        format!("{}/{}", hosts.join(","), self.info.dbname)
    }

    /// Opens a session: each host in turn, with TLS as the sslmode says. Failure is a
    /// [`DatabaseFailure`] naming each host and port tried and the cause.
    pub async fn connect(&self) -> Result<Client, DatabaseFailure> {
        let mut tried = Vec::new();
        for host in &self.info.hosts {
            match tls::connect_host(&self.info, host).await {
                Ok(client) => return Ok(client),
                Err(cause) => tried.push((host.describe(), cause)),
            }
        }
        Err(NotConnected {
            tried,
            chosen_by_defaults: self.from_defaults.then(|| self.describe()),
        }
        .into())
    }
}

/// Why no session could be opened: data, worded by `report::connect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotConnected {
    /// Each host and port tried, and why it failed.
    pub tried: Vec<(String, String)>,
    /// What the PG* variables and libpq's defaults chose, when no URL was given.
    pub chosen_by_defaults: Option<String>,
}

/// What was asked of the server when it failed to answer: data, worded by `report::failure`
/// (`could not read the catalog: …`), so `db` writes no sentence of its own here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    ServerVersionNum,
    ServerVersion,
    ServerSettings,
    Catalog,
    FreeSlots,
    ServerState,
    RoleRights,
    /// The migration's steps, in their order.
    BeginMigration,
    ListTables,
    CreateExecutor,
    SessionSettings,
    ReadExecutor,
    Sequences,
    RequiredIndexes,
    ReadOnlyMigrated,
    RestoreSession,
    SessionSettingsAndSequences,
    MigrationChanges,
    /// `ANALYZE` of this table.
    Analyze(String),
    /// The start of `fixtures load`.
    StartLoad,
    SessionTimeouts,
    TempFileLimit,
    /// A check's steps.
    CalledFunctions,
    BeginCheck,
    ParseReadPath,
    PreparedStatements,
    Volatility,
    PlanCacheMode,
    Replan,
    /// The required index of this name.
    LookUpIndex(String),
    ListIndexes,
    /// The partitions of this index.
    Partitions(String),
    /// The other indexes on this table.
    OtherIndexes(String),
    /// The columns of this table.
    Columns(String),
    RelationStatistics,
    /// Whether the policies of the tables the plans read apply to the check's reader.
    RowSecurity,
    /// The server's `track_counts`, before the checks.
    TrackCounts,
    /// PostgreSQL's counts of what a check's runs read, and the names of the tables counted.
    ReadCounts,
    ScratchDefinitions,
    ScratchNames,
    ScratchSearchPath,
    ScratchIndexes,
    ScratchRls,
    ScratchPlannerSettings,
    BeginReplan,
    ReplanSettings,
    RollbackReplan,
    RivalAside,
    /// `--replan-without-rivals`: setting this index aside with this statement.
    SetRivalAside {
        index: String,
        statement: String,
    },
    /// `stats export`'s steps.
    BeginExport,
    RollbackExport,
    ExportTables,
    ExportSizes,
    ExportIndexes,
    ExportColumns,
    ExportExtended,
    ExportHeights,
    ExportEnds,
    /// The read path in this plan file.
    ReadPath(String),
    /// Setup statement `n` (from 1) of a scope.
    SetupStatement {
        scope: String,
        n: usize,
    },
    /// A scope's planner setting `name = value`, written in this expectation file.
    ScopeSetting {
        file: String,
        scope: String,
        name: String,
        value: String,
    },
    /// A scope's parameter values, written in this expectation file.
    ParameterValues {
        file: String,
        scope: String,
    },
}

/// The server's failure to answer what was [`Asked`], in its own words ([`cause`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswered {
    pub asked: Asked,
    pub cause: String,
}

impl Unanswered {
    pub fn of(asked: Asked, e: &tokio_postgres::Error) -> Unanswered {
        Unanswered {
            asked,
            cause: cause(e),
        }
    }
}

/// The most specific sentence an error carries: the server's message, or the I/O cause.
pub fn cause(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = s.to_string();
        source = s.source();
    }
    text
}
