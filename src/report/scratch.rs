//! Why a re-plan on the scratch copy was not made (`db::scratch::NotMade`, data), in words.

use std::fmt;

use crate::db::scratch::{Gap, McvGap, NotMade, Off, Step, Trouble, Uncopyable, Untaken};

impl fmt::Display for Off {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Off::NoScratch => f.write_str("--no-scratch"),
            Off::NotAsked => f.write_str("the scratch copy was not asked for"),
            Off::NoBinaries(major) => write!(
                f,
                "no local PostgreSQL {major} to re-plan on (looked at PLANCHECK_PG_BIN, \
                 PLANCHECK_PG{major}_BIN, the PATH, pg_config --bindir and \
                 /usr/lib/postgresql/{major}/bin); {}",
                install_binaries(*major)
            ),
        }
    }
}

/// How to get server binaries of PostgreSQL `major` and point plancheck at them: the exact
/// commands on Debian/Ubuntu (the PostgreSQL project's own apt repository, set up by the script
/// Debian's `postgresql-common` ships) and on macOS (Homebrew), and the CI templates' input.
pub fn install_binaries(major: u32) -> String {
    format!(
        "install its server binaries and set PLANCHECK_PG_BIN to their folder: on \
         Debian/Ubuntu `sudo apt-get install -y postgresql-common && sudo \
         /usr/share/postgresql-common/pgdg/apt.postgresql.org.sh -y && sudo apt-get install -y \
         postgresql-{major}` (apt.postgresql.org), then \
         PLANCHECK_PG_BIN=/usr/lib/postgresql/{major}/bin; on macOS `brew install \
         postgresql@{major}`, then PLANCHECK_PG_BIN=\"$(brew --prefix postgresql@{major})/bin\"; \
         in CI, plancheck's GitHub Action and GitLab template install them (input \
         server-binaries)"
    )
}

/// `plancheck scratch-binaries`'s answer, one `name=value` line each for a shell to read: the
/// measured server's major and the folder of local server binaries of it (empty: none).
pub fn binaries(major: u32, bin: Option<&std::path::Path>) -> String {
    format!(
        "major={major}\nbin={}\n",
        bin.map(|b| b.display().to_string()).unwrap_or_default()
    )
}

/// Said on stderr by `plancheck scratch-binaries` when there are none.
pub fn no_binaries_note(why: &Off) -> String {
    format!("note: the scratch copy cannot be made here: {why}")
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Connecting => "connecting to it",
            Step::Bounding => "setting its session's bounds",
            Step::Version => "reading its version",
            Step::Roles => "making plancheck's roles there",
            Step::Load => "making the copy's definitions",
            Step::Probes => "making the roles the re-plans run as",
            Step::Transaction => "opening or ending the re-plan's transaction",
            Step::Rls => "turning off row-level security the measured role reads past",
            Step::Rivals => "dropping the other indexes of the table",
            Step::Session => "taking the measured session's role and settings",
            Step::Conditions => "planning the read path with index scans off",
            Step::Prepare => "preparing the read path",
            Step::Explain => "planning the read path",
            Step::Cleanup => "dropping the re-plans' roles",
            Step::Statistics => "writing production's sizes and statistics",
            Step::ProductionSettings => "taking production's planner settings",
        })
    }
}

impl fmt::Display for Trouble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trouble::Server(words) => f.write_str(words),
            Trouble::Refused { step, sqlstate } => {
                write!(f, "{step}: {}", super::sqlstate::shown(sqlstate))
            }
            Trouble::Lost(step) => write!(f, "the connection was lost {step}"),
            Trouble::NoAnswer(limit) => write!(
                f,
                "no answer within {} s on plancheck's clock; the scratch server was stopped",
                limit.as_secs()
            ),
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
            Trouble::IndexDiffers { index, copy } => write!(
                f,
                "index {index} on the scratch copy is not the measured server's: the copy has \
                 {copy}"
            ),
            Trouble::PreparedNotListed => {
                f.write_str("the scratch server does not list the prepared read path")
            }
            Trouble::StatisticsMajor { file, copy } => write!(
                f,
                "the statistics file was exported from PostgreSQL {file}, and the copy is \
                 PostgreSQL {copy}: a plan is only production's on its own major version"
            ),
            Trouble::StatisticsBlockSize { file, copy } => write!(
                f,
                "the statistics file's server has {file}-byte blocks and the copy {copy}-byte \
                 ones: its sizes cannot be made on the copy"
            ),
        }
    }
}

impl fmt::Display for Untaken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Untaken::Refused(sqlstate) => f.write_str(&super::sqlstate::shown(sqlstate)),
            Untaken::ReservedRole => f.write_str(
                "a role the copy keeps for itself: its superuser, plancheck's roles and \
                 PostgreSQL's pg_ roles are never stand-ins",
            ),
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
            NotMade::Abandoned(why) => write!(
                f,
                "the scratch copy was given up on an earlier re-plan ({why}); nothing more was \
                 asked of it"
            ),
            NotMade::NoStatistics(why) => {
                write!(
                    f,
                    "production's statistics could not be written on the copy: {why}"
                )
            }
            NotMade::StatisticsRefused(what) => write!(
                f,
                "the copy refused production's statistics for what the plan reads: {}",
                what.join("; ")
            ),
            NotMade::NotInStatistics(relations) => write!(
                f,
                "the plan reads {}, which the statistics file does not size: export {} too \
                 (plancheck stats export, --table or every table)",
                relations.join(", "),
                if relations.len() == 1 { "it" } else { "them" }
            ),
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

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gap::IndexNotOnCopy(index) => write!(
                f,
                "index {index} of production is not on the copy (not in this schema, or not \
                 copied)"
            ),
            Gap::ColumnNotOnCopy(column) => write!(f, "column {column} is not on the copy"),
            Gap::TypeDiffers { column, file, copy } => write!(
                f,
                "column {column} is {copy} here and {file} in the file: its statistics are not \
                 written"
            ),
            Gap::ValuesNotParsed { column, type_name } => write!(
                f,
                "column {column}'s values ({type_name}) are not written: before PostgreSQL 18 \
                 only a superuser writes them, and parsing this type would run the schema's \
                 own code (a composite, a domain inside, a range with a canonical function); \
                 its fractions and distinct count are written"
            ),
            Gap::NoOperator { column, kind } => write!(
                f,
                "column {column}'s {kind} are not written: its type has no operator class \
                 they are kept under"
            ),
            Gap::ColumnNotWritten { column, sqlstate } => match sqlstate {
                Some(code) => write!(
                    f,
                    "column {column}'s statistics were refused: {}",
                    super::sqlstate::shown(code)
                ),
                None => write!(
                    f,
                    "column {column}'s statistics were not all taken (the restore function \
                     answered false: a value its type refused)"
                ),
            },
            Gap::SizeNotWritten(relation) => {
                write!(
                    f,
                    "the size of {relation} was not taken by the restore function"
                )
            }
            Gap::FileNotExtended { relation, why } => {
                write!(
                    f,
                    "the files of {relation} could not be made production's size: {why}"
                )
            }
            Gap::Heights(why) => write!(
                f,
                "B-tree heights and end keys are not carried ({why}): index costs are a \
                 little low"
            ),
            Gap::HeightsRefused(code) => write!(
                f,
                "its B-tree heights and end keys are not carried (making their shadow was \
                 refused: {}): index costs are a little low",
                super::sqlstate::shown(code)
            ),
            Gap::GinNotInFile(index) => write!(
                f,
                "the file has no metapage statistics of GIN index {index} (export with \
                 pageinspect's gin_metapage_info callable): its costs are estimated from its size"
            ),
            Gap::GinNotWritten(index) => write!(
                f,
                "the metapage statistics of GIN index {index} are not written (the copy has data \
                 checksums): its costs are estimated from its size"
            ),
            Gap::Collation(collation) => write!(
                f,
                "production's database sorts text by {collation} and the copy by bytes (C): \
                 estimates of ranges over text (<, >, BETWEEN, a LIKE prefix) may differ"
            ),
            Gap::ExtendedNotOnCopy(name) => write!(
                f,
                "extended statistics {name} are not on this database's table, so production's \
                 are not written (estimates over its columns together may differ)"
            ),
            Gap::ExtendedDiffers(name) => write!(
                f,
                "extended statistics {name} cover other columns or kinds here than in the \
                 file, so production's are not written (estimates over its columns together \
                 may differ)"
            ),
            Gap::ExtendedExpressions(name) => write!(
                f,
                "the statistics of the expressions of extended statistics {name} are not \
                 written (the copy could not make a table of their types): estimates over its \
                 expressions may differ"
            ),
            Gap::ExtendedMcv(name, why) => {
                let why = match why {
                    McvGap::Shape => {
                        "the file's list is not one row of keys per frequency".to_string()
                    }
                    McvGap::NotParsed(t) => format!(
                        "parsing values of type {t} would run the schema's own code (a \
                         composite, a domain inside, an extension's type), which never runs \
                         with the copy's superuser's rights"
                    ),
                    McvGap::Refused(code) if code.is_empty() => {
                        "the copy's server refused its values".to_string()
                    }
                    McvGap::Refused(code) => {
                        format!("the copy's server refused its values (SQLSTATE {code})")
                    }
                    McvGap::NotRead => {
                        "its values could not be read back from the copy's file".to_string()
                    }
                };
                write!(
                    f,
                    "the most common values of extended statistics {name} are not written \
                     ({why}): estimates of conditions on all its columns at once may differ"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: without binaries of the measured major (a CI runner beside a `postgres:17`
    /// service), the message said "install it" and left the reader to find out how.
    #[test]
    fn no_binaries_names_the_commands_that_install_them_and_the_variable() {
        let why = Off::NoBinaries(17).to_string();
        assert!(
            why.starts_with("no local PostgreSQL 17 to re-plan on (looked at PLANCHECK_PG_BIN, "),
            "{why}"
        );
        // Debian/Ubuntu: the PGDG repository set up by postgresql-common's own script, the
        // package of that major, and the folder it installs the binaries in.
        assert!(
            why.contains(
                "on Debian/Ubuntu `sudo apt-get install -y postgresql-common && sudo \
                 /usr/share/postgresql-common/pgdg/apt.postgresql.org.sh -y && sudo apt-get \
                 install -y postgresql-17` (apt.postgresql.org), then \
                 PLANCHECK_PG_BIN=/usr/lib/postgresql/17/bin;"
            ),
            "{why}"
        );
        // macOS: Homebrew's versioned formula, and its bin folder.
        assert!(
            why.contains(
                "on macOS `brew install postgresql@17`, then \
                 PLANCHECK_PG_BIN=\"$(brew --prefix postgresql@17)/bin\";"
            ),
            "{why}"
        );
        assert!(why.contains("input server-binaries"), "{why}");
        // Nothing of another major.
        assert!(!why.contains("16") && !why.contains("18"), "{why}");
    }

    #[test]
    fn scratch_binaries_answers_one_line_each_and_an_empty_bin_when_none() {
        let bin = std::path::Path::new("/usr/lib/postgresql/17/bin");
        assert_eq!(
            binaries(17, Some(bin)),
            "major=17\nbin=/usr/lib/postgresql/17/bin\n"
        );
        assert_eq!(binaries(17, None), "major=17\nbin=\n");
    }
}
