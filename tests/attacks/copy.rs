//! The scratch copy, round three: the copy trusts nothing it copies. In CI a pull request's
//! migrations run before plancheck, and `--migration FILE` copies what the file creates: the
//! catalog the copy replays is the attacker's. Whatever the copy evaluates while it loads (an
//! index predicate, a CHECK constraint, a domain's CHECK, a generated column, an extension's
//! script) or while it re-plans (a function the planner folds) runs as a role with no right to
//! programs, files, other roles or plancheck's environment, on plancheck's clock; and what fails
//! there is named by what failed, never by the copy's words.
//!
//! Each attack defines, on the measured database, functions that do their deed only where they
//! are not on the measured database (on the copy), and looks where the deed would act: a marker
//! file a program would write (with the environment it saw), a secret planted in plancheck's
//! environment in every output, the clock.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;

/// 100,000 events; a partial index for kinds other than `x` and the full index that wins every
/// re-plan on the measured server, so the check's question goes to the copy.
const EVENTS: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, account_id bigint NOT NULL, kind text NOT NULL);
INSERT INTO events SELECT i, i % 2000, (ARRAY['a', 'b', 'c', 'x'])[(i / 2000) % 4 + 1]
    FROM generate_series(1, 100000) i;
CREATE INDEX events_account ON events (account_id);
";

/// The partial index the read path needs, created after the attack's definitions.
const PARTIAL: &str = "CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x'";

/// A read path the partial index cannot serve (the IN list admits `x`): the measured server's
/// plans leave it open, the copy settles it.
const NOT_USABLE: &str = "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = 42";

/// A value planted in plancheck's environment, which must appear in no output.
const SECRET: &str = "pw-planted-7c1e5b";

/// What one attack run left.
struct Attacked {
    run: Run,
    /// The marker the deed writes (with the environment it saw), if it was written.
    marker: Option<String>,
}

impl Attacked {
    /// The check's JSON.
    fn check(&self) -> serde_json::Value {
        check_of(&self.run.report(), "path", "member").clone()
    }

    /// Asserts that no program ran and no output holds the planted secret.
    fn held(&self) {
        assert_eq!(
            self.marker,
            None,
            "a program ran on the machine running plancheck: {}",
            self.run.shown()
        );
        assert!(
            !self.run.stdout.contains(SECRET) && !self.run.stderr.contains(SECRET),
            "the planted secret is in the output: {}",
            self.run.shown()
        );
    }
}

/// A folder the unprivileged server user can enter and write.
fn open_folder(mode: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(mode)).unwrap();
    dir
}

/// The functions every attack uses, on database `db`: `public.deed()` (VOLATILE) runs `COPY … TO
/// PROGRAM` writing the environment it sees into `marker`; `public.on_copy()` says whether the session
/// is anywhere but on `db` itself.
fn deed_sql(db_name: &str, marker: &Path) -> String {
    format!(
        "CREATE FUNCTION public.on_copy() RETURNS boolean STABLE LANGUAGE sql \
             AS $f$ SELECT current_database() <> '{db_name}' $f$; \
         CREATE FUNCTION public.deed() RETURNS void VOLATILE LANGUAGE plpgsql AS $f$ \
         BEGIN EXECUTE 'COPY (SELECT 1) TO PROGRAM ''env > {marker}'''; END $f$;",
        marker = marker.display()
    )
}

/// Sets up database `name` with [`EVENTS`], the deed, `attack` (SQL run after them, `MARKER`
/// replaced by the marker's path), then [`PARTIAL`] unless `attack` made it; runs `check` of
/// [`NOT_USABLE`] (or `read_path`) against it with `extra` arguments and the planted secret in
/// the environment.
fn attack_on_copy(name: &str, attack: &str, read_path: Option<&str>, extra: &[&str]) -> Attacked {
    let drop_box = open_folder(0o777);
    let marker = drop_box.path().join("pwned");
    let db = empty_database(name);
    sql(&db, EVENTS);
    sql(&db, &deed_sql(name, &marker));
    sql(&db, &attack.replace("MARKER", marker.to_str().unwrap()));
    if query_text(&db, "SELECT to_regclass('events_account_not_x') IS NULL") == "t" {
        sql(&db, PARTIAL);
    }
    sql(&db, "VACUUM ANALYZE events");
    let dir = one_read_path(
        read_path.unwrap_or(NOT_USABLE),
        &member("events_account_not_x"),
    );
    let run = run_attack(&db, dir.path(), extra, None);
    let marker = fs::read_to_string(&marker).ok();
    Attacked { run, marker }
}

/// `check --format json` of `project` on `db`, with `TMPDIR` and the cache folder (a new one
/// unless `cache` is given) in folders the server's user may enter, and the planted secret in
/// plancheck's environment where a CI job has its credentials.
fn run_attack(db: &str, project: &Path, extra: &[&str], cache: Option<&Path>) -> Run {
    let tmp = open_folder(0o755);
    let own_cache = open_folder(0o700);
    let mut args = vec![
        "check",
        "--database-url",
        db,
        "--project",
        project.to_str().unwrap(),
        "--format",
        "json",
        "--warmup",
        "0",
        "--iterations",
        "1",
    ];
    args.extend_from_slice(extra);
    let mut cmd = plancheck(&args);
    cmd.env("TMPDIR", tmp.path())
        .env(
            "PLANCHECK_CACHE_DIR",
            cache.unwrap_or_else(|| own_cache.path()),
        )
        .env("PGPASSWORD", SECRET)
        .env("CI_JOB_TOKEN", SECRET);
    run_command(&mut cmd)
}

/// A VOLATILE function that becomes, in turn, every superuser, the session's own user and the
/// session's authorization, doing the deed as each (SET is refused in a function that is not
/// VOLATILE: the IMMUTABLE one the planner folds calls this one).
const ESCALATE: &str = "CREATE FUNCTION public.escalate() RETURNS void VOLATILE LANGUAGE plpgsql AS $f$ \
    DECLARE r text; BEGIN \
      FOR r IN SELECT rolname FROM pg_roles WHERE rolsuper LOOP \
        BEGIN EXECUTE format('SET ROLE %I', r); PERFORM public.deed(); \
        EXCEPTION WHEN OTHERS THEN NULL; END; \
      END LOOP; \
      BEGIN RESET ROLE; PERFORM public.deed(); EXCEPTION WHEN OTHERS THEN NULL; END; \
      BEGIN SET SESSION AUTHORIZATION DEFAULT; PERFORM public.deed(); \
      EXCEPTION WHEN OTHERS THEN NULL; END; \
    END $f$;";

/// An IMMUTABLE PL/pgSQL function `public.gate()` that does the deed on the copy and answers true.
const GATE: &str = "CREATE FUNCTION public.gate() RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $f$ \
    BEGIN IF public.on_copy() THEN PERFORM public.deed(); END IF; RETURN true; END $f$;";

#[test]
fn an_index_predicate_evaluated_while_the_copy_loads_runs_no_program() {
    // CREATE INDEX on the copy folds the predicate's IMMUTABLE call while the index is built.
    let a = attack_on_copy(
        "attack_copy_predicate",
        &format!(
            "{GATE} CREATE INDEX events_account_not_x ON events (account_id) \
             WHERE kind <> 'x' AND public.gate();"
        ),
        None,
        &[],
    );
    a.held();
    assert_eq!(a.run.code(), 1, "{}", a.run.shown());
}

#[test]
fn a_check_constraint_evaluated_while_the_copy_loads_runs_no_program() {
    // ADD CONSTRAINT prepares the constraint (folding its IMMUTABLE call) to check the rows.
    let a = attack_on_copy(
        "attack_copy_check",
        &format!("{GATE} ALTER TABLE events ADD CONSTRAINT evil CHECK (public.gate() OR id > 0);"),
        None,
        &[],
    );
    a.held();
    assert_eq!(a.run.code(), 1, "{}", a.run.shown());
}

#[test]
fn a_domain_check_and_a_generated_column_evaluated_while_the_copy_loads_run_no_program() {
    let a = attack_on_copy(
        "attack_copy_domain",
        &format!(
            "{GATE} \
             CREATE FUNCTION public.gate_text(text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $f$ \
             BEGIN IF public.on_copy() THEN PERFORM public.deed(); END IF; RETURN $1; END $f$; \
             CREATE DOMAIN note AS text CHECK (public.gate() OR VALUE IS NULL); \
             ALTER TABLE events ADD COLUMN n note, \
                 ADD COLUMN g text GENERATED ALWAYS AS (public.gate_text(kind || public.gate_text('x'))) STORED;"
        ),
        None,
        &[],
    );
    a.held();
    assert_eq!(a.run.code(), 1, "{}", a.run.shown());
}

#[test]
fn a_function_folded_in_a_re_plan_cannot_become_the_copy_s_superuser() {
    // On the copy the re-plan's session must not be one that SET ROLE can take back to a
    // superuser: the function looks the superusers up and becomes each in turn.
    let a = attack_on_copy(
        "attack_copy_set_role",
        &format!(
            "{ESCALATE} \
             CREATE FUNCTION public.climb(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $f$ \
             BEGIN IF public.on_copy() THEN PERFORM public.escalate(); END IF; RETURN $1; END $f$;"
        ),
        Some("SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = public.climb(42)"),
        &[],
    );
    a.held();
    assert_eq!(a.run.code(), 1, "{}", a.run.shown());
}

#[test]
fn a_policy_naming_a_role_of_the_copy_gives_the_re_plan_no_right() {
    // The measured role is a member of roles named as the copy's own and as PostgreSQL's
    // predefined one that runs programs; a policy names them. On the copy the re-plan's role must
    // not become a member of either.
    let drop_box = open_folder(0o777);
    let marker = drop_box.path().join("pwned");
    let name = "attack_copy_policy_roles";
    let db = empty_database(name);
    sql(&db, EVENTS);
    sql(&db, &deed_sql(name, &marker));
    sql(&db, PARTIAL);
    // The test server's superuser is `plancheck` already: the others are made, and granted.
    for role in ["plancheck_owner", "plancheck_reader"] {
        sql(
            &db,
            &format!(
                "DO $$ BEGIN CREATE ROLE {role} NOLOGIN; EXCEPTION WHEN duplicate_object THEN \
                 NULL; END $$; GRANT {role} TO CURRENT_USER"
            ),
        );
    }
    sql(
        &db,
        "GRANT pg_execute_server_program TO CURRENT_USER; \
         ALTER TABLE events ENABLE ROW LEVEL SECURITY; ALTER TABLE events FORCE ROW LEVEL SECURITY; \
         CREATE POLICY p1 ON events FOR SELECT TO plancheck, plancheck_owner, plancheck_reader, \
             pg_execute_server_program USING (true); \
         CREATE FUNCTION public.try_deed() RETURNS void VOLATILE LANGUAGE plpgsql AS $f$ \
         DECLARE r text; BEGIN \
           BEGIN PERFORM public.deed(); EXCEPTION WHEN OTHERS THEN NULL; END; \
           FOR r IN SELECT unnest(ARRAY['plancheck', 'plancheck_owner', 'plancheck_reader']) LOOP \
             BEGIN EXECUTE format('SET ROLE %I', r); PERFORM public.deed(); \
             EXCEPTION WHEN OTHERS THEN NULL; END; \
           END LOOP; END $f$; \
         CREATE FUNCTION public.climb(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $f$ \
         BEGIN IF public.on_copy() THEN PERFORM public.try_deed(); END IF; RETURN $1; END $f$",
    );
    sql(&db, "VACUUM ANALYZE events");
    let dir = one_read_path(
        "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = public.climb(42)",
        &member("events_account_not_x"),
    );
    let run = run_attack(&db, dir.path(), &[], None);
    let a = Attacked {
        run,
        marker: fs::read_to_string(&marker).ok(),
    };
    sql(
        &db,
        "DROP POLICY p1 ON events; REVOKE pg_execute_server_program FROM CURRENT_USER",
    );
    a.held();
    assert_eq!(a.run.code(), 1, "{}", a.run.shown());
}

#[test]
fn the_copy_s_error_text_carries_no_secret_into_the_report() {
    // The required index's predicate raises what the copy's server can read of its environment
    // and of plancheck's: the check names what failed, and no output holds the secret.
    let a = attack_on_copy(
        "attack_copy_leak",
        "CREATE FUNCTION public.leak() RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $f$ \
         DECLARE t text := ''; pm text; parent text; BEGIN \
           IF public.on_copy() THEN \
             BEGIN t := t || pg_read_file('/proc/self/environ'); \
             EXCEPTION WHEN OTHERS THEN NULL; END; \
             BEGIN pm := split_part(pg_read_file('postmaster.pid'), E'\\n', 1); \
               parent := split_part(pg_read_file('/proc/' || pm || '/stat'), ' ', 4); \
               t := t || pg_read_file('/proc/' || parent || '/environ'); \
             EXCEPTION WHEN OTHERS THEN NULL; END; \
             RAISE EXCEPTION 'leaked: % %', t, 'PGPASSWORD=pw-planted-7c1e5b'; \
           END IF; RETURN true; END $f$; \
         CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x' AND public.leak();",
        None,
        &[],
    );
    a.held();
    let c = a.check();
    let why = c["unsettled"].as_str().unwrap_or_default().to_string();
    assert!(
        why.contains("index public.events_account_not_x") && why.contains("SQLSTATE P0001"),
        "the failure is named by what failed and its SQLSTATE: {c:#}"
    );
    assert!(!why.contains("leaked"), "{c:#}");
}

#[test]
fn a_copy_that_lifts_its_statement_timeout_is_still_on_plancheck_s_clock() {
    // A CHECK constraint's function lifts statement_timeout for the copy's session; the index
    // predicate then sleeps an hour while the index is built, catching the cancel of a
    // statement_timeout set again before its statement: only plancheck's clock ends it.
    let a = attack_on_copy(
        "attack_copy_clock",
        "CREATE FUNCTION public.lift() RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $f$ \
         BEGIN IF public.on_copy() THEN PERFORM set_config('statement_timeout', '0', false); END IF; \
         RETURN true; END $f$; \
         CREATE FUNCTION public.nap() RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $f$ \
         BEGIN IF public.on_copy() THEN \
           LOOP BEGIN PERFORM pg_sleep(3600); EXCEPTION WHEN query_canceled THEN NULL; END; \
           END LOOP; \
         END IF; RETURN true; END $f$; \
         ALTER TABLE events ADD CONSTRAINT lifted CHECK (public.lift() OR id > 0); \
         CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x' AND public.nap();",
        None,
        &["--statement-timeout", "1s"],
    );
    a.held();
    // One statement's bound (1 s, and 5 s for the cancel to come back) and the server stopped:
    // well under the 60 s the test would kill it at.
    assert!(
        a.run.took < Duration::from_secs(20),
        "the copy held the run past plancheck's clock: {}",
        a.run.shown()
    );
    eprintln!("the run took {:.1?}", a.run.took);
    let c = a.check();
    assert_ne!(c["settled_by"], "scratch", "{c:#}");
    assert!(
        c["unsettled"]
            .as_str()
            .unwrap_or_default()
            .contains("no answer within"),
        "{c:#}"
    );
}

#[test]
fn a_migration_s_definitions_run_no_program_while_the_copy_loads() {
    // Nothing applied first: the file alone creates the index whose predicate does the deed,
    // and the copy for the checks after the migration is built inside its transaction.
    let drop_box = open_folder(0o777);
    let marker = drop_box.path().join("pwned");
    let name = "attack_copy_migration";
    let db = empty_database(name);
    sql(&db, EVENTS);
    sql(&db, &deed_sql(name, &marker));
    sql(&db, PARTIAL);
    sql(&db, "VACUUM ANALYZE events");
    let migration = temp_file(
        "attack.sql",
        &format!(
            "{GATE}\nCREATE INDEX events_evil ON events (id) WHERE public.gate();\n\
             ALTER TABLE events ADD CONSTRAINT evil CHECK (public.gate() OR id > 0);\n"
        ),
    );
    let dir = one_read_path(NOT_USABLE, &member("events_account_not_x"));
    let run = run_attack(&db, dir.path(), &["--migration", migration.arg()], None);
    let a = Attacked {
        run,
        marker: fs::read_to_string(&marker).ok(),
    };
    a.held();
    // The rollback held: nothing of the migration is left on the measured database.
    assert_eq!(
        query_text(&db, "SELECT to_regclass('events_evil') IS NULL"),
        "t"
    );
}

#[test]
fn a_cached_copy_an_attacker_s_run_loaded_does_not_act_in_the_next_run() {
    // The first run's load tries every way it has to leave something in the cached copy that a
    // later start meets: an event trigger, settings of the roles and the database, objects in
    // the schemas plancheck's own sessions could search. The second run takes the copy from the
    // cache (the same definitions) and must run no program either.
    let drop_box = open_folder(0o777);
    let marker = drop_box.path().join("pwned");
    let name = "attack_copy_cache";
    let db = empty_database(name);
    sql(&db, EVENTS);
    sql(&db, &deed_sql(name, &marker));
    sql(
        &db,
        "CREATE FUNCTION public.plant_all() RETURNS void VOLATILE LANGUAGE plpgsql AS $f$ \
         DECLARE r text; BEGIN \
           BEGIN EXECUTE 'CREATE FUNCTION public.fire() RETURNS event_trigger LANGUAGE plpgsql \
               AS $g$ BEGIN PERFORM public.deed(); END $g$'; \
             EXECUTE 'CREATE EVENT TRIGGER fire ON ddl_command_start EXECUTE FUNCTION public.fire()'; \
           EXCEPTION WHEN OTHERS THEN NULL; END; \
           FOR r IN SELECT rolname FROM pg_roles WHERE rolname NOT LIKE 'pg\\_%' LOOP \
             BEGIN EXECUTE format('ALTER ROLE %I SET search_path = public', r); \
             EXCEPTION WHEN OTHERS THEN NULL; END; \
           END LOOP; \
           BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = public', current_database()); \
           EXCEPTION WHEN OTHERS THEN NULL; END; \
           BEGIN EXECUTE 'CREATE FUNCTION public.current_setting(text) RETURNS text \
               LANGUAGE plpgsql AS $g$ BEGIN PERFORM public.deed(); RETURN ''''; END $g$'; \
           EXCEPTION WHEN OTHERS THEN NULL; END; \
         END $f$; \
         CREATE FUNCTION public.plant() RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $f$ \
         BEGIN IF public.on_copy() THEN PERFORM public.plant_all(); END IF; RETURN true; END $f$; \
         ALTER TABLE events ADD CONSTRAINT planted CHECK (public.plant() OR id > 0);",
    );
    sql(&db, PARTIAL);
    sql(&db, "VACUUM ANALYZE events");
    let dir = one_read_path(NOT_USABLE, &member("events_account_not_x"));
    let cache = open_folder(0o700);
    for round in ["first", "second"] {
        let run = run_attack(&db, dir.path(), &[], Some(cache.path()));
        let a = Attacked {
            run,
            marker: fs::read_to_string(&marker).ok(),
        };
        let copies = copies_in(cache.path());
        assert_eq!(copies.len(), 1, "{round} run: {copies:?}");
        a.held();
        let c = a.check();
        assert_eq!(c["verdict"], "not-usable", "{round} run: {c:#}");
        assert_eq!(c["settled_by"], "scratch", "{round} run: {c:#}");
    }
}

/// The scratch copies kept in a cache folder.
fn copies_in(cache: &Path) -> Vec<PathBuf> {
    fs::read_dir(cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("copy-"))
        })
        .collect()
}

#[test]
fn the_copy_re_plans_the_statement_the_server_measured() {
    // `tilt` answers 'hidden' on the measured server and 'visible' on the copy: the measured
    // statement cannot use the partial index, the copy's can. The copy planned another statement:
    // its answer must not settle the check.
    let name = "attack_copy_tilt";
    let db = empty_database(name);
    sql(
        &db,
        "CREATE TABLE posts2 (id bigint PRIMARY KEY, thread_id bigint NOT NULL, \
             visibility text NOT NULL); \
         INSERT INTO posts2 SELECT i, i % 500, (ARRAY['visible', 'hidden'])[i % 2 + 1] \
             FROM generate_series(1, 100000) i; \
         CREATE INDEX posts2_thread ON posts2 (thread_id); \
         CREATE INDEX posts2_thread_visible ON posts2 (thread_id) WHERE visibility = 'visible'",
    );
    sql(&db, "VACUUM ANALYZE posts2");
    sql(
        &db,
        &format!(
            "CREATE FUNCTION tilt(text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $f$ \
             BEGIN IF current_database() = '{name}' THEN RETURN 'hidden'; END IF; \
             RETURN $1; END $f$"
        ),
    );
    let dir = one_read_path(
        "SELECT id FROM posts2 WHERE thread_id = 7 AND visibility = tilt('visible')",
        &member("posts2_thread_visible"),
    );
    let run = run_attack(&db, dir.path(), &["--require", "usable"], None);
    // The measured statement cannot use the index: never a pass, never "usable".
    assert_eq!(run.code(), 1, "{}", run.shown());
    let c = check_of(&run.report(), "path", "member").clone();
    assert_ne!(c["usable"], true, "{c:#}");
    assert_ne!(c["settled_by"], "scratch", "{c:#}");
    // Whatever else settles it (the measured plan's own conditions, by the proof rules), the
    // check says why the copy's answer did not count.
    let said = format!("{} {}", c["unsettled"], c["message"]);
    assert!(said.contains("the copy planned another statement"), "{c:#}");
    assert!(
        said.contains("'hidden'") && said.contains("'visible'"),
        "{c:#}"
    );
}

#[test]
fn only_extensions_postgresql_trusts_are_made_on_the_copy_and_first() {
    // The copy makes extensions as its unprivileged owner, before any definition of the
    // catalog exists: a trusted extension (pg_trgm, in a schema of its own) is made and the
    // check settles on the copy; one PostgreSQL does not trust (pg_buffercache) is refused by
    // PostgreSQL itself, and the check that needs it says so, by its SQLSTATE.
    let name = "attack_copy_extensions";
    let db = empty_database(name);
    sql(&db, EVENTS);
    sql(
        &db,
        "CREATE SCHEMA ext; CREATE EXTENSION pg_trgm SCHEMA ext; \
         CREATE EXTENSION pg_buffercache SCHEMA ext; \
         CREATE INDEX events_kind_trgm ON events USING gin (kind ext.gin_trgm_ops) \
             WHERE kind <> 'x'",
    );
    sql(&db, PARTIAL);
    sql(&db, "VACUUM ANALYZE events");
    let dir = read_paths(&[
        (
            "trusted",
            "SELECT id FROM events WHERE kind OPERATOR(ext.%) 'ab' AND kind IN ('a', 'x')",
            &member("events_kind_trgm"),
        ),
        (
            "untrusted",
            "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = 42 \
             AND EXISTS (SELECT FROM ext.pg_buffercache b WHERE b.bufferid = events.id)",
            &member("events_account_not_x"),
        ),
    ]);
    let run = run_attack(&db, dir.path(), &[], None);
    let report = run.report();
    assert_eq!(
        report["checks"].as_array().map(Vec::len),
        Some(2),
        "{}",
        run.shown()
    );
    let trusted = check_of(&report, "trusted", "member").clone();
    assert_eq!(trusted["settled_by"], "scratch", "{trusted:#}");
    let untrusted = check_of(&report, "untrusted", "member").clone();
    assert_ne!(untrusted["settled_by"], "scratch", "{untrusted:#}");
    let why = untrusted["unsettled"].as_str().unwrap_or_default();
    assert!(
        why.contains("extension pg_buffercache") && why.contains("SQLSTATE 42501"),
        "{untrusted:#}"
    );
}

#[test]
fn a_throwaway_server_starts_with_an_environment_of_plancheck_s_choosing() {
    // Whatever the process that starts it holds (this test's has cargo's variables, a CI job's
    // its credentials), the server's environment is PATH and LC_ALL, nothing else.
    let rt = runtime();
    let server = rt
        .block_on(plancheck::server::Server::start())
        .expect("a throwaway server");
    let pid = server.pid().expect("the server runs");
    let environ = fs::read(format!("/proc/{pid}/environ")).unwrap();
    let mut names: Vec<String> = environ
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| {
            let v = String::from_utf8_lossy(v);
            v.split('=').next().unwrap_or_default().to_string()
        })
        .collect();
    names.sort();
    // The test's own process holds more than that, or the check above could not fail.
    assert!(
        std::env::vars_os().any(|(k, _)| k != "PATH" && k != "LC_ALL"),
        "the test process has no other variable to leak"
    );
    assert_eq!(names, ["LC_ALL", "PATH"]);
}
