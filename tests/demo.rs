//! `plancheck demo` as a user meets it: a throwaway server, the reference board, every check
//! passing, and nothing left behind, also when interrupted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

#[test]
fn demo_passes_every_check_and_leaves_nothing_behind() {
    let tmp = private_tmp();
    let out = Command::new(env!("CARGO_BIN_EXE_plancheck"))
        .args(["demo", "--warmup", "1", "--iterations", "2"])
        .env_remove("DATABASE_URL")
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("12 checks on PostgreSQL")
            && stdout.contains(": 12 passed, 0 failed, 0 errors"),
        "{stdout}"
    );
    assert!(stderr.contains("loaded the reference board"), "{stderr}");
    let after = throwaway_folders(tmp.path());
    assert!(after.is_empty(), "left behind: {after:?}");
}

#[test]
fn interrupted_demo_stops_the_server_and_removes_its_files() {
    let tmp = private_tmp();
    let mut child = Command::new(env!("CARGO_BIN_EXE_plancheck"))
        .args(["demo", "--scale", "0.2"])
        .env_remove("DATABASE_URL")
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the server is up and the board is loading, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if !throwaway_folders(tmp.path()).is_empty() {
            std::thread::sleep(Duration::from_millis(1500));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the demo never created its folder"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // No server process of this demo survives it.
    let needle = tmp.path().to_string_lossy().into_owned();
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect();
    assert!(survivors.is_empty(), "still running: {survivors:?}");
    let after = throwaway_folders(tmp.path());
    assert!(after.is_empty(), "left behind: {after:?}");
}
