//! `plancheck demo` as a user meets it: a throwaway server, the reference board, every check
//! passing, and nothing left behind, also when interrupted.

mod common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Run, plancheck_process, wait_until, within};

/// A private TMPDIR for one demo, so tests running side by side do not see each other's
/// folders. Traversable by the unprivileged user the server runs as when the tests run as root.
fn private_tmp() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn throwaway_folders(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("plancheck-"))
        .collect()
}

/// The command lines of the processes that name a path under `tmp` (the demo's server and its
/// children, whose data folder is there).
fn processes_under(tmp: &Path) -> Vec<String> {
    let needle = tmp.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect()
}

/// `plancheck demo` with `TMPDIR` set to `tmp`.
fn demo(args: &[&str], tmp: &Path) -> std::process::Command {
    let mut all = vec!["demo"];
    all.extend_from_slice(args);
    let mut cmd = plancheck_process(&all);
    // A cache of its own, inside the test's TMPDIR: these demos build the board every time, and
    // the user's cache is left alone.
    cmd.env("TMPDIR", tmp)
        .env("PLANCHECK_CACHE_DIR", tmp.join("cache"));
    cmd
}

#[test]
fn demo_passes_every_check_and_leaves_nothing_behind() {
    let tmp = private_tmp();
    let started = Instant::now();
    let mut child = demo(&["--warmup", "1", "--iterations", "2"], tmp.path())
        .spawn()
        .unwrap();
    // While it runs, its throwaway folder is in TMPDIR: without seeing it there, an empty TMPDIR
    // afterwards would prove nothing (the demo could have put its folder elsewhere).
    let mut seen = Vec::new();
    wait_until(within(Duration::from_secs(120)), || {
        seen = throwaway_folders(tmp.path());
        !seen.is_empty() || matches!(child.try_wait(), Ok(Some(_)))
    });
    let run = Run::finish(child, started);
    assert!(
        !seen.is_empty(),
        "never saw the demo's folder in TMPDIR\n{}",
        run.shown()
    );
    assert_eq!(run.status, Some(0), "{}", run.shown());
    assert!(
        run.stdout.contains("15 checks on PostgreSQL")
            && run.stdout.contains(": 15 passed, 0 failed, 0 errors"),
        "{}",
        run.shown()
    );
    assert!(
        run.stderr.contains("loaded the reference board"),
        "{}",
        run.shown()
    );
    let after = throwaway_folders(tmp.path());
    assert!(after.is_empty(), "left behind: {after:?}");
}

#[test]
fn interrupted_demo_stops_the_server_and_removes_its_files() {
    let tmp = private_tmp();
    let mut child = demo(&["--scale", "0.2"], tmp.path())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // stderr read as it comes, to see the load's progress.
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let reader = {
        let stderr = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                stderr
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    // Interrupt once the server is up and the board is loading.
    let loading = wait_until(within(Duration::from_secs(60)), || {
        stderr
            .lock()
            .unwrap()
            .contains("loading the reference board")
            || matches!(child.try_wait(), Ok(Some(_)))
    });
    let so_far = stderr.lock().unwrap().clone();
    assert!(
        loading && so_far.contains("loading the reference board"),
        "the demo never started loading the board: {so_far}"
    );
    assert!(
        !throwaway_folders(tmp.path()).is_empty(),
        "the demo's folder is not in TMPDIR"
    );
    // The control for "no server survives": the running server is seen by the same search.
    assert!(
        !processes_under(tmp.path()).is_empty(),
        "the demo's server is not found under {}",
        tmp.path().display()
    );
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        stderr.lock().unwrap().as_str()
    );
    // No server process of this demo survives it.
    let survivors = processes_under(tmp.path());
    assert!(survivors.is_empty(), "still running: {survivors:?}");
    let after = throwaway_folders(tmp.path());
    assert!(after.is_empty(), "left behind: {after:?}");
}
