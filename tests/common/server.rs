//! The test server and the reference board on it, and SQL run from a session of the test's own
//! (never plancheck's): to set a database up, and to look at it after a run.

use std::future::Future;
use std::sync::{Mutex, OnceLock, mpsc};

use plancheck::server::Server;

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

/// A runtime for one piece of async work. A connection's task runs on the runtime that opened
/// it: the connection lives as long as that runtime does.
pub fn runtime() -> tokio::runtime::Runtime {
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
                // Prepared transactions allowed, as on many servers: an attack that prepares
                // one (tests/attacks.rs) must be stopped by plancheck, not by this setting.
                let server = Server::start_with_settings(
                    plancheck::server::find_bin_dir()?,
                    None,
                    &[("max_prepared_transactions", "4")],
                )
                .await?;
                let admin = server.target("postgres").connect().await?;
                admin
                    .batch_execute("CREATE DATABASE board")
                    .await
                    .map_err(|e| plancheck::error::DatabaseFailure(e.to_string()))?;
                let client = server.target("board").connect().await?;
                plancheck::db::fixtures::load(&client, TEST_SCALE, true)
                    .await
                    .map_err(|e| plancheck::error::DatabaseFailure(e.to_string()))?;
                Ok::<_, plancheck::error::DatabaseFailure>(server)
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
    recreate(name, " TEMPLATE board")
}

/// An empty database (no board in it); returns its connection string.
pub fn empty_database(name: &str) -> String {
    recreate(name, "")
}

/// Drops database `name` if it exists and creates it again with `how`.
fn recreate(name: &str, how: &str) -> String {
    let shared = shared();
    let _one_at_a_time = CREATE.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let client = shared.target.connect().await.expect("connect");
        // Two batches: a multi-statement batch is one implicit transaction, which
        // DROP DATABASE and CREATE DATABASE refuse.
        for statement in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}{how}"),
        ] {
            client.batch_execute(&statement).await.expect(&statement);
        }
    });
    shared
        .base
        .replace("dbname=postgres", &format!("dbname={name}"))
}

/// One session of the test's own, kept open while the test needs it (a lock held across a run,
/// async calls into the library). Dropping it closes the session.
pub struct Session {
    // Declared before the runtime, so dropped first: the connection's task runs on `rt`.
    client: tokio_postgres::Client,
    rt: tokio::runtime::Runtime,
}

impl Session {
    /// Connects, panicking when it cannot.
    pub fn open(conn: &str) -> Session {
        let rt = runtime();
        let client = rt.block_on(async {
            plancheck::db::Target::parse(conn)
                .expect("a connection string")
                .connect()
                .await
                .expect("connect")
        });
        Session { client, rt }
    }

    pub fn client(&self) -> &tokio_postgres::Client {
        &self.client
    }

    /// Runs async work (a call into the library with [`Session::client`]) on this session's
    /// runtime.
    pub fn block_on<F: Future>(&self, work: F) -> F::Output {
        self.rt.block_on(work)
    }

    /// Runs SQL as one batch, panicking when the server refuses it.
    pub fn execute(&self, statements: &str) {
        self.block_on(self.client.batch_execute(statements))
            .unwrap_or_else(|e| panic!("{statements}: {e}"));
    }

    /// The first column of every row, as text (NULL as "").
    pub fn rows(&self, query: &str) -> Vec<String> {
        let messages = self
            .block_on(self.client.simple_query(query))
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        messages
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => {
                    Some(r.get(0).unwrap_or("").to_string())
                }
                _ => None,
            })
            .collect()
    }
}

/// Runs SQL against a database by connection string, in a session of its own.
pub fn sql(conn: &str, statements: &str) {
    Session::open(conn).execute(statements);
}

/// Runs SQL; unlike [`sql`] it never panics, for the guards that clean up after a test.
pub fn try_sql(conn: &str, statements: &str) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let target = plancheck::db::Target::parse(conn).map_err(|e| e.0)?;
        let client = target.connect().await.map_err(|e| e.0)?;
        client
            .batch_execute(statements)
            .await
            .map_err(|e| e.to_string())
    })
}

/// The first column of every row, as text, in a session of its own.
pub fn query_rows(conn: &str, query: &str) -> Vec<String> {
    Session::open(conn).rows(query)
}

/// The first column of the first row, as text ("" for NULL or no row).
pub fn query_text(conn: &str, query: &str) -> String {
    query_rows(conn, query)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// The text EXPLAIN of a statement, every line.
pub fn explain_text(conn: &str, statement: &str) -> String {
    query_rows(conn, &format!("EXPLAIN {statement}")).join("\n")
}

/// Whether a relation of that name exists (on the search path).
pub fn relation_exists(conn: &str, relation: &str) -> bool {
    query_text(
        conn,
        &format!("SELECT to_regclass('{relation}') IS NOT NULL"),
    ) == "t"
}

pub fn server_version_num(conn: &str) -> u32 {
    query_text(conn, "SHOW server_version_num")
        .parse()
        .expect("server_version_num is a number")
}

/// The connection string `conn` with another user (the test server trusts every local user).
pub fn as_user(conn: &str, user: &str) -> String {
    conn.split_whitespace()
        .map(|kv| match kv.strip_prefix("user=") {
            Some(_) => format!("user={user}"),
            None => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
