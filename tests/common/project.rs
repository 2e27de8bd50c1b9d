//! Projects for the binary to check: the reference project, and folders written by a test.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// How many checks the reference project has (read paths × scopes).
pub const REFERENCE_CHECKS: usize = 15;

/// The repository root, where the reference project lives.
pub fn reference_project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Copies the folder `from` into `to`, its subfolders too.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The reference project's files (`plancheck.toml`, `plans/`, `expectations/`) in a temporary
/// folder, for a test to change.
pub fn copy_of_reference() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = reference_project();
    fs::copy(
        root.join("plancheck.toml"),
        dir.path().join("plancheck.toml"),
    )
    .unwrap();
    for folder in ["plans", "expectations"] {
        copy_dir(&root.join(folder), &dir.path().join(folder));
    }
    dir
}

/// Writes each (path under `root`, contents), making the folders on the way.
pub fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("a file has a folder")).unwrap();
        fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// A project folder from (path inside it, contents).
pub fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    write_files(dir.path(), files);
    dir
}

/// A project of read paths, each (name, SQL of `plans/NAME.sql`, `expectations/NAME.toml`).
pub fn read_paths(paths: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let files: Vec<(String, &str)> = paths
        .iter()
        .flat_map(|(name, sql, expectation)| {
            [
                (format!("plans/{name}.sql"), *sql),
                (format!("expectations/{name}.toml"), *expectation),
            ]
        })
        .collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    project(&files)
}

/// A project of one read path, named `path`.
pub fn one_read_path(plan: &str, expectation: &str) -> tempfile::TempDir {
    read_paths(&[("path", plan, expectation)])
}

/// An expectation with one scope, `member`, requiring `index`.
pub fn member(index: &str) -> String {
    format!("[scopes.member]\nindex = \"{index}\"\n")
}

/// A file in a temporary folder of its own (a migration), removed with it.
pub struct TempFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl TempFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path as a command-line argument.
    pub fn arg(&self) -> &str {
        self.path.to_str().expect("a UTF-8 path")
    }
}

/// Writes `text` to a file named `name` in a new temporary folder.
pub fn temp_file(name: &str, text: &str) -> TempFile {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    fs::write(&path, text).unwrap();
    TempFile { _dir: dir, path }
}

/// Every file under a folder, at any depth.
pub fn files_under(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                todo.push(entry.path());
            } else {
                out.insert(entry.path());
            }
        }
    }
    out
}

/// The names of the files directly in a folder, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
