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

/// When `sql[i..]` starts a string literal, a quoted identifier, a comment or a dollar-quoted
/// body, the offset just past it (the end of the text when it is not closed); otherwise `None`.
/// One lexer for every scan of SQL text that must not look inside these.
pub fn skip_literal(sql: &str, i: usize) -> Option<usize> {
    let b = sql.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    match b.get(i)? {
        &q @ (b'\'' | b'"') => {
            let mut j = i + 1;
            while j < b.len() {
                if b[j] == q {
                    if b.get(j + 1) == Some(&q) {
                        j += 2;
                        continue;
                    }
                    return Some(j + 1);
                }
                j += 1;
            }
            Some(b.len())
        }
        b'-' if b.get(i + 1) == Some(&b'-') => Some(sql[i..].find('\n').map_or(b.len(), |n| i + n)),
        b'/' if b.get(i + 1) == Some(&b'*') => {
            let mut depth = 1;
            let mut j = i + 2;
            while j < b.len() && depth > 0 {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            Some(j)
        }
        // A dollar quote: $$ or $tag$, where the tag cannot start with a digit ($1 is a
        // parameter) and the `$` does not continue an identifier.
        b'$' if !(b.get(i + 1).is_some_and(u8::is_ascii_digit) || i > 0 && ident(b[i - 1])) => {
            let mut k = i + 1;
            while k < b.len() && ident(b[k]) {
                k += 1;
            }
            if b.get(k) != Some(&b'$') {
                return None;
            }
            let tag = &sql[i..=k];
            Some(
                sql[k + 1..]
                    .find(tag)
                    .map_or(b.len(), |end| k + 1 + end + tag.len()),
            )
        }
        _ => None,
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
    fn literals_comments_and_dollar_bodies_are_skipped_whole() {
        let sql = "'it''s' \"q\"\"x\" -- c\n/* a /* b */ c */ $t$ ; $t$ $1 a$b$";
        assert_eq!(skip_literal(sql, 0), Some(7));
        assert_eq!(&sql[skip_literal(sql, 8).unwrap()..][..1], " ");
        assert_eq!(&sql[skip_literal(sql, 15).unwrap()..][..1], "\n");
        let block = sql.find("/*").unwrap();
        assert_eq!(&sql[skip_literal(sql, block).unwrap()..][..1], " ");
        let dollar = sql.find("$t$").unwrap();
        assert_eq!(&sql[skip_literal(sql, dollar).unwrap()..][..3], " $1");
        assert_eq!(skip_literal(sql, sql.find("$1").unwrap()), None);
        assert_eq!(skip_literal(sql, sql.find("$b$").unwrap()), None);
        assert_eq!(skip_literal("'open", 0), Some(5));
    }

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
