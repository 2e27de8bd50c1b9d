//! The loaded board kept between demos (local server binaries): the first demo builds it and
//! saves it, the next starts on a copy of it, `--fresh` rebuilds it, and a broken entry is
//! built again instead of failing the demo.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Run, plancheck_process};

const BUILDING: &str = "building the board (cached for next time)";
const USING: &str = "using the cached board (";
const ALL_PASSED: &str = ": 15 passed, 0 failed, 0 errors";

/// A private TMPDIR and cache folder for one test. The TMPDIR is traversable by the
/// unprivileged user the server runs as when the tests run as root.
struct Folders {
    tmp: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Folders {
    fn new() -> Folders {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Folders {
            tmp,
            cache: tempfile::tempdir().unwrap(),
        }
    }

    /// The cache entries (`board-…`) there are.
    fn entries(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.cache.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("board-")
            })
            .collect()
    }

    /// The one cache entry, panicking unless there is exactly one.
    fn entry(&self) -> PathBuf {
        let entries = self.entries();
        assert_eq!(entries.len(), 1, "cache entries: {entries:?}");
        entries.into_iter().next().unwrap()
    }

    /// Runs `plancheck demo --server local` with these folders, to the end, and returns the run
    /// and how long it took until the first line of the table on stdout.
    fn demo(&self, extra: &[&str]) -> (Run, Option<Duration>) {
        let mut args = vec!["demo", "--server", "local"];
        args.extend_from_slice(extra);
        let started = Instant::now();
        let mut child = plancheck_process(&args)
            .env("TMPDIR", self.tmp.path())
            .env("PLANCHECK_CACHE_DIR", self.cache.path())
            .spawn()
            .unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            text
        });
        let mut stdout = String::new();
        let mut first_table_line = None;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if first_table_line.is_none() && line.starts_with('┌') {
                first_table_line = Some(started.elapsed());
            }
            stdout.push_str(&line);
            stdout.push('\n');
        }
        let status = child.wait().unwrap();
        let run = Run {
            status: status.code(),
            stdout,
            stderr: stderr.join().unwrap(),
            took: started.elapsed(),
        };
        (run, first_table_line)
    }

    /// Nothing of a demo's throwaway server is left in TMPDIR.
    fn assert_nothing_left(&self) {
        let left: Vec<_> = std::fs::read_dir(self.tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "left behind in TMPDIR: {left:?}");
    }
}

fn assert_all_passed(run: &Run) {
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert!(run.stdout.contains(ALL_PASSED), "{}", run.shown());
}

/// The largest file of the entry's data folder (a table or an index of the board).
fn largest_file(dir: &Path) -> PathBuf {
    let mut best: Option<(u64, PathBuf)> = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
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
fn second_demo_uses_the_cached_board_and_fresh_rebuilds_it() {
    let folders = Folders::new();

    let (first, _) = folders.demo(&[]);
    assert_all_passed(&first);
    assert!(first.stderr.contains(BUILDING), "{}", first.shown());
    assert!(
        first.stderr.contains("loaded the reference board"),
        "{}",
        first.shown()
    );
    let entry = folders.entry();
    assert!(entry.join("manifest").is_file(), "{}", entry.display());
    folders.assert_nothing_left();

    let (second, to_table) = folders.demo(&[]);
    assert_all_passed(&second);
    assert!(second.stderr.contains(USING), "{}", second.shown());
    assert!(
        !second.stderr.contains("loading the reference board"),
        "a cached board is not loaded again\n{}",
        second.shown()
    );
    // A figure for the record, not an assertion: machines differ.
    eprintln!(
        "first demo {:.1?}; second demo (cached board) {:.1?} to the first table line, {:.1?} in all",
        first.took,
        to_table.expect("the second demo printed a table"),
        second.took
    );
    folders.assert_nothing_left();

    let (fresh, _) = folders.demo(&["--fresh"]);
    assert_all_passed(&fresh);
    assert!(fresh.stderr.contains(BUILDING), "{}", fresh.shown());
    assert!(!fresh.stderr.contains(USING), "{}", fresh.shown());
    assert_eq!(folders.entry(), entry, "--fresh replaces the same entry");
    assert!(entry.join("manifest").is_file());
    folders.assert_nothing_left();
}

#[test]
fn corrupted_cache_entry_falls_back_to_a_fresh_build() {
    // Guards a broken cache entry failing the demo (or a server running on a board with a
    // relation file missing).
    let folders = Folders::new();
    let (first, _) = folders.demo(&["--warmup", "1", "--iterations", "2"]);
    assert_all_passed(&first);
    let entry = folders.entry();

    let victim = largest_file(&entry.join("data"));
    std::fs::remove_file(&victim).unwrap();

    let (after, _) = folders.demo(&["--warmup", "1", "--iterations", "2"]);
    assert_all_passed(&after);
    assert!(
        after.stderr.contains("the cached board cannot be used"),
        "{}",
        after.shown()
    );
    assert!(after.stderr.contains(BUILDING), "{}", after.shown());
    assert!(victim.is_file(), "the entry was not replaced whole");
    folders.assert_nothing_left();

    // The replaced entry is whole again: the next demo uses it.
    let (next, _) = folders.demo(&["--warmup", "1", "--iterations", "2"]);
    assert_all_passed(&next);
    assert!(next.stderr.contains(USING), "{}", next.shown());
}
