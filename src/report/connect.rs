//! Why no session could be opened (`db::NotConnected`, data), in words: each host tried, and
//! what a PostgreSQL user is told for the commonest failures, as psql tells it; and the
//! connection settings' and TLS's failures, in libpq's words where libpq has them.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use rustls::{AlertDescription, CertificateError};

use crate::db::NotConnected;
use crate::db::conninfo::{ConnInfo, HostSpec, RootCert, SslMode};
use crate::db::tls::Check;
use crate::error::DatabaseFailure;

/// The hint for the commonest failures to connect, as psql gives it.
fn hint(failure: &str) -> Option<&'static str> {
    if failure.contains("Connection refused") {
        Some("is the server running on that host and accepting TCP/IP connections on that port?")
    } else if failure.contains(".s.PGSQL.") && failure.contains("No such file or directory") {
        Some(
            "is the server running locally and accepting connections on that socket? host= or \
             PGHOST names the socket's folder",
        )
    } else if failure.contains("password authentication failed")
        || failure.contains("no password")
        || failure.contains("password missing")
    {
        Some(
            "give the password in PGPASSWORD, or in a password file readable by you alone \
             (PGPASSFILE; libpq's format), not in a URL a log may show",
        )
    } else {
        None
    }
}

impl From<NotConnected> for DatabaseFailure {
    fn from(n: NotConnected) -> DatabaseFailure {
        let failures: Vec<String> = n
            .tried
            .iter()
            .map(|(host, cause)| format!("could not connect to {host}: {cause}"))
            .collect();
        let mut message = failures.join("; ");
        if let Some(hint) = hint(&message) {
            message.push_str(&format!(" ({hint})"));
        }
        if let Some(chosen) = n.chosen_by_defaults {
            message = format!(
                "no --database-url or DATABASE_URL was given, so the PG* variables and libpq's \
                 defaults chose {chosen}: {message}"
            );
        }
        DatabaseFailure(message)
    }
}

/// The name of a root certificate file, in the messages that read one.
pub const ROOT_FILE: &str = "root certificate file";
/// The name of a client certificate file, in the messages that read one.
pub const CLIENT_FILE: &str = "client certificate file";
pub const NO_SYSTEM_ROOTS: &str =
    "the system has no trusted root certificates (sslrootcert=system)";
pub const VERIFY_FULL_NEEDS_A_NAME: &str = "sslmode=verify-full checks the certificate against \
     the host name, and only hostaddr was given: set host to the name in the server's certificate";

pub fn no_root_file(path: &Path, mode: SslMode) -> String {
    format!(
        "root certificate file \"{}\" does not exist (sslmode={mode}): give the CA's certificate \
         with sslrootcert, use the system's trusted roots with sslrootcert=system, or choose an \
         sslmode that does not verify the server's certificate",
        path.display()
    )
}

pub fn no_root(mode: SslMode) -> String {
    format!(
        "no root certificate to verify the server with (sslmode={mode}): set sslrootcert (or \
         PGSSLROOTCERT) to the CA's certificate, or to system"
    )
}

pub fn not_a_ca(path: &Path, e: &dyn fmt::Display) -> String {
    format!(
        "root certificate file \"{}\" holds a certificate that cannot be a CA: {e}",
        path.display()
    )
}

/// A PEM file (`what`: [`ROOT_FILE`], [`CLIENT_FILE`]) that cannot be read.
pub fn unreadable(what: &str, path: &Path, e: &dyn fmt::Display) -> String {
    format!("cannot read the {what} \"{}\": {e}", path.display())
}

pub fn no_pem(what: &str, path: &Path) -> String {
    format!("the {what} \"{}\" holds no PEM certificate", path.display())
}

/// libpq's words for a client certificate without its key.
pub fn no_key_file(key: Option<&Path>) -> String {
    format!(
        "certificate present, but not private key file{} (set sslkey)",
        key.map(|p| format!(" \"{}\"", p.display()))
            .unwrap_or_default()
    )
}

/// A key file that cannot be read; `as_key` when it was read but is no key plancheck takes.
pub fn unreadable_key(path: &Path, e: &dyn fmt::Display, as_key: bool) -> String {
    let needed = if as_key {
        " (an unencrypted PEM key is needed: PKCS#8, RSA or EC)"
    } else {
        ""
    };
    format!(
        "cannot read the private key file \"{}\": {e}{needed}",
        path.display()
    )
}

pub fn key_access(path: &Path) -> String {
    format!(
        "private key file \"{}\" has group or world access; it must be u=rw (0600) or less if \
         owned by the current user, or u=rw,g=r (0640) or less if owned by root",
        path.display()
    )
}

pub fn tls_setup(e: &dyn fmt::Display) -> String {
    format!("cannot set up TLS: {e}")
}

pub fn client_identity(e: &dyn fmt::Display) -> String {
    format!("cannot use the client certificate and key: {e}")
}

pub fn uncheckable_name(name: &str) -> String {
    format!("the host name {name} cannot be checked against a certificate (sslmode=verify-full)")
}

pub fn no_session_within(limit: Duration) -> String {
    format!("no session within {} s (connect_timeout)", limit.as_secs())
}

/// What a backend message of type `kind` is, for the refusal of one over the cap.
fn message_kind(kind: u8) -> &'static str {
    match kind {
        b'D' => "a row",
        b'T' => "a row description",
        b'E' => "an error",
        b'N' => "a notice",
        b'S' => "a parameter status",
        b'R' => "an authentication request",
        b'A' => "a notification",
        b'd' => "COPY data",
        _ => "a message",
    }
}

/// The words of the error that takes the place of a message over the cap: the message, the
/// length its header announced, the cap, and that the session is over.
pub fn over_cap(kind: u8, announced: u32, cap: usize) -> String {
    let shown = if kind.is_ascii_graphic() {
        format!(" ('{}')", kind as char)
    } else {
        format!(" (type byte {kind})")
    };
    format!(
        "the server announced {}{shown} of {} bytes, over plancheck's cap of {} on one message \
         from the server (the {} cap on a plan document and its row): plancheck closed the \
         connection without reading it",
        message_kind(kind),
        crate::verdict::group(f64::from(announced)),
        mib(cap),
        mib(crate::db::check::MAX_PLAN_DOCUMENT),
    )
}

/// A size in MiB as the caps are written: `9 MiB`.
fn mib(bytes: usize) -> String {
    let m = bytes as f64 / f64::from(1u32 << 20);
    if m.fract() == 0.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

/// The server's `server_version` as a message shows it: quoted, escaped, at most 60
/// characters (a server's words are not trusted to be short or printable).
fn shown_version(version: &str) -> String {
    let cut: String = version.chars().take(60).collect();
    let more = if cut.len() < version.len() { "…" } else { "" };
    format!("{cut:?}{more}")
}

/// The server reports a version plancheck does not support (`readable`: it names one), or
/// none.
pub fn unsupported_version(version: Option<&str>, readable: bool) -> String {
    let supported = crate::db::preflight::SUPPORTED_MAJORS;
    let (low, high) = (supported.start(), supported.end());
    match version {
        None => format!(
            "the server did not report its server_version when the session started, as every \
             PostgreSQL does: plancheck supports PostgreSQL {low} to {high}"
        ),
        Some(v) if !readable => format!(
            "the server reports server_version {}, which names no PostgreSQL version: plancheck \
             supports PostgreSQL {low} to {high}",
            shown_version(v)
        ),
        Some(v) => format!(
            "the server reports server_version {}: plancheck supports PostgreSQL {low} to {high}",
            shown_version(v)
        ),
    }
}

pub fn no_tls(mode: SslMode) -> String {
    format!("the server does not support TLS, and sslmode={mode} needs it")
}

/// Two attempts' failures (with and without TLS), once when they say the same.
pub fn both(first: &str, first_how: &str, second: &str, second_how: &str) -> String {
    if first == second {
        first.to_string()
    } else {
        format!("{first} ({first_how}); {second_how}: {second}")
    }
}

/// A sentence for a TLS failure, naming the CA file, host name and sslmode that decided it.
pub fn tls_failure(e: &rustls::Error, info: &ConnInfo, host: &HostSpec, check: &Check) -> String {
    let root = match check {
        Check::Chain(root) | Check::ChainAndName(root) => Some(root),
        Check::Nothing => None,
    };
    let why = match (info.sslmode, root) {
        (SslMode::VerifyCa | SslMode::VerifyFull, _) | (_, None) => {
            format!("sslmode={}", info.sslmode)
        }
        (mode, Some(root)) => format!(
            "sslmode={mode} checks the chain because the root certificate file {root} exists"
        ),
    };
    let ca = match root {
        Some(RootCert::System) => "a CA the system trusts".to_string(),
        Some(RootCert::File(path)) => format!("the CA in {}", path.display()),
        None => "a trusted CA".to_string(),
    };
    let name = host.tls_name().unwrap_or("(none)");
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                format!("the server's certificate is not signed by {ca} ({why})")
            }
            CertificateError::NotValidForNameContext { presented, .. } => format!(
                "the server's certificate is not valid for the host name {name}: it is for {} \
                 ({why})",
                if presented.is_empty() {
                    "no name".to_string()
                } else {
                    presented
                        .iter()
                        .map(|n| plain_name(n))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
            CertificateError::NotValidForName => {
                format!("the server's certificate is not valid for the host name {name} ({why})")
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("the server's certificate has expired ({why})")
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                format!("the server's certificate is not valid yet ({why})")
            }
            other => format!("the server's certificate was rejected: {other:?} ({why})"),
        },
        rustls::Error::AlertReceived(AlertDescription::CertificateRequired) => {
            "the server requires a client certificate: give sslcert and sslkey".to_string()
        }
        rustls::Error::AlertReceived(
            alert @ (AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateExpired
            | AlertDescription::DecryptError),
        ) if info.sslcert.is_some() => format!(
            "the server did not accept the client certificate {} (TLS alert {alert:?})",
            info.sslcert.as_deref().unwrap_or(Path::new("")).display()
        ),
        rustls::Error::AlertReceived(alert) => {
            format!("the server ended the TLS handshake (TLS alert {alert:?})")
        }
        other => format!("the TLS handshake failed: {other} ({why})"),
    }
}

/// `localhost` for rustls's `DnsName("localhost")`, `127.0.0.1` for `IpAddress(127.0.0.1)`.
fn plain_name(presented: &str) -> &str {
    match (presented.find('('), presented.rfind(')')) {
        (Some(open), Some(close)) if open < close => presented[open + 1..close].trim_matches('"'),
        _ => presented,
    }
}

/// The connection settings' and the service file's failures, in libpq's words where libpq has
/// them. A key is quoted as `db::conninfo` shows it (never a value that is not a key name).
pub mod conninfo {
    use std::path::Path;

    use crate::db::conninfo::SslMode;

    pub const KEY_NOT_SHOWN: &str = "(not shown: it is not a key name)";
    pub const NOT_A_URL: &str = "a URL must start with postgresql:// or postgres://";
    pub const NO_CLOSING_BRACKET: &str = "an IPv6 address in the URL is missing its closing ]";
    pub const AFTER_BRACKET: &str = "unexpected text after an IPv6 address in the URL";
    pub const NO_USER: &str = "cannot tell the user name: set user in --database-url, or PGUSER";
    pub const NOT_AN_SSLMODE: &str =
        "not an sslmode: use disable, allow, prefer, require, verify-ca or verify-full";
    pub const NOT_SECONDS: &str = "not a whole number of seconds";
    pub const NOT_AN_ADDRESS: &str = "not an IP address";
    pub const NOT_A_PORT: &str = "not a port number (1 to 65535)";
    pub const NO_LDAP: &str =
        "LDAP lookups (a line starting with \"ldap\") are not supported by plancheck";
    pub const NO_EQUALS: &str = "no \"=\": write key=value";
    pub const NO_NESTING: &str = "nested service specifications are not supported";

    /// The parts of a URL, as a message names them.
    pub const USER_NAME: &str = "the user name";
    pub const PASSWORD: &str = "the password";
    pub const A_HOST: &str = "a host";
    pub const A_PORT: &str = "a port";
    pub const DATABASE_NAME: &str = "the database name";
    pub const A_PARAMETER: &str = "a parameter";
    pub const A_PARAMETER_NAME: &str = "a parameter name";

    pub fn value_of(key: &str) -> String {
        format!("the value of {key}")
    }

    pub fn unknown_key(key: &str, meant: Option<&str>) -> String {
        match meant {
            Some(k) => format!("unknown key {key}; did you mean \"{k}\"?"),
            None => format!("unknown key {key}"),
        }
    }

    pub fn missing_equals(index: usize, key: &str) -> String {
        format!(
            "missing \"=\" after setting {index} (key {key}): write key=value pairs, or a \
             postgresql:// URL"
        )
    }

    pub fn unclosed_quote(key: &str) -> String {
        format!("the quoted value of {key} is not closed with '")
    }

    pub fn parameter_without_equals(key: &str) -> String {
        format!("URL parameter {key} has no \"=\"")
    }

    pub fn escaped_nul(what: &str) -> String {
        format!("{what} in the URL contains %00")
    }

    pub fn bad_escape(what: &str) -> String {
        format!("{what} in the URL has an invalid %-escape")
    }

    pub fn not_utf8(what: &str) -> String {
        format!("{what} in the URL is not UTF-8 once decoded")
    }

    pub fn invalid_given(key: &str, problem: &str) -> String {
        format!("invalid --database-url: {key}: {problem}")
    }

    pub fn invalid_in_service(key: &str, at: &str, problem: &str) -> String {
        format!("invalid {key} in {at}: {problem}")
    }

    pub fn invalid_env(var: &str, problem: &str) -> String {
        format!("invalid {var}: {problem}")
    }

    pub fn invalid_url(problem: &str) -> String {
        format!("invalid --database-url: {problem}")
    }

    pub fn weak_with_system(mode: SslMode) -> String {
        format!(
            "weak sslmode \"{mode}\" may not be used with sslrootcert=system (use \
             \"verify-full\", or \"verify-ca\")"
        )
    }

    pub fn addresses_for_hosts(addresses: usize, hosts: usize) -> String {
        format!("{addresses} addresses for {hosts} hosts: give one per host")
    }

    pub fn ports_for_hosts(ports: usize, hosts: usize) -> String {
        format!("{ports} ports for {hosts} hosts: give one port, or one per host")
    }

    pub fn service_at(name: &str, file: &Path, line: usize) -> String {
        format!("service \"{name}\" ({}, line {line})", file.display())
    }

    pub fn no_such_file(path: &Path) -> String {
        format!("{} (no such file)", path.display())
    }

    /// `from_env`: the name came from PGSERVICE.
    pub fn service_not_found(name: &str, from_env: bool, searched: &[String]) -> String {
        let from = if from_env { " (from PGSERVICE)" } else { "" };
        format!(
            "definition of service \"{name}\"{from} not found: looked in {}",
            searched.join(" and ")
        )
    }

    pub fn unreadable_service_file(path: &Path) -> String {
        format!(
            "service file \"{}\" not found, or not readable as UTF-8 text",
            path.display()
        )
    }

    pub fn service_syntax(path: &Path, line: usize, problem: &str) -> String {
        format!(
            "syntax error in service file \"{}\", line {line}: {problem}",
            path.display()
        )
    }

    pub fn line_too_long(max: usize) -> String {
        format!(
            "the line is too long: libpq refuses lines of {max} bytes or more, newline included"
        )
    }

    pub fn space_before_equals(key: &str) -> String {
        format!("white space between {key} and \"=\" (libpq reads it as part of the key)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_host_is_named_with_its_cause_and_psqls_hint() {
        let n = NotConnected {
            tried: vec![
                (
                    "db1:5432".into(),
                    "Connection refused (os error 111)".into(),
                ),
                ("db2:5432".into(), "timed out".into()),
            ],
            chosen_by_defaults: None,
        };
        assert_eq!(
            DatabaseFailure::from(n).0,
            "could not connect to db1:5432: Connection refused (os error 111); could not connect \
             to db2:5432: timed out (is the server running on that host and accepting TCP/IP \
             connections on that port?)"
        );
    }

    #[test]
    fn a_password_failure_says_where_a_password_goes() {
        let n = NotConnected {
            tried: vec![(
                "localhost:5432".into(),
                "password authentication failed for user \"app\"".into(),
            )],
            chosen_by_defaults: Some("localhost:5432/app".into()),
        };
        let m = DatabaseFailure::from(n).0;
        assert!(
            m.starts_with("no --database-url or DATABASE_URL was given"),
            "{m}"
        );
        assert!(m.contains("PGPASSWORD"), "{m}");
    }
}
