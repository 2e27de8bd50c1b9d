//! The connecting role is part of the threat model: `risks` names every right that lets SQL act
//! outside the rolled-back transaction, the least-privilege SQL of the README creates roles that
//! have none, and those roles are enough to run the reference project's checks and a migration.

mod common;

use common::*;
use plancheck::db::role::risks;

/// The user a key=value connection string names.
fn user_of(conn: &str) -> &str {
    conn.split_whitespace()
        .find_map(|kv| kv.strip_prefix("user="))
        .expect("the test server's connection string names its user")
}

/// The role name and the rights `risks` reports for a session opened with `conn`.
fn risks_of(conn: &str) -> (String, Vec<String>) {
    let session = Session::open(conn);
    let (role, found) = session
        .block_on(risks(session.client()))
        .expect("the role's rights");
    for r in &found {
        assert!(!r.what.is_empty(), "{r:?}");
    }
    (role, found.into_iter().map(|r| r.right).collect())
}

/// Fails the test unless `extension` can be created on the test server: a test that cannot run
/// here says so, it does not pass unseen.
fn require_extension(conn: &str, extension: &str) {
    let count = query_text(
        conn,
        &format!("SELECT count(*) FROM pg_available_extensions WHERE name = '{extension}'"),
    );
    assert_eq!(
        count, "1",
        "the {extension} extension is not available on the test server: install PostgreSQL's \
         contrib modules"
    );
}

#[test]
fn the_superuser_is_reported_as_superuser() {
    let db = fresh_board("role_superuser");
    assert_eq!(
        risks_of(&db),
        (user_of(&db).to_string(), vec!["superuser".to_string()])
    );
}

#[test]
fn a_superuser_is_warned_about_once_on_stderr_and_q_leaves_it_to_the_reports() {
    // Regression: two long warning lines on every run as a superuser, which -q did not silence.
    let db = fresh_board("role_quiet");
    let one = ["--only", "thread-page-first", "--scope", "member"];
    let run = check(&db, &reference_project(), &one);
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.shown());
    assert!(
        warnings[0].starts_with(&format!("warning: role {} has superuser: ", user_of(&db))),
        "{}",
        run.shown()
    );
    // With -q: nothing on stderr, and the report still names the right and what it allows.
    let run = check(&db, &reference_project(), &[&one[..], &["-q"]].concat());
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert!(!run.stderr.contains("superuser"), "{}", run.shown());
    let report = run.report();
    assert_eq!(
        report["role_warnings"][0]["right"], "superuser",
        "{report:#}"
    );
    assert!(
        report["role_warnings"][0]["what"]
            .as_str()
            .is_some_and(|w| w.contains("outside any transaction")),
        "{report:#}"
    );
}

#[test]
fn the_least_privilege_roles_have_no_risky_right() {
    let roles = least_privilege("role_plain");
    assert_eq!(
        risks_of(&roles.check),
        (format!("{}_check", roles.prefix), vec![])
    );
    // The migration role owns the tables through membership, which is no risk while the
    // owner is not a superuser.
    assert_eq!(risks_of(&roles.migrate).1, Vec::<String>::new());
}

#[test]
fn pg_signal_backend_is_reported_granted_directly_or_through_a_role() {
    let roles = least_privilege("role_signal");
    let p = &roles.prefix;
    sql(
        &roles.admin,
        &format!("GRANT pg_signal_backend TO {p}_check"),
    );
    assert_eq!(risks_of(&roles.check).1, ["pg_signal_backend"]);
    // Through a role it may SET ROLE to.
    sql(
        &roles.admin,
        &format!(
            "REVOKE pg_signal_backend FROM {p}_check; CREATE ROLE {p}_ops NOLOGIN; \
             GRANT pg_signal_backend TO {p}_ops; GRANT {p}_ops TO {p}_check"
        ),
    );
    assert_eq!(risks_of(&roles.check).1, ["pg_signal_backend"]);
}

#[test]
fn membership_in_a_superuser_role_is_superuser() {
    let roles = least_privilege("role_super_member");
    let p = &roles.prefix;
    sql(
        &roles.admin,
        &format!("CREATE ROLE {p}_admin NOLOGIN SUPERUSER; GRANT {p}_admin TO {p}_check"),
    );
    assert_eq!(risks_of(&roles.check).1, ["superuser"]);
}

#[test]
fn pg_write_server_files_is_reported_and_writes_a_file_from_a_read_only_transaction() {
    let roles = least_privilege("role_write_files");
    let p = &roles.prefix;
    sql(
        &roles.admin,
        &format!("GRANT pg_write_server_files TO {p}_check"),
    );
    assert_eq!(risks_of(&roles.check).1, ["pg_write_server_files"]);
    // The claim, shown: the file outlives the rollback.
    let data = query_text(&roles.admin, "SHOW data_directory");
    let file = format!("{data}/{p}.txt");
    sql(
        &roles.check,
        &format!("BEGIN READ ONLY; COPY (SELECT 'outside') TO '{file}'; ROLLBACK"),
    );
    let written = query_text(&roles.admin, &format!("SELECT pg_read_file('{file}')"));
    assert_eq!(written, "outside\n");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn replication_is_reported_and_its_slot_outlives_the_rollback() {
    let roles = least_privilege("role_replication");
    let p = &roles.prefix;
    sql(&roles.admin, &format!("ALTER ROLE {p}_check REPLICATION"));
    assert_eq!(risks_of(&roles.check).1, ["replication"]);
    sql(
        &roles.check,
        &format!(
            "BEGIN READ ONLY; SELECT pg_create_physical_replication_slot('{p}_slot'); ROLLBACK"
        ),
    );
    let slots = format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{p}_slot'");
    assert_eq!(query_text(&roles.admin, &slots), "1");
    // The attribute is not inherited, but SET ROLE to a role that has it is enough to create
    // a slot, so membership counts.
    sql(
        &roles.admin,
        &format!(
            "SELECT pg_drop_replication_slot('{p}_slot'); ALTER ROLE {p}_check NOREPLICATION; \
             CREATE ROLE {p}_replicator NOLOGIN REPLICATION; GRANT {p}_replicator TO {p}_check"
        ),
    );
    assert_eq!(risks_of(&roles.check).1, ["replication"]);
    sql(
        &roles.check,
        &format!(
            "BEGIN READ ONLY; SET ROLE {p}_replicator; \
             SELECT pg_create_physical_replication_slot('{p}_slot'); ROLLBACK"
        ),
    );
    assert_eq!(query_text(&roles.admin, &slots), "1");
    sql(
        &roles.admin,
        &format!("SELECT pg_drop_replication_slot('{p}_slot')"),
    );
}

#[test]
fn dblink_is_reported_where_the_role_may_call_a_connecting_function() {
    let roles = least_privilege("role_dblink");
    require_extension(&roles.admin, "dblink");
    let p = &roles.prefix;
    sql(
        &roles.admin,
        "CREATE SCHEMA ext; CREATE EXTENSION dblink SCHEMA ext",
    );
    // Without USAGE on its schema no function of it can be called.
    assert_eq!(risks_of(&roles.check).1, Vec::<String>::new());
    // PUBLIC may EXECUTE every dblink function but dblink_connect_u: USAGE is all it takes.
    sql(
        &roles.admin,
        &format!("GRANT USAGE ON SCHEMA ext TO {p}_check"),
    );
    assert_eq!(risks_of(&roles.check).1, ["dblink"]);
    sql(
        &roles.admin,
        "REVOKE EXECUTE ON FUNCTION ext.dblink_connect(text), ext.dblink_connect(text, text), \
         ext.dblink(text, text), ext.dblink(text, text, boolean), \
         ext.dblink_exec(text, text), ext.dblink_exec(text, text, boolean) FROM PUBLIC",
    );
    assert_eq!(risks_of(&roles.check).1, Vec::<String>::new());
}

#[test]
fn postgres_fdw_is_reported_with_usage_on_the_wrapper_or_a_server() {
    let roles = least_privilege("role_fdw");
    require_extension(&roles.admin, "postgres_fdw");
    let p = &roles.prefix;
    sql(&roles.admin, "CREATE EXTENSION postgres_fdw");
    // PUBLIC has no USAGE on the wrapper.
    assert_eq!(risks_of(&roles.check).1, Vec::<String>::new());
    sql(
        &roles.admin,
        &format!("GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO {p}_check"),
    );
    assert_eq!(risks_of(&roles.check).1, ["postgres_fdw"]);
    sql(
        &roles.admin,
        &format!(
            "REVOKE USAGE ON FOREIGN DATA WRAPPER postgres_fdw FROM {p}_check; \
             CREATE SERVER {p}_elsewhere FOREIGN DATA WRAPPER postgres_fdw; \
             GRANT USAGE ON FOREIGN SERVER {p}_elsewhere TO {p}_check"
        ),
    );
    assert_eq!(risks_of(&roles.check).1, ["postgres_fdw"]);
}

#[test]
fn the_check_role_is_enough_for_every_check_of_the_reference_project() {
    let roles = least_privilege("role_check_run");
    // Under --strict-role too: the roles' own temp_file_limit bounds their temporary files.
    let run = check(&roles.check, &reference_project(), &["--strict-role"]);
    let report = run.report();
    let verdicts = verdicts(&report);
    assert_eq!(verdicts.len(), REFERENCE_CHECKS, "{}", run.shown());
    for (read_path, scope, verdict) in &verdicts {
        assert_eq!(verdict, "pass", "{read_path} [{scope}]\n{}", run.shown());
    }
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert!(!run.stderr.contains("temp_file_limit"), "{}", run.shown());
}

#[test]
fn the_migrate_role_is_enough_to_check_a_migration() {
    let roles = least_privilege("role_migrate_run");
    // ALTER TABLE and CREATE INDEX both need the table's owner.
    let migration = temp_file(
        "0001_nickname.sql",
        "ALTER TABLE members ADD COLUMN nickname text;\n\
         CREATE INDEX members_nickname_idx ON members (nickname);\n",
    );
    let run = check(
        &roles.migrate,
        &reference_project(),
        &["--migration", migration.arg(), "--strict-role"],
    );
    let report = run.report();
    let checks = report["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), REFERENCE_CHECKS, "{}", run.shown());
    for check in checks {
        assert_eq!(check["verdict"], "pass", "{check:#}\n{}", run.stderr);
        assert_eq!(
            check["before"]["verdict"], "pass",
            "{check:#}\n{}",
            run.stderr
        );
    }
    assert_eq!(run.status, Some(0), "{}", run.shown());
    let column = "SELECT count(*) FROM information_schema.columns \
                  WHERE table_name = 'members' AND column_name = 'nickname'";
    assert_eq!(query_text(&roles.admin, column), "0");
}
