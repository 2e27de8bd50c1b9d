//! The failures `db` raises as data ([`Unanswered`]: what was asked, the server's own words),
//! worded here.

use crate::db::{Asked, Unanswered};
use crate::error::DatabaseFailure;

/// What was asked, as a failure to answer it says it.
fn asked(asked: Asked) -> &'static str {
    match asked {
        Asked::ServerVersionNum => "could not read server_version_num",
        Asked::ServerVersion => "could not read server_version",
        Asked::ServerSettings => "could not read the server's settings",
        Asked::Catalog => "could not read the catalog",
        Asked::FreeSlots => "could not read the free connection slots",
        Asked::ServerState => "could not read the server's state",
        Asked::RoleRights => "could not read the connecting role's rights",
    }
}

impl From<Unanswered> for DatabaseFailure {
    fn from(u: Unanswered) -> DatabaseFailure {
        DatabaseFailure(format!("{}: {}", asked(u.asked), u.cause))
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
