//! The sessions a check runs in: where (its own from the pool, or a savepoint of the
//! migration's), and every request on plancheck's own clock, given up when the server stops
//! answering.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use super::{CANCEL_WAIT, Failure, Settings, failure, guard};
use crate::db::Asked;

/// Where a check runs.
#[derive(Clone, Copy)]
pub enum Session<'a> {
    /// A session of the run's pool, used by no other check meanwhile, and its own `READ ONLY`
    /// transaction, rolled back: the normal case.
    Own(&'a crate::db::pool::Pool<'a>),
    /// A savepoint of a transaction that is already open, read-only since the migration was
    /// applied, and will be rolled back whole: the migration's, for `check --migration`. Rolled
    /// back to after the check.
    Savepoint(&'a Client),
}

/// The session a check runs in, with the guard's query parsed in it.
pub(super) enum Held<'a> {
    /// Taken from the pool, handed back after the check.
    Pooled(Box<crate::db::pool::Pooled>),
    /// The migration's.
    Shared(&'a Client, tokio::sync::OnceCell<Statement>),
}

/// A request that did not succeed: the server's error, or no answer in time.
pub enum Fail {
    Db(tokio_postgres::Error),
    Hung(Duration),
}

impl Fail {
    /// The failure to report: `f` makes it from the server's error.
    pub(super) fn or(self, f: impl FnOnce(&tokio_postgres::Error) -> Failure) -> Failure {
        match self {
            Fail::Db(e) => f(&e),
            Fail::Hung(limit) => super::Why::Hung(limit).into(),
        }
    }
}

/// Runs `request` on `client` against plancheck's own clock. When the server has not answered
/// within [`Settings::client_limit`], whatever its settings say, a cancel request is sent and
/// the answer awaited a little longer; then the session is given up ([`Fail::Hung`]), and the
/// caller sends nothing more on it.
pub async fn clocked<T>(
    client: &Client,
    settings: &Settings,
    request: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, Fail> {
    tokio::pin!(request);
    let limit = settings.client_limit();
    if let Ok(answer) = tokio::time::timeout(limit, &mut request).await {
        return answer.map_err(Fail::Db);
    }
    let cancel = client.cancel_token();
    let _ = tokio::time::timeout(CANCEL_WAIT, crate::db::wire::cancel(&cancel)).await;
    match tokio::time::timeout(CANCEL_WAIT, &mut request).await {
        Ok(answer) => answer.map_err(Fail::Db),
        Err(_) => Err(Fail::Hung(limit + 2 * CANCEL_WAIT)),
    }
}

/// The check's session, every request on plancheck's clock.
#[derive(Clone, Copy)]
pub(super) struct Sess<'a> {
    pub(super) client: &'a Client,
    pub(super) settings: &'a Settings,
    /// The guard's query, parsed on its first use in the session.
    pub(super) guard: &'a tokio::sync::OnceCell<Statement>,
    /// What the check's runs read, as PostgreSQL counted it, so far.
    pub(super) tally: &'a std::cell::RefCell<crate::db::counts::Tally>,
}

/// plancheck's reading of PostgreSQL's counts of the reads ([`crate::db::counts`]), sent in a
/// run's round trip: after the run's guard, and before the run too when no reading precedes it.
#[derive(Clone, Copy)]
pub(super) struct CountAsk<'a> {
    pub(super) statement: &'a Statement,
    /// A reading before the statement too.
    pub(super) before: bool,
}

/// The readings of a run's round trip, in the order sent; none where none was asked.
#[derive(Default)]
pub(super) struct CountAnswers {
    pub(super) before: Option<Result<Vec<Row>, tokio_postgres::Error>>,
    pub(super) after: Option<Result<Vec<Row>, tokio_postgres::Error>>,
}

/// One reading of the counts, when `ask` is one (sent when it is first polled).
async fn read_counts(
    client: &Client,
    ask: Option<CountAsk<'_>>,
) -> Option<Result<Vec<Row>, tokio_postgres::Error>> {
    Some(client.query(ask?.statement, &[]).await)
}

impl Sess<'_> {
    /// `request` (requests all sent when it is first polled: a Parse, a read), in a savepoint
    /// rolled back right after it: the locks its Parse took on the tables the read path names
    /// (ACCESS SHARE) are released at once instead of at the end of the check. The savepoint,
    /// the request and the rollback are sent together, one round trip: the server runs them in
    /// the order sent, and the rollback is plancheck's own statement, so nothing from a file
    /// runs before what it sent was answered. What it prepared stays: prepared statements are
    /// not transactional, and each run takes its locks again (in a savepoint of its own, see
    /// [`Sess::run_then_guard`]).
    pub(super) async fn unlocked<T>(&self, request: impl Future<Output = T>) -> Result<T, Fail> {
        let (begun, answer, ended) = futures_util::future::join3(
            self.exec("SAVEPOINT plancheck_parse"),
            request,
            self.exec("ROLLBACK TO SAVEPOINT plancheck_parse; RELEASE SAVEPOINT plancheck_parse"),
        )
        .await;
        begun?;
        ended?;
        Ok(answer)
    }

    /// plancheck's own statements, never text from a file.
    pub(super) async fn exec(&self, sql: &str) -> Result<(), Fail> {
        clocked(self.client, self.settings, self.client.batch_execute(sql)).await
    }

    pub(super) async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Fail> {
        clocked(self.client, self.settings, self.client.query(sql, params)).await
    }

    /// `sql` without parameters, parsed, bound and executed in one round trip (the unnamed
    /// statement: nothing is left prepared).
    pub(super) async fn query_typed(&self, sql: &str) -> Result<Vec<Row>, Fail> {
        clocked(
            self.client,
            self.settings,
            self.client.query_typed(sql, &[]),
        )
        .await
    }

    pub(super) async fn execute(&self, sql: &str) -> Result<u64, Fail> {
        clocked(self.client, self.settings, self.client.execute(sql, &[])).await
    }

    pub(super) async fn prepare(&self, sql: &str) -> Result<Statement, Fail> {
        clocked(self.client, self.settings, self.client.prepare(sql)).await
    }

    pub(super) async fn snapshot(&self) -> Result<guard::Snapshot, Failure> {
        let guard = self.guard_statement().await?;
        clocked(
            self.client,
            self.settings,
            guard::snapshot_with(self.client, guard, &self.settings.watched),
        )
        .await
        .map_err(|f| f.or(|e| failure(e, Asked::SessionSettings, self.settings)))
    }

    pub(super) async fn guard_statement(&self) -> Result<&Statement, Failure> {
        let prepare = || {
            let watched = &self.settings.watched;
            clocked(
                self.client,
                self.settings,
                guard::prepare(self.client, watched),
            )
        };
        self.guard
            .get_or_try_init(prepare)
            .await
            .map_err(|f| f.or(|e| failure(e, Asked::SessionSettings, self.settings)))
    }

    /// `statement`, then the guard, then `count`'s reading, then `close` (the rollback to the
    /// runs' savepoint, which the caller opened ahead of the first run: see [`RUN_SAVEPOINT`]),
    /// sent together (one round trip), `count`'s reading before the statement too where it asks:
    /// the server still runs the guard after the statement and before anything else, and
    /// nothing more is sent until all answered. The statement's rows, or its error; its round
    /// trip as the client saw it (from the requests sent to the statement's last row); the
    /// guard's snapshot; the readings.
    pub(super) async fn run_then_guard(
        &self,
        statement: &Statement,
        close: &str,
        count: Option<CountAsk<'_>>,
    ) -> Result<
        (
            Vec<Row>,
            Duration,
            Result<guard::Snapshot, Failure>,
            CountAnswers,
        ),
        Fail,
    > {
        let guard = match self.guard_statement().await {
            Ok(g) => g,
            Err(f) => return Ok((Vec::new(), Duration::ZERO, Err(f), CountAnswers::default())),
        };
        let (client, watched) = (self.client, &self.settings.watched);
        let all = async {
            let sent = Instant::now();
            let (before, ((rows, took), now, after), ended) = futures_util::future::join3(
                read_counts(client, count.filter(|c| c.before)),
                futures_util::future::join3(
                    async { (client.query(statement, &[]).await, sent.elapsed()) },
                    guard::snapshot_with(client, guard, watched),
                    read_counts(client, count),
                ),
                client.batch_execute(close),
            )
            .await;
            (rows, took, now, CountAnswers { before, after }, ended)
        };
        let (rows, took, now, counts, ended) = clocked(client, self.settings, async {
            Ok::<_, tokio_postgres::Error>(all.await)
        })
        .await?;
        let rows = rows.map_err(Fail::Db)?;
        ended.map_err(Fail::Db)?;
        let now = now.map_err(|e| failure(&e, Asked::SessionSettings, self.settings));
        Ok((rows, took, now, counts))
    }

    /// The first run of statements not parsed yet, in one round trip: `open` (plancheck's own
    /// `SET LOCAL …; ` and the runs' savepoint), then the Parse of each of `parse` (kept for the
    /// runs after this one), then `count`'s reading before the run where it asks, then
    /// `statement` parsed, bound and executed as the unnamed statement, then the guard,
    /// `count`'s reading and `close`, as [`Sess::run_then_guard`] sends them. The server still
    /// runs them in the order sent: the Parses refuse a second statement as any Parse does, and
    /// an error makes each request after it fail. Each answer is returned as it came, in the
    /// order sent; the run's round trip is not timed (its rows are a plan, never a client
    /// timing).
    pub(super) async fn first_run_then_guard(
        &self,
        (open, parse): (&str, &[&str]),
        statement: &str,
        close: &str,
        count: Option<CountAsk<'_>>,
    ) -> Result<FirstRun, Fail> {
        let guard = match self.guard_statement().await {
            Ok(g) => g,
            Err(f) => {
                return Ok(FirstRun {
                    opened: Ok(()),
                    parsed: Vec::new(),
                    ran: Ok((Vec::new(), Err(f))),
                    counts: CountAnswers::default(),
                });
            }
        };
        let (client, watched) = (self.client, &self.settings.watched);
        let all = async {
            let (opened, parsed, before, rows, (now, after, ended)) = futures_util::future::join5(
                client.batch_execute(open),
                futures_util::future::join_all(parse.iter().map(|p| client.prepare(p))),
                read_counts(client, count.filter(|c| c.before)),
                client.query_typed(statement, &[]),
                futures_util::future::join3(
                    guard::snapshot_with(client, guard, watched),
                    read_counts(client, count),
                    client.batch_execute(close),
                ),
            )
            .await;
            let ran = rows.and_then(|rows| {
                ended?;
                let now = now.map_err(|e| failure(&e, Asked::SessionSettings, self.settings));
                Ok((rows, now))
            });
            Ok::<_, tokio_postgres::Error>(FirstRun {
                opened,
                parsed,
                ran,
                counts: CountAnswers { before, after },
            })
        };
        clocked(client, self.settings, all).await
    }
}

/// The answers to [`Sess::first_run_then_guard`], in the order sent.
pub(super) struct FirstRun {
    /// plancheck's own `SET LOCAL`s and the runs' savepoint.
    pub(super) opened: Result<(), tokio_postgres::Error>,
    /// The statements parsed for the runs after this one.
    pub(super) parsed: Vec<Result<Statement, tokio_postgres::Error>>,
    /// The run's rows and the guard's snapshot after it.
    pub(super) ran: Result<(Vec<Row>, Result<guard::Snapshot, Failure>), tokio_postgres::Error>,
    /// The readings of the counts, before and after the run.
    pub(super) counts: CountAnswers,
}

/// The savepoint each run of a read path runs in. It is opened ahead of a statement's first run
/// and rolled back to after each run's guard ([`Sess::run_then_guard`]): `ROLLBACK TO SAVEPOINT`
/// keeps it, so the next run is in a savepoint of its own again without another request, and
/// the locks the read path took (ACCESS SHARE on what it reads) are released between runs, so
/// another session's ALTER TABLE waits at most one run, not the whole check. The last run's
/// rollback releases it too.
pub(super) const RUN_SAVEPOINT: &str = "SAVEPOINT plancheck_run";
pub(super) const RUN_ROLLBACK: &str = "ROLLBACK TO SAVEPOINT plancheck_run";
pub(super) const RUN_RELEASE: &str =
    "ROLLBACK TO SAVEPOINT plancheck_run; RELEASE SAVEPOINT plancheck_run";
