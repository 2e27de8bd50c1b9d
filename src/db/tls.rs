//! TLS with libpq's meaning of each `sslmode`, over rustls (through tokio-postgres-rustls).
//!
//! | sslmode | what plancheck does |
//! |---|---|
//! | `disable` | no TLS |
//! | `allow` | without TLS first; if the server refuses that session, again with TLS (certificate not checked) |
//! | `prefer` (default) | TLS if the server supports it, else without; if the TLS session fails (handshake, or the server refuses it), again without TLS |
//! | `require` | TLS or no session; the certificate is not checked, unless a root certificate file exists (`sslrootcert`, or `~/.postgresql/root.crt`): then it must chain to it, as under `verify-ca` |
//! | `verify-ca` | TLS; the certificate must chain to a CA in `sslrootcert` (a PEM file, or `system`: the operating system's trusted roots); the host name is not checked |
//! | `verify-full` | as `verify-ca`, and the certificate must be for the host name (`host`, never `hostaddr`; an IP address must be in the certificate as one) |
//!
//! As in libpq, `allow` and `prefer` check the chain too when a root certificate file exists, TLS
//! is never used over a Unix socket, and `verify-ca`/`verify-full` without a root certificate is
//! an error. A client certificate (`sslcert` and `sslkey`, PEM; PKCS#8, RSA or EC keys; by
//! default `~/.postgresql/postgresql.crt` and `.key` when the certificate exists) is offered when
//! the server asks for one; its key file must not be open to the group or others.
//!
//! Every `ClientConfig` is built with the ring provider given explicitly, so nothing depends on a
//! process-wide default provider. When TLS is required, every failure ends the attempt: nothing
//! falls back to plain text.

use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::conninfo::{ConnInfo, Host, HostSpec, RootCert, SslMode};
use super::wire::{self, Bounded};
use crate::report::connect as words;

/// The one crypto provider every TLS session uses.
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// What is checked of the server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Nothing (the handshake's signatures are still verified).
    Nothing,
    /// It chains to these roots; any name.
    Chain(RootCert),
    /// It chains to these roots and is for the host name.
    ChainAndName(RootCert),
}

/// libpq's rule: what an sslmode checks, given the root certificate that exists.
pub fn check_for(info: &ConnInfo) -> Result<Check, String> {
    let existing_root = match (&info.sslrootcert, info.sslrootcert_exists) {
        (Some(root), true) => Some(root.clone()),
        _ => None,
    };
    match info.sslmode {
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let root = match (existing_root, &info.sslrootcert) {
                (Some(root), _) => root,
                (None, Some(RootCert::File(path))) => {
                    return Err(words::no_root_file(path, info.sslmode));
                }
                (None, _) => {
                    return Err(words::no_root(info.sslmode));
                }
            };
            Ok(if info.sslmode == SslMode::VerifyFull {
                Check::ChainAndName(root)
            } else {
                Check::Chain(root)
            })
        }
        _ => Ok(match existing_root {
            Some(root @ RootCert::File(_)) => Check::Chain(root),
            _ => Check::Nothing,
        }),
    }
}

/// Checks the server's certificate as a [`Check`] says, with the provider's algorithms.
#[derive(Debug)]
pub struct PgVerifier {
    roots: Option<Arc<RootCertStore>>,
    check_name: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PgVerifier {
    /// `roots` None: any certificate (require, prefer, allow without a root file).
    pub fn new(roots: Option<Arc<RootCertStore>>, check_name: bool) -> PgVerifier {
        PgVerifier {
            roots,
            check_name,
            algorithms: provider().signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for PgVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
            if self.check_name {
                rustls::client::verify_server_name(&cert, server_name)?;
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The CA certificates of a [`RootCert`].
pub fn load_roots(root: &RootCert) -> Result<Arc<RootCertStore>, String> {
    match root {
        RootCert::System => {
            static SYSTEM: OnceLock<Result<Arc<RootCertStore>, String>> = OnceLock::new();
            SYSTEM
                .get_or_init(|| {
                    let found = rustls_native_certs::load_native_certs();
                    let mut store = RootCertStore::empty();
                    store.add_parsable_certificates(found.certs);
                    if store.is_empty() {
                        Err(words::NO_SYSTEM_ROOTS.to_string())
                    } else {
                        Ok(Arc::new(store))
                    }
                })
                .clone()
        }
        RootCert::File(path) => {
            let certs = read_certificates(path, words::ROOT_FILE)?;
            let mut store = RootCertStore::empty();
            for cert in certs {
                store.add(cert).map_err(|e| words::not_a_ca(path, &e))?;
            }
            Ok(Arc::new(store))
        }
    }
}

fn read_certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| words::unreadable(what, path, &e))?;
    if certs.is_empty() {
        return Err(words::no_pem(what, path));
    }
    Ok(certs)
}

/// The client certificate and its key, when a certificate file exists.
pub type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// Reads `sslcert` and `sslkey` (PEM; PKCS#8, PKCS#1 RSA or SEC1 EC keys).
pub fn client_identity(info: &ConnInfo) -> Result<Option<Identity>, String> {
    let Some(cert_path) = &info.sslcert else {
        return Ok(None);
    };
    let certs = read_certificates(cert_path, words::CLIENT_FILE)?;
    let Some(key_path) = info.sslkey.as_ref().filter(|p| p.is_file()) else {
        return Err(words::no_key_file(info.sslkey.as_deref()));
    };
    key_permissions(key_path)?;
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| words::unreadable_key(key_path, &e, true))?;
    Ok(Some((certs, key)))
}

/// libpq's rule: a key file owned by the user must be u=rw (0600) or less; one owned by root
/// may also be group-readable (0640).
fn key_permissions(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| words::unreadable_key(path, &e, false))?;
    let mode = meta.mode() & 0o777;
    let allowed = if meta.uid() == 0 { 0o740 } else { 0o700 };
    if mode & !allowed != 0 {
        return Err(words::key_access(path));
    }
    Ok(())
}

/// A rustls client configuration for a [`Check`], with the ring provider given explicitly.
pub fn client_config(check: &Check, identity: Option<Identity>) -> Result<ClientConfig, String> {
    let (roots, check_name) = match check {
        Check::Nothing => (None, false),
        Check::Chain(root) => (Some(load_roots(root)?), false),
        Check::ChainAndName(root) => (Some(load_roots(root)?), true),
    };
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| words::tls_setup(&e))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PgVerifier::new(roots, check_name)));
    match identity {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| words::client_identity(&e)),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// tokio-postgres-rustls's TLS, raising a flag when the server agreed to TLS (so `prefer`
/// knows whether a failure was TLS's), and with the stream it makes bounded as any other
/// ([`wire::Bounded`], above the TLS session: the length of each message is read after
/// decryption).
struct Flagged<T> {
    inner: T,
    started: Arc<AtomicBool>,
}

impl<S, T: TlsConnect<S>> TlsConnect<S> for Flagged<T> {
    type Stream = Bounded<T::Stream>;
    type Error = T::Error;
    type Future = futures_util::future::MapOk<T::Future, fn(T::Stream) -> Bounded<T::Stream>>;

    fn connect(self, stream: S) -> Self::Future {
        // Called only when the server answered the SSLRequest with 'S'.
        self.started.store(true, Ordering::SeqCst);
        futures_util::TryFutureExt::map_ok(self.inner.connect(stream), Bounded::framing)
    }
}

/// The settings of one session with one host, TLS aside.
fn session_config(info: &ConnInfo, host: &HostSpec) -> Config {
    let mut config = Config::new();
    config
        .user(&info.user)
        .dbname(&info.dbname)
        .application_name(&info.application_name)
        .port(host.port);
    if let Some(password) = &host.password {
        config.password(password.expose());
    }
    if let Some(options) = &info.options {
        config.options(options);
    }
    if let Some(timeout) = info.connect_timeout {
        config.connect_timeout(timeout);
    }
    match (&host.host, host.hostaddr) {
        (Some(Host::Unix(dir)), _) => {
            config.host_path(dir);
        }
        (Some(Host::Tcp(name)), _) => {
            config.host(name);
        }
        (None, Some(addr)) => {
            config.host(addr.to_string());
        }
        (None, None) => {
            config.host("localhost");
        }
    }
    if let Some(addr) = host.hostaddr
        && !host.is_unix()
    {
        config.hostaddr(addr);
    }
    config
}

/// Why one attempt failed.
enum Failure {
    Postgres(tokio_postgres::Error),
    /// The socket could not be opened.
    Socket(std::io::Error),
    TimedOut(Duration),
    /// The server reported this `server_version` (None: none), which names no major plancheck
    /// supports; whether it names a version at all.
    Version(Option<String>, bool),
}

impl Failure {
    /// The server itself refused the session (an error response), as opposed to no answer.
    fn server_refused(&self) -> bool {
        matches!(self, Failure::Postgres(e) if e.as_db_error().is_some())
    }
}

/// A session just opened on plancheck's own socket (`wire::open`), with where it goes.
type Opened<S, T> = (Client, tokio_postgres::Connection<S, T>, wire::Destination);

/// Runs one connection attempt within `connect_timeout` (the whole of it, as libpq counts):
/// then refuses a server of a major plancheck does not support, registers where the session's
/// cancel requests go, and spawns the connection task.
async fn attempt<S, T, F>(info: &ConnInfo, connecting: F) -> Result<Client, Failure>
where
    F: Future<Output = Result<Opened<S, T>, Failure>>,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, connection, destination) = match info.connect_timeout {
        Some(limit) => match tokio::time::timeout(limit, connecting).await {
            Ok(r) => r?,
            Err(_) => return Err(Failure::TimedOut(limit)),
        },
        None => connecting.await?,
    };
    let version = connection.parameter("server_version").map(str::to_string);
    if let Err(readable) = super::preflight::supported(version.as_deref()) {
        return Err(Failure::Version(version, readable));
    }
    let key = wire::register(&client, destination).await;
    tokio::spawn(async move {
        // Errors surface on the client's next call as a closed connection.
        let _ = connection.await;
        wire::forget(key);
    });
    Ok(client)
}

/// A plain-text session.
async fn plain(info: &ConnInfo, host: &HostSpec, config: &Config) -> Result<Client, Failure> {
    let mut config = config.clone();
    config.ssl_mode(tokio_postgres::config::SslMode::Disable);
    attempt(info, async {
        let (socket, peer) = wire::open(host).await.map_err(Failure::Socket)?;
        let (client, connection) = config
            .connect_raw(Bounded::framing(socket), NoTls)
            .await
            .map_err(Failure::Postgres)?;
        Ok((client, connection, wire::Destination { peer, tls: None }))
    })
    .await
}

struct TlsFailure {
    text: String,
    /// The server agreed to TLS (or setting TLS up failed): the failure was TLS's.
    started: bool,
}

/// A session over TLS: `Require` insists, `Prefer` continues in plain text when the server
/// answers that it has no TLS.
async fn over_tls(
    info: &ConnInfo,
    host: &HostSpec,
    config: &Config,
    mode: tokio_postgres::config::SslMode,
) -> Result<Client, TlsFailure> {
    let setup_failed = |text: String| TlsFailure {
        text,
        started: true,
    };
    let check = check_for(info).map_err(setup_failed)?;
    let name = match (&check, host.tls_name()) {
        (_, Some(name)) => name.to_string(),
        (Check::ChainAndName(_), None) => {
            return Err(setup_failed(words::VERIFY_FULL_NEEDS_A_NAME.into()));
        }
        (_, None) => host
            .hostaddr
            .map(|a| a.to_string())
            .unwrap_or_else(|| "localhost".into()),
    };
    // Without a name check, a host that is not a valid DNS name must not stop the handshake;
    // the name is then only the SNI hint.
    let name = if ServerName::try_from(name.as_str()).is_ok() {
        name
    } else if matches!(check, Check::ChainAndName(_)) {
        return Err(setup_failed(words::uncheckable_name(&name)));
    } else {
        "localhost".into()
    };
    let identity = client_identity(info).map_err(setup_failed)?;
    let client_config = client_config(&check, identity).map_err(setup_failed)?;
    let started = Arc::new(AtomicBool::new(false));
    let make = MakeRustlsConnect::new(client_config);
    let mut config = config.clone();
    config.ssl_mode(mode);
    let connecting = async {
        let (socket, peer) = wire::open(host).await.map_err(Failure::Socket)?;
        let inner = <MakeRustlsConnect as MakeTlsConnect<Bounded<wire::Socket>>>::make_tls_connect(
            &mut make.clone(),
            &name,
        )
        .map_err(|never| match never {})?;
        let tls = Flagged {
            inner,
            started: started.clone(),
        };
        // The server's one-byte answer to the SSLRequest is read before any message.
        let (client, connection) = config
            .connect_raw(Bounded::answering(socket), tls)
            .await
            .map_err(Failure::Postgres)?;
        let tls = Some((make.clone(), name.clone()));
        Ok((client, connection, wire::Destination { peer, tls }))
    };
    attempt(info, connecting)
        .await
        .map_err(|failure| TlsFailure {
            text: explain(&failure, info, host, &check),
            started: started.load(Ordering::SeqCst),
        })
}

/// Connects to one host as its sslmode says. The error is the cause, as a sentence without
/// the host (the caller names it).
pub async fn connect_host(info: &ConnInfo, host: &HostSpec) -> Result<Client, String> {
    let config = session_config(info, host);
    if host.is_unix() {
        return plain(info, host, &config)
            .await
            .map_err(|f| explain(&f, info, host, &Check::Nothing));
    }
    use tokio_postgres::config::SslMode as Wire;
    match info.sslmode {
        SslMode::Disable => plain(info, host, &config)
            .await
            .map_err(|f| explain(&f, info, host, &Check::Nothing)),
        SslMode::Allow => match plain(info, host, &config).await {
            Ok(client) => Ok(client),
            Err(failure) if failure.server_refused() => {
                let first = explain(&failure, info, host, &Check::Nothing);
                over_tls(info, host, &config, Wire::Require)
                    .await
                    .map_err(|t| both(&first, "without TLS", &t.text, "with TLS"))
            }
            Err(failure) => Err(explain(&failure, info, host, &Check::Nothing)),
        },
        SslMode::Prefer => match over_tls(info, host, &config, Wire::Prefer).await {
            Ok(client) => Ok(client),
            Err(failure) if failure.started => plain(info, host, &config).await.map_err(|p| {
                let second = explain(&p, info, host, &Check::Nothing);
                both(&failure.text, "with TLS", &second, "without TLS")
            }),
            Err(failure) => Err(failure.text),
        },
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            over_tls(info, host, &config, Wire::Require)
                .await
                .map_err(|t| t.text)
        }
    }
}

fn both(first: &str, first_how: &str, second: &str, second_how: &str) -> String {
    words::both(first, first_how, second, second_how)
}

/// The sentence for a failed attempt.
fn explain(failure: &Failure, info: &ConnInfo, host: &HostSpec, check: &Check) -> String {
    let e = match failure {
        Failure::TimedOut(limit) => {
            return words::no_session_within(*limit);
        }
        Failure::Socket(e) => return e.to_string(),
        Failure::Version(version, readable) => {
            return words::unsupported_version(version.as_deref(), *readable);
        }
        Failure::Postgres(e) => e,
    };
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    if let Some(tls) = rustls_error(e) {
        return words::tls_failure(tls, info, host, check);
    }
    let cause = super::cause(e);
    if cause == "server does not support TLS" {
        return words::no_tls(info.sslmode);
    }
    cause
}

/// The rustls error somewhere in an error's chain (tokio-rustls wraps it in an io::Error).
fn rustls_error(e: &tokio_postgres::Error) -> Option<&rustls::Error> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(tls) = inner.downcast_ref::<rustls::Error>()
        {
            return Some(tls);
        }
        current = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::{GivenEnv, resolve};
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use rustls::CertificateError;

    fn info(text: &str, home: Option<&Path>) -> ConnInfo {
        let env = GivenEnv {
            home: home.map(Path::to_path_buf),
            user: Some("ann".into()),
            ..GivenEnv::default()
        };
        resolve(Some(text), &env).unwrap()
    }

    #[test]
    fn each_sslmode_checks_what_libpq_checks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root.crt");
        std::fs::write(&root, "").unwrap();
        let given = format!("sslrootcert={}", root.display());
        let file = RootCert::File(root.clone());
        let home_without_root = Some(dir.path());

        for mode in ["allow", "prefer", "require"] {
            let i = info(&format!("host=h sslmode={mode}"), home_without_root);
            assert_eq!(check_for(&i), Ok(Check::Nothing), "{mode}");
            // A root certificate file that exists makes them check the chain.
            let i = info(&format!("host=h sslmode={mode} {given}"), None);
            assert_eq!(check_for(&i), Ok(Check::Chain(file.clone())), "{mode}");
        }
        let i = info(&format!("host=h sslmode=verify-ca {given}"), None);
        assert_eq!(check_for(&i), Ok(Check::Chain(file.clone())));
        let i = info(&format!("host=h sslmode=verify-full {given}"), None);
        assert_eq!(check_for(&i), Ok(Check::ChainAndName(file.clone())));
        let i = info("host=h sslmode=verify-full sslrootcert=system", None);
        assert_eq!(check_for(&i), Ok(Check::ChainAndName(RootCert::System)));

        // The default root.crt in ~/.postgresql counts, as libpq's.
        std::fs::create_dir(dir.path().join(".postgresql")).unwrap();
        let default_root = dir.path().join(".postgresql/root.crt");
        std::fs::write(&default_root, "").unwrap();
        let i = info("host=h sslmode=require", Some(dir.path()));
        assert_eq!(
            check_for(&i),
            Ok(Check::Chain(RootCert::File(default_root)))
        );

        // verify-* without a root certificate fail closed, saying which file is missing.
        let e = check_for(&info(
            "host=h sslmode=verify-full sslrootcert=/nope.crt",
            None,
        ))
        .unwrap_err();
        assert!(e.contains("\"/nope.crt\" does not exist"), "{e}");
        let e = check_for(&info("host=h sslmode=verify-ca", None)).unwrap_err();
        assert!(e.contains("sslrootcert"), "{e}");
    }

    struct Pki {
        ca_pem: String,
        server_der: CertificateDer<'static>,
    }

    fn pki(ca_name: &str, server_names: &[&str]) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, ca_name);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let server_key = KeyPair::generate().unwrap();
        let names: Vec<String> = server_names.iter().map(|s| s.to_string()).collect();
        let server = CertificateParams::new(names)
            .unwrap()
            .signed_by(&server_key, &issuer)
            .unwrap();
        Pki {
            ca_pem: ca_cert.pem(),
            server_der: server.der().clone(),
        }
    }

    fn roots(pem: &str) -> Arc<RootCertStore> {
        let mut store = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            store.add(cert.unwrap()).unwrap();
        }
        Arc::new(store)
    }

    fn verify(v: &PgVerifier, cert: &CertificateDer<'static>, name: &str) -> Result<(), String> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        v.verify_server_cert(cert, &[], &name, &[], UnixTime::now())
            .map(|_| ())
            .map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn verifiers_check_the_chain_and_the_name_as_asked() {
        let right = pki("right CA", &["db.example"]);
        let wrong = pki("wrong CA", &["db.example"]);
        // A CA of the same name as the right one, but another key.
        let impostor = pki("right CA", &["db.example"]);
        let cert = &right.server_der;

        let full = PgVerifier::new(Some(roots(&right.ca_pem)), true);
        assert_eq!(verify(&full, cert, "db.example"), Ok(()));
        let e = verify(&full, cert, "other.example").unwrap_err();
        assert!(e.contains("NotValidForName"), "{e}");

        let ca_only = PgVerifier::new(Some(roots(&right.ca_pem)), false);
        assert_eq!(verify(&ca_only, cert, "other.example"), Ok(()));

        for check_name in [false, true] {
            let wrong_ca = PgVerifier::new(Some(roots(&wrong.ca_pem)), check_name);
            let e = verify(&wrong_ca, cert, "db.example").unwrap_err();
            assert!(e.contains("UnknownIssuer"), "{e}");
            let impostor_ca = PgVerifier::new(Some(roots(&impostor.ca_pem)), check_name);
            let e = verify(&impostor_ca, cert, "db.example").unwrap_err();
            assert!(e.contains("BadSignature"), "{e}");
        }

        let anything = PgVerifier::new(None, false);
        assert_eq!(verify(&anything, cert, "other.example"), Ok(()));
        assert!(!anything.supported_verify_schemes().is_empty());
    }

    #[test]
    fn client_configs_build_without_a_process_default_provider() {
        // Building must not consult CryptoProvider::get_default (which panics when a build has
        // two providers and none was installed).
        assert!(CryptoProvider::get_default().is_none());
        let dir = tempfile::tempdir().unwrap();
        let ca = pki("CA", &["x"]);
        let root = dir.path().join("root.crt");
        std::fs::write(&root, &ca.ca_pem).unwrap();
        for check in [
            Check::Nothing,
            Check::Chain(RootCert::File(root.clone())),
            Check::ChainAndName(RootCert::File(root.clone())),
        ] {
            client_config(&check, None).unwrap();
        }
        let e = client_config(
            &Check::Chain(RootCert::File(dir.path().join("missing.crt"))),
            None,
        )
        .unwrap_err();
        assert!(e.contains("missing.crt"), "{e}");
    }

    #[test]
    fn client_certificates_need_their_key_and_a_private_key_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["ann".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let cert_path = dir.path().join("client.crt");
        let key_path = dir.path().join("client.key");
        std::fs::write(&cert_path, cert.pem()).unwrap();
        let text = format!(
            "host=h sslcert={} sslkey={}",
            cert_path.display(),
            key_path.display()
        );
        let e = client_identity(&info(&text, None)).unwrap_err();
        assert!(e.contains("not private key file"), "{e}");

        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
        if unsafe { libc::geteuid() } != 0 {
            let e = client_identity(&info(&text, None)).unwrap_err();
            assert!(e.contains("group or world access"), "{e}");
        }
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o604)).unwrap();
        let e = client_identity(&info(&text, None)).unwrap_err();
        assert!(e.contains("group or world access"), "{e}");
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (certs, _key) = client_identity(&info(&text, None)).unwrap().unwrap();
        assert_eq!(certs.len(), 1);
        client_config(
            &Check::Nothing,
            client_identity(&info(&text, None)).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn tls_failures_are_sentences_naming_the_cause() {
        let i = info(
            "host=db.example sslmode=verify-full sslrootcert=/ca/root.crt",
            None,
        );
        let host = &i.hosts[0];
        let check = Check::ChainAndName(RootCert::File("/ca/root.crt".into()));
        let text = words::tls_failure(
            &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
            &i,
            host,
            &check,
        );
        assert_eq!(
            text,
            "the server's certificate is not signed by the CA in /ca/root.crt \
             (sslmode=verify-full)"
        );
        let text = words::tls_failure(
            &rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                expected: ServerName::try_from("db.example").unwrap(),
                presented: vec!["DnsName(\"localhost\")".into()],
            }),
            &i,
            host,
            &check,
        );
        assert_eq!(
            text,
            "the server's certificate is not valid for the host name db.example: it is for \
             localhost (sslmode=verify-full)"
        );
        let i = info(
            "host=db.example sslmode=require sslrootcert=/ca/root.crt",
            None,
        );
        let text = words::tls_failure(
            &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
            &i,
            &i.hosts[0],
            &Check::Chain(RootCert::File("/ca/root.crt".into())),
        );
        assert!(text.contains("sslmode=require checks the chain"), "{text}");
    }
}
