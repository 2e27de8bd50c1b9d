//! plancheck on the PostgreSQL versions the full suite does not run on (13, 14, 16 and 17 in
//! CI): the reference project through `plancheck demo`, and one read path broken the way the
//! tool exists to catch, so that the plan walk meets each version's EXPLAIN JSON.
//!
//! Skipped, saying so, unless `PLANCHECK_PG_VERSIONS_BIN` lists the servers as
//! `MAJOR=BINDIR` pairs: `13=/opt/plancheck-pg/13/…/native/bin,14=…` (`.ci/run` sets it from
//! `.ci/install-postgres.sh`). A listed folder that holds no server, or a server of another
//! major version, fails the tests instead: a misnamed folder must not pass as a tested version.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;

/// The servers to test: `MAJOR=BINDIR[,MAJOR=BINDIR…]`.
const VERSIONS_VAR: &str = "PLANCHECK_PG_VERSIONS_BIN";

/// Set for [`generic_plan_on_this_server`] when a parent test runs it against one version: the
/// major version its server must report.
const EXPECTED_MAJOR_VAR: &str = "PLANCHECK_VERSIONS_EXPECTED_MAJOR";

/// The name of the test a parent runs once per version, in a process of its own.
const ONE_VERSION_TEST: &str = "generic_plan_on_this_server";

/// Longest one version's run may take (server start, board load, checks) on a loaded machine.
const ONE_VERSION_LIMIT: Duration = Duration::from_secs(300);

/// One listed server.
struct Version {
    major: u32,
    bin: PathBuf,
}

/// Writes a line to the test's stderr past libtest's capture (which takes only `eprintln!`), so
/// that a skip and each version's result show in the CI log of a passing run too.
fn tell(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The servers `PLANCHECK_PG_VERSIONS_BIN` lists. Panics when it is not set (the tests that ask
/// are ignored unless asked for) or lists what cannot be what was meant.
fn listed_versions(test: &str) -> Vec<Version> {
    let Some(text) = std::env::var_os(VERSIONS_VAR) else {
        panic!(
            "{test}: {VERSIONS_VAR} is not set: set it to 13=/path/to/bin,14=/path/to/bin,… to \
             run the reference project on those versions (CI sets it)"
        );
    };
    let text = text
        .into_string()
        .expect("PLANCHECK_PG_VERSIONS_BIN is UTF-8");
    let versions: Vec<Version> = text
        .split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (major, bin) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("{VERSIONS_VAR}: `{pair}` is not MAJOR=BINDIR"));
            let major: u32 = major.trim().parse().unwrap_or_else(|_| {
                panic!("{VERSIONS_VAR}: `{major}` in `{pair}` is not a major version")
            });
            let version = Version {
                major,
                bin: PathBuf::from(bin.trim()),
            };
            assert_is_server_of(&version);
            version
        })
        .collect();
    assert!(
        !versions.is_empty(),
        "{VERSIONS_VAR} is set but lists no server: `{text}`"
    );
    versions
}

/// The folder holds `initdb` and `postgres` of that major version.
fn assert_is_server_of(version: &Version) {
    for tool in ["initdb", "postgres"] {
        let path = version.bin.join(tool);
        let out = std::process::Command::new(&path)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("{VERSIONS_VAR}: cannot run {}: {e}", path.display()));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains(&format!("(PostgreSQL) {}.", version.major)),
            "{VERSIONS_VAR}: {} is listed as {} but says: {said}",
            path.display(),
            version.major
        );
    }
}

/// A private TMPDIR for one run, traversable by the unprivileged user the server runs as when
/// the tests run as root.
fn private_tmp() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// What went wrong on each version, or nothing: every version runs even when one fails, so one
/// CI run names every version that broke.
fn assert_all_passed(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "failed on {} version(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
#[ignore = "needs PLANCHECK_PG_VERSIONS_BIN: cargo test --test versions -- --ignored"]
fn reference_project_demo_passes_on_every_listed_version() {
    let versions = listed_versions("reference_project_demo_passes_on_every_listed_version");
    let mut failures = Vec::new();
    for version in &versions {
        let tmp = private_tmp();
        let mut cmd = plancheck(&[
            "demo",
            "--server",
            "local",
            "--warmup",
            "1",
            "--iterations",
            "2",
            "--format",
            "json",
        ]);
        cmd.env("PLANCHECK_CACHE_DIR", tmp.path().join("cache"))
            .env("PLANCHECK_PG_BIN", &version.bin)
            .env("TMPDIR", tmp.path());
        let run = run_command(&mut cmd);
        match demo_failure(version, &run) {
            None => tell(&format!(
                "PostgreSQL {}: demo passed {REFERENCE_CHECKS} of {REFERENCE_CHECKS} checks in \
                 {:.1?}",
                version.major, run.took
            )),
            Some(why) => {
                tell(&format!("PostgreSQL {}: demo FAILED: {why}", version.major));
                failures.push(format!(
                    "PostgreSQL {} ({}): {why}\n{}",
                    version.major,
                    version.bin.display(),
                    run.shown()
                ));
            }
        }
    }
    assert_all_passed(&failures);
}

/// Why a demo run is not every check of the reference project passing on that version, if it is
/// not.
fn demo_failure(version: &Version, run: &Run) -> Option<String> {
    if run.status != Some(0) {
        return Some(format!("exit status {:?}, not 0", run.status));
    }
    let report: serde_json::Value = match serde_json::from_str(&run.stdout) {
        Ok(report) => report,
        Err(e) => return Some(format!("stdout is not a JSON report: {e}")),
    };
    // The server really was this version: the demo found the binaries it was given.
    let server = report["server_version"].as_str().unwrap_or_default();
    if !server.starts_with(&format!("{}.", version.major)) {
        return Some(format!("the demo ran on PostgreSQL `{server}`"));
    }
    let all = verdicts(&report);
    let not_passing: Vec<_> = all.iter().filter(|(_, _, v)| v != "pass").collect();
    if all.len() != REFERENCE_CHECKS || !not_passing.is_empty() {
        return Some(format!(
            "{} checks, not passing: {not_passing:?}",
            all.len()
        ));
    }
    if report["summary"]["passed"] != REFERENCE_CHECKS {
        return Some(format!("summary: {}", report["summary"]));
    }
    None
}

#[test]
#[ignore = "needs PLANCHECK_PG_VERSIONS_BIN: cargo test --test versions -- --ignored"]
fn visibility_parameter_is_generic_plan_on_every_listed_version() {
    let versions = listed_versions("visibility_parameter_is_generic_plan_on_every_listed_version");
    let mut failures = Vec::new();
    for version in &versions {
        let run = one_version(version);
        // The test really ran: a filter that matched nothing would exit 0 too.
        if run.status == Some(0) && run.stdout.contains("test result: ok. 1 passed") {
            tell(&format!(
                "PostgreSQL {}: generic-plan found, literal control passed, in {:.1?}",
                version.major, run.took
            ));
        } else {
            tell(&format!(
                "PostgreSQL {}: generic-plan check FAILED",
                version.major
            ));
            failures.push(format!(
                "PostgreSQL {} ({}):\n{}",
                version.major,
                version.bin.display(),
                run.shown()
            ));
        }
    }
    assert_all_passed(&failures);
}

/// Runs [`generic_plan_on_this_server`] in a process of its own against one version: the test
/// server of `common` is one per process, started from `PLANCHECK_PG_BIN`, and a process's
/// environment cannot safely change under its running threads.
fn one_version(version: &Version) -> Run {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = assert_cmd::Command::new(exe);
    cmd.args(["--exact", ONE_VERSION_TEST, "--ignored", "--nocapture"])
        .env("PLANCHECK_PG_BIN", &version.bin)
        .env(EXPECTED_MAJOR_VAR, version.major.to_string())
        .env_remove(VERSIONS_VAR)
        .timeout(ONE_VERSION_LIMIT);
    let started = Instant::now();
    let out = cmd.output().expect("run the test binary");
    Run {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// The regression the tool exists for, on whichever server `PLANCHECK_PG_BIN` names: a read path
/// that binds the visibility as `$2` has a custom plan on the partial index and a generic plan
/// that cannot use it (a partial index matches only constants). Run once per listed version by
/// the test above; `cargo test -- --ignored` runs it on the default server.
#[test]
#[ignore = "run once per listed version by visibility_parameter_is_generic_plan_on_every_listed_version"]
fn generic_plan_on_this_server() {
    let db = fresh_board("generic");
    if let Ok(major) = std::env::var(EXPECTED_MAJOR_VAR) {
        let major: u32 = major.parse().expect("a major version");
        assert_eq!(
            server_version_num(&db) / 10_000,
            major,
            "the test server is not the version asked for"
        );
    }
    let plan = "SELECT p.id, p.created_at FROM posts p\n\
                WHERE p.thread_id = $1 AND p.visibility = $2\n\
                ORDER BY p.created_at, p.id LIMIT 20\n";
    let dir = one_read_path(
        plan,
        "params = [1, \"visible\"]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(
        verdict_of(&report, "path", "member"),
        "generic-plan",
        "{report:#}"
    );
    assert_eq!(status, 1, "{report:#}");
    let check = check_of(&report, "path", "member");
    let message = check["message"].as_str().unwrap_or_default();
    assert!(message.contains("generic plan"), "{report:#}");
    assert!(
        message.contains("(p.visibility = $2)"),
        "the generic plan's filter is not shown: {report:#}"
    );

    // The control: the same read path with the literal passes, its index found in the custom
    // and the generic plan: the walk reads this version's plans, it does not fail on them.
    let dir = one_read_path(
        &plan.replace("$2", "'visible'"),
        "params = [1]\n[scopes.member]\nindex = \"posts_thread_visible_idx\"\n",
    );
    let (status, report) = check_json(&db, dir.path(), &[]);
    assert_eq!(verdict_of(&report, "path", "member"), "pass", "{report:#}");
    assert_eq!(status, 0, "{report:#}");
    let used = check_of(&report, "path", "member")["used"].to_string();
    assert!(
        used.contains("using posts_thread_visible_idx on posts"),
        "{report:#}"
    );
}
