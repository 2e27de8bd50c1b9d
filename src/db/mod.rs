//! db: everything that talks to PostgreSQL: connecting, running a check in its read-only
//! transaction, loading the reference board, and the throwaway server of `plancheck demo`.

pub mod catalog;
pub mod check;
pub mod ephemeral;
pub mod fixtures;
pub mod provider;

use std::time::Duration;

use tokio_postgres::{Client, Config, NoTls, config::Host};

use crate::errors::{BadInput, DatabaseFailure};

/// How to reach the database, without ever printing the password.
#[derive(Clone)]
pub struct Target {
    config: Config,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Target {
    /// Reads a URL (`postgresql://…`) or a key=value connection string.
    pub fn parse(text: &str) -> Result<Target, BadInput> {
        let config: Config = text.parse().map_err(|e: tokio_postgres::Error| {
            // The parser's message never carries the string itself, so no password leaks here.
            BadInput(format!("invalid --database-url: {e}"))
        })?;
        Ok(Target::from_config(config))
    }

    pub fn from_config(mut config: Config) -> Target {
        if config.get_application_name().is_none() {
            config.application_name("plancheck");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        Target { config }
    }

    /// `host:port` (or the socket folder) and database, for messages.
    pub fn describe(&self) -> String {
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".to_string(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let db = self
            .config
            .get_dbname()
            .or(self.config.get_user())
            .unwrap_or("postgres");
        format!("{host}:{port}/{db}")
    }

    /// Opens a session. Failure to connect is a [`DatabaseFailure`] naming host, port and cause.
    pub async fn connect(&self) -> Result<Client, DatabaseFailure> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| {
            DatabaseFailure(format!(
                "could not connect to {}: {}",
                self.describe(),
                cause(&e)
            ))
        })?;
        tokio::spawn(async move {
            // Errors surface on the client's next call as a closed connection.
            let _ = connection.await;
        });
        Ok(client)
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

/// `server_version` as the server reports it, e.g. `15.18 (Debian 15.18-0+deb12u1)`.
pub async fn server_version(client: &Client) -> Result<String, DatabaseFailure> {
    let row = client
        .query_one("SELECT current_setting('server_version')", &[])
        .await
        .map_err(|e| DatabaseFailure(format!("could not read server_version: {}", cause(&e))))?;
    Ok(row.get(0))
}
