//! The failures `db` raises as data ([`Unanswered`]: what was asked, the server's own words),
//! worded here.

use crate::db::{Asked, Unanswered};
use crate::error::DatabaseFailure;
use crate::report::stderr::asking;

/// What was asked, as a failure to answer it says it.
fn asked(asked: &Asked) -> String {
    let text = match asked {
        Asked::ServerVersionNum => "could not read server_version_num",
        Asked::ServerVersion => "could not read server_version",
        Asked::ServerSettings => asking::SERVER_SETTINGS,
        Asked::Catalog => asking::CATALOG,
        Asked::FreeSlots => asking::FREE_SLOTS,
        Asked::ServerState => "could not read the server's state",
        Asked::RoleRights => "could not read the connecting role's rights",
        Asked::BeginMigration => "could not begin the migration's transaction",
        Asked::ListTables => "could not list the tables",
        Asked::CreateExecutor => {
            "could not create the temporary function that applies the migration (the role needs \
             TEMPORARY on the database and PL/pgSQL)"
        }
        Asked::SessionSettings => "could not read the session's settings",
        Asked::ReadExecutor => "could not read the temporary function that applies the migration",
        Asked::Sequences => "could not read the sequences",
        Asked::RequiredIndexes => "could not read the required indexes",
        Asked::ReadOnlyMigrated => "could not make the migrated transaction read-only",
        Asked::RestoreSession => "could not put the session back as it was before the migration",
        Asked::SessionSettingsAndSequences => "could not read the session's settings and sequences",
        Asked::MigrationChanges => "could not list what the migration changed",
        Asked::Analyze(table) => return format!("could not ANALYZE {table}"),
        Asked::StartLoad => "could not start the load",
        Asked::SessionTimeouts => asking::SESSION_TIMEOUTS,
        Asked::TempFileLimit => asking::TEMP_FILE_LIMIT,
    };
    text.to_string()
}

impl From<Unanswered> for DatabaseFailure {
    fn from(u: Unanswered) -> DatabaseFailure {
        DatabaseFailure(format!("{}: {}", asked(&u.asked), u.cause))
    }
}

impl From<Unanswered> for crate::error::Error {
    fn from(u: Unanswered) -> crate::error::Error {
        DatabaseFailure::from(u).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_to_answer_says_what_was_asked_and_the_servers_words() {
        let u = Unanswered {
            asked: Asked::Catalog,
            cause: "permission denied for table pg_class".into(),
        };
        assert_eq!(
            DatabaseFailure::from(u).0,
            "could not read the catalog: permission denied for table pg_class"
        );
    }
}
