//! The lexer proper: where each token of SQL text ends, rule for rule as PostgreSQL's
//! `src/backend/parser/scan.l` (PostgreSQL 16 and later) decides it, and what a string literal
//! or a quoted identifier stands for once its quoting and escapes are undone.
//!
//! Works on bytes, as flex does: every byte from 0x80 up is an identifier character, so a token
//! only ever ends on an ASCII byte or at the end of the text, which is always a char boundary.

use super::{Dialect, TokenKind};

/// `NAMEDATALEN - 1`: the server truncates longer identifiers to this many bytes.
const MAX_IDENTIFIER_BYTES: usize = 63;

/// scan.l's `{space}`. `\v` is whitespace from PostgreSQL 16; on 15 it is a syntax error, which
/// reveals nothing either way.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\x0b')
}

/// scan.l's `{newline}`: a lone `\r` ends a line (and a `--` comment) too.
fn is_newline(c: u8) -> bool {
    c == b'\n' || c == b'\r'
}

/// scan.l's `{ident_start}`: every byte of a multibyte character counts, whatever the character
/// is (a no-break space included).
pub(super) fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

/// scan.l's `{ident_cont}`: `$` continues an identifier, so `a$b$` is one word.
fn is_ident_cont(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit() || c == b'$'
}

/// scan.l's `{dolq_cont}`: like `{ident_cont}` without `$`.
fn is_dolq_cont(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

/// scan.l's `{op_chars}`.
fn is_op_char(c: u8) -> bool {
    b"~!@#^&|`?+-*/%<>=".contains(&c)
}

/// How the inside of a single-quoted literal is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quoting {
    /// `'…'` with standard_conforming_strings on, `U&'…'`: only `''` is special.
    Standard,
    /// `E'…'`, and `'…'` with standard_conforming_strings off: a backslash escapes what follows.
    Escape,
    /// `B'…'`, `X'…'`: the first quote ends the segment; `''` is not a doubled quote.
    Bits,
}

/// The kind of the token that starts at `i` (`i < b.len()`) and the offset just past it.
pub(super) fn next(b: &[u8], i: usize, dialect: Dialect) -> (TokenKind, usize) {
    let at = |k: usize| b.get(k).copied().unwrap_or(0);
    let plain = if dialect.standard_conforming_strings {
        Quoting::Standard
    } else {
        Quoting::Escape
    };
    let (c, c1, c2) = (at(i), at(i + 1), at(i + 2));
    match c {
        _ if is_space(c) => (TokenKind::Whitespace, run(b, i, is_space)),
        b'-' if c1 == b'-' => (TokenKind::Comment, run(b, i, |c| !is_newline(c))),
        b'/' if c1 == b'*' => (TokenKind::Comment, block_comment(b, i)),
        b'\'' => (TokenKind::String, quoted(b, i, plain)),
        b'"' => (TokenKind::QuotedIdent, quoted_ident(b, i)),
        // A prefix letter only counts at the start of a token: `somE'x'` never gets here with
        // the `E`, because the identifier rule has taken `somE` whole.
        b'e' | b'E' if c1 == b'\'' => (TokenKind::String, quoted(b, i + 1, Quoting::Escape)),
        // scan.l returns NCHAR and lexes the quote on as an ordinary string literal.
        b'n' | b'N' if c1 == b'\'' => (TokenKind::String, quoted(b, i + 1, plain)),
        b'b' | b'B' | b'x' | b'X' if c1 == b'\'' => {
            (TokenKind::BitString, quoted(b, i + 1, Quoting::Bits))
        }
        b'u' | b'U' if c1 == b'&' && c2 == b'\'' => {
            (TokenKind::String, quoted(b, i + 2, Quoting::Standard))
        }
        b'u' | b'U' if c1 == b'&' && c2 == b'"' => (TokenKind::QuotedIdent, quoted_ident(b, i + 2)),
        _ if is_ident_start(c) => (TokenKind::Word, run(b, i + 1, is_ident_cont)),
        b'$' => dollar(b, i),
        _ if c.is_ascii_digit() || (c == b'.' && c1.is_ascii_digit()) => {
            (TokenKind::Number, number(b, i))
        }
        b'.' if c1 == b'.' => (TokenKind::Punct, i + 2),
        b':' if c1 == b':' || c1 == b'=' => (TokenKind::Punct, i + 2),
        b';' => (TokenKind::Semicolon, i + 1),
        b',' | b'(' | b')' | b'[' | b']' | b'.' | b':' => (TokenKind::Punct, i + 1),
        _ if is_op_char(c) => (TokenKind::Operator, operator(b, i)),
        // scan.l's `{other}`: the server returns the byte as a token of its own (and the
        // grammar then rejects it). Only ASCII gets here.
        _ => (TokenKind::Punct, i + 1),
    }
}

/// The end of the run of bytes from `i` that satisfy `keep`.
fn run(b: &[u8], i: usize, keep: impl Fn(u8) -> bool) -> usize {
    b[i..]
        .iter()
        .position(|&c| !keep(c))
        .map_or(b.len(), |n| i + n)
}

/// A `/* … */` comment from `i`. PostgreSQL nests them (unlike the SQL standard's C-style
/// reading), so `/* a /* b */ c */` is one comment.
fn block_comment(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i + 2;
    while j < b.len() {
        match (b[j], b.get(j + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                j += 2;
            }
            (b'*', Some(b'/')) => {
                if depth == 0 {
                    return j + 2;
                }
                depth -= 1;
                j += 2;
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// A single-quoted literal whose opening quote is at `q`, with every continuation: scan.l's
/// `xqs` state joins `'a'` and a following `'b'` when only whitespace holding a newline (and
/// `--` comments) separates them, and lexes the continuation the way it lexed the start (so
/// after `E'…'` a backslash still escapes). Runs to the end of the text when unterminated.
pub(super) fn quoted(b: &[u8], q: usize, quoting: Quoting) -> usize {
    let mut j = q + 1;
    while j < b.len() {
        match b[j] {
            b'\'' if quoting != Quoting::Bits && b.get(j + 1) == Some(&b'\'') => j += 2,
            b'\'' => match continuation(b, j + 1) {
                Some(next_quote) => j = next_quote + 1,
                None => return j + 1,
            },
            // Every escape (`\'`, `\\`, `\ooo`, `\xHH`, `\uXXXX`) consumes the byte after the
            // backslash and never a quote beyond it, so skipping that byte finds the same end.
            b'\\' if quoting == Quoting::Escape => j += 2,
            _ => j += 1,
        }
    }
    b.len()
}

/// When the text after a closing quote at `i` is scan.l's `{quotecontinue}` (whitespace and
/// `--` comments including at least one newline, then a quote), the offset of that quote.
pub(super) fn continuation(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    let mut newline = false;
    while j < b.len() {
        match b[j] {
            c if is_newline(c) => {
                newline = true;
                j += 1;
            }
            c if is_space(c) => j += 1,
            b'-' if b.get(j + 1) == Some(&b'-') => j = run(b, j, |c| !is_newline(c)),
            b'\'' if newline => return Some(j),
            _ => return None,
        }
    }
    None
}

/// A `"…"` identifier whose opening quote is at `q`; `""` stands for one `"`.
fn quoted_ident(b: &[u8], q: usize) -> usize {
    let mut j = q + 1;
    while j < b.len() {
        if b[j] == b'"' {
            if b.get(j + 1) != Some(&b'"') {
                return j + 1;
            }
            j += 1;
        }
        j += 1;
    }
    b.len()
}

/// At a `$`: a parameter `$1`, a dollar-quoted string `$tag$ … $tag$`, or a lone `$`.
fn dollar(b: &[u8], i: usize) -> (TokenKind, usize) {
    let c1 = b.get(i + 1).copied().unwrap_or(0);
    if c1.is_ascii_digit() {
        let end = run(b, i + 1, |c| c.is_ascii_digit());
        // `$1abc` is scan.l's {param_junk}, an error; take it whole as flex does.
        return (TokenKind::Param, identifier_junk(b, end));
    }
    // scan.l's {dolqdelim}: the tag is identifier characters without `$`, not starting with a
    // digit (which was a parameter above).
    let tag_end = if is_ident_start(c1) {
        run(b, i + 1, is_dolq_cont)
    } else {
        i + 1
    };
    if b.get(tag_end) != Some(&b'$') {
        // {dolqfailed}: the `$` alone; what follows is lexed afresh.
        return (TokenKind::Punct, i + 1);
    }
    let tag = &b[i..=tag_end];
    // The body ends at the first occurrence of the exact opening delimiter: scan.l tries a
    // delimiter at every `$` of the body, and text that starts with `$tag$` matches exactly it.
    let body = tag_end + 1;
    let end = b[body..]
        .windows(tag.len())
        .position(|w| w == tag)
        .map_or(b.len(), |n| body + n + tag.len());
    (TokenKind::String, end)
}

/// After a number ending at `end`: scan.l's `*_junk` rules take an identifier glued to it
/// (`1abc`, `0x1F` on PostgreSQL 15) into the same, erroneous, token.
fn identifier_junk(b: &[u8], end: usize) -> usize {
    match b.get(end) {
        Some(&c) if is_ident_start(c) => run(b, end + 1, is_ident_cont),
        _ => end,
    }
}

/// A numeric literal from `i` (a digit, or `.` then a digit): scan.l's decinteger, numeric
/// and real, with its fail and junk rules. Hex, octal and binary integers (`0x1F`) lex as a
/// `0` followed by junk, which spans exactly the same text.
fn number(b: &[u8], i: usize) -> usize {
    let at = |k: usize| b.get(k).copied().unwrap_or(0);
    let mut j = decinteger(b, i);
    if at(j) == b'.' {
        if at(j + 1) == b'.' {
            // {numericfail}: `1..10` is 1, `..`, 10.
            return j;
        }
        j = decinteger(b, j + 1);
    }
    if matches!(at(j), b'e' | b'E') {
        let sign = usize::from(matches!(at(j + 1), b'+' | b'-'));
        if at(j + 1 + sign).is_ascii_digit() {
            j = decinteger(b, j + 1 + sign);
        } else if sign == 1 {
            // {realfail}: `1e+` is an error; the sign belongs to it.
            return j + 2;
        }
    }
    identifier_junk(b, j)
}

/// scan.l's `{decinteger}` from `i`: digits, single underscores between them. Ends at `i` when
/// `b[i]` is not a digit (the `.5` case).
fn decinteger(b: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < b.len() {
        if b[j].is_ascii_digit() {
            j += 1;
        } else if b[j] == b'_' && j > i && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
            j += 2;
        } else {
            break;
        }
    }
    j
}

/// A run of operator characters from `i`, cut where scan.l cuts it: before an embedded `/*` or
/// `--` (a comment starts there), and without trailing `+`/`-` unless the operator holds a
/// character that no SQL-standard operator has (`=-` is `=` then `-`; `?-` stays whole).
fn operator(b: &[u8], i: usize) -> usize {
    let end = run(b, i, is_op_char);
    let cut = (i + 1..end.saturating_sub(1))
        .find(|&k| matches!(&b[k..k + 2], b"/*" | b"--"))
        .unwrap_or(end);
    let mut n = cut - i;
    if n > 1 && matches!(b[i + n - 1], b'+' | b'-') {
        let special = b[i..i + n - 1].iter().any(|c| b"~!@#^&|`?%".contains(c));
        if !special {
            while n > 1 && matches!(b[i + n - 1], b'+' | b'-') {
                n -= 1;
            }
        }
    }
    i + n
}

/// Folds an unquoted identifier as `downcase_identifier` does with a UTF-8 server: ASCII
/// letters only; then truncated as the server truncates it.
pub(super) fn fold_identifier(word: &str) -> String {
    truncate_identifier(word.to_ascii_lowercase())
}

/// `truncate_identifier`: at most 63 bytes, cut on a character boundary.
pub(super) fn truncate_identifier(mut s: String) -> String {
    if s.len() > MAX_IDENTIFIER_BYTES {
        let mut cut = MAX_IDENTIFIER_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// The value of a `"…"` identifier token text: `""` is `"`. None when the identifier is
/// unterminated or empty, which the server rejects.
pub(super) fn quoted_ident_value(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut j = 1;
    loop {
        match *b.get(j)? {
            b'"' if b.get(j + 1) == Some(&b'"') => {
                out.push(b'"');
                j += 2;
            }
            b'"' => break,
            c => {
                out.push(c);
                j += 1;
            }
        }
    }
    if out.is_empty() {
        return None;
    }
    String::from_utf8(out).ok()
}

/// The value of a single-quoted literal token text starting at its opening quote, read with
/// `quoting` (never `Bits`). None when unterminated or when an escape cannot be decoded the
/// way every supported server version decodes it.
pub(super) fn quoted_value(text: &str, quoting: Quoting) -> Option<String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut j = 1;
    loop {
        match *b.get(j)? {
            b'\'' if b.get(j + 1) == Some(&b'\'') => {
                out.push(b'\'');
                j += 2;
            }
            b'\'' => match continuation(b, j + 1) {
                Some(q) => j = q + 1,
                None if j + 1 == b.len() => break,
                None => return None,
            },
            b'\\' if quoting == Quoting::Escape => j = escape(b, j, &mut out)?,
            c => {
                out.push(c);
                j += 1;
            }
        }
    }
    // The server refuses a NUL byte or an invalid sequence an escape produced.
    if out.contains(&0) {
        return None;
    }
    String::from_utf8(out).ok()
}

/// Decodes the backslash escape at `b[j]` into `out`; the offset past it.
fn escape(b: &[u8], j: usize, out: &mut Vec<u8>) -> Option<usize> {
    let c = *b.get(j + 1)?;
    let digits = |from: usize, max: usize, ok: fn(&u8) -> bool| {
        b[from..].iter().take(max).take_while(|c| ok(c)).count()
    };
    let number = |from: usize, len: usize, radix: u32| {
        std::str::from_utf8(&b[from..from + len])
            .ok()
            .and_then(|s| u32::from_str_radix(s, radix).ok())
    };
    match c {
        b'b' => out.push(b'\x08'),
        b'f' => out.push(b'\x0c'),
        b'n' => out.push(b'\n'),
        b'r' => out.push(b'\r'),
        b't' => out.push(b'\t'),
        // `\v` is a vertical tab from PostgreSQL 16 and a plain `v` before: not exact.
        b'v' => return None,
        b'0'..=b'7' => {
            let n = digits(j + 1, 3, |c| (b'0'..=b'7').contains(c));
            // The server keeps the low byte of `\777`, as a C `unsigned char` does.
            out.push((number(j + 1, n, 8)? & 0xff) as u8);
            return Some(j + 1 + n);
        }
        b'x' if b.get(j + 2).is_some_and(u8::is_ascii_hexdigit) => {
            let n = digits(j + 2, 2, u8::is_ascii_hexdigit);
            out.push(number(j + 2, n, 16)? as u8);
            return Some(j + 2 + n);
        }
        b'u' | b'U' => return unicode_escape(b, j, out),
        _ => out.push(c),
    }
    Some(j + 2)
}

/// `\uXXXX` or `\UXXXXXXXX` at `b[j]`, a UTF-16 surrogate pair of two of them included.
fn unicode_escape(b: &[u8], j: usize, out: &mut Vec<u8>) -> Option<usize> {
    let read = |k: usize| -> Option<(u32, usize)> {
        let len = match (b.get(k), b.get(k + 1)) {
            (Some(b'\\'), Some(b'u')) => 4,
            (Some(b'\\'), Some(b'U')) => 8,
            _ => return None,
        };
        let hex = b.get(k + 2..k + 2 + len)?;
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let v = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
        Some((v, k + 2 + len))
    };
    let (first, next) = read(j)?;
    let (code, end) = if (0xD800..0xDC00).contains(&first) {
        let (second, end) = read(next)?;
        if !(0xDC00..0xE000).contains(&second) {
            return None;
        }
        (0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00), end)
    } else {
        (first, next)
    };
    push_code_point(code, out)?;
    Some(end)
}

/// Appends a code point from an escape as UTF-8; None for 0, a lone surrogate, or beyond
/// U+10FFFF, which the server rejects.
fn push_code_point(code: u32, out: &mut Vec<u8>) -> Option<()> {
    let ch = char::from_u32(code).filter(|&c| c != '\0')?;
    out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
    Some(())
}

/// The value of a `U&'…'` or `U&"…"` body (quoting and doubling already undone) with `escape`
/// as the escape character, as `str_udeescape` decodes it: `\\` is `\`, `\XXXX` and
/// `\+XXXXXX` are code points, surrogate pairs combine. None when the server would refuse it.
pub(super) fn unicode_value(body: &str, escape: char) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    let mut high: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != escape {
            if high.is_some() {
                return None;
            }
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&escape) {
            chars.next();
            if high.is_some() {
                return None;
            }
            out.push(escape);
            continue;
        }
        let len = if chars.peek() == Some(&'+') {
            chars.next();
            6
        } else {
            4
        };
        let hex: String = chars.by_ref().take(len).collect();
        if hex.len() != len || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let code = u32::from_str_radix(&hex, 16).ok()?;
        match (high.take(), code) {
            (Some(h), 0xDC00..=0xDFFF) => {
                let ch = char::from_u32(0x10000 + ((h - 0xD800) << 10) + (code - 0xDC00))?;
                out.push(ch);
            }
            (Some(_), _) | (None, 0xDC00..=0xDFFF) => return None,
            (None, 0xD800..=0xDBFF) => high = Some(code),
            (None, _) => out.push(char::from_u32(code).filter(|&c| c != '\0')?),
        }
    }
    high.is_none().then_some(out)
}

/// scan.l's `check_uescapechar`: what a `UESCAPE` character may be.
pub(super) fn valid_uescape(c: char) -> bool {
    !(c.is_ascii_hexdigit() || matches!(c, '+' | '\'' | '"') || c.is_ascii() && is_space(c as u8))
}
