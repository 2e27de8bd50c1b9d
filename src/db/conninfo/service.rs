//! Connection services: a `service=NAME` (or `PGSERVICE`) stands for the settings under
//! `[NAME]` in a connection service file, found and read as libpq reads it
//! (`parseServiceInfo` and `parseServiceFile` in libpq's `fe-connect.c`).
//!
//! ## Which file
//!
//! The per-user file is `PGSERVICEFILE` if set (it must then exist), else `~/.pg_service.conf`
//! if it exists; the system file is `pg_service.conf` in `PGSYSCONFDIR`, else in libpq's
//! compiled-in folder ([`DEFAULT_SYSCONFDIR`]), if it exists. The first file with a `[NAME]`
//! section is the service, whole: nothing is merged from the other file.
//!
//! ## What a file holds
//!
//! Read line by line as libpq reads it: surrounding white space is dropped; empty lines and lines
//! starting with `#` are skipped; a line starting with `[NAME]` opens the section (anything after
//! the `]` is ignored), the next `[` line closes it. Inside it every line is `key=value`, the key
//! everything before the first `=` (so `host = x` is the key `"host "`: an error, as in libpq)
//! and the value everything after it, with no quotes and no escapes. A key may appear more than
//! once: the first value wins. Lines outside the section are not read, so a mistake elsewhere in
//! the file does not matter, as in libpq. `service` inside a section, a line without `=`, an
//! unknown key, or a line of 1023 bytes or more (libpq reads lines into a 1024-byte buffer and
//! refuses longer ones, wherever they are until the section ends) is an error naming the file and
//! the line. The line itself is never shown: it may hold a password.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Environment, Settings, canonical, shown_key};
use crate::error::BadInput;
use crate::report::connect::conninfo as words;

/// libpq's compiled-in `SYSCONFDIR` on Debian (`pg_config --sysconfdir`), where the system-wide
/// `pg_service.conf` is looked for when `PGSYSCONFDIR` is not set.
pub const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// libpq's `char buf[1024]` in `parseServiceFile`: a line (with its newline) that fills the
/// buffer, 1023 bytes or more, is "too long".
const MAX_LINE: usize = 1023;

/// Where the service's name came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// `service=` in the connection string or URL.
    Given,
    /// The `PGSERVICE` environment variable.
    Env,
}

/// One service's settings, as its section in a service file gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub name: String,
    pub file: PathBuf,
    /// `Debug` hides the password.
    settings: Settings,
    lines: BTreeMap<&'static str, usize>,
}

impl Service {
    /// The value of `key` in the section and its line; an empty value counts as not set.
    pub fn get(&self, key: &str) -> Option<(&str, usize)> {
        let value = self.settings.get(key).filter(|v| !v.is_empty())?;
        Some((value, self.lines.get(key).copied().unwrap_or(0)))
    }

    /// `service "NAME" (FILE, line N)`, for errors about a value of the service.
    pub fn at(&self, line: usize) -> String {
        words::service_at(&self.name, &self.file, line)
    }
}

/// Finds the service in the per-user file, then the system file, as libpq's
/// `parseServiceInfo` does. A service that is in neither is an error naming both files.
pub fn find(name: &str, named: Named, env: &dyn Environment) -> Result<Service, BadInput> {
    let var = |name: &str| env.var(name).filter(|v| !v.is_empty());
    // Each file looked in, with why it was not read when it was not, for the final error.
    let mut searched: Vec<String> = Vec::new();

    match var("PGSERVICEFILE") {
        // libpq opens PGSERVICEFILE without looking first: a missing file is an error.
        Some(path) => {
            let path = PathBuf::from(path);
            if let Some(service) = read_file(&path, name, env)? {
                return Ok(service);
            }
            searched.push(format!("{} (PGSERVICEFILE)", path.display()));
        }
        None => match env.home_dir().map(|h| h.join(".pg_service.conf")) {
            Some(path) if env.metadata(&path).is_some() => {
                if let Some(service) = read_file(&path, name, env)? {
                    return Ok(service);
                }
                searched.push(path.display().to_string());
            }
            Some(path) => searched.push(format!("{} (no such file)", path.display())),
            None => searched.push("~/.pg_service.conf (no home folder)".into()),
        },
    }

    let folder = var("PGSYSCONFDIR").unwrap_or_else(|| DEFAULT_SYSCONFDIR.into());
    let system = Path::new(&folder).join("pg_service.conf");
    if env.metadata(&system).is_some() {
        if let Some(service) = read_file(&system, name, env)? {
            return Ok(service);
        }
        searched.push(system.display().to_string());
    } else {
        searched.push(words::no_such_file(&system));
    }

    let from = matches!(named, Named::Env);
    Err(BadInput(words::service_not_found(name, from, &searched)))
}

/// The service's section of one file, `None` when the file has none. A file that is there but
/// cannot be read is an error, as libpq's failed `fopen` is; a folder reads as empty, as libpq's
/// `fgets` on one does.
fn read_file(path: &Path, name: &str, env: &dyn Environment) -> Result<Option<Service>, BadInput> {
    if env.metadata(path).is_some_and(|m| m.is_dir) {
        return Ok(None);
    }
    let text = env
        .read_to_string(path)
        .ok_or_else(|| BadInput(words::unreadable_service_file(path)))?;
    let section = section(&text, name)
        .map_err(|(line, problem)| BadInput(words::service_syntax(path, line, &problem)))?;
    Ok(section.map(|(settings, lines)| Service {
        name: name.to_string(),
        file: path.to_path_buf(),
        settings,
        lines,
    }))
}

type Section = (Settings, BTreeMap<&'static str, usize>);

/// The settings of the `[name]` section of a service file's text, with the line of each; `None`
/// when the file has no such section. An error is the line number and what is wrong with it,
/// never its text.
// Long because it is libpq's parseServiceFile, one rule after another, in its order.
pub fn section(text: &str, name: &str) -> Result<Option<Section>, (usize, String)> {
    let mut found: Option<Section> = None;
    for (index, raw) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        if raw.len() >= MAX_LINE {
            return Err((number, words::line_too_long(MAX_LINE)));
        }
        // C's isspace in the C locale, as libpq trims.
        let line = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'));
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            if found.is_some() {
                // The next section header ends the service's section.
                break;
            }
            // As libpq's strncmp: `[name]` at the start; anything after `]` is ignored.
            let opens = header
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(']'));
            if opens {
                found = Some(Section::default());
            }
            continue;
        }
        let Some((settings, lines)) = found.as_mut() else {
            continue;
        };
        if line.starts_with("ldap") {
            return Err((number, words::NO_LDAP.into()));
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err((number, words::NO_EQUALS.into()));
        };
        if key == "service" {
            return Err((number, words::NO_NESTING.into()));
        }
        if key != key.trim_end() && canonical(key.trim_end()).is_ok() {
            return Err((
                number,
                words::space_before_equals(&shown_key(key.trim_end())),
            ));
        }
        let key = canonical(key).map_err(|e| (number, e))?;
        // As libpq: "don't override any previous explicit setting".
        if settings.get(key).is_none() {
            settings.0.insert(key, value.to_string());
            lines.insert(key, number);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section's settings as (key, value, line), failing loudly when there is none.
    fn read(text: &str, name: &str) -> Vec<(String, String, usize)> {
        let (settings, lines) = section(text, name)
            .unwrap_or_else(|(line, e)| panic!("line {line}: {e}"))
            .unwrap_or_else(|| panic!("no [{name}]"));
        settings
            .0
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone(), lines[k]))
            .collect()
    }

    fn entry(key: &str, value: &str, line: usize) -> (String, String, usize) {
        (key.into(), value.into(), line)
    }

    #[test]
    fn a_section_is_read_as_libpq_reads_it() {
        // Lines before any header are not read; a header may be indented and followed by text;
        // CRLF and surrounding white space are dropped; comments and empty lines are skipped,
        // inside the section too; the first value of a key wins; the next header ends it.
        let text = "host=/before\n  [a] the first one\r\n  port=11 \r\n# c\n\nport=12\n\
                    dbname=x=y\n[b]\nport=21\n[a]\nport=13\n";
        assert_eq!(
            read(text, "a"),
            [entry("dbname", "x=y", 7), entry("port", "11", 3)]
        );
        assert_eq!(read(text, "b"), [entry("port", "21", 9)]);
        // A section name is matched whole, and case matters.
        assert_eq!(section(text, "A"), Ok(None));
        assert_eq!(section("[ab]\nport=1\n", "a"), Ok(None));
        assert_eq!(section("[a\nport=1\n", "a"), Ok(None));
        // No quotes and no escapes: the value is the text after the first '='.
        assert_eq!(
            read("[s]\npassword='it\\'s'\n", "s"),
            [entry("password", "'it\\'s'", 2)]
        );
        // An empty section is still found; an empty value is kept (the caller skips it).
        assert_eq!(read("[s]\n[t]\n", "s"), []);
        assert_eq!(read("[s]\nhost=\n", "s"), [entry("host", "", 2)]);
        // The last line needs no newline.
        assert_eq!(read("[s]\nport=1", "s"), [entry("port", "1", 2)]);
    }

    #[test]
    fn only_the_services_section_can_be_wrong() {
        let text = "[broken]\nnonsense\nhots=1\nservice=x\n[s]\nport=1\n[later]\nnonsense\n";
        assert_eq!(read(text, "s"), [entry("port", "1", 6)]);
        assert_eq!(
            section(text, "broken"),
            Err((2, "no \"=\": write key=value".into()))
        );
        assert_eq!(section(text, "later").unwrap_err().0, 8);
        // A line too long for libpq's buffer is refused wherever it is until the section ends,
        // as libpq checks every line it reads.
        let long = format!("# {}\n[s]\nport=1\n", "x".repeat(1100));
        assert_eq!(section(&long, "s").unwrap_err().0, 1);
        let after = format!("[s]\nport=1\n[t]\n# {}\n", "x".repeat(1100));
        assert_eq!(read(&after, "s"), [entry("port", "1", 2)]);
    }
}
