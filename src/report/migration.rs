//! What applying a migration says: why it stopped (`db::migrate::Stopped`, data), and its
//! notes.

use crate::db::migrate::{Fault, Note, Refusal, Sequence, Stopped};
use crate::error::{BadInput, DatabaseFailure, Error};

/// A note of the migration, as said after `note: `.
pub fn note(note: &Note) -> String {
    match note {
        Note::ExpressionIndexUnanalysed(table) => format!(
            "the migration creates an expression index on {table}, which has no statistics \
             until {table} is analysed; plancheck does not ANALYZE existing tables unless \
             --analyze is given (see \"Before a migration\" in plancheck's documentation)"
        ),
    }
}

/// How long the run held the migration's locks, against `--migration-hold`: one sentence, for
/// the table and the Markdown.
pub fn hold(h: &crate::model::MigrationHold) -> String {
    let held = crate::report::failure::duration(std::time::Duration::from_secs_f64(
        h.held_ms.max(0.0) / 1000.0,
    ));
    let limit = crate::report::failure::duration(std::time::Duration::from_millis(h.limit_ms));
    let mut said = if !h.reached {
        format!("the migration's locks were held {held} (--migration-hold {limit})")
    } else if h.while_applying {
        format!(
            "the migration's locks were held {held}: --migration-hold ({limit}) was reached \
             while it was being applied, so it was rolled back and none of the {} checks after \
             it ran",
            h.not_run
        )
    } else {
        format!(
            "the migration's locks were held {held}: --migration-hold ({limit}) was reached \
             during the checks after it, so it was rolled back and {} of them {} not run",
            h.not_run,
            if h.not_run == 1 { "was" } else { "were" }
        )
    };
    if !h.released {
        said.push_str(
            "; the rollback was not answered, so the session was closed: the server ends the \
             transaction, and releases its locks, once its process reads from the connection \
             again",
        );
    }
    said
}

fn sequence(s: &Sequence) -> String {
    match s {
        Sequence::Named(name) => format!("sequence {name}"),
        Sequence::Unnamed { oid, was } => format!("the sequence of oid {oid} (to {was})"),
    }
}

fn fault(fault: &Fault) -> String {
    match fault {
        Fault::ExecutorTouched => "before this statement, the migration replaced or altered the \
                                   temporary function plancheck applies its statements with \
                                   (pg_temp.plancheck_apply), so it was not run; a checked \
                                   migration may not touch it"
            .to_string(),
        Fault::SequencesMovedBack { restored, failed } => {
            let moved: Vec<String> = restored.iter().chain(failed).map(sequence).collect();
            let mut what = format!(
                "this statement moved {} back (setval), which no rollback undoes, and the \
                 migration was stopped",
                moved.join(", ")
            );
            if !restored.is_empty() {
                let names: Vec<String> = restored.iter().map(sequence).collect();
                what.push_str(&format!(
                    "; plancheck set {} where it was at once",
                    names.join(", ")
                ));
            }
            if !failed.is_empty() {
                let names: Vec<String> = failed.iter().map(sequence).collect();
                what.push_str(&format!(
                    "; plancheck could not set {} back: set it back by hand",
                    names.join(", ")
                ));
            }
            what
        }
        Fault::Changed(what) => {
            format!("this statement {what}, which a checked migration may not do; nothing was kept")
        }
        Fault::Failed(refusal) => {
            let detail = match refusal {
                Refusal::LockTimeout(limit) => format!(
                    "it waited longer than lock_timeout ({} ms) for a lock another session holds",
                    limit.as_millis()
                ),
                Refusal::StatementTimeout(limit) => format!(
                    "it ran longer than statement_timeout ({} ms)",
                    limit.as_millis()
                ),
                Refusal::Said(words) => words.clone(),
            };
            format!("the migration failed, so nothing was checked after it: {detail}")
        }
    }
}

impl From<Stopped> for Error {
    fn from(stopped: Stopped) -> Error {
        match stopped {
            Stopped::Hung { path, limit } => DatabaseFailure(format!(
                "applying {path}: {}",
                crate::report::failure::hung(limit)
            ))
            .into(),
            Stopped::NotRestored(what) => DatabaseFailure(format!(
                "the session could not be put back as it was before the migration: it {what}"
            ))
            .into(),
            Stopped::Statement {
                place,
                fault: f,
                lost,
            } => {
                let message = place.locate(&fault(&f));
                if lost {
                    DatabaseFailure(message).into()
                } else {
                    BadInput(message).into()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_moved_back_name_those_set_back_and_those_not() {
        let f = Fault::SequencesMovedBack {
            restored: vec![Sequence::Named("posts_id_seq".into())],
            failed: vec![Sequence::Unnamed { oid: 7, was: 12 }],
        };
        assert_eq!(
            fault(&f),
            "this statement moved sequence posts_id_seq, the sequence of oid 7 (to 12) back \
             (setval), which no rollback undoes, and the migration was stopped; plancheck set \
             sequence posts_id_seq where it was at once; plancheck could not set the sequence \
             of oid 7 (to 12) back: set it back by hand"
        );
    }
}
