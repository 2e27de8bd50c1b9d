//! Small facts about SQL text that need no parser: the leading comments of a statement and its
//! first keywords. Shared by the setup-statement guard and the migration vetting.

/// A statement without its leading whitespace and comments.
pub fn strip_leading_comments(s: &str) -> &str {
    let mut rest = s.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("--") {
            rest = r
                .split_once('\n')
                .map(|(_, r)| r)
                .unwrap_or("")
                .trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r
                .split_once("*/")
                .map(|(_, r)| r)
                .unwrap_or("")
                .trim_start();
        } else {
            return rest;
        }
    }
}

/// The first `n` words of a statement, upper-cased, leading comments skipped.
pub fn words(statement: &str, n: usize) -> Vec<String> {
    strip_leading_comments(statement)
        .split(|c: char| c.is_whitespace() || c == '(' || c == ';' || c == ',')
        .filter(|w| !w.is_empty())
        .take(n)
        .map(|w| w.to_ascii_uppercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_comments_are_skipped_and_words_upper_cased() {
        assert_eq!(
            strip_leading_comments("  -- a\n/* b */ select 1"),
            "select 1"
        );
        assert_eq!(
            words("/* x */ create index concurrently i", 3),
            ["CREATE", "INDEX", "CONCURRENTLY"]
        );
        assert!(words("-- only a comment", 2).is_empty());
    }
}
