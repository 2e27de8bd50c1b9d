//! What the throwaway servers (`crate::server`) say: why one could not be made, started or
//! cached, and where it came from.

use std::fmt::Display;
use std::path::Path;
use std::process::ExitStatus;

pub const NO_BINARIES: &str = "no PostgreSQL server binaries found (looked at PLANCHECK_PG_BIN, \
     the PATH, pg_config --bindir and /usr/lib/postgresql/*/bin): install the PostgreSQL server \
     (Debian: apt-get install postgresql) or set PLANCHECK_PG_BIN";
pub const NO_CACHE_FOLDER: &str =
    "no cache folder: HOME, XDG_CACHE_HOME and PLANCHECK_CACHE_DIR are unset";

pub fn no_folder(base: &Path, e: &dyn Display) -> String {
    format!("cannot create a folder in {}: {e}", base.display())
}

pub fn not_handed(dir: &Path, e: &dyn Display) -> String {
    format!("cannot hand {} to the server user: {e}", dir.display())
}

/// A file or folder's failure, after its path.
pub fn at(path: &Path, e: &dyn Display) -> String {
    format!("{}: {e}", path.display())
}

pub fn cannot_run(program: &Path, e: &dyn Display) -> String {
    format!("cannot run {}: {e}", program.display())
}

pub fn initdb_failed(status: &ExitStatus, stderr: &str) -> String {
    format!("initdb failed ({status}): {stderr}")
}

pub fn configuration_unwritten(name: &str, data: &Path, e: &dyn Display) -> String {
    format!(
        "cannot write the server's {name} in {}: {e}",
        data.display()
    )
}

pub fn no_log(e: &dyn Display) -> String {
    format!("cannot create the server log: {e}")
}

pub fn log(e: &dyn Display) -> String {
    format!("server log: {e}")
}

pub fn cannot_start(program: &Path, e: &dyn Display) -> String {
    format!("cannot start {}: {e}", program.display())
}

pub fn unclean_shutdown(status: Option<ExitStatus>) -> String {
    format!("the server did not shut down cleanly ({status:?})")
}

/// The server exited before it took connections; `log` is the end of its log.
pub fn exited(status: &ExitStatus, log: &str) -> String {
    format!("the throwaway server exited ({status}) before accepting connections: {log}")
}

pub fn not_ready(log: &str) -> String {
    format!("the throwaway server did not accept connections within 60 s: {log}")
}

pub fn no_server_user(wanted: &[String]) -> String {
    format!(
        "running as root, and none of the users {} exists to run PostgreSQL as (it refuses to \
         run as root); set PLANCHECK_PG_USER to an unprivileged user",
        wanted.join(", ")
    )
}

pub fn not_binaries(dir: &Path) -> String {
    format!(
        "PLANCHECK_PG_BIN={} holds no initdb and postgres",
        dir.display()
    )
}

pub fn docker_fell_back(e: &dyn Display) -> String {
    format!("{e}; using local server binaries instead")
}

pub fn untrusted_cache(e: &dyn Display) -> String {
    format!("{e}; plancheck uses a cache folder only its own user may write")
}

pub fn unnamed_entry(e: &dyn Display) -> String {
    format!("cannot name the cache entry: {e}")
}

pub fn cache_unusable(e: &dyn Display) -> String {
    format!("the cached board cannot be used ({e}); building it again")
}

pub fn board_not_cached(path: &Path, e: &dyn Display) -> String {
    format!(
        "warning: could not cache the board at {}: {e}",
        path.display()
    )
}

pub fn copy_not_cached(path: &Path, e: &dyn Display) -> String {
    format!(
        "note: the scratch copy was not cached at {}: {e}",
        path.display()
    )
}

pub fn docker_failed(what: &str, e: &dyn Display) -> String {
    format!("the Docker provider could not {what}: {e}")
}

pub fn docker_origin(tag: &str) -> String {
    format!("a throwaway PostgreSQL container (postgres:{tag})")
}

pub fn local_origin(bin: &Path) -> String {
    format!("a throwaway PostgreSQL from {}", bin.display())
}
