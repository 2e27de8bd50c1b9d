//! Why no session could be opened (`db::NotConnected`, data), in words: each host tried, and
//! what a PostgreSQL user is told for the commonest failures, as psql tells it.

use crate::db::NotConnected;
use crate::error::DatabaseFailure;

/// The hint for the commonest failures to connect, as psql gives it.
fn hint(failure: &str) -> Option<&'static str> {
    if failure.contains("Connection refused") {
        Some("is the server running on that host and accepting TCP/IP connections on that port?")
    } else if failure.contains(".s.PGSQL.") && failure.contains("No such file or directory") {
        Some(
            "is the server running locally and accepting connections on that socket? host= or \
             PGHOST names the socket's folder",
        )
    } else if failure.contains("password authentication failed")
        || failure.contains("no password")
        || failure.contains("password missing")
    {
        Some(
            "give the password in PGPASSWORD, or in a password file readable by you alone \
             (PGPASSFILE; libpq's format), not in a URL a log may show",
        )
    } else {
        None
    }
}

impl From<NotConnected> for DatabaseFailure {
    fn from(n: NotConnected) -> DatabaseFailure {
        let failures: Vec<String> = n
            .tried
            .iter()
            .map(|(host, cause)| format!("could not connect to {host}: {cause}"))
            .collect();
        let mut message = failures.join("; ");
        if let Some(hint) = hint(&message) {
            message.push_str(&format!(" ({hint})"));
        }
        if let Some(chosen) = n.chosen_by_defaults {
            message = format!(
                "no --database-url or DATABASE_URL was given, so the PG* variables and libpq's \
                 defaults chose {chosen}: {message}"
            );
        }
        DatabaseFailure(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_host_is_named_with_its_cause_and_psqls_hint() {
        let n = NotConnected {
            tried: vec![
                (
                    "db1:5432".into(),
                    "Connection refused (os error 111)".into(),
                ),
                ("db2:5432".into(), "timed out".into()),
            ],
            chosen_by_defaults: None,
        };
        assert_eq!(
            DatabaseFailure::from(n).0,
            "could not connect to db1:5432: Connection refused (os error 111); could not connect \
             to db2:5432: timed out (is the server running on that host and accepting TCP/IP \
             connections on that port?)"
        );
    }

    #[test]
    fn a_password_failure_says_where_a_password_goes() {
        let n = NotConnected {
            tried: vec![(
                "localhost:5432".into(),
                "password authentication failed for user \"app\"".into(),
            )],
            chosen_by_defaults: Some("localhost:5432/app".into()),
        };
        let m = DatabaseFailure::from(n).0;
        assert!(
            m.starts_with("no --database-url or DATABASE_URL was given"),
            "{m}"
        );
        assert!(m.contains("PGPASSWORD"), "{m}");
    }
}
