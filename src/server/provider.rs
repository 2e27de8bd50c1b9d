//! Where the throwaway PostgreSQL of `plancheck demo` comes from. In a build with the `docker`
//! feature, where a Docker engine answers, testcontainers serves it (the official image, major
//! version pinned); where none does, and in a build without the feature (the default: the
//! Docker client is a hundred crates no machine here can use), the local server binaries do
//! ([`super`]), without a word about Docker.
//!
//! `PLANCHECK_PG_BIN` set means "these binaries", so it chooses the local provider.
//!
//! The local provider keeps the loaded board between demos ([`super::cache`]): a
//! hit starts the server on a copy of it, a miss asks the caller to load the board and save it.
//! A cached board that cannot be used is never the demo's failure: it is said, and the board is
//! built again and replaces it. A cache folder writable by others than its owner, or owned by
//! another user, is neither read nor written: said, and the demo builds its board uncached. The
//! Docker provider always loads the board.

use std::time::Duration;

#[cfg(feature = "docker")]
use testcontainers_modules::postgres::Postgres;
#[cfg(feature = "docker")]
use testcontainers_modules::testcontainers::runners::AsyncRunner;
#[cfg(feature = "docker")]
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};
#[cfg(feature = "docker")]
use tokio_postgres::Config;

use super::{self as ephemeral, Server, cache};
use crate::db::Target;
use crate::error::DatabaseFailure;
use crate::report::server as words;

/// The image the Docker provider runs: pinned, never the module's end-of-life default.
pub const IMAGE_TAG: &str = "17-alpine";

/// Which provider to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Docker where an engine answers (and PLANCHECK_PG_BIN is not set), else local binaries.
    Auto,
    /// Local server binaries.
    Local,
    /// A container, through a Docker engine.
    Docker,
}

/// A running throwaway server from either provider. Dropping it stops and removes it.
pub enum Throwaway {
    Local(Server),
    #[cfg(feature = "docker")]
    Docker {
        container: Box<ContainerAsync<Postgres>>,
        host: String,
        port: u16,
    },
}

/// How the reference board gets onto a throwaway server.
#[derive(Debug)]
pub enum Board {
    /// The server runs on a copy of the cached board saved here: nothing to load.
    Cached(std::path::PathBuf),
    /// The board is to be loaded; then, with an entry, saved there for next time
    /// ([`Throwaway::save_board`]). `not_cached` says why there is no entry, where a user
    /// would want to know (not for a container).
    Load {
        save: Option<cache::Entry>,
        not_cached: Option<String>,
    },
}

impl Throwaway {
    /// Starts a server from the chosen provider for the board at `scale`, and says where it
    /// came from. From local binaries, a cached board (unless `fresh`) is used when it is whole.
    // Long because it is the providers in the order `auto` tries them, each with its fallback.
    pub async fn start(
        provider: Provider,
        scale: f64,
        fresh: bool,
    ) -> Result<(Throwaway, String, Board), DatabaseFailure> {
        let docker = match provider {
            Provider::Local => false,
            Provider::Docker => true,
            Provider::Auto => {
                cfg!(feature = "docker")
                    && std::env::var_os("PLANCHECK_PG_BIN").is_none()
                    && docker_engine_answers().await
            }
        };
        if docker {
            match start_container().await {
                Ok(t) => {
                    let board = Board::Load {
                        save: None,
                        not_cached: None,
                    };
                    return Ok((t, words::docker_origin(IMAGE_TAG), board));
                }
                Err(e) if provider == Provider::Docker => return Err(e),
                Err(e) => crate::term::say!("{}", words::docker_fell_back(&e)),
            }
        }
        let bin = ephemeral::find_bin_dir()?;
        let entry = match cache::folder() {
            None => Err(words::NO_CACHE_FOLDER.into()),
            // A cache folder someone else may write is not read from nor written to.
            Some(folder) => match cache::trusted(&folder) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(words::untrusted_cache(&e))
                }
                _ => cache::Entry::new(&folder, &bin, scale, &ephemeral::initdb_args(&bin))
                    .map_err(|e| words::unnamed_entry(&e)),
            },
        };
        let (server, board) = match entry {
            Err(why) => (
                Server::start_with(bin, None).await?,
                Board::Load {
                    save: None,
                    not_cached: Some(why),
                },
            ),
            Ok(entry) => {
                let cached = if fresh || !entry.exists() {
                    None
                } else {
                    match Server::start_with(bin.clone(), Some(&entry)).await {
                        Ok(server) => Some(server),
                        Err(e) => {
                            crate::term::say!("{}", words::cache_unusable(&e));
                            None
                        }
                    }
                };
                match cached {
                    Some(server) => (server, Board::Cached(entry.path)),
                    None => (
                        Server::start_with(bin, None).await?,
                        Board::Load {
                            save: Some(entry),
                            not_cached: None,
                        },
                    ),
                }
            }
        };
        let origin = words::local_origin(&server.bin);
        Ok((Throwaway::Local(server), origin, board))
    }

    /// Saves the board just loaded as `entry` (a local server only: it stops, is copied and
    /// starts again). A board not saved is said and is no failure; a server that does not come
    /// back is.
    pub async fn save_board(&mut self, entry: &cache::Entry) -> Result<(), DatabaseFailure> {
        if let Throwaway::Local(server) = self
            && let Err(e) = server.save_board(entry).await?
        {
            crate::term::say!("{}", words::board_not_cached(&entry.path, &e));
        }
        Ok(())
    }

    /// A connection target for a database on the server.
    pub fn target(&self, dbname: &str) -> Target {
        match self {
            Throwaway::Local(server) => server.target(dbname),
            #[cfg(feature = "docker")]
            Throwaway::Docker { host, port, .. } => {
                let mut config = Config::new();
                config
                    .host(host)
                    .port(*port)
                    .user("postgres")
                    .password("postgres")
                    .dbname(dbname);
                Target::from_config(config)
            }
        }
    }

    /// Stops the server and removes it, waiting for the container's removal.
    pub async fn stop(self) {
        match self {
            Throwaway::Local(server) => drop(server),
            #[cfg(feature = "docker")]
            Throwaway::Docker { container, .. } => {
                let _ = (*container).rm().await;
            }
        }
    }
}

/// Whether a Docker engine answers on `DOCKER_HOST` or the default socket, quickly and quietly.
async fn docker_engine_answers() -> bool {
    match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.is_empty() => true,
        _ => {
            let attempt = tokio::net::UnixStream::connect("/var/run/docker.sock");
            matches!(
                tokio::time::timeout(Duration::from_secs(2), attempt).await,
                Ok(Ok(_))
            )
        }
    }
}

/// Without the `docker` feature there is no Docker provider: said, for `--server docker`.
#[cfg(not(feature = "docker"))]
async fn start_container() -> Result<Throwaway, DatabaseFailure> {
    Err(DatabaseFailure(
        "this plancheck was built without the Docker provider (cargo feature `docker`): use \
         --server local, or build it with --features docker"
            .into(),
    ))
}

#[cfg(feature = "docker")]
async fn start_container() -> Result<Throwaway, DatabaseFailure> {
    let fail =
        |what: &str, e: &dyn std::fmt::Display| DatabaseFailure(words::docker_failed(what, e));
    let container = Postgres::default()
        .with_tag(IMAGE_TAG)
        .start()
        .await
        .map_err(|e| fail("start postgres:17-alpine", &e))?;
    let host = container
        .get_host()
        .await
        .map_err(|e| fail("find the container's host", &e))?
        .to_string();
    let port = container
        .get_host_port_ipv4(5432)
        .await
        .map_err(|e| fail("find the container's port", &e))?;
    Ok(Throwaway::Docker {
        container: Box::new(container),
        host,
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn without_an_engine_auto_falls_back_to_local_binaries_quietly() {
        // These machines have no Docker engine: the check must say so at once, not hang.
        if std::env::var_os("DOCKER_HOST").is_some()
            || std::path::Path::new("/var/run/docker.sock").exists()
        {
            return;
        }
        let started = std::time::Instant::now();
        assert!(!docker_engine_answers().await);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
