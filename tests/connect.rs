//! Connecting the libpq way, against real PostgreSQL servers started here: one with TLS (its
//! certificate, for `localhost` only, from a CA this test makes; client certificates from the same
//! CA are accepted by a `hostssl … cert` line) and one without. Each sslmode is checked for what
//! libpq does with it, and the password sources (the string, `PGPASSWORD`, `~/.pgpass`) through
//! the real binary, whose environment is set only in its own process.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use common::{Run, project, run_command, runtime, wait_until, within};
use plancheck::db::Target;
use plancheck::db::conninfo::GivenEnv;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

const SUPERUSER: &str = "plancheck";
const PASSWORD: &str = "Corr3ct-Horse-Battery";
const WRONG_PASSWORD: &str = "Wr0ng-Staple-9431";

/// The files the client side uses, in a folder of the test process's own.
struct Pki {
    ca: PathBuf,
    wrong_ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    /// PEM texts, for servers and home folders.
    ca_pem: String,
    server_cert_pem: String,
    server_key_pem: String,
    client_cert_pem: String,
    client_key_pem: String,
}

struct Servers {
    pki: Pki,
    /// ssl=on, certificate for `localhost` only.
    tls_port: u16,
    /// ssl=off.
    plain_port: u16,
}

struct Running {
    child: Child,
    dir: PathBuf,
}

static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());
static CLEANUP: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static SERVERS: OnceLock<Servers> = OnceLock::new();

extern "C" fn stop_servers() {
    if let Ok(mut running) = RUNNING.lock() {
        for mut server in running.drain(..) {
            // SAFETY: signalling our own child process (fast shutdown).
            unsafe {
                libc::kill(server.child.id() as libc::pid_t, libc::SIGINT);
            }
            wait_until(within(Duration::from_secs(10)), || {
                matches!(server.child.try_wait(), Ok(Some(_)))
            });
            let _ = server.child.kill();
            let _ = server.child.wait();
            let _ = fs::remove_dir_all(&server.dir);
        }
    }
    if let Ok(mut dirs) = CLEANUP.lock() {
        for dir in dirs.drain(..) {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// The two servers, started once per test binary.
fn servers() -> &'static Servers {
    SERVERS.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        // Started from a thread that never ends: each server is told to quit when the thread
        // that started it dies (PR_SET_PDEATHSIG), and test threads end after each test.
        std::thread::spawn(move || {
            let started = (|| {
                let pki = make_pki()?;
                let tls_port = start_server(&pki, true)?;
                let plain_port = start_server(&pki, false)?;
                Ok::<_, String>(Servers {
                    pki,
                    tls_port,
                    plain_port,
                })
            })();
            // SAFETY: registering a plain extern "C" function.
            unsafe {
                libc::atexit(stop_servers);
            }
            tx.send(started).unwrap();
            loop {
                std::thread::park();
            }
        });
        rx.recv()
            .expect("the server thread answers")
            .unwrap_or_else(|e| panic!("could not start the test servers: {e}"))
    })
}

fn kept_tempdir(prefix: &str) -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("a temporary folder")
        .keep();
    CLEANUP.lock().unwrap().push(dir.clone());
    dir
}

fn ca(name: &str) -> Result<(String, Issuer<'static, KeyPair>), String> {
    let key = KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    Ok((cert.pem(), Issuer::new(params, key)))
}

fn leaf(
    issuer: &Issuer<'static, KeyPair>,
    common_name: &str,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> Result<(String, String), String> {
    let key = KeyPair::generate().map_err(|e| e.to_string())?;
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).map_err(|e| e.to_string())?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).map_err(|e| e.to_string())?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn make_pki() -> Result<Pki, String> {
    let (ca_pem, issuer) = ca("plancheck test CA")?;
    let (wrong_ca_pem, _) = ca("plancheck wrong CA")?;
    let (server_cert_pem, server_key_pem) = leaf(
        &issuer,
        "localhost",
        &["localhost"],
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let (client_cert_pem, client_key_pem) = leaf(
        &issuer,
        "certuser",
        &[],
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;
    let dir = kept_tempdir("plancheck-connect-pki-");
    let write = |name: &str, text: &str, mode: u32| -> Result<PathBuf, String> {
        let path = dir.join(name);
        fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(|e| e.to_string())?;
        Ok(path)
    };
    Ok(Pki {
        ca: write("ca.crt", &ca_pem, 0o644)?,
        wrong_ca: write("wrong-ca.crt", &wrong_ca_pem, 0o644)?,
        client_cert: write("client.crt", &client_cert_pem, 0o644)?,
        client_key: write("client.key", &client_key_pem, 0o600)?,
        ca_pem,
        server_cert_pem,
        server_key_pem,
        client_cert_pem,
        client_key_pem,
    })
}

/// When running as root: the unprivileged user (uid, gid) the server runs as.
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    let wanted: Vec<String> = match std::env::var("PLANCHECK_PG_USER") {
        Ok(u) if !u.is_empty() => vec![u],
        _ => vec!["postgres".into(), "nobody".into()],
    };
    wanted.iter().find_map(|name| {
        passwd.lines().find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            if f.len() >= 4 && f[0] == name {
                let (uid, gid) = (f[2].parse().ok()?, f[3].parse().ok()?);
                (uid != 0).then_some((uid, gid))
            } else {
                None
            }
        })
    })
}

fn as_owner(program: &Path, owner: Option<(u32, u32)>) -> Command {
    let mut cmd = Command::new(program);
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid).current_dir("/").env_remove("HOME");
    }
    cmd
}

fn owned_file(path: &Path, text: &str, mode: u32, owner: Option<(u32, u32)>) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| e.to_string())?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// initdb, certificates, pg_hba.conf; starts the server on 127.0.0.1 and sets the passwords.
fn start_server(pki: &Pki, ssl: bool) -> Result<u16, String> {
    let bin = plancheck::server::find_bin_dir().map_err(|e| e.0)?;
    let owner = server_user();
    let dir = tempfile::Builder::new()
        .prefix("plancheck-connect-")
        .tempdir()
        .map_err(|e| e.to_string())?
        .keep();
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
    let data = dir.join("data");
    let out = as_owner(&bin.join("initdb"), owner)
        .arg("-D")
        .arg(&data)
        .args(["-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C"])
        .arg("--no-sync")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let hba = if ssl {
        "local all all trust\n\
         hostssl all certuser 127.0.0.1/32 cert\n\
         hostnossl all tlsonly 127.0.0.1/32 reject\n\
         hostssl all plainonly 127.0.0.1/32 reject\n\
         host all all 127.0.0.1/32 scram-sha-256\n"
    } else {
        "local all all trust\n\
         host all all 127.0.0.1/32 scram-sha-256\n"
    };
    owned_file(&data.join("pg_hba.conf"), hba, 0o600, owner)?;
    owned_file(&dir.join("server.crt"), &pki.server_cert_pem, 0o644, owner)?;
    owned_file(&dir.join("server.key"), &pki.server_key_pem, 0o600, owner)?;
    owned_file(&dir.join("ca.crt"), &pki.ca_pem, 0o644, owner)?;

    let mut last_error = String::new();
    // A port found free may be taken before the server binds it: try a few.
    for _ in 0..5 {
        let port = free_port();
        let log = dir.join(format!("server-{port}.log"));
        let log_file = fs::File::create(&log).map_err(|e| e.to_string())?;
        let mut cmd = as_owner(&bin.join("postgres"), owner);
        cmd.arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&dir)
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-c", "max_connections=40"])
            .args(["-c", "password_encryption=scram-sha-256"]);
        if ssl {
            cmd.args(["-c", "ssl=on"])
                .arg("-c")
                .arg(format!(
                    "ssl_cert_file={}",
                    dir.join("server.crt").display()
                ))
                .arg("-c")
                .arg(format!("ssl_key_file={}", dir.join("server.key").display()))
                .arg("-c")
                .arg(format!("ssl_ca_file={}", dir.join("ca.crt").display()));
        } else {
            cmd.args(["-c", "ssl=off"]);
        }
        cmd.stdin(Stdio::null())
            .stdout(log_file.try_clone().map_err(|e| e.to_string())?)
            .stderr(log_file)
            .process_group(0);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        #[cfg(target_os = "linux")]
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| format!("postgres: {e}"))?;
        let mut running = Running {
            child,
            dir: dir.clone(),
        };
        match wait_ready(&mut running, &dir, port) {
            Ok(()) => {
                RUNNING.lock().unwrap().push(running);
                return Ok(port);
            }
            Err(e) => {
                let _ = running.child.kill();
                let _ = running.child.wait();
                last_error = format!("{e}: {}", fs::read_to_string(&log).unwrap_or_default());
            }
        }
    }
    let _ = fs::remove_dir_all(&dir);
    Err(last_error)
}

/// Waits for the server's socket, then sets the roles up over it.
fn wait_ready(running: &mut Running, dir: &Path, port: u16) -> Result<(), String> {
    let mut config = tokio_postgres::Config::new();
    config
        .host_path(dir)
        .port(port)
        .user(SUPERUSER)
        .dbname("postgres");
    let target = Target::from_config(config);
    let rt = runtime();
    let mut client = None;
    let mut exited = None;
    let ready = wait_until(within(Duration::from_secs(60)), || {
        if let Ok(Some(status)) = running.child.try_wait() {
            exited = Some(status);
            return true;
        }
        client = rt.block_on(target.connect()).ok();
        client.is_some()
    });
    if let Some(status) = exited {
        return Err(format!("the server exited ({status})"));
    }
    let (true, Some(client)) = (ready, client) else {
        return Err("the server did not start within 60 s".into());
    };
    rt.block_on(client.batch_execute(&format!(
        "ALTER ROLE {SUPERUSER} PASSWORD '{PASSWORD}';
         CREATE ROLE certuser LOGIN;
         CREATE ROLE tlsonly LOGIN PASSWORD '{PASSWORD}';
         CREATE ROLE plainonly LOGIN PASSWORD '{PASSWORD}';"
    )))
    .map_err(|e| format!("setting the roles up: {e}"))
}

/// A home folder of the test's own, with nothing in it: no ~/.pgpass, no ~/.postgresql.
fn empty_home() -> tempfile::TempDir {
    tempfile::tempdir().expect("a home folder")
}

/// Resolves a connection string against no environment variables and the given home folder.
fn target_in(text: &str, home: &Path) -> Target {
    let env = GivenEnv {
        home: Some(home.to_path_buf()),
        user: Some(SUPERUSER.into()),
        ..GivenEnv::default()
    };
    Target::resolve_with(Some(text), &env).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Connects and answers whether the session is TLS, or the connection error.
fn session_tls(text: &str, home: &Path) -> Result<bool, String> {
    let target = target_in(text, home);
    runtime().block_on(async {
        let client = target.connect().await.map_err(|e| e.0)?;
        let rows = client
            .simple_query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .await
            .map_err(|e| e.to_string())?;
        for row in rows {
            if let tokio_postgres::SimpleQueryMessage::Row(r) = row {
                return Ok(r.get(0) == Some("t"));
            }
        }
        Err("no row in pg_stat_ssl".into())
    })
}

fn tls_server(extra: &str) -> String {
    let s = servers();
    format!(
        "host=127.0.0.1 port={} user={SUPERUSER} password={PASSWORD} dbname=postgres {extra}",
        s.tls_port
    )
}

fn plain_server(extra: &str) -> String {
    let s = servers();
    format!(
        "host=127.0.0.1 port={} user={SUPERUSER} password={PASSWORD} dbname=postgres {extra}",
        s.plain_port
    )
}

#[test]
fn require_connects_over_tls() {
    let home = empty_home();
    assert_eq!(
        session_tls(&tls_server("sslmode=require"), home.path()),
        Ok(true)
    );
}

#[test]
fn verify_full_with_the_right_ca_and_host_connects() {
    let s = servers();
    let home = empty_home();
    // A URL this time, the CA's path percent-encoded.
    let ca = s.pki.ca.display().to_string().replace('/', "%2F");
    let url = format!(
        "postgresql://{SUPERUSER}:{PASSWORD}@localhost:{}/postgres?sslmode=verify-full\
         &sslrootcert={ca}&hostaddr=127.0.0.1",
        s.tls_port
    );
    assert_eq!(session_tls(&url, home.path()), Ok(true));
}

#[test]
fn verify_full_with_the_wrong_ca_fails_clearly() {
    let s = servers();
    let home = empty_home();
    let text = tls_server(&format!(
        "host=localhost hostaddr=127.0.0.1 sslmode=verify-full sslrootcert={}",
        s.pki.wrong_ca.display()
    ));
    let e = session_tls(&text, home.path()).unwrap_err();
    assert_eq!(
        e,
        format!(
            "could not connect to localhost:{} (127.0.0.1): the server's certificate is not \
             signed by the CA in {} (sslmode=verify-full)",
            s.tls_port,
            s.pki.wrong_ca.display()
        )
    );
    // verify-ca checks the chain just the same.
    let text = text.replace("verify-full", "verify-ca");
    let e = session_tls(&text, home.path()).unwrap_err();
    assert!(e.contains("is not signed by the CA in"), "{e}");
}

#[test]
fn verify_full_with_a_host_not_in_the_certificate_fails() {
    let s = servers();
    let home = empty_home();
    // The certificate is for localhost only; 127.0.0.1 is not in it.
    let text = tls_server(&format!(
        "sslmode=verify-full sslrootcert={}",
        s.pki.ca.display()
    ));
    let e = session_tls(&text, home.path()).unwrap_err();
    assert_eq!(
        e,
        format!(
            "could not connect to 127.0.0.1:{}: the server's certificate is not valid for the \
             host name 127.0.0.1: it is for localhost (sslmode=verify-full)",
            s.tls_port
        )
    );
}

#[test]
fn verify_ca_with_the_right_ca_ignores_the_host_name() {
    let s = servers();
    let home = empty_home();
    let text = tls_server(&format!(
        "sslmode=verify-ca sslrootcert={}",
        s.pki.ca.display()
    ));
    assert_eq!(session_tls(&text, home.path()), Ok(true));
}

#[test]
fn verify_without_a_root_certificate_fails_closed() {
    let home = empty_home();
    let e = session_tls(&tls_server("sslmode=verify-full"), home.path()).unwrap_err();
    assert!(e.contains("root.crt\" does not exist"), "{e}");
}

#[test]
fn require_against_a_server_without_tls_fails() {
    let s = servers();
    let home = empty_home();
    let e = session_tls(&plain_server("sslmode=require"), home.path()).unwrap_err();
    assert_eq!(
        e,
        format!(
            "could not connect to 127.0.0.1:{}: the server does not support TLS, and \
             sslmode=require needs it",
            s.plain_port
        )
    );
    let e = session_tls(
        &plain_server(&format!(
            "sslmode=verify-full sslrootcert={}",
            s.pki.ca.display()
        )),
        home.path(),
    )
    .unwrap_err();
    assert!(e.ends_with("sslmode=verify-full needs it"), "{e}");
}

#[test]
fn prefer_against_a_server_without_tls_connects_in_plain_text() {
    let home = empty_home();
    assert_eq!(
        session_tls(&plain_server("sslmode=prefer"), home.path()),
        Ok(false)
    );
    // prefer is the default.
    assert_eq!(session_tls(&plain_server(""), home.path()), Ok(false));
}

#[test]
fn prefer_against_the_tls_server_connects_over_tls_without_checking_the_certificate() {
    let home = empty_home();
    // No root certificate anywhere: the CA is unknown to the client, as libpq's prefer allows.
    assert_eq!(session_tls(&tls_server(""), home.path()), Ok(true));
    assert_eq!(
        session_tls(&tls_server("sslmode=prefer"), home.path()),
        Ok(true)
    );
}

#[test]
fn prefer_falls_back_to_plain_text_when_the_server_refuses_tls_sessions() {
    let home = empty_home();
    // pg_hba.conf rejects plainonly over TLS and accepts it without.
    let text = tls_server("user=plainonly sslmode=prefer");
    assert_eq!(session_tls(&text, home.path()), Ok(false));
    // require has no such way out.
    let e = session_tls(&text.replace("prefer", "require"), home.path()).unwrap_err();
    assert!(e.contains("pg_hba.conf rejects connection"), "{e}");
}

#[test]
fn disable_against_the_tls_server_connects_without_tls() {
    let home = empty_home();
    assert_eq!(
        session_tls(&tls_server("sslmode=disable"), home.path()),
        Ok(false)
    );
}

#[test]
fn allow_tries_plain_text_first_then_tls() {
    let home = empty_home();
    assert_eq!(
        session_tls(&tls_server("sslmode=allow"), home.path()),
        Ok(false)
    );
    // pg_hba.conf rejects tlsonly without TLS: allow then tries TLS.
    assert_eq!(
        session_tls(&tls_server("user=tlsonly sslmode=allow"), home.path()),
        Ok(true)
    );
    let e = session_tls(&tls_server("user=tlsonly sslmode=disable"), home.path()).unwrap_err();
    assert!(e.contains("pg_hba.conf rejects connection"), "{e}");
}

#[test]
fn require_with_a_root_certificate_file_verifies_the_chain() {
    let s = servers();
    // libpq: when a root certificate file exists, require behaves as verify-ca.
    let home = empty_home();
    fs::create_dir(home.path().join(".postgresql")).unwrap();
    let root = home.path().join(".postgresql/root.crt");
    fs::copy(&s.pki.wrong_ca, &root).unwrap();
    let e = session_tls(&tls_server("sslmode=require"), home.path()).unwrap_err();
    assert!(
        e.contains(&format!(
            "the server's certificate is not signed by the CA in {}",
            root.display()
        )) && e.contains("sslmode=require checks the chain"),
        "{e}"
    );
    // With the right CA it connects, though 127.0.0.1 is not the certificate's name.
    fs::copy(&s.pki.ca, &root).unwrap();
    assert_eq!(
        session_tls(&tls_server("sslmode=require"), home.path()),
        Ok(true)
    );
}

#[test]
fn a_client_certificate_is_accepted_by_a_cert_hba_line() {
    let s = servers();
    let home = empty_home();
    let base = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user=certuser dbname=postgres \
         sslmode=verify-full sslrootcert={}",
        s.tls_port,
        s.pki.ca.display()
    );
    let with_cert = format!(
        "{base} sslcert={} sslkey={}",
        s.pki.client_cert.display(),
        s.pki.client_key.display()
    );
    assert_eq!(session_tls(&with_cert, home.path()), Ok(true));
    // The certificate is what lets certuser in: without it the server refuses.
    let e = session_tls(&base, home.path()).unwrap_err();
    assert!(e.contains("certificate"), "{e}");
    // A client certificate the server's CA did not sign is refused too.
    let own_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "certuser");
    let own = params.self_signed(&own_key).unwrap();
    let dir = empty_home();
    let (cert, key) = (dir.path().join("own.crt"), dir.path().join("own.key"));
    fs::write(&cert, own.pem()).unwrap();
    fs::write(&key, own_key.serialize_pem()).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    let e = session_tls(
        &format!("{base} sslcert={} sslkey={}", cert.display(), key.display()),
        home.path(),
    )
    .unwrap_err();
    assert!(
        e.contains("client certificate") || e.contains("certificate"),
        "{e}"
    );
}

#[test]
fn certificates_in_the_home_folder_are_used_by_default() {
    let s = servers();
    let home = empty_home();
    let folder = home.path().join(".postgresql");
    fs::create_dir(&folder).unwrap();
    fs::write(folder.join("root.crt"), &s.pki.ca_pem).unwrap();
    fs::write(folder.join("postgresql.crt"), &s.pki.client_cert_pem).unwrap();
    fs::write(folder.join("postgresql.key"), &s.pki.client_key_pem).unwrap();
    fs::set_permissions(
        folder.join("postgresql.key"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let text = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user=certuser dbname=postgres \
         sslmode=verify-full",
        s.tls_port
    );
    assert_eq!(session_tls(&text, home.path()), Ok(true));
}

// ---- through the binary: the environment is set in its process only ----

/// A project with one read path that only needs a connection: exit status 0 or 1 means it
/// connected, 3 means it did not.
fn tiny_project() -> tempfile::TempDir {
    project(&[
        ("plans/p.sql", "SELECT 1\n"),
        (
            "expectations/p.toml",
            "[scopes.s]\nindex = \"pg_class_oid_index\"\n",
        ),
    ])
}

/// Runs `plancheck check` with only the given variables (and HOME) of the PG* family set;
/// returns the exit status and stdout and stderr together.
fn check_env(url: &str, home: &Path, vars: &[(&str, &str)]) -> (i32, String) {
    let project = tiny_project();
    let mut cmd = common::plancheck(&[
        "check",
        "--database-url",
        url,
        "--project",
        project.path().to_str().unwrap(),
        "--warmup",
        "0",
        "--iterations",
        "1",
    ]);
    for (name, _) in std::env::vars() {
        if name.starts_with("PG") {
            cmd.env_remove(name);
        }
    }
    cmd.env("HOME", home);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let run: Run = run_command(&mut cmd);
    (run.code(), format!("{}{}", run.stdout, run.stderr))
}

fn assert_connected(status: i32, output: &str) {
    assert!(status == 0 || status == 1, "status {status}: {output}");
}

#[test]
fn pgpassword_supplies_the_password() {
    let s = servers();
    let home = empty_home();
    let url = format!(
        "host=127.0.0.1 port={} user={SUPERUSER} dbname=postgres",
        s.tls_port
    );
    let (status, output) = check_env(&url, home.path(), &[("PGPASSWORD", PASSWORD)]);
    assert_connected(status, &output);
    // Without it there is no password at all.
    let (status, output) = check_env(&url, home.path(), &[]);
    assert_eq!(status, 3, "{output}");
}

#[test]
fn the_environment_fills_what_the_string_leaves_out_and_the_string_wins() {
    let s = servers();
    let home = empty_home();
    let tls = s.tls_port.to_string();
    let plain = s.plain_port.to_string();
    let env = [
        ("PGHOST", "127.0.0.1"),
        ("PGPORT", plain.as_str()),
        ("PGUSER", SUPERUSER),
        ("PGDATABASE", "postgres"),
        ("PGPASSWORD", PASSWORD),
        ("PGSSLMODE", "require"),
    ];
    // PGSSLMODE=require against the plain server: the environment was applied.
    let (status, output) = check_env("application_name=envtest", home.path(), &env);
    assert_eq!(status, 3, "{output}");
    assert!(output.contains("does not support TLS"), "{output}");
    // The string's port and sslmode win over PGPORT and PGSSLMODE.
    let (status, output) = check_env(&format!("port={plain} sslmode=disable"), home.path(), &env);
    assert_connected(status, &output);
    let (status, output) = check_env(&format!("port={tls}"), home.path(), &env);
    assert_connected(status, &output);
}

#[test]
fn pgpass_supplies_the_password_unless_others_may_read_it() {
    let s = servers();
    let home = empty_home();
    let pgpass = home.path().join(".pgpass");
    fs::write(
        &pgpass,
        format!(
            "# plancheck test\n127.0.0.1:{}:*:{SUPERUSER}:{WRONG_PASSWORD}\n\
             127.0.0.1:*:postgres:{SUPERUSER}:{PASSWORD}\n",
            s.plain_port
        ),
    )
    .unwrap();
    fs::set_permissions(&pgpass, fs::Permissions::from_mode(0o600)).unwrap();
    let url = format!("postgresql://{SUPERUSER}@127.0.0.1:{}/postgres", s.tls_port);
    let (status, output) = check_env(&url, home.path(), &[]);
    assert_connected(status, &output);
    // The first matching line wins: for the plain server's port, that is the wrong password.
    let plain_url = format!(
        "postgresql://{SUPERUSER}@127.0.0.1:{}/postgres",
        s.plain_port
    );
    let (status, output) = check_env(&plain_url, home.path(), &[]);
    assert_eq!(status, 3, "{output}");
    assert!(!output.contains(WRONG_PASSWORD), "{output}");
    // Readable by others: ignored, silently.
    fs::set_permissions(&pgpass, fs::Permissions::from_mode(0o644)).unwrap();
    let (status, output) = check_env(&url, home.path(), &[]);
    assert_eq!(status, 3, "{output}");
    assert!(!output.contains("pgpass"), "{output}");
    assert!(!output.contains(PASSWORD), "{output}");
    // PGPASSFILE names another file.
    let other = home.path().join("elsewhere");
    fs::write(&other, format!("*:*:*:*:{PASSWORD}\n")).unwrap();
    fs::set_permissions(&other, fs::Permissions::from_mode(0o600)).unwrap();
    let (status, output) = check_env(
        &url,
        home.path(),
        &[("PGPASSFILE", other.to_str().unwrap())],
    );
    assert_connected(status, &output);
}

#[test]
fn a_wrong_password_exits_3_and_is_never_printed() {
    let s = servers();
    let home = empty_home();
    for (url, vars) in [
        (
            format!(
                "postgresql://{SUPERUSER}:{WRONG_PASSWORD}@127.0.0.1:{}/postgres",
                s.tls_port
            ),
            vec![],
        ),
        (
            format!(
                "host=127.0.0.1 port={} user={SUPERUSER} password='{WRONG_PASSWORD}' \
                 sslmode=require",
                s.tls_port
            ),
            vec![],
        ),
        (
            format!(
                "host=127.0.0.1 port={} user={SUPERUSER} dbname=postgres",
                s.plain_port
            ),
            vec![("PGPASSWORD", WRONG_PASSWORD)],
        ),
    ] {
        let (status, output) = check_env(&url, home.path(), &vars);
        assert_eq!(status, 3, "{output}");
        assert!(
            output.contains("password authentication failed"),
            "{output}"
        );
        assert!(!output.contains(WRONG_PASSWORD), "{output}");
    }
    // A malformed string holding a password is bad input, and does not show it either.
    let (status, output) = check_env(
        &format!("host=127.0.0.1 password={WRONG_PASSWORD} sslmode=sometimes"),
        home.path(),
        &[],
    );
    assert_eq!(status, 2, "{output}");
    assert!(!output.contains(WRONG_PASSWORD), "{output}");
}

// ---- connection services: libpq's pg_service.conf ----

/// Variables that point plancheck at the test's own service files: `PGSERVICEFILE` (when given)
/// and a system folder of the test's own, so that the machine's
/// /etc/postgresql-common/pg_service.conf plays no part.
fn service_vars<'a>(system: &'a Path, file: Option<&'a Path>) -> Vec<(&'a str, &'a str)> {
    let mut vars = vec![("PGSYSCONFDIR", system.to_str().unwrap())];
    if let Some(file) = file {
        vars.push(("PGSERVICEFILE", file.to_str().unwrap()));
    }
    vars
}

#[test]
fn a_service_in_pgservicefile_connects_and_the_string_wins_over_it() {
    let s = servers();
    let home = empty_home();
    let system = empty_home();
    let file = home.path().join("services.conf");
    fs::write(
        &file,
        format!(
            "# plancheck test services\n\
             [plain]\nhost=127.0.0.1\nport={plain}\nuser={SUPERUSER}\ndbname=postgres\n\
             password={PASSWORD}\n\
             [tls_required]\nhost=127.0.0.1\nport={plain}\nuser={SUPERUSER}\ndbname=postgres\n\
             password={PASSWORD}\nsslmode=require\n",
            plain = s.plain_port
        ),
    )
    .unwrap();
    let vars = service_vars(system.path(), Some(&file));

    // service= in a key=value string.
    let (status, output) = check_env("service=plain", home.path(), &vars);
    assert_connected(status, &output);
    // PGSERVICE, with no connection string at all.
    let mut with_pgservice = vars.clone();
    with_pgservice.push(("PGSERVICE", "plain"));
    let (status, output) = check_env("", home.path(), &with_pgservice);
    assert_connected(status, &output);

    // The service's sslmode=require against the plain server: the service was applied...
    let (status, output) = check_env("service=tls_required", home.path(), &vars);
    assert_eq!(status, 3, "{output}");
    assert!(output.contains("does not support TLS"), "{output}");
    // ...over the environment's PGSSLMODE,
    let mut with_env = vars.clone();
    with_env.push(("PGSSLMODE", "disable"));
    let (status, output) = check_env("service=tls_required", home.path(), &with_env);
    assert_eq!(status, 3, "{output}");
    // ...and under the string's sslmode,
    let (status, output) = check_env("service=tls_required sslmode=disable", home.path(), &vars);
    assert_connected(status, &output);
    // ...and a URL's port: the TLS server, where require is met.
    let url = format!(
        "postgresql://127.0.0.1:{}/postgres?service=tls_required",
        s.tls_port
    );
    let (status, output) = check_env(&url, home.path(), &vars);
    assert_connected(status, &output);
    assert!(!output.contains(PASSWORD), "{output}");
}

#[test]
fn the_per_user_service_file_wins_over_the_system_file() {
    let s = servers();
    let home = empty_home();
    let system = empty_home();
    let section = |name: &str, password: &str| {
        format!(
            "[{name}]\nhost=127.0.0.1\nport={}\nuser={SUPERUSER}\ndbname=postgres\n\
             password={password}\n",
            s.plain_port
        )
    };
    // The same service in both files: the one in ~/.pg_service.conf has the right password.
    fs::write(
        home.path().join(".pg_service.conf"),
        section("both", PASSWORD),
    )
    .unwrap();
    fs::write(
        system.path().join("pg_service.conf"),
        format!(
            "{}{}",
            section("both", WRONG_PASSWORD),
            section("system_only", PASSWORD)
        ),
    )
    .unwrap();
    let vars = service_vars(system.path(), None);
    let (status, output) = check_env("service=both", home.path(), &vars);
    assert_connected(status, &output);
    let (status, output) = check_env("service=system_only", home.path(), &vars);
    assert_connected(status, &output);
    // Without the per-user file, the system file's wrong password is used, and not shown.
    fs::remove_file(home.path().join(".pg_service.conf")).unwrap();
    let (status, output) = check_env("service=both", home.path(), &vars);
    assert_eq!(status, 3, "{output}");
    assert!(
        output.contains("password authentication failed"),
        "{output}"
    );
    assert!(!output.contains(WRONG_PASSWORD), "{output}");
}

#[test]
fn an_unknown_or_broken_service_is_bad_input_naming_the_file() {
    let home = empty_home();
    let system = empty_home();
    let file = home.path().join("services.conf");
    fs::write(
        &file,
        format!("[broken]\nhost=127.0.0.1\npassword {PASSWORD}\n"),
    )
    .unwrap();
    let vars = service_vars(system.path(), Some(&file));

    let (status, output) = check_env("service=nosuch", home.path(), &vars);
    assert_eq!(status, 2, "{output}");
    assert!(
        output.contains(&format!(
            "definition of service \"nosuch\" not found: looked in {} (PGSERVICEFILE) and {} \
             (no such file)",
            file.display(),
            system.path().join("pg_service.conf").display()
        )),
        "{output}"
    );
    // A line without "=": the file and the line are named, the line (a password) is not shown.
    let (status, output) = check_env("service=broken", home.path(), &vars);
    assert_eq!(status, 2, "{output}");
    assert!(
        output.contains(&format!(
            "syntax error in service file \"{}\", line 3",
            file.display()
        )),
        "{output}"
    );
    assert!(!output.contains(PASSWORD), "{output}");
}

// plancheck opens its own sockets, so it sends its cancel requests itself: to where the session
// was opened, over TLS when the session is. A statement running in a TLS session and in a
// plain one is cancelled at once.
#[test]
fn a_cancel_request_reaches_the_session_in_plain_text_and_over_tls() {
    let home = empty_home();
    for text in [
        tls_server("sslmode=require"),
        plain_server("sslmode=disable"),
    ] {
        let target = target_in(&text, home.path());
        let outcome = runtime().block_on(async {
            let client = target.connect().await.map_err(|e| e.0)?;
            let token = client.cancel_token();
            let sleeping = client.simple_query("SELECT pg_sleep(30)");
            let cancel = async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                plancheck::db::wire::cancel(&token).await;
            };
            let (answer, ()) = tokio::time::timeout(
                Duration::from_secs(10),
                futures_util::future::join(sleeping, cancel),
            )
            .await
            .map_err(|_| "the statement was not cancelled within 10 s".to_string())?;
            match answer {
                Ok(_) => Err("the statement ended by itself".to_string()),
                Err(e) => Ok(plancheck::db::cause(&e)),
            }
        });
        let said = outcome.unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            said.contains("canceling statement due to user request"),
            "{text}: {said}"
        );
    }
}
