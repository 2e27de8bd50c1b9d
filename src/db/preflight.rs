//! The server facts a run reads before its checks: version, settings, free connection slots,
//! standby or read-only, which relations exist. Each is one catalog read on the run's first
//! session; what to do with the answer is decided by the caller.

use std::collections::BTreeSet;

use tokio_postgres::Client;

use super::{Asked, Unanswered};
use crate::error::DatabaseFailure;

/// The PostgreSQL majors plancheck supports: what it reads of EXPLAIN, the catalog and the
/// server's settings is tested on these (docs: "Supported PostgreSQL versions").
pub const SUPPORTED_MAJORS: std::ops::RangeInclusive<u32> = 13..=18;

/// The major of a `server_version` as a server reports it when a session starts
/// (`15.18 (Debian 15.18-0+deb12u1)`, `18beta1`, `17devel`, `9.6.24`): its leading number;
/// None when it does not start with one.
pub fn major_of(server_version: &str) -> Option<u32> {
    let digits: String = server_version
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether a session whose server reported `server_version` (None: nothing) may be used:
/// Err with whether the version was readable, when it names no major plancheck supports.
pub fn supported(server_version: Option<&str>) -> Result<(), bool> {
    match server_version.map(major_of) {
        Some(Some(major)) if SUPPORTED_MAJORS.contains(&major) => Ok(()),
        Some(Some(_)) => Err(true),
        _ => Err(false),
    }
}

/// The server's major version (`server_version_num` / 10000: 15, 16, …).
pub async fn server_major(client: &Client) -> Result<u32, DatabaseFailure> {
    let row = client
        .query_one(
            "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4",
            &[],
        )
        .await
        .map_err(|e| Unanswered::of(Asked::ServerVersionNum, &e))?;
    Ok(u32::try_from(row.get::<_, i32>(0) / 10000).unwrap_or(0))
}

/// `server_version` as the server reports it, e.g. `15.18 (Debian 15.18-0+deb12u1)`.
pub async fn server_version(client: &Client) -> Result<String, DatabaseFailure> {
    let row = client
        .query_one("SELECT pg_catalog.current_setting('server_version')", &[])
        .await
        .map_err(|e| Unanswered::of(Asked::ServerVersion, &e))?;
    Ok(row.get(0))
}

/// The session's `standard_conforming_strings`: whether a backslash in a plain `'…'` string is
/// an ordinary character (on, the default since 9.1).
pub async fn standard_conforming_strings(client: &Client) -> Result<bool, DatabaseFailure> {
    let row = client
        .query_one(
            "SELECT pg_catalog.current_setting('standard_conforming_strings')",
            &[],
        )
        .await
        .map_err(|e| Unanswered::of(Asked::ServerSettings, &e))?;
    Ok(row.get::<_, String>(0) != "off")
}

/// Which of `names` (`relation` or `schema.relation`) name no relation in the database, in one
/// query.
pub async fn unknown_relations<'a>(
    client: &Client,
    names: &BTreeSet<&'a str>,
) -> Result<BTreeSet<&'a str>, DatabaseFailure> {
    if names.is_empty() {
        return Ok(BTreeSet::new());
    }
    let (schemas, relations): (Vec<Option<&str>>, Vec<&str>) = names
        .iter()
        .map(|entry| match entry.split_once('.') {
            Some((s, n)) => (Some(s), n),
            None => (None, *entry),
        })
        .unzip();
    let rows = client
        .query(
            "SELECT u.o::pg_catalog.int4 FROM ROWS FROM (\
                    pg_catalog.unnest($1::pg_catalog.text[]), \
                    pg_catalog.unnest($2::pg_catalog.text[])) WITH ORDINALITY AS u(s, n, o) \
             WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c \
                 JOIN pg_catalog.pg_namespace ns ON ns.oid OPERATOR(pg_catalog.=) c.relnamespace \
                 WHERE c.relname OPERATOR(pg_catalog.=) u.n \
                   AND (u.s IS NULL OR ns.nspname OPERATOR(pg_catalog.=) u.s))",
            &[&schemas, &relations],
        )
        .await
        .map_err(|e| Unanswered::of(Asked::Catalog, &e))?;
    let listed: Vec<&str> = names.iter().copied().collect();
    Ok(rows
        .iter()
        .filter_map(|r| {
            listed
                .get(usize::try_from(r.get::<_, i32>(0)).ok()?.checked_sub(1)?)
                .copied()
        })
        .collect())
}

/// The connection slots free now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeSlots {
    /// The server's, less those reserved for superusers (and, from PostgreSQL 16, for roles with
    /// `pg_use_reserved_connections`), less the client sessions open now (this one among them).
    pub server: i32,
    /// The role's own connection limit less its sessions open now; None when it has no limit.
    pub role: Option<i32>,
}

/// The connection slots free now, as the server counts them.
pub async fn free_slots(client: &Client) -> Result<FreeSlots, DatabaseFailure> {
    let row = client
        .query_one(
            "SELECT pg_catalog.current_setting('max_connections')::int \
                    - pg_catalog.current_setting('superuser_reserved_connections')::int \
                    - COALESCE(pg_catalog.current_setting('reserved_connections', true)::int, 0) \
                    - (SELECT count(*)::int FROM pg_catalog.pg_stat_activity \
                       WHERE backend_type OPERATOR(pg_catalog.=) 'client backend'), \
                    (SELECT CASE WHEN r.rolconnlimit OPERATOR(pg_catalog.>=) 0 \
                                 THEN r.rolconnlimit OPERATOR(pg_catalog.-) \
                                      (SELECT count(*)::int FROM pg_catalog.pg_stat_activity a \
                                       WHERE a.usename OPERATOR(pg_catalog.=) r.rolname) END \
                     FROM pg_catalog.pg_roles r \
                     WHERE r.rolname OPERATOR(pg_catalog.=) current_user)",
            &[],
        )
        .await
        .map_err(|e| Unanswered::of(Asked::FreeSlots, &e))?;
    Ok(FreeSlots {
        server: row.get(0),
        role: row.get(1),
    })
}

/// Whether the server takes writes at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteState {
    /// A standby, in recovery.
    pub standby: bool,
    /// `default_transaction_read_only = on`.
    pub read_only: bool,
}

/// Whether the server is a standby, or read-only by default.
pub async fn write_state(client: &Client) -> Result<WriteState, DatabaseFailure> {
    let row = client
        .query_one(
            "SELECT pg_catalog.pg_is_in_recovery(), \
                    pg_catalog.current_setting('default_transaction_read_only') = 'on'",
            &[],
        )
        .await
        .map_err(|e| Unanswered::of(Asked::ServerState, &e))?;
    Ok(WriteState {
        standby: row.get(0),
        read_only: row.get(1),
    })
}

#[cfg(test)]
mod tests {
    use super::{major_of, supported};

    #[test]
    fn the_versions_a_server_reports_are_read_as_their_major() {
        assert_eq!(major_of("15.18 (Debian 15.18-0+deb12u1)"), Some(15));
        assert_eq!(major_of("18beta1"), Some(18));
        assert_eq!(major_of("9.6.24"), Some(9));
        assert_eq!(major_of("garbage"), None);
        assert_eq!(major_of(""), None);
        assert_eq!(supported(Some("13.0")), Ok(()));
        assert_eq!(supported(Some("18.4")), Ok(()));
        assert_eq!(supported(Some("12.22")), Err(true));
        assert_eq!(supported(Some("19devel")), Err(true));
        assert_eq!(supported(Some("99999999999999999999")), Err(false));
        assert_eq!(supported(Some("PostgreSQL 15")), Err(false));
        assert_eq!(supported(None), Err(false));
    }
}
