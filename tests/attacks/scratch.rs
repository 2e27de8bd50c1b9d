//! The scratch copy (class 14): to settle usability, plancheck copies the definitions a read path
//! touches from the measured database to a throwaway local server and re-plans there. Those
//! definitions are the database's own code (a pull request's migration may have written them),
//! and a function the planner folds runs at plan time. On the copy, objects belong to a role
//! that is no superuser and the re-plans run as one with nothing but `SELECT`: a function there
//! can do no more than they may.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::common::*;

/// 100,000 events; a partial index for kinds other than `x` and the full index that wins every
/// re-plan on the measured server, so the check's question goes to the copy.
const EVENTS: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, account_id bigint NOT NULL, kind text NOT NULL);
INSERT INTO events SELECT i, i % 2000, (ARRAY['a', 'b', 'c', 'x'])[(i / 2000) % 4 + 1]
    FROM generate_series(1, 100000) i;
CREATE INDEX events_account ON events (account_id);
CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x';
";

/// Runs a check whose read path folds `folded(42)` (a function that, on the copy only, calls
/// one that runs `body`, declared with `security`) and returns the check's JSON, with the
/// marker the deed would create.
fn folded_on_the_copy(name: &str, security: &str, body: &str) -> (serde_json::Value, String) {
    let db = empty_database(name);
    sql(&db, EVENTS);
    sql(&db, "VACUUM ANALYZE events");
    let drop_box = tempfile::tempdir().unwrap();
    fs::set_permissions(drop_box.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let marker = drop_box.path().join("pwned");
    let body = body.replace("MARKER", marker.to_str().unwrap());
    // The copy's database is `postgres`; the measured one is not: the attack fires on the copy.
    // PostgreSQL refuses COPY in an IMMUTABLE function itself: the folded function calls a
    // VOLATILE one that does the deed.
    sql(
        &db,
        &format!(
            "CREATE FUNCTION deed() RETURNS void VOLATILE LANGUAGE plpgsql {security} AS $f$ \
             BEGIN {body} END $f$; \
             CREATE FUNCTION folded(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $f$ \
             BEGIN IF current_database() = 'postgres' THEN PERFORM deed(); END IF; \
             RETURN $1; END $f$"
        ),
    );
    let dir = one_read_path(
        "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = folded(42)",
        &member("events_account_not_x"),
    );
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = plancheck(&[
        "check",
        "--database-url",
        &db,
        "--project",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
        "--warmup",
        "0",
        "--iterations",
        "1",
    ]);
    cmd.env("TMPDIR", tmp.path())
        .env("PLANCHECK_CACHE_DIR", cache.path());
    let run = run_command(&mut cmd);
    assert_eq!(run.code(), 1, "{}", run.shown());
    assert!(
        !marker.exists(),
        "the function ran a program on the copy: {}",
        run.shown()
    );
    let report = run.report();
    let c = check_of(&report, "path", "member").clone();
    (c, marker.display().to_string())
}

/// Whether the check says the copy refused the deed for want of a right: SQLSTATE 42501,
/// named by its code (never by the server's words).
fn refused_on_the_copy(c: &serde_json::Value) -> bool {
    let why = c["unsettled"].as_str().unwrap_or_default();
    why.starts_with("the re-plan on the scratch copy failed: ")
        && why.contains("SQLSTATE 42501 (insufficient_privilege)")
}

#[test]
fn a_function_folded_on_the_copy_cannot_run_a_program() {
    let (c, _) = folded_on_the_copy(
        "attack_scratch_program",
        "",
        "EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch MARKER''';",
    );
    // Refused on the copy, so nothing is settled there, and the check says why.
    assert_ne!(c["settled_by"], "scratch", "{c:#}");
    assert!(refused_on_the_copy(&c), "{c:#}");
}

#[test]
fn a_security_definer_function_on_the_copy_runs_as_no_superuser() {
    // Its owner on the copy is plancheck's owner role, which is no superuser.
    let (c, _) = folded_on_the_copy(
        "attack_scratch_definer",
        "SECURITY DEFINER",
        "EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch MARKER''';",
    );
    assert_ne!(c["settled_by"], "scratch", "{c:#}");
    assert!(refused_on_the_copy(&c), "{c:#}");
}

#[test]
fn a_function_folded_on_the_copy_cannot_read_the_server_s_files() {
    let (c, _) = folded_on_the_copy(
        "attack_scratch_read_file",
        "SECURITY DEFINER",
        "PERFORM pg_read_file('postgresql.conf');",
    );
    assert_ne!(c["settled_by"], "scratch", "{c:#}");
    assert!(refused_on_the_copy(&c), "{c:#}");
}
