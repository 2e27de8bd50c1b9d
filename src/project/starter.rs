//! The project `plancheck init` writes to start from: `plancheck.toml`, one example plan and its
//! expectation, which pass on any PostgreSQL database (they read the catalog).

use std::path::{Path, PathBuf};

use crate::error::{self, BadInput, OutputFailure};

const CONFIG: &str = r#"# plancheck.toml: the scopes every expectation may be checked in, and what each shares.
# A scope is who reads: a member sees visible posts, a moderator sees them all. The same read
# path often needs a different index per scope (a partial index and its unfiltered twin).

[scopes.member]
# setup = ["SET ROLE app_member"]                 # SET / RESET / SELECT, run in the check's
                                                   # read-only transaction first
# fragments = { visibility = "p.visibility = 'visible'" }   # fills {{visibility}} in plans
# settings = { random_page_cost = "1.1" }          # planner settings production runs with

[scopes.moderator]
# fragments = { visibility = "true" }
"#;

const PLAN: &str = r#"-- plans/example.sql: one read path, the SQL exactly as the application sends it: a literal
-- where it sends a literal, $1 where it binds a parameter (give the values in the
-- expectation). Replace this example, which reads the catalog every PostgreSQL database has,
-- with one of your application's queries.
SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = $1
"#;

const EXPECTATION: &str = r#"# expectations/example.toml: what must hold for plans/example.sql in each scope. Say here
# why the read path matters (which page, how often).
params = [1259]                        # $1

[scopes.member]
index = "pg_catalog.pg_class_oid_index"   # the index the read path must use in this scope

[scopes.moderator]
index = "pg_catalog.pg_class_oid_index"
# budget = { warm_ms = 5, buffers = 50 }  # optional: p50 execution time, shared buffers
"#;

/// Writes the starter project into `dir` and returns the files written. Nothing is written
/// over: a project that exists is the user's (a link counts as a file), and then nothing at all
/// is written.
pub fn write(dir: &Path) -> error::Result<Vec<PathBuf>> {
    let files: [(PathBuf, &str); 3] = [
        (dir.join("plancheck.toml"), CONFIG),
        (dir.join("plans/example.sql"), PLAN),
        (dir.join("expectations/example.toml"), EXPECTATION),
    ];
    if let Some((path, _)) = files.iter().find(|(p, _)| p.symlink_metadata().is_ok()) {
        return Err(BadInput(format!(
            "{}: already exists; plancheck init writes a new project and never overwrites one",
            path.display()
        ))
        .into());
    }
    for (path, text) in &files {
        write_new(path, text)?;
    }
    Ok(files.into_iter().map(|(path, _)| path).collect())
}

/// Writes a new file, never over anything and never through a link; the folders on the way
/// are made, none of them a link below where the path is anchored.
fn write_new(path: &Path, text: &str) -> Result<(), OutputFailure> {
    let fail = |e: crate::files::FileError| OutputFailure(e.to_string());
    let (anchor, rest) = crate::files::anchored(path);
    crate::files::Folder::anchor(&anchor)
        .and_then(|f| f.create_new(&rest, text.as_bytes()))
        .map_err(fail)
}
