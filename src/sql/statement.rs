//! Statements: where psql would cut a script, what each statement is from its leading keywords,
//! and which settings it changes through `set_config`.

use super::lex::{
    Quoting, quoted_ident_value, quoted_value, truncate_identifier, unicode_value, valid_uescape,
};
use super::{Dialect, Lexer, Token, TokenKind, significant, tokens};

/// One statement of a script: its text without the terminating `;` (and without the
/// whitespace and comments before it and the whitespace after it), and the byte offset in the
/// script where that text starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    pub text: &'a str,
    pub offset: usize,
    /// The dialect the server reads this statement in: the one given to [`split`], as changed
    /// by the `SET standard_conforming_strings` before it. Read the statement with this one
    /// ([`classify`], [`super::significant`], …): with another, a string may end elsewhere.
    pub dialect: Dialect,
}

/// psql's state for finding the `;` that ends a statement (`psqlscan.l`).
#[derive(Default)]
struct Psql {
    paren_depth: usize,
    begin_depth: usize,
    identifier_count: usize,
    /// The first letter of each of the first four words when it is one of create, or,
    /// replace, function, procedure; 0 otherwise.
    identifiers: [u8; 4],
}

impl Psql {
    /// psql's `{identifier}` rule: inside `CREATE [OR REPLACE] FUNCTION|PROCEDURE`, outside
    /// parentheses, `BEGIN` (of `BEGIN ATOMIC`), `CASE` within it and `END` nest, and a `;`
    /// inside them does not end the statement.
    fn word(&mut self, word: &str) {
        if self.identifier_count == 0 {
            self.identifiers = [0; 4];
        }
        let lower = word.to_ascii_lowercase();
        if matches!(
            lower.as_str(),
            "create" | "function" | "procedure" | "or" | "replace"
        ) && self.identifier_count < self.identifiers.len()
        {
            self.identifiers[self.identifier_count] = lower.as_bytes()[0];
        }
        self.identifier_count = self.identifier_count.saturating_add(1);
        let id = self.identifiers;
        let routine = id[0] == b'c'
            && (matches!(id[1], b'f' | b'p')
                || id[1] == b'o' && id[2] == b'r' && matches!(id[3], b'f' | b'p'));
        if !routine || self.paren_depth != 0 {
            return;
        }
        match lower.as_str() {
            "begin" => self.begin_depth += 1,
            "case" if self.begin_depth >= 1 => self.begin_depth += 1,
            "end" => self.begin_depth = self.begin_depth.saturating_sub(1),
            _ => {}
        }
    }
}

/// Splits a script into statements where psql would send them: at a `;` outside parentheses
/// and outside the `BEGIN … END` body of `CREATE [OR REPLACE] FUNCTION|PROCEDURE` (psql's
/// heuristic, word for word; like psql, brackets do not count). Statements holding only
/// whitespace and comments are left out. `SET standard_conforming_strings`, its `RESET`, `RESET
/// ALL`, `DISCARD ALL` and a `set_config` of it with literal arguments change how the following
/// statements are lexed, as they would on the server.
pub fn split(sql: &str, dialect: Dialect) -> Vec<Statement<'_>> {
    let mut lexer = Lexer {
        sql,
        pos: 0,
        dialect,
    };
    let mut psql = Psql::default();
    let mut out = Vec::new();
    let mut start = 0;
    // Where the last token ended if it was a lone `:`: a word right there is a psql variable.
    let mut after_colon = None;
    while let Some(t) = lexer.next() {
        let colon_end = (t.kind, t.text) == (TokenKind::Punct, ":");
        let variable = after_colon == Some(t.start);
        after_colon = colon_end.then_some(t.start + 1);
        match (t.kind, t.text) {
            (TokenKind::Punct, "(") => psql.paren_depth += 1,
            (TokenKind::Punct, ")") => psql.paren_depth = psql.paren_depth.saturating_sub(1),
            // psql's {xufailed}: a `u` before `&` that starts no U& literal is echoed without
            // passing through the {identifier} rule, so it is not counted.
            (TokenKind::Word, "u" | "U") if sql.as_bytes().get(t.start + 1) == Some(&b'&') => {}
            // psql reads `:name` as a variable (left as is when unset), not as a word.
            (TokenKind::Word, _) if variable => {}
            (TokenKind::Word, word) => psql.word(word),
            (TokenKind::Semicolon, _) if psql.paren_depth == 0 && psql.begin_depth == 0 => {
                lexer.dialect = finish(sql, start, t.start, lexer.dialect, dialect, &mut out);
                start = t.start + 1;
                psql.identifier_count = 0;
            }
            _ => {}
        }
    }
    finish(sql, start, sql.len(), lexer.dialect, dialect, &mut out);
    out
}

/// Adds `sql[start..end]` to `out` unless it is only whitespace and comments; the dialect the
/// text after it is lexed in.
fn finish<'a>(
    sql: &'a str,
    start: usize,
    end: usize,
    dialect: Dialect,
    initial: Dialect,
    out: &mut Vec<Statement<'a>>,
) -> Dialect {
    let Some(piece) = sql.get(start..end) else {
        return dialect;
    };
    let toks = tokens(piece, dialect);
    let first = toks.iter().find(|t| !t.is_trivia());
    let last = toks.iter().rev().find(|t| t.kind != TokenKind::Whitespace);
    let (Some(first), Some(last)) = (first, last) else {
        return dialect;
    };
    let Some(text) = piece.get(first.start..last.start + last.text.len()) else {
        return dialect;
    };
    out.push(Statement {
        text,
        offset: start + first.start,
        dialect,
    });
    match standard_strings_after(text, dialect, initial) {
        Some(on) => Dialect {
            standard_conforming_strings: on,
        },
        None => dialect,
    }
}

/// What a statement is, from its leading keywords.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// SELECT, WITH, VALUES, TABLE, or a parenthesised query `(`. Not the same as read-only:
    /// WITH may hold INSERT/UPDATE/DELETE/MERGE, and any query may call functions.
    Query,
    /// BEGIN, START TRANSACTION, COMMIT, END, ABORT, ROLLBACK (incl. ROLLBACK TO / ROLLBACK
    /// PREPARED), COMMIT PREPARED, SAVEPOINT, RELEASE, PREPARE TRANSACTION, SET TRANSACTION,
    /// SET SESSION CHARACTERISTICS: the words as a reader would write them, e.g. "COMMIT",
    /// "PREPARE TRANSACTION", "ROLLBACK PREPARED".
    TransactionControl(String),
    /// SET [SESSION|LOCAL] name {TO|=} …; `name` is the setting the server changes: lower-cased
    /// (the server looks settings up without regard to case), quoted names unquoted, dotted
    /// names joined with '.', the old aliases `sort_mem` and `vacuum_mem` resolved. Special
    /// forms map to their setting: SET ROLE → "role", SET SESSION AUTHORIZATION →
    /// "session_authorization", SET TIME ZONE → "timezone", SET SCHEMA → "search_path", SET
    /// NAMES → "client_encoding", SET XML OPTION → "xmloption", SET CONSTRAINTS →
    /// "constraints" (not a setting, harmless). `local` is true for SET LOCAL.
    Set { name: String, local: bool },
    /// RESET name (None for RESET ALL). `SET name TO DEFAULT` is a [`Kind::Set`].
    Reset { name: Option<String> },
    /// Anything else: its first keyword upper-cased (e.g. "LOCK", "ANALYZE", "CREATE", "DO"),
    /// "" when the first significant token is not a word. A SET or RESET whose name cannot be
    /// read (the server rejects it) is "SET" or "RESET".
    Other(String),
}

/// What `statement` (one statement, as [`split`] gives it) is, from its leading keywords.
pub fn classify(statement: &str, dialect: Dialect) -> Kind {
    let toks = significant(statement, dialect);
    let kw = |i: usize| toks.get(i).and_then(Token::keyword);
    let tc = |words: &str| Kind::TransactionControl(words.to_string());
    let Some(first) = toks.first() else {
        return Kind::Other(String::new());
    };
    if (first.kind, first.text) == (TokenKind::Punct, "(") {
        return Kind::Query;
    }
    let Some(word) = first.keyword() else {
        return Kind::Other(String::new());
    };
    let second = kw(1);
    match (word.as_str(), second.as_deref()) {
        ("SELECT" | "WITH" | "VALUES" | "TABLE", _) => Kind::Query,
        ("BEGIN" | "END" | "ABORT" | "SAVEPOINT" | "RELEASE", _) => tc(&word),
        // START TRANSACTION is the only statement that starts with START.
        ("START", _) => tc("START TRANSACTION"),
        ("COMMIT", Some("PREPARED")) => tc("COMMIT PREPARED"),
        ("COMMIT", _) => tc("COMMIT"),
        ("ROLLBACK", Some("PREPARED")) => tc("ROLLBACK PREPARED"),
        ("ROLLBACK", Some("TO")) => tc("ROLLBACK TO"),
        ("ROLLBACK", Some("WORK" | "TRANSACTION")) if kw(2).as_deref() == Some("TO") => {
            tc("ROLLBACK TO")
        }
        ("ROLLBACK", _) => tc("ROLLBACK"),
        // `PREPARE transaction AS …` prepares a statement named "transaction".
        ("PREPARE", Some("TRANSACTION"))
            if !(kw(2).as_deref() == Some("AS")
                || toks
                    .get(2)
                    .is_some_and(|t| (t.kind, t.text) == (TokenKind::Punct, "("))) =>
        {
            tc("PREPARE TRANSACTION")
        }
        ("SET", _) => set_kind(&toks, dialect),
        ("RESET", _) => reset_kind(&toks, dialect),
        _ => Kind::Other(word),
    }
}

/// A `SET` statement (gram.y's VariableSetStmt and ConstraintsSetStmt).
fn set_kind(toks: &[Token<'_>], dialect: Dialect) -> Kind {
    let kw = |i: usize| toks.get(i).and_then(Token::keyword);
    let (local, i) = match (kw(1).as_deref(), kw(2).as_deref()) {
        (Some("LOCAL"), _) => (true, 2),
        // SESSION is the scope unless it starts SESSION CHARACTERISTICS / AUTHORIZATION.
        (Some("SESSION"), Some("CHARACTERISTICS" | "AUTHORIZATION")) => (false, 1),
        (Some("SESSION"), _) => (false, 2),
        _ => (false, 1),
    };
    let set = |name: &str| Kind::Set {
        name: name.to_string(),
        local,
    };
    match (kw(i).as_deref(), kw(i + 1).as_deref()) {
        (Some("TRANSACTION"), _) => Kind::TransactionControl("SET TRANSACTION".into()),
        (Some("SESSION"), Some("CHARACTERISTICS")) => {
            Kind::TransactionControl("SET SESSION CHARACTERISTICS".into())
        }
        (Some("SESSION"), Some("AUTHORIZATION")) => set("session_authorization"),
        (Some("ROLE"), _) => set("role"),
        (Some("TIME"), Some("ZONE")) => set("timezone"),
        (Some("SCHEMA"), _) => set("search_path"),
        (Some("NAMES"), _) => set("client_encoding"),
        (Some("XML"), Some("OPTION")) => set("xmloption"),
        (Some("CONSTRAINTS"), _) => set("constraints"),
        _ => match var_name(toks, i, dialect) {
            Some((name, _)) => set(&name),
            None => Kind::Other("SET".into()),
        },
    }
}

/// A `RESET` statement.
fn reset_kind(toks: &[Token<'_>], dialect: Dialect) -> Kind {
    let kw = |i: usize| toks.get(i).and_then(Token::keyword);
    let reset = |name: &str| Kind::Reset {
        name: Some(name.to_string()),
    };
    match (kw(1).as_deref(), kw(2).as_deref()) {
        (Some("ALL"), _) => Kind::Reset { name: None },
        (Some("TIME"), Some("ZONE")) => reset("timezone"),
        (Some("TRANSACTION"), Some("ISOLATION")) => reset("transaction_isolation"),
        (Some("SESSION"), Some("AUTHORIZATION")) => reset("session_authorization"),
        _ => match var_name(toks, 1, dialect) {
            Some((name, _)) => reset(&name),
            None => Kind::Other("RESET".into()),
        },
    }
}

/// gram.y's `var_name` at `toks[i]` (`ColId` or `var_name '.' ColId`) as the setting the
/// server looks up, and the index after it.
fn var_name(toks: &[Token<'_>], i: usize, dialect: Dialect) -> Option<(String, usize)> {
    let (mut name, mut next) = identifier_at(toks, i, dialect)?;
    while toks
        .get(next)
        .is_some_and(|t| (t.kind, t.text) == (TokenKind::Punct, "."))
    {
        let (part, after) = identifier_at(toks, next + 1, dialect)?;
        name.push('.');
        name.push_str(&part);
        next = after;
    }
    Some((setting_name(name), next))
}

/// A setting name as the server resolves it: `guc_name_compare` ignores ASCII case, and
/// `map_old_guc_names` renames two old settings.
fn setting_name(name: String) -> String {
    let name = name.to_ascii_lowercase();
    match name.as_str() {
        "sort_mem" => "work_mem".into(),
        "vacuum_mem" => "maintenance_work_mem".into(),
        _ => name,
    }
}

/// The identifier at `toks[i]` and the index after it. For `U&"…"`, its `UESCAPE` clause is
/// read too and its escapes decoded, as the server's parser does.
fn identifier_at(toks: &[Token<'_>], i: usize, dialect: Dialect) -> Option<(String, usize)> {
    let t = toks.get(i)?;
    if t.kind == TokenKind::QuotedIdent && t.is_unicode() {
        let body = quoted_ident_value(t.text.get(2..)?)?;
        let (escape, next) = uescape(toks, i + 1, dialect)?;
        return Some((truncate_identifier(unicode_value(&body, escape)?), next));
    }
    Some((t.identifier()?, i + 1))
}

/// The value of the string literal at `toks[i]` and the index after it; for `U&'…'`, its
/// `UESCAPE` clause is read too and its escapes decoded.
fn string_at(toks: &[Token<'_>], i: usize, dialect: Dialect) -> Option<(String, usize)> {
    let t = toks.get(i)?;
    if t.kind == TokenKind::String && t.is_unicode() {
        let body = quoted_value(t.text.get(2..)?, Quoting::Standard)?;
        let (escape, next) = uescape(toks, i + 1, dialect)?;
        return Some((unicode_value(&body, escape)?, next));
    }
    Some((t.string_value(dialect)?, i + 1))
}

/// After a `U&` literal, at `toks[i]`: the escape character its `UESCAPE 'c'` clause names
/// (`\` when there is none) and the index after the clause. None when the server would reject
/// the clause (parser.c: a plain string constant holding one valid byte).
fn uescape(toks: &[Token<'_>], i: usize, dialect: Dialect) -> Option<(char, usize)> {
    if toks.get(i).and_then(Token::keyword).as_deref() != Some("UESCAPE") {
        return Some(('\\', i));
    }
    let lit = toks.get(i + 1)?;
    // `N'…'` reaches the parser as NCHAR then a string, and `U&'…'` as another token kind.
    if lit.is_unicode() || matches!(lit.text.as_bytes().first(), Some(b'n' | b'N')) {
        return None;
    }
    let value = lit.string_value(dialect)?;
    let mut chars = value.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii() && valid_uescape(c) => Some((c, i + 2)),
        _ => None,
    }
}

/// A call of `set_config(` in a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetConfigCall {
    /// The setting it changes, when its first argument is a single string literal (decoded,
    /// resolved as the server resolves setting names); None for a computed name.
    pub name: Option<String>,
    /// The byte offset of the call (of its qualified name) in the statement.
    pub offset: usize,
}

/// Each call of `set_config(` in the statement, whatever its qualification (`pg_catalog.`,
/// another schema, none) and quoting (`"set_config"`, `U&"…"`). The statement is read under
/// `dialect` and under the other setting of standard_conforming_strings too, so that a caller
/// holding the wrong one (see [`Statement::dialect`]) still sees every call; a call that only
/// the other reading finds, or names differently, is added after the others.
pub fn set_config_calls(statement: &str, dialect: Dialect) -> Vec<SetConfigCall> {
    let other = Dialect {
        standard_conforming_strings: !dialect.standard_conforming_strings,
    };
    let mut out: Vec<SetConfigCall> = Vec::new();
    for d in [dialect, other] {
        for c in calls(&significant(statement, d), d) {
            let call = SetConfigCall {
                name: c.name,
                offset: c.offset,
            };
            if !out.contains(&call) {
                out.push(call);
            }
        }
    }
    out
}

/// One `set_config` call with its literal arguments.
struct Call {
    offset: usize,
    name: Option<String>,
    value: Option<String>,
}

/// Every `set_config(` call among `toks`, with its first two arguments when they are single
/// string literals.
fn calls(toks: &[Token<'_>], dialect: Dialect) -> Vec<Call> {
    let is = |i: usize, text: &str| {
        toks.get(i)
            .is_some_and(|t| matches!(t.kind, TokenKind::Punct) && t.text == text)
    };
    // A literal argument: the literal, then `,` or `)`.
    let argument =
        |i: usize| string_at(toks, i, dialect).filter(|&(_, next)| is(next, ",") || is(next, ")"));
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let Some((name, open)) = identifier_at(toks, i, dialect) else {
            continue;
        };
        if name != "set_config" || !is(open, "(") {
            continue;
        }
        let mut first = i;
        while first >= 2 && is(first - 1, ".") && toks[first - 2].kind != TokenKind::Punct {
            first -= 2;
        }
        let name = argument(open + 1);
        let value = name
            .as_ref()
            .filter(|&&(_, next)| is(next, ","))
            .and_then(|&(_, next)| argument(next + 1));
        out.push(Call {
            offset: toks[first].start,
            name: name.map(|(n, _)| setting_name(n)),
            value: value.map(|(v, _)| v),
        });
    }
    out
}

/// The value of standard_conforming_strings after `statement` runs, when it changes it
/// knowably. RESET and DEFAULT return to the session's starting value, `initial`.
fn standard_strings_after(statement: &str, dialect: Dialect, initial: Dialect) -> Option<bool> {
    const NAME: &str = "standard_conforming_strings";
    let toks = significant(statement, dialect);
    let kw = |i: usize| toks.get(i).and_then(Token::keyword);
    match classify(statement, dialect) {
        Kind::Set { name, .. } if name == NAME => {
            let to = toks
                .iter()
                .position(|t| t.keyword().as_deref() == Some("TO") || t.text == "=")?;
            match toks.get(to + 1..)? {
                [v] if v.keyword().as_deref() == Some("DEFAULT") => {
                    Some(initial.standard_conforming_strings)
                }
                value => bool_setting(value, dialect),
            }
        }
        Kind::Reset { name: None } => Some(initial.standard_conforming_strings),
        Kind::Reset { name: Some(name) } if name == NAME => {
            Some(initial.standard_conforming_strings)
        }
        Kind::Other(w) if w == "DISCARD" && kw(1).as_deref() == Some("ALL") => {
            Some(initial.standard_conforming_strings)
        }
        _ => calls(&toks, dialect)
            .into_iter()
            .rev()
            .filter(|c| c.name.as_deref() == Some(NAME))
            .find_map(|c| parse_bool(&c.value?)),
    }
}

/// The boolean a SET value (its tokens after `TO`/`=`) sets, as gram.y turns it into text and
/// `parse_bool` reads it; None when the server would reject it.
fn bool_setting(value: &[Token<'_>], dialect: Dialect) -> Option<bool> {
    let (negative, number) = match value {
        [sign, n] if sign.kind == TokenKind::Operator && n.kind == TokenKind::Number => {
            match sign.text {
                "-" => (true, n),
                "+" => (false, n),
                _ => return None,
            }
        }
        [n] if n.kind == TokenKind::Number => (false, n),
        [v] if v.kind == TokenKind::String => return parse_bool(&v.string_value(dialect)?),
        [v] => return parse_bool(&v.identifier()?),
        _ => return None,
    };
    // An integer reaches parse_bool as its decimal value: `00` and `-0` are "0".
    match (integer(number.text)?, negative) {
        (0, _) => Some(false),
        (1, false) => Some(true),
        _ => None,
    }
}

/// The value of an integer literal (decimal, `0x`, `0o`, `0b`, with underscores); None for
/// anything else or anything above 1 (all a boolean needs).
fn integer(text: &str) -> Option<u8> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = match lower.get(..2) {
        Some("0x") => (16, &lower[2..]),
        Some("0o") => (8, &lower[2..]),
        Some("0b") => (2, &lower[2..]),
        _ => (10, lower.as_str()),
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let trimmed = body.trim_start_matches('0');
    match trimmed {
        "" => Some(0),
        "1" => Some(1),
        _ => None,
    }
}

/// PostgreSQL's `parse_bool`: a case-insensitive prefix of true/false/yes/no, on/off (at least
/// two letters), or exactly 1/0.
fn parse_bool(value: &str) -> Option<bool> {
    let v = value.to_ascii_lowercase();
    let prefix_of = |word: &str, min: usize| v.len() >= min && word.starts_with(v.as_str());
    if prefix_of("true", 1) || prefix_of("yes", 1) || prefix_of("on", 2) || v == "1" {
        Some(true)
    } else if prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || v == "0" {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STD: Dialect = Dialect {
        standard_conforming_strings: true,
    };

    fn texts(sql: &str) -> Vec<&str> {
        split(sql, STD).into_iter().map(|s| s.text).collect()
    }

    fn kinds(sql: &str) -> Vec<Kind> {
        split(sql, STD)
            .into_iter()
            .map(|s| classify(s.text, STD))
            .collect()
    }

    fn tc(words: &str) -> Kind {
        Kind::TransactionControl(words.into())
    }

    fn other(word: &str) -> Kind {
        Kind::Other(word.into())
    }

    fn set(name: &str, local: bool) -> Kind {
        Kind::Set {
            name: name.into(),
            local,
        }
    }

    #[test]
    fn split_finds_commit_after_an_escaped_quote() {
        let sql = "COMMENT ON TABLE posts IS E'Don\\'t'; BEGIN; DROP INDEX i; COMMIT;";
        assert_eq!(
            kinds(sql),
            [other("COMMENT"), tc("BEGIN"), other("DROP"), tc("COMMIT")]
        );
        let first = &split(sql, STD)[0];
        assert_eq!(
            (first.text, first.offset),
            ("COMMENT ON TABLE posts IS E'Don\\'t'", 0)
        );
    }

    #[test]
    fn statements_are_trimmed_and_offsets_point_at_their_text() {
        let sql = "  -- lead\n/* c */ SELECT 1 -- tail\n ;\n\n  SELECT 2  ";
        let got: Vec<_> = split(sql, STD)
            .into_iter()
            .map(|s| (s.text, s.offset))
            .collect();
        assert_eq!(got, [("SELECT 1 -- tail", 18), ("SELECT 2", 41)]);
        assert_eq!(&sql[41..49], "SELECT 2");
    }

    #[test]
    fn whitespace_and_comment_only_statements_are_left_out() {
        assert!(split(" ; -- x\n ; /* y */ ;", STD).is_empty());
        assert_eq!(texts(";;SELECT 1;;"), ["SELECT 1"]);
    }

    // psql does not send at a `;` inside parentheses; the server then sees one text.
    #[test]
    fn semicolon_inside_parentheses_does_not_split() {
        assert_eq!(
            texts("SELECT (1; COMMIT); SELECT 2"),
            ["SELECT (1; COMMIT)", "SELECT 2"]
        );
        // A stray `)` does not make the depth negative.
        assert_eq!(texts(") ; SELECT (;) ;"), [")", "SELECT (;)"]);
    }

    #[test]
    fn begin_atomic_body_is_one_statement() {
        let sql = "CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC \
                   SELECT CASE WHEN true THEN 1 END; SELECT 2; END; COMMIT";
        let got = texts(sql);
        assert_eq!(got.len(), 2);
        assert!(got[0].ends_with("SELECT 2; END"));
        assert_eq!(kinds(sql)[1], tc("COMMIT"));
        let procedure = "create procedure p() begin atomic select 1; end; commit";
        assert_eq!(texts(procedure).len(), 2);
    }

    #[test]
    fn begin_outside_a_routine_does_not_nest() {
        assert_eq!(texts("BEGIN; SELECT 1; END; COMMIT").len(), 4);
        // `CREATE TABLE` is not a routine: its `begin` column does not hold the `;`.
        assert_eq!(
            texts("CREATE TABLE t (x int); CREATE INDEX begin ON t (x); COMMIT").len(),
            3
        );
        // Inside parentheses, `begin` does not count even in a routine.
        assert_eq!(
            texts("CREATE FUNCTION f(begin int) RETURNS int RETURN 1; COMMIT").len(),
            2
        );
    }

    #[test]
    fn psql_variable_is_not_a_word() {
        let sql = "CREATE FUNCTION f() RETURNS int LANGUAGE sql :begin ; COMMIT";
        assert_eq!(kinds(sql)[1], tc("COMMIT"));
        let cast = "CREATE FUNCTION f() RETURNS int LANGUAGE sql x::begin ; COMMIT";
        assert_eq!(texts(cast).len(), 1);
    }

    #[test]
    fn each_statement_carries_the_dialect_it_is_read_in() {
        let sql = "SELECT 1; SET standard_conforming_strings = off; SELECT 2";
        let dialects: Vec<bool> = split(sql, STD)
            .iter()
            .map(|s| s.dialect.standard_conforming_strings)
            .collect();
        assert_eq!(dialects, [true, true, false]);
    }

    // Read with standard strings, the call is inside a string; the server, with
    // standard_conforming_strings off, runs it. Both readings are reported.
    #[test]
    fn set_config_calls_are_found_under_either_string_reading() {
        let sql = "SELECT 'a\\'' , set_config($$work_mem$$, $$3MB$$, false) --'";
        assert!(calls(&significant(sql, STD), STD).is_empty());
        let found = set_config_calls(sql, STD);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name.as_deref(), Some("work_mem"));
    }

    // Replicated as psql has it: a routine named `begin` keeps the rest in one piece, which
    // the server, given it through Parse, refuses as several commands.
    #[test]
    fn routine_named_begin_keeps_psql_heuristic() {
        assert_eq!(
            texts("CREATE FUNCTION begin() RETURNS int RETURN 1; COMMIT").len(),
            1
        );
    }

    #[test]
    fn non_standard_strings_after_set_standard_conforming_strings_off() {
        let sql = "SET standard_conforming_strings = off; SELECT 'a\\'; COMMIT; --'";
        assert_eq!(
            kinds(sql),
            [set("standard_conforming_strings", false), Kind::Query]
        );
        let back_on = "SET standard_conforming_strings TO off; \
                       RESET standard_conforming_strings; SELECT 'a\\'; COMMIT; --'";
        assert_eq!(kinds(back_on)[3], tc("COMMIT"));
        for (value, commit_seen) in [
            ("'off'", false),
            ("false", false),
            ("-0", false),
            ("0", false),
            ("\"OF\"", false),
            ("on", true),
            ("1", true),
            ("DEFAULT", true),
            ("maybe", true),
        ] {
            let sql = format!(
                "SET LOCAL standard_conforming_strings = {value}; SELECT 'a\\'; COMMIT; --'"
            );
            let seen = kinds(&sql).contains(&tc("COMMIT"));
            assert_eq!(seen, commit_seen, "{value}");
        }
        let by_function =
            "SELECT set_config('standard_conforming_strings', 'off', false); SELECT 'a\\'; COMMIT";
        assert!(!kinds(by_function).contains(&tc("COMMIT")));
        let off = Dialect {
            standard_conforming_strings: false,
        };
        let reset_all = "SET standard_conforming_strings = on; RESET ALL; SELECT 'a\\'; COMMIT";
        assert_eq!(split(reset_all, off).len(), 3);
    }

    #[test]
    fn classify_sees_through_comments() {
        assert_eq!(classify("/* a /* b */ c */ COMMIT", STD), tc("COMMIT"));
        assert_eq!(classify("-- x\rCOMMIT", STD), tc("COMMIT"));
        assert_eq!(classify("COMMIT\u{a0}", STD), other("COMMIT\u{a0}"));
        assert_eq!(classify("", STD), other(""));
        assert_eq!(classify("'x'", STD), other(""));
        assert_eq!(classify(" (SELECT 1)", STD), Kind::Query);
    }

    #[test]
    fn classify_transaction_control() {
        for (sql, words) in [
            ("begin isolation level serializable", "BEGIN"),
            ("START TRANSACTION", "START TRANSACTION"),
            ("END", "END"),
            ("ABORT", "ABORT"),
            ("COMMIT AND CHAIN", "COMMIT"),
            ("COMMIT PREPARED 'x'", "COMMIT PREPARED"),
            ("ROLLBACK", "ROLLBACK"),
            ("ROLLBACK PREPARED 'x'", "ROLLBACK PREPARED"),
            ("ROLLBACK TO s", "ROLLBACK TO"),
            ("ROLLBACK WORK TO SAVEPOINT s", "ROLLBACK TO"),
            ("SAVEPOINT s", "SAVEPOINT"),
            ("RELEASE s", "RELEASE"),
            ("PREPARE TRANSACTION 'x'", "PREPARE TRANSACTION"),
            ("SET TRANSACTION READ WRITE", "SET TRANSACTION"),
            ("SET LOCAL TRANSACTION READ WRITE", "SET TRANSACTION"),
            (
                "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
                "SET SESSION CHARACTERISTICS",
            ),
            (
                "SET SESSION SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
                "SET SESSION CHARACTERISTICS",
            ),
        ] {
            assert_eq!(classify(sql, STD), tc(words), "{sql}");
        }
        assert_eq!(
            classify("PREPARE transaction AS SELECT 1", STD),
            other("PREPARE")
        );
        assert_eq!(
            classify("PREPARE p (int) AS SELECT $1", STD),
            other("PREPARE")
        );
        assert_eq!(classify("LOCK TABLE t", STD), other("LOCK"));
        assert_eq!(
            classify("with x as (select 1) select * from x", STD),
            Kind::Query
        );
    }

    #[test]
    fn classify_set_and_reset() {
        let cases = [
            (
                "SET /**/ LOCAL statement_timeout = 0",
                set("statement_timeout", true),
            ),
            (
                "set \"statement_timeout\" to 0",
                set("statement_timeout", false),
            ),
            (
                "SET \"Statement_Timeout\" = '5s'",
                set("statement_timeout", false),
            ),
            ("SET SESSION work_mem TO DEFAULT", set("work_mem", false)),
            ("SET sort_mem = 1", set("work_mem", false)),
            ("SET plancheck.\"X\" = 1", set("plancheck.x", false)),
            (
                "SET U&\"statement!005ftimeout\" UESCAPE '!' = 0",
                set("statement_timeout", false),
            ),
            (
                "SET U&\"statement\\005ftimeout\" = 0",
                set("statement_timeout", false),
            ),
            ("SET ROLE postgres", set("role", false)),
            ("SET LOCAL ROLE postgres", set("role", true)),
            (
                "SET SESSION AUTHORIZATION DEFAULT",
                set("session_authorization", false),
            ),
            (
                "SET SESSION SESSION AUTHORIZATION x",
                set("session_authorization", false),
            ),
            ("SET TIME ZONE 'UTC'", set("timezone", false)),
            ("SET time = 1", set("time", false)),
            ("SET SCHEMA 'x'", set("search_path", false)),
            ("SET NAMES 'SJIS'", set("client_encoding", false)),
            ("SET XML OPTION DOCUMENT", set("xmloption", false)),
            ("SET CONSTRAINTS ALL DEFERRED", set("constraints", false)),
            ("SET = 1", other("SET")),
            ("SET U&\"a\\00\" = 1", other("SET")),
            ("RESET ALL", Kind::Reset { name: None }),
            (
                "RESET Work_Mem",
                Kind::Reset {
                    name: Some("work_mem".into()),
                },
            ),
            (
                "RESET TIME ZONE",
                Kind::Reset {
                    name: Some("timezone".into()),
                },
            ),
            (
                "RESET TRANSACTION ISOLATION LEVEL",
                Kind::Reset {
                    name: Some("transaction_isolation".into()),
                },
            ),
            (
                "RESET SESSION AUTHORIZATION",
                Kind::Reset {
                    name: Some("session_authorization".into()),
                },
            ),
        ];
        for (sql, kind) in cases {
            assert_eq!(classify(sql, STD), kind, "{sql}");
        }
    }

    #[test]
    fn set_config_calls_name_literal_settings() {
        let names = |sql: &str| -> Vec<Option<String>> {
            set_config_calls(sql, STD)
                .into_iter()
                .map(|c| c.name)
                .collect()
        };
        let sql = "SELECT pg_catalog.set_config(E'statement\\_timeout', '0', true)";
        assert_eq!(
            set_config_calls(sql, STD),
            [SetConfigCall {
                name: Some("statement_timeout".into()),
                offset: 7
            }]
        );
        assert_eq!(
            names("SELECT set_config('statement' || '_timeout', '0', false)"),
            [None]
        );
        assert_eq!(
            names("SELECT SET_CONFIG /* c */ ('Work_Mem', '1GB', false)"),
            [Some("work_mem".into())]
        );
        assert_eq!(
            names("SELECT \"set_config\"($$lock_timeout$$, '0', false)"),
            [Some("lock_timeout".into())]
        );
        assert_eq!(
            names(
                "SELECT U&\"set\\005fconfig\"('a', 'b', false), U&\"set!005fconfig\" UESCAPE '!'('b', 'c', false)"
            ),
            [Some("a".into()), Some("b".into())]
        );
        assert_eq!(
            names("SELECT set_config(U&'statement!005ftimeout' UESCAPE '!', '0', false)"),
            [Some("statement_timeout".into())]
        );
        assert_eq!(names("SELECT set_config('a'::text, '0', false)"), [None]);
        assert_eq!(
            names("SELECT set_config(new_value => '0', setting_name => 'a')"),
            [None]
        );
        assert_eq!(
            names("SELECT 'set_config(''a'', 1)', set_config"),
            Vec::<Option<String>>::new()
        );
        assert_eq!(
            names("SELECT set_config('a'\n'b', '1', false)"),
            [Some("ab".into())]
        );
    }
}
