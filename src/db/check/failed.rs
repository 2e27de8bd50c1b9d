//! Why a check could not be measured, as data: what was asked, what the server said, where in
//! the project's files. `report::failure` words it into the measurement's
//! [`Failure`](crate::measure::Failure) (`impl From<Why> for Failure`), so `db` writes no
//! sentence of its own.

use std::time::Duration;

use tokio_postgres::error::SqlState;

use super::Settings;
use crate::db::guard::Change;
use crate::db::{Asked, cause};
use crate::measure::Failure;
use crate::project::Place;

/// What the server said when a request failed, the session still usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// `statement_timeout` (this long) was reached.
    StatementTimeout(Duration),
    /// `lock_timeout` (this long) was reached.
    LockTimeout(Duration),
    /// The read-only transaction refused a write: the server's words.
    ReadOnly(String),
    /// The server's message, and its detail.
    Error {
        message: String,
        detail: Option<String>,
    },
    /// Not the server's: the driver's or the network's words.
    Other(String),
}

impl Said {
    pub fn of(e: &tokio_postgres::Error, settings: &Settings) -> Said {
        match e.code() {
            Some(c) if *c == SqlState::QUERY_CANCELED => {
                Said::StatementTimeout(settings.statement_timeout)
            }
            Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE => {
                Said::LockTimeout(settings.lock_timeout)
            }
            Some(c) if *c == SqlState::READ_ONLY_SQL_TRANSACTION => Said::ReadOnly(cause(e)),
            _ => match e.as_db_error() {
                Some(db) => Said::Error {
                    message: db.message().to_string(),
                    detail: db.detail().map(str::to_string),
                },
                None => Said::Other(cause(e)),
            },
        }
    }
}

/// Why a check could not be measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// What was asked failed; the session is still usable.
    Failed { asked: Asked, said: Said },
    /// The connection was lost while asking: the words of its cause.
    Lost { asked: Asked, cause: String },
    /// The server answered nothing within this limit, nor a cancel request: the session was
    /// given up.
    Hung(Duration),
    /// Ctrl-C (or a signal): the statement was cancelled and the transaction rolled back.
    Interrupted,
    /// The migration's session could not be rolled back after the check.
    MigrationSessionLost,
    /// Not run, or stopped where it was: the migration's locks had been held for `limit`
    /// (`--migration-hold`), reached while the migration was applied (`applying`) or during the
    /// checks after it; its transaction was rolled back.
    HoldReached { limit: Duration, applying: bool },
    /// `--iterations 0`.
    NoMeasuredRun,
    /// The server does not list the protocol-level statement just prepared.
    PreparedNotListed,
    /// EXPLAIN returned no JSON document.
    NoExplainJson,
    /// The EXPLAIN document is this many bytes, over the cap (bytes).
    PlanTooLarge { bytes: usize, cap: usize },
    /// The EXPLAIN document could not be read: the reader's words.
    PlanUnreadable(String),
    /// The query of the role's row-level security facts returned no row.
    NoRlsAnswer,
    /// The definitions' dependencies did not end in this many rounds.
    DependenciesUnended(u32),
    /// `--replan-without-rivals`: the rival index is gone.
    RivalGone { schema: String, index: String },
    /// Setup statement `n` (from 1) of `scope` failed; `file` gives it, at `place` when known.
    SetupFailed {
        scope: String,
        n: usize,
        said: Said,
        place: Option<Place>,
        file: String,
    },
    /// Setup statement `n` of `scope` changed what the guard watches (`what` it did).
    SetupChanged {
        scope: String,
        n: usize,
        what: Change,
        place: Option<Place>,
        file: String,
    },
    /// A run of the read path in `plan` changed what the guard watches.
    RunChanged { plan: String, what: Change },
    /// The read path writes (`write` inside WITH), at `place`.
    NestedWrite {
        write: String,
        scope: String,
        place: Place,
    },
    /// The server refused a parameter value, written at `place`.
    ParameterValue {
        scope: String,
        said: Said,
        place: Place,
    },
    /// The server refused the read path's SQL, at `place`.
    ReadPathFailed {
        scope: String,
        said: Said,
        place: Place,
    },
}

impl Why {
    /// The server's error `e` to what was `asked`: failed, or the connection lost. A FATAL error
    /// ends the session, whoever sent it (`pg_terminate_backend` from the read path itself, an
    /// administrator, a shutdown).
    pub fn of(e: &tokio_postgres::Error, asked: Asked, settings: &Settings) -> Why {
        let fatal = e.as_db_error().is_some_and(|d| {
            matches!(
                d.parsed_severity(),
                Some(
                    tokio_postgres::error::Severity::Fatal | tokio_postgres::error::Severity::Panic
                )
            )
        });
        if fatal || e.is_closed() || e.as_db_error().is_none() && e.code().is_none() {
            Why::Lost {
                asked,
                cause: cause(e),
            }
        } else {
            Why::Failed {
                asked,
                said: Said::of(e, settings),
            }
        }
    }

    /// Whether the connection is lost with it.
    pub fn lost(&self) -> bool {
        matches!(
            self,
            Why::Lost { .. } | Why::Hung(_) | Why::MigrationSessionLost
        )
    }
}

/// The failure `e` to what was `asked` reports.
pub(super) fn failure(e: &tokio_postgres::Error, asked: Asked, settings: &Settings) -> Failure {
    Why::of(e, asked, settings).into()
}
