//! `plancheck ladder`'s measurement: requests arriving on a schedule computed before the rung
//! starts, through a pool of sessions, each request run as a check runs it (a read-only,
//! bounded transaction, the scope's setup, the read path's plain statement, rolled back).
//!
//! Open-loop: a request's arrival is fixed in advance and is never moved by how long the
//! requests before it took. A worker that is free takes the next arrival, waits for its time
//! if it has not come, and runs it; when every session is busy, arrivals wait, and that wait
//! is the request's lateness (actual start − scheduled start). Latency is measured from the
//! **scheduled** start, so a queue shows in it, as pgbench's `--rate` reports it.
//!
//! Measures and decides nothing: the rung's numbers go to `verdict::ladder`.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::measure::ladder::record;
pub use crate::measure::ladder::{Cut, Left, PageTally, RungMeasured, histogram, steady_halves};
use tokio::time::Instant;
use tokio_postgres::{Client, Statement};

use super::check::only_builtins;
use super::check::{Begin, Settings, begin_bounded, clocked};
use super::{Asked, Target, Unanswered, pool};
use crate::error::DatabaseFailure;
use crate::project::{ReadPath, ScopeCheck};
use crate::stop::Stop;

/// How long before an arrival its worker stops sleeping and yields until its time.
const SPIN: Duration = Duration::from_millis(2);

/// One kind of request in the mix: a read path in a scope, and its share of the requests.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    pub read_path: &'a ReadPath,
    pub check: &'a ScopeCheck,
    /// The share of the requests, the shares of the mix summing to 1.
    pub share: f64,
}

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Evenly, `1 / rate` apart (the seed draws the pages).
    Fixed { seed: u64 },
    /// A Poisson process: exponential gaps of mean `1 / rate`, from this seed.
    Poisson { seed: u64 },
}

/// One rung, as asked for.
#[derive(Debug, Clone, Copy)]
pub struct Rung {
    /// Requests a second.
    pub rate: f64,
    /// Arrivals before this are run but not measured.
    pub warmup: Duration,
    /// The shortest measured window.
    pub measure: Duration,
    /// The longest measured window: the rung ends here, steady or not.
    pub longest: Duration,
    /// Fewest requests the measured window holds before it may end.
    pub min_requests: u64,
}

/// The arrivals of a rung, computed before it starts: each an offset from the rung's start and
/// the page it asks for.
pub fn schedule(
    rate: f64,
    arrivals: Arrivals,
    shares: &[f64],
    span: Duration,
) -> Vec<(Duration, usize)> {
    let mut rng = SplitMix(match arrivals {
        Arrivals::Fixed { seed } | Arrivals::Poisson { seed } => seed,
    });
    let mut cumulative = Vec::with_capacity(shares.len());
    let mut sum = 0.0;
    for s in shares {
        sum += s;
        cumulative.push(sum);
    }
    let pick = |u: f64| {
        let x = u * sum;
        cumulative
            .iter()
            .position(|c| x < *c)
            .unwrap_or(shares.len().saturating_sub(1))
    };
    let end = span.as_secs_f64();
    let mut out = Vec::new();
    let mut t = 0.0;
    let mut i: u64 = 0;
    loop {
        let at = match arrivals {
            Arrivals::Fixed { .. } => i as f64 / rate,
            Arrivals::Poisson { .. } => {
                t += -(1.0 - rng.unit()).ln() / rate;
                t
            }
        };
        if at >= end {
            return out;
        }
        out.push((Duration::from_secs_f64(at), pick(rng.unit())));
        i += 1;
    }
}

/// SplitMix64: a small, seeded generator, so a schedule is the same every run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The mix as every session of the pool serves it, owned: a worker that gives its session up
/// opens another in its place.
pub struct Mix {
    target: Target,
    settings: Settings,
    pages: Vec<PageSql>,
    /// The custom settings the pages' setups set: defined in every session as it opens (their
    /// placeholders stay in a session once set, and no catalog lists them), so that every
    /// session is the same to a request, whatever it served before.
    custom: Vec<String>,
}

/// A page's SQL, as its sessions prepare it.
struct PageSql {
    plan_path: String,
    setup: Vec<String>,
    text: String,
    params: Vec<String>,
    /// What a request of the page can leave in its session is all seen by [`pool::LEFT_OVER`]:
    /// its custom settings are named ([`pool::custom_settings`]) and its read path calls only
    /// PostgreSQL's own functions that run no SQL ([`only_builtins`]), as `check` requires
    /// before it hands a session on. Otherwise its session is replaced after each request.
    seen: bool,
}

impl Mix {
    /// The mix of `pages`, whose read paths' functions are looked up on `client`.
    pub async fn new(
        client: &Client,
        target: &Target,
        settings: &Settings,
        pages: &[Page<'_>],
    ) -> Result<Arc<Mix>, DatabaseFailure> {
        let mut custom = std::collections::BTreeSet::new();
        let mut sql = Vec::with_capacity(pages.len());
        for page in pages {
            let sets = pool::custom_settings(page.check);
            let builtins = match clocked(
                client,
                settings,
                only_builtins(client, &page.check.sql.text),
            )
            .await
            {
                Ok(only) => only,
                Err(super::check::Fail::Db(e)) => {
                    return Err(Unanswered::of(Asked::CalledFunctions, &e).into());
                }
                Err(super::check::Fail::Hung(limit)) => {
                    return Err(DatabaseFailure::from(Unanswered {
                        asked: Asked::CalledFunctions,
                        cause: crate::report::failure::hung(limit),
                    }));
                }
            };
            custom.extend(sets.iter().flatten().cloned());
            sql.push(PageSql {
                plan_path: page.read_path.plan_path.clone(),
                setup: page.check.setup.clone(),
                text: page.check.sql.text.clone(),
                params: page.check.params.clone(),
                seen: sets.is_some() && builtins,
            });
        }
        Ok(Arc::new(Mix {
            target: target.clone(),
            settings: settings.clone(),
            pages: sql,
            custom: custom.into_iter().collect(),
        }))
    }
}

/// A session of the pool, with each page's statements prepared in it.
pub struct Session {
    client: Client,
    /// Per page: its setup statements and its read path, prepared.
    prepared: Vec<Prepared>,
    /// The query of what the session holds that a rollback does not undo ([`pool::LEFT_OVER`],
    /// prepared), and what it counted when the session opened; None when it could not be read
    /// (the session is then replaced after each request).
    left: Option<(Statement, Vec<i64>)>,
}

struct Prepared {
    setup: Vec<Statement>,
    read: Read,
}

/// How the read path is sent: as a prepared statement without parameters, or as
/// `EXECUTE name(values)` of the protocol-level statement prepared from its text, the way a
/// driver with prepared statements runs it (as `check` does).
enum Read {
    Plain(Statement),
    Execute { _statement: Statement, sql: String },
}

/// Opens `size` sessions ([`open_one`]).
pub async fn open(mix: &Mix, size: usize) -> Result<Vec<Session>, crate::error::Error> {
    let mut sessions = Vec::with_capacity(size);
    for _ in 0..size {
        sessions.push(open_one(mix).await?);
    }
    Ok(sessions)
}

/// Opens a session bounded as a check's is, with the mix's custom settings defined, what it
/// holds read, and every page's statements prepared; every request on plancheck's clock.
async fn open_one(mix: &Mix) -> Result<Session, crate::error::Error> {
    let settings = &mix.settings;
    let client = mix.target.connect().await?;
    super::check::within(
        settings.client_limit(),
        crate::report::stderr::asking::SESSION_TIMEOUTS,
        async { Ok(super::check::bound_session(&client, settings).await?) },
    )
    .await?;
    if !mix.custom.is_empty() {
        // As a request's setup leaves them: set in a transaction that is rolled back. A setting
        // the role may not set fails here as it fails in the requests.
        let define = async {
            let (begun, set, ended) = futures_util::future::join3(
                client.batch_execute("BEGIN READ ONLY"),
                client.execute(DEFINE, &[&mix.custom]),
                client.batch_execute("ROLLBACK"),
            )
            .await;
            begun.and(set).and(ended)
        };
        let _ = clocked(&client, settings, define).await;
    }
    let read = async {
        let statement = client.prepare(pool::LEFT_OVER).await?;
        let counts = counts(&client.query(&statement, &[]).await?);
        Ok::<_, tokio_postgres::Error>(counts.map(|c| (statement, c)))
    };
    let left = clocked(&client, settings, read).await.ok().flatten();
    let mut prepared = Vec::with_capacity(mix.pages.len());
    for page in &mix.pages {
        prepared.push(prepare(&client, settings, page).await?);
    }
    Ok(Session {
        client,
        prepared,
        left,
    })
}

/// Defines the custom settings `$1` in the session, at their value (a placeholder's: empty).
const DEFINE: &str = "SELECT pg_catalog.set_config(n.name, \
       COALESCE(pg_catalog.current_setting(n.name, true), ''), true) \
     FROM pg_catalog.unnest($1::pg_catalog.text[]) AS n(name)";

async fn prepare(
    client: &Client,
    settings: &Settings,
    page: &PageSql,
) -> Result<Prepared, DatabaseFailure> {
    let asked = || Asked::ReadPath(page.plan_path.clone());
    let failed = |e: &tokio_postgres::Error| DatabaseFailure::from(Unanswered::of(asked(), e));
    let hung = |limit| {
        DatabaseFailure::from(Unanswered {
            asked: asked(),
            cause: crate::report::failure::hung(limit),
        })
    };
    let prepare = async |sql: &str| match clocked(client, settings, client.prepare(sql)).await {
        Ok(s) => Ok(s),
        Err(super::check::Fail::Db(e)) => Err(failed(&e)),
        Err(super::check::Fail::Hung(limit)) => Err(hung(limit)),
    };
    let mut setup = Vec::with_capacity(page.setup.len());
    for s in &page.setup {
        setup.push(prepare(s).await?);
    }
    let text = &page.text;
    let statement = prepare(text).await?;
    let read = if page.params.is_empty() {
        Read::Plain(statement)
    } else {
        let rows = match clocked(client, settings, client.query(super::check::PREPARED, &[])).await
        {
            Ok(rows) => rows,
            Err(super::check::Fail::Db(e)) => return Err(failed(&e)),
            Err(super::check::Fail::Hung(limit)) => return Err(hung(limit)),
        };
        let name = super::check::prepared_name(&rows, text).ok_or_else(|| {
            DatabaseFailure::from(Unanswered {
                asked: Asked::PreparedStatements,
                cause: crate::report::ladder::NOT_LISTED.into(),
            })
        })?;
        Read::Execute {
            _statement: statement,
            sql: format!("EXECUTE {name}({})", page.params.join(", ")),
        }
    };
    Ok(Prepared { setup, read })
}

/// What the workers of a rung share.
struct Shared {
    mix: Arc<Mix>,
    arrivals: Vec<(Duration, usize)>,
    next: AtomicUsize,
    /// No arrival at or after this offset (nanoseconds from the start) is started.
    stop_at: AtomicU64,
    alive: AtomicUsize,
    tally: Mutex<Tally>,
    warmup: Duration,
    /// Raised when the window ends, to wake the workers waiting for an arrival's time.
    ended: tokio::sync::watch::Receiver<bool>,
    /// A stop or `--max-seconds` cancelled the running requests: what they end with is not the
    /// server's answer.
    cancelled: std::sync::atomic::AtomicBool,
    /// Each worker's session's cancel token: a worker that replaces its session replaces it.
    cancels: Mutex<Vec<tokio_postgres::CancelToken>>,
}

struct Tally {
    latency: Histogram<u64>,
    late: Histogram<u64>,
    pages: Vec<PageTally>,
    served: u64,
    errors: u64,
    /// Lateness by the second of the window the arrival was scheduled in.
    late_by_second: Vec<Histogram<u64>>,
    first_error: Option<String>,
    /// Sessions replaced because a request may have left something in them.
    replaced: u64,
    first_left: Option<Left>,
}

/// How long the workers have, once their requests were cancelled (a stop, `--max-seconds`),
/// to see them end and roll back: a server that answers the cancel ends them in milliseconds.
const CANCELLED_END: Duration = Duration::from_secs(3);

/// Runs one rung on the pool's sessions; returns the sessions still usable with what it
/// measured.
// Long because it is the rung in order: the schedule, the workers, and the watch that ends the
// window when it is whole (enough requests, steady) or cut.
pub async fn run(
    sessions: Vec<Session>,
    mix: &Arc<Mix>,
    rung: &Rung,
    arrivals: Arrivals,
    shares: &[f64],
    stop: &mut Stop,
    deadline: Instant,
) -> (Vec<Session>, RungMeasured) {
    let span = rung.warmup + rung.longest;
    let (ending, ended) = tokio::sync::watch::channel(false);
    let shared = Arc::new(Shared {
        mix: mix.clone(),
        ended,
        cancelled: std::sync::atomic::AtomicBool::new(false),
        cancels: Mutex::new(sessions.iter().map(|s| s.client.cancel_token()).collect()),
        arrivals: schedule(rung.rate, arrivals, shares, span),
        next: AtomicUsize::new(0),
        stop_at: AtomicU64::new(u64::try_from(span.as_nanos()).unwrap_or(u64::MAX)),
        alive: AtomicUsize::new(sessions.len()),
        tally: Mutex::new(Tally {
            latency: histogram(),
            late: histogram(),
            pages: shares
                .iter()
                .map(|_| PageTally {
                    offered: 0,
                    served: 0,
                    errors: 0,
                    latency: histogram(),
                    late: histogram(),
                })
                .collect(),
            served: 0,
            errors: 0,
            late_by_second: Vec::new(),
            first_error: None,
            replaced: 0,
            first_left: None,
        }),
        warmup: rung.warmup,
    });
    let start = Instant::now();
    let mut workers = Vec::with_capacity(sessions.len());
    for (i, session) in sessions.into_iter().enumerate() {
        let shared = shared.clone();
        workers.push(tokio::spawn(async move {
            work(i, session, &shared, start).await
        }));
    }
    // The watch: from the shortest window on, once a second, the window may end when it holds
    // enough requests and is steady; it ends at the longest window, on a stop, at the deadline
    // (`--max-seconds`, whenever it comes), or when every session is lost.
    let mut cut = None;
    let mut end = span;
    let mut tick =
        tokio::time::interval_at(start + rung.warmup + rung.measure, Duration::from_secs(1));
    let cancel_running = loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait() => {
                cut = Some(Cut::Stopped);
                end = start.elapsed();
                break true;
            }
            _ = tokio::time::sleep_until(deadline) => {
                cut = Some(Cut::MaxSeconds);
                end = start.elapsed();
                break true;
            }
        }
        let now = start.elapsed();
        if now >= span {
            break false;
        }
        if shared.alive.load(Ordering::SeqCst) == 0 {
            cut = Some(Cut::SessionsLost);
            end = now;
            break false;
        }
        let window = now.saturating_sub(rung.warmup);
        let (count, steady) = {
            let t = shared.tally.lock().expect("tally");
            let count = t.served + t.errors;
            (count, steady(&t.late_by_second, window))
        };
        if count >= rung.min_requests && steady {
            end = now;
            break false;
        }
    };
    shared.stop_at.store(
        u64::try_from(end.as_nanos()).unwrap_or(u64::MAX),
        Ordering::SeqCst,
    );
    let _ = ending.send(true);
    if cancel_running {
        // Stop the running statements now rather than when they end; each is rolled back, and
        // is not counted.
        shared.cancelled.store(true, Ordering::SeqCst);
        let tokens = shared.cancels.lock().expect("cancels").clone();
        futures_util::future::join_all(
            tokens
                .iter()
                .map(|t| tokio::time::timeout(super::check::CANCEL_WAIT, super::wire::cancel(t))),
        )
        .await;
    }
    let mut kept = Vec::new();
    let waited = Instant::now() + CANCELLED_END;
    for mut w in workers {
        let done = if cancel_running {
            tokio::time::timeout_at(waited, &mut w).await.ok()
        } else {
            Some((&mut w).await)
        };
        match done {
            Some(Ok(Some(session))) => kept.push(session),
            Some(_) => {}
            // A request the server did not end on the cancel: its session is given up.
            None => w.abort(),
        }
    }
    let window = end.saturating_sub(rung.warmup);
    let mut t = shared.tally.lock().expect("tally");
    let mut offered = 0;
    for (_, page) in shared
        .arrivals
        .iter()
        .filter(|(at, _)| *at >= rung.warmup && *at < end)
    {
        offered += 1;
        t.pages[*page].offered += 1;
    }
    let halves = halves(&t.late_by_second, window);
    let measured = RungMeasured {
        rate: rung.rate,
        window,
        offered,
        served: t.served,
        errors: t.errors,
        latency: t.latency.clone(),
        late: t.late.clone(),
        pages: t.pages.clone(),
        late_halves: halves,
        first_error: t.first_error.clone(),
        cut,
        replaced: t.replaced,
        first_left: t.first_left,
    };
    (kept, measured)
}

/// Late p95 of the first and second halves of the window (microseconds).
fn halves(by_second: &[Histogram<u64>], window: Duration) -> (u64, u64) {
    let seconds = (window.as_secs() as usize).min(by_second.len());
    let mid = seconds / 2;
    let p95 = |part: &[Histogram<u64>]| {
        let mut h = histogram();
        for s in part {
            let _ = h.add(s);
        }
        h.value_at_quantile(0.95)
    };
    (p95(&by_second[..mid]), p95(&by_second[mid..seconds]))
}

fn steady(by_second: &[Histogram<u64>], window: Duration) -> bool {
    let (a, b) = halves(by_second, window);
    steady_halves(a, b)
}

/// One worker (the `i`th): takes the next arrival, waits for its time, runs it; until the
/// arrivals end or reach the stop. Returns its session, unless it was lost.
// Long because it is a request's life in order: its arrival, the request, its tally, and the
// session after it (kept, replaced, or lost).
async fn work(i: usize, mut session: Session, shared: &Shared, start: Instant) -> Option<Session> {
    let settings = &shared.mix.settings;
    let begin = begin_bounded(Begin::ReadOnly, settings);
    loop {
        let next = shared.next.fetch_add(1, Ordering::SeqCst);
        let Some(&(at, page)) = shared.arrivals.get(next) else {
            return Some(session);
        };
        let scheduled = start + at;
        let mut ended = shared.ended.clone();
        // The timer wakes up to a millisecond late: sleep until just before the arrival, then
        // yield until it, so the generator's own lateness stays well under a millisecond.
        let early = scheduled.checked_sub(SPIN).unwrap_or(scheduled);
        tokio::select! {
            _ = tokio::time::sleep_until(early) => {}
            _ = ended.wait_for(|e| *e) => {}
        }
        while Instant::now() < scheduled && !*shared.ended.borrow() {
            tokio::task::yield_now().await;
        }
        let stop_at = Duration::from_nanos(shared.stop_at.load(Ordering::SeqCst));
        if at >= stop_at || start.elapsed() >= stop_at {
            return Some(session);
        }
        let began = Instant::now();
        let outcome = clocked(&session.client, settings, one(&session, page, &begin)).await;
        let ended = Instant::now();
        let failed = match &outcome {
            Ok(()) => None,
            Err(super::check::Fail::Db(e)) => Some(super::cause(e)),
            Err(super::check::Fail::Hung(limit)) => Some(crate::report::failure::hung(*limit)),
        };
        // Rolled back whatever happened, and in the same round trip, what the session holds
        // that the rollback does not undo; a session that cannot be rolled back is given up.
        let seen = shared.mix.pages[page].seen;
        let after =
            if session.client.is_closed() || matches!(outcome, Err(super::check::Fail::Hung(_))) {
                None
            } else {
                roll_back(&session, settings, seen).await
            };
        let cancelled = failed.is_some() && shared.cancelled.load(Ordering::SeqCst);
        if at >= shared.warmup && !cancelled {
            let mut t = shared.tally.lock().expect("tally");
            let second = (at - shared.warmup).as_secs() as usize;
            while t.late_by_second.len() <= second {
                t.late_by_second.push(histogram());
            }
            let late = began.saturating_duration_since(scheduled);
            record(&mut t.late_by_second[second], late);
            record(&mut t.late, late);
            record(&mut t.pages[page].late, late);
            match failed {
                None => {
                    let latency = ended.saturating_duration_since(scheduled);
                    record(&mut t.latency, latency);
                    record(&mut t.pages[page].latency, latency);
                    t.served += 1;
                    t.pages[page].served += 1;
                }
                Some(words) => {
                    t.errors += 1;
                    t.pages[page].errors += 1;
                    t.first_error.get_or_insert(words);
                }
            }
        }
        let Some(now) = after else {
            shared.alive.fetch_sub(1, Ordering::SeqCst);
            return None;
        };
        let Some(left) = left_behind(seen, session.left.as_ref(), now.as_deref()) else {
            continue;
        };
        // The session may hold what the next request would meet: it is closed, and a new one
        // opened in its place (the arrivals wait for it meanwhile, as they would for the
        // application's pool).
        {
            let mut t = shared.tally.lock().expect("tally");
            t.replaced += 1;
            t.first_left.get_or_insert(left);
        }
        drop(session);
        if shared.cancelled.load(Ordering::SeqCst) {
            return None;
        }
        match open_one(&shared.mix).await {
            Ok(new) => {
                shared.cancels.lock().expect("cancels")[i] = new.client.cancel_token();
                session = new;
            }
            Err(_) => {
                shared.alive.fetch_sub(1, Ordering::SeqCst);
                return None;
            }
        }
    }
}

/// The rollback after a request and, when the page's effects are all seen, what the session
/// holds that a rollback does not undo ([`pool::LEFT_OVER`]), in one round trip. None when the
/// session could not be rolled back (it is given up); `Some(None)` when what it holds was not
/// read.
async fn roll_back(session: &Session, settings: &Settings, seen: bool) -> Option<Option<Vec<i64>>> {
    let c = &session.client;
    let query = session.left.as_ref().filter(|_| seen).map(|(q, _)| q);
    let both = async {
        let (ended, now) = futures_util::future::join(c.batch_execute("ROLLBACK"), async {
            match query {
                Some(q) => Some(c.query(q, &[]).await),
                None => None,
            }
        })
        .await;
        ended?;
        Ok::<_, tokio_postgres::Error>(now.and_then(|r| r.ok()).and_then(|rows| counts(&rows)))
    };
    clocked(c, settings, both).await.ok()
}

/// The counts of [`pool::LEFT_OVER`]'s one row.
fn counts(rows: &[tokio_postgres::Row]) -> Option<Vec<i64>> {
    let row = rows.first()?;
    (0..row.len()).map(|i| row.try_get(i).ok()).collect()
}

/// Why the session must be replaced after a request of a page (`seen`: its effects are all
/// seen), given what the session counted when it opened and counts now; None when it is as it
/// opened.
fn left_behind(
    seen: bool,
    opened: Option<&(Statement, Vec<i64>)>,
    now: Option<&[i64]>,
) -> Option<Left> {
    if !seen {
        return Some(Left::Unseen);
    }
    let (Some((_, opened)), Some(now)) = (opened, now) else {
        return Some(Left::Unread);
    };
    pool::what_is_left(opened, now)
}

/// One request: the bounded read-only transaction, the scope's setup, the read path.
async fn one(session: &Session, page: usize, begin: &str) -> Result<(), tokio_postgres::Error> {
    let c = &session.client;
    let p = &session.prepared[page];
    c.batch_execute(begin).await?;
    for s in &p.setup {
        c.execute(s, &[]).await?;
    }
    match &p.read {
        Read::Plain(s) => {
            c.query(s, &[]).await?;
        }
        Read::Execute { sql, .. } => {
            c.simple_query(sql).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_arrivals_are_evenly_spaced_and_shares_are_kept() {
        let s = schedule(
            100.0,
            Arrivals::Fixed { seed: 1 },
            &[0.75, 0.25],
            Duration::from_secs(10),
        );
        assert_eq!(s.len(), 1000);
        assert_eq!(s[1].0, Duration::from_millis(10));
        assert_eq!(s[999].0, Duration::from_secs_f64(9.99));
        let first = s.iter().filter(|(_, p)| *p == 0).count() as f64 / 1000.0;
        assert!((first - 0.75).abs() < 0.04, "{first}");
    }

    #[test]
    fn poisson_arrivals_keep_the_rate_on_average_and_repeat_from_their_seed() {
        let a = schedule(
            200.0,
            Arrivals::Poisson { seed: 7 },
            &[1.0],
            Duration::from_secs(60),
        );
        let rate = a.len() as f64 / 60.0;
        assert!((rate - 200.0).abs() < 6.0, "{rate}");
        // Exponential gaps: about 37% of them longer than the mean.
        let gaps: Vec<f64> = a
            .windows(2)
            .map(|w| (w[1].0 - w[0].0).as_secs_f64())
            .collect();
        let long = gaps.iter().filter(|g| **g > 1.0 / 200.0).count() as f64 / gaps.len() as f64;
        assert!((long - (-1.0f64).exp()).abs() < 0.02, "{long}");
        assert_eq!(
            a,
            schedule(
                200.0,
                Arrivals::Poisson { seed: 7 },
                &[1.0],
                Duration::from_secs(60)
            )
        );
        assert_ne!(
            a,
            schedule(
                200.0,
                Arrivals::Poisson { seed: 8 },
                &[1.0],
                Duration::from_secs(60)
            )
        );
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        // 1..=1000 ms, once each: p50 500 ms, p95 950 ms, p99 990 ms, within the histogram's
        // three significant digits.
        let mut h = histogram();
        for ms in 1..=1000u64 {
            record(&mut h, Duration::from_millis(ms));
        }
        let near = |q: f64, want_ms: f64| {
            let got = h.value_at_quantile(q) as f64 / 1000.0;
            assert!(
                (got - want_ms).abs() <= want_ms * 0.002,
                "p{q}: {got} ms, not {want_ms}"
            );
        };
        near(0.50, 500.0);
        near(0.95, 950.0);
        near(0.99, 990.0);
    }

    #[test]
    fn a_growing_queue_is_not_steady() {
        assert!(steady_halves(800, 1_500));
        assert!(steady_halves(0, 900));
        assert!(!steady_halves(2_000, 40_000));
    }
}
