//! The project `plancheck init` writes to start from: `plancheck.toml`, one example plan and its
//! expectation, which pass on any PostgreSQL database (they read the catalog).

use std::path::{Path, PathBuf};

use crate::error::{self, BadInput, OutputFailure};
use crate::files::Folder;

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

/// Writes the starter project into `dir` and returns the files written. `dir`, named on the
/// command line, is taken as given (made when missing); below it nothing is a link, as in every
/// project ([`crate::files`]): a committed `plans/` that links elsewhere is refused, not written
/// through. Nothing is written over: a project that exists is the user's (a link counts as a
/// file), and then nothing at all is written.
pub fn write(dir: &Path) -> error::Result<Vec<PathBuf>> {
    let files: [(&str, &str); 3] = [
        ("plancheck.toml", CONFIG),
        ("plans/example.sql", PLAN),
        ("expectations/example.toml", EXPECTATION),
    ];
    let folder = Folder::anchor(dir).map_err(|e| OutputFailure(e.to_string()))?;
    for (rel, _) in &files {
        match folder.exists(Path::new(rel)) {
            Ok(false) => {}
            Ok(true) => {
                return Err(BadInput(format!(
                    "{}: already exists; plancheck init writes a new project and never \
                     overwrites one",
                    dir.join(rel).display()
                ))
                .into());
            }
            Err(e) => return Err(BadInput(e.to_string()).into()),
        }
    }
    for (rel, text) in &files {
        folder
            .create_new(Path::new(rel), text.as_bytes())
            .map_err(|e| OutputFailure(e.to_string()))?;
    }
    Ok(files.iter().map(|(rel, _)| dir.join(rel)).collect())
}
