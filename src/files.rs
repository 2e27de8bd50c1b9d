//! Every file plancheck reads from a project or a saved run, and every file it writes, goes
//! through here, because in CI those folders come from a pull request: a committed symbolic
//! link (`baselines/x.member.plan -> ~/.pgpass`) must not make a run print a password, and one
//! where a report is written (`out/report.xml -> ~/.bashrc`) must not make it write outside.
//!
//! The rule, by construction rather than by checking names:
//!
//! - **A folder named on the command line is taken as given** (`--project`, the folder of
//!   `--migration`, `judge DIR`): whoever typed it chose it, links and all. Below it nothing is
//!   a link: every folder on the way is opened with `O_NOFOLLOW` relative to the one above
//!   (`openat`), so a link anywhere below is refused, not followed, and the folder cannot be
//!   swapped for a link between a check and the open.
//! - **Only regular files are read**, opened `O_NOFOLLOW | O_NONBLOCK` (a FIFO cannot hang the
//!   open) and checked with `fstat` on the open file: a FIFO, a device (`/dev/zero`), a socket
//!   or a folder is refused before a byte is read.
//! - **Each kind of file has a size cap** ([`PROJECT_TEXT`], [`MIGRATION`], [`SAVED`]), and at
//!   most one byte more than the cap is ever read, whatever `fstat` said (`/proc` files say 0).
//! - **A write never goes through a link.** The new contents go to a new file in the same folder
//!   (`O_CREAT | O_EXCL | O_NOFOLLOW`), which is then renamed over the target: a rename replaces
//!   a link, it does not follow it, and a reader sees the old file or the new one, never half.
//!   A file that must not exist yet is linked into place instead, which fails if it does.
//! - **A path given for writing** (`--report FILE`, `--save-plans DIR`) is anchored at the
//!   current folder when it lies below it (the checkout, in CI): no folder from there down may
//!   be a link. A path elsewhere is anchored at its own folder, taken as given.
//!
//! - **A secret is never written**: every byte written goes through [`crate::secrets`] first.
//!
//! A refusal names the file and says why; it never quotes what the file holds.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The cap on a project file people write: a plan, an expectation, `plancheck.toml`, a plan
/// baseline. A real one is a few KiB; a generated plan of several MiB is still read (and its
/// errors located).
pub const PROJECT_TEXT: u64 = 16 << 20;

/// The cap on a `--migration` file: a schema change, perhaps with a generated body or two.
pub const MIGRATION: u64 = 64 << 20;

/// The cap on one file of a saved run (`run.json`, one check's measurement): the EXPLAIN
/// documents of every measured run of a check, which a plan with large folded constants makes
/// large.
pub const SAVED: u64 = 128 << 20;

/// The cap on a statistics file (`stats export`): `pg_stats` of every column of a large
/// schema, a few KiB each.
pub const STATISTICS: u64 = 256 << 20;

/// Why a file was not read or written.
#[derive(Debug)]
pub enum Why {
    /// The path, or a folder on the way to it, is a symbolic link.
    Link,
    /// Not a regular file: a FIFO, a device, a socket, a folder.
    NotRegular(&'static str),
    /// A folder on the way is not a folder.
    NotFolder,
    /// Larger than the cap for its kind.
    TooLarge {
        cap: u64,
    },
    /// A name with `..`, or an absolute path, where a path inside the folder belongs.
    NotInside,
    /// A file that was to be new already exists.
    Exists,
    Io(io::Error),
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Link => f.write_str(
                "it, or a folder on the way to it, is a symbolic link; plancheck follows no link \
                 inside a project or an output folder (replace the link with the file itself)",
            ),
            Why::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            Why::NotFolder => f.write_str("a part of the path on the way to it is not a folder"),
            Why::TooLarge { cap } => write!(
                f,
                "larger than {} MiB, the most plancheck reads of such a file",
                cap >> 20
            ),
            Why::NotInside => f.write_str("not a path inside its folder"),
            Why::Exists => f.write_str("already exists"),
            Why::Io(e) => write!(f, "{e}"),
        }
    }
}

/// A file not read or written: which, and why. Never what it holds.
#[derive(Debug)]
pub struct FileError {
    /// The path as the user should see it.
    pub path: String,
    pub why: Why,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.why)
    }
}

impl std::error::Error for FileError {}

/// An open folder, below which no link is followed.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
    shown: PathBuf,
}

fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// A path inside a folder as its plain names; `.` is skipped, anything else refused.
fn names(rel: &Path) -> Option<Vec<&OsStr>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

/// The kind of file a mode is, for a message.
fn kind(mode: libc::mode_t) -> Option<&'static str> {
    match mode & libc::S_IFMT {
        libc::S_IFREG => None,
        libc::S_IFDIR => Some("a folder"),
        libc::S_IFIFO => Some("a FIFO"),
        libc::S_IFCHR => Some("a character device"),
        libc::S_IFBLK => Some("a block device"),
        libc::S_IFSOCK => Some("a socket"),
        libc::S_IFLNK => Some("a symbolic link"),
        _ => Some("not a file of a known kind"),
    }
}

fn fstat(fd: libc::c_int) -> io::Result<libc::stat> {
    // SAFETY: `st` is written by fstat, which is given a live descriptor; it is read only on
    // success.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// What `name` in folder `dir` is, without following it; `None` when it does not exist.
fn lstat_at(dir: libc::c_int, name: &CStr) -> Option<libc::stat> {
    // SAFETY: as in `fstat`; `name` is NUL-terminated and outlives the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let status = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (status == 0).then_some(st)
}

fn is_link(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// Sets `errno`, which only a call that fails is meant to set.
fn set_errno(value: libc::c_int) {
    // SAFETY: the thread's own errno, always a valid location.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            *libc::__errno_location() = value;
        }
        #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
        {
            *libc::__error() = value;
        }
    }
}

/// `openat`, returning an owned descriptor.
fn open_at(
    dir: libc::c_int,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> io::Result<OwnedFd> {
    // SAFETY: `name` is NUL-terminated and outlives the call; a descriptor returned is ours.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A name for a file that does not exist yet, beside `name`: hidden, and ending in `.tmp` so a
/// listing of read paths never takes it for one.
fn temp_name(name: &OsStr) -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut out = OsString::from(".");
    out.push(name);
    out.push(format!(".{}.{n}.tmp", std::process::id()));
    out
}

impl Folder {
    /// The folder at `path`, as named on the command line: links in `path` itself are followed.
    pub fn open(path: &Path) -> Result<Folder, FileError> {
        let shown = path.to_path_buf();
        let fail = |why| FileError {
            path: path.display().to_string(),
            why,
        };
        let path = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        let c = cstring(path.as_os_str()).map_err(|e| fail(Why::Io(e)))?;
        let fd = open_at(libc::AT_FDCWD, &c, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .map_err(|e| fail(Why::Io(e)))?;
        Ok(Folder { fd, shown })
    }

    /// The folder at `path`, named on the command line for writing into, made with the folders
    /// on the way when missing: anchored as the module's opening says.
    pub fn for_writing(path: &Path) -> Result<Folder, FileError> {
        let (anchor, rest, _) = anchored_where(path);
        Folder::anchor(&anchor)?.folder(&rest, true)
    }

    /// The folder a path for writing is anchored at, made (as given, links in it followed)
    /// when missing: a folder outside the current one, named on the command line.
    pub fn anchor(anchor: &Path) -> Result<Folder, FileError> {
        if !anchor.as_os_str().is_empty() && !anchor.is_dir() {
            std::fs::create_dir_all(anchor).map_err(|e| FileError {
                path: anchor.display().to_string(),
                why: Why::Io(e),
            })?;
        }
        Folder::open(anchor)
    }

    /// How `rel` inside this folder is shown in a message.
    pub fn shown(&self, rel: &Path) -> String {
        if self.shown == Path::new(".") || self.shown.as_os_str().is_empty() {
            rel.display().to_string()
        } else {
            self.shown.join(rel).display().to_string()
        }
    }

    fn error(&self, rel: &Path, why: Why) -> FileError {
        FileError {
            path: self.shown(rel),
            why,
        }
    }

    /// Why opening `name` in folder `dir` failed with `e`: a link is said to be one.
    fn why(dir: libc::c_int, name: &CStr, e: io::Error) -> Why {
        match lstat_at(dir, name) {
            Some(st) if is_link(&st) => Why::Link,
            Some(_) if e.raw_os_error() == Some(libc::ENOTDIR) => Why::NotFolder,
            Some(st) if e.raw_os_error() == Some(libc::ENXIO) => {
                Why::NotRegular(kind(st.st_mode).unwrap_or("not a regular file"))
            }
            _ => Why::Io(e),
        }
    }

    /// The folder `rel` inside this one, no link followed on the way; made (with the folders
    /// on the way) when `create` and missing.
    pub fn folder(&self, rel: &Path, create: bool) -> Result<Folder, FileError> {
        let parts = names(rel).ok_or_else(|| self.error(rel, Why::NotInside))?;
        let mut fd: Option<OwnedFd> = None;
        let mut so_far = PathBuf::new();
        for part in parts {
            so_far.push(part);
            let dir = fd.as_ref().map_or(self.fd.as_raw_fd(), |f| f.as_raw_fd());
            let c = cstring(part).map_err(|e| self.error(&so_far, Why::Io(e)))?;
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
            let next = match open_at(dir, &c, flags, 0) {
                Ok(next) => next,
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    // SAFETY: `c` is NUL-terminated and outlives the call.
                    if unsafe { libc::mkdirat(dir, c.as_ptr(), 0o777) } != 0 {
                        let e = io::Error::last_os_error();
                        if e.kind() != io::ErrorKind::AlreadyExists {
                            return Err(self.error(&so_far, Why::Io(e)));
                        }
                    }
                    open_at(dir, &c, flags, 0)
                        .map_err(|e| self.error(&so_far, Folder::why(dir, &c, e)))?
                }
                Err(e) => return Err(self.error(&so_far, Folder::why(dir, &c, e))),
            };
            fd = Some(next);
        }
        let fd = match fd {
            Some(fd) => fd,
            None => self
                .fd
                .try_clone()
                .map_err(|e| self.error(rel, Why::Io(e)))?,
        };
        Ok(Folder {
            fd,
            shown: if self.shown.as_os_str().is_empty() {
                rel.to_path_buf()
            } else {
                self.shown.join(rel)
            },
        })
    }

    /// The folder holding `rel` and `rel`'s last name.
    fn parent_of<'a>(&self, rel: &'a Path, create: bool) -> Result<(Folder, &'a OsStr), FileError> {
        let parts = names(rel).ok_or_else(|| self.error(rel, Why::NotInside))?;
        let Some((last, _)) = parts.split_last() else {
            return Err(self.error(rel, Why::NotInside));
        };
        let parent = rel.parent().unwrap_or(Path::new(""));
        let folder = self.folder(parent, create).map_err(|mut e| {
            // The message names the file asked for; the cause says a folder on the way.
            e.path = self.shown(rel);
            e
        })?;
        Ok((folder, last))
    }

    /// The bytes of the regular file `rel`, at most `cap` of them; `None` when it (or a folder
    /// on the way) does not exist.
    pub fn read(&self, rel: &Path, cap: u64) -> Result<Option<Vec<u8>>, FileError> {
        let (folder, name) = match self.parent_of(rel, false) {
            Ok(found) => found,
            Err(FileError {
                why: Why::Io(e), ..
            }) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let fail = |why| self.error(rel, why);
        let c = cstring(name).map_err(|e| fail(Why::Io(e)))?;
        let dir = folder.fd.as_raw_fd();
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
        let fd = match open_at(dir, &c, flags, 0) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(fail(Folder::why(dir, &c, e))),
        };
        let st = fstat(fd.as_raw_fd()).map_err(|e| fail(Why::Io(e)))?;
        if let Some(kind) = kind(st.st_mode) {
            return Err(fail(Why::NotRegular(kind)));
        }
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if size > cap {
            return Err(fail(Why::TooLarge { cap }));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size.min(cap) + 1).unwrap_or(0));
        File::from(fd)
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(Why::Io(e)))?;
        if bytes.len() as u64 > cap {
            return Err(fail(Why::TooLarge { cap }));
        }
        Ok(Some(bytes))
    }

    /// Whether anything is at `rel` (a file, a folder, a link: the last name is not followed);
    /// a link or a file where a folder on the way should be is an error, as for a read.
    pub fn exists(&self, rel: &Path) -> Result<bool, FileError> {
        let (folder, name) = match self.parent_of(rel, false) {
            Ok(found) => found,
            Err(FileError {
                why: Why::Io(e), ..
            }) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let c = cstring(name).map_err(|e| self.error(rel, Why::Io(e)))?;
        Ok(lstat_at(folder.fd.as_raw_fd(), &c).is_some())
    }

    /// The names in folder `rel` (this folder when empty), unsorted, `.` and `..` left out.
    pub fn names(&self, rel: &Path) -> Result<Vec<OsString>, FileError> {
        let folder = self.folder(rel, false)?;
        let fail = |e| self.error(rel, Why::Io(e));
        // SAFETY: fdopendir takes ownership of the duplicate descriptor, closed by closedir;
        // every entry is read before the next readdir, and the stream is closed once.
        unsafe {
            let dup = libc::dup(folder.fd.as_raw_fd());
            if dup < 0 {
                return Err(fail(io::Error::last_os_error()));
            }
            let stream = libc::fdopendir(dup);
            if stream.is_null() {
                let e = io::Error::last_os_error();
                libc::close(dup);
                return Err(fail(e));
            }
            let mut out = Vec::new();
            loop {
                // readdir says "no more" and "failed" alike, by a null; errno tells them apart.
                set_errno(0);
                let entry = libc::readdir(stream);
                if entry.is_null() {
                    let e = io::Error::last_os_error();
                    libc::closedir(stream);
                    if e.raw_os_error().is_some_and(|n| n != 0) {
                        // A listing cut short would leave read paths silently unchecked.
                        return Err(fail(e));
                    }
                    return Ok(out);
                }
                let name = CStr::from_ptr((*entry).d_name.as_ptr()).to_bytes();
                if name != b"." && name != b".." {
                    out.push(OsString::from_vec(name.to_vec()));
                }
            }
        }
    }

    /// A new file beside `name` in this folder holding `bytes`; returns its name.
    fn write_temp(&self, name: &OsStr, bytes: &[u8], mode: libc::c_uint) -> io::Result<CString> {
        let dir = self.fd.as_raw_fd();
        let mut tries = 0;
        let (temp, fd) = loop {
            let temp = cstring(&temp_name(name))?;
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
            match open_at(dir, &temp, flags, mode) {
                Ok(fd) => break (temp, fd),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
                Err(e) => return Err(e),
            }
        };
        let mut file = File::from(fd);
        let written = file
            .write_all(&crate::secrets::redact_bytes(bytes))
            .and_then(|()| file.flush());
        if let Err(e) = written {
            self.unlink(&temp);
            return Err(e);
        }
        Ok(temp)
    }

    fn unlink(&self, name: &CStr) {
        // SAFETY: `name` is NUL-terminated and outlives the call.
        unsafe {
            libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), 0);
        }
    }

    /// Writes `bytes` as file `rel`, replacing what is there (a file, or a link, which is
    /// replaced and not followed) at once; the folders on the way are made when missing, none
    /// of them a link. A file replaced keeps its permissions.
    pub fn replace(&self, rel: &Path, bytes: &[u8]) -> Result<(), FileError> {
        let (folder, name) = self.parent_of(rel, true)?;
        let fail = |why| self.error(rel, why);
        let c = cstring(name).map_err(|e| fail(Why::Io(e)))?;
        let dir = folder.fd.as_raw_fd();
        // Only a file or a link is replaced: never a folder, and never a device or a FIFO
        // (renaming over `/dev/null` would take it from every other program).
        let mode = match lstat_at(dir, &c) {
            None => 0o666,
            Some(st) if is_link(&st) => 0o666,
            Some(st) => match kind(st.st_mode) {
                None => st.st_mode & 0o7777,
                Some(kind) => return Err(fail(Why::NotRegular(kind))),
            },
        };
        let temp = folder
            .write_temp(name, bytes, mode as libc::c_uint)
            .map_err(|e| fail(Why::Io(e)))?;
        // SAFETY: both names are NUL-terminated and outlive the call.
        if unsafe { libc::renameat(dir, temp.as_ptr(), dir, c.as_ptr()) } != 0 {
            let e = io::Error::last_os_error();
            folder.unlink(&temp);
            return Err(fail(Why::Io(e)));
        }
        Ok(())
    }

    /// Writes `bytes` as the new file `rel`, which must not exist (as a file, a link or
    /// anything else); the folders on the way are made when missing, none of them a link.
    pub fn create_new(&self, rel: &Path, bytes: &[u8]) -> Result<(), FileError> {
        let (folder, name) = self.parent_of(rel, true)?;
        let fail = |why| self.error(rel, why);
        let c = cstring(name).map_err(|e| fail(Why::Io(e)))?;
        let dir = folder.fd.as_raw_fd();
        let temp = folder
            .write_temp(name, bytes, 0o666)
            .map_err(|e| fail(Why::Io(e)))?;
        // A hard link to the new file under its name fails when the name is taken: the file
        // appears whole or not at all.
        // SAFETY: both names are NUL-terminated and outlive the call.
        let linked = unsafe { libc::linkat(dir, temp.as_ptr(), dir, c.as_ptr(), 0) };
        let e = io::Error::last_os_error();
        folder.unlink(&temp);
        if linked == 0 {
            return Ok(());
        }
        if e.kind() == io::ErrorKind::AlreadyExists {
            return Err(fail(Why::Exists));
        }
        // A file system without hard links: the file is created in place, still never over
        // anything (O_EXCL) nor through a link (O_NOFOLLOW).
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let fd = open_at(dir, &c, flags, 0o666).map_err(|e| {
            fail(if e.kind() == io::ErrorKind::AlreadyExists {
                Why::Exists
            } else {
                Why::Io(e)
            })
        })?;
        let mut file = File::from(fd);
        file.write_all(&crate::secrets::redact_bytes(bytes))
            .and_then(|()| file.flush())
            .map_err(|e| fail(Why::Io(e)))
    }

    /// Moves file `from` to `to`, both inside this folder, no link followed on the way; a link
    /// at `from` is moved as a link, never followed.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<(), FileError> {
        let (a, a_name) = self.parent_of(from, false)?;
        let (b, b_name) = self.parent_of(to, true)?;
        let fail = |why| self.error(from, why);
        let a_name = cstring(a_name).map_err(|e| fail(Why::Io(e)))?;
        let b_name = cstring(b_name).map_err(|e| fail(Why::Io(e)))?;
        // SAFETY: both names are NUL-terminated and outlive the call.
        let status = unsafe {
            libc::renameat(
                a.fd.as_raw_fd(),
                a_name.as_ptr(),
                b.fd.as_raw_fd(),
                b_name.as_ptr(),
            )
        };
        if status != 0 {
            return Err(fail(Why::Io(io::Error::last_os_error())));
        }
        Ok(())
    }

    /// Removes the empty folder `rel`; one that is not empty, or not there, is left.
    pub fn remove_empty_folder(&self, rel: &Path) {
        if let Ok((folder, name)) = self.parent_of(rel, false)
            && let Ok(c) = cstring(name)
        {
            // SAFETY: `c` is NUL-terminated and outlives the call.
            unsafe {
                libc::unlinkat(folder.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR);
            }
        }
    }
}

/// A path named on the command line, split into the folder taken as given and the part below
/// it in which no link is followed: below the current folder when the path lies there (without
/// `..`), else its own folder.
pub fn anchored(path: &Path) -> (PathBuf, PathBuf) {
    let (anchor, rest, _) = anchored_where(path);
    (anchor, rest)
}

/// [`anchored`], and whether the path lies below the current folder.
fn anchored_where(path: &Path) -> (PathBuf, PathBuf, bool) {
    let plain = |p: &Path| names(p).is_some_and(|n| !n.is_empty());
    if path.is_relative() && plain(path) {
        return (PathBuf::from("."), path.to_path_buf(), true);
    }
    if let Ok(here) = std::env::current_dir()
        && let Ok(rest) = path.strip_prefix(&here)
        && plain(rest)
    {
        return (here, rest.to_path_buf(), true);
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    (parent.to_path_buf(), name, false)
}

/// Reads the file at `path`, named on the command line (a `--migration`), as
/// [`Folder::read`] reads: anchored as [`anchored`] says, at most `cap` bytes. A file that is
/// not there is an error.
pub fn read_given(path: &Path, cap: u64) -> Result<Vec<u8>, FileError> {
    let (anchor, rest) = anchored(path);
    let shown = || path.display().to_string();
    let bytes = Folder::open(&anchor)
        .and_then(|f| f.read(&rest, cap))
        .map_err(|e| FileError {
            path: shown(),
            why: e.why,
        })?;
    bytes.ok_or_else(|| FileError {
        path: shown(),
        why: Why::Io(io::Error::from(io::ErrorKind::NotFound)),
    })
}

/// Writes the file at `path`, named on the command line (`--report FORMAT=FILE`), replacing it
/// as [`Folder::replace`] does; the folders on the way are made when missing.
///
/// A stream is written into instead: a FIFO or a character device named as such
/// (`/dev/null`), which no checkout can hold, and, outside the current folder only, a link to
/// one (`/dev/stdout`, `/dev/fd/63` of a shell's `>(…)`). A link below the current folder is
/// always replaced, whatever it points at.
pub fn replace_given(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let (anchor, rest, inside) = anchored_where(path);
    let fail = |why| FileError {
        path: path.display().to_string(),
        why,
    };
    let (folder, name) = Folder::anchor(&anchor)
        .and_then(|f| f.parent_of(&rest, true).map(|(d, n)| (d, n.to_owned())))
        .map_err(|e| fail(e.why))?;
    let c = cstring(&name).map_err(|e| fail(Why::Io(e)))?;
    let dir = folder.fd.as_raw_fd();
    let stream =
        |st: &libc::stat| matches!(st.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFCHR);
    let follow = match lstat_at(dir, &c) {
        Some(st) if stream(&st) => Some(libc::O_NOFOLLOW),
        Some(st) if is_link(&st) && !inside => {
            // SAFETY: as in `fstat`; `c` is NUL-terminated and outlives the call.
            let mut target: libc::stat = unsafe { std::mem::zeroed() };
            let found = unsafe { libc::fstatat(dir, c.as_ptr(), &mut target, 0) } == 0;
            (found && stream(&target)).then_some(0)
        }
        _ => None,
    };
    let Some(follow) = follow else {
        return folder
            .replace(Path::new(&name), bytes)
            .map_err(|e| fail(e.why));
    };
    let fd = open_at(dir, &c, libc::O_WRONLY | libc::O_NOCTTY | follow, 0)
        .map_err(|e| fail(Why::Io(e)))?;
    let st = fstat(fd.as_raw_fd()).map_err(|e| fail(Why::Io(e)))?;
    if !stream(&st) {
        return Err(fail(Why::NotRegular(
            kind(st.st_mode).unwrap_or("a regular file"),
        )));
    }
    let mut file = File::from(fd);
    file.write_all(&crate::secrets::redact_bytes(bytes))
        .and_then(|()| file.flush())
        .map_err(|e| fail(Why::Io(e)))
}

/// Appends to the file at `path`, named by the command line or the environment (GitHub's
/// `GITHUB_STEP_SUMMARY`), made when missing; anchored as [`replace_given`] anchors. An append
/// keeps what is there, so a link where the file goes cannot be replaced: it is refused, unless
/// it lies outside the current folder and leads to a stream (`/dev/stderr`), as for
/// [`replace_given`]. A FIFO or a character device is written into; anything else that is not a
/// regular file is refused.
pub fn append_given(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let (anchor, rest, inside) = anchored_where(path);
    let fail = |why| FileError {
        path: path.display().to_string(),
        why,
    };
    let (folder, name) = Folder::anchor(&anchor)
        .and_then(|f| f.parent_of(&rest, true).map(|(d, n)| (d, n.to_owned())))
        .map_err(|e| fail(e.why))?;
    let c = cstring(&name).map_err(|e| fail(Why::Io(e)))?;
    let dir = folder.fd.as_raw_fd();
    let stream =
        |st: &libc::stat| matches!(st.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFCHR);
    let follow = match lstat_at(dir, &c) {
        Some(st) if is_link(&st) => {
            // SAFETY: as in `fstat`; `c` is NUL-terminated and outlives the call.
            let mut target: libc::stat = unsafe { std::mem::zeroed() };
            let found = unsafe { libc::fstatat(dir, c.as_ptr(), &mut target, 0) } == 0;
            if inside || !found || !stream(&target) {
                return Err(fail(Why::Link));
            }
            0
        }
        _ => libc::O_NOFOLLOW,
    };
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOCTTY | follow;
    let fd = open_at(dir, &c, flags, 0o666).map_err(|e| fail(Folder::why(dir, &c, e)))?;
    let st = fstat(fd.as_raw_fd()).map_err(|e| fail(Why::Io(e)))?;
    if let Some(kind) = kind(st.st_mode).filter(|_| !stream(&st)) {
        return Err(fail(Why::NotRegular(kind)));
    }
    let mut file = File::from(fd);
    file.write_all(&crate::secrets::redact_bytes(bytes))
        .and_then(|()| file.flush())
        .map_err(|e| fail(Why::Io(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{FileTypeExt, symlink};
    use std::time::{Duration, Instant};

    const SECRET: &[u8] = b"localhost:5432:*:u:s3cret-pw-9f1\n";

    /// A project folder and, beside it, a folder outside it with a secret file.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let outside = root.path().join("outside");
        fs::create_dir_all(project.join("plans")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret"), SECRET).unwrap();
        (root, project, outside)
    }

    fn refused(r: Result<Option<Vec<u8>>, FileError>) -> FileError {
        match r {
            Ok(bytes) => panic!("read: {bytes:?}"),
            Err(e) => {
                assert!(!e.to_string().contains("s3cret"), "{e}");
                e
            }
        }
    }

    #[test]
    fn a_regular_file_is_read_and_a_missing_one_is_none() {
        let (_root, project, _) = setup();
        fs::write(project.join("plans/x.sql"), "SELECT 1").unwrap();
        let f = Folder::open(&project).unwrap();
        assert_eq!(
            f.read(Path::new("plans/x.sql"), PROJECT_TEXT).unwrap(),
            Some(b"SELECT 1".to_vec())
        );
        assert_eq!(
            f.read(Path::new("plans/y.sql"), PROJECT_TEXT).unwrap(),
            None
        );
        assert_eq!(f.read(Path::new("none/y.sql"), PROJECT_TEXT).unwrap(), None);
    }

    #[test]
    fn a_link_as_the_file_or_a_folder_on_the_way_is_refused() {
        let (_root, project, outside) = setup();
        symlink(outside.join("secret"), project.join("plans/x.sql")).unwrap();
        symlink(&outside, project.join("baselines")).unwrap();
        fs::write(outside.join("x.member.plan"), SECRET).unwrap();
        let f = Folder::open(&project).unwrap();
        let e = refused(f.read(Path::new("plans/x.sql"), PROJECT_TEXT));
        assert!(matches!(e.why, Why::Link), "{e}");
        assert!(e.path.ends_with("plans/x.sql"), "{e}");
        let e = refused(f.read(Path::new("baselines/x.member.plan"), PROJECT_TEXT));
        assert!(matches!(e.why, Why::Link), "{e}");
        assert!(e.path.ends_with("baselines/x.member.plan"), "{e}");
        assert!(matches!(
            f.names(Path::new("baselines")).unwrap_err().why,
            Why::Link
        ));
        // The project folder named on the command line may itself be a link.
        let via = project.parent().unwrap().join("via");
        symlink(&project, &via).unwrap();
        fs::write(project.join("plans/y.sql"), "SELECT 2").unwrap();
        let f = Folder::open(&via).unwrap();
        assert!(
            f.read(Path::new("plans/y.sql"), PROJECT_TEXT)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn devices_fifos_and_folders_are_refused_at_once() {
        let (_root, project, _) = setup();
        let fifo = CString::new(project.join("plans/f.sql").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        fs::create_dir(project.join("plans/d.sql")).unwrap();
        let f = Folder::open(&project).unwrap();
        let started = Instant::now();
        let e = refused(f.read(Path::new("plans/f.sql"), PROJECT_TEXT));
        assert!(matches!(e.why, Why::NotRegular("a FIFO")), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let e = refused(f.read(Path::new("plans/d.sql"), PROJECT_TEXT));
        assert!(matches!(e.why, Why::NotRegular("a folder")), "{e}");
        let dev = Folder::open(Path::new("/dev")).unwrap();
        let e = refused(dev.read(Path::new("zero"), PROJECT_TEXT));
        assert!(
            matches!(e.why, Why::NotRegular("a character device")),
            "{e}"
        );
        // A file named on the command line is not followed either.
        let e = read_given(Path::new("/dev/zero"), MIGRATION).unwrap_err();
        assert!(matches!(e.why, Why::NotRegular(_)), "{e}");
    }

    #[test]
    fn a_file_over_its_cap_is_refused_even_when_its_size_says_nothing() {
        let (_root, project, _) = setup();
        fs::write(project.join("plans/big.sql"), vec![b'x'; 101]).unwrap();
        let f = Folder::open(&project).unwrap();
        let e = refused(f.read(Path::new("plans/big.sql"), 100));
        assert!(matches!(e.why, Why::TooLarge { cap: 100 }), "{e}");
        assert_eq!(
            f.read(Path::new("plans/big.sql"), 101)
                .unwrap()
                .unwrap()
                .len(),
            101
        );
        // /proc files say they are empty; the cap holds all the same.
        let proc = Folder::open(Path::new("/proc/self")).unwrap();
        let e = refused(proc.read(Path::new("cmdline"), 1));
        assert!(matches!(e.why, Why::TooLarge { cap: 1 }), "{e}");
    }

    #[test]
    fn a_write_replaces_a_link_and_never_writes_through_it() {
        let (_root, project, outside) = setup();
        symlink(outside.join("secret"), project.join("report.xml")).unwrap();
        let f = Folder::open(&project).unwrap();
        f.replace(Path::new("report.xml"), b"<testsuites/>")
            .unwrap();
        assert_eq!(fs::read(outside.join("secret")).unwrap(), SECRET);
        let meta = fs::symlink_metadata(project.join("report.xml")).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(
            fs::read(project.join("report.xml")).unwrap(),
            b"<testsuites/>"
        );
        // No temporary file is left beside it.
        let mut left: Vec<_> = f.names(Path::new("")).unwrap();
        left.sort();
        assert_eq!(
            left,
            [OsString::from("plans"), OsString::from("report.xml")]
        );
    }

    #[test]
    fn a_write_into_a_linked_folder_is_refused_and_writes_nothing() {
        let (_root, project, outside) = setup();
        symlink(&outside, project.join("baselines")).unwrap();
        let f = Folder::open(&project).unwrap();
        let e = f
            .replace(Path::new("baselines/x.member.plan"), b"x")
            .unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        let e = f
            .create_new(Path::new("baselines/new.plan"), b"x")
            .unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        let mut there: Vec<_> = fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        there.sort();
        assert_eq!(there, [OsString::from("secret")]);
        // Missing folders are made, as real folders.
        f.replace(Path::new("out/deep/r.json"), b"{}").unwrap();
        assert!(project.join("out/deep").is_dir());
    }

    #[test]
    fn a_new_file_is_never_written_over_anything() {
        let (_root, project, outside) = setup();
        symlink(outside.join("secret"), project.join("plans/x.sql")).unwrap();
        fs::write(project.join("plans/y.sql"), "old").unwrap();
        let f = Folder::open(&project).unwrap();
        for name in ["plans/x.sql", "plans/y.sql"] {
            let e = f.create_new(Path::new(name), b"new").unwrap_err();
            assert!(matches!(e.why, Why::Exists), "{e}");
        }
        assert_eq!(fs::read(outside.join("secret")).unwrap(), SECRET);
        assert_eq!(fs::read(project.join("plans/y.sql")).unwrap(), b"old");
        f.create_new(Path::new("plans/z.sql"), b"new").unwrap();
        assert_eq!(fs::read(project.join("plans/z.sql")).unwrap(), b"new");
        assert_eq!(f.names(Path::new("plans")).unwrap().len(), 3);
    }

    #[test]
    fn a_device_is_written_into_never_replaced() {
        let (_root, project, outside) = setup();
        let f = Folder::open(&project).unwrap();
        let dev = Folder::open(Path::new("/dev")).unwrap();
        let e = dev.replace(Path::new("null"), b"x").unwrap_err();
        assert!(
            matches!(e.why, Why::NotRegular("a character device")),
            "{e}"
        );
        // Named on the command line, a device or a link to one outside the current folder is
        // a stream, written into.
        replace_given(Path::new("/dev/null"), b"report").unwrap();
        symlink("/dev/null", project.join("null-link")).unwrap();
        replace_given(&project.join("null-link"), b"report").unwrap();
        assert!(
            fs::symlink_metadata(project.join("null-link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            Path::new("/dev/null")
                .metadata()
                .unwrap()
                .file_type()
                .is_char_device()
        );
        // A link to a regular file is replaced, wherever it is.
        symlink(outside.join("secret"), project.join("r.xml")).unwrap();
        replace_given(&project.join("r.xml"), b"report").unwrap();
        assert_eq!(fs::read(outside.join("secret")).unwrap(), SECRET);
        assert_eq!(fs::read(project.join("r.xml")).unwrap(), b"report");
        assert!(f.names(Path::new("")).unwrap().len() >= 2);
    }

    #[test]
    fn an_append_keeps_what_is_there_and_never_goes_through_a_link() {
        let (_root, project, outside) = setup();
        let summary = project.join("summary.md");
        append_given(&summary, b"one\n").unwrap();
        append_given(&summary, b"two\n").unwrap();
        assert_eq!(fs::read(&summary).unwrap(), b"one\ntwo\n");
        // A link, where the file goes or on the way to it, is refused: outside unchanged.
        symlink(outside.join("secret"), project.join("linked.md")).unwrap();
        let e = append_given(&project.join("linked.md"), b"x").unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        assert_eq!(fs::read(outside.join("secret")).unwrap(), SECRET);
        // A device is written into, never replaced.
        append_given(Path::new("/dev/null"), b"x").unwrap();
    }

    #[test]
    fn exists_sees_links_without_following_them() {
        let (_root, project, outside) = setup();
        symlink(outside.join("nothing-there"), project.join("dangling")).unwrap();
        symlink(&outside, project.join("linked")).unwrap();
        let f = Folder::open(&project).unwrap();
        assert!(f.exists(Path::new("dangling")).unwrap());
        assert!(f.exists(Path::new("plans")).unwrap());
        assert!(!f.exists(Path::new("plans/x.sql")).unwrap());
        assert!(!f.exists(Path::new("none/x.sql")).unwrap());
        let e = f.exists(Path::new("linked/secret")).unwrap_err();
        assert!(matches!(e.why, Why::Link), "{e}");
        assert!(e.path.ends_with("linked/secret"), "{e}");
    }

    #[test]
    fn paths_that_leave_the_folder_are_refused() {
        let (_root, project, _) = setup();
        let f = Folder::open(&project).unwrap();
        for rel in [
            "../outside/secret",
            "/etc/passwd",
            "plans/../../outside/secret",
        ] {
            let e = f.read(Path::new(rel), PROJECT_TEXT).unwrap_err();
            assert!(matches!(e.why, Why::NotInside), "{rel}: {e}");
        }
    }

    #[test]
    fn a_path_for_writing_is_anchored_below_the_current_folder() {
        assert_eq!(
            anchored(Path::new("out/r.xml")),
            (PathBuf::from("."), PathBuf::from("out/r.xml"))
        );
        assert_eq!(
            anchored(Path::new("../r.xml")),
            (PathBuf::from(".."), PathBuf::from("r.xml"))
        );
        assert_eq!(
            anchored(Path::new("/nowhere/out/r.xml")),
            (PathBuf::from("/nowhere/out"), PathBuf::from("r.xml"))
        );
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            anchored(&here.join("out/r.xml")),
            (here.clone(), PathBuf::from("out/r.xml"))
        );
    }
}
