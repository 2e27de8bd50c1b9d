//! Reading a project's files, wherever they are (a folder, the binary, memory): listed with
//! their names vetted, and read as text (UTF-8, no byte-order mark, no NUL), located where not.

use std::collections::HashMap;
use std::path::Path;

use super::Source;
use super::names::{SAFE_NAME, is_safe_name};
use crate::error::{BadInput, located};
use crate::files::{self, FileError, Folder, Why};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// The byte-order mark some editors put first in a UTF-8 file. It is not part of the text: it
/// is dropped, so columns are those the editor shows.
const BOM: &[u8] = b"\xef\xbb\xbf";

impl Source {
    /// The contents of `rel` (`plans/x.sql`), or `None` when there is no such file. A file that
    /// is not UTF-8 text, or holds a NUL character, is bad input located at the offending byte.
    pub fn read(&self, rel: &str) -> Result<Option<String>, BadInput> {
        match self {
            Source::Embedded => Ok(embedded::FILES
                .iter()
                .find(|(p, _)| *p == rel)
                .map(|(_, text)| text.to_string())),
            Source::Memory(files) => match files.iter().find(|(p, _)| p == rel) {
                Some((_, bytes)) => decode(&self.display(rel), bytes.clone()).map(Some),
                None => Ok(None),
            },
            Source::Dir(dir) => {
                // The project folder as named; below it no link, only regular files, capped.
                let folder = match Folder::open(dir) {
                    Ok(folder) => folder,
                    Err(FileError {
                        why: Why::Io(e), ..
                    }) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(BadInput(e.to_string())),
                };
                let shown = |e: FileError| BadInput(format!("{}: {}", self.display(rel), e.why));
                match folder
                    .read(Path::new(rel), files::PROJECT_TEXT)
                    .map_err(shown)?
                {
                    Some(bytes) => decode(&self.display(rel), bytes).map(Some),
                    None => Ok(None),
                }
            }
        }
    }

    /// The names of the entries of folder `dir`, not recursing. A name that is not UTF-8 is
    /// given lossily, as an `Err`.
    pub(super) fn entries(&self, dir: &str) -> Result<Vec<Result<String, String>>, BadInput> {
        let prefix = format!("{dir}/");
        let in_dir = |p: &str| {
            p.strip_prefix(&prefix)
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .map(|n| Ok(n.to_owned()))
        };
        Ok(match self {
            Source::Embedded => embedded::FILES
                .iter()
                .filter_map(|(p, _)| in_dir(p))
                .collect(),
            Source::Memory(files) => files.iter().filter_map(|(p, _)| in_dir(p)).collect(),
            Source::Dir(root) => {
                let listed = Folder::open(root).and_then(|f| f.names(Path::new(dir)));
                let entries = listed.map_err(|e| match e.why {
                    Why::Io(e) if e.kind() == std::io::ErrorKind::NotFound => BadInput(format!(
                        "{}: {e} (is this a plancheck project? it needs plans/ and expectations/; \
                         use --project DIR)",
                        self.display(dir)
                    )),
                    why => BadInput(format!("{}: {why}", self.display(dir))),
                })?;
                entries
                    .into_iter()
                    .map(|name| {
                        name.into_string()
                            .map_err(|raw| raw.to_string_lossy().into_owned())
                    })
                    .collect()
            }
        })
    }

    /// Names (without extension) of the files in `dir` ending in `.ext`, sorted. Hidden files
    /// are skipped. A file whose extension differs only in case (`x.TOML`), and two names that
    /// differ only in case (one file on macOS and Windows), are bad input: either would leave a
    /// read path silently unchecked somewhere.
    pub fn list(&self, dir: &str, ext: &str) -> Result<Vec<String>, BadInput> {
        let suffix = format!(".{ext}");
        let mut names: Vec<String> = Vec::new();
        for name in self.entries(dir)? {
            let is_ours = |n: &str| {
                n.len() > suffix.len()
                    && n.is_char_boundary(n.len() - suffix.len())
                    && n[n.len() - suffix.len()..].eq_ignore_ascii_case(&suffix)
            };
            let name = match name {
                Ok(name) => name,
                Err(lossy) if !lossy.starts_with('.') && is_ours(&lossy) => {
                    return Err(BadInput(format!(
                        "{}: the file name is not UTF-8; rename the file",
                        self.display(&format!("{dir}/{lossy}"))
                    )));
                }
                Err(_) => continue,
            };
            let rel = format!("{dir}/{name}");
            if name.starts_with('.') {
                // A hidden `.x.toml` / `..x.sql` would be a read path silently left unchecked
                // (or a name that steers a path); other hidden files (.gitkeep) are not ours.
                if is_ours(&name) {
                    return Err(BadInput(format!(
                        "{:?}: not read: a read path's name starts with a letter or digit \
                         ({SAFE_NAME}); rename the file",
                        self.display(&rel)
                    )));
                }
                continue;
            }
            if let Some(stem) = name.strip_suffix(&suffix) {
                if !is_safe_name(stem) {
                    return Err(BadInput(format!(
                        "{:?}: {:?} is not a read path's name: {SAFE_NAME}; rename the file",
                        self.display(&rel),
                        stem
                    )));
                }
                names.push(stem.to_owned());
            } else if is_ours(&name) {
                return Err(BadInput(format!(
                    "{}: not read: the extension must be `{suffix}`, in lower case; rename the file",
                    self.display(&rel)
                )));
            }
        }
        names.sort();
        let mut seen: HashMap<String, &String> = HashMap::new();
        for name in &names {
            if let Some(other) = seen.insert(name.to_lowercase(), name) {
                return Err(BadInput(format!(
                    "{} and {}: two read paths whose names differ only in case; on macOS and \
                     Windows they are one file, and one of them would go unchecked: rename one",
                    self.display(&format!("{dir}/{other}{suffix}")),
                    self.display(&format!("{dir}/{name}{suffix}")),
                )));
            }
        }
        Ok(names)
    }

    /// The entries of `dir` that are not hidden and do not end in `.ext` (in any case), shown as
    /// the user sees them: files a project holds that plancheck does not read.
    pub fn strays(&self, dir: &str, ext: &str) -> Result<Vec<String>, BadInput> {
        let suffix = format!(".{ext}");
        let mut out: Vec<String> = self
            .entries(dir)?
            .into_iter()
            .map(|name| name.unwrap_or_else(|lossy| lossy))
            .filter(|name| !name.starts_with('.'))
            .filter(|name| !name.to_ascii_lowercase().ends_with(&suffix))
            .map(|name| self.display(&format!("{dir}/{name}")))
            .collect();
        out.sort();
        Ok(out)
    }

    /// A path as the user should see it in a message.
    pub fn display(&self, rel: &str) -> String {
        match self {
            Source::Embedded => format!("(reference project) {rel}"),
            Source::Memory(_) => rel.to_string(),
            Source::Dir(dir) if dir == Path::new(".") => rel.to_string(),
            Source::Dir(dir) => dir.join(rel).display().to_string(),
        }
    }
}

/// A file's bytes as text: UTF-8, without a byte-order mark, without NUL characters.
fn decode(path: &str, mut bytes: Vec<u8>) -> Result<String, BadInput> {
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    match String::from_utf8(bytes) {
        Ok(text) => match text.find('\0') {
            Some(at) => Err(BadInput(located(
                path,
                &text,
                at,
                "a NUL character (byte 0x00): a text file never holds one; is this file binary, or \
                 saved as UTF-16? save it as UTF-8 text",
            ))),
            None => Ok(text),
        },
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let byte = bytes[at];
            let utf16 = bytes.starts_with(b"\xff\xfe") || bytes.starts_with(b"\xfe\xff");
            let text = String::from_utf8_lossy(&bytes);
            Err(BadInput(located(
                path,
                &text,
                at,
                &format!(
                    "not UTF-8 text: byte 0x{byte:02X} at offset {at} is not part of a UTF-8 \
                     character{}; save the file as UTF-8",
                    if utf16 {
                        " (the file starts with a UTF-16 byte-order mark)"
                    } else {
                        ""
                    }
                ),
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::{Filter, load};
    use super::*;

    #[test]
    fn crlf_and_a_byte_order_mark_are_read_as_plain_text() {
        let source = Source::Memory(vec![
            (
                "expectations/path.toml".into(),
                b"\xef\xbb\xbfparams = [1]\r\n[scopes.member]\r\nindex = \"i\"\r\n".to_vec(),
            ),
            (
                "plans/path.sql".into(),
                b"\xef\xbb\xbfSELECT $1\r\nWHERE {{vis}}\r\n".to_vec(),
            ),
            (
                "plancheck.toml".into(),
                PROJECT.replace('\n', "\r\n").into(),
            ),
        ]);
        let p = load(&source, &Filter::default()).unwrap();
        assert!(
            p.read_paths[0].checks[0]
                .sql
                .text
                .starts_with("SELECT $1\r\n")
        );
        // An error on the first line of a file with a byte-order mark: the column the editor shows.
        let source = Source::Memory(vec![(
            "expectations/path.toml".into(),
            b"\xef\xbb\xbfparams = \"1\"\n".to_vec(),
        )]);
        let e = load(&source, &Filter::default()).unwrap_err().0;
        assert!(
            e.starts_with("expectations/path.toml:1:10: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn bytes_that_are_not_text_are_located() {
        let e = decode("plans/x.sql", b"SELECT 1\nWHERE \xe9t\xe9".to_vec())
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("plans/x.sql:2:7: not UTF-8 text: byte 0xE9"),
            "{e}"
        );
        let e = decode("plans/x.sql", b"SELECT 1\0".to_vec()).unwrap_err().0;
        assert!(e.starts_with("plans/x.sql:1:9: a NUL character"), "{e}");
        let e = decode("x.toml", b"\xff\xfe[\0".to_vec()).unwrap_err().0;
        assert!(e.contains("UTF-16"), "{e}");
        assert_eq!(decode("x", b"\xef\xbb\xbfok".to_vec()).unwrap(), "ok");
    }

    #[test]
    fn a_project_file_that_is_a_link_is_refused_naming_it_without_its_text() {
        let root = tempfile::tempdir().unwrap();
        let secret = root.path().join("pgpass");
        std::fs::write(&secret, "localhost:5432:*:u:s3cret-pw-9f1\n").unwrap();
        let project = root.path().join("project");
        std::fs::create_dir_all(project.join("plans")).unwrap();
        std::os::unix::fs::symlink(&secret, project.join("plans/x.sql")).unwrap();
        std::os::unix::fs::symlink(root.path(), project.join("expectations")).unwrap();
        let source = Source::Dir(project.clone());
        let e = source.read("plans/x.sql").unwrap_err().0;
        assert!(
            e.contains("plans/x.sql") && e.contains("symbolic link"),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
        let e = source.list("expectations", "toml").unwrap_err().0;
        assert!(
            e.contains("expectations") && e.contains("symbolic link"),
            "{e}"
        );
        assert_eq!(source.read("plans/none.sql").unwrap(), None);
    }

    #[test]
    fn names_that_differ_only_in_case_and_capital_extensions_are_refused() {
        let file = |p: &str| (p.to_string(), b"[scopes.member]\nindex = \"i\"\n".to_vec());
        let source = Source::Memory(vec![
            file("expectations/a.toml"),
            file("expectations/A.toml"),
        ]);
        let e = load(&source, &Filter::default()).unwrap_err().0;
        assert!(e.contains("differ only in case"), "{e}");
        let source = Source::Memory(vec![
            file("expectations/a.toml"),
            file("expectations/b.TOML"),
        ]);
        let e = load(&source, &Filter::default()).unwrap_err().0;
        assert!(e.starts_with("expectations/b.TOML: not read"), "{e}");
    }
}
