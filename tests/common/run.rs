//! The real binary: run to the end and killed if it hangs, or spawned for a test to signal; and
//! what its JSON report says.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// Longer than any run may take: the child is killed then, and the test fails.
pub const HANG: Duration = Duration::from_secs(60);

/// `plancheck` with the given arguments, no DATABASE_URL inherited.
pub fn plancheck(args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("plancheck").expect("the binary is built");
    // What a CI system or a shell sets must not change what the tests see.
    for name in [
        "DATABASE_URL",
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "COLUMNS",
        "NO_COLOR",
    ] {
        cmd.env_remove(name);
    }
    cmd.args(args);
    cmd
}

/// The same as a plain process, for a test that spawns it and signals it: stdout and stderr
/// piped, no DATABASE_URL inherited.
pub fn plancheck_process(args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_plancheck"));
    cmd.args(args)
        .env_remove("DATABASE_URL")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("COLUMNS")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A finished run of the binary.
pub struct Run {
    /// `None` when it was killed.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Run {
    /// Waits for a spawned run to end by itself (`started`: when the test's clock started).
    pub fn finish(child: Child, started: Instant) -> Run {
        let out = child.wait_with_output().expect("wait for plancheck");
        Run::of(out, started)
    }

    fn of(out: std::process::Output, started: Instant) -> Run {
        Run {
            status: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            took: started.elapsed(),
        }
    }

    /// The exit status, panicking when the run was killed.
    pub fn code(&self) -> i32 {
        self.status
            .unwrap_or_else(|| panic!("no exit status: killed\n{}", self.shown()))
    }

    /// stdout as a JSON report, panicking when it is not one.
    pub fn report(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not a JSON report ({e})\n{}", self.shown()))
    }

    /// Everything about the run, for a failure message.
    pub fn shown(&self) -> String {
        format!(
            "exit status {:?} after {:.1?}\nstdout:\n{}\nstderr:\n{}",
            self.status, self.took, self.stdout, self.stderr
        )
    }
}

/// Runs a command of the binary to the end, killing it after [`HANG`].
pub fn run_command(cmd: &mut Command) -> Run {
    let started = Instant::now();
    let out = cmd.timeout(HANG).output().expect("run plancheck");
    Run::of(out, started)
}

/// Runs the binary with these arguments, killing it after [`HANG`].
pub fn run(args: &[&str]) -> Run {
    run_command(&mut plancheck(args))
}

/// `check --format json` of a project, with `--warmup 0 --iterations 1` unless `extra` sets
/// the iterations itself.
pub fn check(db: &str, project: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "check",
        "--database-url",
        db,
        "--project",
        project.to_str().expect("a UTF-8 path"),
        "--format",
        "json",
    ];
    if !extra.contains(&"--iterations") {
        args.extend(["--warmup", "0", "--iterations", "1"]);
    }
    args.extend_from_slice(extra);
    run(&args)
}

/// Runs `check --format json --warmup 1 --iterations 2` and returns (exit status, parsed report).
pub fn check_json(conn: &str, project: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["--warmup", "1", "--iterations", "2"];
    args.extend_from_slice(extra);
    let run = check(conn, project, &args);
    (run.code(), run.report())
}

/// `(read_path, scope, verdict)` of every check of a JSON report.
pub fn verdicts(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["checks"]
        .as_array()
        .expect("checks is an array")
        .iter()
        .map(|c| {
            (
                c["read_path"].as_str().unwrap().to_string(),
                c["scope"].as_str().unwrap().to_string(),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The verdict of one check, panicking when the report has no such check.
pub fn verdict_of(report: &serde_json::Value, read_path: &str, scope: &str) -> String {
    verdicts(report)
        .into_iter()
        .find(|(r, s, _)| r == read_path && s == scope)
        .map(|(_, _, v)| v)
        .unwrap_or_else(|| panic!("no check {read_path} [{scope}] in {report:#}"))
}

/// One check of a JSON report, panicking when the report has no such check.
pub fn check_of<'a>(
    report: &'a serde_json::Value,
    read_path: &str,
    scope: &str,
) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .expect("checks is an array")
        .iter()
        .find(|c| c["read_path"] == read_path && c["scope"] == scope)
        .unwrap_or_else(|| panic!("no check {read_path} [{scope}] in {report:#}"))
}

/// `plancheck judge DIR --format json` of a run saved with --save-plans gives the same checks,
/// summary and exit status as the run's own report.
pub fn assert_judged_the_same(saved: &Path, report: &serde_json::Value, status: i32) {
    let out = plancheck(&["judge", saved.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(status), "{out:?}");
    let judged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(judged["checks"], report["checks"]);
    assert_eq!(judged["summary"], report["summary"]);
}

/// Runs the binary with its address space capped at `memory` bytes, killed after `kill_after`
/// (then `status` is `None`); returns the run and the most memory it held (its peak resident
/// set, in MiB, as the kernel counted it for this one process).
pub fn run_bounded(args: &[&str], memory: libc::rlim_t, kill_after: Duration) -> (Run, u64) {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut cmd = plancheck_process(args);
    cmd.stdin(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: memory,
                rlim_max: memory,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    // Reaped by the wait4 below, which Child does not know of.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().expect("start plancheck");
    let pid = child.id() as libc::pid_t;
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    // wait4 rather than Child::wait: it gives this process's own resource usage.
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 writes it and the status on success.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut ended = false;
    while !ended {
        // SAFETY: `pid` is our child, not yet waited for; both pointers outlive the call.
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(got >= 0, "wait4: {}", std::io::Error::last_os_error());
        ended = got == pid;
        if !ended {
            if started.elapsed() > kill_after {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let run = Run {
        status: code,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        took: started.elapsed(),
    };
    // ru_maxrss is in KiB on Linux.
    (run, usage.ru_maxrss as u64 >> 10)
}
