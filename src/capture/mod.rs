//! `plancheck capture`: a project written from the server's own statement log.
//!
//! `log` reads PostgreSQL server logs (csvlog, jsonlog, stderr with its `log_line_prefix`) into
//! the statements the application sent, with any bound parameters; `shape` decides which of them
//! are read paths, reads their shape and names them; `group` gathers them into read paths;
//! `propose` reads a measured plan into the expectation to propose; `merge` makes a statement one
//! condition apart from an existing plan that plan's new scope; `write` renders the files;
//! `files` opens the logs, reads the project folder and writes the proposals there. All of it
//! but `files` is pure; the command (`app::capture`) orders the steps and asks the database.

pub mod files;
pub mod group;
pub mod log;
pub mod merge;
pub mod propose;
pub mod shape;
pub mod write;

/// The column names partial-index predicates mention (every identifier in each predicate's
/// text, folded): a literal compared with one of them splits a captured shape.
pub fn predicate_columns(predicates: &[String]) -> Vec<String> {
    let dialect = crate::sql::Dialect::default();
    let mut columns: Vec<String> = predicates
        .iter()
        .flat_map(|p| {
            crate::sql::significant(p, dialect)
                .iter()
                .filter_map(crate::sql::Token::identifier)
                .collect::<Vec<_>>()
        })
        .collect();
    columns.sort();
    columns.dedup();
    columns
}
