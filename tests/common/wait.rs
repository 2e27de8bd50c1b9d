//! Waiting for something to happen by polling for it with a deadline, never by a fixed sleep: a
//! sleep long enough on a loaded CI machine is too long everywhere else, and still not a proof.

use std::time::{Duration, Instant};

use super::server::query_text;

/// How often [`wait_until`] looks again.
pub const POLL: Duration = Duration::from_millis(25);

/// The instant `after` from now, for [`wait_until`].
pub fn within(after: Duration) -> Instant {
    Instant::now() + after
}

/// Polls `condition` every [`POLL`] until it holds (true), or until `deadline` has passed with it
/// still false (false). It is asked at least once, however near the deadline.
pub fn wait_until(deadline: Instant, mut condition: impl FnMut() -> bool) -> bool {
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        // The poll interval, not a wait for anything.
        std::thread::sleep(POLL);
    }
}

/// The number of plancheck's sessions on this database, other than the asking one. The
/// sessions of the tests' own polls also call themselves `plancheck` (the library's default
/// application name) and are not counted: their last query reads pg_stat_activity, which
/// plancheck never does, and on a loaded machine each poll would otherwise find the previous
/// poll's backend still ending.
pub fn plancheck_sessions(db: &str) -> String {
    query_text(
        db,
        "SELECT count(*) FROM pg_stat_activity \
         WHERE application_name = 'plancheck' AND pid <> pg_backend_pid() \
           AND datname = current_database() \
           AND query NOT LIKE '%FROM pg_stat_activity%'",
    )
}

/// What [`plancheck_sessions`] counts, one line each, for a failure message.
pub fn plancheck_sessions_shown(db: &str) -> String {
    query_text(
        db,
        "SELECT string_agg(pid || ' ' || state || ' ' || backend_type || ': ' || query, '; ') \
         FROM pg_stat_activity WHERE application_name = 'plancheck' \
         AND pid <> pg_backend_pid() AND datname = current_database()",
    )
}

/// Waits until a run's sessions have ended, failing the test if one outlives `limit`: a backend
/// outlives its client by a moment, and flushes its statistics as it goes (PostgreSQL 15+
/// flushes them before the backend leaves pg_stat_activity).
pub fn wait_for_sessions_to_end(db: &str, limit: Duration) {
    let ended = wait_until(within(limit), || plancheck_sessions(db) == "0");
    assert!(
        ended,
        "a plancheck session outlived the run by {limit:?}: {}",
        plancheck_sessions_shown(db)
    );
}

/// The pid of an active plancheck backend on this database whose statement matches `like` (an
/// SQL LIKE pattern), if there is one.
pub fn active_backend(db: &str, like: &str) -> Option<libc::pid_t> {
    let pid = query_text(
        db,
        &format!(
            "SELECT pid FROM pg_stat_activity \
             WHERE application_name = 'plancheck' AND datname = current_database() \
               AND state = 'active' AND query LIKE '{like}' \
               AND pid <> pg_backend_pid() LIMIT 1"
        ),
    );
    (!pid.is_empty()).then(|| pid.parse().expect("a pid"))
}
