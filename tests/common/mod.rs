//! Shared by the integration tests: one throwaway PostgreSQL per test binary (from the same
//! local server binaries `plancheck demo` uses; `PLANCHECK_PG_BIN` picks the version), the
//! reference board loaded once into a template database, and a fresh copy of it per test, so a
//! test that drops an index harms no other.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, mpsc};

use assert_cmd::Command;
use plancheck::db::ephemeral::Server;

/// The board size the tests load: small enough to load in seconds, large enough that every
/// expectation of the reference project passes for the reason it passes on the full board.
pub const TEST_SCALE: f64 = plancheck::DEMO_SCALE;

struct Shared {
    base: String,
    target: plancheck::db::Target,
}

static SERVER: Mutex<Option<Server>> = Mutex::new(None);
static SHARED: OnceLock<Shared> = OnceLock::new();
static CREATE: Mutex<()> = Mutex::new(());

extern "C" fn stop_server() {
    if let Ok(mut guard) = SERVER.lock() {
        guard.take();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn shared() -> &'static Shared {
    SHARED.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        // The server is started from a thread that never ends: the server is told to quit when
        // the thread that started it dies, and test threads end after each test.
        std::thread::spawn(move || {
            let rt = runtime();
            let started = rt.block_on(async {
                let server = Server::start().await?;
                let admin = server.target("postgres").connect().await?;
                admin
                    .batch_execute("CREATE DATABASE board")
                    .await
                    .map_err(|e| plancheck::errors::DatabaseFailure(e.to_string()))?;
                let client = server.target("board").connect().await?;
                plancheck::db::fixtures::load(&client, TEST_SCALE, true).await?;
                Ok::<_, plancheck::errors::DatabaseFailure>(server)
            });
            // Dropping the runtime closes the loading sessions, which would otherwise hold the
            // template database open and make every CREATE DATABASE … TEMPLATE board fail.
            drop(rt);
            match started {
                Ok(server) => {
                    let base = server.connection_string("postgres");
                    let target = server.target("postgres");
                    *SERVER.lock().unwrap() = Some(server);
                    // SAFETY: registering a plain extern "C" function.
                    unsafe {
                        libc::atexit(stop_server);
                    }
                    tx.send(Ok((base, target))).unwrap();
                }
                Err(e) => tx.send(Err(e.0)).unwrap(),
            }
            loop {
                std::thread::park();
            }
        });
        let (base, target) = rx
            .recv()
            .expect("the server thread answers")
            .unwrap_or_else(|e| panic!("could not start the test server: {e}"));
        Shared { base, target }
    })
}

/// A fresh copy of the reference board; returns its connection string.
pub fn fresh_board(name: &str) -> String {
    let shared = shared();
    let _one_at_a_time = CREATE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let client = shared.target.connect().await.expect("connect");
        // Two batches: a multi-statement batch is one implicit transaction, which
        // DROP DATABASE and CREATE DATABASE refuse.
        for statement in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name} TEMPLATE board"),
        ] {
            client.batch_execute(&statement).await.expect(&statement);
        }
    });
    shared
        .base
        .replace("dbname=postgres", &format!("dbname={name}"))
}

/// Runs SQL against a database by connection string.
pub fn sql(conn: &str, statements: &str) {
    runtime().block_on(async {
        let target = plancheck::db::Target::parse(conn).expect("a connection string");
        let client = target.connect().await.expect("connect");
        client.batch_execute(statements).await.expect(statements);
    });
}

/// The first column of the first row, as text.
pub fn query_text(conn: &str, query: &str) -> String {
    runtime().block_on(async {
        let target = plancheck::db::Target::parse(conn).expect("a connection string");
        let client = target.connect().await.expect("connect");
        let rows = client.simple_query(query).await.expect(query);
        for m in rows {
            if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                return r.get(0).unwrap_or("").to_string();
            }
        }
        String::new()
    })
}

/// The repository root, where the reference project lives.
pub fn reference_project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// `plancheck` with the given arguments, no DATABASE_URL inherited.
pub fn plancheck(args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("plancheck").expect("the binary is built");
    cmd.env_remove("DATABASE_URL").args(args);
    cmd
}

/// Runs `check --format json` and returns (exit status, parsed report).
pub fn check_json(conn: &str, project: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec![
        "check",
        "--database-url",
        conn,
        "--project",
        project.to_str().unwrap(),
        "--format",
        "json",
        "--warmup",
        "1",
        "--iterations",
        "2",
    ];
    args.extend_from_slice(extra);
    let out = plancheck(&args).output().expect("run plancheck");
    let status = out.status.code().expect("an exit status");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}); status {status}\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (status, report)
}

/// `(read_path, scope) -> verdict` of a JSON report.
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
