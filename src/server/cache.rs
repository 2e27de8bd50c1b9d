//! The loaded reference board, kept between demos: the data folder of a stopped throwaway server
//! right after the board was loaded, under the user's cache folder, so that the next demo copies
//! it and starts the server on it instead of running `initdb` and the load (seconds) again.
//!
//! An entry is named by a hash of everything that decides what the folder holds: the fixture
//! SQL built into this binary, the scale, the server's `postgres --version`, the `initdb`
//! options and plancheck's version. Its `manifest` repeats that text (a hash collision cannot
//! pass for a hit) and lists every folder and every file with its size and its SHA-256, so that
//! a missing, truncated, changed or added file is found before a server runs on it: every file
//! is hashed as it is copied out, and anything in the entry the manifest does not list is
//! refused. A folder that does not match its manifest is not an error for the demo: the caller
//! builds the board again and replaces it.
//!
//! A data folder is code for its server (`restore_command`, preload libraries, the functions in
//! its catalog), so an entry is only as trustworthy as whoever could write it: the cache folder,
//! an entry and everything in it must belong to the user running plancheck and be writable by
//! nobody else ([`trusted`]), or it is not used. The manifest is a record of what plancheck
//! wrote, not a signature: whoever can write the cache folder can write a manifest too. What a
//! forged entry can still not do is choose the server's configuration: the server writes none
//! of it from the entry ([`super::Server`] writes its own at each start).
//!
//! Entries are written to a temporary name and renamed into place, so a reader sees a whole
//! entry or none.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write as _};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::project::Source;

/// Bumped when the layout of an entry changes.
const FORMAT: &str = "plancheck board cache 2";

/// The same for a scratch copy's entry.
const COPY_FORMAT: &str = "plancheck scratch copy 1";

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
        let version = server_version(bin)?;
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

    /// The entry for a scratch copy (see [`crate::db::scratch`]): the server's data folder right
    /// after the copy was made from `definitions` (every statement, in order) on the binaries
    /// in `bin`. At most [`COPIES_KEPT`] copies are kept: saving one removes the oldest.
    pub fn for_copy(
        folder: &Path,
        bin: &Path,
        initdb_args: &[&str],
        definitions: &str,
    ) -> io::Result<Entry> {
        let version = server_version(bin)?;
        let digest = ring::digest::digest(&ring::digest::SHA256, definitions.as_bytes());
        let key = format!(
            "{COPY_FORMAT}\nplancheck {}\nserver {version}\ninitdb {}\ndefinitions {}\n",
            env!("CARGO_PKG_VERSION"),
            initdb_args.join(" "),
            hex(digest.as_ref())
        );
        Ok(Entry {
            path: folder.join(format!("copy-{:016x}", fnv1a(key.as_bytes()))),
            key,
        })
    }

    /// Whether something is stored under this entry's name (whole or not).
    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Copies the entry's data folder to `dest` (which must exist, empty), checking it against
    /// the manifest: the entry is refused when anything in it is not ours alone ([`trusted`]),
    /// when it holds anything the manifest does not list, and when a file's size or SHA-256
    /// differs from the manifest's (hashed as it is copied). With `owner`, everything copied is
    /// handed to that (uid, gid).
    pub fn restore(&self, dest: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
        trusted(&self.path)?;
        let manifest = read_own_file(&self.path.join(MANIFEST))?;
        let manifest = String::from_utf8(manifest)
            .map_err(|_| io::Error::other("its manifest is not text"))?;
        let listing = manifest
            .strip_prefix(&self.key)
            .ok_or_else(|| io::Error::other("its manifest is for another board"))?;
        let listed = parse_listing(listing)?;
        let src = self.path.join(DATA);
        trusted(&src)?;
        let mut found = BTreeMap::new();
        walk(&src, Path::new(""), &mut found)?;
        for (rel, kind) in &found {
            match listed.get(rel) {
                None => {
                    return Err(io::Error::other(format!(
                        "{rel}: not in its manifest (an entry holds only what plancheck wrote)"
                    )));
                }
                Some(item) if item.is_dir() != (*kind == Kind::Dir) => {
                    return Err(io::Error::other(format!(
                        "{rel}: a {} where its manifest has a {}",
                        kind.name(),
                        if item.is_dir() { "folder" } else { "file" }
                    )));
                }
                Some(_) => {}
            }
        }
        let hand_over = |path: &Path| match owner {
            Some((uid, gid)) => std::os::unix::fs::chown(path, Some(uid), Some(gid)),
            None => Ok(()),
        };
        // BTreeMap order puts a folder before everything in it.
        for (rel, item) in &listed {
            let to = dest.join(rel);
            match item {
                Item::Dir => {
                    if !found.contains_key(rel) {
                        return Err(io::Error::other(format!("{rel}: missing")));
                    }
                    fs::create_dir(&to)?;
                    fs::set_permissions(&to, fs::Permissions::from_mode(0o700))?;
                }
                Item::File { size, sha256 } => {
                    let (copied, hash) = copy_hashing(&src.join(rel), &to)
                        .map_err(|e| io::Error::other(format!("{rel}: {e}")))?;
                    if copied != *size {
                        return Err(io::Error::other(format!(
                            "{rel}: {copied} bytes, the manifest says {size}"
                        )));
                    }
                    if hash != *sha256 {
                        return Err(io::Error::other(format!(
                            "{rel}: its content is not what was saved (SHA-256 {hash}, the \
                             manifest says {sha256})"
                        )));
                    }
                }
            }
            hand_over(&to)?;
        }
        Ok(())
    }

    /// Saves the data folder `data` of a cleanly stopped server as this entry, replacing what
    /// is there: copied under a temporary name, renamed into place.
    pub fn save(&self, data: &Path) -> io::Result<()> {
        let (parent, name, tmp) = self.staging()?;
        let mut manifest = self.key.clone();
        // Private whatever the umask (a group-writable entry would not be used).
        fs::DirBuilder::new()
            .mode(0o700)
            .create(tmp.path().join(DATA))?;
        copy_tree(data, &tmp.path().join(DATA), Path::new(""), &mut manifest)?;
        self.put_in_place(tmp, &name, &parent, manifest)
    }

    /// The cache folder (made, private, checked to be ours alone), the entry's name, and a new
    /// temporary folder beside where the entry goes, to build it in.
    fn staging(&self) -> io::Result<(PathBuf, String, tempfile::TempDir)> {
        let parent = self
            .path
            .parent()
            .ok_or_else(|| io::Error::other("the entry has no parent folder"))?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
        trusted(parent)?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}-new-"))
            .tempdir_in(parent)?;
        Ok((parent.to_path_buf(), name, tmp))
    }

    /// Writes `manifest` into `tmp` (a folder holding the entry's data folder) and renames it
    /// into this entry's place, replacing what was there whole.
    fn put_in_place(
        &self,
        tmp: tempfile::TempDir,
        name: &str,
        parent: &Path,
        mut manifest: String,
    ) -> io::Result<()> {
        manifest.push_str("end\n");
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(tmp.path().join(MANIFEST))?
            .write_all(manifest.as_bytes())?;
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
            // Another run saved the same entry in the meantime: theirs is as good.
            if !self.path.join(MANIFEST).is_file() {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// `postgres --version` of the binaries in `bin`, as it prints it.
fn server_version(bin: &Path) -> io::Result<String> {
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
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Removes the oldest scratch copies of `folder` beyond the newest `keep` (by when they were
/// saved). Copies are keyed by the definitions they hold, so every schema change makes a new
/// one; this keeps the cache from growing without end.
pub fn prune_copies(folder: &Path, keep: usize) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    let mut copies: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("copy-"))
        .filter_map(|e| {
            let meta = fs::symlink_metadata(e.path()).ok()?;
            (meta.is_dir() && check_owned(&e.path(), &meta).is_ok())
                .then(|| Some((meta.modified().ok()?, e.path())))
                .flatten()
        })
        .collect();
    copies.sort();
    let excess = copies.len().saturating_sub(keep);
    for (_, path) in copies.into_iter().take(excess) {
        let _ = fs::remove_dir_all(path);
    }
}

/// How many scratch copies the cache keeps.
pub const COPIES_KEPT: usize = 4;

impl Entry {
    /// Saves the data folder `data` of a cleanly stopped server as this entry by moving it into
    /// place (a folder about to be removed anyway: the scratch copy's), which costs a read of
    /// each file instead of a copy; where the cache is on another file system, by copying
    /// ([`Entry::save`]). Each folder, then each file in it, is taken over by the user running
    /// plancheck (mode 0700 / 0600) before it is hashed, so the server's user can no longer
    /// change what the manifest lists.
    pub fn save_moving(&self, data: &Path) -> io::Result<()> {
        let (parent, name, tmp) = self.staging()?;
        // A rename cannot cross file systems: there, a copy.
        if fs::symlink_metadata(data)?.dev() != fs::symlink_metadata(&parent)?.dev() {
            return self.save(data);
        }
        let mut manifest = self.key.clone();
        take_over(data)?;
        hash_tree(data, Path::new(""), &mut manifest)?;
        fs::rename(data, tmp.path().join(DATA))?;
        self.put_in_place(tmp, &name, &parent, manifest)
    }
}

/// Makes `path` (a folder or a regular file, never a link) the running user's, private: mode
/// 0700 for a folder, 0600 for a file.
fn take_over(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    let mode = if meta.is_dir() {
        0o700
    } else if meta.is_file() {
        0o600
    } else {
        return Err(io::Error::other(format!(
            "{}: neither a file nor a folder",
            path.display()
        )));
    };
    // SAFETY: geteuid and getegid have no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    std::os::unix::fs::chown(path, Some(uid), Some(gid))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// Adds a manifest line for each folder and file under `dir` (`rel`: where `dir` is, relative
/// to the data folder), in the order [`copy_tree`] lists them, taking each over first
/// ([`take_over`]) and hashing each file where it is.
fn hash_tree(dir: &Path, rel: &Path, manifest: &mut String) -> io::Result<()> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let rel = rel.join(entry.file_name());
        let shown = rel
            .to_str()
            .filter(|r| !r.contains(['\t', '\n']))
            .ok_or_else(|| io::Error::other(format!("{}: an odd file name", rel.display())))?;
        take_over(&entry.path())?;
        if fs::symlink_metadata(entry.path())?.is_dir() {
            let _ = writeln!(manifest, "dir\t{shown}");
            hash_tree(&entry.path(), &rel, manifest)?;
        } else {
            let (size, sha256) = hash_file(&entry.path())?;
            let _ = writeln!(manifest, "file\t{size}\t{sha256}\t{shown}");
        }
    }
    Ok(())
}

/// The size and SHA-256 (hex) of the regular file `path`, read without following a link.
fn hash_file(path: &Path) -> io::Result<(u64, String)> {
    read_hashing(open_regular(path)?, &mut io::sink())
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
            fs::DirBuilder::new().mode(0o700).create(to.join(&name))?;
            let _ = writeln!(manifest, "dir\t{shown}");
            copy_tree(&entry.path(), &to.join(&name), &rel, manifest)?;
        } else if kind.is_file() {
            let (size, sha256) = copy_hashing(&entry.path(), &to.join(&name))?;
            let _ = writeln!(manifest, "file\t{size}\t{sha256}\t{shown}");
        } else {
            // A link (a tablespace, a WAL folder elsewhere) would not be copied faithfully.
            return Err(io::Error::other(format!(
                "{shown}: neither a file nor a folder"
            )));
        }
    }
    Ok(())
}

/// Copies the regular file `from` (never through a link) to the new file `to` (mode 0600, never
/// through a link either), returning its size and SHA-256 (hex) as copied.
fn copy_hashing(from: &Path, to: &Path) -> io::Result<(u64, String)> {
    let input = open_regular(from)?;
    let mut output = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(to)?;
    let hashed = read_hashing(input, &mut output)?;
    output.flush()?;
    Ok(hashed)
}

/// The regular file `path`, opened for reading without following a link.
fn open_regular(path: &Path) -> io::Result<fs::File> {
    let input = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    if !input.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(input)
}

/// Reads `input` to its end into `sink`, returning its size and SHA-256 (hex).
fn read_hashing(mut input: fs::File, sink: &mut impl io::Write) -> io::Result<(u64, String)> {
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hash.update(&buf[..n]);
        sink.write_all(&buf[..n])?;
        size += n as u64;
    }
    Ok((size, hex(hash.finish().as_ref())))
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Refuses `path` unless it is a folder or a regular file (not a link) owned by the user running
/// plancheck and writable by nobody else: a cache that another user, or a group, may write is a
/// cache someone else may have filled.
pub fn trusted(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    check_owned(path, &meta)
}

fn check_owned(path: &Path, meta: &fs::Metadata) -> io::Result<()> {
    let kind = meta.file_type();
    if !kind.is_dir() && !kind.is_file() {
        return Err(io::Error::other(format!(
            "{} is neither a folder nor a regular file",
            path.display()
        )));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(io::Error::other(format!(
            "{} belongs to uid {}, not to the user running plancheck (uid {me})",
            path.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is writable by others than its owner (mode {:o})",
            path.display(),
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// A regular file of ours ([`trusted`]), read whole without following a link.
fn read_own_file(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    check_owned(path, &file.metadata()?)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a manifest line lists.
#[derive(Debug, PartialEq, Eq)]
enum Item {
    Dir,
    File { size: u64, sha256: String },
}

impl Item {
    fn is_dir(&self) -> bool {
        matches!(self, Item::Dir)
    }
}

/// The manifest's lines after its key: every folder and file by its path, then `end`.
fn parse_listing(listing: &str) -> io::Result<BTreeMap<String, Item>> {
    let mut listed = BTreeMap::new();
    let mut complete = false;
    for line in listing.lines() {
        let bad = || io::Error::other(format!("its manifest has a bad line: {line:?}"));
        if complete {
            return Err(bad());
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let (rel, item) = match fields.as_slice() {
            ["dir", rel] => (*rel, Item::Dir),
            ["file", size, sha256, rel] => {
                let size: u64 = size.parse().map_err(|_| bad())?;
                let well_formed = sha256.len() == 64
                    && sha256
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                if !well_formed {
                    return Err(bad());
                }
                (
                    *rel,
                    Item::File {
                        size,
                        sha256: sha256.to_string(),
                    },
                )
            }
            ["end"] => {
                complete = true;
                continue;
            }
            _ => return Err(bad()),
        };
        let rel = checked(rel).ok_or_else(bad)?;
        if listed.insert(rel.to_string(), item).is_some() {
            return Err(bad());
        }
    }
    if !complete {
        return Err(io::Error::other("its manifest is cut short"));
    }
    Ok(listed)
}

/// What a path in an entry's data folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Dir => "folder",
            Kind::File => "file",
        }
    }
}

/// Everything under `dir` (`rel`: where it is in the data folder), each checked to be ours
/// alone ([`trusted`]); a link or any other kind of file is refused.
fn walk(dir: &Path, rel: &Path, found: &mut BTreeMap<String, Kind>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let rel = rel.join(entry.file_name());
        let shown = rel
            .to_str()
            .ok_or_else(|| io::Error::other(format!("{}: an odd file name", rel.display())))?
            .to_string();
        let meta = fs::symlink_metadata(entry.path())?;
        check_owned(&entry.path(), &meta)?;
        if meta.is_dir() {
            found.insert(shown, Kind::Dir);
            walk(&entry.path(), &rel, found)?;
        } else {
            found.insert(shown, Kind::File);
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
    fn an_entry_saved_by_moving_restores_the_same_files_and_is_checked_alike() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        fs::create_dir_all(data.join("base/5")).unwrap();
        fs::create_dir_all(data.join("pg_notify")).unwrap();
        fs::write(data.join("PG_VERSION"), "15\n").unwrap();
        fs::write(data.join("base/5/1259"), vec![7u8; 9000]).unwrap();
        fs::set_permissions(data.join("base/5/1259"), fs::Permissions::from_mode(0o644)).unwrap();
        let entry = entry_in(&tmp.path().join("cache"), "a copy");
        entry.save_moving(&data).unwrap();
        // Moved, not copied: the server's folder no longer holds it.
        assert!(!data.exists());
        let file = entry.path.join("data/base/5/1259");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600,
            "taken over: private"
        );
        let dest = tmp.path().join("restored");
        fs::create_dir(&dest).unwrap();
        entry.restore(&dest, None).unwrap();
        assert_eq!(fs::read(dest.join("base/5/1259")).unwrap(), vec![7u8; 9000]);
        assert!(dest.join("pg_notify").is_dir(), "empty folders are kept");
        // The manifest holds each file's hash, as a copied entry's does: a change is refused.
        fs::write(&file, vec![8u8; 9000]).unwrap();
        let again = tmp.path().join("again");
        fs::create_dir(&again).unwrap();
        let refused = entry.restore(&again, None).unwrap_err().to_string();
        assert!(refused.contains("not what was saved"), "{refused}");
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

    /// A saved entry of two files and the error of restoring it after `poison`.
    fn restored_after(poison: impl FnOnce(&Entry)) -> io::Result<()> {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        fs::create_dir_all(data.join("base")).unwrap();
        fs::write(data.join("base/1"), "abc").unwrap();
        fs::write(data.join("PG_VERSION"), "15\n").unwrap();
        let entry = entry_in(&tmp.path().join("cache"), "a board");
        entry.save(&data).unwrap();
        let dest = tmp.path().join("restored");
        fs::create_dir(&dest).unwrap();
        entry
            .restore(&dest, None)
            .expect("the entry as saved restores");
        poison(&entry);
        let dest = tmp.path().join("again");
        fs::create_dir(&dest).unwrap();
        entry.restore(&dest, None)
    }

    fn refused(result: io::Result<()>, says: &str) {
        let e = result.expect_err("the poisoned entry was restored");
        assert!(e.to_string().contains(says), "{e}");
    }

    #[test]
    fn a_file_changed_at_the_same_size_is_refused_on_restore() {
        refused(
            restored_after(|e| fs::write(e.path.join("data/base/1"), "abd").unwrap()),
            "its content is not what was saved",
        );
    }

    #[test]
    fn a_file_the_manifest_does_not_list_is_refused_on_restore() {
        // Private, as plancheck's own files are, whatever the umask.
        refused(
            restored_after(|e| {
                let file = e.path.join("data/recovery.signal");
                fs::write(&file, "").unwrap();
                fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
            }),
            "recovery.signal: not in its manifest",
        );
        refused(
            restored_after(|e| {
                fs::DirBuilder::new()
                    .mode(0o700)
                    .create(e.path.join("data/extra"))
                    .unwrap()
            }),
            "extra: not in its manifest",
        );
    }

    #[test]
    fn a_link_in_an_entry_is_refused_on_restore() {
        refused(
            restored_after(|e| {
                let file = e.path.join("data/base/1");
                fs::remove_file(&file).unwrap();
                std::os::unix::fs::symlink("/etc/hostname", &file).unwrap();
            }),
            "neither a folder nor a regular file",
        );
    }

    #[test]
    fn an_entry_others_may_write_is_refused_on_restore() {
        refused(
            restored_after(|e| {
                fs::set_permissions(&e.path, fs::Permissions::from_mode(0o770)).unwrap()
            }),
            "writable by others than its owner (mode 770)",
        );
        refused(
            restored_after(|e| {
                let file = e.path.join("data/PG_VERSION");
                fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).unwrap()
            }),
            "writable by others than its owner (mode 666)",
        );
    }

    #[test]
    fn an_entry_is_private_whatever_the_files_it_was_saved_from() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        fs::create_dir_all(data.join("base")).unwrap();
        fs::write(data.join("base/1"), "abc").unwrap();
        fs::set_permissions(data.join("base"), fs::Permissions::from_mode(0o777)).unwrap();
        fs::set_permissions(data.join("base/1"), fs::Permissions::from_mode(0o666)).unwrap();
        let entry = entry_in(&tmp.path().join("cache"), "a board");
        entry.save(&data).unwrap();
        for path in [
            entry.path.clone(),
            entry.path.join("manifest"),
            entry.path.join("data"),
            entry.path.join("data/base"),
            entry.path.join("data/base/1"),
        ] {
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o077;
            assert_eq!(mode, 0, "{} is not private", path.display());
        }
        let dest = tmp.path().join("restored");
        fs::create_dir(&dest).unwrap();
        entry.restore(&dest, None).unwrap();
    }

    #[test]
    fn a_manifest_with_a_line_after_its_end_is_refused() {
        assert!(parse_listing("dir\tbase\nend\n").is_ok());
        assert!(parse_listing("dir\tbase\nend\ndir\tx\n").is_err());
        assert!(parse_listing("dir\tbase\n").is_err());
        assert!(parse_listing("file\t3\tnothex\tbase/1\nend\n").is_err());
        assert!(parse_listing("dir\tbase\ndir\tbase\nend\n").is_err());
    }
}
