//! The least-privilege roles of the README (`db::role::LEAST_PRIVILEGE_SQL`) on a test's own
//! board, for tests that connect as the role CI should use rather than as the superuser.

use super::server::{as_user, fresh_board, sql};
use plancheck::db::role::LEAST_PRIVILEGE_SQL;

/// The least-privilege roles of one test, on its own fresh board: roles are shared by every
/// database of the server, so each test names its own.
pub struct Roles {
    /// The superuser's connection string to the test's database.
    pub admin: String,
    pub check: String,
    pub migrate: String,
    pub prefix: String,
}

/// A fresh board whose tables belong to a non-superuser owner role, and the roles that
/// [`LEAST_PRIVILEGE_SQL`] creates, with its psql variables substituted as psql does
/// (`:"name"` becomes a quoted identifier) and the role names made unique to the test.
pub fn least_privilege(prefix: &str) -> Roles {
    let admin = fresh_board(prefix);
    let owner = format!("{prefix}_owner");
    sql(
        &admin,
        &format!(
            "CREATE ROLE {owner} NOLOGIN;
             DO $$ DECLARE t record; BEGIN
               FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' LOOP
                 EXECUTE format('ALTER TABLE public.%I OWNER TO {owner}', t.tablename);
               END LOOP;
             END $$;"
        ),
    );
    let adapted = LEAST_PRIVILEGE_SQL
        .replace("plancheck_check", &format!("{prefix}_check"))
        .replace("plancheck_migrate", &format!("{prefix}_migrate"))
        .replace(":\"dbname\"", &format!("\"{prefix}\""))
        .replace(":\"app_schema\"", "\"public\"")
        .replace(":\"app_owner\"", &format!("\"{owner}\""));
    sql(&admin, &adapted);
    Roles {
        check: as_user(&admin, &format!("{prefix}_check")),
        migrate: as_user(&admin, &format!("{prefix}_migrate")),
        admin,
        prefix: prefix.to_string(),
    }
}
