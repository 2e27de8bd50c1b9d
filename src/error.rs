//! Typed errors the orchestration branches on, and the rendering of a located diagnostic
//! (`path:line:col: message` with a source snippet) for errors in files people write.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Bad input: a config, expectation or plan file, or an argument. Exit status 2.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// The database could not be reached or failed underneath. Exit status 3.
#[derive(Debug)]
pub struct DatabaseFailure(pub String);

impl fmt::Display for DatabaseFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DatabaseFailure {}

/// Output plancheck could not write: the report on stdout (a full disk; a closed pipe is not an
/// error), a `--save-plans` file. Exit status 4.
#[derive(Debug)]
pub struct OutputFailure(pub String);

impl fmt::Display for OutputFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutputFailure {}

/// Every error a command can end with. Each variant is one exit status; an error of another
/// crate (I/O, the driver, serde) is turned into one of these where it arises, with a sentence
/// saying what plancheck was doing, so nothing reaches the user as an unnamed library error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    BadInput(#[from] BadInput),
    #[error(transparent)]
    Database(#[from] DatabaseFailure),
    #[error(transparent)]
    Output(#[from] OutputFailure),
    /// Ctrl-C or SIGTERM: the status the signal asks for.
    #[error(transparent)]
    Stopped(#[from] crate::stop::Interrupted),
}

/// A command's result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The exit status, in one exhaustive match onto [`crate::exit_codes`].
    pub fn exit_status(&self) -> i32 {
        match self {
            Error::BadInput(_) => crate::exit_codes::BAD_INPUT,
            Error::Database(_) => crate::exit_codes::DATABASE,
            Error::Output(_) => crate::exit_codes::OUTPUT,
            Error::Stopped(crate::stop::Interrupted(code)) => *code,
        }
    }
}

/// A place in a file a user wrote (a plan, an expectation): its path as plancheck was given it,
/// and the line and column (1-based, the column in characters). Errors found there carry one, so
/// an annotation can point at the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spot {
    pub path: String,
    pub line: usize,
    pub column: usize,
}

impl Spot {
    /// The place of byte `offset` of `source`, the text of the file at `path`.
    pub fn at(path: &str, source: &str, offset: usize) -> Spot {
        let (line, column) = line_col(source, offset);
        Spot {
            path: path.to_string(),
            line,
            column,
        }
    }
}

/// Line and column (both 1-based, column in characters) of a byte offset into `source`.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(source, offset.min(source.len()));
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let col = source[line_start..offset].chars().count() + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Longest source line shown whole under a diagnostic; a longer one (a minified query, a file
/// that is one 10 MB line) is cut to a window of this many characters around the column.
const SHOWN_CHARS: usize = 120;

/// Longest message shown; a longer one (grown from a value quoted whole) is cut.
const MAX_MESSAGE_CHARS: usize = 1000;

/// Renders `path:line:col: message` and the offending line with a caret under the column.
pub fn located(path: &str, source: &str, offset: usize, message: &str) -> String {
    let (line, col) = line_col(source, offset);
    let text = source.lines().nth(line - 1).unwrap_or("");
    let total = text.chars().count();
    let at = col - 1;
    // A long line is shown as a window around the column, its cut ends marked with `…`.
    let (start, take) = if total <= SHOWN_CHARS {
        (0, total)
    } else {
        let start = at.saturating_sub(SHOWN_CHARS / 2).min(total - SHOWN_CHARS);
        (start, SHOWN_CHARS)
    };
    // Control characters would garble a terminal; show them as the replacement character.
    let shown: String = text
        .chars()
        .skip(start)
        .take(take)
        .map(|c| {
            if c.is_control() && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if start + take < total { "…" } else { "" };
    // The message is one line: a control character a value brought in is shown escaped, and a
    // message grown huge from a value is cut.
    let mut message: String = message
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .take(MAX_MESSAGE_CHARS + 1)
        .collect();
    if message.chars().count() > MAX_MESSAGE_CHARS {
        message = message.chars().take(MAX_MESSAGE_CHARS).collect();
        message.push('…');
    }
    let gutter = line.to_string().len();
    let pad = " ".repeat(gutter);
    let caret_pad: String = before
        .chars()
        .chain(shown.chars().take(at - start))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    format!(
        "{path}:{line}:{col}: {message}\n{pad} |\n{line} | {before}{shown}{after}\n{pad} | {caret_pad}^"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_not_bytes() {
        let src = "ab\nçé x";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 3), (2, 1));
        // 'x' is at byte 8 (ç and é are two bytes each), the 4th character of line 2.
        assert_eq!(line_col(src, 8), (2, 4));
        // An offset inside a character or past the end does not panic.
        assert_eq!(line_col(src, 4), (2, 1));
        assert_eq!(line_col(src, 999), (2, 5));
    }

    #[test]
    fn located_points_at_the_column() {
        let text = located("plans/x.sql", "select\n  frm t", 9, "syntax error");
        assert!(text.starts_with("plans/x.sql:2:3: syntax error"), "{text}");
        assert!(text.ends_with("  |   ^"), "{text}");
    }

    #[test]
    fn the_message_stays_on_one_line() {
        let text = located("f", "x = 1", 0, "unknown field `a\nb`");
        assert!(text.starts_with("f:1:1: unknown field `a\\nb`\n"), "{text}");
        let text = located("f", "x = 1", 0, &"m".repeat(5000));
        assert!(
            text.lines().next().unwrap().chars().count() < 1100,
            "{text}"
        );
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_column() {
        let long = format!("select {} from t where {{{{x}}}}", "a, ".repeat(100_000));
        let offset = long.find("{{").unwrap();
        let text = located("plans/x.sql", &long, offset, "no value");
        assert!(text.len() < 1000, "{} bytes", text.len());
        assert!(text.starts_with("plans/x.sql:1:300022: no value"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        // The caret sits under the `{{`.
        let caret = lines[3].chars().count() - 1;
        assert_eq!(lines[2].chars().nth(caret), Some('{'), "{text}");
        assert!(lines[2].starts_with("1 | …"), "{text}");
        // The start of a long line and its end.
        let text = located("f", &long, 0, "m");
        assert!(text.lines().nth(2).unwrap().ends_with('…'), "{text}");
        assert!(text.ends_with("| ^"), "{text}");
        let text = located("f", &long, long.len(), "m");
        assert!(text.lines().nth(2).unwrap().starts_with("1 | …"), "{text}");
    }
}
