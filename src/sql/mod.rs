//! SQL text read exactly as PostgreSQL reads it, before any of it reaches the server.
//!
//! plancheck reads SQL from project files it does not trust (a pull request writes them) and
//! must refuse transaction control, `LOCK`, bound-lifting `SET`s and the like before sending a
//! byte. That refusal is only as good as the reading: wherever this lexer and the server's
//! disagree about where a comment, a string or a word ends, an attacker can hide a `COMMIT`
//! from one of them. So the lexer follows `src/backend/parser/scan.l` rule for rule (nested
//! block comments, `\r` ending a `--` comment, backslash escapes in `E''` strings and in every
//! string when `standard_conforming_strings` is off, string continuation across newlines,
//! dollar quotes, non-ASCII bytes as identifier characters), and the statement splitter
//! follows psql's `psqlscan.l`.
//!
//! [`tokens`] covers the text exactly; [`split`] cuts a script into statements; [`classify`],
//! [`set_config_calls`] and [`highest_param`] answer the questions the guards ask of one
//! statement. Each statement must then go to the server on its own through Parse (the extended
//! protocol), which refuses a text holding several statements: the reading here is of the first
//! statement of a text, and psql's `BEGIN … END` heuristic, replicated in [`split`], can be led
//! to leave two statements in one piece.

mod lex;
pub mod names;
mod statement;

pub use statement::{Kind, SetConfigCall, Statement, classify, set_config_calls, split};

/// How the text is to be read: PostgreSQL's `standard_conforming_strings` (on by default since
/// 9.1). Off, a backslash escapes the next character in every `'…'` string, not only in `E'…'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    pub standard_conforming_strings: bool,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect {
            standard_conforming_strings: true,
        }
    }
}

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Spaces, tabs, newlines (`\n` or `\r`), form feeds, vertical tabs.
    Whitespace,
    /// A `--` comment (to the next `\n` or `\r`, which is not part of it) or a nested `/* */`
    /// comment; unterminated, it runs to the end of the text.
    Comment,
    /// An unquoted identifier or keyword; it may hold `$` and any non-ASCII character.
    Word,
    /// `"…"` or `U&"…"`.
    QuotedIdent,
    /// `'…'`, `E'…'`, `N'…'`, `U&'…'` (with any continuation on following lines), `$tag$…$tag$`.
    String,
    /// `B'…'` or `X'…'`.
    BitString,
    /// A numeric literal, with any identifier glued to it (the server rejects `1abc` whole).
    Number,
    /// `$1`, `$2`, …
    Param,
    /// A run of operator characters as the server cuts it (`+`, `<=`, `@>`, …).
    Operator,
    /// `,` `(` `)` `[` `]` `.` `..` `:` `::` `:=`, and any other single character the server
    /// returns as itself (`$` not starting a quote or a parameter, `\`, `{`, …).
    Punct,
    /// `;`
    Semicolon,
}

/// One token: its kind, its exact text, and the byte offset where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    pub start: usize,
}

impl Token<'_> {
    /// An unquoted word folded as PostgreSQL folds keywords: ASCII letters upper-cased (for
    /// comparing with "COMMIT"); None for other kinds. `ＣＯＭＭＩＴ` and `COMMIT` followed by a
    /// no-break space stay what they are: identifiers, not the keyword.
    pub fn keyword(&self) -> Option<String> {
        (self.kind == TokenKind::Word).then(|| self.text.to_ascii_uppercase())
    }

    /// For a String token: its value with quoting and escapes undone (`''`, `E''` backslash
    /// escapes, backslashes in `'…'` when the dialect is not standard-conforming, continuation
    /// lines joined, a dollar-quoted body as is). None when it cannot be decoded exactly: an
    /// unterminated literal, an escape the server rejects, `U&'…'` holding a backslash (its
    /// escapes depend on a `UESCAPE` clause this token cannot see), `\v` (a vertical tab from
    /// PostgreSQL 16, a `v` before).
    pub fn string_value(&self, dialect: Dialect) -> Option<String> {
        if self.kind != TokenKind::String {
            return None;
        }
        let plain = if dialect.standard_conforming_strings {
            lex::Quoting::Standard
        } else {
            lex::Quoting::Escape
        };
        let t = self.text;
        match t.as_bytes().first()? {
            b'$' => dollar_body(t).map(str::to_string),
            b'\'' => lex::quoted_value(t, plain),
            b'e' | b'E' => lex::quoted_value(t.get(1..)?, lex::Quoting::Escape),
            b'n' | b'N' => lex::quoted_value(t.get(1..)?, plain),
            b'u' | b'U' => {
                lex::quoted_value(t.get(2..)?, lex::Quoting::Standard).filter(|v| !v.contains('\\'))
            }
            _ => None,
        }
    }

    /// For a Word or QuotedIdent: the identifier as PostgreSQL stores it (Word: ASCII
    /// letters lower-cased; QuotedIdent: unquoted, `""` → `"`), truncated to 63 bytes as the
    /// server truncates it. None for an empty or unterminated quoted identifier and for
    /// `U&"…"` holding a backslash (see [`Token::string_value`]).
    pub fn identifier(&self) -> Option<String> {
        match self.kind {
            TokenKind::Word => Some(lex::fold_identifier(self.text)),
            TokenKind::QuotedIdent if self.text.starts_with('"') => {
                lex::quoted_ident_value(self.text).map(lex::truncate_identifier)
            }
            TokenKind::QuotedIdent => lex::quoted_ident_value(self.text.get(2..)?)
                .filter(|v| !v.contains('\\'))
                .map(lex::truncate_identifier),
            _ => None,
        }
    }

    /// Whether the token is `U&'…'` or `U&"…"`.
    fn is_unicode(&self) -> bool {
        matches!(self.kind, TokenKind::String | TokenKind::QuotedIdent)
            && matches!(self.text.as_bytes(), [b'u' | b'U', b'&', ..])
    }

    /// Whether the token is whitespace or a comment.
    pub fn is_trivia(&self) -> bool {
        matches!(self.kind, TokenKind::Whitespace | TokenKind::Comment)
    }
}

/// The body of a terminated `$tag$…$tag$` literal.
fn dollar_body(text: &str) -> Option<&str> {
    let tag_len = text.get(1..)?.find('$')? + 2;
    let tag = text.get(..tag_len)?;
    if text.len() < 2 * tag_len || !text.ends_with(tag) {
        return None;
    }
    text.get(tag_len..text.len() - tag_len)
}

/// A lexer over one text whose dialect may change between tokens, as it does on the server
/// after `SET standard_conforming_strings`.
struct Lexer<'a> {
    sql: &'a str,
    pos: usize,
    dialect: Dialect,
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let start = self.pos;
        if start >= self.sql.len() {
            return None;
        }
        let (kind, end) = lex::next(self.sql.as_bytes(), start, self.dialect);
        // The lexer only ends tokens on ASCII bytes; this keeps a slip from stalling the loop
        // or cutting a character in two.
        let mut end = end.clamp(start + 1, self.sql.len());
        while !self.sql.is_char_boundary(end) {
            end += 1;
        }
        self.pos = end;
        let text = self.sql.get(start..end)?;
        Some(Token { kind, text, start })
    }
}

/// Every token of the text, whitespace and comments included, covering the text exactly
/// (concatenating the texts gives back the input).
pub fn tokens(sql: &str, dialect: Dialect) -> Vec<Token<'_>> {
    Lexer {
        sql,
        pos: 0,
        dialect,
    }
    .collect()
}

/// The significant tokens (no whitespace or comments) of one statement.
pub fn significant(sql: &str, dialect: Dialect) -> Vec<Token<'_>> {
    let mut all = tokens(sql, dialect);
    all.retain(|t| !t.is_trivia());
    all
}

/// The highest `$n` parameter number in the text and the byte offset of its first occurrence;
/// (0, 0) when there is none. A number too large for `usize` counts as `usize::MAX` (the
/// server rejects anything above 2^31 - 1).
pub fn highest_param(sql: &str, dialect: Dialect) -> (usize, usize) {
    let mut best = (0, 0);
    for t in tokens(sql, dialect) {
        if t.kind != TokenKind::Param {
            continue;
        }
        let digits = (t.text.get(1..).unwrap_or(""))
            .bytes()
            .take_while(u8::is_ascii_digit)
            .fold(0usize, |n, d| {
                n.saturating_mul(10).saturating_add(usize::from(d - b'0'))
            });
        if digits > best.0 {
            best = (digits, t.start);
        }
    }
    best
}

/// The names `sql` calls: each word or quoted name followed by `(`, as the server folds it,
/// once each and sorted. A keyword followed by `(` (`IN (`, `VALUES (`) is among them: the
/// server's catalog, not the text, tells which are functions.
pub fn called_names(sql: &str, dialect: Dialect) -> Vec<String> {
    let toks = significant(sql, dialect);
    toks.windows(2)
        .filter(|w| w[1].kind == TokenKind::Punct && w[1].text == "(")
        .filter_map(|w| w[0].identifier())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn called_names_are_the_words_before_a_parenthesis_as_the_server_folds_them() {
        let sql =
            "SELECT Lower(title), \"MyFn\"(1), count(*) FROM t -- f(\nWHERE x IN (1) AND 'g(' = s";
        assert_eq!(
            called_names(sql, Dialect::default()),
            vec!["MyFn", "count", "in", "lower"]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>()
        );
    }

    const STD: Dialect = Dialect {
        standard_conforming_strings: true,
    };
    const NON_STD: Dialect = Dialect {
        standard_conforming_strings: false,
    };

    /// The significant tokens as (kind, text) pairs.
    fn lexed(sql: &str, dialect: Dialect) -> Vec<(TokenKind, &str)> {
        significant(sql, dialect)
            .into_iter()
            .map(|t| (t.kind, t.text))
            .collect()
    }

    /// The keywords among the significant tokens, upper-cased.
    fn keywords(sql: &str, dialect: Dialect) -> Vec<String> {
        significant(sql, dialect)
            .iter()
            .filter_map(Token::keyword)
            .collect()
    }

    fn sees_commit(sql: &str, dialect: Dialect) -> bool {
        keywords(sql, dialect).iter().any(|k| k == "COMMIT")
    }

    const TRICKY: &[&str] = &[
        "/* a /* b */ c */ COMMIT",
        "-- x\rCOMMIT",
        "SELECT E'Don\\'t'; COMMIT",
        "SELECT 'a\\'; COMMIT; --'",
        "SELECT U&'d\\0061t\\+000061' UESCAPE '\\', U&\"a\"\"b\" FROM t",
        "SELECT B'10', X'1F', N'x', x'''', b'1''0'",
        "SELECT $$a;b$$, $t$ $x$ ; $t$, $1, a$b$ ; $b$",
        "SELECT 'a'\n 'b' -- c\n'c', E'x'\n'\\'' ; COMMIT; --'",
        "COMMIT\u{a0}; ＣＯＭＭＩＴ; somE'x'",
        "SELECT 1+-2, 3 =-1, a @-- c\n b, 2 */* c */ 1, 1..2, 0x1F, 1_000, 1e10, .5e-3, 1abc",
        "SELECT x::int, a[1:2], f(x := 1), \\ ; {}",
        "unterminated 'string",
        "unterminated /* comment /* nested */",
        "unterminated $q$ dollar",
        "unterminated \"ident",
        "E'\\",
        "$",
        "$a",
        "U&",
        "--",
        "/*/",
        "1e+",
        "\u{1F600}'é'\u{0}\u{b}\u{c}",
    ];

    #[test]
    fn tokens_cover_the_text_exactly() {
        for dialect in [STD, NON_STD] {
            for sql in TRICKY {
                let toks = tokens(sql, dialect);
                let joined: String = toks.iter().map(|t| t.text).collect();
                assert_eq!(&joined, sql);
                let mut at = 0;
                for t in &toks {
                    assert_eq!(t.start, at, "{sql:?}: {t:?}");
                    assert!(!t.text.is_empty());
                    at += t.text.len();
                }
            }
        }
    }

    // No input makes the lexer, the splitter or the classifier panic; every prefix of the
    // tricky texts (cut at every character boundary) ends a literal or comment mid-way.
    #[test]
    fn no_panic_on_any_prefix_or_odd_input() {
        let all = TRICKY.join("\n");
        let odd = [
            "'", "\"", "E'", "U&'", "U&\"", "$$", "$a$", "/*", "--\r", "\\", "e'\\",
        ];
        let cuts = all.char_indices().map(|(i, _)| i).chain([all.len()]);
        let inputs = cuts.map(|i| &all[..i]).chain(odd);
        for sql in inputs {
            for dialect in [STD, NON_STD] {
                let joined: String = tokens(sql, dialect).iter().map(|t| t.text).collect();
                assert_eq!(joined, sql);
                for t in tokens(sql, dialect) {
                    let _ = (t.keyword(), t.string_value(dialect), t.identifier());
                }
                for s in split(sql, dialect) {
                    let _ = classify(s.text, dialect);
                    let _ = set_config_calls(s.text, dialect);
                }
                let _ = highest_param(sql, dialect);
            }
        }
    }

    #[test]
    fn nested_comment_does_not_hide_commit() {
        assert!(sees_commit("/* a /* b */ c */ COMMIT", STD));
        assert_eq!(lexed("/* a /* b */ c */ COMMIT", STD).len(), 1);
        // Unbalanced: the inner opener keeps the comment open to the end.
        assert!(!sees_commit("/* a /* b */ COMMIT", STD));
    }

    #[test]
    fn cr_ends_a_line_comment() {
        assert!(sees_commit("-- x\rCOMMIT", STD));
        let t = tokens("-- x\rCOMMIT", STD);
        assert_eq!((t[0].kind, t[0].text), (TokenKind::Comment, "-- x"));
    }

    #[test]
    fn backslash_quote_in_e_string_does_not_end_it() {
        let toks = lexed("SELECT E'Don\\'t'; COMMIT", STD);
        assert_eq!(toks[1], (TokenKind::String, "E'Don\\'t'"));
        assert!(sees_commit("SELECT E'Don\\'t'; COMMIT", STD));
        // The other way round: `\'` keeps an E-string open over what looks like its end.
        assert!(!sees_commit("SELECT e'a\\'; COMMIT; --'", STD));
    }

    #[test]
    fn doubled_quote_does_not_end_a_string() {
        assert!(!sees_commit("SELECT 'it''s; COMMIT'", STD));
        assert!(!sees_commit("SELECT E'it''s; COMMIT'", STD));
    }

    #[test]
    fn backslash_is_plain_in_a_standard_string() {
        assert!(sees_commit("SELECT 'a\\'; COMMIT; --'", STD));
    }

    #[test]
    fn non_standard_string_treats_backslash_as_an_escape() {
        assert!(!sees_commit("SELECT 'a\\'; COMMIT; --'", NON_STD));
        assert!(!sees_commit("SELECT N'a\\'; COMMIT; --'", NON_STD));
        assert!(sees_commit("SELECT N'a\\'; COMMIT; --'", STD));
    }

    #[test]
    fn unicode_literals_do_not_treat_backslash_as_an_escape() {
        assert!(sees_commit("SELECT U&'a\\'; COMMIT; --'", STD));
        assert!(sees_commit("SELECT U&'a\\'; COMMIT; --'", NON_STD));
        assert!(!sees_commit("SELECT U&'a''; COMMIT'", STD));
        assert_eq!(
            lexed("SELECT U&\"a\\\"\"; COMMIT\"", STD)[1],
            (TokenKind::QuotedIdent, "U&\"a\\\"\"; COMMIT\"")
        );
        // Not followed by a quote, `U&` is a word and an operator.
        assert_eq!(
            lexed("u& 'x'", STD),
            [
                (TokenKind::Word, "u"),
                (TokenKind::Operator, "&"),
                (TokenKind::String, "'x'")
            ]
        );
    }

    // In B'…' and X'…' the first quote ends the literal: `X''''` is X'' then ''.
    #[test]
    fn bit_string_does_not_double_quotes() {
        assert_eq!(
            lexed("SELECT X'''' ; COMMIT", STD)[1..3],
            [(TokenKind::BitString, "X''"), (TokenKind::String, "''")]
        );
        assert!(sees_commit("SELECT X'''' ; COMMIT", STD));
        assert_eq!(
            lexed("b'1''0'", STD),
            [(TokenKind::BitString, "b'1'"), (TokenKind::String, "'0'")]
        );
    }

    #[test]
    fn national_string_follows_the_dialect() {
        assert_eq!(lexed("N'x'", STD), [(TokenKind::String, "N'x'")]);
        assert_eq!(
            tokens("N'x'", STD)[0].string_value(STD).as_deref(),
            Some("x")
        );
    }

    // Literals separated by whitespace holding a newline are one literal, read on in the
    // quoting it started with: after E'…', `\'` in the continuation is still an escape.
    #[test]
    fn string_continuation_keeps_the_e_string_quoting() {
        let sql = "SELECT E'x'\n'\\'' ; COMMIT; --'";
        assert!(sees_commit(sql, STD));
        assert_eq!(lexed(sql, STD)[1], (TokenKind::String, "E'x'\n'\\''"));
        let joined = "SELECT 'a' -- c\r 'b'";
        assert_eq!(lexed(joined, STD)[1], (TokenKind::String, "'a' -- c\r 'b'"));
        assert_eq!(
            significant(joined, STD)[1].string_value(STD).as_deref(),
            Some("ab")
        );
    }

    #[test]
    fn string_continuation_needs_a_newline() {
        assert_eq!(lexed("'a' 'b'", STD).len(), 2);
        assert_eq!(lexed("'a' /* c */\n'b'", STD).len(), 2);
        assert_eq!(lexed("'a'\n/* c */'b'", STD).len(), 2);
    }

    #[test]
    fn dollar_quote_hides_its_body() {
        assert!(!sees_commit("SELECT $$ ; COMMIT; $$", STD));
        assert!(!sees_commit("SELECT $t$ $x$ ; COMMIT; $tt$ $t$", STD));
        assert!(!sees_commit("SELECT $é$ ; COMMIT; $é$", STD));
        assert!(sees_commit("SELECT $t$ x $t$ ; COMMIT", STD));
        assert!(!sees_commit("SELECT $t$ unterminated; COMMIT", STD));
    }

    #[test]
    fn dollar_inside_identifier_is_not_a_quote() {
        let sql = "SELECT a$b$ ; COMMIT; $b$";
        assert_eq!(lexed(sql, STD)[1], (TokenKind::Word, "a$b$"));
        assert!(sees_commit(sql, STD));
    }

    #[test]
    fn dollar_digit_is_a_parameter_not_a_quote() {
        let sql = "SELECT $1 ; COMMIT; $1";
        assert_eq!(lexed(sql, STD)[1], (TokenKind::Param, "$1"));
        assert!(sees_commit(sql, STD));
        // `$a` without a closing `$` is a lone `$` and a word.
        assert_eq!(
            lexed("$a b", STD),
            [
                (TokenKind::Punct, "$"),
                (TokenKind::Word, "a"),
                (TokenKind::Word, "b")
            ]
        );
    }

    #[test]
    fn nbsp_is_part_of_an_identifier_not_whitespace() {
        assert_eq!(
            lexed("COMMIT\u{a0}", STD),
            [(TokenKind::Word, "COMMIT\u{a0}")]
        );
        assert_eq!(lexed("\u{2003}COMMIT", STD).len(), 1);
        assert!(!sees_commit("COMMIT\u{a0}", STD));
    }

    #[test]
    fn vertical_tab_and_form_feed_are_whitespace() {
        assert_eq!(
            lexed("SELECT\u{b}1\u{c}", STD),
            [(TokenKind::Word, "SELECT"), (TokenKind::Number, "1")]
        );
    }

    #[test]
    fn fullwidth_letters_are_not_a_keyword() {
        assert_eq!(keywords("ＣＯＭＭＩＴ", STD), ["ＣＯＭＭＩＴ"]);
        assert_eq!(keywords("commit", STD), ["COMMIT"]);
    }

    #[test]
    fn prefix_letter_counts_only_at_the_start_of_a_token() {
        assert_eq!(
            lexed("somE'x\\'", STD),
            [(TokenKind::Word, "somE"), (TokenKind::String, "'x\\'")]
        );
        assert_eq!(lexed("e'x\\''", STD), [(TokenKind::String, "e'x\\''")]);
    }

    #[test]
    fn operator_stops_at_an_embedded_comment() {
        assert!(sees_commit("SELECT 1 +-- c\nCOMMIT", STD));
        assert!(!sees_commit("SELECT 1 @/* COMMIT */ 2", STD));
        assert_eq!(
            lexed("a @-- c\nb */* c */ d", STD),
            [
                (TokenKind::Word, "a"),
                (TokenKind::Operator, "@"),
                (TokenKind::Word, "b"),
                (TokenKind::Operator, "*"),
                (TokenKind::Word, "d")
            ]
        );
        // A trailing + or - leaves an operator made only of SQL operator characters.
        assert_eq!(lexed("=-", STD)[0], (TokenKind::Operator, "="));
        assert_eq!(lexed("?-", STD)[0], (TokenKind::Operator, "?-"));
    }

    #[test]
    fn numbers_lex_whole() {
        let numbers = [
            "0x1F", "1_000", "1e10", ".5e-3", "1.", "0o17", "1abc", "1e+",
        ];
        for n in numbers {
            assert_eq!(lexed(n, STD), [(TokenKind::Number, n)], "{n}");
        }
        assert_eq!(
            lexed("1..2", STD),
            [
                (TokenKind::Number, "1"),
                (TokenKind::Punct, ".."),
                (TokenKind::Number, "2")
            ]
        );
        assert_eq!(lexed("1$$;$$", STD)[1], (TokenKind::String, "$$;$$"));
    }

    #[test]
    fn punctuation_tokens() {
        assert_eq!(
            lexed("a::b;(c)[d],e.f:=:", STD)
                .iter()
                .map(|(k, t)| (*k, *t))
                .filter(|(k, _)| *k != TokenKind::Word)
                .collect::<Vec<_>>(),
            [
                (TokenKind::Punct, "::"),
                (TokenKind::Semicolon, ";"),
                (TokenKind::Punct, "("),
                (TokenKind::Punct, ")"),
                (TokenKind::Punct, "["),
                (TokenKind::Punct, "]"),
                (TokenKind::Punct, ","),
                (TokenKind::Punct, "."),
                (TokenKind::Punct, ":="),
                (TokenKind::Punct, ":")
            ]
        );
    }

    #[test]
    fn unterminated_literals_and_comments_run_to_the_end() {
        for sql in [
            "SELECT 'x; COMMIT",
            "SELECT E'x\\'; COMMIT",
            "SELECT \"x; COMMIT",
            "SELECT /* x; COMMIT",
            "SELECT $q$ x; COMMIT",
            "SELECT B'x; COMMIT",
        ] {
            assert!(!sees_commit(sql, STD), "{sql}");
            assert_eq!(tokens(sql, STD).len(), 3, "{sql}");
        }
    }

    #[test]
    fn string_value_decodes_escapes() {
        let value = |sql: &str, d: Dialect| significant(sql, d)[0].string_value(d);
        assert_eq!(value("E'Don\\'t'", STD).as_deref(), Some("Don't"));
        assert_eq!(value("E'a''b\\\\c'", STD).as_deref(), Some("a'b\\c"));
        assert_eq!(
            value("e'\\n\\t\\b\\f\\r\\q'", STD).as_deref(),
            Some("\n\t\x08\x0c\rq")
        );
        assert_eq!(value("E'\\x41\\101\\xg'", STD).as_deref(), Some("AAxg"));
        assert_eq!(value("E'\\u00e9\\U0001F600'", STD).as_deref(), Some("é😀"));
        assert_eq!(value("E'\\uD83D\\uDE00'", STD).as_deref(), Some("😀"));
        assert_eq!(value("E'\\xC3\\xA9'", STD).as_deref(), Some("é"));
        assert_eq!(value("'a\\b'", STD).as_deref(), Some("a\\b"));
        assert_eq!(value("'a\\'b'", NON_STD).as_deref(), Some("a'b"));
        assert_eq!(value("$t$a'\\$t$", STD).as_deref(), Some("a'\\"));
        assert_eq!(value("U&'a''b'", STD).as_deref(), Some("a'b"));
    }

    #[test]
    fn string_value_is_none_when_not_exact() {
        let value = |sql: &str| significant(sql, STD)[0].string_value(STD);
        for sql in [
            "'open",
            "E'open\\'",
            "$t$open",
            "$t$",
            "E'\\v'",
            "E'\\u12'",
            "E'\\uD83D'",
            "E'\\uDE00'",
            "E'\\0'",
            "E'\\xff'",
            "U&'\\0061'",
        ] {
            assert_eq!(value(sql), None, "{sql}");
        }
        assert_eq!(significant("B'1'", STD)[0].string_value(STD), None);
    }

    #[test]
    fn identifier_folds_and_unquotes() {
        let ident = |sql: &str| significant(sql, STD)[0].identifier();
        assert_eq!(
            ident("Statement_Timeout").as_deref(),
            Some("statement_timeout")
        );
        assert_eq!(ident("\"A\"\"b\"").as_deref(), Some("A\"b"));
        assert_eq!(ident("U&\"a\"").as_deref(), Some("a"));
        assert_eq!(ident("U&\"\\0061\""), None);
        assert_eq!(ident("\"\""), None);
        assert_eq!(ident("\"open"), None);
        // Only ASCII letters fold, as with a UTF-8 server.
        assert_eq!(ident("ÉTÉ").as_deref(), Some("ÉtÉ"));
        let long = "a".repeat(70);
        assert_eq!(ident(&long).map(|s| s.len()), Some(63));
        assert_eq!(ident(&"é".repeat(40)).map(|s| s.len()), Some(62));
    }

    #[test]
    fn highest_param_finds_the_largest_and_its_first_place() {
        assert_eq!(highest_param("SELECT 1", STD), (0, 0));
        assert_eq!(highest_param("SELECT $2, '$9', $10, $10", STD), (10, 17));
        assert_eq!(highest_param("-- $5\nSELECT $$ $7 $$, $3", STD), (3, 23));
    }
}
