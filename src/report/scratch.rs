//! Why a re-plan on the scratch copy was not made (`db::scratch::NotMade`, data), in words.

use std::fmt;

use crate::db::scratch::{NotMade, Off, Trouble, Uncopyable};

impl fmt::Display for Off {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Off::NoScratch => f.write_str("--no-scratch"),
            Off::NotAsked => f.write_str("the scratch copy was not asked for"),
            Off::NoBinaries(major) => write!(
                f,
                "no local PostgreSQL {major} to re-plan on (looked at PLANCHECK_PG_BIN, \
                 PLANCHECK_PG{major}_BIN, the PATH, pg_config --bindir and \
                 /usr/lib/postgresql/{major}/bin); install it or set PLANCHECK_PG_BIN"
            ),
        }
    }
}

impl fmt::Display for Trouble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trouble::Said(words) => f.write_str(words),
            Trouble::Preparing(words) => write!(f, "preparing the copy: {words}"),
            Trouble::Lost(words) => write!(f, "the scratch server: {words}"),
            Trouble::Recording(words) => write!(f, "recording a failure: {words}"),
            Trouble::ReadingFailures(words) => write!(f, "reading the copy's failures: {words}"),
            Trouble::NoAnswer(limit) => write!(f, "no answer within {} s", limit.as_secs()),
            Trouble::Interrupted => f.write_str("interrupted during the re-plan"),
            Trouble::NoExplainJson => f.write_str("EXPLAIN returned no JSON document"),
            Trouble::PlanTooLarge(size) => write!(
                f,
                "the EXPLAIN document is {size} bytes, over plancheck's cap on one plan document"
            ),
            Trouble::PlanUnreadable(words) => f.write_str(words),
            Trouble::NoRivalAnswer => f.write_str("no answer about the rival indexes"),
            Trouble::IndexNotOnCopy(index) => {
                write!(f, "index {index} is not on the scratch copy")
            }
            Trouble::PreparedNotListed => {
                f.write_str("the scratch server does not list the prepared read path")
            }
        }
    }
}

impl fmt::Display for NotMade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotMade::Off(off) => off.fmt(f),
            NotMade::InterruptedBeforeCopy => {
                f.write_str("interrupted before the scratch copy was made")
            }
            NotMade::CopyNotMade(why) => write!(f, "the scratch copy could not be made: {why}"),
            NotMade::InterruptedBeforeReplan => {
                f.write_str("interrupted before this re-plan on the scratch copy")
            }
            NotMade::ReplanFailed(why) => {
                write!(f, "the re-plan on the scratch copy failed: {why}")
            }
            NotMade::CannotHold(missing) => {
                write!(f, "the scratch copy cannot hold {}", missing.join(", "))
            }
            NotMade::CouldNotTake(failed) => {
                let failed: Vec<String> = failed
                    .iter()
                    .map(|(key, why)| format!("{key} ({why})"))
                    .collect();
                write!(f, "the scratch copy could not take {}", failed.join("; "))
            }
            NotMade::Unread(words) => f.write_str(words),
        }
    }
}

/// An object the copy cannot hold (`what`: its kind and name), and why.
pub fn uncopyable(what: &str, why: Uncopyable<'_>) -> String {
    match why {
        Uncopyable::BaseType => format!("{what} (a base type of no extension)"),
        Uncopyable::Aggregate => format!("{what} (an aggregate)"),
        Uncopyable::Language(language) => format!("{what} (in language {language})"),
    }
}
