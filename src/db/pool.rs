//! The run's sessions: at most one per job, each used by one check at a time and handed to the
//! next check only when nothing the last one did can have stayed behind.
//!
//! A check's transaction is read-only and rolled back, which undoes its settings (`SET`,
//! `set_config`, `SET ROLE`) and releases its transaction locks. What a rollback does not undo
//! is session state: a session advisory lock, a statement prepared with SQL `PREPARE`, a library
//! a function loaded (with whatever hooks it installs), the placeholder a custom setting such as
//! `app.user_id` leaves once set, an extension's own session memory. A session goes back to the
//! pool only when all of these hold, and is closed otherwise (the next check opens a new one):
//!
//! - the check was measured: not failed, not interrupted, the session still answering;
//! - the check ran no setup statement other than `SET`, `RESET` and `SELECT set_config(…)` with
//!   literal arguments, and its read path calls no `set_config` ([`custom_settings`]). A custom (dotted) setting it set, such as
//!   `app.user_id`, leaves a placeholder the rollback does not remove: the session then goes
//!   only to checks that set that setting themselves before their read path runs, which see
//!   what they would see in a new session;
//! - after the rollback, the session has as many settings as when it opened (a library defines
//!   its own settings as it loads; from PostgreSQL 18, which lists the libraries a session
//!   loaded, as many libraries instead) and no statement prepared by SQL. PL/pgSQL is loaded
//!   when the session opens, so calling a PL/pgSQL function changes neither. A session lock or a
//!   setting changed for the session fails the check already (the guard), which closes it.
//!
//! What none of this can see: before PostgreSQL 18, a library that defines no setting; an
//! extension's own session memory (HypoPG's hypothetical indexes, say) or a placeholder setting
//! reached through a function a read path calls; the plans a function (PL/pgSQL) caches for its
//! own statements, as an application's pooled sessions keep them too. `--session-per-check`
//! opens a new session for every check.

use std::cell::RefCell;
use std::collections::BTreeSet;

use tokio_postgres::{Client, SimpleQueryMessage, Statement};

use super::Target;
use super::check::{AfterRollback, Settings, clocked};
use crate::error::DatabaseFailure;
use crate::measure::ladder::Left;
use crate::project::ScopeCheck;
use crate::sql::{Dialect, Kind};

/// What a session must look like, outside any transaction, to be handed to another check: how
/// many settings it has (a library defines its own when it loads) and how many statements SQL
/// prepared.
const FINGERPRINT: &str = "SELECT \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_show_all_settings()), \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements p WHERE p.from_sql)";

/// Where the server lists the libraries it loaded (PostgreSQL 18 and later), those instead of
/// the settings: every library, whether it defines settings or not, and cheaper to read.
const FINGERPRINT_MODULES: &str = "SELECT \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_get_loaded_modules()), \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements p WHERE p.from_sql)";

/// Whether the server lists its loaded libraries.
const HAS_MODULES: &str =
    "SELECT pg_catalog.to_regproc('pg_catalog.pg_get_loaded_modules') IS NOT NULL";

/// One session of the pool.
pub struct Pooled {
    pub client: Client,
    /// The guard's query, parsed on its first use in the session.
    pub guard: tokio::sync::OnceCell<Statement>,
    /// The fingerprint's query and what it read when the session opened; None when it could not
    /// be read (the session is never handed on then).
    opened: Option<(&'static str, Vec<String>)>,
    /// The custom settings checks set in this session: their placeholders stay.
    placeholders: BTreeSet<String>,
    /// The server process serving this session, to name it if it outlives a cancel.
    pub pid: Option<i32>,
}

/// The run's sessions.
pub struct Pool<'a> {
    target: &'a Target,
    reuse: bool,
    idle: RefCell<Vec<Pooled>>,
}

impl<'a> Pool<'a> {
    /// Sessions to `target`, handed from check to check unless `reuse` is false
    /// (`--session-per-check`).
    pub fn new(target: &'a Target, reuse: bool) -> Pool<'a> {
        Pool {
            target,
            reuse,
            idle: RefCell::new(Vec::new()),
        }
    }

    /// A session for a check that sets the custom settings `sets` (None: it may read any): one
    /// handed back clean whose placeholders are all among them, or a new one (an idle session
    /// that does not fit is closed first, so the pool never holds more sessions than jobs).
    pub async fn take(
        &self,
        settings: &Settings,
        sets: Option<&BTreeSet<String>>,
    ) -> Result<Pooled, DatabaseFailure> {
        {
            let mut idle = self.idle.borrow_mut();
            let fits = |p: &Pooled| match sets {
                Some(sets) => p.placeholders.is_subset(sets),
                None => p.placeholders.is_empty(),
            };
            if let Some(at) = idle.iter().position(fits) {
                return Ok(idle.swap_remove(at));
            }
            idle.pop();
        }
        let client = self.target.connect().await?;
        let pid = async {
            read(&client, settings, "SELECT pg_catalog.pg_backend_pid()")
                .await
                .and_then(|row| row.first()?.parse().ok())
        };
        let (opened, pid) = if self.reuse {
            futures_util::future::join(opened(&client, settings), pid).await
        } else {
            (None, pid.await)
        };
        Ok(Pooled {
            client,
            guard: tokio::sync::OnceCell::new(),
            opened,
            placeholders: BTreeSet::new(),
            pid,
        })
    }

    /// Hands `pooled` back after its check's rollback: kept for the next check when the check
    /// was measured and its custom settings are known (`set`, from [`custom_settings`]), and the
    /// fingerprint (`after` the rollback, when read with it; else read now) is the one it opened
    /// with; closed otherwise.
    pub async fn give_back(
        &self,
        mut pooled: Pooled,
        set: Option<BTreeSet<String>>,
        after: Option<AfterRollback>,
        settings: &Settings,
    ) {
        let Some(set) = set else {
            return;
        };
        if !self.reuse || pooled.client.is_closed() {
            return;
        }
        pooled.placeholders.extend(set);
        let Some((_, opened)) = &pooled.opened else {
            return;
        };
        let (now, guard) = match after {
            Some(after) => (after.fingerprint, after.guard),
            None => (pooled.fingerprint(settings).await, None),
        };
        if now.as_ref() == Some(opened) {
            // `DISCARD ALL` deallocated every prepared statement, the guard's among them; the
            // rollback's round trip may have parsed it again.
            pooled.guard = tokio::sync::OnceCell::new_with(guard);
            self.idle.borrow_mut().push(pooled);
        }
    }
}

impl Pool<'_> {
    /// After a session was given up because its backend answered neither the statement's end
    /// nor a cancel request: asks the server, from a new session, to end backend `pid`
    /// (`pg_terminate_backend`, which the same role may do), and waits a little. Whether the
    /// backend is still there: a function that never checks for interrupts (libxml2 inside
    /// `xpath`, say) runs on, holding its locks.
    pub async fn outlived(&self, pid: i32, settings: &Settings) -> bool {
        let Ok(client) = self.target.connect().await else {
            return false;
        };
        let alive = "SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity a \
                     WHERE a.pid OPERATOR(pg_catalog.=) $1";
        let _ = clocked(
            &client,
            settings,
            client.query("SELECT pg_catalog.pg_terminate_backend($1)", &[&pid]),
        )
        .await;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
        loop {
            let Ok(row) = clocked(&client, settings, client.query_one(alive, &[&pid])).await else {
                return false;
            };
            if row.get::<_, i64>(0) == 0 {
                return false;
            }
            if tokio::time::Instant::now() >= deadline {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }
}

impl Pooled {
    /// The session's fingerprint now (None when it could not be read, or was never read when
    /// it opened).
    pub async fn fingerprint(&self, settings: &Settings) -> Option<Vec<String>> {
        let (query, _) = self.opened.as_ref()?;
        read(&self.client, settings, query).await
    }
}

/// An empty PL/pgSQL block: it loads the language, which most applications' functions are
/// written in and which defines settings of its own as it loads, so a check calling such a
/// function does not change the session. The language installs no planner hook. It writes
/// nothing; where the language is missing or not granted it fails, and nothing else changes.
const LOAD_PLPGSQL: &str = "DO $plancheck$ BEGIN END $plancheck$";

/// The fingerprint of a session just opened (PL/pgSQL loaded first), with the query that reads
/// it on this server.
async fn opened(client: &Client, settings: &Settings) -> Option<(&'static str, Vec<String>)> {
    let (_, modules) = futures_util::future::join(
        clocked(client, settings, client.batch_execute(LOAD_PLPGSQL)),
        read(client, settings, HAS_MODULES),
    )
    .await;
    let modules = modules?;
    let query = if modules.first().map(String::as_str) == Some("t") {
        FINGERPRINT_MODULES
    } else {
        FINGERPRINT
    };
    Some((query, read(client, settings, query).await?))
}

/// What a session can hold after its transaction is rolled back, each a count: statements
/// prepared with SQL `PREPARE`, locks held past the transaction (a session-level advisory lock),
/// open cursors, channels listened to, temporary relations. `DISCARD ALL` resets them between
/// checks; the ladder, whose sessions keep the statements it prepared, reads them after every
/// request whose effects it can see all of (a read path of PostgreSQL's own functions that run
/// no SQL), in the round trip of its rollback.
///
/// Not read: the libraries a session loaded. Such a read path can load only the server's own
/// (a text search dictionary, an encoding conversion) or an extension's installed into
/// `pg_catalog`, and keeps it loaded as an application's pooled session would; counting them
/// would replace every session that served its first `to_tsvector('english', …)` (PostgreSQL
/// 18 lists them), and the count of settings that shows them before 18 costs 1.5 ms a read
/// (`pg_show_all_settings` makes a row of every setting), several times a request.
pub const LEFT_OVER: &str = "SELECT \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements p WHERE p.from_sql), \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_locks l \
         WHERE l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid() \
           AND l.locktype OPERATOR(pg_catalog.<>) 'virtualxid' \
           AND NOT (l.locktype OPERATOR(pg_catalog.=) 'relation' \
                    AND l.mode OPERATOR(pg_catalog.=) 'AccessShareLock')), \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_cursors), \
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_listening_channels()), \
       (SELECT CASE WHEN pg_catalog.pg_my_temp_schema() OPERATOR(pg_catalog.=) 0 THEN 0 \
               ELSE (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class c \
                      WHERE c.relnamespace OPERATOR(pg_catalog.=) pg_catalog.pg_my_temp_schema()) \
               END)";

/// What each column of [`LEFT_OVER`] counts.
const LEFT: [Left; 5] = [
    Left::Prepared,
    Left::Locks,
    Left::Cursors,
    Left::Listening,
    Left::Temporary,
];

/// The first difference between what a session held when it opened and holds now (each as
/// [`LEFT_OVER`] counts it); None when nothing differs.
pub fn what_is_left(opened: &[i64], now: &[i64]) -> Option<Left> {
    if opened.len() != now.len() || now.len() != LEFT.len() {
        return Some(Left::Unread);
    }
    opened
        .iter()
        .zip(now)
        .zip(LEFT)
        .find(|((was, is), _)| was != is)
        .map(|(_, left)| left)
}

/// The one row `query` answers, as text; None when it could not be read.
async fn read(client: &Client, settings: &Settings, query: &str) -> Option<Vec<String>> {
    let messages = clocked(client, settings, client.simple_query(query))
        .await
        .ok()?;
    messages.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(row) => (0..row.len())
            .map(|i| row.get(i).map(str::to_string))
            .collect(),
        _ => None,
    })
}

/// The custom (dotted) settings `check` sets (its declared settings, its setup's `SET` and
/// `RESET`, and `SELECT set_config(…)` with literal arguments), when that is all it can leave in
/// its session that a rollback does not undo: None when a setup statement is anything else, or
/// the read path calls `set_config` (either may set a custom setting plancheck cannot name).
pub fn custom_settings(check: &ScopeCheck) -> Option<BTreeSet<String>> {
    let dialect = Dialect::default();
    if !crate::sql::set_config_calls(&check.sql.text, dialect).is_empty() {
        return None;
    }
    let custom = |name: &str| name.contains('.').then(|| name.to_string());
    let mut names: BTreeSet<String> = check
        .settings
        .iter()
        .filter_map(|(name, _)| custom(name))
        .collect();
    for statement in &check.setup {
        match crate::sql::classify(statement, dialect) {
            Kind::Set { name, .. } => names.extend(custom(&name)),
            Kind::Reset { name: Some(name) } => names.extend(custom(&name)),
            Kind::Reset { name: None } => {}
            Kind::Query => {
                let set = literal_set_configs(statement, dialect)?;
                names.extend(set.iter().filter_map(|name| custom(name)));
            }
            _ => return None,
        }
    }
    Some(names)
}

/// The settings a setup `SELECT` sets when it is nothing but `set_config` calls with literal
/// arguments (`SELECT set_config('app.user_id', '5', true)`, several separated by commas),
/// lower-cased as the server looks them up; None for anything else: another function, a
/// computed argument, a `FROM`, which could set a setting plancheck cannot name.
fn literal_set_configs(statement: &str, dialect: Dialect) -> Option<Vec<String>> {
    use crate::sql::TokenKind::{Number, Punct, Semicolon, String as Text, Word};
    let toks = crate::sql::significant(statement, dialect);
    let punct = |i: usize, p: &str| toks.get(i).is_some_and(|t| t.kind == Punct && t.text == p);
    let ident = |i: usize| toks.get(i).and_then(crate::sql::Token::identifier);
    let literal = |i: usize| {
        toks.get(i).is_some_and(|t| {
            matches!(t.kind, Text | Number)
                || t.kind == Word
                    && matches!(t.keyword().as_deref(), Some("TRUE" | "FALSE" | "NULL"))
        })
    };
    if toks.first().and_then(crate::sql::Token::keyword).as_deref() != Some("SELECT") {
        return None;
    }
    let mut names = Vec::new();
    let mut i = 1;
    loop {
        if ident(i).as_deref() == Some("pg_catalog") && punct(i + 1, ".") {
            i += 2;
        }
        if ident(i).as_deref() != Some("set_config") || !punct(i + 1, "(") {
            return None;
        }
        let name = toks.get(i + 2)?.string_value(dialect)?;
        let shaped = punct(i + 3, ",")
            && literal(i + 4)
            && punct(i + 5, ",")
            && literal(i + 6)
            && punct(i + 7, ")");
        if !shaped {
            return None;
        }
        names.push(name.to_ascii_lowercase());
        i += 8;
        match toks.get(i) {
            None => return Some(names),
            Some(t) if t.kind == Semicolon && i + 1 == toks.len() => return Some(names),
            Some(_) if punct(i, ",") => i += 1,
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{literal_set_configs, what_is_left};
    use crate::measure::ladder::Left;
    use crate::sql::Dialect;

    #[test]
    fn what_a_session_holds_after_a_request_is_named_by_its_first_difference() {
        let opened = [0, 0, 0, 0, 0];
        assert_eq!(what_is_left(&opened, &opened), None);
        assert_eq!(what_is_left(&opened, &[0, 1, 0, 0, 0]), Some(Left::Locks));
        assert_eq!(
            what_is_left(&opened, &[1, 1, 0, 0, 0]),
            Some(Left::Prepared)
        );
        assert_eq!(
            what_is_left(&opened, &[0, 0, 0, 1, 0]),
            Some(Left::Listening)
        );
        assert_eq!(
            what_is_left(&opened, &[0, 0, 0, 0, 0, 0]),
            Some(Left::Unread)
        );
    }

    fn read(statement: &str) -> Option<Vec<String>> {
        literal_set_configs(statement, Dialect::default())
    }

    #[test]
    fn only_set_config_calls_with_literal_arguments_are_read() {
        assert_eq!(
            read("SELECT set_config('app.user_id', '5', true)"),
            Some(vec!["app.user_id".to_string()])
        );
        assert_eq!(
            read(
                "select pg_catalog.set_config('App.Tenant', '7', false), set_config('app.x', 3, true);"
            ),
            Some(vec!["app.tenant".to_string(), "app.x".to_string()])
        );
        for other in [
            "SELECT set_config('app.a', '1', true), now()",
            "SELECT set_config('app.a', current_user, true)",
            "SELECT set_config('app.a', f(), true)",
            "SELECT set_config('app.a', '1', true) FROM t",
            "SELECT set_config(name, '1', true) FROM t",
            "SELECT myschema.set_config('app.a', '1', true)",
            "SELECT set_config('app.a', '1' || f(), true)",
            "SELECT 1",
            "WITH x AS (SELECT 1) SELECT set_config('app.a', '1', true)",
        ] {
            assert_eq!(read(other), None, "{other}");
        }
    }
}
