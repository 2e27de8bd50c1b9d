//! What plancheck must never print or write, and the one step every text it prints or writes
//! passes through to hide it: [`redact`].
//!
//! plancheck quotes servers: their errors (message and DETAIL), plans (a Filter quotes the
//! read path's literals), index definitions and predicates, setting values. A catalog can be
//! made to hold anything, a secret plancheck holds among it, and a server's words then carry it
//! into the table, the JSON, the JUnit and Markdown reports, the annotations in a CI log, the
//! job summary, the saved measurements. So the secrets are known once, at the start, and hidden
//! where text leaves the process, whatever put them there:
//!
//! - stdout: `app::write_stdout`, the one writer of results;
//! - stderr: `term::say!` and `term::say_part!`, the one writer of messages and progress;
//! - files: `files` (`--report` files, the job summary, `--save-plans`, baselines, the files
//!   `capture` and `init` write), the one writer of files.
//!
//! ## The secrets
//!
//! - The connection's: the password of each server it may use (from the connection string,
//!   `PGPASSWORD`, the connection service file or the password file), the connection string as
//!   given when it holds one (`--database-url`, `DATABASE_URL`), and the password as written in
//!   it (percent-encoded in a URL).
//! - The environment's credentials: the value of every variable whose name says it holds one
//!   ([`CREDENTIAL_NAMES`]: `PGPASSWORD`, `GITHUB_TOKEN`, `ACTIONS_RUNTIME_TOKEN`,
//!   `AWS_SECRET_ACCESS_KEY`, `NPM_TOKEN`, …), and the password (and the whole value) of every
//!   variable whose value is a URL with one (`REDIS_URL=redis://:pw@host`). A CI step's
//!   environment holds such tokens; GitHub hides its registered secrets in its log, but not in
//!   the files a run leaves as artifacts (reports, saved measurements), nor a token it does not
//!   know of.
//!
//! ## As each format writes them
//!
//! A secret is found as each output writes text: as it is; with a backslash before a
//! punctuation mark (Markdown's escape, JSON's `\"` and `\\`); with its quotes doubled (a
//! literal as the server quotes it in a plan or an index definition); as XML's entities
//! (`&quot;`, `&amp;`, …); as GitHub's workflow commands escape (`%25`, `%3A`, `%2C`, `%0A`);
//! and a space in it as any run of spaces and line breaks (the table wraps long lines at
//! spaces). What is found is replaced by [`REDACTED`].
//!
//! ## Too short to hide
//!
//! A secret of fewer than [`SHORTEST`] characters is not hidden: replacing every `pass` or
//! `1234` in a report would garble it, and would show the secret all the same by what it
//! blanks. plancheck says so on stderr when the connection's password is that short (without
//! showing it), so that CI can be given a longer one.
//!
//! ## What this does not do
//!
//! A server that runs code an attacker wrote can transform a secret (reverse it, encode it)
//! before quoting it: no redaction finds that. Redaction is the second line; the first is that
//! no server plancheck runs a project's code on can read plancheck's environment or files.

use std::borrow::Cow;
use std::sync::RwLock;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The fewest characters a secret must have to be hidden (see the module's "Too short").
pub const SHORTEST: usize = 8;

/// Words in an environment variable's name that say its value is a credential.
pub const CREDENTIAL_NAMES: &[&str] = &[
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "SECRET",
    "TOKEN",
    "CREDENTIAL",
    "PRIVATE_KEY",
    "API_KEY",
    "ACCESS_KEY",
];

/// Every secret kept, as a pattern.
static KEPT: RwLock<Vec<Pattern>> = RwLock::new(Vec::new());

/// Whether a secret was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    Yes,
    /// Shorter than [`SHORTEST`]: not hidden.
    TooShort,
    /// Empty, or only spaces: nothing to hide.
    Nothing,
}

/// Hides `secret` in every text written from now on.
pub fn keep(secret: &str) -> Kept {
    let trimmed = secret.trim();
    if trimmed.is_empty() {
        return Kept::Nothing;
    }
    if trimmed.chars().count() < SHORTEST {
        return Kept::TooShort;
    }
    let mut kept = KEPT.write().unwrap_or_else(|e| e.into_inner());
    if !kept.iter().any(|p| p.secret == trimmed) {
        kept.push(Pattern::of(trimmed));
    }
    Kept::Yes
}

/// Keeps the credentials of the process's environment ([`environment_secrets`]).
pub fn keep_environment() {
    let vars = std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    });
    for secret in environment_secrets(vars) {
        keep(&secret);
    }
}

/// The credentials among environment variables: the value of each whose name holds a word of
/// [`CREDENTIAL_NAMES`], and of each whose value is a URL holding a password, that value and
/// the password (as written, and percent-decoded).
pub fn environment_secrets(vars: impl IntoIterator<Item = (String, String)>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in vars {
        let upper = name.to_ascii_uppercase();
        if CREDENTIAL_NAMES.iter().any(|w| upper.contains(w)) {
            out.push(value.clone());
        }
        if let Some(written) = url_password(&value) {
            out.push(percent_decoded(written));
            out.push(written.to_string());
            out.push(value);
        }
    }
    out
}

/// The password of a URL (`scheme://user:password@host…`) as written in it, when it has one.
pub fn url_password(text: &str) -> Option<&str> {
    let (scheme, rest) = text.trim().split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // The last '@': a password with an unencoded '@' still counts, as libpq reads it.
    let userinfo = &authority[..authority.rfind('@')?];
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// `%XX` decoded (a malformed escape kept as written).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with every kept secret replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    match redact_bytes(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        // Whole UTF-8 sequences are replaced by ASCII, and a secret is whole characters.
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

/// `bytes` with every kept secret replaced by [`REDACTED`].
pub fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    let kept = KEPT.read().unwrap_or_else(|e| e.into_inner());
    redact_with(&kept, bytes)
}

fn redact_with<'a>(patterns: &[Pattern], bytes: &'a [u8]) -> Cow<'a, [u8]> {
    let mut found: Vec<(usize, usize)> = Vec::new();
    for p in patterns {
        p.find_all(bytes, &mut found);
    }
    if found.is_empty() {
        return Cow::Borrowed(bytes);
    }
    found.sort_unstable();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for (start, end) in found {
        if start < at {
            // Inside what was hidden already (a secret that holds another): hidden with it.
            at = at.max(end);
            continue;
        }
        out.extend_from_slice(&bytes[at..start]);
        out.extend_from_slice(REDACTED.as_bytes());
        at = end;
    }
    out.extend_from_slice(&bytes[at..]);
    Cow::Owned(out)
}

/// One byte of a secret, or a run of spaces in it.
#[derive(Debug)]
enum Element {
    /// The ways this byte may be written, longest first.
    Byte(Vec<Vec<u8>>),
    /// One or more spaces or line breaks, written as any run of them.
    Space,
}

/// A secret, as the outputs may write it.
#[derive(Debug)]
struct Pattern {
    secret: String,
    elements: Vec<Element>,
    /// The bytes a match may start with.
    starts: [bool; 256],
}

/// How a run of spaces may be written: itself, JSON's escapes, GitHub's.
const SPACES: &[&[u8]] = &[
    b" ", b"\t", b"\n", b"\r", b"\\n", b"\\r", b"\\t", b"%0A", b"%0D",
];

/// The ways one byte of a secret may be written by the server (as it is; a quote doubled in a
/// literal) and then by an output format.
fn writings(b: u8) -> Vec<Vec<u8>> {
    let mut bases = vec![vec![b]];
    if b == b'\'' {
        bases.push(vec![b, b]);
    }
    let mut out: Vec<Vec<u8>> = Vec::new();
    for base in &bases {
        for format in FORMATS {
            let written: Vec<u8> = base.iter().flat_map(|&b| format(b)).collect();
            if !out.contains(&written) {
                out.push(written);
            }
        }
    }
    out.sort_by_key(|w| std::cmp::Reverse(w.len()));
    out
}

/// Each output's escape of one byte.
const FORMATS: &[fn(u8) -> Vec<u8>] = &[
    |b| vec![b],
    // Markdown: a backslash before punctuation; `@` followed by a word joiner.
    |b| match b {
        b'@' => "\\@\u{2060}".as_bytes().to_vec(),
        b if b.is_ascii_punctuation() => vec![b'\\', b],
        b if b.is_ascii_control() => vec![b' '],
        b => vec![b],
    },
    |b| match b {
        b'@' => "@\u{2060}".as_bytes().to_vec(),
        b => vec![b],
    },
    // JSON strings.
    |b| match b {
        b'"' => b"\\\"".to_vec(),
        b'\\' => b"\\\\".to_vec(),
        b'\n' => b"\\n".to_vec(),
        b'\r' => b"\\r".to_vec(),
        b'\t' => b"\\t".to_vec(),
        0x08 => b"\\b".to_vec(),
        0x0c => b"\\f".to_vec(),
        b if b < 0x20 => format!("\\u{b:04x}").into_bytes(),
        b => vec![b],
    },
    // XML.
    |b| match b {
        b'&' => b"&amp;".to_vec(),
        b'<' => b"&lt;".to_vec(),
        b'>' => b"&gt;".to_vec(),
        b'"' => b"&quot;".to_vec(),
        b'\'' => b"&apos;".to_vec(),
        b => vec![b],
    },
    // GitHub's workflow commands: a message's escapes, and a property's.
    |b| match b {
        b'%' => b"%25".to_vec(),
        b'\r' => b"%0D".to_vec(),
        b'\n' => b"%0A".to_vec(),
        b':' => b"%3A".to_vec(),
        b',' => b"%2C".to_vec(),
        b => vec![b],
    },
];

impl Pattern {
    fn of(secret: &str) -> Pattern {
        let mut elements = Vec::new();
        for &b in secret.as_bytes() {
            if b.is_ascii_whitespace() {
                if !matches!(elements.last(), Some(Element::Space)) {
                    elements.push(Element::Space);
                }
            } else {
                elements.push(Element::Byte(writings(b)));
            }
        }
        let mut starts = [false; 256];
        if let Some(Element::Byte(ways)) = elements.first() {
            for way in ways {
                starts[usize::from(way[0])] = true;
            }
        }
        Pattern {
            secret: secret.to_string(),
            elements,
            starts,
        }
    }

    /// Adds where the secret is written in `text` (start, end) to `found`.
    fn find_all(&self, text: &[u8], found: &mut Vec<(usize, usize)>) {
        let mut at = 0;
        while at < text.len() {
            if !self.starts[usize::from(text[at])] {
                at += 1;
                continue;
            }
            match self.match_at(text, at) {
                Some(end) => {
                    // A match right after an escape's backslash (JSON's `\n` before a secret
                    // that starts with `n`) takes the backslash too, so none is left dangling.
                    let backslashes = text[..at].iter().rev().take_while(|&&b| b == b'\\');
                    let start = if backslashes.count() % 2 == 1 {
                        at - 1
                    } else {
                        at
                    };
                    found.push((start, end));
                    at = end;
                }
                None => at += 1,
            }
        }
    }

    /// The end of the secret written from `start`, if it is.
    fn match_at(&self, text: &[u8], start: usize) -> Option<usize> {
        // Backtracking over the ways each byte may be written: for each element matched so
        // far (and the one being tried), where it starts and the next way of writing it to try.
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        loop {
            let element = stack.len() - 1;
            let Some(e) = self.elements.get(element) else {
                return Some(stack[element].0);
            };
            let (pos, way) = stack[element];
            let next = match e {
                Element::Byte(ways) => ways
                    .iter()
                    .enumerate()
                    .skip(way)
                    .find(|(_, w)| text[pos..].starts_with(w))
                    .map(|(i, w)| (i + 1, pos + w.len())),
                Element::Space if way == 0 => {
                    let mut end = pos;
                    while let Some(w) = SPACES.iter().find(|w| text[end..].starts_with(w)) {
                        end += w.len();
                    }
                    (end > pos).then_some((1, end))
                }
                Element::Space => None,
            };
            match next {
                Some((tried, end)) => {
                    stack[element].1 = tried;
                    stack.push((end, 0));
                }
                None => {
                    // No way left for this element: the one before is tried its next way.
                    stack.pop();
                    if stack.is_empty() {
                        return None;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(secrets: &[&str], text: &str) -> String {
        let patterns: Vec<Pattern> = secrets.iter().map(|s| Pattern::of(s)).collect();
        String::from_utf8(redact_with(&patterns, text.as_bytes()).into_owned()).unwrap()
    }

    const PW: &str = "Pl@n:ck'S3cr\"et,7%81";

    #[test]
    fn a_secret_is_found_as_each_format_writes_it() {
        let json = serde_json::to_string(&format!("error: {PW}.")).unwrap();
        assert_eq!(hidden(&[PW], &json), "\"error: [redacted].\"");
        // The server's quoting of a literal, then JSON's.
        let literal = format!("(body <> '{}'::text)", PW.replace('\'', "''"));
        let json = serde_json::to_string(&literal).unwrap();
        assert_eq!(hidden(&[PW], &json), "\"(body <> '[redacted]'::text)\"");
        // XML, as quick-junit escapes an attribute.
        let xml = "message=\"Pl@n:ck&apos;S3cr&quot;et,7%81\"";
        assert_eq!(hidden(&[PW], xml), "message=\"[redacted]\"");
        // Markdown's escapes.
        let md = "a \\Pl\\@\u{2060}n\\:ck'S3cr\"et,7%81 b";
        assert_eq!(hidden(&[PW], md), "a [redacted] b");
        // GitHub's property escapes.
        let gh = "title=Pl@n%3Ack'S3cr\"et%2C7%2581";
        assert_eq!(hidden(&[PW], gh), "title=[redacted]");
        // Plain, twice, and beside another secret that holds it.
        let url = "postgresql://u:Pl%40n%3Ack%27S3cr%22et%2C7%2581@/db";
        assert_eq!(
            hidden(&[PW, url], &format!("{PW} then {url} then {PW}")),
            "[redacted] then [redacted] then [redacted]"
        );
        // Nothing else is touched.
        assert_eq!(hidden(&[PW], "Pl@n:ck'S3cr"), "Pl@n:ck'S3cr");
    }

    #[test]
    fn a_secret_with_spaces_is_found_across_a_wrapped_line() {
        let secret = "correct horse battery staple";
        assert_eq!(
            hidden(&[secret], "why: correct horse\n           battery staple."),
            "why: [redacted]."
        );
    }

    #[test]
    fn no_backslash_of_an_escape_is_left_dangling() {
        let secret = "nopassword-here";
        let json = serde_json::to_string("a\nopassword-here").unwrap();
        let out = hidden(&[secret], &json);
        assert!(serde_json::from_str::<String>(&out).is_ok(), "{out}");
    }

    #[test]
    fn short_and_empty_secrets_are_not_kept() {
        assert_eq!(keep("pass"), Kept::TooShort);
        assert_eq!(keep("  "), Kept::Nothing);
    }

    #[test]
    fn the_environment_s_credentials_are_the_named_ones_and_url_passwords() {
        let vars = [
            ("GITHUB_TOKEN", "ghs_abcdefghij"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
            ("PGPASSWORD", "env-password-1"),
            ("DATABASE_URL", "postgres://ci:p%40ss-word-9@db/app"),
            ("HOME", "/home/runner"),
            ("GITHUB_REPOSITORY", "owner/repo"),
            ("PLAIN_URL", "https://example.com/x"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let found = environment_secrets(vars);
        assert_eq!(
            found,
            [
                "ghs_abcdefghij",
                "wJalrXUtnFEMI",
                "env-password-1",
                "p@ss-word-9",
                "p%40ss-word-9",
                "postgres://ci:p%40ss-word-9@db/app",
            ]
        );
        assert_eq!(url_password("postgres://u@h/db"), None);
        assert_eq!(url_password("postgres://u:@h/db"), None);
        assert_eq!(url_password("postgres://u:a@b@h/db"), Some("a@b"));
        assert_eq!(url_password("host=h password=x"), None);
    }
}
