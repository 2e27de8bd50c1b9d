//! The throwaway PostgreSQL of `plancheck demo` (and of the tests): `initdb` into a private
//! temporary folder, `postgres` listening only on a Unix socket inside it, everything removed
//! when the [`Server`] is dropped (on success, on error, and on Ctrl-C, because `main` drops the
//! running future when the signal wins the race).
//!
//! PostgreSQL refuses to run as root. When plancheck runs as root, the server processes run as
//! an unprivileged user (`PLANCHECK_PG_USER`, else `postgres`, else `nobody`) who owns the folder.
//!
//! `plancheck demo` may start the server on a copy of a cached, loaded board instead of a new
//! cluster ([`cache`]; [`Server::start_with`], [`Server::save_board`]).
//!
//! Server binaries are found, in order: `PLANCHECK_PG_BIN`; `initdb` on the PATH;
//! `pg_config --bindir`; the newest `/usr/lib/postgresql/*/bin`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::Config;

use super::Target;
use crate::errors::DatabaseFailure;

pub mod cache;

/// A running throwaway server. Dropping it stops the server and removes its files.
pub struct Server {
    dir: PathBuf,
    child: Option<Child>,
    port: u16,
    /// The folder holding the server binaries used.
    pub bin: PathBuf,
    /// When running as root: the unprivileged (uid, gid) the server runs as.
    owner: Option<(u32, u32)>,
    /// Server settings given beyond the throwaway board's own (`-c name=value`).
    extra: Vec<String>,
}

const SUPERUSER: &str = "plancheck";

/// The options the cluster is initialised with (also part of a cached board's name: a change
/// here is a different board).
pub const INITDB_ARGS: [&str; 8] = [
    "-U",
    SUPERUSER,
    "-A",
    "trust",
    "-E",
    "UTF8",
    "--locale=C",
    "--no-sync",
];

impl Server {
    /// Finds server binaries, initialises a cluster and starts it. Blocks until the server
    /// accepts connections.
    pub async fn start() -> Result<Server, DatabaseFailure> {
        Server::start_with(find_bin_dir()?, None).await
    }

    /// Starts a server from the binaries in `bin`: on a new cluster, or, `from` a cached board,
    /// on a copy of its data folder (checked against the entry's manifest as it is copied).
    /// Blocks until the server accepts connections. On any failure the folder is removed.
    pub async fn start_with(
        bin: PathBuf,
        from: Option<&cache::Entry>,
    ) -> Result<Server, DatabaseFailure> {
        Server::start_with_settings(bin, from, &[]).await
    }

    /// [`Server::start_with`], with server `settings` beyond the board's own (a server that
    /// logs every statement, for `capture`): relative paths in them are inside the data folder.
    pub async fn start_with_settings(
        bin: PathBuf,
        from: Option<&cache::Entry>,
        settings: &[(&str, &str)],
    ) -> Result<Server, DatabaseFailure> {
        let mut server = Server::make_folder(bin)?;
        server.extra = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        match from {
            None => server.initdb()?,
            Some(entry) => server.restore(entry)?,
        }
        server.spawn()?;
        server.wait_ready().await?;
        Ok(server)
    }

    /// The private folder (mode 0700, owned by the server user), as a server not yet started.
    fn make_folder(bin: PathBuf) -> Result<Server, DatabaseFailure> {
        let owner = server_user()?;
        let base = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix("plancheck-")
            .tempdir_in(&base)
            .map_err(|e| {
                DatabaseFailure(format!("cannot create a folder in {}: {e}", base.display()))
            })?
            .keep();
        // From here on, dropping the server removes the folder.
        let server = Server {
            dir: dir.clone(),
            child: None,
            port: 5432,
            bin,
            owner,
            extra: Vec::new(),
        };
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| {
                DatabaseFailure(format!(
                    "cannot hand {} to the server user: {e}",
                    dir.display()
                ))
            })?;
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| DatabaseFailure(format!("{}: {e}", dir.display())))?;
        Ok(server)
    }

    /// The cluster's data folder.
    /// The data folder (a relative `log_directory` is inside it).
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn initdb(&self) -> Result<(), DatabaseFailure> {
        let initdb = run_as(&self.bin.join("initdb"), self.owner)
            .arg("-D")
            .arg(self.data())
            .args(INITDB_ARGS)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                DatabaseFailure(format!(
                    "cannot run {}: {e}",
                    self.bin.join("initdb").display()
                ))
            })?;
        if !initdb.status.success() {
            return Err(DatabaseFailure(format!(
                "initdb failed ({}): {}",
                initdb.status,
                String::from_utf8_lossy(&initdb.stderr).trim()
            )));
        }
        Ok(())
    }

    /// The data folder as a copy of a cached board's, owned by the server user, mode 0700 (the
    /// server refuses a data folder that is not its user's or that others may read).
    fn restore(&self, entry: &cache::Entry) -> Result<(), DatabaseFailure> {
        let data = self.data();
        let copied = fs::create_dir(&data)
            .and_then(|()| fs::set_permissions(&data, fs::Permissions::from_mode(0o700)))
            .and_then(|()| match self.owner {
                Some((uid, gid)) => std::os::unix::fs::chown(&data, Some(uid), Some(gid)),
                None => Ok(()),
            })
            .and_then(|()| entry.restore(&data, self.owner));
        copied.map_err(|e| DatabaseFailure(format!("{}: {e}", entry.path.display())))
    }

    /// Starts `postgres` on the data folder (again, after [`Server::save_board`]).
    fn spawn(&mut self) -> Result<(), DatabaseFailure> {
        let log_path = self.dir.join("server.log");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| DatabaseFailure(format!("cannot create the server log: {e}")))?;
        if let Some((uid, gid)) = self.owner {
            let _ = std::os::unix::fs::chown(&log_path, Some(uid), Some(gid));
        }
        let log_err = log
            .try_clone()
            .map_err(|e| DatabaseFailure(format!("server log: {e}")))?;
        let mut cmd = run_as(&self.bin.join("postgres"), self.owner);
        cmd.arg("-D")
            .arg(self.data())
            .arg("-k")
            .arg(&self.dir)
            .args(["-p", &self.port.to_string()])
            // Only the private socket: nothing listens on the network.
            .args(["-c", "listen_addresses="])
            // A throwaway board: durability buys nothing and costs load time.
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .args(["-c", "synchronous_commit=off", "-c", "max_wal_size=4GB"])
            .args([
                "-c",
                "maintenance_work_mem=512MB",
                "-c",
                "shared_buffers=256MB",
            ])
            .args(["-c", "max_connections=30"])
            .args(self.extra.iter().flat_map(|setting| ["-c", setting]))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            // Its own process group: a Ctrl-C at the terminal reaches plancheck, which stops the
            // server in order, instead of reaching the server directly.
            .process_group(0);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                // If plancheck dies without dropping the Server (SIGKILL), the server goes too.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| {
            DatabaseFailure(format!(
                "cannot start {}: {e}",
                self.bin.join("postgres").display()
            ))
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// Saves the loaded board as `entry`: stops the server cleanly (a fast shutdown ends with a
    /// checkpoint, so the data folder is whole on its own), copies its data folder into the
    /// cache, and starts the server again on the same folder. The outer error is the server not
    /// coming back; the inner one, the board not saved (the demo goes on without it).
    pub async fn save_board(
        &mut self,
        entry: &cache::Entry,
    ) -> Result<std::io::Result<()>, DatabaseFailure> {
        let saved = match self.halt(Duration::from_secs(60)) {
            Some(status) if status.success() && !self.data().join("postmaster.pid").exists() => {
                entry.save(&self.data())
            }
            other => Err(std::io::Error::other(format!(
                "the server did not shut down cleanly ({other:?})"
            ))),
        };
        self.spawn()?;
        self.wait_ready().await?;
        Ok(saved)
    }

    async fn wait_ready(&mut self) -> Result<(), DatabaseFailure> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let target = self.target("postgres");
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(DatabaseFailure(format!(
                    "the throwaway server exited ({status}) before accepting connections: {}",
                    self.log_tail()
                )));
            }
            if let Ok(client) = target.connect().await
                && client.simple_query("SELECT 1").await.is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(DatabaseFailure(format!(
                    "the throwaway server did not accept connections within 60 s: {}",
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(5).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" / ")
    }

    /// A connection target for a database on this server.
    pub fn target(&self, dbname: &str) -> Target {
        let mut config = Config::new();
        config
            .host_path(&self.dir)
            .port(self.port)
            .user(SUPERUSER)
            .dbname(dbname);
        Target::from_config(config)
    }

    /// A libpq key=value connection string for a database on this server.
    pub fn connection_string(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user={SUPERUSER} dbname={dbname}",
            self.dir.display(),
            self.port
        )
    }

    /// The postmaster's process id, while it runs (the fault tests kill it).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the server (fast shutdown, then kill) and removes its folder.
    pub fn stop(&mut self) {
        self.halt(Duration::from_secs(15));
        let _ = fs::remove_dir_all(&self.dir);
    }

    /// Asks the postmaster for a fast shutdown and waits for it to exit, killing it after
    /// `patience`. Its exit status, when it exited by itself.
    fn halt(&mut self, patience: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let pid = child.id() as libc::pid_t;
        // SAFETY: signalling our own child process.
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
        let deadline = Instant::now() + patience;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Err(_) => return None,
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run_as(program: &Path, owner: Option<(u32, u32)>) -> Command {
    let mut cmd = Command::new(program);
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid);
        // The unprivileged user cannot read root's home; run from a neutral folder.
        cmd.current_dir("/");
        cmd.env_remove("HOME");
    }
    cmd
}

/// When running as root: the unprivileged user (uid, gid) to run the server as.
fn server_user() -> Result<Option<(u32, u32)>, DatabaseFailure> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    let wanted: Vec<String> = match std::env::var("PLANCHECK_PG_USER") {
        Ok(u) if !u.is_empty() => vec![u],
        _ => vec!["postgres".into(), "nobody".into()],
    };
    for name in &wanted {
        for line in passwd.lines() {
            let fields: Vec<&str> = line.split(':').collect();
            if fields.len() >= 4
                && fields[0] == name
                && let (Ok(uid), Ok(gid)) = (fields[2].parse(), fields[3].parse())
                && uid != 0
            {
                return Ok(Some((uid, gid)));
            }
        }
    }
    Err(DatabaseFailure(format!(
        "running as root, and none of the users {} exists to run PostgreSQL as (it refuses to run \
         as root); set PLANCHECK_PG_USER to an unprivileged user",
        wanted.join(", ")
    )))
}

/// The folder holding `initdb` and `postgres`.
pub fn find_bin_dir() -> Result<PathBuf, DatabaseFailure> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Ok(dir) = std::env::var("PLANCHECK_PG_BIN") {
        let dir = PathBuf::from(dir);
        if has_server(&dir) {
            return Ok(dir);
        }
        return Err(DatabaseFailure(format!(
            "PLANCHECK_PG_BIN={} holds no initdb and postgres",
            dir.display()
        )));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has_server(&dir) {
                return Ok(dir);
            }
        }
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_server(&dir) {
            return Ok(dir);
        }
    }
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            has_server(&bin).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, dir)| dir).ok_or_else(|| {
        DatabaseFailure(
            "no PostgreSQL server binaries found (looked at PLANCHECK_PG_BIN, the PATH, \
             pg_config --bindir and /usr/lib/postgresql/*/bin): install the PostgreSQL server \
             (Debian: apt-get install postgresql) or set PLANCHECK_PG_BIN"
                .into(),
        )
    })
}
