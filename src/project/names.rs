//! Names people write: a read path's or a scope's (it becomes part of file names), an index's
//! (as PostgreSQL's `to_regclass` reads it) and a relation's allowed a sequential scan.

use std::ops::Range;

use toml::Spanned;

use super::place::{File, shown};
use crate::error::BadInput;
use crate::model::TwinDecl;

/// A scope's name, refused where it is written when it is not a safe name.
pub(super) fn check_scope_name(
    file: File<'_>,
    name: &str,
    span: Range<usize>,
) -> Result<(), BadInput> {
    if !is_safe_name(name) {
        return Err(file.at(
            span.start,
            &format!("{} is not a scope name: {SAFE_NAME}", shown(name)),
        ));
    }
    Ok(())
}

/// What a read path's or a scope's name may hold, in words.
pub(super) const SAFE_NAME: &str = "a name holds letters, digits, `-`, `_` and `.` (not first), because it \
                         becomes part of file names (--save-plans) and reports";

/// Whether `name` is a safe read-path or scope name: ASCII letters and digits, `-`, `_`, and `.`
/// anywhere but first. Names become file names (`--save-plans`), so nothing in one may steer a
/// path (`..`, `/`) or hide in a terminal.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The index names an `index` (or `twin`) value gives: one string, or a non-empty list of
/// distinct strings; each a name PostgreSQL can read, located where written when it is not.
pub(super) fn index_names(
    here: File<'_>,
    value: &Spanned<toml::Value>,
) -> Result<Vec<String>, BadInput> {
    let span = value.span();
    let what = "an index is named `name` or `schema.name`, a part with capitals, spaces or dots \
                in double quotes (`index = '\"My Index\"'`)";
    let one = |name: &str, search_from: usize| -> Result<String, BadInput> {
        // Where the string is written inside the value's span (exact for a plain string).
        let region = here.text.get(span.clone()).unwrap_or("");
        let start = region
            .get(search_from..)
            .and_then(|r| r.find(name.trim()).map(|i| span.start + search_from + i))
            .unwrap_or(span.start);
        let trimmed = name.trim();
        if trimmed.is_empty() {
            return Err(here.at(start, "`index` is empty"));
        }
        if let Some((at, problem)) = index_name_problem(trimmed) {
            return Err(here.at(
                start + at,
                &format!("`index = {}`: {problem}; {what}", shown(trimmed)),
            ));
        }
        Ok(trimmed.to_string())
    };
    match value.get_ref() {
        toml::Value::String(s) => Ok(vec![one(s, 0)?]),
        toml::Value::Array(items) if !items.is_empty() => {
            let mut out: Vec<String> = Vec::new();
            let mut from = 0;
            for item in items {
                let toml::Value::String(s) = item else {
                    return Err(here.at(
                        span.start,
                        "`index` is a name, or a list of names (`index = [\"a\", \"b\"]`) when \
                         either serves the read path",
                    ));
                };
                let name = one(s, from)?;
                from = here
                    .text
                    .get(span.clone())
                    .and_then(|r| {
                        r.get(from..)?
                            .find(s.trim())
                            .map(|i| from + i + s.trim().len())
                    })
                    .unwrap_or(from);
                if out.contains(&name) {
                    return Err(
                        here.at(span.start, &format!("`index` lists {} twice", shown(&name)))
                    );
                }
                out.push(name);
            }
            Ok(out)
        }
        toml::Value::Array(_) => Err(here.at(span.start, "`index` is an empty list")),
        _ => Err(here.at(
            span.start,
            "`index` is a name, or a list of names (`index = [\"a\", \"b\"]`) when either \
             serves the read path",
        )),
    }
}

/// What a scope's `twin` declares: an index named as `index` is, or `false` for none.
pub(super) fn twin(here: File<'_>, value: &Spanned<toml::Value>) -> Result<TwinDecl, BadInput> {
    match value.get_ref() {
        toml::Value::Boolean(false) => Ok(TwinDecl::NoneOnPurpose),
        toml::Value::String(_) => {
            let mut names = index_names(here, value)?;
            Ok(TwinDecl::Named(names.remove(0)))
        }
        _ => Err(here.at(
            value.span().start,
            "`twin` is the name of the index lint pairs this scope's index with \
             (`twin = \"posts_thread_all_idx\"`), or `false` when it has none on purpose",
        )),
    }
}

/// What is wrong with a required index's name, as PostgreSQL's `to_regclass` reads it, with
/// the byte offset of the problem; `None` when it is well formed. A name is `name` or
/// `schema.name`; a part is an unquoted name (which the server folds to lower case) or a
/// double-quoted one (`""` for a quote inside).
fn index_name_problem(name: &str) -> Option<(usize, String)> {
    if let Some((at, c)) = name.char_indices().find(|(_, c)| c.is_control()) {
        return Some((at, format!("a control character ({c:?})")));
    }
    let b = name.as_bytes();
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let mut i = 0;
    let mut parts = 0;
    loop {
        while i < b.len() && space(b[i]) {
            i += 1;
        }
        let start = i;
        if i < b.len() && b[i] == b'"' {
            i += 1;
            let mut closed = false;
            while i < b.len() {
                if b[i] == b'"' {
                    if b.get(i + 1) == Some(&b'"') {
                        i += 2;
                        continue;
                    }
                    closed = true;
                    i += 1;
                    break;
                }
                i += 1;
            }
            if !closed {
                return Some((start, "a `\"` that is never closed".into()));
            }
            if i == start + 2 {
                return Some((start, "an empty quoted name `\"\"`".into()));
            }
        } else {
            while i < b.len() && b[i] != b'.' && b[i] != b'"' && !space(b[i]) {
                i += 1;
            }
            if i < b.len() && b[i] == b'"' {
                return Some((i, "a `\"` inside an unquoted name".into()));
            }
            if i == start {
                return Some((start, "an empty part".into()));
            }
        }
        parts += 1;
        while i < b.len() && space(b[i]) {
            i += 1;
        }
        if i == b.len() {
            return None;
        }
        if b[i] != b'.' {
            return Some((
                i,
                "text after the name (a name with spaces must be quoted)".into(),
            ));
        }
        if parts == 2 {
            return Some((i, "more than two parts".into()));
        }
        i += 1;
    }
}

/// `allow_seq_scan`: relations as EXPLAIN names them, `name` or `schema.name`, unquoted; each with
/// its offset in the file.
pub(super) fn allow_seq_scan(
    here: File<'_>,
    written: &[Spanned<String>],
) -> Result<Vec<(String, usize)>, BadInput> {
    let mut allow_seq_scan = Vec::new();
    for a in written {
        let value = a.get_ref();
        if value.trim().is_empty()
            || value.matches('.').count() > 1
            || value.contains('"')
            || value.chars().any(char::is_control)
        {
            return Err(here.at(
                a.span().start,
                "`allow_seq_scan` lists relations as EXPLAIN names them: `forums` or \
                 `public.forums`, without quotes",
            ));
        }
        allow_seq_scan.push((value.clone(), a.span().start));
    }
    Ok(allow_seq_scan)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn index_names_are_read_as_sql_names() {
        for good in [
            "posts_thread_visible_idx",
            "public.posts_thread_visible_idx",
            "\"Weird Idx\"",
            "public.\"Weird \"\"Idx\"",
            "\"a.b\".\"c\"",
            " public . x ",
            "Posts_Idx",
            "índice",
        ] {
            assert_eq!(index_name_problem(good), None, "{good}");
        }
        for (bad, at) in [
            ("a.b.c.d", 3),
            ("a.b.c", 3),
            ("\"unterminated", 0),
            ("public.\"x", 7),
            ("\"\"", 0),
            ("a..b", 2),
            ("a.", 2),
            (".a", 0),
            ("posts thread idx", 6),
            ("ab\"c", 2),
            ("\"a\"b", 3),
            ("a\u{1}", 1),
        ] {
            let problem = index_name_problem(bad);
            assert_eq!(
                problem.as_ref().map(|p| p.0),
                Some(at),
                "{bad}: {problem:?}"
            );
        }
        let e = error(
            "[scopes.member]\nindex = \"a.b.c.d\"\n",
            Some("SELECT 1"),
            None,
        );
        assert!(
            e.starts_with(
                "expectations/path.toml:2:13: `index = \"a.b.c.d\"`: more than two parts"
            ),
            "{e}"
        );
    }
}
