//! Server binaries of the measured major for the scratch copy, as a CI job meets them:
//! `plancheck scratch-binaries` says the major and the binaries the copy would use (the CI
//! templates' step asks it before installing any), and a check on a server whose major has no
//! local binaries says "not settled" and names the commands that install them.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// 100,000 events; a partial index on account_id for kinds other than `x`, and the full index on
/// account_id that wins every re-plan on the measured server: only the copy settles the read
/// path below (tests/usability_on_scratch.rs).
const EVENTS: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, account_id bigint NOT NULL, kind text NOT NULL);
INSERT INTO events SELECT i, i % 2000, (ARRAY['a', 'b', 'c', 'x'])[(i / 2000) % 4 + 1]
    FROM generate_series(1, 100000) i;
CREATE INDEX events_account ON events (account_id);
CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x';
";

/// The IN list admits `x`: the partial index cannot serve it, which only the copy shows.
const NOT_USABLE: &str = "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = 42";

/// The major of the server binaries in `dir` (`postgres --version`), None where there are none.
fn major_of(dir: &Path) -> Option<u32> {
    let out = std::process::Command::new(dir.join("postgres"))
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let after = text.split("(PostgreSQL) ").nth(1)?;
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// `plancheck scratch-binaries` against `db`, with the environment's binaries as `bin` says (None:
/// PLANCHECK_PG_BIN unset): its exit status and its `major=` and `bin=` lines.
fn scratch_binaries(db: &str, bin: Option<&Path>, major: u32) -> (i32, String, String, String) {
    let mut cmd = plancheck(&["scratch-binaries", "--database-url", db]);
    cmd.env_remove(format!("PLANCHECK_PG{major}_BIN"));
    match bin {
        Some(bin) => cmd.env("PLANCHECK_PG_BIN", bin),
        None => cmd.env_remove("PLANCHECK_PG_BIN"),
    };
    let run = run_command(&mut cmd);
    let line = |name: &str| {
        run.stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} line: {}", run.shown()))
            .to_string()
    };
    (run.code(), line("major="), line("bin="), run.stderr.clone())
}

/// Where plancheck looks for binaries of `major` by itself, short of PLANCHECK_PG_BIN: which of
/// them hold binaries of it.
fn found_without_the_variable(major: u32) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Ok(out) = std::process::Command::new("pg_config")
        .arg("--bindir")
        .output()
    {
        dirs.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    dirs.push(PathBuf::from(format!("/usr/lib/postgresql/{major}/bin")));
    dirs.into_iter()
        .filter(|d| major_of(d) == Some(major))
        .collect()
}

/// The CI templates read the major and the binaries from it: the test server's own major, and
/// the test server's own binaries where PLANCHECK_PG_BIN names them.
#[test]
fn scratch_binaries_says_the_servers_major_and_the_binaries_the_copy_would_use() {
    let db = empty_database("scratch_binaries_found");
    let major = server_version_num(&db) / 10000;
    let bin = plancheck::server::find_bin_dir().unwrap();
    let (code, said_major, said_bin, _) = scratch_binaries(&db, Some(&bin), major);
    assert_eq!(code, 0);
    assert_eq!(said_major, major.to_string());
    assert_eq!(Path::new(&said_bin), bin);
    assert_eq!(major_of(Path::new(&said_bin)), Some(major));
}

/// Regression: a CI runner beside a `postgres:17` service has no PostgreSQL 17 binaries, so the
/// copy is never made and the check is "not settled"; the message said "install it" and left
/// the reader to find out how. It names the commands now, and `scratch-binaries` says `bin=`.
#[test]
#[ignore = "needs the test server from binaries of a major found nowhere else plancheck looks \
            (.ci/run runs it on PostgreSQL 13, 14, 16 and 17 from npm)"]
fn without_binaries_of_the_major_the_check_is_not_settled_and_names_the_install_commands() {
    let db = empty_database("scratch_binaries_none");
    sql(&db, EVENTS);
    sql(&db, "VACUUM ANALYZE events");
    let major = server_version_num(&db) / 10000;
    let elsewhere = found_without_the_variable(major);
    assert!(
        elsewhere.is_empty(),
        "PostgreSQL {major} is found without PLANCHECK_PG_BIN ({elsewhere:?}): run this test on a \
         server whose major the machine does not have"
    );
    // PLANCHECK_PG_BIN names binaries of another major (Debian's 15 here), or none.
    let other = Path::new("/usr/lib/postgresql/15/bin");
    assert_ne!(major_of(other), Some(major), "15 is the measured major");
    for bin in [Some(other), None] {
        let (code, said_major, said_bin, stderr) = scratch_binaries(&db, bin, major);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(said_major, major.to_string());
        assert_eq!(said_bin, "", "{stderr}");
        assert!(
            stderr.contains(&format!("sudo apt-get install -y postgresql-{major}`")),
            "{stderr}"
        );

        let dir = one_read_path(NOT_USABLE, &member("events_account_not_x"));
        let mut cmd = plancheck(&[
            "check",
            "--database-url",
            &db,
            "--project",
            dir.path().to_str().unwrap(),
            "--format",
            "json",
            "--require",
            "usable",
            "--quiet",
        ]);
        cmd.env_remove(format!("PLANCHECK_PG{major}_BIN"));
        match bin {
            Some(bin) => cmd.env("PLANCHECK_PG_BIN", bin),
            None => cmd.env_remove("PLANCHECK_PG_BIN"),
        };
        let run = run_command(&mut cmd);
        let report = run.report();
        let checks = report["checks"].as_array().expect("a checks array");
        assert_eq!(checks.len(), 1, "{report:#}");
        let c = &checks[0];
        // Never a pass, never a verdict the copy would have had to prove.
        assert_eq!(run.code(), 1, "{}", run.shown());
        assert_eq!(c["verdict"], "not-chosen", "{c:#}");
        assert_eq!(c["usable"], serde_json::Value::Null, "{c:#}");
        assert_eq!(c["settled_by"], serde_json::Value::Null, "{c:#}");
        let why = c["unsettled"].as_str().unwrap_or_default();
        for said in [
            format!("no local PostgreSQL {major} to re-plan on"),
            format!(
                "on Debian/Ubuntu `sudo apt-get install -y postgresql-common && sudo \
                 /usr/share/postgresql-common/pgdg/apt.postgresql.org.sh -y && sudo apt-get \
                 install -y postgresql-{major}` (apt.postgresql.org), then \
                 PLANCHECK_PG_BIN=/usr/lib/postgresql/{major}/bin;"
            ),
            format!(
                "on macOS `brew install postgresql@{major}`, then \
                 PLANCHECK_PG_BIN=\"$(brew --prefix postgresql@{major})/bin\";"
            ),
        ] {
            assert!(why.contains(&said), "{said}\n{c:#}");
        }
    }
}
