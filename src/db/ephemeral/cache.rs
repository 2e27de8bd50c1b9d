//! The loaded reference board, kept between demos: the data folder of a stopped throwaway server
//! right after the board was loaded, under the user's cache folder, so that the next demo copies
//! it and starts the server on it instead of running `initdb` and the load (seconds) again.
//!
//! An entry is named by a hash of everything that decides what the folder holds: the fixture
//! SQL built into this binary, the scale, the server's `postgres --version`, the `initdb`
//! options and plancheck's version. Its `manifest` repeats that text (a hash collision cannot
//! pass for a hit) and lists every folder and every file with its size, so that a missing or
//! truncated file is found before a server runs on it. A folder that does not match its
//! manifest is not an error for the demo: the caller builds the board again and replaces it.
//!
//! Entries are written to a temporary name and renamed into place, so a reader sees a whole
//! entry or none.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::project::Source;

/// Bumped when the layout of an entry changes.
const FORMAT: &str = "plancheck board cache 1";

/// The files `db::fixtures::load` runs (its `FILES`): what the board is made of.
const FIXTURE_FILES: [&str; 3] = [
    "fixtures/schema.sql",
    "fixtures/load.sql",
    "fixtures/indexes.sql",
];

/// The data folder inside an entry.
const DATA: &str = "data";
/// The list of what an entry holds, written last.
const MANIFEST: &str = "manifest";

/// One cache entry: where it is and the text that names it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `…/plancheck/board-<hash>`.
    pub path: PathBuf,
    /// What the board was built from, a line each (the manifest's first lines).
    key: String,
}

/// The cache folder: `PLANCHECK_CACHE_DIR`, else `$XDG_CACHE_HOME/plancheck`, else
/// `~/.cache/plancheck`. `None` when none of them is set.
pub fn folder() -> Option<PathBuf> {
    let set = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = set("PLANCHECK_CACHE_DIR") {
        return Some(dir);
    }
    // The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored.
    if let Some(dir) = set("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        return Some(dir.join("plancheck"));
    }
    set("HOME").map(|home| home.join(".cache").join("plancheck"))
}

impl Entry {
    /// The entry for the board at `scale` on the server binaries in `bin`, under `folder`.
    /// `initdb_args`: the options the data folder is initialised with.
    pub fn new(folder: &Path, bin: &Path, scale: f64, initdb_args: &[&str]) -> io::Result<Entry> {
        let out = Command::new(bin.join("postgres"))
            .arg("--version")
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "{} --version failed ({})",
                bin.join("postgres").display(),
                out.status
            )));
        }
        let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mut key = format!(
            "{FORMAT}\nplancheck {}\nserver {version}\nscale {scale}\ninitdb {}\n",
            env!("CARGO_PKG_VERSION"),
            initdb_args.join(" ")
        );
        for file in FIXTURE_FILES {
            let text =
                Source::Embedded.read(file).ok().flatten().ok_or_else(|| {
                    io::Error::other(format!("{file} is missing from this build"))
                })?;
            let _ = writeln!(key, "{file} {:016x}", fnv1a(text.as_bytes()));
        }
        Ok(Entry {
            path: folder.join(format!("board-{:016x}", fnv1a(key.as_bytes()))),
            key,
        })
    }

    /// Whether something is stored under this entry's name (whole or not).
    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Copies the entry's data folder to `dest` (which must not exist), checking it against the
    /// manifest as it goes. With `owner`, everything copied is handed to that (uid, gid).
    pub fn restore(&self, dest: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
        let manifest = fs::read_to_string(self.path.join(MANIFEST))?;
        let listing = manifest
            .strip_prefix(&self.key)
            .ok_or_else(|| io::Error::other("its manifest is for another board"))?;
        let src = self.path.join(DATA);
        let hand_over = |path: &Path| match owner {
            Some((uid, gid)) => std::os::unix::fs::chown(path, Some(uid), Some(gid)),
            None => Ok(()),
        };
        let mut complete = false;
        for line in listing.lines() {
            let bad = || io::Error::other(format!("its manifest has a bad line: {line:?}"));
            let mut parts = line.splitn(3, '\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("dir"), Some(rel), None) => {
                    let to = dest.join(checked(rel).ok_or_else(bad)?);
                    fs::create_dir(&to)?;
                    fs::set_permissions(&to, fs::Permissions::from_mode(0o700))?;
                    hand_over(&to)?;
                }
                (Some("file"), Some(size), Some(rel)) => {
                    let size: u64 = size.parse().map_err(|_| bad())?;
                    let rel = checked(rel).ok_or_else(bad)?;
                    let to = dest.join(rel);
                    let copied = fs::copy(src.join(rel), &to)?;
                    if copied != size {
                        return Err(io::Error::other(format!(
                            "{rel}: {copied} bytes, the manifest says {size}"
                        )));
                    }
                    hand_over(&to)?;
                }
                (Some("end"), None, None) => complete = true,
                _ => return Err(bad()),
            }
        }
        if !complete {
            return Err(io::Error::other("its manifest is cut short"));
        }
        Ok(())
    }

    /// Saves the data folder `data` of a cleanly stopped server as this entry, replacing what
    /// is there: copied under a temporary name, renamed into place.
    pub fn save(&self, data: &Path) -> io::Result<()> {
        let parent = self
            .path
            .parent()
            .ok_or_else(|| io::Error::other("the entry has no parent folder"))?;
        fs::create_dir_all(parent)?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}-new-"))
            .tempdir_in(parent)?;
        let mut manifest = self.key.clone();
        fs::create_dir(tmp.path().join(DATA))?;
        copy_tree(data, &tmp.path().join(DATA), Path::new(""), &mut manifest)?;
        manifest.push_str("end\n");
        fs::write(tmp.path().join(MANIFEST), manifest)?;
        // Readable by its owner only, as the data folder was.
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o700))?;
        // A whole entry replaces the old one: the old is renamed aside first (rename cannot
        // replace a folder that is not empty), then removed.
        if self.path.exists() {
            let old = tempfile::Builder::new()
                .prefix(&format!(".{name}-old-"))
                .tempdir_in(parent)?;
            fs::rename(&self.path, old.path().join("entry"))?;
        }
        let tmp = tmp.keep();
        if let Err(e) = fs::rename(&tmp, &self.path) {
            let _ = fs::remove_dir_all(&tmp);
            // Another demo saved the same board in the meantime: theirs is as good.
            if !self.path.join(MANIFEST).is_file() {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Copies the folder `from` into the existing folder `to`, adding a manifest line for each
/// folder and file (`rel`: where `from` is, relative to the data folder).
fn copy_tree(from: &Path, to: &Path, rel: &Path, manifest: &mut String) -> io::Result<()> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(from)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let rel = rel.join(&name);
        let shown = rel
            .to_str()
            .filter(|r| !r.contains(['\t', '\n']))
            .ok_or_else(|| io::Error::other(format!("{}: an odd file name", rel.display())))?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            fs::create_dir(to.join(&name))?;
            let _ = writeln!(manifest, "dir\t{shown}");
            copy_tree(&entry.path(), &to.join(&name), &rel, manifest)?;
        } else if kind.is_file() {
            let size = fs::copy(entry.path(), to.join(&name))?;
            let _ = writeln!(manifest, "file\t{size}\t{shown}");
        } else {
            // A link (a tablespace, a WAL folder elsewhere) would not be copied faithfully.
            return Err(io::Error::other(format!(
                "{shown}: neither a file nor a folder"
            )));
        }
    }
    Ok(())
}

/// A manifest path, refused when it could reach outside the folder it is joined to.
fn checked(rel: &str) -> Option<&str> {
    let path = Path::new(rel);
    let inside = !rel.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    inside.then_some(rel)
}

/// FNV-1a, 64 bits: a fixed algorithm, so a name means the same board in every build (std's
/// `DefaultHasher` promises no such thing).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn manifest_paths_stay_inside_the_folder() {
        assert_eq!(checked("base/5/1259"), Some("base/5/1259"));
        assert_eq!(checked("../etc/passwd"), None);
        assert_eq!(checked("/etc/passwd"), None);
        assert_eq!(checked(""), None);
    }

    fn entry_in(folder: &Path, key: &str) -> Entry {
        Entry {
            path: folder.join("board-test"),
            key: format!("{key}\n"),
        }
    }

    #[test]
    fn a_saved_entry_restores_the_same_files() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        fs::create_dir_all(data.join("base/5")).unwrap();
        fs::create_dir_all(data.join("pg_notify")).unwrap();
        fs::write(data.join("PG_VERSION"), "15\n").unwrap();
        fs::write(data.join("base/5/1259"), vec![7u8; 9000]).unwrap();
        let entry = entry_in(&tmp.path().join("cache"), "a board");
        entry.save(&data).unwrap();
        // Saved again (`--fresh`): replaced whole, nothing left beside it.
        entry.save(&data).unwrap();
        let beside: Vec<_> = fs::read_dir(tmp.path().join("cache"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(beside, vec![std::ffi::OsString::from("board-test")]);

        let dest = tmp.path().join("restored");
        fs::create_dir(&dest).unwrap();
        entry.restore(&dest, None).unwrap();
        assert_eq!(fs::read(dest.join("base/5/1259")).unwrap(), vec![7u8; 9000]);
        assert!(dest.join("pg_notify").is_dir(), "empty folders are kept");
    }

    #[test]
    fn a_missing_or_foreign_file_is_refused_on_restore() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        fs::create_dir_all(data.join("base")).unwrap();
        fs::write(data.join("base/1"), "x").unwrap();
        let entry = entry_in(&tmp.path().join("cache"), "a board");
        entry.save(&data).unwrap();

        let other = entry_in(&tmp.path().join("cache"), "another board");
        let dest = tmp.path().join("a");
        fs::create_dir(&dest).unwrap();
        assert!(other.restore(&dest, None).is_err());

        fs::remove_file(entry.path.join("data/base/1")).unwrap();
        let dest = tmp.path().join("b");
        fs::create_dir(&dest).unwrap();
        assert!(entry.restore(&dest, None).is_err());
    }
}
