//! Values written in the files, vetted and converted: declared planner settings (refused where
//! they would tilt the planner or lift the bounds), fragments' and setup statements' text,
//! parameter values as SQL literals, and the `$n` placeholders a plan wants.

use toml::Spanned;

use super::place::{File, cut};
use super::schema::{Fragments, Params, Settings};
use crate::error::BadInput;

/// A declared `settings` table, checked: planner settings only, `enable_*` and the bounds
/// refused where they are written; values as the server reads them (`1.1`, `'4MB'`, `on`).
pub(super) fn settings_of(
    file: File<'_>,
    settings: &Settings,
) -> Result<Vec<(String, String)>, BadInput> {
    let mut out = Vec::new();
    for (name, value) in settings {
        if let Some(why) = crate::project::safety::declared_refusal(name) {
            return Err(file.at(value.span().start, &format!("settings: {why}")));
        }
        let text = match value.get_ref() {
            toml::Value::String(s) if !s.contains('\0') => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) if f.is_finite() => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            _ => {
                return Err(file.at(
                    value.span().start,
                    &format!(
                        "settings: `{}` must be a number, a string or a boolean",
                        cut(name)
                    ),
                ));
            }
        };
        if let Some(why) = crate::project::safety::implausible(name, &text) {
            return Err(file.at(value.span().start, &format!("settings: {why}")));
        }
        out.push((name.to_ascii_lowercase(), text));
    }
    Ok(out)
}

/// A scope's fragments, refused where a value holds a NUL character.
pub(super) fn check_fragments(file: File<'_>, fragments: &Fragments) -> Result<(), BadInput> {
    for (name, value) in fragments {
        if let Some(at) = value.get_ref().find('\0') {
            return Err(file.at(
                file.inside(value.span(), value.get_ref(), at),
                &format!(
                    "fragment `{}` holds a NUL character, which SQL text cannot",
                    cut(name.get_ref())
                ),
            ));
        }
    }
    Ok(())
}

/// A scope's setup statements, refused where one is empty, holds a NUL character or does more
/// than say who reads (`safety::setup_refusal`).
pub(super) fn check_setup(
    file: File<'_>,
    setup: Option<&Spanned<Vec<Spanned<String>>>>,
) -> Result<(), BadInput> {
    for (i, statement) in setup
        .map(|s| s.get_ref().as_slice())
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let text = statement.get_ref();
        if text.trim().is_empty() {
            return Err(file.at(
                statement.span().start,
                &format!("setup statement {} is empty", i + 1),
            ));
        }
        if let Some(at) = text.find('\0') {
            return Err(file.at(
                file.inside(statement.span(), text, at),
                &format!(
                    "setup statement {} holds a NUL character, which SQL text cannot",
                    i + 1
                ),
            ));
        }
        if let Some((at, why)) = crate::project::safety::setup_refusal(text) {
            return Err(file.at(
                file.inside(statement.span(), text, at),
                &format!("setup statement {}: {why}", i + 1),
            ));
        }
    }
    Ok(())
}

/// The setup statements as written.
pub(super) fn setup_of(setup: &Spanned<Vec<Spanned<String>>>) -> Vec<String> {
    setup
        .get_ref()
        .iter()
        .map(|s| s.get_ref().clone())
        .collect()
}

/// Parameter values as SQL literals; an error points at the value.
pub(super) fn literals(file: File<'_>, params: &Params) -> Result<Vec<String>, BadInput> {
    params
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            to_sql_literal(v.get_ref())
                .map_err(|m| file.at(v.span().start, &format!("parameter ${}: {m}", i + 1)))
        })
        .collect()
}

/// A TOML value as an SQL literal for `EXECUTE name(…)`. Strings are quoted as literals of
/// unknown type, so the server converts them to the parameter's type as a driver's text
/// parameter would be.
fn to_sql_literal(v: &toml::Value) -> Result<String, String> {
    Ok(match v {
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) if f.is_finite() => format!("{f:?}"),
        toml::Value::Float(f) => format!("'{f}'"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::String(s) => quote_literal(s)?,
        toml::Value::Datetime(d) => quote_literal(&d.to_string())?,
        toml::Value::Array(_) => {
            return Err(
                "an array is not a parameter value; write it as a string such as \
                 \"{1,2,3}\""
                    .into(),
            );
        }
        toml::Value::Table(_) => return Err("a table is not a parameter value".into()),
    })
}

/// A string as an SQL literal of unknown type; a NUL character it cannot hold is refused.
fn quote_literal(s: &str) -> Result<String, String> {
    if s.contains('\0') {
        return Err("a string parameter cannot contain a NUL character".into());
    }
    Ok(format!("'{}'", s.replace('\'', "''")))
}

/// The highest `$n` placeholder in the SQL, skipping string literals, quoted identifiers,
/// dollar-quoted strings and comments as PostgreSQL's lexer does.
pub fn max_placeholder(sql: &str) -> usize {
    highest_placeholder(sql).0
}

/// The highest `$n` placeholder in the SQL and the byte offset of its first occurrence
/// (0 when there is none).
pub(super) fn highest_placeholder(sql: &str) -> (usize, usize) {
    crate::sql::highest_param(sql, crate::sql::Dialect::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_outside_literals_and_comments_are_counted() {
        assert_eq!(max_placeholder("select $1, $2"), 2);
        assert_eq!(
            max_placeholder("select '$3', \"$4\", $1 -- $5\n/* $6 */"),
            1
        );
        assert_eq!(max_placeholder("select $$ $7 $$, $tag$ $8 $tag$, $2"), 2);
        assert_eq!(max_placeholder("select a$1 from t"), 0);
        assert_eq!(max_placeholder("select 'it''s $9', $10"), 10);
        assert_eq!(max_placeholder("select /* /* $3 */ $4 */ $1"), 1);
    }

    #[test]
    fn parameters_become_sql_literals() {
        assert_eq!(to_sql_literal(&toml::Value::Integer(4711)).unwrap(), "4711");
        assert_eq!(
            to_sql_literal(&toml::Value::String("it's".into())).unwrap(),
            "'it''s'"
        );
        assert_eq!(to_sql_literal(&toml::Value::Float(1.5)).unwrap(), "1.5");
        assert!(to_sql_literal(&toml::Value::Array(vec![])).is_err());
        assert!(to_sql_literal(&toml::Value::String("a\0b".into())).is_err());
    }
}
