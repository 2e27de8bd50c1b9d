//! Typed errors the orchestration branches on, and the rendering of a located diagnostic
//! (`path:line:col: message` with a source snippet) for errors in files people write.

use std::fmt;

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

/// Renders `path:line:col: message` and the offending line with a caret under the column.
pub fn located(path: &str, source: &str, offset: usize, message: &str) -> String {
    let (line, col) = line_col(source, offset);
    let text = source.lines().nth(line - 1).unwrap_or("");
    // Control characters would garble a terminal; show them as the replacement character.
    let text: String = text
        .chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect();
    let gutter = line.to_string().len();
    let pad = " ".repeat(gutter);
    let caret_pad: String = text
        .chars()
        .take(col.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    format!("{path}:{line}:{col}: {message}\n{pad} |\n{line} | {text}\n{pad} | {caret_pad}^")
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
}
