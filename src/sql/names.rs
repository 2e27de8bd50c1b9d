//! The names a statement's text holds, as the server may resolve them: the scratch copy's
//! objects and `stats export --project`'s tables start from them.

use std::collections::BTreeSet;

use super::{Dialect, TokenKind, significant};

/// The names a text holds: each identifier and each `a.b` pair, each word followed by `(`.
#[derive(Debug, Default, PartialEq)]
pub struct Names {
    /// `(schema, name)`: a bare identifier has no schema.
    pub relations: BTreeSet<(Option<String>, String)>,
    /// Words followed by `(`.
    pub functions: BTreeSet<String>,
    /// Every identifier (a type may be named anywhere: `::name`, `CAST(… AS name)`).
    pub words: BTreeSet<String>,
}

pub fn names_in(sql: &str) -> Names {
    let toks = significant(sql, Dialect::default());
    let mut names = Names::default();
    for (i, t) in toks.iter().enumerate() {
        let Some(id) = t.identifier() else {
            continue;
        };
        names.words.insert(id.clone());
        names.relations.insert((None, id.clone()));
        if let (Some(dot), Some(next)) = (toks.get(i + 1), toks.get(i + 2))
            && dot.kind == TokenKind::Punct
            && dot.text == "."
            && let Some(second) = next.identifier()
        {
            names.relations.insert((Some(id.clone()), second));
        }
        if toks
            .get(i + 1)
            .is_some_and(|n| n.kind == TokenKind::Punct && n.text == "(")
        {
            names.functions.insert(id);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_every_identifier_each_pair_and_each_call() {
        let n = names_in(
            "SELECT p.id FROM app.\"Posts\" p WHERE lower(p.title) = 'x' AND p.v::app.vis IS NULL",
        );
        assert!(n.relations.contains(&(Some("app".into()), "Posts".into())));
        assert!(n.relations.contains(&(None, "p".into())));
        assert!(n.functions.contains("lower"));
        assert!(n.words.contains("vis"));
        // A string is no name.
        assert!(!n.words.contains("x"));
    }
}
