//! `{{fragment}}` templates: a plan file read once for its placeholders (as PostgreSQL's lexer
//! reads it, so a `{{name}}` in a comment or literal is text), filled per scope, and the map
//! from the rendered SQL back to the plan file for errors located there.

use std::collections::{BTreeMap, HashSet};

use super::RenderedSql;
use super::place::shown;
use crate::error::{BadInput, located};

/// A run of the rendered text, and where it comes from in the plan file.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    out_start: usize,
    src_start: usize,
    len: usize,
    /// Text copied from the plan file (true) or a fragment's value (false).
    literal: bool,
}

impl RenderedSql {
    /// The byte offset in the plan file of byte `offset` in the rendered text. Inside a
    /// fragment's value, the offset of the `{{` that placed it.
    pub fn source_offset(&self, offset: usize) -> usize {
        for s in &self.segments {
            // An empty segment (a fragment whose value is "") holds no byte: the byte there is
            // the next segment's.
            if offset >= s.out_start && offset < s.out_start + s.len {
                return if s.literal {
                    s.src_start + (offset - s.out_start)
                } else {
                    s.src_start
                };
            }
        }
        self.source.len()
    }

    /// The plan file's text.
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// A `{{name}}` in a plan file.
#[derive(Debug, Clone)]
struct Marker {
    /// The byte offset of its `{{`.
    open: usize,
    /// The byte offset just past its `}}`.
    end: usize,
    name: String,
}

/// A plan file read for its `{{name}}` placeholders, once for all its scopes.
///
/// A `{{name}}` is a placeholder only where it stands in SQL code, as PostgreSQL's lexer reads
/// the plan file: inside a comment, a string literal (dollar-quoted too) or a quoted identifier
/// it is text, left as written. A `{{vis}}` in a `-- filled per scope by {{vis}}` note is then
/// neither filled (a value with a newline would end the comment and put SQL after it) nor
/// required, and errors located through the rendered SQL land on the code, not on the note.
#[derive(Debug, Clone)]
pub(super) struct PlanTemplate {
    placeholders: Vec<Marker>,
    /// `{{name}}`s inside comments, literals and quoted identifiers, and what holds each: not
    /// placeholders, kept to say so when a fragment given for that name fills nothing.
    dormant: Vec<(Marker, &'static str)>,
}

impl PlanTemplate {
    pub(super) fn read(plan_path: &str, source: &str) -> Result<PlanTemplate, BadInput> {
        use crate::sql::TokenKind;
        let dialect = crate::sql::Dialect::default();
        let mut placeholders = Vec::new();
        let mut dormant = Vec::new();
        // `tokens` of `source[base..]`: the whole file, unless a marker had to be lexed past.
        let mut base = 0;
        let mut tokens = crate::sql::tokens(source, dialect);
        let mut i = 0;
        while let Some(t) = tokens.get(i) {
            let start = base + t.start;
            i += 1;
            let holder = match t.kind {
                TokenKind::Comment => "a comment",
                TokenKind::String | TokenKind::BitString => "a string literal",
                TokenKind::QuotedIdent => "a quoted identifier",
                TokenKind::Punct if source[start..].starts_with("{{") => {
                    let marker = marker_at(plan_path, source, start)?;
                    while tokens.get(i).is_some_and(|t| base + t.start < marker.end) {
                        i += 1;
                    }
                    // The lexer cuts a valid name into words, numbers, `-` and the braces, so
                    // the marker ends on a token boundary. Were it ever not so (a token run on
                    // past the `}}`), lex again from there rather than read the rest askew.
                    let last = &tokens[i - 1];
                    if base + last.start + last.text.len() > marker.end {
                        base = marker.end;
                        tokens = crate::sql::tokens(&source[base..], dialect);
                        i = 0;
                    }
                    placeholders.push(marker);
                    continue;
                }
                _ => continue,
            };
            dormant.extend(
                dormant_markers(t.text, start)
                    .into_iter()
                    .map(|m| (m, holder)),
            );
        }
        Ok(PlanTemplate {
            placeholders,
            dormant,
        })
    }

    pub(super) fn uses(&self, name: &str) -> bool {
        self.placeholders.iter().any(|m| m.name == name)
    }

    /// Fills the placeholders with the scope's fragments; a placeholder without a value is an
    /// error at its `{{`.
    pub(super) fn render(
        &self,
        plan_path: &str,
        source: &str,
        fragments: &BTreeMap<String, String>,
        scope: &str,
    ) -> Result<RenderedSql, BadInput> {
        let mut text = String::with_capacity(source.len());
        let mut segments = Vec::new();
        let mut rest = 0;
        for m in &self.placeholders {
            let Some(value) = fragments.get(&m.name) else {
                return Err(BadInput(located(
                    plan_path,
                    source,
                    m.open,
                    &format!(
                        "fragment `{}` has no value in scope `{scope}`; give it under \
                         [scopes.{scope}] fragments, in the expectation or in plancheck.toml",
                        m.name
                    ),
                )));
            };
            segments.push(Segment {
                out_start: text.len(),
                src_start: rest,
                len: m.open - rest,
                literal: true,
            });
            text.push_str(&source[rest..m.open]);
            segments.push(Segment {
                out_start: text.len(),
                src_start: m.open,
                len: value.len(),
                literal: false,
            });
            text.push_str(value);
            rest = m.end;
        }
        segments.push(Segment {
            out_start: text.len(),
            src_start: rest,
            len: source.len() - rest,
            literal: true,
        });
        text.push_str(&source[rest..]);
        Ok(RenderedSql {
            text,
            source: source.to_string(),
            segments,
        })
    }

    /// Why fragment `name`, given for this plan, fills nothing: the placeholders there are, and
    /// a `{{name}}` the plan holds where it is not one.
    pub(super) fn unused(&self, plan_path: &str, source: &str, name: &str) -> String {
        if !is_fragment_name(name) {
            return format!(
                "{} is not a fragment name (letters, digits, _ and -): no placeholder can use it",
                shown(name)
            );
        }
        let mut seen = HashSet::new();
        let names: Vec<String> = self
            .placeholders
            .iter()
            .filter(|m| seen.insert(m.name.as_str()))
            .map(|m| format!("`{{{{{}}}}}`", m.name))
            .collect();
        let has = match names.as_slice() {
            [] => "it has no placeholder".to_string(),
            names => format!("it has {}", names.join(", ")),
        };
        let mut message = format!(
            "fragment `{name}` fills nothing: {plan_path} has no `{{{{{name}}}}}` placeholder \
             ({has}); remove the fragment or correct its name"
        );
        if let Some((m, holder)) = self.dormant.iter().find(|(m, _)| m.name == name) {
            let (line, col) = crate::error::line_col(source, m.open);
            message.push_str(&format!(
                " (the `{{{{{name}}}}}` at {plan_path}:{line}:{col} is inside {holder}, where it \
                 is text, not a placeholder)"
            ));
        }
        message
    }
}

/// The `{{name}}` marker whose `{{` is at `open` in code: closed on its line, a valid name.
fn marker_at(plan_path: &str, source: &str, open: usize) -> Result<Marker, BadInput> {
    let error = |message: &str| BadInput(located(plan_path, source, open, message));
    let Some(close) = source[open + 2..].find("}}").map(|c| open + 2 + c) else {
        return Err(error("`{{` without a closing `}}`"));
    };
    let inside = &source[open + 2..close];
    if inside.contains(['\n', '\r']) {
        return Err(error("`{{` without a closing `}}` on its line"));
    }
    let name = inside.trim();
    if !is_fragment_name(name) {
        return Err(error(&format!(
            "{} is not a fragment name (letters, digits, _ and -)",
            shown(&format!("{{{{{name}}}}}"))
        )));
    }
    if name.contains("--") {
        return Err(error(&format!(
            "{} is not a fragment name: `--` in it starts an SQL comment; use single `-`s or `_`",
            shown(&format!("{{{{{name}}}}}"))
        )));
    }
    Ok(Marker {
        open,
        end: close + 2,
        name: name.to_string(),
    })
}

fn is_fragment_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The well-formed `{{name}}`s in `text` (a comment or literal starting at byte `base` of the
/// file), each closed on its line. Linear in the text: the first `}}` after a `{{` is found
/// once for every `{{` before it.
fn dormant_markers(text: &str, base: usize) -> Vec<Marker> {
    let mut out = Vec::new();
    let mut rest = 0;
    let mut close = 0;
    while let Some(found) = text[rest..].find("{{") {
        let open = rest + found;
        rest = open + 2;
        if close < rest {
            match text[rest..].find("}}") {
                Some(c) => close = rest + c,
                None => break,
            }
        }
        let name = text[rest..close].trim();
        if is_fragment_name(name) {
            out.push(Marker {
                open: base + open,
                end: base + close + 2,
                name: name.to_string(),
            });
            rest = close + 2;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    /// A plan file read and rendered with `fragments`, as one scope's check does it.
    fn render(
        plan_path: &str,
        source: &str,
        fragments: &BTreeMap<String, String>,
        scope: &str,
    ) -> Result<RenderedSql, BadInput> {
        PlanTemplate::read(plan_path, source)?.render(plan_path, source, fragments, scope)
    }

    #[test]
    fn fragments_fill_and_map_back_to_the_plan_file() {
        let mut f = BTreeMap::new();
        f.insert("vis".to_string(), "p.visibility = 'visible'".to_string());
        let r = render(
            "plans/x.sql",
            "select 1\nwhere {{vis}}\nand  x",
            &f,
            "member",
        )
        .unwrap();
        assert_eq!(r.text, "select 1\nwhere p.visibility = 'visible'\nand  x");
        // 'x' in the output maps to 'x' in the source.
        let out = r.text.rfind('x').unwrap();
        let src = r.source_offset(out);
        assert_eq!(&r.source()[src..src + 1], "x");
        // A position inside the fragment maps to its `{{`.
        let inside = r.text.find("visible").unwrap();
        assert_eq!(&r.source()[r.source_offset(inside)..][..2], "{{");
    }

    #[test]
    fn fragment_without_value_names_file_line_and_column() {
        let e = render(
            "plans/x.sql",
            "select 1\nwhere {{vis}}",
            &BTreeMap::new(),
            "member",
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("plans/x.sql:2:7: fragment `vis` has no value"),
            "{}",
            e.0
        );
    }

    #[test]
    fn a_fragment_marker_must_close_on_its_line() {
        // Found by fuzzing: the name between a `{{` and a `}}` lines later was quoted whole,
        // and the message spanned lines.
        let e = render(
            "plans/x.sql",
            "select 1\nwhere {{vis\nand x = 1 -- }}",
            &BTreeMap::new(),
            "member",
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("plans/x.sql:2:7: `{{` without a closing `}}` on its line\n"),
            "{}",
            e.0
        );
        let e = render("p", "{{a b}}", &BTreeMap::new(), "m").unwrap_err();
        assert!(
            e.0.starts_with("p:1:1: \"{{a b}}\" is not a fragment name"),
            "{}",
            e.0
        );
    }

    // Regression: a `{{name}}` in a comment or a literal was filled like one in the SQL (and
    // required a value), so notes about a fragment moved errors onto the note.
    #[test]
    fn fragments_in_comments_and_literals_are_left_as_written() {
        let source = "-- {{a}}\nSELECT /* /* {{b}} */ {{c}} */ '{{d}}', E'{{e}}', $$ {{f}} $$,\n  \
                      $t$ {{g}} $t$, \"{{h}}\", B'{{i}}' -- {{j}}\r{{vis}} /* {{k}}";
        let t = PlanTemplate::read("p", source).unwrap();
        let names = |ms: Vec<&Marker>| ms.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(t.placeholders.iter().collect()), ["vis"]);
        assert_eq!(
            names(t.dormant.iter().map(|(m, _)| m).collect()),
            ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
        );
        assert_eq!(t.dormant[0].1, "a comment");
        assert_eq!(t.dormant[3].1, "a string literal");
        assert_eq!(t.dormant[7].1, "a quoted identifier");
        let mut f = BTreeMap::new();
        f.insert("vis".to_string(), "true".to_string());
        let r = render("p", source, &f, "m").unwrap();
        assert_eq!(r.text, source.replace("\r{{vis}}", "\rtrue"));
    }

    // Regression: a value with a newline, filled into a `--` comment, ended the comment and put
    // SQL after it; the server's error there was located on the comment.
    #[test]
    fn a_fragment_value_cannot_end_a_comment() {
        let source = "SELECT 1 -- see {{vis}}\nFROM t WHERE {{vis}} AND y";
        let mut f = BTreeMap::new();
        f.insert("vis".to_string(), "a\nOR b".to_string());
        let r = render("p", source, &f, "m").unwrap();
        assert_eq!(
            r.text,
            "SELECT 1 -- see {{vis}}\nFROM t WHERE a\nOR b AND y"
        );
        // An error in the value is located at the placeholder in the SQL, line 2 …
        let or = r.source_offset(r.text.find("OR").unwrap());
        assert_eq!(crate::error::line_col(source, or), (2, 14));
        // … and one after it at its own place.
        let y = r.source_offset(r.text.rfind('y').unwrap());
        assert_eq!(&source[y..], "y");
    }

    #[test]
    fn a_marker_in_a_comment_is_not_checked_and_one_in_the_sql_is() {
        for ok in [
            "SELECT 1 -- {{post visibility}}",
            "SELECT 1 /* {{ */",
            "SELECT '{{a\nb}}'",
            "SELECT 1 -- {{a--b}}",
        ] {
            assert!(PlanTemplate::read("p", ok).is_ok(), "{ok}");
        }
        let e = PlanTemplate::read("p", "SELECT 1 WHERE {{a--b}}")
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("p:1:16: \"{{a--b}}\" is not a fragment name: `--`"),
            "{e}"
        );
        // Spaces around the name are allowed, and the lexer reads on after the marker.
        let t = PlanTemplate::read("p", "SELECT {{ a-b }}'{{x}}' -- {{y}}\n{{c}}").unwrap();
        let names: Vec<&str> = t.placeholders.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["a-b", "c"]);
        assert_eq!(t.dormant.len(), 2);
    }

    #[test]
    fn a_dormant_marker_search_is_linear() {
        // Many `{{` and one `}}` far away, in a comment: found once, not once per `{{`.
        let source = format!("SELECT 1 -- {}}}}}", "{{".repeat(500_000));
        let started = std::time::Instant::now();
        let t = PlanTemplate::read("p", &source).unwrap();
        assert!(t.dormant.is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn an_empty_fragment_maps_the_text_after_it_to_the_plan_file() {
        let mut f = BTreeMap::new();
        f.insert("extra".to_string(), String::new());
        let source = "SELECT 1 FROM t WHERE true{{extra}} AND x";
        let r = render("p", source, &f, "m").unwrap();
        assert_eq!(r.text, "SELECT 1 FROM t WHERE true AND x");
        let after = r.source_offset(r.text.find(" AND").unwrap());
        assert_eq!(&source[after..], " AND x");
        assert_eq!(r.source_offset(r.text.len()), source.len());
    }

    // Regression: a `{{vis}}` in a comment before the SQL's own was the one reported without a
    // value, at the comment.
    #[test]
    fn a_fragment_without_value_is_located_in_the_sql_not_in_a_comment() {
        let e = error(
            "[scopes.member]\nindex = \"i\"\n",
            Some("-- {{vis}} is filled per scope\nSELECT 1 WHERE {{vis}}\n"),
            None,
        );
        assert!(e.starts_with("plans/path.sql:2:16: fragment `vis`"), "{e}");
        assert!(e.contains("2 | SELECT 1 WHERE {{vis}}\n"), "{e}");
    }
}
