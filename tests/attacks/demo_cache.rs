//! A poisoned demo cache (class 13): a cached board is a PostgreSQL data folder, and a data
//! folder can make its server run commands (`restore_command` with a `recovery.signal` or a
//! `standby.signal`). In CI the cache folder is often restored from another branch's run. Each
//! test builds a real cache entry with `plancheck demo`, poisons it as an attacker would, runs
//! the demo again and looks for the marker file the poisoned command would have created.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::*;

const USING: &str = "using the cached board (";
const BUILDING: &str = "building the board";
const REFUSED: &str = "the cached board cannot be used";
const ALL_PASSED: &str = ": 15 passed, 0 failed, 0 errors";

/// A private TMPDIR, a cache folder, and a folder the server's user may write the marker into.
struct Demo {
    tmp: tempfile::TempDir,
    cache: tempfile::TempDir,
    drop_box: tempfile::TempDir,
}

impl Demo {
    fn new() -> Demo {
        let tmp = tempfile::tempdir().unwrap();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let drop_box = tempfile::tempdir().unwrap();
        fs::set_permissions(drop_box.path(), fs::Permissions::from_mode(0o777)).unwrap();
        Demo {
            tmp,
            cache: tempfile::tempdir().unwrap(),
            drop_box,
        }
    }

    /// `plancheck demo --server local` with these folders, to the end.
    fn run(&self) -> Run {
        let mut cmd = plancheck(&[
            "demo",
            "--server",
            "local",
            "--warmup",
            "1",
            "--iterations",
            "2",
        ]);
        cmd.env("TMPDIR", self.tmp.path())
            .env("PLANCHECK_CACHE_DIR", self.cache.path());
        run_command(&mut cmd)
    }

    /// A first demo, which builds the entry; the entry's folder.
    fn built(&self) -> PathBuf {
        let first = self.run();
        assert_all_passed(&first);
        assert!(first.stderr.contains(BUILDING), "{}", first.shown());
        let entries: Vec<PathBuf> = fs::read_dir(self.cache.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("board-")
            })
            .collect();
        assert_eq!(entries.len(), 1, "cache entries: {entries:?}");
        let entry = entries.into_iter().next().unwrap();
        assert!(
            entry.join("data/PG_VERSION").is_file(),
            "{}",
            entry.display()
        );
        entry
    }

    /// Where the poisoned command leaves its mark.
    fn marker(&self) -> PathBuf {
        self.drop_box.path().join("pwned")
    }

    /// The command the attacker wants run: `touch` of the marker.
    fn restore_command(&self) -> String {
        format!("restore_command = 'touch {}'\n", self.marker().display())
    }

    fn assert_no_command_ran(&self, run: &Run) {
        assert!(
            !self.marker().exists(),
            "the poisoned cache ran a command as the server's user\n{}",
            run.shown()
        );
    }
}

fn assert_all_passed(run: &Run) {
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert!(run.stdout.contains(ALL_PASSED), "{}", run.shown());
}

/// The poisoned entry was refused and the board built again.
fn assert_rebuilt(run: &Run) {
    assert!(
        !run.stderr.contains(USING),
        "the poisoned entry was used\n{}",
        run.shown()
    );
    assert!(run.stderr.contains(REFUSED), "{}", run.shown());
    assert!(run.stderr.contains(BUILDING), "{}", run.shown());
}

fn append(path: &Path, text: &str) {
    let mut old = fs::read(path).unwrap();
    old.extend_from_slice(text.as_bytes());
    fs::write(path, old).unwrap();
}

fn sha256(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "sha256sum {}", path.display());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Rewrites the entry's manifest so that `files` (relative to the data folder) are listed with
/// their present size, added where they are new: what the manifest checks (names and sizes).
/// With `hashes`, a content hash field is recomputed as well: an attacker who read the code.
fn forge_manifest(entry: &Path, files: &[&str], hashes: bool) {
    let data = entry.join("data");
    let manifest = fs::read_to_string(entry.join("manifest")).unwrap();
    let line_for = |rel: &str, hash_field: bool| {
        let size = fs::metadata(data.join(rel)).unwrap().len();
        if hash_field {
            let hash = if hashes {
                sha256(&data.join(rel))
            } else {
                "0".repeat(64)
            };
            format!("file\t{size}\t{hash}\t{rel}")
        } else {
            format!("file\t{size}\t{rel}")
        }
    };
    let mut out = String::new();
    let mut listed = Vec::new();
    let mut hash_field = false;
    for line in manifest.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["file", .., rel] if files.contains(rel) => {
                hash_field = fields.len() == 4;
                let mut forged = line_for(rel, hash_field);
                if !hashes && hash_field {
                    // Names and sizes forged, the hash kept as it was.
                    let old = fields[2];
                    forged = forged.replace(&"0".repeat(64), old);
                }
                out.push_str(&forged);
                listed.push(rel.to_string());
            }
            ["file", ..] => {
                hash_field = fields.len() == 4;
                out.push_str(line);
            }
            ["end"] => {
                for rel in files.iter().filter(|f| !listed.iter().any(|l| l == *f)) {
                    out.push_str(&line_for(rel, hash_field));
                    out.push('\n');
                }
                out.push_str(line);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    fs::write(entry.join("manifest"), out).unwrap();
}

/// The largest file of a folder (a table or an index of the board).
fn largest_file(dir: &Path) -> PathBuf {
    let mut best: Option<(u64, PathBuf)> = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else if best.as_ref().is_none_or(|(size, _)| meta.len() > *size) {
                best = Some((meta.len(), entry.path()));
            }
        }
    }
    best.expect("a file in the entry").1
}

#[test]
fn a_restore_command_planted_in_the_cached_cluster_never_runs() {
    let demo = Demo::new();
    let entry = demo.built();
    let data = entry.join("data");
    fs::write(data.join("recovery.signal"), "").unwrap();
    append(&data.join("postgresql.conf"), &demo.restore_command());
    forge_manifest(&entry, &["postgresql.conf", "recovery.signal"], false);

    let after = demo.run();
    demo.assert_no_command_ran(&after);
    assert_all_passed(&after);
    assert_rebuilt(&after);
    assert!(
        !entry.join("data/recovery.signal").exists(),
        "the poisoned entry was replaced whole"
    );
}

#[test]
fn a_wholly_forged_entry_still_cannot_make_the_server_run_a_command() {
    // The manifest rewritten with the poisoned files' real hashes: the content check cannot
    // tell, so what holds is the configuration plancheck writes at each start.
    let demo = Demo::new();
    let entry = demo.built();
    let data = entry.join("data");
    fs::write(data.join("standby.signal"), "").unwrap();
    append(&data.join("postgresql.auto.conf"), &demo.restore_command());
    append(
        &data.join("postgresql.conf"),
        &format!(
            "archive_mode = on\narchive_command = 'touch {0}'\nrecovery_end_command = 'touch {0}'\n",
            demo.marker().display()
        ),
    );
    forge_manifest(
        &entry,
        &["postgresql.conf", "postgresql.auto.conf", "standby.signal"],
        true,
    );

    let after = demo.run();
    demo.assert_no_command_ran(&after);
    assert_all_passed(&after);
    // The forged entry was used: the server ran on the poisoned folder and still ran nothing.
    assert!(after.stderr.contains(USING), "{}", after.shown());
}

#[test]
fn a_cached_file_changed_in_place_at_the_same_size_is_not_used() {
    let demo = Demo::new();
    let entry = demo.built();
    let victim = largest_file(&entry.join("data"));
    let mut bytes = fs::read(&victim).unwrap();
    let size = bytes.len();
    let middle = size / 2;
    bytes[middle] ^= 0xff;
    fs::write(&victim, &bytes).unwrap();
    assert_eq!(fs::metadata(&victim).unwrap().len() as usize, size);

    let after = demo.run();
    assert_all_passed(&after);
    assert_rebuilt(&after);
    assert_ne!(
        fs::read(&victim).unwrap(),
        bytes,
        "the entry was built again"
    );
}

#[test]
fn a_cache_others_may_write_is_not_used() {
    let demo = Demo::new();
    let entry = demo.built();

    fs::set_permissions(&entry, fs::Permissions::from_mode(0o777)).unwrap();
    let after = demo.run();
    assert_all_passed(&after);
    assert!(!after.stderr.contains(USING), "{}", after.shown());
    assert!(
        after.stderr.contains("writable by others"),
        "{}",
        after.shown()
    );

    fs::set_permissions(&entry, fs::Permissions::from_mode(0o700)).unwrap();
    fs::set_permissions(demo.cache.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let after = demo.run();
    assert_all_passed(&after);
    assert!(!after.stderr.contains(USING), "{}", after.shown());
    assert!(
        after.stderr.contains("writable by others"),
        "{}",
        after.shown()
    );
    assert!(
        after.stderr.contains("building the board (not cached:"),
        "{}",
        after.shown()
    );
}

#[test]
fn a_library_set_in_the_catalog_is_not_loaded_by_plancheck_s_sessions() {
    // A forged entry's catalog can hold `ALTER DATABASE … SET session_preload_libraries`, which
    // the server's command line does not outrank: every session plancheck opens pins it empty.
    let rt = runtime();
    rt.block_on(async {
        let server = plancheck::server::Server::start()
            .await
            .expect("a throwaway server");
        let admin = server.target("postgres").connect().await.unwrap();
        for statement in [
            "CREATE DATABASE poisoned",
            "ALTER DATABASE poisoned SET session_preload_libraries = 'no_such_library'",
        ] {
            admin.batch_execute(statement).await.unwrap();
        }
        let client = server
            .target("poisoned")
            .connect()
            .await
            .expect("the session starts: the library is not loaded");
        let row = client
            .query_one("SELECT current_setting('session_preload_libraries')", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "");
        // The setting is really there: a session without plancheck's options loads it and fails.
        let mut plain = tokio_postgres::Config::new();
        plain
            .host_path(server.data().parent().unwrap())
            .port(5432)
            .user("plancheck")
            .dbname("poisoned");
        let refused = plain.connect(tokio_postgres::NoTls).await;
        let error = refused.err().expect("a plain session loads the library");
        assert!(
            format!("{error:?}").contains("no_such_library"),
            "{error:?}"
        );
    });
}
