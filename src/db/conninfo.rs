//! Connection settings resolved the way libpq resolves them: a `postgresql://` URL or a
//! `key=value` string, a connection service, the `PG*` environment variables, the password file
//! and libpq's defaults.
//!
//! ## Precedence
//!
//! For each setting, a value in the connection string (`--database-url` / `DATABASE_URL`, URL or
//! key=value) wins over the connection service's, which wins over its environment variable,
//! which wins over the default. This is libpq's order: `conninfo_add_defaults` first lets
//! `parseServiceInfo` fill what the string left unset ("don't override any previous explicit
//! setting"), and only then reads the environment for what is still unset. An empty value counts
//! as not set, wherever it is written (libpq keeps an empty value from the string or a service
//! file, which then hides the environment's).
//!
//! The service is `service` in the string, else `PGSERVICE`; its file and format are described
//! in [`service`]. A service named but found in no file is an error naming the files looked in.
//!
//! | setting | environment | default |
//! |---|---|---|
//! | `service` | `PGSERVICE` | none |
//! | `host` | `PGHOST` | the Unix socket folder `/var/run/postgresql` if it exists, else `localhost` (only when `hostaddr` is not set either) |
//! | `hostaddr` | `PGHOSTADDR` | none: the address is looked up from `host` |
//! | `port` | `PGPORT` | `5432` |
//! | `user` | `PGUSER` | the operating system user name |
//! | `password` | `PGPASSWORD` | the first matching line of the password file |
//! | `passfile` | `PGPASSFILE` | `~/.pgpass` |
//! | `dbname` | `PGDATABASE` | the user name |
//! | `sslmode` | `PGSSLMODE` | `prefer` |
//! | `sslrootcert` | `PGSSLROOTCERT` | `~/.postgresql/root.crt` if it exists |
//! | `sslcert` | `PGSSLCERT` | `~/.postgresql/postgresql.crt` if it exists |
//! | `sslkey` | `PGSSLKEY` | `~/.postgresql/postgresql.key` |
//! | `connect_timeout` | `PGCONNECT_TIMEOUT` | 10 s (libpq waits forever; `0` does here too) |
//! | `application_name` | `PGAPPNAME` | `plancheck` |
//! | `options` | `PGOPTIONS` | none |
//!
//! The password file is read only when no password was given (in the string or `PGPASSWORD`).
//! Its lines are `host:port:database:user:password`; `*` matches anything, `\:` and `\\` escape,
//! `#` starts a comment, the first matching line wins, and `localhost` also matches the default
//! socket folder. A file that its group or others may access is ignored, silently (as libpq
//! ignores it). `~` is `HOME`, else the user's home folder from the password database.
//!
//! Anything else in the connection string is an error that names the key. No error and no `Debug`
//! output ever contains a password: errors name keys and variables, never their values.
//!
//! [`resolve`] is a pure function of the string and an [`Environment`] (variables, home folder,
//! user name, files), so every rule above is unit-tested here.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::BadInput;
use crate::report::connect::conninfo as words;

pub mod service;

pub use service::{DEFAULT_SYSCONFDIR, Service};

/// libpq's compiled-in socket folder on Debian.
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";
pub const DEFAULT_PORT: u16 = 5432;
pub const DEFAULT_APPLICATION_NAME: &str = "plancheck";
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys a connection string may hold, with the environment variable of each.
const KEYS: &[(&str, &str)] = &[
    ("service", "PGSERVICE"),
    ("host", "PGHOST"),
    ("hostaddr", "PGHOSTADDR"),
    ("port", "PGPORT"),
    ("user", "PGUSER"),
    ("password", "PGPASSWORD"),
    ("passfile", "PGPASSFILE"),
    ("dbname", "PGDATABASE"),
    ("sslmode", "PGSSLMODE"),
    ("sslrootcert", "PGSSLROOTCERT"),
    ("sslcert", "PGSSLCERT"),
    ("sslkey", "PGSSLKEY"),
    ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ("application_name", "PGAPPNAME"),
    ("options", "PGOPTIONS"),
];

/// A password: shown as `<hidden>` by `Debug`, readable only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

/// libpq's `sslmode`. What each one does is in [`super::tls`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub const ALL: [SslMode; 6] = [
        SslMode::Disable,
        SslMode::Allow,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ];

    pub fn parse(text: &str) -> Option<SslMode> {
        SslMode::ALL.into_iter().find(|m| m.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// verify-ca and verify-full: the server's certificate must be checked against a CA.
    pub fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a server listens: a host name or address over TCP, or a Unix socket folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Tcp(String),
    Unix(PathBuf),
}

/// One server to try, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// The host name (the name a certificate must carry under verify-full), or socket folder.
    /// `None` only when `hostaddr` is set.
    pub host: Option<Host>,
    /// The address to connect to, without a name lookup.
    pub hostaddr: Option<IpAddr>,
    pub port: u16,
    /// The password for this server: given, else from the password file.
    pub password: Option<Secret>,
}

impl HostSpec {
    /// `host:port`, `host:port (address)`, or the socket file, for messages.
    pub fn describe(&self) -> String {
        match (&self.host, self.hostaddr) {
            (Some(Host::Unix(dir)), _) => dir
                .join(format!(".s.PGSQL.{}", self.port))
                .display()
                .to_string(),
            (Some(Host::Tcp(name)), Some(addr)) if *name != addr.to_string() => {
                format!("{}:{} ({addr})", bracket(name), self.port)
            }
            (Some(Host::Tcp(name)), _) => format!("{}:{}", bracket(name), self.port),
            (None, Some(addr)) => format!("{}:{}", bracket(&addr.to_string()), self.port),
            (None, None) => format!("localhost:{}", self.port),
        }
    }

    /// Whether the session goes over a Unix socket, where TLS is never used (as in libpq).
    pub fn is_unix(&self) -> bool {
        matches!(self.host, Some(Host::Unix(_)))
    }

    /// The name TLS checks the certificate against and sends as SNI: the host name, never
    /// hostaddr (as libpq). `None` over a Unix socket or with hostaddr alone.
    pub fn tls_name(&self) -> Option<&str> {
        match &self.host {
            Some(Host::Tcp(name)) => Some(name),
            _ => None,
        }
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// The CA certificates a server's certificate is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// `sslrootcert=system`: the operating system's trusted roots.
    System,
    /// A PEM file of CA certificates.
    File(PathBuf),
}

impl fmt::Display for RootCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootCert::System => f.write_str("the system's trusted roots"),
            RootCert::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Every setting of a connection, resolved. `Debug` never shows a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    /// At least one.
    pub hosts: Vec<HostSpec>,
    pub user: String,
    pub dbname: String,
    pub sslmode: SslMode,
    /// `sslrootcert`, else `~/.postgresql/root.crt` (which may not exist, see `sslrootcert_exists`).
    pub sslrootcert: Option<RootCert>,
    /// Whether that file exists (always true for `system`).
    pub sslrootcert_exists: bool,
    /// The client certificate, when its file exists (libpq skips a missing one silently).
    pub sslcert: Option<PathBuf>,
    /// The client certificate's private key: `sslkey`, else `~/.postgresql/postgresql.key`.
    pub sslkey: Option<PathBuf>,
    /// `None`: wait forever.
    pub connect_timeout: Option<Duration>,
    pub application_name: String,
    pub options: Option<String>,
}

/// What a file is, for the password file's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    pub is_file: bool,
    pub is_dir: bool,
    /// The permission bits (`0o600`).
    pub mode: u32,
}

/// Everything resolution reads from outside the connection string.
pub trait Environment {
    /// An environment variable.
    fn var(&self, name: &str) -> Option<String>;
    /// The home folder (`~`).
    fn home_dir(&self) -> Option<PathBuf>;
    /// The operating system user name.
    fn os_user(&self) -> Option<String>;
    /// What is at `path`, if anything.
    fn metadata(&self, path: &Path) -> Option<FileMeta> {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(FileMeta {
            is_file: meta.is_file(),
            is_dir: meta.is_dir(),
            mode: meta.permissions().mode() & 0o7777,
        })
    }
    /// A file's text.
    fn read_to_string(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// The process's environment, home folder and user.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn home_dir(&self) -> Option<PathBuf> {
        match std::env::var_os("HOME") {
            Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
            _ => passwd_entry().map(|(_, home)| home),
        }
    }

    fn os_user(&self) -> Option<String> {
        passwd_entry()
            .map(|(name, _)| name)
            .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
    }
}

/// Given variables, home folder and user; files are the real ones. For tests and callers that
/// must not depend on the process's environment.
#[derive(Debug, Clone, Default)]
pub struct GivenEnv {
    pub vars: BTreeMap<String, String>,
    pub home: Option<PathBuf>,
    pub user: Option<String>,
}

impl Environment for GivenEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    fn home_dir(&self) -> Option<PathBuf> {
        self.home.clone()
    }

    fn os_user(&self) -> Option<String> {
        self.user.clone()
    }
}

/// The effective user's name and home folder from the password database.
fn passwd_entry() -> Option<(String, PathBuf)> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: a zeroed passwd is a valid out-parameter; getpwuid_r writes into it and `buf`.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the call and `buf.len()` is its size.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded, so both fields point at NUL-terminated strings in `buf`.
    let (name, dir) = unsafe { (CStr::from_ptr(pwd.pw_name), CStr::from_ptr(pwd.pw_dir)) };
    Some((
        name.to_string_lossy().into_owned(),
        PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())),
    ))
}

/// The settings a connection string holds, by key. `Debug` hides the password.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings(BTreeMap<&'static str, String>);

impl Settings {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn set(&mut self, key: &str, value: String) -> Result<(), String> {
        let key = canonical(key)?;
        self.0.insert(key, value);
        Ok(())
    }
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (k, v) in &self.0 {
            if *k == "password" {
                map.entry(k, &"<hidden>");
            } else {
                map.entry(k, v);
            }
        }
        map.finish()
    }
}

/// The known key, or an error naming the unknown one and, for a near miss, the key meant.
fn canonical(key: &str) -> Result<&'static str, String> {
    KEYS.iter()
        .map(|(k, _)| *k)
        .find(|k| *k == key)
        .ok_or_else(|| {
            let shown = shown_key(key);
            let meant = KEYS
                .iter()
                .map(|(k, _)| (strsim::levenshtein(k, key), *k))
                .filter(|(d, k)| *d <= 2 && k.len() > 3)
                .min()
                .filter(|_| shown.starts_with('"'));
            words::unknown_key(&shown, meant.map(|(_, k)| k))
        })
}

/// A key as an error may show it: quoted when it looks like a key, described otherwise (a
/// "key" that is not one may be a fragment of an unquoted password).
fn shown_key(key: &str) -> String {
    let looks_like_key = !key.is_empty()
        && key.len() <= 40
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if looks_like_key {
        format!("\"{key}\"")
    } else {
        words::KEY_NOT_SHOWN.to_string()
    }
}

/// Reads a `postgresql://` / `postgres://` URL or a libpq `key=value` string. Errors name the
/// key or the part of the URL, never a value.
pub fn parse(text: &str) -> Result<Settings, String> {
    let trimmed = text.trim();
    for scheme in ["postgresql://", "postgres://"] {
        if let Some(rest) = trimmed.strip_prefix(scheme) {
            return parse_url(rest);
        }
    }
    if trimmed.contains("://") {
        return Err(words::NOT_A_URL.into());
    }
    parse_key_values(text)
}

/// libpq's key=value syntax: `key = value` pairs separated by spaces; a value may be single-quoted
/// (for spaces), and a backslash escapes the next character, quoted or not.
fn parse_key_values(text: &str) -> Result<Settings, String> {
    let mut settings = Settings::default();
    let mut chars = text.chars().peekable();
    let mut index = 0;
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        index += 1;
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(words::missing_equals(index, &shown_key(&key)));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => {
                        return Err(words::unclosed_quote(&shown_key(&key)));
                    }
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => {
                            return Err(words::unclosed_quote(&shown_key(&key)));
                        }
                    },
                    Some('\'') => break,
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    if let Some(escaped) = chars.next() {
                        value.push(escaped);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        settings.set(&key, value)?;
    }
    Ok(settings)
}

/// `[user[:password]@][host[:port][,host[:port]…]][/dbname][?key=value&…]`, percent-decoded.
// Long because it follows libpq's URI grammar part by part (scheme, user, hosts, ports, path, query), in its order.
fn parse_url(rest: &str) -> Result<Settings, String> {
    let mut settings = Settings::default();
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (before_query, None),
    };
    // The last '@': a password with an unencoded '@' still parses.
    let (userinfo, hostlist) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    if let Some(userinfo) = userinfo {
        let (user, password) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userinfo, None),
        };
        let user = decode(user, words::USER_NAME)?;
        if !user.is_empty() {
            settings.set("user", user)?;
        }
        if let Some(password) = password {
            let password = decode(password, words::PASSWORD)?;
            if !password.is_empty() {
                settings.set("password", password)?;
            }
        }
    }
    if !hostlist.is_empty() {
        let mut hosts = Vec::new();
        let mut ports = Vec::new();
        for entry in hostlist.split(',') {
            let (host, port) = if let Some(inner) = entry.strip_prefix('[') {
                let (host, after) = inner.split_once(']').ok_or(words::NO_CLOSING_BRACKET)?;
                let port = match after {
                    "" => "",
                    p => p.strip_prefix(':').ok_or(words::AFTER_BRACKET)?,
                };
                (host.to_string(), port)
            } else {
                match entry.rsplit_once(':') {
                    Some((h, p)) => (decode(h, words::A_HOST)?, p),
                    None => (decode(entry, words::A_HOST)?, ""),
                }
            };
            hosts.push(host);
            ports.push(decode(port, words::A_PORT)?);
        }
        if hosts.iter().any(|h| !h.is_empty()) {
            settings.set("host", hosts.join(","))?;
        }
        if ports.iter().any(|p| !p.is_empty()) {
            settings.set("port", ports.join(","))?;
        }
    }
    if let Some(path) = path {
        let dbname = decode(path, words::DATABASE_NAME)?;
        if !dbname.is_empty() {
            settings.set("dbname", dbname)?;
        }
    }
    if let Some(query) = query {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                words::parameter_without_equals(&shown_key(
                    &decode(pair, words::A_PARAMETER).unwrap_or_default(),
                ))
            })?;
            let key = decode(key, words::A_PARAMETER_NAME)?;
            let value = decode(value, &words::value_of(&shown_key(&key)))?;
            // As libpq: the JDBC spelling ssl=true means sslmode=require.
            if key == "ssl" && value == "true" {
                settings.set("sslmode", "require".into())?;
            } else {
                settings.set(&key, value)?;
            }
        }
    }
    Ok(settings)
}

/// Percent-decoding of one part of a URL; the error names the part, not its text.
fn decode(text: &str, what: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(0) => return Err(words::escaped_nul(what)),
                Some(b) => out.push(b),
                None => return Err(words::bad_escape(what)),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| words::not_utf8(what))
}

/// Where a value came from, for errors.
#[derive(Clone, Copy)]
enum Origin<'a> {
    Given(&'static str),
    /// A line of the connection service's section.
    Service {
        key: &'static str,
        line: usize,
        service: &'a Service,
    },
    Env(&'static str),
}

impl Origin<'_> {
    fn error(self, problem: &str) -> BadInput {
        match self {
            Origin::Given(key) => BadInput(words::invalid_given(key, problem)),
            Origin::Service { key, line, service } => {
                BadInput(words::invalid_in_service(key, &service.at(line), problem))
            }
            Origin::Env(var) => BadInput(words::invalid_env(var, problem)),
        }
    }
}

/// Resolves a connection string (or none) against an environment: see the module's precedence.
// Long because it is libpq's order of precedence, one setting after another: the connection string, then the environment, then the service and password files, then the defaults.
pub fn resolve(text: Option<&str>, env: &dyn Environment) -> Result<ConnInfo, BadInput> {
    let given = match text {
        Some(t) if !t.trim().is_empty() => {
            parse(t).map_err(|e| BadInput(words::invalid_url(&e)))?
        }
        _ => Settings::default(),
    };
    // The service comes first, as in libpq's conninfo_add_defaults: `service` in the string,
    // else PGSERVICE (parseServiceInfo reads that variable itself, before any other).
    let service = match given.get("service").filter(|s| !s.is_empty()) {
        Some(name) => Some(service::find(name, service::Named::Given, env)?),
        None => match env.var("PGSERVICE").filter(|s| !s.is_empty()) {
            Some(name) => Some(service::find(&name, service::Named::Env, env)?),
            None => None,
        },
    };
    let value = |key: &'static str| -> Option<(String, Origin)> {
        if let Some(v) = given.get(key).filter(|v| !v.is_empty()) {
            return Some((v.to_string(), Origin::Given(key)));
        }
        if let Some(service) = &service
            && let Some((v, line)) = service.get(key)
        {
            return Some((v.to_string(), Origin::Service { key, line, service }));
        }
        let var = KEYS.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)?;
        env.var(var)
            .filter(|v| !v.is_empty())
            .map(|v| (v, Origin::Env(var)))
    };
    let home = env.home_dir();
    let in_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
    let is_file = |p: &Path| env.metadata(p).is_some_and(|m| m.is_file);

    let user = match value("user") {
        Some((u, _)) => u,
        None => env
            .os_user()
            .ok_or_else(|| BadInput(words::NO_USER.into()))?,
    };
    let dbname = value("dbname")
        .map(|(d, _)| d)
        .unwrap_or_else(|| user.clone());

    let sslmode = match value("sslmode") {
        Some((m, origin)) => {
            SslMode::parse(&m).ok_or_else(|| origin.error(words::NOT_AN_SSLMODE))?
        }
        None => SslMode::Prefer,
    };

    let hosts = resolve_hosts(value("host"), value("hostaddr"), value("port"), env)?;

    let connect_timeout = match value("connect_timeout") {
        None => Some(DEFAULT_CONNECT_TIMEOUT),
        Some((t, origin)) => {
            let secs: i64 = t
                .trim()
                .parse()
                .map_err(|_| origin.error(words::NOT_SECONDS))?;
            match secs {
                ..=0 => None,
                // As libpq: a timeout under 2 s is too short to be meant.
                1 => Some(Duration::from_secs(2)),
                n => Some(Duration::from_secs(n as u64)),
            }
        }
    };

    let application_name = value("application_name")
        .map(|(a, _)| a)
        .unwrap_or_else(|| DEFAULT_APPLICATION_NAME.to_string());
    let options = value("options").map(|(o, _)| o);

    let (sslrootcert, sslrootcert_exists) = match value("sslrootcert") {
        Some((r, _)) if r == "system" => (Some(RootCert::System), true),
        Some((r, _)) => {
            let path = PathBuf::from(r);
            let exists = is_file(&path);
            (Some(RootCert::File(path)), exists)
        }
        None => match in_home(".postgresql/root.crt") {
            Some(path) => {
                let exists = is_file(&path);
                (Some(RootCert::File(path)), exists)
            }
            None => (None, false),
        },
    };
    if sslrootcert == Some(RootCert::System) && !sslmode.verifies() {
        return Err(BadInput(words::weak_with_system(sslmode)));
    }
    let sslcert = value("sslcert")
        .map(|(c, _)| PathBuf::from(c))
        .or_else(|| in_home(".postgresql/postgresql.crt"))
        .filter(|p| is_file(p));
    let sslkey = value("sslkey")
        .map(|(k, _)| PathBuf::from(k))
        .or_else(|| in_home(".postgresql/postgresql.key"));

    let mut info = ConnInfo {
        hosts,
        user,
        dbname,
        sslmode,
        sslrootcert,
        sslrootcert_exists,
        sslcert,
        sslkey,
        connect_timeout,
        application_name,
        options,
    };

    if let Some((password, _)) = value("password") {
        for host in &mut info.hosts {
            host.password = Some(Secret::new(password.clone()));
        }
    } else {
        let passfile = value("passfile")
            .map(|(p, _)| PathBuf::from(p))
            .or_else(|| in_home(".pgpass"));
        if let Some(text) = passfile.and_then(|p| read_password_file(&p, env)) {
            for host in &mut info.hosts {
                host.password = pgpass_lookup(
                    &text,
                    &pgpass_host(host),
                    &host.port.to_string(),
                    &info.dbname,
                    &info.user,
                )
                .map(Secret::new);
            }
        }
    }
    Ok(info)
}

// Long because libpq pairs hosts, host addresses and ports by position, with its own rules for each count.
fn resolve_hosts(
    host: Option<(String, Origin<'_>)>,
    hostaddr: Option<(String, Origin<'_>)>,
    port: Option<(String, Origin<'_>)>,
    env: &dyn Environment,
) -> Result<Vec<HostSpec>, BadInput> {
    let names: Vec<String> = host
        .as_ref()
        .map(|(h, _)| h.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    let addrs: Vec<Option<IpAddr>> = match &hostaddr {
        Some((a, origin)) => a
            .split(',')
            .map(|s| match s.trim() {
                "" => Ok(None),
                s => s
                    .parse()
                    .map(Some)
                    .map_err(|_| origin.error(words::NOT_AN_ADDRESS)),
            })
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    if !names.is_empty() && !addrs.is_empty() && names.len() != addrs.len() {
        let origin = hostaddr.as_ref().map(|(_, o)| *o).unwrap();
        return Err(origin.error(&words::addresses_for_hosts(addrs.len(), names.len())));
    }
    let count = names.len().max(addrs.len()).max(1);
    let ports: Vec<u16> = match &port {
        Some((p, origin)) => p
            .split(',')
            .map(|s| match s.trim() {
                "" => Ok(DEFAULT_PORT),
                s => s
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| origin.error(words::NOT_A_PORT)),
            })
            .collect::<Result<_, _>>()?,
        None => vec![DEFAULT_PORT],
    };
    if ports.len() != 1 && ports.len() != count {
        let origin = port.as_ref().map(|(_, o)| *o).unwrap();
        return Err(origin.error(&words::ports_for_hosts(ports.len(), count)));
    }
    let default_host = || {
        if env
            .metadata(Path::new(DEFAULT_SOCKET_DIR))
            .is_some_and(|m| m.is_dir)
        {
            Host::Unix(PathBuf::from(DEFAULT_SOCKET_DIR))
        } else {
            Host::Tcp("localhost".into())
        }
    };
    Ok((0..count)
        .map(|i| {
            let hostaddr = addrs.get(i).copied().flatten();
            let host = match names.get(i).map(String::as_str) {
                Some(name) if name.starts_with('/') => Some(Host::Unix(PathBuf::from(name))),
                Some(name) if !name.is_empty() => Some(Host::Tcp(name.to_string())),
                _ if hostaddr.is_some() => None,
                _ => Some(default_host()),
            };
            HostSpec {
                host,
                hostaddr,
                port: if ports.len() == 1 { ports[0] } else { ports[i] },
                password: None,
            }
        })
        .collect())
}

/// The password file's text, unless it is missing, not a plain file, or open to the group or
/// others (then it is ignored without a word).
fn read_password_file(path: &Path, env: &dyn Environment) -> Option<String> {
    let meta = env.metadata(path)?;
    if !meta.is_file || meta.mode & 0o077 != 0 {
        return None;
    }
    env.read_to_string(path)
}

/// The host a password file line is matched against: the host name, else hostaddr; the default
/// socket folder as `localhost`.
fn pgpass_host(host: &HostSpec) -> String {
    match (&host.host, host.hostaddr) {
        (Some(Host::Unix(dir)), _) if dir == Path::new(DEFAULT_SOCKET_DIR) => "localhost".into(),
        (Some(Host::Unix(dir)), _) => dir.display().to_string(),
        (Some(Host::Tcp(name)), _) => name.clone(),
        (None, Some(addr)) => addr.to_string(),
        (None, None) => "localhost".into(),
    }
}

/// The password of the first line of a password file that matches.
pub fn pgpass_lookup(
    text: &str,
    host: &str,
    port: &str,
    dbname: &str,
    user: &str,
) -> Option<String> {
    let wanted = [host, port, dbname, user];
    text.lines()
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .find_map(|line| {
            let (fields, password) = split_pgpass_line(line)?;
            let matches = fields
                .iter()
                .zip(wanted)
                .all(|((text, wildcard), want)| *wildcard || text == want);
            matches.then_some(password)
        })
}

/// The four matched fields (text, whether it is the `*` wildcard) and the password, unescaped.
fn split_pgpass_line(line: &str) -> Option<([(String, bool); 4], String)> {
    let mut fields: Vec<(String, bool)> = Vec::with_capacity(4);
    let mut chars = line.chars();
    let mut current = String::new();
    let mut escaped_any = false;
    while fields.len() < 4 {
        match chars.next() {
            None => return None,
            Some('\\') => {
                escaped_any = true;
                current.push(chars.next()?);
            }
            Some(':') => {
                let wildcard = current == "*" && !escaped_any;
                fields.push((std::mem::take(&mut current), wildcard));
                escaped_any = false;
            }
            Some(c) => current.push(c),
        }
    }
    let mut password = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    password.push(next);
                }
            }
            c => password.push(c),
        }
    }
    let fields: [(String, bool); 4] = fields.try_into().ok()?;
    Some((fields, password))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A fake environment: variables, home, user, files with modes, folders.
    #[derive(Default, Clone)]
    struct Fake {
        vars: BTreeMap<String, String>,
        home: Option<PathBuf>,
        user: Option<String>,
        files: BTreeMap<PathBuf, (String, u32)>,
        dirs: BTreeSet<PathBuf>,
    }

    impl Fake {
        fn new() -> Fake {
            Fake {
                home: Some(PathBuf::from("/home/ann")),
                user: Some("ann".into()),
                ..Fake::default()
            }
        }
        fn var(mut self, k: &str, v: &str) -> Fake {
            self.vars.insert(k.into(), v.into());
            self
        }
        fn file(mut self, path: &str, text: &str, mode: u32) -> Fake {
            self.files.insert(path.into(), (text.into(), mode));
            self
        }
        fn dir(mut self, path: &str) -> Fake {
            self.dirs.insert(path.into());
            self
        }
        /// A copy with one more variable.
        fn clone_with(&self, k: &str, v: &str) -> Fake {
            self.clone().var(k, v)
        }
    }

    impl Environment for Fake {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn home_dir(&self) -> Option<PathBuf> {
            self.home.clone()
        }
        fn os_user(&self) -> Option<String> {
            self.user.clone()
        }
        fn metadata(&self, path: &Path) -> Option<FileMeta> {
            if let Some((_, mode)) = self.files.get(path) {
                return Some(FileMeta {
                    is_file: true,
                    is_dir: false,
                    mode: *mode,
                });
            }
            self.dirs.contains(path).then_some(FileMeta {
                is_file: false,
                is_dir: true,
                mode: 0o755,
            })
        }
        fn read_to_string(&self, path: &Path) -> Option<String> {
            self.files.get(path).map(|(t, _)| t.clone())
        }
    }

    fn ok(text: &str, env: &Fake) -> ConnInfo {
        resolve(Some(text), env).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn err(text: &str, env: &Fake) -> String {
        match resolve(Some(text), env) {
            Ok(info) => panic!("{text} resolved: {info:?}"),
            Err(e) => e.0,
        }
    }

    fn password(info: &ConnInfo) -> Option<&str> {
        info.hosts[0].password.as_ref().map(Secret::expose)
    }

    fn tcp(name: &str) -> Option<Host> {
        Some(Host::Tcp(name.into()))
    }

    #[test]
    fn defaults_are_libpqs() {
        let info = resolve(None, &Fake::new()).unwrap();
        assert_eq!(info.hosts.len(), 1);
        assert_eq!(info.hosts[0].host, tcp("localhost"));
        assert_eq!(info.hosts[0].port, 5432);
        assert_eq!(info.user, "ann");
        assert_eq!(info.dbname, "ann");
        assert_eq!(info.sslmode, SslMode::Prefer);
        assert_eq!(info.application_name, "plancheck");
        assert_eq!(info.connect_timeout, Some(Duration::from_secs(10)));
        assert_eq!(password(&info), None);
        // The default root certificate is looked for in the home folder; it does not exist.
        assert_eq!(
            info.sslrootcert,
            Some(RootCert::File("/home/ann/.postgresql/root.crt".into()))
        );
        assert!(!info.sslrootcert_exists);
        assert_eq!(info.sslcert, None);

        // With the Debian socket folder present, the default host is that socket.
        let info = resolve(None, &Fake::new().dir(DEFAULT_SOCKET_DIR)).unwrap();
        assert_eq!(
            info.hosts[0].host,
            Some(Host::Unix(DEFAULT_SOCKET_DIR.into()))
        );
        assert!(info.hosts[0].is_unix());
    }

    #[test]
    fn the_string_wins_over_the_environment_which_wins_over_defaults() {
        let env = Fake::new()
            .var("PGHOST", "envhost")
            .var("PGPORT", "6000")
            .var("PGUSER", "envuser")
            .var("PGDATABASE", "envdb")
            .var("PGPASSWORD", "envpass")
            .var("PGSSLMODE", "require")
            .var("PGAPPNAME", "envapp")
            .var("PGCONNECT_TIMEOUT", "30")
            .var("PGSSLROOTCERT", "/env/root.crt");
        let info = ok("", &env);
        assert_eq!(info.hosts[0].host, tcp("envhost"));
        assert_eq!(info.hosts[0].port, 6000);
        assert_eq!(info.user, "envuser");
        assert_eq!(info.dbname, "envdb");
        assert_eq!(password(&info), Some("envpass"));
        assert_eq!(info.sslmode, SslMode::Require);
        assert_eq!(info.application_name, "envapp");
        assert_eq!(info.connect_timeout, Some(Duration::from_secs(30)));
        assert_eq!(
            info.sslrootcert,
            Some(RootCert::File("/env/root.crt".into()))
        );

        let info = ok(
            "host=given port=7000 user=u dbname=d password=p sslmode=disable \
             application_name=a connect_timeout=0",
            &env,
        );
        assert_eq!(info.hosts[0].host, tcp("given"));
        assert_eq!(info.hosts[0].port, 7000);
        assert_eq!(info.user, "u");
        assert_eq!(info.dbname, "d");
        assert_eq!(password(&info), Some("p"));
        assert_eq!(info.sslmode, SslMode::Disable);
        assert_eq!(info.application_name, "a");
        assert_eq!(info.connect_timeout, None);

        // A URL that names only the host keeps the rest from the environment.
        let info = ok("postgresql://urlhost", &env);
        assert_eq!(info.hosts[0].host, tcp("urlhost"));
        assert_eq!(info.hosts[0].port, 6000);
        assert_eq!(info.user, "envuser");
        // dbname defaults to the user, wherever the user came from.
        let info = ok("user=bob", &Fake::new());
        assert_eq!(info.dbname, "bob");
        // An empty value counts as not set.
        let info = ok("host='' user=", &env);
        assert_eq!(info.hosts[0].host, tcp("envhost"));
        assert_eq!(info.user, "envuser");
    }

    #[test]
    fn urls_are_percent_decoded() {
        let env = Fake::new();
        let info = ok(
            "postgresql://us%40er:p%3Ass%2Fw%25rd@db.example:6543/my%20db?sslmode=verify-full\
             &application_name=x%26y&sslrootcert=%2Fetc%2Fca.pem",
            &env,
        );
        assert_eq!(info.user, "us@er");
        assert_eq!(password(&info), Some("p:ss/w%rd"));
        assert_eq!(info.hosts[0].host, tcp("db.example"));
        assert_eq!(info.hosts[0].port, 6543);
        assert_eq!(info.dbname, "my db");
        assert_eq!(info.sslmode, SslMode::VerifyFull);
        assert_eq!(info.application_name, "x&y");
        assert_eq!(info.sslrootcert, Some(RootCert::File("/etc/ca.pem".into())));

        // postgres:// too; a socket folder as an encoded host; ssl=true as libpq reads it.
        let info = ok("postgres://%2Fvar%2Frun%2Fpg:5433/db?ssl=true", &env);
        assert_eq!(info.hosts[0].host, Some(Host::Unix("/var/run/pg".into())));
        assert_eq!(info.hosts[0].port, 5433);
        assert_eq!(info.sslmode, SslMode::Require);

        // IPv6, several hosts with their own ports, hostaddr in the query.
        let info = ok(
            "postgresql://[::1]:5000,b.example,c.example:5002/db?hostaddr=::1,10.0.0.2,10.0.0.3",
            &env,
        );
        let described: Vec<String> = info.hosts.iter().map(HostSpec::describe).collect();
        assert_eq!(
            described,
            [
                "[::1]:5000",
                "b.example:5432 (10.0.0.2)",
                "c.example:5002 (10.0.0.3)"
            ]
        );

        // A password with an unencoded '@' still parses (the last '@' ends the user part).
        let info = ok("postgresql://u:a@b@h/d", &env);
        assert_eq!(password(&info), Some("a@b"));
        assert_eq!(info.hosts[0].host, tcp("h"));

        assert!(err("postgresql://u:%zz@h/d", &env).contains("the password"));
        assert!(err("postgresql://h/d?nosuch=1", &env).contains("unknown key \"nosuch\""));
        assert!(err("mysql://h/d", &env).contains("postgresql://"));
    }

    #[test]
    fn key_values_take_quotes_and_escapes() {
        let env = Fake::new();
        let info = ok(
            r"host = h  password='it\'s a secret' user='a b' dbname=we\ ird application_name='q\\'",
            &env,
        );
        assert_eq!(info.hosts[0].host, tcp("h"));
        assert_eq!(password(&info), Some("it's a secret"));
        assert_eq!(info.user, "a b");
        assert_eq!(info.dbname, "we ird");
        assert_eq!(info.application_name, r"q\");
        // A later value for the same key wins.
        assert_eq!(ok("port=1 port=2", &env).hosts[0].port, 2);
        // Several hosts and ports.
        let info = ok("host=a,/tmp/sock port=1,2", &env);
        assert_eq!(info.hosts[0].host, tcp("a"));
        assert_eq!(info.hosts[1].host, Some(Host::Unix("/tmp/sock".into())));
        assert_eq!(info.hosts[1].port, 2);
        // hostaddr alone.
        let info = ok("hostaddr=127.0.0.1", &env);
        assert_eq!(info.hosts[0].host, None);
        assert_eq!(info.hosts[0].tls_name(), None);
        assert_eq!(info.hosts[0].describe(), "127.0.0.1:5432");
    }

    #[test]
    fn bad_settings_are_errors_naming_the_key() {
        let env = Fake::new();
        assert!(
            err("sslmod=require", &env)
                .contains("unknown key \"sslmod\"; did you mean \"sslmode\"?")
        );
        // No guess for a key far from every key, nor for what is no key name.
        assert!(!err("zzzzzz=1", &env).contains("did you mean"));
        assert!(err("sslmode=sometimes", &env).contains("sslmode"));
        assert!(err("port=http", &env).contains("port"));
        assert!(err("host=a,b,c port=1,2", &env).contains("3 hosts"));
        assert!(err("connect_timeout=soon", &env).contains("connect_timeout"));
        assert!(err("hostaddr=nope", &env).contains("hostaddr"));
        assert!(err("sslmode=require sslrootcert=system", &env).contains("weak sslmode"));
        let e = resolve(None, &Fake::new().var("PGPORT", "x"))
            .unwrap_err()
            .0;
        assert!(e.contains("PGPORT"), "{e}");
        // A word without '=' is an error, and is not shown (it may be a password).
        let e = err("host=h hunter2", &env);
        assert!(e.contains("missing \"=\""), "{e}");
        assert!(e.contains("hunter2"), "a key name is shown: {e}");
        let e = err("host=h hunter2!x", &env);
        assert!(!e.contains("hunter2"), "{e}");
        assert!(err("password='open", &env).contains("not closed"));
    }

    #[test]
    fn the_password_never_shows_in_debug_or_errors() {
        let secret = "s3cr3t-Pa55";
        let env = Fake::new();
        for text in [
            format!("postgresql://u:{secret}@h/d"),
            format!("host=h password={secret}"),
            format!("host=h password='{secret}'"),
        ] {
            let info = ok(&text, &env);
            assert_eq!(password(&info), Some(secret));
            assert!(!format!("{info:?}").contains(secret));
            assert!(!format!("{info:#?}").contains(secret));
            assert!(format!("{info:?}").contains("<hidden>"));
            let settings = parse(&text).unwrap();
            assert!(!format!("{settings:?}").contains(secret));
        }
        // Errors in strings that hold a password name keys, not values.
        for text in [
            format!("postgresql://u:{secret}@h:notaport/d"),
            format!("postgresql://u:{secret}%@h/d"),
            format!("host=h password={secret} sslmode=bogus"),
            format!("host=h password='{secret}"),
            format!("password={secret} port=99999"),
            format!("password={secret} nosuchkey=1"),
        ] {
            let e = err(&text, &env);
            assert!(!e.contains(secret), "{e}");
        }
        let e = resolve(
            Some("host=h"),
            &Fake::new()
                .var("PGPASSWORD", secret)
                .var("PGSSLMODE", "bogus"),
        )
        .unwrap_err()
        .0;
        assert!(!e.contains(secret), "{e}");
    }

    #[test]
    fn password_file_lines_match_with_wildcards_and_escapes() {
        let text = "\
# comment line
other:5432:*:ann:wrong-host
db.example:5433:*:ann:wrong-port
db.example:*:app:*:app-db
db.example:5432:*:ann:pa\\:ss\\\\word
*:*:*:*:fallback
";
        assert_eq!(
            pgpass_lookup(text, "db.example", "5432", "app", "ann").as_deref(),
            Some("app-db")
        );
        assert_eq!(
            pgpass_lookup(text, "db.example", "5432", "other", "ann").as_deref(),
            Some(r"pa:ss\word")
        );
        assert_eq!(
            pgpass_lookup(text, "elsewhere", "1", "x", "y").as_deref(),
            Some("fallback")
        );
        // Escaped separators in matched fields, and an escaped '*' is a literal star.
        let text = "h\\:x:5432:d:u:one\n\\*:5432:d:u:two\n";
        assert_eq!(
            pgpass_lookup(text, "h:x", "5432", "d", "u").as_deref(),
            Some("one")
        );
        assert_eq!(pgpass_lookup(text, "other", "5432", "d", "u"), None);
        assert_eq!(
            pgpass_lookup(text, "*", "5432", "d", "u").as_deref(),
            Some("two")
        );
        // Short lines and CRLF.
        assert_eq!(
            pgpass_lookup("h:5432:d\r\nh:5432:d:u:pw\r\n", "h", "5432", "d", "u").as_deref(),
            Some("pw")
        );
    }

    #[test]
    fn password_file_is_used_after_the_string_and_pgpassword() {
        let pgpass = "db:5432:*:ann:from-file\nlocalhost:5432:*:ann:from-socket\n";
        let env = Fake::new().file("/home/ann/.pgpass", pgpass, 0o600);
        assert_eq!(password(&ok("host=db", &env)), Some("from-file"));
        assert_eq!(password(&ok("host=db password=given", &env)), Some("given"));
        let with_var = Fake::new()
            .file("/home/ann/.pgpass", pgpass, 0o600)
            .var("PGPASSWORD", "from-env");
        assert_eq!(password(&ok("host=db", &with_var)), Some("from-env"));
        // The default socket folder matches "localhost".
        let socket = Fake::new()
            .file("/home/ann/.pgpass", pgpass, 0o600)
            .dir(DEFAULT_SOCKET_DIR);
        assert_eq!(password(&ok("", &socket)), Some("from-socket"));
        // hostaddr alone is matched by the address; host, when given, wins.
        let env = Fake::new().file(
            "/home/ann/.pgpass",
            "10.1.1.1:5432:*:*:by-addr\nname:5432:*:*:by-name\n",
            0o600,
        );
        assert_eq!(password(&ok("hostaddr=10.1.1.1", &env)), Some("by-addr"));
        assert_eq!(
            password(&ok("host=name hostaddr=10.1.1.1", &env)),
            Some("by-name")
        );
        // passfile and PGPASSFILE choose another file, the key winning.
        let env = Fake::new()
            .file("/a", "*:*:*:*:file-a\n", 0o600)
            .file("/b", "*:*:*:*:file-b\n", 0o400)
            .var("PGPASSFILE", "/b");
        assert_eq!(password(&ok("host=h", &env)), Some("file-b"));
        assert_eq!(password(&ok("host=h passfile=/a", &env)), Some("file-a"));
    }

    #[test]
    fn a_password_file_open_to_others_is_ignored() {
        for mode in [0o644, 0o640, 0o604, 0o620, 0o660, 0o601] {
            let env = Fake::new().file("/home/ann/.pgpass", "*:*:*:*:pw\n", mode);
            assert_eq!(password(&ok("host=h", &env)), None, "mode {mode:o}");
        }
        for mode in [0o600, 0o400] {
            let env = Fake::new().file("/home/ann/.pgpass", "*:*:*:*:pw\n", mode);
            assert_eq!(password(&ok("host=h", &env)), Some("pw"), "mode {mode:o}");
        }
        // No home folder: no default password file, and no error.
        let env = Fake {
            home: None,
            ..Fake::new()
        };
        assert_eq!(password(&ok("host=h", &env)), None);
    }

    #[test]
    fn tls_files_default_to_the_home_folder_when_they_exist() {
        let env = Fake::new()
            .file("/home/ann/.postgresql/root.crt", "", 0o644)
            .file("/home/ann/.postgresql/postgresql.crt", "", 0o644);
        let info = ok("host=h", &env);
        assert!(info.sslrootcert_exists);
        assert_eq!(
            info.sslcert,
            Some("/home/ann/.postgresql/postgresql.crt".into())
        );
        assert_eq!(
            info.sslkey,
            Some("/home/ann/.postgresql/postgresql.key".into())
        );
        // Given files win; a client certificate that does not exist is skipped, as libpq does.
        let info = ok("host=h sslcert=/nope.crt sslkey=/k sslrootcert=/r", &env);
        assert_eq!(info.sslcert, None);
        assert_eq!(info.sslkey, Some("/k".into()));
        assert_eq!(info.sslrootcert, Some(RootCert::File("/r".into())));
        assert!(!info.sslrootcert_exists);
        let info = ok("host=h sslmode=verify-ca sslrootcert=system", &env);
        assert_eq!(info.sslrootcert, Some(RootCert::System));
        assert!(info.sslrootcert_exists);
    }

    // ---- connection services ----

    const USER_SERVICES: &str = "/home/ann/.pg_service.conf";
    const SYSTEM_SERVICES: &str = "/etc/postgresql-common/pg_service.conf";

    /// The per-user service file of the tests: a section before and after the one they use.
    const SERVICES: &str = "\
# services for the tests
[other]
host=otherhost

[mysvc]
host=svchost
port=6543
dbname=svcdb
user=svcuser
password=svc-secret
sslmode=require
port=1111
[after]
host=afterhost
";

    #[test]
    fn a_service_fills_what_the_string_leaves_unset_and_wins_over_the_environment() {
        let env = Fake::new()
            .file(USER_SERVICES, SERVICES, 0o644)
            .var("PGHOST", "envhost")
            .var("PGPORT", "7000")
            .var("PGUSER", "envuser")
            .var("PGDATABASE", "envdb")
            .var("PGPASSWORD", "env-pass")
            .var("PGSSLMODE", "disable")
            .var("PGAPPNAME", "envapp");
        let info = ok("service=mysvc", &env);
        assert_eq!(info.hosts[0].host, tcp("svchost"));
        // The first value of a key in the section wins, as in libpq.
        assert_eq!(info.hosts[0].port, 6543);
        assert_eq!(info.user, "svcuser");
        assert_eq!(info.dbname, "svcdb");
        assert_eq!(password(&info), Some("svc-secret"));
        assert_eq!(info.sslmode, SslMode::Require);
        // What the service does not set still comes from the environment.
        assert_eq!(info.application_name, "envapp");

        // A key in the string wins over the service's.
        let info = ok("service=mysvc port=5000 user=given sslmode=prefer", &env);
        assert_eq!(info.hosts[0].host, tcp("svchost"));
        assert_eq!(info.hosts[0].port, 5000);
        assert_eq!(info.user, "given");
        assert_eq!(info.sslmode, SslMode::Prefer);
        // Whether `service` comes before or after the keys makes no difference.
        assert_eq!(ok("port=5000 service=mysvc", &env).hosts[0].port, 5000);
        // An empty value in the string counts as not set: the service's applies.
        assert_eq!(
            ok("service=mysvc host=''", &env).hosts[0].host,
            tcp("svchost")
        );
    }

    #[test]
    fn a_key_in_the_url_wins_over_the_services() {
        let env = Fake::new().file(USER_SERVICES, SERVICES, 0o644);
        let info = ok(
            "postgresql://urlhost/urldb?service=mysvc&sslmode=disable",
            &env,
        );
        assert_eq!(info.hosts[0].host, tcp("urlhost"));
        assert_eq!(info.dbname, "urldb");
        assert_eq!(info.sslmode, SslMode::Disable);
        // What the URL leaves out comes from the service.
        assert_eq!(info.hosts[0].port, 6543);
        assert_eq!(info.user, "svcuser");
        assert_eq!(password(&info), Some("svc-secret"));
        // The service name itself may be percent-encoded, like any value.
        let env = Fake::new().file(USER_SERVICES, "[my svc]\nport=4321\n", 0o644);
        assert_eq!(
            ok("postgresql://h?service=my%20svc", &env).hosts[0].port,
            4321
        );
        assert_eq!(
            ok("postgres:///?service=my%20svc", &env).hosts[0].port,
            4321
        );
    }

    #[test]
    fn pgservice_names_the_service_unless_the_string_does() {
        let env = Fake::new()
            .file(USER_SERVICES, SERVICES, 0o644)
            .var("PGSERVICE", "mysvc")
            .var("PGHOST", "envhost");
        // No string at all (no --database-url, no DATABASE_URL): PGSERVICE alone.
        let info = resolve(None, &env).unwrap();
        assert_eq!(info.hosts[0].host, tcp("svchost"));
        assert_eq!(info.dbname, "svcdb");
        assert_eq!(ok("port=1", &env).hosts[0].host, tcp("svchost"));
        // service in the string wins over PGSERVICE; an empty one counts as not set.
        assert_eq!(ok("service=other", &env).hosts[0].host, tcp("otherhost"));
        assert_eq!(ok("service=''", &env).hosts[0].host, tcp("svchost"));
        // `other` sets no port: the default, not mysvc's (one service, never two).
        assert_eq!(ok("service=other", &env).hosts[0].port, 5432);
        // An empty PGSERVICE counts as not set.
        let env = Fake::new()
            .file(USER_SERVICES, SERVICES, 0o644)
            .var("PGSERVICE", "");
        assert_eq!(ok("", &env).hosts[0].host, tcp("localhost"));
    }

    #[test]
    fn the_user_service_file_wins_over_the_system_file_whole() {
        let system = "[mysvc]\nhost=syshost\nport=9999\n[syssvc]\nhost=sysonly\n";
        let env = Fake::new()
            .file(USER_SERVICES, "[mysvc]\nhost=userhost\n", 0o600)
            .file(SYSTEM_SERVICES, system, 0o644);
        let info = ok("service=mysvc", &env);
        assert_eq!(info.hosts[0].host, tcp("userhost"));
        // The system file's port is not merged in: the first file with the service is it.
        assert_eq!(info.hosts[0].port, 5432);
        // A service only in the system file is found there.
        assert_eq!(ok("service=syssvc", &env).hosts[0].host, tcp("sysonly"));
        // Without a per-user file, the system file alone.
        let env = Fake::new().file(SYSTEM_SERVICES, system, 0o644);
        assert_eq!(ok("service=mysvc", &env).hosts[0].port, 9999);

        // PGSERVICEFILE replaces ~/.pg_service.conf; PGSYSCONFDIR the system folder.
        let env = Fake::new()
            .file(USER_SERVICES, "[mysvc]\nhost=userhost\n", 0o600)
            .file("/srv/services.conf", "[mysvc]\nhost=named-file\n", 0o644)
            .file(
                "/opt/pg/etc/pg_service.conf",
                "[sys2]\nhost=other-etc\n",
                0o644,
            )
            .file(SYSTEM_SERVICES, system, 0o644);
        let named = env.clone_with("PGSERVICEFILE", "/srv/services.conf");
        assert_eq!(ok("service=mysvc", &named).hosts[0].host, tcp("named-file"));
        // ~/.pg_service.conf is then not read: syssvc still comes from the system file.
        assert_eq!(ok("service=syssvc", &named).hosts[0].host, tcp("sysonly"));
        let moved = env.clone_with("PGSYSCONFDIR", "/opt/pg/etc");
        assert_eq!(ok("service=sys2", &moved).hosts[0].host, tcp("other-etc"));
        assert!(err("service=syssvc", &moved).contains("/opt/pg/etc/pg_service.conf"));
        // A PGSERVICEFILE that is not there is an error, as in libpq (which does not look first).
        let missing = env.clone_with("PGSERVICEFILE", "/nope/services.conf");
        assert_eq!(
            err("service=mysvc", &missing),
            "service file \"/nope/services.conf\" not found, or not readable as UTF-8 text"
        );
    }

    #[test]
    fn an_unknown_service_is_an_error_naming_the_service_and_the_files() {
        assert_eq!(
            err("service=nosuch", &Fake::new()),
            "definition of service \"nosuch\" not found: looked in \
             /home/ann/.pg_service.conf (no such file) and \
             /etc/postgresql-common/pg_service.conf (no such file)"
        );
        let env = Fake::new().file(USER_SERVICES, SERVICES, 0o644).file(
            SYSTEM_SERVICES,
            "[syssvc]\n",
            0o644,
        );
        assert_eq!(
            err("postgresql://h/d?service=nosuch", &env),
            "definition of service \"nosuch\" not found: looked in \
             /home/ann/.pg_service.conf and /etc/postgresql-common/pg_service.conf"
        );
        // A section name is matched whole: mysvc is not mysvc2, nor [mysvc] a prefix of it.
        assert!(err("service=mysv", &env).contains("\"mysv\" not found"));
        // Named by PGSERVICE: the message says so, for the user who forgot the variable.
        let e = resolve(None, &env.clone_with("PGSERVICE", "gone"))
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("definition of service \"gone\" (from PGSERVICE) not found"),
            "{e}"
        );
        let e = resolve(
            None,
            &Fake::new()
                .var("PGSERVICE", "gone")
                .var("PGSERVICEFILE", "/srv/s.conf")
                .file("/srv/s.conf", "", 0o644),
        )
        .unwrap_err()
        .0;
        assert!(
            e.contains("looked in /srv/s.conf (PGSERVICEFILE) and"),
            "{e}"
        );
        // No home folder: said so.
        let homeless = Fake {
            home: None,
            ..Fake::new()
        };
        assert!(err("service=x", &homeless).contains("~/.pg_service.conf (no home folder)"));
    }

    #[test]
    fn a_syntax_error_in_a_service_file_names_the_file_and_the_line() {
        let with = |section: &str| {
            Fake::new().file(
                USER_SERVICES,
                &format!("# services\n[mysvc]\nhost=h\n{section}\n"),
                0o600,
            )
        };
        let prefix = "syntax error in service file \"/home/ann/.pg_service.conf\", line 4: ";
        for (line, problem) in [
            ("hots=x", "unknown key \"hots\"; did you mean \"host\"?"),
            ("justtext", "no \"=\": write key=value"),
            (
                "port = 5",
                "white space between \"port\" and \"=\" (libpq reads it as part of the key)",
            ),
            (
                "service=other",
                "nested service specifications are not supported",
            ),
            (
                "ldap://ldap.example/dc=example?uniqueMember?one?(cn=db)",
                "LDAP lookups (a line starting with \"ldap\") are not supported by plancheck",
            ),
        ] {
            assert_eq!(
                err("service=mysvc", &with(line)),
                format!("{prefix}{problem}"),
                "{line}"
            );
        }
        // A value is checked as the same value in the string is, and the error says where it is.
        assert_eq!(
            err("service=mysvc", &with("port=http")),
            "invalid port in service \"mysvc\" (/home/ann/.pg_service.conf, line 4): not a \
             port number (1 to 65535)"
        );
        assert!(err("service=mysvc", &with("sslmode=sometimes")).contains("line 4"));
        // A mistake outside the service's section is not read, as in libpq.
        let env = Fake::new().file(
            USER_SERVICES,
            "[broken]\nnonsense\n[mysvc]\nhost=h\n[later]\nhots=x\n",
            0o600,
        );
        assert_eq!(ok("service=mysvc", &env).hosts[0].host, tcp("h"));
        // The same file in the system folder is named as such.
        let env = Fake::new().file(SYSTEM_SERVICES, "[mysvc]\nhost\n", 0o644);
        assert_eq!(
            err("service=mysvc", &env),
            "syntax error in service file \"/etc/postgresql-common/pg_service.conf\", line 2: \
             no \"=\": write key=value"
        );
    }

    #[test]
    fn a_service_password_is_used_and_never_shown() {
        let secret = "s3rv1ce-Pa55";
        let env = Fake::new()
            .file(
                USER_SERVICES,
                &format!("[mysvc]\nhost=db\npassword={secret}\n"),
                0o644,
            )
            .file("/home/ann/.pgpass", "*:*:*:*:from-pgpass\n", 0o600)
            .var("PGPASSWORD", "from-env");
        let info = ok("service=mysvc", &env);
        // The service's password wins over PGPASSWORD, and the password file is not read.
        assert_eq!(password(&info), Some(secret));
        assert!(!format!("{info:?}").contains(secret));
        // The string's still wins over the service's.
        assert_eq!(
            password(&ok("service=mysvc password=given", &env)),
            Some("given")
        );
        // A service without a password: PGPASSWORD, then the password file (passfile may be
        // set by the service too).
        let env = Fake::new()
            .file(
                USER_SERVICES,
                "[a]\nhost=db\n[b]\npassfile=/srv/pass\n",
                0o644,
            )
            .file("/home/ann/.pgpass", "*:*:*:*:from-pgpass\n", 0o600)
            .file("/srv/pass", "*:*:*:*:from-service-passfile\n", 0o600);
        assert_eq!(password(&ok("service=a", &env)), Some("from-pgpass"));
        assert_eq!(
            password(&ok("service=b", &env)),
            Some("from-service-passfile")
        );
        // Errors in a section that holds a password never show it, whatever the mistake.
        for line in [
            format!("password {secret}"),
            format!("password: {secret}"),
            format!("password:{secret}=x"),
            secret.to_string(),
            format!("password={secret}\nsslmode=bogus"),
            format!("password={secret}\nport={secret}"),
            format!("password={secret}\n{}", "x".repeat(2000)),
        ] {
            let env = Fake::new().file(USER_SERVICES, &format!("[mysvc]\n{line}\n"), 0o600);
            let e = err("service=mysvc", &env);
            assert!(!e.contains(secret), "{e}");
        }
    }

    #[test]
    fn a_service_file_line_libpq_would_refuse_as_too_long_is_refused() {
        // libpq reads lines into a 1024-byte buffer: 1022 bytes and the newline do not fit.
        let long = |n: usize| {
            Fake::new().file(
                USER_SERVICES,
                &format!("[mysvc]\napplication_name={}\n", "a".repeat(n - 17)),
                0o600,
            )
        };
        assert_eq!(
            ok("service=mysvc", &long(1021)).application_name.len(),
            1004
        );
        assert_eq!(
            err("service=mysvc", &long(1022)),
            "syntax error in service file \"/home/ann/.pg_service.conf\", line 2: the line is \
             too long: libpq refuses lines of 1023 bytes or more, newline included"
        );
    }
}
