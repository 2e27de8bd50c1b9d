//! A hostile server on the wire: something answering where the database should be (a server a
//! pull request's CI job points plancheck at, or anything on the way to it), speaking just
//! enough of PostgreSQL's protocol to start a session, then announcing a 1.9 GB row and sending
//! it slowly, stopping half-way through a message, or claiming a version plancheck does not
//! support. The real binary runs against it under a wall clock and a memory bound; each run
//! must end on plancheck's own clock, exit 3 (the database failed underneath), with a message
//! that says what happened, and hold little memory.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use super::*;

/// What the fake server does with the first request that would be answered with rows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    /// A row description, then a row whose header announces 1.9 GB, then its body, slowly.
    Huge,
    /// Half of a message, then nothing, the connection kept open.
    Stall,
    /// An error for every request: the session itself is fine.
    Refuse,
}

/// The length the huge row's header announces.
const HUGE: u32 = 1_900_000_000;

/// A run against the fake server is over within this, or killed.
const PROMPT: Duration = Duration::from_secs(30);

/// The address space a run may take: far more than a run needs, far less than the huge row.
const MEMORY_LIMIT: libc::rlim_t = 2 << 30;

/// A byte stream the fake server speaks on: a TCP socket, or TLS over one.
trait Wire: Read + Write + Send {}
impl<T: Read + Write + Send> Wire for T {}

/// A fake PostgreSQL server on a loopback port, one thread a connection, until dropped.
struct Fake {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Fake {
    /// Starts the server: it reports `version` as its `server_version`, does `then`, and agrees
    /// to TLS (with a self-signed certificate) when `tls`.
    fn start(version: &'static str, then: Then, tls: bool) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let config = tls.then(server_tls);
        let s = stop.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (s, config) = (s.clone(), config.clone());
                thread::spawn(move || {
                    let _ = serve(conn, version, then, config, &s);
                });
            }
        });
        Fake { port, stop }
    }

    /// A connection string to the fake server.
    fn url(&self, sslmode: &str) -> String {
        format!(
            "postgresql://fake@127.0.0.1:{}/fake?sslmode={sslmode}&connect_timeout=10",
            self.port
        )
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A rustls server configuration with a self-signed certificate for localhost.
fn server_tls() -> Arc<rustls::ServerConfig> {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.der().clone()], der)
    .unwrap();
    Arc::new(config)
}

/// A backend message: its type byte, its length, its body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&u32::try_from(body.len() + 4).unwrap().to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn parameter(name: &str, value: &str) -> Vec<u8> {
    message(b'S', format!("{name}\0{value}\0").as_bytes())
}

/// A row description of one text column.
fn row_description() -> Vec<u8> {
    let mut body = 1i16.to_be_bytes().to_vec();
    body.extend_from_slice(b"x\0");
    body.extend_from_slice(&0i32.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&25i32.to_be_bytes());
    body.extend_from_slice(&(-1i16).to_be_bytes());
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    message(b'T', &body)
}

fn error(words: &str) -> Vec<u8> {
    message(
        b'E',
        format!("SERROR\0VERROR\0C42000\0M{words}\0\0").as_bytes(),
    )
}

fn ready() -> Vec<u8> {
    message(b'Z', b"I")
}

fn read_exact(wire: &mut dyn Wire, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    wire.read_exact(&mut buf)?;
    Ok(buf)
}

fn read_u32(wire: &mut dyn Wire) -> std::io::Result<u32> {
    let b = read_exact(wire, 4)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Serves one connection: the startup (answering an SSLRequest), then the requests, until the
/// first one answered with rows meets `then`.
fn serve(
    tcp: TcpStream,
    version: &str,
    then: Then,
    tls: Option<Arc<rustls::ServerConfig>>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    tcp.set_nodelay(true)?;
    let mut wire: Box<dyn Wire> = Box::new(tcp.try_clone()?);
    loop {
        let len = read_u32(&mut *wire)? as usize;
        let body = read_exact(&mut *wire, len.saturating_sub(4))?;
        let code = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        match code {
            // SSLRequest.
            80877103 => match &tls {
                Some(config) => {
                    wire.write_all(b"S")?;
                    let session = rustls::ServerConnection::new(config.clone()).unwrap();
                    wire = Box::new(rustls::StreamOwned::new(session, tcp.try_clone()?));
                }
                None => wire.write_all(b"N")?,
            },
            // GSSENCRequest.
            80877104 => wire.write_all(b"N")?,
            // CancelRequest: nothing to cancel.
            80877102 => return Ok(()),
            _ => break,
        }
    }
    let mut out = message(b'R', &0i32.to_be_bytes());
    out.extend(parameter("server_version", version));
    out.extend(parameter("server_encoding", "UTF8"));
    out.extend(parameter("client_encoding", "UTF8"));
    out.extend(parameter("DateStyle", "ISO, MDY"));
    out.extend(parameter("integer_datetimes", "on"));
    out.extend(parameter("standard_conforming_strings", "on"));
    out.extend(parameter("TimeZone", "UTC"));
    let mut key = 4242i32.to_be_bytes().to_vec();
    key.extend_from_slice(&77i32.to_be_bytes());
    out.extend(message(b'K', &key));
    out.extend(ready());
    wire.write_all(&out)?;
    wire.flush()?;
    let mut out = Vec::new();
    loop {
        let kind = read_exact(&mut *wire, 1)?[0];
        let len = read_u32(&mut *wire)? as usize;
        let body = read_exact(&mut *wire, len.saturating_sub(4))?;
        let rows = match kind {
            b'Q' => {
                if then == Then::Refuse {
                    out.extend(error("the fake server answers nothing"));
                    out.extend(ready());
                    false
                } else {
                    out.extend(row_description());
                    true
                }
            }
            b'P' => {
                out.extend(message(b'1', b""));
                false
            }
            b'D' => {
                if body.first() == Some(&b'S') {
                    out.extend(message(b't', &0i16.to_be_bytes()));
                }
                out.extend(row_description());
                false
            }
            b'B' => {
                out.extend(message(b'2', b""));
                false
            }
            b'C' => {
                out.extend(message(b'3', b""));
                false
            }
            b'E' => then != Then::Refuse,
            b'S' => {
                if then == Then::Refuse {
                    out.extend(error("the fake server answers nothing"));
                }
                out.extend(ready());
                false
            }
            b'X' => return Ok(()),
            _ => false,
        };
        if !rows {
            // Requests are answered when the client waits for them (a Sync, a query).
            if matches!(kind, b'S' | b'Q' | b'H') {
                wire.write_all(&out)?;
                wire.flush()?;
                out.clear();
            }
            continue;
        }
        wire.write_all(&out)?;
        out.clear();
        match then {
            Then::Huge => {
                // A row of one column whose header announces 1.9 GB, then its body, 64 KiB
                // every 10 ms, until the client hangs up.
                let mut header = vec![b'D'];
                header.extend_from_slice(&HUGE.to_be_bytes());
                header.extend_from_slice(&1i16.to_be_bytes());
                header.extend_from_slice(&(HUGE as i32 - 10).to_be_bytes());
                wire.write_all(&header)?;
                wire.flush()?;
                let chunk = vec![b'x'; 64 << 10];
                let started = Instant::now();
                while !stop.load(Ordering::SeqCst) && started.elapsed() < PROMPT {
                    wire.write_all(&chunk)?;
                    wire.flush()?;
                    thread::sleep(Duration::from_millis(10));
                }
            }
            Then::Stall => {
                // Half a row's header and nothing more, the connection kept open.
                let mut header = vec![b'D'];
                header.extend_from_slice(&20u32.to_be_bytes());
                wire.write_all(&header[..3])?;
                wire.flush()?;
                let started = Instant::now();
                while !stop.load(Ordering::SeqCst) && started.elapsed() < PROMPT * 2 {
                    thread::sleep(Duration::from_millis(50));
                }
            }
            Then::Refuse => {}
        }
        return Ok(());
    }
}

/// A project of one read path, for commands that need one.
fn any_project() -> tempfile::TempDir {
    project(&[
        ("plans/p.sql", "SELECT 1"),
        ("expectations/p.toml", "[scopes.member]\nindex = false\n"),
    ])
}

/// `command` (check or ladder) of `dir` against `url`, with a short statement timeout, under
/// the memory bound and the wall clock.
fn against(command: &str, url: &str, dir: &Path) -> (Run, u64) {
    let mut args = vec![
        command,
        "--database-url",
        url,
        "--project",
        dir.to_str().unwrap(),
        "--statement-timeout",
        "1s",
    ];
    if command == "ladder" {
        args.extend([
            "--rates",
            "5",
            "--warmup-seconds",
            "0",
            "--rung-seconds",
            "2",
        ]);
    }
    run_bounded(&args, MEMORY_LIMIT, PROMPT)
}

// A row whose header announces 1.9 GB, answering the first request of `check` and of `ladder`,
// in plain text and over TLS: refused from its length, before any of it is read. Before: the
// run held gigabytes (1.3–3.4 GB seen) reading it.
#[test]
fn a_message_announcing_1_9_gb_is_refused_from_its_length() {
    let dir = any_project();
    let mut failures = Vec::new();
    for tls in [false, true] {
        let fake = Fake::start("15.4", Then::Huge, tls);
        let url = fake.url(if tls { "require" } else { "disable" });
        for command in ["check", "ladder"] {
            let (run, peak) = against(command, &url, dir.path());
            let says = run.stderr.contains("1,900,000,000 bytes")
                && run.stderr.contains("cap of 9 MiB on one message");
            if run.status != Some(3) || !says || peak >= 256 || run.took >= PROMPT {
                failures.push(format!(
                    "{command} (tls {tls}): exit {:?}, {peak} MiB at most, {:.1?}; wanted exit \
                     3 naming the length and the cap, under 256 MiB\n{}",
                    run.status,
                    run.took,
                    run.shown()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// Half a message, then nothing, the connection open: every read plancheck makes is on its own
// clock, `ladder`'s reads before its first rung included. Before: `ladder` hung there.
#[test]
fn a_server_that_stalls_mid_message_cannot_hang_the_run() {
    let dir = any_project();
    let fake = Fake::start("15.4", Then::Stall, false);
    let url = fake.url("disable");
    let mut failures = Vec::new();
    for command in ["check", "ladder"] {
        let (run, _) = against(command, &url, dir.path());
        // --statement-timeout 1s: plancheck's clock gives a request 2 s, and a cancel 4 more.
        let prompt = Duration::from_secs(15);
        if run.status != Some(3)
            || run.took >= prompt
            || !run.stderr.contains("did not answer within 2000 ms")
        {
            failures.push(format!(
                "{command}: exit {:?} after {:.1?}; wanted exit 3 within {prompt:?}, saying what \
                 was not answered within 2 s\n{}",
                run.status,
                run.took,
                run.shown()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// A server that reports a version plancheck does not support, or none it can read: refused as
// the session starts, saying what it reported. Before: plancheck went on and failed on the
// server's first answer, never naming the version. The control, a server reporting 15.4 that
// refuses every request, is not refused for its version.
#[test]
fn a_server_claiming_a_version_plancheck_does_not_support_is_refused_at_once() {
    let dir = any_project();
    let mut failures = Vec::new();
    for version in ["9.6.24", "garbage", "19devel", "12.22"] {
        let fake = Fake::start(version, Then::Refuse, false);
        let (run, _) = against("check", &fake.url("disable"), dir.path());
        let names = format!("server_version {version:?}");
        let says = run.stderr.contains(&names) && run.stderr.contains("PostgreSQL 13 to 18");
        if run.status != Some(3) || !says || run.took >= Duration::from_secs(10) {
            failures.push(format!(
                "{version}: exit {:?} after {:.1?}; wanted exit 3 at once naming {names}\n{}",
                run.status,
                run.took,
                run.shown()
            ));
        }
    }
    let fake = Fake::start("15.4", Then::Refuse, false);
    let (run, _) = against("check", &fake.url("disable"), dir.path());
    assert_eq!(run.status, Some(3), "{}", run.shown());
    assert!(
        run.stderr.contains("the fake server answers nothing")
            && !run.stderr.contains("server_version"),
        "{}",
        run.shown()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
