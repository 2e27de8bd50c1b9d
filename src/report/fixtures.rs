//! What `fixtures load` says: why it refused or failed (`db::fixtures::Problem`, data), and its
//! progress.

use crate::db::fixtures::{DROP_LOCK_TIMEOUT, MARKER, Problem, Progress};
use crate::error::{BadInput, DatabaseFailure, Error};

/// The words of a problem.
fn words(problem: &Problem) -> String {
    match problem {
        Problem::BadScale(scale) => format!(
            "--scale {scale}: must be above 0 and at most 1 (1 is the full board: 2,343,847 posts)"
        ),
        Problem::MissingFile(file) => format!("{file} is missing from this build"),
        Problem::StepFailed { label, cause } => {
            format!("loading the board failed at step `{label}`: {cause}")
        }
        Problem::NoSchema => "the search_path names no schema that exists, so there is nowhere \
                              to create the reference board; nothing was changed"
            .to_string(),
        Problem::Taken(taken) => {
            let (verb, pronoun) = if taken.len() == 1 {
                ("exists", "it")
            } else {
                ("exist", "them")
            };
            format!(
                "cannot load the reference board: {} already {verb} in the search path without \
                 a comment starting `{MARKER}`, so nothing shows plancheck created {pronoun}; \
                 nothing was changed (rename or drop {pronoun} yourself, or load into another \
                 database)",
                taken.join(", ")
            )
        }
        Problem::Loaded(scale) => {
            let scale = scale
                .as_ref()
                .map(|s| format!(" (scale {s})"))
                .unwrap_or_default();
            format!(
                "a reference board is already loaded in this database{scale}; nothing was \
                 changed: `plancheck fixtures load --replace` reloads it"
            )
        }
        Problem::Additions(added) => {
            let pronoun = if added.len() == 1 { "it" } else { "them" };
            format!(
                "cannot replace the reference board: {} would be dropped with its tables, and \
                 plancheck did not create {pronoun}; nothing was dropped (drop {pronoun} \
                 yourself, then run again)",
                added.join(", "),
            )
        }
        Problem::Dependents(detail) => {
            let dependents: Vec<&str> = detail
                .as_deref()
                .unwrap_or("")
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let dependents = if dependents.is_empty() {
                "objects of yours depend on it".to_string()
            } else {
                dependents.join("; ")
            };
            format!(
                "cannot replace the reference board: {dependents}; nothing was dropped \
                 (plancheck never drops what it did not create: drop or change those objects, \
                 then run again)"
            )
        }
        Problem::DropLocked => format!(
            "could not drop the board loaded before: another session holds a lock on it \
             (waited {DROP_LOCK_TIMEOUT}); nothing was dropped"
        ),
        Problem::DropFailed(cause) => {
            format!("could not drop the board loaded before: {cause}; nothing was dropped")
        }
        Problem::CommitFailed(cause) => format!(
            "could not commit dropping the board loaded before: {cause}; nothing was dropped"
        ),
    }
}

impl From<Problem> for Error {
    fn from(problem: Problem) -> Error {
        let text = words(&problem);
        match problem {
            Problem::BadScale(_)
            | Problem::NoSchema
            | Problem::Taken(_)
            | Problem::Loaded(_)
            | Problem::Additions(_)
            | Problem::Dependents(_) => BadInput(text).into(),
            Problem::MissingFile(_)
            | Problem::StepFailed { .. }
            | Problem::DropLocked
            | Problem::DropFailed(_)
            | Problem::CommitFailed(_) => DatabaseFailure(text).into(),
        }
    }
}

/// Says how the load goes, on stderr.
pub fn tell(progress: &Progress<'_>) {
    match progress {
        Progress::Dropped(dropped) => crate::term::say!(
            "dropped what plancheck loaded here before: {}",
            dropped.join(", ")
        ),
        Progress::Step {
            scale,
            n,
            total,
            label,
        } => crate::term::say_part!(
            "loading the reference board (scale {scale}): [{n}/{total}] {label} …"
        ),
        Progress::StepDone(secs) => crate::term::say!(" {secs:.1} s"),
        Progress::StepFailed => crate::term::say!(),
        Progress::Loaded { scale, secs } => {
            crate::term::say!("loaded the reference board at scale {scale} in {secs:.1} s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_name_is_refused_naming_it() {
        let message = words(&Problem::Taken(vec![
            "table public.posts".into(),
            "view public.board_fragments".into(),
        ]));
        assert!(message.contains("table public.posts, view"), "{message}");
        assert!(message.contains("nothing was changed"), "{message}");
    }

    #[test]
    fn a_loaded_board_needs_replace() {
        let message = words(&Problem::Loaded(Some("0.05".into())));
        assert!(message.contains("(scale 0.05)"), "{message}");
        assert!(message.contains("--replace"), "{message}");
    }

    #[test]
    fn additions_are_named_and_not_dropped() {
        let message = words(&Problem::Additions(vec![
            "index public.mine on table posts".to_string(),
        ]));
        assert!(
            message.contains("did not create it; nothing was dropped"),
            "{message}"
        );
    }

    #[test]
    fn the_dependents_come_from_the_servers_detail() {
        let message = words(&Problem::Dependents(Some(
            "view recent_posts depends on table posts\n\
             constraint likes_thread_fkey on table likes depends on table threads"
                .into(),
        )));
        assert!(
            message.contains(
                "view recent_posts depends on table posts; constraint likes_thread_fkey on table \
                 likes depends on table threads; nothing was dropped"
            ),
            "{message}"
        );
        assert!(!message.contains("CASCADE"), "{message}");
        assert!(words(&Problem::Dependents(None)).contains("nothing was dropped"));
    }

    #[test]
    fn a_refusal_is_bad_input_and_a_failure_the_databases() {
        assert_eq!(
            Error::from(Problem::Loaded(None)).exit_status(),
            Error::from(BadInput(String::new())).exit_status()
        );
        assert_eq!(
            Error::from(Problem::DropLocked).exit_status(),
            Error::from(DatabaseFailure(String::new())).exit_status()
        );
    }
}
