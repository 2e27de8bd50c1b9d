//! The connecting role is part of the threat model: the files plancheck runs come from pull
//! requests and run with that role's rights, and some rights let SQL act outside the
//! rolled-back transaction. [`risks`] names those rights; [`LEAST_PRIVILEGE_SQL`] is what a DBA
//! runs to create roles that have none of them.

use tokio_postgres::Client;

use crate::error::DatabaseFailure;

/// A right of the connecting role that lets a project's SQL act outside the rolled-back
/// transaction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RoleRisk {
    /// The right: `superuser`, `replication`, a predefined role (`pg_signal_backend`, …),
    /// `dblink` or `postgres_fdw`.
    pub right: String,
    /// One sentence: what SQL could do with it that a rollback does not undo.
    pub what: String,
}

/// Every right [`risks`] reports, in the order it reports them, with what it lets SQL do.
const RIGHTS: &[(&str, &str)] = &[
    (
        "superuser",
        "a superuser's SQL can do anything the server can, outside any transaction: run \
         programs, write files, end other sessions, open connections that commit (every other \
         right plancheck warns about is implied, so it is the only one named)",
    ),
    (
        "replication",
        "SQL can create replication slots, which outlive the rollback and make the server keep \
         WAL until someone drops them",
    ),
    (
        "pg_signal_backend",
        "SQL can cancel or terminate any non-superuser's session, the application's included, \
         and a rollback brings none of them back",
    ),
    (
        "pg_execute_server_program",
        "SQL can run any program on the database server as its operating-system user, through \
         COPY … PROGRAM",
    ),
    (
        "pg_write_server_files",
        "SQL can write any file the server's operating-system user may write, through COPY … \
         TO 'file', even in a read-only transaction",
    ),
    (
        "pg_read_server_files",
        "SQL can read any file the server's operating-system user may read (its configuration \
         and keys included) through COPY … FROM 'file' in a read-write transaction such as a \
         migration's, and what an error then shows cannot be rolled back",
    ),
    (
        "dblink",
        "SQL can open a second connection, to this server or any other the database host can \
         reach, with a password it supplies, whose statements commit on their own and which can \
         carry away what it reads",
    ),
    (
        "postgres_fdw",
        "SQL can reach another server (or this one again) as the user a user mapping names and \
         run there whatever that user may run, with effects no local rollback undoes",
    ),
];

/// The session user, and the names in [`RIGHTS`] it holds. Every role the session user is a
/// member of counts (`pg_has_role(…, 'MEMBER')`, which from PostgreSQL 16 also counts grants
/// made `WITH INHERIT FALSE` or `SET FALSE`): a setup statement may `SET ROLE` to it, and the
/// attribute checks (`rolsuper`, `rolreplication`) and privilege checks then see that role.
/// The session user, not the current one, because `RESET ROLE` returns to it. dblink and
/// postgres_fdw are found through the extension's own objects (`pg_depend`), so neither the
/// schema they were installed in nor their absence matters; a function counts only where the
/// role also has USAGE on its schema, since it cannot be called otherwise.
const RISKS_QUERY: &str = "\
WITH reach AS (
    SELECT r.oid, r.rolname, r.rolsuper, r.rolreplication
    FROM pg_catalog.pg_roles r
    WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')
), member_of AS (
    SELECT d.objid, d.classid, e.extname
    FROM pg_catalog.pg_depend d
    JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
    WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
      AND d.deptype = 'e'
      AND e.extname IN ('dblink', 'postgres_fdw')
), dblink_connects AS (
    SELECT p.oid, p.pronamespace
    FROM member_of m
    JOIN pg_catalog.pg_proc p ON p.oid = m.objid
    WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND m.extname = 'dblink'
      AND (p.proname::text, pg_catalog.oidvectortypes(p.proargtypes)) IN (
          ('dblink_connect', 'text'), ('dblink_connect', 'text, text'),
          ('dblink_connect_u', 'text'), ('dblink_connect_u', 'text, text'),
          ('dblink', 'text, text'), ('dblink', 'text, text, boolean'),
          ('dblink_exec', 'text, text'), ('dblink_exec', 'text, text, boolean'))
), fdw AS (
    SELECT w.oid
    FROM pg_catalog.pg_foreign_data_wrapper w
    JOIN member_of m ON m.objid = w.fdwhandler
    WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND m.extname = 'postgres_fdw'
), found(name) AS (
    SELECT 'superuser' WHERE EXISTS (SELECT 1 FROM reach WHERE rolsuper)
    UNION ALL
    SELECT 'replication' WHERE EXISTS (SELECT 1 FROM reach WHERE rolreplication)
    UNION ALL
    SELECT rolname::text FROM reach
    WHERE rolname IN ('pg_signal_backend', 'pg_execute_server_program',
                      'pg_write_server_files', 'pg_read_server_files')
    UNION ALL
    SELECT 'dblink' WHERE EXISTS (
        SELECT 1 FROM reach r, dblink_connects f
        WHERE pg_catalog.has_function_privilege(r.oid, f.oid, 'EXECUTE')
          AND pg_catalog.has_schema_privilege(r.oid, f.pronamespace, 'USAGE'))
    UNION ALL
    SELECT 'postgres_fdw' WHERE EXISTS (
        SELECT 1 FROM reach r, fdw w
        WHERE pg_catalog.has_foreign_data_wrapper_privilege(r.oid, w.oid, 'USAGE')
           OR EXISTS (SELECT 1 FROM pg_catalog.pg_foreign_server s
                      WHERE s.srvfdw = w.oid
                        AND pg_catalog.has_server_privilege(r.oid, s.oid, 'USAGE')))
)
SELECT session_user::text, ARRAY(SELECT name FROM found)";

/// The connecting role's name and the risky rights it has (directly or through role
/// membership, as `pg_has_role(…, 'MEMBER')` sees it: a setup statement can SET ROLE to any
/// role it is a member of). A superuser, or a member of a superuser role, is reported as
/// `superuser` alone: that right implies every other. BYPASSRLS is not reported: it widens
/// what SQL may read, not what outlives the rollback. One catalog query, which the role can
/// always run.
pub async fn risks(client: &Client) -> Result<(String, Vec<RoleRisk>), DatabaseFailure> {
    let row = client
        .query_one(RISKS_QUERY, &[])
        .await
        .map_err(|e| super::Unanswered::of(super::Asked::RoleRights, &e))?;
    let role: String = row.get(0);
    let found: Vec<String> = row.get(1);
    Ok((role, from_names(&found)))
}

/// The risks named, in [`RIGHTS`] order; `superuser` alone when it is among them.
fn from_names(found: &[String]) -> Vec<RoleRisk> {
    let held = |name: &str| found.iter().any(|f| f == name);
    let superuser = held("superuser");
    RIGHTS
        .iter()
        .filter(|(name, _)| held(name) && (!superuser || *name == "superuser"))
        .map(|(name, what)| RoleRisk {
            right: (*name).to_string(),
            what: (*what).to_string(),
        })
        .collect()
}

/// The SQL a DBA runs (as a superuser, with psql) to create plancheck's least-privilege roles:
/// `plancheck_check` for `check` and `lint`, and `plancheck_migrate` for `check --migration`.
/// The `:"name"` placeholders are psql variables, quoted as identifiers when psql substitutes
/// them.
pub const LEAST_PRIVILEGE_SQL: &str = r#"-- plancheck's least-privilege roles. Run as a superuser with psql, naming the database, the
-- application's schema and the role that owns its tables:
--
--   psql -v dbname=staging -v app_schema=app -v app_owner=app_owner -f plancheck-roles.sql
--
-- Repeat the three schema lines of each role for every schema the read paths read.

-- plancheck_check: `plancheck check` and `plancheck lint`. No attribute here lets SQL act
-- outside the transaction plancheck rolls back.
CREATE ROLE plancheck_check LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
-- To open a session on the database at all.
GRANT CONNECT ON DATABASE :"dbname" TO plancheck_check;
-- To see the tables and indexes the read paths and expectations name.
GRANT USAGE ON SCHEMA :"app_schema" TO plancheck_check;
-- The read paths run under EXPLAIN ANALYZE, so they read these tables. Sequences need nothing:
-- a read-only transaction cannot call nextval.
GRANT SELECT ON ALL TABLES IN SCHEMA :"app_schema" TO plancheck_check;
-- The same for tables the owner creates later.
ALTER DEFAULT PRIVILEGES FOR ROLE :"app_owner" IN SCHEMA :"app_schema"
    GRANT SELECT ON TABLES TO plancheck_check;
-- Functions the read paths call need EXECUTE, which PUBLIC has on every new function unless
-- it was revoked; only then grant the ones the read paths call, for example:
--   GRANT EXECUTE ON FUNCTION app.visible_posts(bigint) TO plancheck_check;
-- A second guard: every transaction of this role starts read-only even before plancheck says so.
ALTER ROLE plancheck_check SET default_transaction_read_only = on;
-- temp_file_limit is a superuser setting: the role cannot set --temp-file-limit itself, so its
-- sessions start bounded (without it, --strict-role refuses the role where the server has none).
ALTER ROLE plancheck_check SET temp_file_limit = '1GB';
-- Only if a scope's setup runs `SET ROLE app_member`: membership is what allows it, and it
-- also hands plancheck_check everything app_member may do, so grant only roles that have no
-- right plancheck warns about:
--   GRANT app_member TO plancheck_check;

-- plancheck_migrate: `plancheck check --migration`, which applies the migration in a
-- read-write transaction that is rolled back. In PostgreSQL only a table's owner may CREATE
-- INDEX on it, ALTER it, DROP its indexes or ANALYZE it, so this role must be a member of the
-- role that owns the tables: it may then do everything that owner may, committed or not. That
-- is why it is a separate role, used only for migration checks, whose connection string only
-- trusted jobs should see; and why the owner should not be a superuser (plancheck warns).
CREATE ROLE plancheck_migrate LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
-- Every check also runs before and after the migration, with the check role's rights.
GRANT plancheck_check TO plancheck_migrate;
-- Its sessions bounded as plancheck_check's are (role settings are not inherited).
ALTER ROLE plancheck_migrate SET temp_file_limit = '1GB';
-- Ownership, through membership: CREATE INDEX, ALTER TABLE, DROP INDEX, ANALYZE.
GRANT :"app_owner" TO plancheck_migrate;
-- Tables and indexes the migration creates (the owner of the schema has this already).
GRANT USAGE, CREATE ON SCHEMA :"app_schema" TO plancheck_migrate;
-- plancheck applies each migration statement through a temporary function inside the
-- rolled-back transaction. PUBLIC has TEMPORARY by default; this keeps it if that was revoked.
GRANT CONNECT, TEMPORARY ON DATABASE :"dbname" TO plancheck_migrate;
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &[&str]) -> Vec<String> {
        let found: Vec<String> = found.iter().map(|s| s.to_string()).collect();
        from_names(&found).into_iter().map(|r| r.right).collect()
    }

    #[test]
    fn a_superuser_is_reported_as_superuser_alone() {
        assert_eq!(
            names(&["dblink", "superuser", "replication"]),
            ["superuser"]
        );
    }

    #[test]
    fn rights_are_reported_in_one_order_with_a_sentence_each() {
        assert_eq!(
            names(&["dblink", "pg_signal_backend", "replication"]),
            ["replication", "pg_signal_backend", "dblink"]
        );
        assert!(names(&[]).is_empty());
        for (name, what) in RIGHTS {
            assert!(!what.contains('\n') && what.len() > 40, "{name}: {what}");
        }
    }

    #[test]
    fn the_least_privilege_sql_uses_only_the_documented_variables() {
        let variables: Vec<&str> = LEAST_PRIVILEGE_SQL
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .flat_map(|l| l.split(":\"").skip(1))
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert!(!variables.is_empty());
        for v in variables {
            assert!(["dbname", "app_schema", "app_owner"].contains(&v), "{v}");
        }
    }
}
